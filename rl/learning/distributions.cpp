// Action distributions (see distributions.h).
#include "../../tensor/compile.h"
#include "distributions.h"

#include <cmath>
#include <limits>
#include <numbers>
#include <sstream>
#include <tuple>
#include <utility>
#include <vector>

#include "../../autograd/tape.h"
#include "../../base/error.h"
#include "../../layers/combinators.h"
#include "../../layers/core.h"
#include "../../layers/metrics.h"
#include "../../tensor/ops.h"

namespace ctrax {

namespace {

// log(2 pi) / 2: the normalising constant of a unit normal, per dimension.
const double kHalfLog2Pi = 0.5 * std::log(2.0 * std::numbers::pi);

void check_event_shape(const char* who, const Shape& shape) {
  for (int64_t d : shape)
    CTRAX_REQUIRE(d >= 1, who, ": every dimension of the event shape must be >= 1, got shape ", shape);
}

// inputs: a defined float tensor [..., n_inputs]. Returns the leading shape [...].
Shape check_inputs(const Distribution& dist, const Tensor& inputs, const char* method) {
  CTRAX_REQUIRE(inputs.defined(), dist.name(), ".", method, ": inputs are undefined");
  CTRAX_REQUIRE(is_floating(inputs.dtype()), dist.name(), ".", method, ": inputs have dtype ", inputs.dtype(),
                ", expected float32 or float64");
  CTRAX_REQUIRE(inputs.rank() >= 1, dist.name(), ".", method,
                ": inputs are a rank-0 tensor; expected shape [..., ", dist.n_inputs(), "]");
  CTRAX_REQUIRE(inputs.shape().back() == dist.n_inputs(), dist.name(), ".", method, ": inputs of shape ",
                inputs.shape(), " have last axis ", inputs.shape().back(), ", expected n_inputs = ", dist.n_inputs());
  Shape lead = inputs.shape();
  lead.erase(lead.rank() - 1);
  CTRAX_REQUIRE(lead.rank() + dist.event_shape().rank() + 1 <= kMaxRank, dist.name(), ".", method,
                ": inputs of shape ", inputs.shape(), " with event shape ", dist.event_shape(),
                " need more than ", kMaxRank, " axes");
  return lead;
}

// a followed by b.
Shape concat_shapes(const Shape& a, const Shape& b) {
  Shape out = a;
  for (int64_t d : b) out.push_back(d);
  return out;
}

// A point must be [..., event shape] with the inputs' leading shape.
void check_point_shape(const Distribution& dist, const Tensor& inputs, const Tensor& point, const Shape& lead) {
  CTRAX_REQUIRE(point.defined(), dist.name(), ".log_prob: the point is undefined");
  const Shape expected = concat_shapes(lead, dist.event_shape());
  CTRAX_REQUIRE(point.shape() == expected, dist.name(), ".log_prob: point of shape ", point.shape(),
                " does not match inputs of shape ", inputs.shape(), ": expected the inputs' leading shape ", lead,
                " followed by the event shape ", dist.event_shape(), ", i.e. ", expected);
}

void check_temperature(const Distribution& dist, double temperature) {
  CTRAX_REQUIRE(std::isfinite(temperature) && temperature >= 0.0, dist.name(),
                ".sample: temperature must be finite and >= 0, got ", temperature);
}

// Sums the last `event_rank` axes (the event's elements); rank-0 events have nothing to sum.
Tensor sum_event(const Tensor& t, int event_rank) {
  if (event_rank == 0) return t;
  std::vector<int> axes;
  for (int i = 1; i <= event_rank; ++i) axes.push_back(-i);
  return sum(t, axes);
}

// A fresh, untraced copy of t in `dtype` (never a view of the caller's inputs).
Tensor fresh_copy(const Tensor& t, DType dtype) { return t.dtype() == dtype ? t.clone() : t.to(dtype); }

// The inputs regrouped as logits [..., event shape, n].
Tensor categorical_logits(const Tensor& inputs, const Shape& lead, const Shape& shape, int64_t n) {
  Shape s = concat_shapes(lead, shape);
  s.push_back(n);
  return inputs.reshape(s);
}

std::string shape_suffix(const Shape& shape) {
  if (shape.rank() == 0) return "";
  return ", shape " + to_string(shape);
}

}  // namespace

// ---- Categorical --------------------------------------------------------------------------------

Categorical::Categorical(int64_t n_categories, Shape shape) : n_(n_categories), shape_(shape) {
  CTRAX_REQUIRE(n_ >= 2, "Categorical: n_categories must be >= 2, got ", n_,
                " (a single category has nothing to choose or learn)");
  check_event_shape("Categorical", shape_);
  CTRAX_REQUIRE(shape_.rank() < kMaxRank, "Categorical: event shape ", shape_, " leaves no axis for the categories");
}

std::string Categorical::name() const { return "Categorical(" + std::to_string(n_) + shape_suffix(shape_) + ")"; }

int64_t Categorical::n_inputs() const { return shape_.numel() * n_; }

Tensor Categorical::sample(const Tensor& inputs, Key key, double temperature) const {
  const Shape lead = check_inputs(*this, inputs, "sample");
  check_temperature(*this, temperature);
  // An action is a constant to every tape: nothing below is recorded.
  NoGradScope no_grad;
  const Tensor logits = categorical_logits(inputs, lead, shape_, n_);
  if (logits.numel() > 0) {
    // Checked by kernels (compile.h's check_value), so a compiled collection step checks each call.
    check_value(any(isnan(logits)), [who = name()](double nan) {
      return nan != 0 ? who + ".sample: the inputs (logits) contain NaN" : std::string();
    });
    const Tensor masked = eq(logits, scalar_like(-std::numeric_limits<double>::infinity(), logits));
    check_value(any(all(masked, {-1})), [who = name()](double masked_group) {
      return masked_group != 0
                 ? who + ".sample: a group of logits is all -inf (every category masked), so there is nothing to sample"
                 : std::string();
    });
  }
  if (temperature == 0.0) return argmax(logits, -1);  // the first maximum: ties go to the lowest index
  // Gumbel-max on logits / T samples softmax(logits / T). Dividing in float64 keeps small
  // temperatures from overflowing float32 logits (categorical() works in float64 anyway).
  return categorical(key, div(logits.to(DType::float64), temperature), -1);
}

Tensor Categorical::log_prob(const Tensor& inputs, const Tensor& point) const {
  const Shape lead = check_inputs(*this, inputs, "log_prob");
  check_point_shape(*this, inputs, point, lead);
  CTRAX_REQUIRE(is_integer(point.dtype()), name(), ".log_prob: point has dtype ", point.dtype(),
                ", expected int32 or int64 category ids");
  if (point.numel() > 0) {
    // check_value rather than item(): the checks stay in a compiled training step.
    const std::string who = name();
    check_value(min(point), [who, n = n_](double lo) {
      return lo >= 0 ? std::string() : detail::cat(who, ".log_prob: category ids must be in [0, ", n, "), got ", static_cast<int64_t>(lo));
    });
    check_value(max(point), [who, n = n_](double hi) {
      return hi < static_cast<double>(n) ? std::string()
                                         : detail::cat(who, ".log_prob: category ids must be in [0, ", n, "), got ", static_cast<int64_t>(hi));
    });
  }
  // log p(point) = sum over the event's elements of log_softmax(logits)[id]; picking the id's
  // entry (rather than multiplying by a one-hot row) never forms 0 * (-inf) for masked logits.
  const Tensor lp = log_softmax(categorical_logits(inputs, lead, shape_, n_), -1);
  const Tensor picked = take_along_axis(lp, point.to(DType::int64).unsqueeze(-1), -1).squeeze(-1);
  return sum_event(picked, shape_.rank());
}

Tensor Categorical::entropy(const Tensor& inputs) const {
  const Shape lead = check_inputs(*this, inputs, "entropy");
  const Tensor lp = log_softmax(categorical_logits(inputs, lead, shape_, n_), -1);
  // H = -sum_j p_j log p_j. A -inf logit (a masked action) has p_j = 0 and contributes 0
  // (the limit of p log p); replacing its log p by 0 before multiplying keeps 0 * (-inf) = NaN
  // out of both the value and the gradient.
  const Tensor safe_lp = where(isfinite(lp), lp, zeros_like(lp));
  const Tensor h = neg(sum(mul(exp(lp), safe_lp), {-1}));
  return sum_event(h, shape_.rank());
}

// ---- Gaussian -----------------------------------------------------------------------------------

Gaussian::Gaussian(Shape shape, double std, LearnStd learn_std) : shape_(shape), std_(std), learn_std_(learn_std) {
  check_event_shape("Gaussian", shape_);
  CTRAX_REQUIRE(std::isfinite(std_) && std_ > 0.0, "Gaussian: std must be finite and > 0, got ", std_);
  CTRAX_REQUIRE(learn_std_ == LearnStd::none || learn_std_ == LearnStd::shared || learn_std_ == LearnStd::separate ||
                    learn_std_ == LearnStd::state_independent,
                "Gaussian: learn_std has the invalid value ", static_cast<int>(learn_std_));
}

std::string Gaussian::name() const {
  std::ostringstream out;
  out << "Gaussian(";
  if (shape_.rank() > 0) out << "shape " << shape_ << ", ";
  out << "std " << std_;
  if (learn_std_ == LearnStd::shared) out << ", learned shared std";
  if (learn_std_ == LearnStd::separate) out << ", learned separate std";
  if (learn_std_ == LearnStd::state_independent) out << ", learned state-independent std";
  out << ")";
  return out.str();
}

int64_t Gaussian::n_inputs() const {
  const int64_t d = shape_.numel();
  switch (learn_std_) {
    case LearnStd::none: return d;
    case LearnStd::shared: return d + 1;
    case LearnStd::separate:
    case LearnStd::state_independent: return 2 * d;
  }
  CTRAX_CHECK(false, "unknown LearnStd");
  return d;
}

int64_t Gaussian::n_state_independent_inputs() const {
  return learn_std_ == LearnStd::state_independent ? shape_.numel() : 0;
}

Tensor Gaussian::log_std_of(const Tensor& inputs, const Shape& full_shape) const {
  const int64_t d = shape_.numel();
  return add(inputs.slice(-1, d, 2 * d), std::log(std_)).reshape(full_shape);
}

namespace {
// The mean: the first event-size inputs, as [lead..., event...].
Tensor mean_of(const Tensor& inputs, const Shape& lead, const Shape& event) {
  return inputs.slice(-1, 0, event.numel()).reshape(concat_shapes(lead, event));
}
}  // namespace

std::pair<Tensor, Tensor> Gaussian::mean_and_std(const Tensor& inputs) const {
  const Shape lead = check_inputs(*this, inputs, "mean_and_std");
  const int64_t d = shape_.numel();
  const Shape full_shape = concat_shapes(lead, shape_);
  Tensor mean = mean_of(inputs, lead, shape_);
  Tensor stdev;
  switch (learn_std_) {
    case LearnStd::none:
      stdev = full(full_shape, std_, inputs.dtype(), inputs.device());
      break;
    case LearnStd::shared: {
      // One raw value per example: softplus(raw + std), viewed as [..., 1, ..., 1] and
      // broadcast over the event.
      Shape ones_shape = lead;
      for (int i = 0; i < shape_.rank(); ++i) ones_shape.push_back(1);
      stdev = softplus(add(inputs.slice(-1, d, d + 1), std_)).reshape(ones_shape).expand(full_shape);
      break;
    }
    case LearnStd::separate:
      stdev = softplus(add(inputs.slice(-1, d, 2 * d), std_)).reshape(full_shape);
      break;
    case LearnStd::state_independent:
      stdev = exp(log_std_of(inputs, full_shape));
      break;
  }
  return {mean, stdev};
}

Tensor Gaussian::sample(const Tensor& inputs, Key key, double temperature) const {
  const Shape lead = check_inputs(*this, inputs, "sample");
  check_temperature(*this, temperature);
  NoGradScope no_grad;  // an action is a constant to every tape
  // Greedy: the mean, without the standard deviation (a learned one costs a softplus every step).
  if (temperature == 0.0) return fresh_copy(mean_of(inputs, lead, shape_), sample_dtype());
  const auto [mean, stdev] = mean_and_std(inputs);
  // x = mean + T sigma z with z ~ N(0, 1): N(mean, (T sigma)^2), z drawn on the CPU (the same
  // numbers wherever the inputs live). At temperature 1 (every collection step) the tensor
  // normal() computes mean + sigma z in one kernel, the same bits as the three below.
  Tensor x;
  if (temperature == 1.0) {
    x = normal(key, mean, stdev);
  } else {
    const Tensor z = normal(key, mean.shape(), mean.dtype()).to(mean.device());
    x = add(mean, mul(mul(stdev, z), temperature));
  }
  return x.dtype() == sample_dtype() ? x : x.to(sample_dtype());
}

Tensor Gaussian::log_prob(const Tensor& inputs, const Tensor& point) const {
  const Shape lead = check_inputs(*this, inputs, "log_prob");
  check_point_shape(*this, inputs, point, lead);
  CTRAX_REQUIRE(is_floating(point.dtype()), name(), ".log_prob: point has dtype ", point.dtype(),
                ", expected float32 or float64");
  // log N(x; mu, sigma^2) = -(x - mu)^2 / (2 sigma^2) - log sigma - log(2 pi) / 2, summed over
  // the event's (independent) elements. A state-independent std has its log at hand.
  Tensor mean, stdev, log_stdev;
  if (learn_std_ == LearnStd::state_independent) {
    mean = mean_of(inputs, lead, shape_);
    log_stdev = log_std_of(inputs, concat_shapes(lead, shape_));
    stdev = exp(log_stdev);
  } else {
    std::tie(mean, stdev) = mean_and_std(inputs);
    log_stdev = log(stdev);
  }
  const Tensor z = div(sub(point, mean), stdev);
  const Tensor per_element = add(add(mul(square(z), 0.5), log_stdev), kHalfLog2Pi);
  return neg(sum_event(per_element, shape_.rank()));
}

Tensor Gaussian::entropy(const Tensor& inputs) const {
  const Shape lead = check_inputs(*this, inputs, "entropy");
  // H(N(mu, sigma^2)) = log sigma + (1 + log 2 pi) / 2 = log(sigma sqrt(2 pi e)) per element.
  // Trax writes exp(sigma) for log sigma; this is the textbook formula.
  const Tensor log_stdev = learn_std_ == LearnStd::state_independent
                               ? log_std_of(inputs, concat_shapes(lead, shape_))
                               : log(mean_and_std(inputs).second);
  return sum_event(add(log_stdev, 0.5 + kHalfLog2Pi), shape_.rank());
}

// ---- Factory and layers -------------------------------------------------------------------------

DistributionPtr create_distribution(const Space& space) {
  switch (space.kind()) {
    case Space::Kind::discrete:
      CTRAX_REQUIRE(space.n() >= 2, "create_distribution: ", space.to_string(),
                    " has a single action; a Categorical needs n >= 2 (there is nothing to choose)");
      return std::make_shared<Categorical>(space.n());
    case Space::Kind::multi_discrete: {
      const std::vector<int64_t>& nvec = space.nvec();
      for (int64_t n : nvec)
        CTRAX_REQUIRE(n == nvec[0], "create_distribution: ", space.to_string(),
                      " has unequal entries; Categorical(n, [k]) gives every entry the same n categories "
                      "(one logit block of n per entry), so it cannot express different counts (Trax's "
                      "Categorical cannot either). Use the same count for every entry.");
      CTRAX_REQUIRE(nvec[0] >= 2, "create_distribution: ", space.to_string(),
                    " has a single value per entry; a Categorical needs n >= 2 (there is nothing to choose)");
      return std::make_shared<Categorical>(nvec[0], Shape{static_cast<int64_t>(nvec.size())});
    }
    case Space::Kind::box:
      return std::make_shared<Gaussian>(space.shape());
  }
  CTRAX_CHECK(false, "unknown Space::Kind");
  return nullptr;
}

LayerPtr LogProb(DistributionPtr distribution) {
  CTRAX_REQUIRE(distribution != nullptr, "LogProb: the distribution is null");
  return Fn("LogProb", [d = std::move(distribution)](const Stack& in) { return Stack{d->log_prob(in[0], in[1])}; },
            2, 1);
}

DistributionPtr distribution_for_space(const Space& space, DistributionPtr given, const std::string& who) {
  DistributionPtr natural = create_distribution(space);
  if (!given) return natural;
  const auto* given_categorical = dynamic_cast<const Categorical*>(given.get());
  const auto* natural_categorical = dynamic_cast<const Categorical*>(natural.get());
  const bool fits = given->event_shape() == natural->event_shape() &&
                    (given_categorical != nullptr) == (natural_categorical != nullptr) &&
                    (!given_categorical || given_categorical->n_categories() == natural_categorical->n_categories());
  CTRAX_REQUIRE(fits, who, ": the distribution ", given->name(), " does not fit the action space ", space,
                ", which needs a distribution like ", natural->name());
  return given;
}

LayerPtr LogLoss(DistributionPtr distribution) {
  CTRAX_REQUIRE(distribution != nullptr, "LogLoss: the distribution is null");
  // -sum(w log pi), as Trax's Serial(LogProb, Negate, WeightedSum).
  return Serial({LogProb(std::move(distribution)), Negate(), WeightedSum()}, "LogLoss");
}

}  // namespace ctrax
