// RLTask: collection, replay and batches (see task.h).
#include "task.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <set>
#include <utility>

#include "../../base/error.h"
#include "../../tensor/ops.h"
#include "../environments/env_registry.h"
#include "../environments/time_limit.h"

namespace ctrax {

namespace {

// What each key derived from RLTaskOptions::key is for (fold_in data), so that no two uses
// share random numbers.
constexpr uint64_t kTrainEnvSeed = 1;
constexpr uint64_t kEvalEnvSeeds = 2;  // also the training environment's after an interrupted collection
constexpr uint64_t kPolicyKeys = 3;
constexpr uint64_t kBatchKeys = 4;
constexpr uint64_t kEvaluationSeeds = 5;  // folded with a stream tag: RLTask::evaluation_seed

uint64_t seed_of(Key key) {
  return (static_cast<uint64_t>(key.words()[1]) << 32) | key.words()[0];
}

// `lead` followed by `rest`.
Shape prefixed(std::initializer_list<int64_t> lead, const Shape& rest) {
  const std::vector<int64_t> dims(lead);
  Shape out(dims);
  for (int64_t d : rest) out.push_back(d);
  return out;
}

RLTaskOptions checked(RLTaskOptions o) {
  const char* who = "RLTask";
  CTRAX_REQUIRE(o.n_envs >= 1, who, ": n_envs must be >= 1, got ", o.n_envs);
  CTRAX_REQUIRE(o.n_eval_envs >= 1, who, ": n_eval_envs must be >= 1, got ", o.n_eval_envs);
  CTRAX_REQUIRE(o.initial_trajectories >= 0, who, ": initial_trajectories must be >= 0, got ", o.initial_trajectories);
  CTRAX_REQUIRE(std::isfinite(o.gamma) && o.gamma >= 0.0 && o.gamma <= 1.0, who, ": gamma must be in [0, 1], got ",
                o.gamma);
  CTRAX_REQUIRE(!o.max_steps || *o.max_steps >= 1, who, ": max_steps must be >= 1, got ", *o.max_steps);
  CTRAX_REQUIRE(!o.time_limit || *o.time_limit >= 1, who, ": time_limit must be >= 1, got ", *o.time_limit);
  CTRAX_REQUIRE(o.n_replay_epochs >= 0, who, ": n_replay_epochs must be >= 0, got ", o.n_replay_epochs);
  if (!o.time_limit) o.time_limit = o.max_steps;  // Trax's default
  return o;
}

// The part of one copy's episode collected so far, as raw rows (observations o_0..o_t).
struct Piece {
  std::vector<unsigned char> observations;
  std::vector<unsigned char> actions;
  std::vector<double> rewards;
  std::vector<float> dist_inputs;
  int64_t steps = 0;
  double total_return = 0.0;
};

void append_row(std::vector<unsigned char>& to, const Tensor& batch, int64_t row, size_t bytes) {
  const auto* from = static_cast<const unsigned char*>(batch.raw_data()) + static_cast<size_t>(row) * bytes;
  to.insert(to.end(), from, from + bytes);
}

Tensor from_bytes(const std::vector<unsigned char>& bytes, const Shape& shape, DType dtype) {
  Tensor out(shape, dtype);
  CTRAX_CHECK(static_cast<size_t>(out.numel()) * out.element_size() == bytes.size(),
              "RLTask: a piece's buffer has ", bytes.size(), " bytes for shape ", shape);
  if (!bytes.empty()) std::memcpy(out.raw_data(), bytes.data(), bytes.size());
  return out;
}

// First index i with cumulative[i] > floor(u * total): index i with probability
// weight_i / total (cumulative holds running sums of positive integer weights).
size_t pick(const std::vector<int64_t>& cumulative, double u) {
  const int64_t total = cumulative.back();
  const int64_t target = std::min<int64_t>(total - 1, static_cast<int64_t>(u * static_cast<double>(total)));
  return static_cast<size_t>(std::upper_bound(cumulative.begin(), cumulative.end(), target) - cumulative.begin());
}

}  // namespace

CollectPolicy random_policy(const Space& action_space) {
  return [action_space](const Tensor& observations, Key key, double) {
    CTRAX_REQUIRE(observations.defined() && observations.rank() >= 1,
                  "random_policy: expected observations [N, ...], got ",
                  observations.defined() ? observations.shape() : Shape{});
    const int64_t n = observations.shape()[0];
    return PolicyOutput{action_space.sample(key, n), zeros(Shape{n, 0}, DType::float32)};
  };
}

RLTask::RLTask(const std::string& env_name, RLTaskOptions options)
    : RLTask(VectorEnvFactory([env_name](int64_t n, std::optional<int64_t> limit) {
               return make_vector_env(env_name, n, limit);
             }),
             std::move(options)) {}

RLTask::RLTask(const std::function<EnvPtr()>& make_env, RLTaskOptions options)
    : RLTask(VectorEnvFactory([make_env](int64_t n, std::optional<int64_t> limit) -> VectorEnvPtr {
               CTRAX_REQUIRE(static_cast<bool>(make_env), "RLTask: the environment factory is empty");
               return std::make_unique<SyncVectorEnv>(
                   [make_env, limit]() -> EnvPtr {
                     EnvPtr env = make_env();
                     if (env && limit) env = std::make_unique<TimeLimit>(std::move(env), *limit);
                     return env;
                   },
                   n);
             }),
             std::move(options)) {}

RLTask::RLTask(const VectorEnvFactory& make, RLTaskOptions options) : options_(checked(std::move(options))) {
  CTRAX_REQUIRE(static_cast<bool>(make), "RLTask: the vector environment factory is empty");
  env_ = make(options_.n_envs, options_.time_limit);
  eval_env_ = make(options_.n_eval_envs, options_.time_limit);
  CTRAX_REQUIRE(env_ != nullptr && eval_env_ != nullptr, "RLTask: the vector environment factory returned null");
  CTRAX_REQUIRE(env_->num_envs() == options_.n_envs && eval_env_->num_envs() == options_.n_eval_envs,
                "RLTask: the vector environment factory made ", env_->num_envs(), " and ", eval_env_->num_envs(),
                " copies when asked for ", options_.n_envs, " and ", options_.n_eval_envs);
  CTRAX_REQUIRE(env_->single_observation_space() == eval_env_->single_observation_space() &&
                    env_->single_action_space() == eval_env_->single_action_space(),
                "RLTask: the training and eval environments have different spaces");
  env_name_ = env_->name();
  observations_ = env_->reset(seed_of(fold_in(options_.key, kTrainEnvSeed))).clone();
  episode_return_.assign(static_cast<size_t>(options_.n_envs), 0.0);
  episode_length_.assign(static_cast<size_t>(options_.n_envs), 0);
  if (options_.initial_trajectories > 0) {
    CollectOptions initial;
    initial.n_trajectories = options_.initial_trajectories;
    initial.epoch = 0;
    collect_trajectories(random_policy(action_space()), initial);
  }
}

RLTask::~RLTask() = default;

uint64_t RLTask::evaluation_seed(uint64_t tag, uint64_t index) const {
  CTRAX_REQUIRE(tag >= 1, "RLTask::evaluation_seed: the tag must be >= 1, got ", tag);
  return seed_of(fold_in(fold_in(fold_in(options_.key, kEvaluationSeeds), tag), index));
}

PolicyOutput RLTask::checked_policy_output(PolicyOutput out, int64_t n) {
  const char* who = "RLTask::collect_trajectories";
  const Space& space = action_space();
  const Shape expected = prefixed({n}, space.shape());
  CTRAX_REQUIRE(out.actions.defined(), who, ": the policy returned undefined actions (expected shape ", expected,
                ")");
  CTRAX_REQUIRE(out.actions.shape() == expected, who, ": the policy returned actions of shape ", out.actions.shape(),
                ", expected [N, ...action shape] = ", expected, " for N = ", n, " copies and the action space ",
                space);
  const bool box = space.kind() == Space::Kind::box;
  CTRAX_REQUIRE(box ? is_floating(out.actions.dtype()) : is_integer(out.actions.dtype()), who,
                ": the policy returned actions of dtype ", out.actions.dtype(), ", expected ",
                box ? "a floating dtype" : "an integer dtype", " for the action space ", space);
  CTRAX_REQUIRE(out.actions.device().is_cpu(), who, ": the policy returned actions on ", out.actions.device(),
                " (expected CPU tensors)");
  CTRAX_REQUIRE(out.dist_inputs.defined(), who,
                ": the policy returned undefined dist_inputs (expected [N, D]; [N, 0] when there are none)");
  CTRAX_REQUIRE(out.dist_inputs.rank() == 2 && out.dist_inputs.shape()[0] == n &&
                    is_floating(out.dist_inputs.dtype()),
                who, ": the policy returned dist_inputs of shape ", out.dist_inputs.shape(), " and dtype ",
                out.dist_inputs.dtype(), ", expected floating [N, D] with N = ", n);
  CTRAX_REQUIRE(out.dist_inputs.device().is_cpu(), who, ": the policy returned dist_inputs on ",
                out.dist_inputs.device(), " (expected CPU tensors)");
  out.actions = out.actions.to(space.dtype()).contiguous();
  out.dist_inputs = out.dist_inputs.to(DType::float32).contiguous();
  return out;
}

CollectStats RLTask::collect_trajectories(const CollectPolicy& policy, const CollectOptions& o) {
  const char* who = "RLTask::collect_trajectories";
  CTRAX_REQUIRE(static_cast<bool>(policy), who, ": the policy is empty");
  CTRAX_REQUIRE(o.n_trajectories.has_value() != o.n_interactions.has_value(), who,
                ": give exactly one of n_trajectories and n_interactions, got ",
                o.n_trajectories ? "both" : "neither");
  CTRAX_REQUIRE(!o.n_trajectories || *o.n_trajectories >= 1, who, ": n_trajectories must be >= 1, got ",
                *o.n_trajectories);
  CTRAX_REQUIRE(!o.n_interactions || *o.n_interactions >= 1, who, ": n_interactions must be >= 1, got ",
                *o.n_interactions);
  CTRAX_REQUIRE(!o.max_steps || *o.max_steps >= 1, who, ": max_steps must be >= 1, got ", *o.max_steps);
  CTRAX_REQUIRE(o.epoch >= 0, who, ": epoch must be >= 0, got ", o.epoch);
  CTRAX_REQUIRE(std::isfinite(o.temperature) && o.temperature >= 0.0, who, ": temperature must be >= 0, got ",
                o.temperature);

  CTRAX_REQUIRE(!o.eval_seed || o.only_eval, who, ": eval_seed applies to evaluation (only_eval) only");

  const bool eval = o.only_eval;
  const std::optional<int64_t> cap = o.max_steps ? o.max_steps : options_.max_steps;
  VectorEnv& env = eval ? *eval_env_ : *env_;
  const int64_t n = env.num_envs();
  // An explicitly seeded evaluation leaves the counter alone (CollectOptions::eval_seed); its
  // policy keys come from the seed, under a tag of their own.
  const uint64_t collection = o.eval_seed ? 0 : n_collections_++;
  const Key policy_key = o.eval_seed ? fold_in(fold_in(options_.key, kEvaluationSeeds), *o.eval_seed)
                                     : fold_in(fold_in(options_.key, kPolicyKeys), collection);
  const uint64_t reset_seed =
      o.eval_seed ? *o.eval_seed : seed_of(fold_in(fold_in(options_.key, kEvalEnvSeeds), collection));
  if (!eval && interrupted_) {
    observations_ = env.reset(reset_seed).clone();
    std::fill(episode_return_.begin(), episode_return_.end(), 0.0);
    std::fill(episode_length_.begin(), episode_length_.end(), 0);
  }
  Tensor obs = eval ? env.reset(reset_seed) : observations_;
  if (!eval) interrupted_ = true;

  // Copy i counts its first quota[i] pieces (task.h: the first pieces of every copy, so that
  // short episodes are not favoured).
  std::vector<int64_t> quota(static_cast<size_t>(n), 0);
  std::vector<int64_t> closed(static_cast<size_t>(n), 0);
  if (o.n_trajectories) {
    for (int64_t i = 0; i < n; ++i)
      quota[static_cast<size_t>(i)] = *o.n_trajectories / n + (i < *o.n_trajectories % n ? 1 : 0);
  }
  const int64_t step_limit = o.n_interactions ? (*o.n_interactions + n - 1) / n : 0;

  const DType obs_dtype = obs.dtype();
  const Shape obs_shape = env.single_observation_space().shape();
  const auto obs_bytes = static_cast<size_t>(obs_shape.numel()) * dtype_size(obs_dtype);
  const Space& act_space = env.single_action_space();
  const auto act_bytes = static_cast<size_t>(act_space.shape().numel()) * dtype_size(act_space.dtype());

  std::vector<Piece> pieces(static_cast<size_t>(n));
  std::vector<bool> waiting(static_cast<size_t>(n), false);  // eval: a cut episode plays out uncounted
  if (!eval) {
    const Tensor first = obs.contiguous();
    for (int64_t i = 0; i < n; ++i) append_row(pieces[static_cast<size_t>(i)].observations, first, i, obs_bytes);
  }
  std::vector<double> counted;
  std::vector<int64_t> counted_lengths;
  std::vector<double> episode_returns;
  std::vector<int64_t> episode_lengths;
  std::vector<double> episode_return = episode_return_;  // committed when the collection succeeds
  std::vector<int64_t> episode_length = episode_length_;
  std::vector<Trajectory> stored;
  int64_t d = -1;  // dist_inputs per step in this collection
  int64_t steps = 0;

  auto close = [&](Piece& p, bool terminated, bool truncated) {
    const Shape obs_rows = prefixed({p.steps + 1}, obs_shape);
    TrajectoryData data;
    data.observations = from_bytes(p.observations, obs_rows, obs_dtype);
    data.actions = from_bytes(p.actions, prefixed({p.steps}, act_space.shape()), act_space.dtype());
    data.rewards = from_vector(p.rewards);
    data.dist_inputs = from_vector(p.dist_inputs, Shape{p.steps, d});
    data.terminated = terminated;
    data.truncated = truncated;
    stored.emplace_back(data, options_.gamma);
  };
  auto done = [&] {
    if (o.n_interactions) return steps >= step_limit;
    for (size_t i = 0; i < closed.size(); ++i)
      if (closed[i] < quota[i]) return false;
    return true;
  };

  while (!done()) {
    const PolicyOutput out = checked_policy_output(policy(obs, fold_in(policy_key, static_cast<uint64_t>(steps)),
                                                          o.temperature), n);
    const int64_t out_d = out.dist_inputs.shape()[1];
    if (d < 0) {
      CTRAX_REQUIRE(out_d == 0 || n_dist_inputs_ == 0 || out_d == n_dist_inputs_, who, ": the policy returned ",
                    out_d, " dist_inputs per copy, earlier policies of this task ", n_dist_inputs_);
      d = out_d;
      if (d > 0 && !eval) n_dist_inputs_ = d;
    }
    CTRAX_REQUIRE(out_d == d, who, ": the policy returned ", out_d, " dist_inputs per copy at step ", steps,
                  " of this collection, ", d, " before");
    const VectorStep& st = env.step(out.actions);
    ++steps;
    const Tensor rewards = st.rewards.to(DType::float64).contiguous();
    const Tensor terminated = st.terminated.to(DType::boolean).contiguous();
    const Tensor truncated = st.truncated.to(DType::boolean).contiguous();
    const Tensor next_obs = st.observations.contiguous();
    const Tensor final_obs = st.final_observations.contiguous();
    const double* r = rewards.data<double>();
    const uint8_t* term = terminated.data<uint8_t>();
    const uint8_t* trunc = truncated.data<uint8_t>();
    for (int64_t i = 0; i < n; ++i) {
      const auto ui = static_cast<size_t>(i);
      Piece& p = pieces[ui];
      const bool ended = term[i] || trunc[i];
      if (waiting[ui]) {
        waiting[ui] = !ended;
        continue;
      }
      p.steps += 1;
      p.total_return += r[i];
      if (!eval) {
        episode_return[ui] += r[i];
        episode_length[ui] += 1;
        if (ended) {
          episode_returns.push_back(episode_return[ui]);
          episode_lengths.push_back(episode_length[ui]);
          episode_return[ui] = 0.0;
          episode_length[ui] = 0;
        }
        append_row(p.actions, out.actions, i, act_bytes);
        p.rewards.push_back(r[i]);
        const float* row = out.dist_inputs.data<float>() + i * d;
        p.dist_inputs.insert(p.dist_inputs.end(), row, row + d);
      }
      const bool cut = !ended && cap && p.steps >= *cap;
      if (!ended && !cut) {
        if (!eval) append_row(p.observations, next_obs, i, obs_bytes);
        continue;
      }
      // The piece closes: it counts if its copy is within quota (every closed piece counts
      // when collecting n_interactions).
      if (o.n_interactions || closed[ui] < quota[ui]) {
        counted.push_back(p.total_return);
        counted_lengths.push_back(p.steps);
        closed[ui] += 1;
      }
      if (!eval) {
        append_row(p.observations, ended ? final_obs : next_obs, i, obs_bytes);
        close(p, term[i] != 0, trunc[i] != 0);
      }
      p = Piece{};
      // The next piece starts where the copy is now: the new episode's first observation after
      // an auto-reset, or the same observation after a cut.
      if (!eval) append_row(p.observations, next_obs, i, obs_bytes);
      if (eval && cut) waiting[ui] = true;
    }
    obs = st.observations;
  }

  CollectStats stats;
  stats.n_trajectories = static_cast<int64_t>(counted.size());
  stats.n_interactions = steps * n;
  int64_t counted_length = 0;
  for (double x : counted) stats.mean_return += x;
  for (int64_t x : counted_lengths) counted_length += x;
  if (!counted.empty()) stats.mean_return /= static_cast<double>(counted.size());
  if (!counted.empty()) stats.mean_length = static_cast<double>(counted_length) / static_cast<double>(counted.size());
  stats.returns = std::move(counted);
  stats.lengths = std::move(counted_lengths);
  if (eval) return stats;
  stats.episode_returns = std::move(episode_returns);
  stats.episode_lengths = std::move(episode_lengths);
  episode_return_ = std::move(episode_return);
  episode_length_ = std::move(episode_length);

  // Open pieces are stored as cut; their episodes continue in the next collection from the
  // copies' current observations.
  for (Piece& p : pieces)
    if (p.steps > 0) close(p, false, false);
  observations_ = obs.clone();
  interrupted_ = false;
  store(o.epoch, std::move(stored));
  n_trajectories_ += stats.n_trajectories;
  n_interactions_ += stats.n_interactions;
  return stats;
}

void RLTask::store(int64_t epoch, std::vector<Trajectory> pieces) {
  if (!pieces.empty()) {
    std::vector<Trajectory>& to = trajectories_[epoch];
    for (Trajectory& t : pieces) to.push_back(std::move(t));
  }
  // Trax keeps the epochs >= epoch - n_replay_epochs.
  for (auto it = trajectories_.begin(); it != trajectories_.end();) {
    if (it->first < epoch - options_.n_replay_epochs) it = trajectories_.erase(it);
    else ++it;
  }
}

void RLTask::add_trajectories(int64_t epoch, std::vector<Trajectory> trajectories) {
  const char* who = "RLTask::add_trajectories";
  CTRAX_REQUIRE(epoch >= 0, who, ": epoch must be >= 0, got ", epoch);
  const Space& obs_space = observation_space();
  const Space& act_space = action_space();
  for (size_t i = 0; i < trajectories.size(); ++i) {
    const Trajectory& t = trajectories[i];
    const Shape obs = prefixed({t.length() + 1}, obs_space.shape());
    const Shape act = prefixed({t.length()}, act_space.shape());
    CTRAX_REQUIRE(t.observations().shape() == obs && t.observations().dtype() == obs_space.dtype(), who,
                  ": trajectory ", i, " has observations ", t.observations().dtype(), " ", t.observations().shape(),
                  ", expected ", obs_space.dtype(), " ", obs, " for the observation space ", obs_space);
    CTRAX_REQUIRE(t.actions().shape() == act && t.actions().dtype() == act_space.dtype(), who, ": trajectory ", i,
                  " has actions ", t.actions().dtype(), " ", t.actions().shape(), ", expected ", act_space.dtype(), " ",
                  act, " for the action space ", act_space);
    const int64_t d = t.n_dist_inputs();
    CTRAX_REQUIRE(d == 0 || n_dist_inputs_ == 0 || d == n_dist_inputs_, who, ": trajectory ", i, " has ", d,
                  " dist_inputs per step, the task's policies ", n_dist_inputs_);
    if (d > 0) n_dist_inputs_ = d;
  }
  if (trajectories.empty()) return;
  std::vector<Trajectory>& to = trajectories_[epoch];
  for (Trajectory& t : trajectories) to.push_back(std::move(t));
}

void RLTask::set_n_replay_epochs(int64_t n_replay_epochs) {
  CTRAX_REQUIRE(n_replay_epochs >= 0, "RLTask::set_n_replay_epochs: n_replay_epochs must be >= 0, got ",
                n_replay_epochs);
  options_.n_replay_epochs = n_replay_epochs;
}

namespace {

void check_batch_options(const TrajectoryBatchOptions& o) {
  const char* who = "RLTask::trajectory_batch";
  CTRAX_REQUIRE(o.batch_size >= 1, who, ": batch_size must be >= 1, got ", o.batch_size);
  CTRAX_REQUIRE(!o.max_slice_length || *o.max_slice_length >= 1, who, ": max_slice_length must be >= 1, got ",
                *o.max_slice_length);
  CTRAX_REQUIRE(!o.min_slice_length || *o.min_slice_length >= 1, who, ": min_slice_length must be >= 1, got ",
                *o.min_slice_length);
  CTRAX_REQUIRE(o.margin >= 0, who, ": margin must be >= 0, got ", o.margin);
}

}  // namespace

TimeStepBatch RLTask::trajectory_batch(const TrajectoryBatchOptions& o, int64_t index) const {
  const char* who = "RLTask::trajectory_batch";
  check_batch_options(o);
  CTRAX_REQUIRE(index >= 0, who, ": the batch index must be >= 0, got ", index);
  CTRAX_REQUIRE(!trajectories_.empty(), who, ": the replay buffer is empty (collect trajectories first)");

  // Trax: epoch ids are taken modulo (last epoch + 1), so -1 is the last; duplicates and
  // epochs without trajectories drop out.
  const int64_t modulus = trajectories_.rbegin()->first + 1;
  std::set<int64_t> wanted;
  if (o.epochs.empty()) {
    for (const auto& [epoch, pieces] : trajectories_) wanted.insert(epoch);
  } else {
    for (int64_t e : o.epochs) wanted.insert(((e % modulus) + modulus) % modulus);
  }
  std::vector<const std::vector<Trajectory>*> epochs;
  std::vector<int64_t> epoch_cumulative;  // running sums of the epochs' slice counts
  std::vector<std::vector<int64_t>> trajectory_cumulative;
  for (int64_t e : wanted) {
    const auto it = trajectories_.find(e);
    if (it == trajectories_.end() || it->second.empty()) continue;
    std::vector<int64_t> cumulative;
    int64_t sum = 0;
    for (const Trajectory& t : it->second) {
      sum += n_slices(t, o.max_slice_length, o.margin);
      cumulative.push_back(sum);
    }
    epochs.push_back(&it->second);
    epoch_cumulative.push_back(sum + (epoch_cumulative.empty() ? 0 : epoch_cumulative.back()));
    trajectory_cumulative.push_back(std::move(cumulative));
  }
  CTRAX_REQUIRE(!epochs.empty(), who, ": the selected epochs hold no trajectories (", trajectories_.size(),
                " epochs stored, the last ", modulus - 1, ")");

  // Three uniforms per example: epoch, trajectory, slice start.
  const Tensor u = uniform(fold_in(fold_in(options_.key, kBatchKeys), static_cast<uint64_t>(index)),
                           Shape{o.batch_size, 3}, DType::float64);
  const double* uv = u.data<double>();
  std::vector<TrajectorySlice> slices;
  slices.reserve(static_cast<size_t>(o.batch_size));
  for (int64_t b = 0; b < o.batch_size; ++b) {
    const size_t e = pick(epoch_cumulative, uv[3 * b]);
    const std::vector<Trajectory>& pieces = *epochs[e];
    size_t k;
    if (o.sample_trajectories_uniformly) {
      k = std::min(pieces.size() - 1, static_cast<size_t>(uv[3 * b + 1] * static_cast<double>(pieces.size())));
    } else {
      k = pick(trajectory_cumulative[e], uv[3 * b + 1]);
    }
    const Trajectory& t = pieces[k];
    const int64_t count = n_slices(t, o.max_slice_length, o.margin);
    const int64_t start = std::min(count - 1, static_cast<int64_t>(uv[3 * b + 2] * static_cast<double>(count)));
    const int64_t entries = t.length() + o.margin;
    const int64_t length = o.max_slice_length ? std::min(*o.max_slice_length, entries - start) : entries;
    slices.push_back(TrajectorySlice{&t, start, length, o.margin});
  }
  return stack_slices(slices, o.min_slice_length, o.pad_to_power_of_two);
}

// ---- Checkpoints --------------------------------------------------------------------------------

namespace {

// A tensor of `shape` filled from `values` (row-major) in `dtype`.
Tensor int64_tensor(const std::vector<int64_t>& values, const Shape& shape) { return from_vector(values, shape); }

// The VectorEnv's checkpoint_state as a float64 tensor; undefined when it does not support
// checkpoints (the fallback of task.h). Any other failure propagates.
Tensor env_state_tensor(const VectorEnv& env) {
  std::vector<double> state;
  try {
    state = env.checkpoint_state();
  } catch (const CheckpointNotSupported&) {
    return Tensor();
  }
  const auto size = static_cast<int64_t>(state.size());
  return from_vector(state, Shape{size});
}

// Rows [first, first + count) of `t` along axis 0 (a view).
Tensor rows(const Tensor& t, int64_t first, int64_t count) { return t.slice(0, first, first + count); }

}  // namespace

void RLTask::export_state(std::map<std::string, Tensor>& tensors, io::ManifestFields& fields_out,
                          const std::string& prefix) const {
  // Everything is built here first, so that a failure adds nothing to the caller's maps.
  io::ManifestFields fields;
  fields[prefix + "env_name"] = env_name_;
  fields[prefix + "observation_space"] = observation_space().to_string();
  fields[prefix + "action_space"] = action_space().to_string();
  fields[prefix + "n_envs"] = options_.n_envs;
  fields[prefix + "n_eval_envs"] = options_.n_eval_envs;
  fields[prefix + "gamma"] = options_.gamma;
  fields[prefix + "key_0"] = static_cast<int64_t>(options_.key.words()[0]);
  fields[prefix + "key_1"] = static_cast<int64_t>(options_.key.words()[1]);
  fields[prefix + "max_steps"] = options_.max_steps.value_or(0);
  fields[prefix + "time_limit"] = options_.time_limit.value_or(0);
  fields[prefix + "n_replay_epochs"] = options_.n_replay_epochs;
  fields[prefix + "n_dist_inputs"] = n_dist_inputs_;
  fields[prefix + "n_collections"] = static_cast<int64_t>(n_collections_);
  fields[prefix + "n_trajectories"] = n_trajectories_;
  fields[prefix + "n_interactions"] = n_interactions_;
  fields[prefix + "interrupted"] = interrupted_;

  std::map<std::string, Tensor> out;
  out[prefix + "observations"] = observations_.contiguous().clone();
  out[prefix + "episode_returns"] = from_vector(episode_return_, Shape{options_.n_envs});
  out[prefix + "episode_lengths"] = int64_tensor(episode_length_, Shape{options_.n_envs});
  const Tensor env_state = env_state_tensor(*env_);
  const Tensor eval_env_state = env_state_tensor(*eval_env_);
  if (env_state.defined()) out[prefix + "env_state"] = env_state;
  if (eval_env_state.defined()) out[prefix + "eval_env_state"] = eval_env_state;

  std::vector<int64_t> epochs;
  for (const auto& [epoch, pieces] : trajectories_) {
    epochs.push_back(epoch);
    const std::string name = prefix + "epoch_" + std::to_string(epoch) + "/";
    std::vector<int64_t> index;
    std::vector<Tensor> observations, actions, rewards, returns, discount_mask, dist_inputs;
    std::vector<double> total_returns;
    for (const Trajectory& t : pieces) {
      const int64_t d = t.n_dist_inputs();
      CTRAX_CHECK(d == 0 || d == n_dist_inputs_, "RLTask::export_state: a trajectory has ", d,
                  " dist_inputs per step, the task ", n_dist_inputs_);
      index.insert(index.end(), {t.length(), d, t.terminated() ? 1 : 0, t.truncated() ? 1 : 0});
      observations.push_back(t.observations());
      actions.push_back(t.actions());
      rewards.push_back(t.rewards());
      returns.push_back(t.returns());
      discount_mask.push_back(t.discount_mask());
      if (d > 0) dist_inputs.push_back(t.dist_inputs());
      total_returns.push_back(t.total_return());
    }
    const auto k = static_cast<int64_t>(pieces.size());
    out[name + "index"] = int64_tensor(index, Shape{k, 4});
    // concatenate needs at least one part; an epoch is never stored empty, but a zero-size
    // tensor of the right row shape keeps the layout total.
    auto joined = [](const std::vector<Tensor>& parts, const Tensor& empty) {
      return parts.empty() ? empty : concatenate(parts, 0);
    };
    Shape obs_rows = observation_space().shape();
    obs_rows.insert(0, 0);
    Shape act_rows = action_space().shape();
    act_rows.insert(0, 0);
    out[name + "observations"] = joined(observations, zeros(obs_rows, observation_space().dtype()));
    out[name + "actions"] = joined(actions, zeros(act_rows, action_space().dtype()));
    out[name + "rewards"] = joined(rewards, zeros(Shape{0}, DType::float32));
    out[name + "returns"] = joined(returns, zeros(Shape{0}, DType::float32));
    out[name + "discount_mask"] = joined(discount_mask, zeros(Shape{0}, DType::boolean));
    out[name + "dist_inputs"] = joined(dist_inputs, zeros(Shape{0, n_dist_inputs_}, DType::float32));
    out[name + "total_returns"] = from_vector(total_returns, Shape{k});
  }
  out[prefix + "epochs"] = int64_tensor(epochs, Shape{static_cast<int64_t>(epochs.size())});

  fields[prefix + "has_env_state"] = env_state.defined();
  fields[prefix + "has_eval_env_state"] = eval_env_state.defined();
  for (auto& [name, t] : out) tensors[name] = std::move(t);
  for (auto& [name, v] : fields) fields_out[name] = std::move(v);
}

void RLTask::import_state(const io::Checkpoint& c, const std::string& prefix) {
  const std::string where = c.manifest_path.string();
  const std::string who = "RLTask::import_state: checkpoint " + where;
  // ---- Fields: what the checkpoint's task was, checked against this one.
  auto require_same = [&](const std::string& field, const auto& saved, const auto& here) {
    CTRAX_REQUIRE(saved == here, who, ": field '", prefix, field, "' is ", saved, ", this task has ", here,
                  " (import into a task made with the same options)");
  };
  require_same("env_name", c.string_field(prefix + "env_name"), env_name_);
  require_same("observation_space", c.string_field(prefix + "observation_space"), observation_space().to_string());
  require_same("action_space", c.string_field(prefix + "action_space"), action_space().to_string());
  require_same("n_envs", c.int_field(prefix + "n_envs"), options_.n_envs);
  require_same("n_eval_envs", c.int_field(prefix + "n_eval_envs"), options_.n_eval_envs);
  require_same("gamma", c.double_field(prefix + "gamma"), options_.gamma);
  require_same("key_0", c.int_field(prefix + "key_0"), static_cast<int64_t>(options_.key.words()[0]));
  require_same("key_1", c.int_field(prefix + "key_1"), static_cast<int64_t>(options_.key.words()[1]));
  require_same("max_steps", c.int_field(prefix + "max_steps"), options_.max_steps.value_or(0));
  require_same("time_limit", c.int_field(prefix + "time_limit"), options_.time_limit.value_or(0));
  auto count_field = [&](const std::string& field) {
    const int64_t v = c.int_field(prefix + field);
    CTRAX_REQUIRE(v >= 0, who, ": field '", prefix, field, "' is ", v, " (expected >= 0)");
    return v;
  };
  const int64_t n_replay_epochs = count_field("n_replay_epochs");
  const int64_t n_dist_inputs = count_field("n_dist_inputs");
  const int64_t n_collections = count_field("n_collections");
  const int64_t n_trajectories = count_field("n_trajectories");
  const int64_t n_interactions = count_field("n_interactions");
  const bool interrupted = c.bool_field(prefix + "interrupted");
  const bool has_env_state = c.bool_field(prefix + "has_env_state");
  const bool has_eval_env_state = c.bool_field(prefix + "has_eval_env_state");

  // ---- Tensors, each checked for shape and dtype.
  auto tensor = [&](const std::string& name, DType dtype, const Shape& shape) -> const Tensor& {
    const Tensor& t = c.tensor(prefix + name);
    CTRAX_REQUIRE(t.dtype() == dtype && t.shape() == shape, who, ": tensor '", prefix, name, "' is ",
                  dtype_name(t.dtype()), " ", t.shape(), ", expected ", dtype_name(dtype), " ", shape);
    return t;
  };
  auto with_rows = [](int64_t n, const Shape& row) {
    Shape shape = row;
    shape.insert(0, n);
    return shape;
  };
  const Space& obs_space = observation_space();
  const Space& act_space = action_space();
  const Tensor observations =
      tensor("observations", obs_space.dtype(), with_rows(options_.n_envs, obs_space.shape())).contiguous().clone();
  auto env_state = [&](bool present, const std::string& name) {
    if (!present) return std::vector<double>();
    const Tensor& t = c.tensor(prefix + name);
    CTRAX_REQUIRE(t.dtype() == DType::float64 && t.rank() == 1, who, ": tensor '", prefix, name, "' is ",
                  dtype_name(t.dtype()), " ", t.shape(), ", expected float64 [S]");
    return t.to_vector<double>();
  };
  // The episodes in progress (absent from checkpoints written before they were recorded: zeros).
  std::vector<double> episode_return(static_cast<size_t>(options_.n_envs), 0.0);
  std::vector<int64_t> episode_length(static_cast<size_t>(options_.n_envs), 0);
  if (c.tensors.count(prefix + "episode_returns") || c.tensors.count(prefix + "episode_lengths")) {
    episode_return = tensor("episode_returns", DType::float64, Shape{options_.n_envs}).to_vector<double>();
    episode_length = tensor("episode_lengths", DType::int64, Shape{options_.n_envs}).to_vector<int64_t>();
  }
  const std::vector<double> train_state = env_state(has_env_state, "env_state");
  const std::vector<double> eval_state = env_state(has_eval_env_state, "eval_env_state");

  const Tensor& epoch_ids = c.tensor(prefix + "epochs");
  CTRAX_REQUIRE(epoch_ids.dtype() == DType::int64 && epoch_ids.rank() == 1, who, ": tensor '", prefix,
                "epochs' is ", dtype_name(epoch_ids.dtype()), " ", epoch_ids.shape(), ", expected int64 [E]");
  std::map<int64_t, std::vector<Trajectory>> trajectories;
  const std::vector<int64_t> epochs = epoch_ids.to_vector<int64_t>();
  for (size_t i = 0; i < epochs.size(); ++i) {
    const int64_t epoch = epochs[i];
    CTRAX_REQUIRE(epoch >= 0 && (i == 0 || epoch > epochs[i - 1]), who, ": tensor '", prefix, "epochs' holds ",
                  epoch, " at position ", i, " (expected epochs >= 0 in ascending order)");
    const std::string name = "epoch_" + std::to_string(epoch) + "/";
    const Tensor& index_tensor = c.tensor(prefix + name + "index");
    CTRAX_REQUIRE(index_tensor.dtype() == DType::int64 && index_tensor.rank() == 2 && index_tensor.shape()[1] == 4,
                  who, ": tensor '", prefix, name, "index' is ", dtype_name(index_tensor.dtype()), " ",
                  index_tensor.shape(), ", expected int64 [K, 4]");
    const int64_t k = index_tensor.shape()[0];
    const std::vector<int64_t> index = index_tensor.to_vector<int64_t>();
    int64_t steps = 0, steps_with_dist = 0;
    for (int64_t j = 0; j < k; ++j) {
      const int64_t t = index[4 * j], d = index[4 * j + 1], term = index[4 * j + 2], trunc = index[4 * j + 3];
      CTRAX_REQUIRE(t >= 1 && t <= (int64_t{1} << 40) && (d == 0 || d == n_dist_inputs) && (term == 0 || term == 1) &&
                        (trunc == 0 || trunc == 1),
                    who, ": tensor '", prefix, name, "index' row ", j, " is (T ", t, ", D ", d, ", terminated ", term,
                    ", truncated ", trunc, "); expected T >= 1, D 0 or ", n_dist_inputs,
                    " (the task's n_dist_inputs), flags 0 or 1");
      steps += t;
      if (d > 0) steps_with_dist += t;
    }
    const Tensor& obs = tensor(name + "observations", obs_space.dtype(), with_rows(steps + k, obs_space.shape()));
    const Tensor& act = tensor(name + "actions", act_space.dtype(), with_rows(steps, act_space.shape()));
    const Tensor& rew = tensor(name + "rewards", DType::float32, Shape{steps});
    const Tensor& ret = tensor(name + "returns", DType::float32, Shape{steps});
    const Tensor& discount = tensor(name + "discount_mask", DType::boolean, Shape{steps});
    const Tensor& dist = tensor(name + "dist_inputs", DType::float32, Shape{steps_with_dist, n_dist_inputs});
    const std::vector<double> totals = tensor(name + "total_returns", DType::float64, Shape{k}).to_vector<double>();
    std::vector<Trajectory>& pieces = trajectories[epoch];
    int64_t obs_row = 0, step_row = 0, dist_row = 0;
    for (int64_t j = 0; j < k; ++j) {
      const int64_t t = index[4 * j], d = index[4 * j + 1];
      TrajectoryParts parts;
      parts.observations = rows(obs, obs_row, t + 1);
      parts.actions = rows(act, step_row, t);
      parts.rewards = rows(rew, step_row, t);
      parts.returns = rows(ret, step_row, t);
      parts.discount_mask = rows(discount, step_row, t);
      parts.dist_inputs = d > 0 ? rows(dist, dist_row, t) : zeros(Shape{t, 0}, DType::float32);
      parts.terminated = index[4 * j + 2] == 1;
      parts.truncated = index[4 * j + 3] == 1;
      parts.total_return = totals[static_cast<size_t>(j)];
      pieces.push_back(Trajectory::from_parts(parts));
      obs_row += t + 1;
      step_row += t;
      if (d > 0) dist_row += t;
    }
  }

  // ---- Commit. The environments first: each restore is all or nothing, and should the eval
  // environment refuse its state the training one is put back, so a failure changes nothing.
  auto restore = [&](VectorEnv& env, const std::vector<double>& state, const char* entry) {
    try {
      env.restore_checkpoint_state(state);
      return true;
    } catch (const CheckpointNotSupported&) {
      return false;
    } catch (const Error& e) {
      CTRAX_THROW(who, ": tensor '", prefix, entry, "': ", e.what());
    }
  };
  bool env_restored = false;
  if (has_env_state) {
    std::vector<double> previous;
    try {
      previous = env_->checkpoint_state();
    } catch (const CheckpointNotSupported&) {
    }
    env_restored = restore(*env_, train_state, "env_state");
    if (has_eval_env_state) {
      try {
        restore(*eval_env_, eval_state, "eval_env_state");
      } catch (...) {
        if (env_restored) env_->restore_checkpoint_state(previous);
        throw;
      }
    }
  } else if (has_eval_env_state) {
    restore(*eval_env_, eval_state, "eval_env_state");
  }
  options_.n_replay_epochs = n_replay_epochs;
  n_dist_inputs_ = n_dist_inputs;
  n_collections_ = static_cast<uint64_t>(n_collections);
  n_trajectories_ = n_trajectories;
  n_interactions_ = n_interactions;
  trajectories_ = std::move(trajectories);
  observations_ = observations;
  episode_return_ = std::move(episode_return);
  episode_length_ = std::move(episode_length);
  // Without the environment's state the copies no longer match observations_: the next
  // training collection resets them (the fallback of task.h).
  interrupted_ = env_restored ? interrupted : true;
}

std::function<TimeStepBatch(int64_t)> RLTask::trajectory_batch_stream(const TrajectoryBatchOptions& options) const {
  check_batch_options(options);
  return [this, options](int64_t index) { return trajectory_batch(options, index); };
}

}  // namespace ctrax
