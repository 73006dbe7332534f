// Observation, reward and action wrappers and episode statistics (see wrappers.h).
#include "wrappers.h"

#include <cmath>
#include <limits>
#include <utility>

#include "../../base/error.h"

namespace ctrax {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The values of a real tensor as doubles, row-major.
std::vector<double> values_of(const Tensor& t) { return t.to_vector<double>(); }

// A double rounded into `dtype` (float32 or float64), as NumPy casts: beyond float32's range
// infinity (a plain cast would be undefined behaviour there).
Tensor tensor_in(const std::vector<double>& values, const Shape& shape, DType dtype) {
  Tensor out(shape, dtype);
  if (dtype == DType::float64) {
    double* data = out.data<double>();
    for (size_t i = 0; i < values.size(); ++i) data[i] = values[i];
  } else {
    CTRAX_CHECK(dtype == DType::float32, "tensor_in: unexpected dtype ", dtype);
    constexpr double kOverflow = 3.4028235677973366e38;  // float32 max + half an ulp
    float* data = out.data<float>();
    for (size_t i = 0; i < values.size(); ++i) {
      const double v = values[i];
      data[i] = !(std::abs(v) >= kOverflow) ? static_cast<float>(v)
                                             : (v > 0 ? std::numeric_limits<float>::infinity()
                                                      : -std::numeric_limits<float>::infinity());
    }
  }
  return out;
}

// The checks every Box-action wrapper makes on the action it is given: a float tensor of the
// space's shape, no NaN. Returns its values.
std::vector<double> box_action_values(const char* wrapper, const Env& env, const Space& space, const Tensor& action,
                                      bool allow_infinite) {
  CTRAX_REQUIRE(action.defined(), wrapper, " (", env.name(), "): the action is an undefined tensor (expected ", space,
                ")");
  CTRAX_REQUIRE(is_floating(action.dtype()), wrapper, " (", env.name(), "): the action has dtype ", action.dtype(),
                " (expected float32 or float64 for ", space, ")");
  CTRAX_REQUIRE(action.shape() == space.shape(), wrapper, " (", env.name(), "): the action has shape ", action.shape(),
                " (expected ", space.shape(), ")");
  std::vector<double> values = values_of(action);
  for (size_t i = 0; i < values.size(); ++i)
    CTRAX_REQUIRE(allow_infinite ? !std::isnan(values[i]) : std::isfinite(values[i]), wrapper, " (", env.name(),
                  "): action value ", i, " is ", values[i],
                  allow_infinite ? " (expected a number, not NaN)" : " (expected a finite number)");
  return values;
}

// A running statistic in a checkpoint state: count, mean, var (float64, row-major).
void append_statistics(std::vector<double>& out, const RunningMeanStd& s) {
  out.push_back(s.count());
  const std::vector<double> mean = s.mean().to_vector<double>(), var = s.var().to_vector<double>();
  out.insert(out.end(), mean.begin(), mean.end());
  out.insert(out.end(), var.begin(), var.end());
}

struct Statistics {
  Tensor mean, var;
  double count;
};

// Reads and checks what append_statistics wrote for a statistic of `shape` (RunningMeanStd::set
// then accepts it without throwing).
Statistics read_statistics(CheckpointStateReader& in, const Shape& shape) {
  const double count = in.number("the statistics' count");
  CTRAX_REQUIRE(count > 0, in.who(), ": restore_checkpoint_state: the statistics' count is ", count,
                " (expected > 0)");
  const auto k = static_cast<size_t>(shape.numel());
  const std::vector<double> mean = in.numbers(k, "the statistics' mean");
  const std::vector<double> var = in.numbers(k, "the statistics' var");
  for (size_t j = 0; j < k; ++j)
    CTRAX_REQUIRE(var[j] >= 0, in.who(), ": restore_checkpoint_state: the statistics' var value ", j, " is ", var[j],
                  " (expected >= 0)");
  return {from_vector(mean, shape), from_vector(var, shape), count};
}

const Space& require_box_actions(const char* wrapper, const Env& env) {
  const Space& space = env.action_space();
  CTRAX_REQUIRE(space.kind() == Space::Kind::box, wrapper, ": ", env.name(), " has the action space ", space,
                " (expected a Box)");
  return space;
}

}  // namespace

// ---- RunningMeanStd -----------------------------------------------------------------------------

RunningMeanStd::RunningMeanStd(const Shape& shape, double epsilon)
    : shape_(shape), mean_(zeros(shape, DType::float64)), var_(ones(shape, DType::float64)), count_(epsilon) {
  CTRAX_REQUIRE(std::isfinite(epsilon) && epsilon > 0, "RunningMeanStd: epsilon must be > 0 and finite, got ",
                epsilon);
}

void RunningMeanStd::update(const Tensor& batch) {
  CTRAX_REQUIRE(batch.defined(), "RunningMeanStd::update: the batch is an undefined tensor");
  CTRAX_REQUIRE(is_floating(batch.dtype()) || is_integer(batch.dtype()), "RunningMeanStd::update: the batch has dtype ",
                batch.dtype(), " (expected a float or integer dtype)");
  bool shape_ok = batch.shape().rank() == shape_.rank() + 1 && batch.shape()[0] >= 1;
  for (int d = 0; shape_ok && d < shape_.rank(); ++d) shape_ok = batch.shape()[d + 1] == shape_[d];
  CTRAX_REQUIRE(shape_ok, "RunningMeanStd::update: the batch has shape ", batch.shape(), " (expected B >= 1 samples of shape ",
                shape_, " stacked on a new leading axis)");
  const std::vector<double> x = values_of(batch);
  const int64_t samples = batch.shape()[0];
  const auto k = static_cast<size_t>(shape_.numel());
  for (size_t i = 0; i < x.size(); ++i)
    CTRAX_REQUIRE(std::isfinite(x[i]), "RunningMeanStd::update: sample ", i / k, " holds ", x[i],
                  " (expected finite values)");
  // Two passes, as np.mean then np.var: the mean first, then the mean squared deviation.
  std::vector<double> batch_mean(k, 0.0), batch_var(k, 0.0);
  for (int64_t b = 0; b < samples; ++b)
    for (size_t j = 0; j < k; ++j) batch_mean[j] += x[static_cast<size_t>(b) * k + j];
  for (double& m : batch_mean) m /= static_cast<double>(samples);
  for (int64_t b = 0; b < samples; ++b)
    for (size_t j = 0; j < k; ++j) {
      const double d = x[static_cast<size_t>(b) * k + j] - batch_mean[j];
      batch_var[j] += d * d;
    }
  for (double& v : batch_var) v /= static_cast<double>(samples);
  merge(batch_mean.data(), batch_var.data(), static_cast<double>(samples));
}

void RunningMeanStd::update_one(const Tensor& sample) {
  CTRAX_REQUIRE(sample.defined(), "RunningMeanStd::update_one: the sample is an undefined tensor");
  CTRAX_REQUIRE(sample.shape() == shape_, "RunningMeanStd::update_one: the sample has shape ", sample.shape(),
                " (expected ", shape_, ")");
  update(sample.unsqueeze(0));
}

void RunningMeanStd::merge(const double* batch_mean, const double* batch_var, double batch_count) {
  double* mean = mean_.data<double>();
  double* var = var_.data<double>();
  const double total = count_ + batch_count;
  // Gymnasium's update_mean_var_count_from_moments, in its order of operations.
  for (int64_t j = 0; j < shape_.numel(); ++j) {
    const double delta = batch_mean[j] - mean[j];
    const double m2 = var[j] * count_ + batch_var[j] * batch_count + delta * delta * count_ * batch_count / total;
    mean[j] = mean[j] + delta * batch_count / total;
    var[j] = m2 / total;
  }
  count_ = total;
}

void RunningMeanStd::set(const Tensor& mean, const Tensor& var, double count) {
  for (const auto& [what, t] : {std::pair<const char*, const Tensor&>{"mean", mean}, {"var", var}}) {
    CTRAX_REQUIRE(t.defined() && (is_floating(t.dtype()) || is_integer(t.dtype())) && t.shape() == shape_,
                  "RunningMeanStd::set: ", what, " must be a real tensor of shape ", shape_, ", got ",
                  t.defined() ? t.shape() : Shape{}, t.defined() ? "" : " (undefined)");
  }
  const std::vector<double> m = values_of(mean), v = values_of(var);
  for (size_t j = 0; j < m.size(); ++j) {
    CTRAX_REQUIRE(std::isfinite(m[j]), "RunningMeanStd::set: mean value ", j, " is ", m[j], " (expected finite)");
    CTRAX_REQUIRE(std::isfinite(v[j]) && v[j] >= 0, "RunningMeanStd::set: var value ", j, " is ", v[j],
                  " (expected finite and >= 0)");
  }
  CTRAX_REQUIRE(std::isfinite(count) && count > 0, "RunningMeanStd::set: count is ", count,
                " (expected finite and > 0)");
  // Own float64 CPU copies (update and normalize read them on the host), from any device.
  mean_ = mean.to(Device::cpu()).to(DType::float64).contiguous().clone();
  var_ = var.to(Device::cpu()).to(DType::float64).contiguous().clone();
  count_ = count;
}

// ---- NormalizeObservation -----------------------------------------------------------------------

NormalizeObservation::NormalizeObservation(EnvPtr env, double epsilon)
    : EnvWrapper(std::move(env)),
      observation_space_(Space::discrete(1)),
      statistics_(inner().observation_space().shape()),
      epsilon_(epsilon) {
  const Space& inner_space = inner().observation_space();
  CTRAX_REQUIRE(inner_space.kind() == Space::Kind::box, "NormalizeObservation: ", inner().name(),
                " has the observation space ", inner_space, " (expected a Box)");
  CTRAX_REQUIRE(std::isfinite(epsilon) && epsilon > 0, "NormalizeObservation: epsilon must be > 0 and finite, got ",
                epsilon);
  observation_space_ = Space::box(inner_space.shape(), -kInf, kInf, DType::float32);
}

Tensor NormalizeObservation::normalize(const Tensor& observation) const {
  const Space& inner_space = inner().observation_space();
  CTRAX_REQUIRE(observation.defined() && observation.shape() == inner_space.shape(), "NormalizeObservation (",
                name(), "): the inner observation has shape ", observation.defined() ? observation.shape() : Shape{},
                " (expected ", inner_space.shape(), ")");
  std::vector<double> x = values_of(observation);
  const double* mean = statistics_.mean().data<double>();
  const double* var = statistics_.var().data<double>();
  for (size_t j = 0; j < x.size(); ++j) x[j] = (x[j] - mean[j]) / std::sqrt(var[j] + epsilon_);
  return tensor_in(x, inner_space.shape(), DType::float32);
}

Tensor NormalizeObservation::process(const Tensor& observation) {
  if (update_) statistics_.update_one(observation);
  return normalize(observation);
}

Tensor NormalizeObservation::reset(std::optional<uint64_t> seed) { return process(EnvWrapper::reset(seed)); }

StepResult NormalizeObservation::step(const Tensor& action) {
  StepResult result = EnvWrapper::step(action);
  result.observation = process(result.observation);
  return result;
}

Tensor NormalizeObservation::observation() const { return normalize(EnvWrapper::observation()); }

std::vector<double> NormalizeObservation::checkpoint_state() const {
  std::vector<double> out{update_ ? 1.0 : 0.0};
  append_statistics(out, statistics_);
  const std::vector<double> inner_state = inner().checkpoint_state();
  out.insert(out.end(), inner_state.begin(), inner_state.end());
  return out;
}

void NormalizeObservation::restore_checkpoint_state(const std::vector<double>& state) {
  CheckpointStateReader in(state, name() + " (NormalizeObservation)");
  const bool update = in.flag("update_running_mean");
  const Statistics s = read_statistics(in, statistics_.shape());
  inner().restore_checkpoint_state(in.rest());  // all or nothing; nothing of ours has changed yet
  statistics_.set(s.mean, s.var, s.count);
  update_ = update;
}

// ---- NormalizeReward ----------------------------------------------------------------------------

NormalizeReward::NormalizeReward(EnvPtr env, double gamma, double epsilon)
    : EnvWrapper(std::move(env)), statistics_(Shape{}), gamma_(gamma), epsilon_(epsilon) {
  CTRAX_REQUIRE(gamma >= 0 && gamma <= 1, "NormalizeReward: gamma must be in [0, 1], got ", gamma);
  CTRAX_REQUIRE(std::isfinite(epsilon) && epsilon > 0, "NormalizeReward: epsilon must be > 0 and finite, got ",
                epsilon);
}

StepResult NormalizeReward::step(const Tensor& action) {
  StepResult result = EnvWrapper::step(action);
  CTRAX_REQUIRE(std::isfinite(result.reward), "NormalizeReward (", name(), "): the reward is ", result.reward,
                " (expected a finite number)");
  return_ = return_ * gamma_ * (result.terminated ? 0.0 : 1.0) + result.reward;
  if (update_) statistics_.update_one(scalar_tensor(return_, DType::float64));
  result.reward = result.reward / std::sqrt(statistics_.var().item<double>() + epsilon_);
  return result;
}

std::vector<double> NormalizeReward::checkpoint_state() const {
  std::vector<double> out{update_ ? 1.0 : 0.0};
  append_statistics(out, statistics_);
  out.push_back(return_);
  const std::vector<double> inner_state = inner().checkpoint_state();
  out.insert(out.end(), inner_state.begin(), inner_state.end());
  return out;
}

void NormalizeReward::restore_checkpoint_state(const std::vector<double>& state) {
  CheckpointStateReader in(state, name() + " (NormalizeReward)");
  const bool update = in.flag("update_running_mean");
  const Statistics s = read_statistics(in, statistics_.shape());
  const double discounted_return = in.number("the discounted return");
  inner().restore_checkpoint_state(in.rest());
  statistics_.set(s.mean, s.var, s.count);
  return_ = discounted_return;
  update_ = update;
}

void NormalizeReward::set_discounted_return(double value) {
  CTRAX_REQUIRE(std::isfinite(value), "NormalizeReward::set_discounted_return: got ", value,
                " (expected a finite number)");
  return_ = value;
}

// ---- ClipAction ---------------------------------------------------------------------------------

ClipAction::ClipAction(EnvPtr env) : EnvWrapper(std::move(env), Stateless{}), action_space_(Space::discrete(1)) {
  const Space& inner_space = require_box_actions("ClipAction", inner());
  action_space_ = Space::box(inner_space.shape(), -kInf, kInf, inner_space.dtype());
  low_ = values_of(inner_space.low());
  high_ = values_of(inner_space.high());
}

StepResult ClipAction::step(const Tensor& action) {
  std::vector<double> a = box_action_values("ClipAction", *this, action_space_, action, /*allow_infinite=*/true);
  for (size_t j = 0; j < a.size(); ++j) a[j] = a[j] < low_[j] ? low_[j] : a[j] > high_[j] ? high_[j] : a[j];
  const Space& inner_space = inner().action_space();
  return EnvWrapper::step(tensor_in(a, inner_space.shape(), inner_space.dtype()));
}

// ---- RescaleAction ------------------------------------------------------------------------------

RescaleAction::RescaleAction(EnvPtr env, double min_action, double max_action)
    : RescaleAction(std::move(env), scalar_tensor(min_action, DType::float64),
                    scalar_tensor(max_action, DType::float64)) {}

RescaleAction::RescaleAction(EnvPtr env, const Tensor& min_action, const Tensor& max_action)
    : EnvWrapper(std::move(env), Stateless{}), action_space_(Space::discrete(1)) {
  const Space& inner_space = require_box_actions("RescaleAction", inner());
  CTRAX_REQUIRE(inner_space.is_bounded(), "RescaleAction: ", inner().name(), " has the action space ", inner_space,
                " with an infinite bound (expected a bounded Box: an infinite interval has no affine image of a "
                "finite one)");
  const Shape& shape = inner_space.shape();
  for (const auto& [what, t] : {std::pair<const char*, const Tensor&>{"min_action", min_action}, {"max_action", max_action}}) {
    CTRAX_REQUIRE(t.defined() && (is_floating(t.dtype()) || is_integer(t.dtype())) &&
                      (t.shape() == shape || t.shape().rank() == 0),
                  "RescaleAction: ", what, " must be a real scalar or a tensor of shape ", shape, ", got ",
                  t.defined() ? t.shape() : Shape{}, t.defined() ? "" : " (undefined)");
  }
  min_action_ = values_of(min_action.to(DType::float64).expand(shape));
  max_action_ = values_of(max_action.to(DType::float64).expand(shape));
  for (size_t j = 0; j < min_action_.size(); ++j)
    CTRAX_REQUIRE(std::isfinite(min_action_[j]) && std::isfinite(max_action_[j]) && min_action_[j] < max_action_[j],
                  "RescaleAction: min_action ", min_action_[j], " and max_action ", max_action_[j], " at index ", j,
                  " (expected finite with min_action < max_action)");
  const Tensor low = tensor_in(min_action_, shape, inner_space.dtype());
  const Tensor high = tensor_in(max_action_, shape, inner_space.dtype());
  // Rounded to float32, distinct doubles can meet (or overflow): the space must stay an interval.
  const std::vector<double> low_rounded = values_of(low), high_rounded = values_of(high);
  for (size_t j = 0; j < low_rounded.size(); ++j)
    CTRAX_REQUIRE(std::isfinite(low_rounded[j]) && std::isfinite(high_rounded[j]) && low_rounded[j] < high_rounded[j],
                  "RescaleAction: min_action ", min_action_[j], " and max_action ", max_action_[j], " at index ", j,
                  " are not finite with min < max once rounded to ", inner_space.dtype());
  action_space_ = Space::box(low, high);
  low_ = values_of(inner_space.low());
  high_ = values_of(inner_space.high());
}

StepResult RescaleAction::step(const Tensor& action) {
  std::vector<double> a = box_action_values("RescaleAction", *this, action_space_, action, /*allow_infinite=*/false);
  for (size_t j = 0; j < a.size(); ++j)
    a[j] = low_[j] + (high_[j] - low_[j]) * ((a[j] - min_action_[j]) / (max_action_[j] - min_action_[j]));
  const Space& inner_space = inner().action_space();
  return EnvWrapper::step(tensor_in(a, inner_space.shape(), inner_space.dtype()));
}

// ---- RecordEpisodeStatistics --------------------------------------------------------------------

RecordEpisodeStatistics::RecordEpisodeStatistics(EnvPtr env) : EnvWrapper(std::move(env)) {}

Tensor RecordEpisodeStatistics::reset(std::optional<uint64_t> seed) {
  Tensor observation = EnvWrapper::reset(seed);
  return_ = 0.0;
  length_ = 0;
  return observation;
}

StepResult RecordEpisodeStatistics::step(const Tensor& action) {
  StepResult result = EnvWrapper::step(action);
  return_ += result.reward;
  ++length_;
  if (result.terminated || result.truncated) {
    last_return_ = return_;
    last_length_ = length_;
    ++count_;
  }
  return result;
}

void RecordEpisodeStatistics::set_state(const std::vector<double>& state) {
  EnvWrapper::set_state(state);
  return_ = 0.0;
  length_ = 0;
}

std::vector<double> RecordEpisodeStatistics::checkpoint_state() const {
  std::vector<double> out{return_,
                          static_cast<double>(length_),
                          last_return_ ? 1.0 : 0.0,
                          last_return_.value_or(0.0),
                          static_cast<double>(last_length_.value_or(0)),
                          static_cast<double>(count_)};
  const std::vector<double> inner_state = inner().checkpoint_state();
  out.insert(out.end(), inner_state.begin(), inner_state.end());
  return out;
}

void RecordEpisodeStatistics::restore_checkpoint_state(const std::vector<double>& state) {
  CheckpointStateReader in(state, name() + " (RecordEpisodeStatistics)");
  const double episode_return = in.value("the episode return");
  const auto length = static_cast<int64_t>(in.count("the episode length"));
  const bool has_last = in.flag("the finished-episode flag");
  const double last_return = in.value("the last episode's return");
  const auto last_length = static_cast<int64_t>(in.count("the last episode's length"));
  const auto count = static_cast<int64_t>(in.count("the episode count"));
  CTRAX_REQUIRE(has_last == (count > 0), in.who(), ": restore_checkpoint_state: the episode count is ", count,
                " but the finished-episode flag ", has_last ? 1 : 0, " (an episode has finished exactly when the count "
                "is > 0)");
  inner().restore_checkpoint_state(in.rest());
  return_ = episode_return;
  length_ = length;
  last_return_ = has_last ? std::optional<double>(last_return) : std::nullopt;
  last_length_ = has_last ? std::optional<int64_t>(last_length) : std::nullopt;
  count_ = count;
}

}  // namespace ctrax
