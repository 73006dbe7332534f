// RLTask: construction, the replay of stored pieces, and batches (see task.h). Collection is in
// task_collection.cpp, checkpoints in task_checkpoint.cpp.
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
#include "task_detail.h"

namespace ctrax {

using namespace task_detail;

namespace {

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

RLTask::RLTask(const VectorEnvFactory& make, RLTaskOptions options)
    : options_(checked(std::move(options))), make_env_(make) {
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

std::function<TimeStepBatch(int64_t)> RLTask::trajectory_batch_stream(const TrajectoryBatchOptions& options) const {
  check_batch_options(options);
  return [this, options](int64_t index) { return trajectory_batch(options, index); };
}

}  // namespace ctrax
