// RLTask's checkpoints (see task.h): export_state writes the task's counters, the copies'
// observations and episodes in progress, the environments' states and every stored epoch's
// pieces; import_state checks all of it against this task before changing anything.
#include <map>
#include <string>

#include "../../base/error.h"
#include "../../tensor/ops.h"
#include "task.h"

namespace ctrax {

namespace {

// A tensor of `shape` filled from `values` (row-major) in `dtype`.
Tensor int64_tensor(const std::vector<int64_t>& values, const Shape& shape) { return from_vector(values, shape); }

// The VectorEnv's checkpoint_state as a float64 tensor; undefined when it does not support
// checkpoints (the fallback of docs/rl.md, "Task checkpoints"). Any other failure propagates.
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

namespace {

// The checkpoint fields that are counts (>= 0), the flags, and the checks against this task.
struct SavedTaskFields {
  int64_t n_replay_epochs = 0, n_dist_inputs = 0, n_collections = 0, n_trajectories = 0, n_interactions = 0;
  bool interrupted = false, has_env_state = false, has_eval_env_state = false;
};

std::string importer(const io::Checkpoint& c) {
  return "RLTask::import_state: checkpoint " + c.manifest_path.string();
}

// Tensor `prefix + name` of the checkpoint, checked for dtype and shape.
const Tensor& checked_tensor(const io::Checkpoint& c, const std::string& prefix, const std::string& name, DType dtype,
                             const Shape& shape) {
  const Tensor& t = c.tensor(prefix + name);
  CTRAX_REQUIRE(t.dtype() == dtype && t.shape() == shape, importer(c), ": tensor '", prefix, name, "' is ",
                dtype_name(t.dtype()), " ", t.shape(), ", expected ", dtype_name(dtype), " ", shape);
  return t;
}

Shape with_rows(int64_t n, const Shape& row) {
  Shape shape = row;
  shape.insert(0, n);
  return shape;
}

// An environment state (float64 [S]) when `present`, else empty.
std::vector<double> saved_env_state(const io::Checkpoint& c, const std::string& prefix, bool present,
                                    const std::string& name) {
  if (!present) return {};
  const Tensor& t = c.tensor(prefix + name);
  CTRAX_REQUIRE(t.dtype() == DType::float64 && t.rank() == 1, importer(c), ": tensor '", prefix, name, "' is ",
                dtype_name(t.dtype()), " ", t.shape(), ", expected float64 [S]");
  return t.to_vector<double>();
}

// The rows of one stored epoch's index tensor: (T, D, terminated, truncated) per piece, checked.
std::vector<int64_t> epoch_index(const io::Checkpoint& c, const std::string& prefix, const std::string& name,
                                 int64_t n_dist_inputs) {
  const Tensor& index_tensor = c.tensor(prefix + name + "index");
  CTRAX_REQUIRE(index_tensor.dtype() == DType::int64 && index_tensor.rank() == 2 && index_tensor.shape()[1] == 4,
                importer(c), ": tensor '", prefix, name, "index' is ", dtype_name(index_tensor.dtype()), " ",
                index_tensor.shape(), ", expected int64 [K, 4]");
  const std::vector<int64_t> index = index_tensor.to_vector<int64_t>();
  for (size_t j = 0; j < index.size() / 4; ++j) {
    const int64_t t = index[4 * j], d = index[4 * j + 1], term = index[4 * j + 2], trunc = index[4 * j + 3];
    CTRAX_REQUIRE(t >= 1 && t <= (int64_t{1} << 40) && (d == 0 || d == n_dist_inputs) && (term == 0 || term == 1) &&
                      (trunc == 0 || trunc == 1),
                  importer(c), ": tensor '", prefix, name, "index' row ", j, " is (T ", t, ", D ", d, ", terminated ",
                  term, ", truncated ", trunc, "); expected T >= 1, D 0 or ", n_dist_inputs,
                  " (the task's n_dist_inputs), flags 0 or 1");
  }
  return index;
}

}  // namespace

std::vector<Trajectory> RLTask::import_epoch(const io::Checkpoint& c, const std::string& prefix, int64_t epoch,
                                             int64_t n_dist_inputs) const {
  const std::string name = "epoch_" + std::to_string(epoch) + "/";
  const std::vector<int64_t> index = epoch_index(c, prefix, name, n_dist_inputs);
  const auto k = static_cast<int64_t>(index.size() / 4);
  int64_t steps = 0, steps_with_dist = 0;
  for (int64_t j = 0; j < k; ++j) {
    steps += index[4 * j];
    if (index[4 * j + 1] > 0) steps_with_dist += index[4 * j];
  }
  const Space& obs_space = observation_space();
  const Space& act_space = action_space();
  auto tensor = [&](const std::string& what, DType dtype, const Shape& shape) -> const Tensor& {
    return checked_tensor(c, prefix, name + what, dtype, shape);
  };
  const Tensor& obs = tensor("observations", obs_space.dtype(), with_rows(steps + k, obs_space.shape()));
  const Tensor& act = tensor("actions", act_space.dtype(), with_rows(steps, act_space.shape()));
  const Tensor& rew = tensor("rewards", DType::float32, Shape{steps});
  const Tensor& ret = tensor("returns", DType::float32, Shape{steps});
  const Tensor& discount = tensor("discount_mask", DType::boolean, Shape{steps});
  const Tensor& dist = tensor("dist_inputs", DType::float32, Shape{steps_with_dist, n_dist_inputs});
  const std::vector<double> totals = tensor("total_returns", DType::float64, Shape{k}).to_vector<double>();
  std::vector<Trajectory> pieces;
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
  return pieces;
}

// The environments first: each restore is all or nothing, and should the eval environment refuse
// its state the training one is put back, so a failure changes nothing. Returns whether the
// training environment's state was restored.
bool RLTask::restore_env_states(const io::Checkpoint& c, const std::string& prefix, bool has_env_state,
                                bool has_eval_env_state) {
  const std::vector<double> train_state = saved_env_state(c, prefix, has_env_state, "env_state");
  const std::vector<double> eval_state = saved_env_state(c, prefix, has_eval_env_state, "eval_env_state");
  auto restore = [&](VectorEnv& env, const std::vector<double>& state, const char* entry) {
    try {
      env.restore_checkpoint_state(state);
      return true;
    } catch (const CheckpointNotSupported&) {
      return false;
    } catch (const Error& e) {
      CTRAX_THROW(importer(c), ": tensor '", prefix, entry, "': ", e.what());
    }
  };
  if (!has_env_state) {
    if (has_eval_env_state) restore(*eval_env_, eval_state, "eval_env_state");
    return false;
  }
  std::vector<double> previous;
  try {
    previous = env_->checkpoint_state();
  } catch (const CheckpointNotSupported&) {
  }
  const bool env_restored = restore(*env_, train_state, "env_state");
  if (has_eval_env_state) {
    try {
      restore(*eval_env_, eval_state, "eval_env_state");
    } catch (...) {
      if (env_restored) env_->restore_checkpoint_state(previous);
      throw;
    }
  }
  return env_restored;
}

void RLTask::import_state(const io::Checkpoint& c, const std::string& prefix) {
  const std::string who = importer(c);
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
  SavedTaskFields f;
  f.n_replay_epochs = count_field("n_replay_epochs");
  f.n_dist_inputs = count_field("n_dist_inputs");
  f.n_collections = count_field("n_collections");
  f.n_trajectories = count_field("n_trajectories");
  f.n_interactions = count_field("n_interactions");
  f.interrupted = c.bool_field(prefix + "interrupted");
  f.has_env_state = c.bool_field(prefix + "has_env_state");
  f.has_eval_env_state = c.bool_field(prefix + "has_eval_env_state");

  // ---- Tensors, each checked for shape and dtype, before anything changes.
  const Space& obs_space = observation_space();
  const Tensor observations =
      checked_tensor(c, prefix, "observations", obs_space.dtype(), with_rows(options_.n_envs, obs_space.shape()))
          .contiguous()
          .clone();
  // The episodes in progress (absent from checkpoints written before they were recorded: zeros).
  std::vector<double> episode_return(static_cast<size_t>(options_.n_envs), 0.0);
  std::vector<int64_t> episode_length(static_cast<size_t>(options_.n_envs), 0);
  if (c.tensors.count(prefix + "episode_returns") || c.tensors.count(prefix + "episode_lengths")) {
    const Shape n{options_.n_envs};
    episode_return = checked_tensor(c, prefix, "episode_returns", DType::float64, n).to_vector<double>();
    episode_length = checked_tensor(c, prefix, "episode_lengths", DType::int64, n).to_vector<int64_t>();
  }
  const Tensor& epoch_ids = c.tensor(prefix + "epochs");
  CTRAX_REQUIRE(epoch_ids.dtype() == DType::int64 && epoch_ids.rank() == 1, who, ": tensor '", prefix,
                "epochs' is ", dtype_name(epoch_ids.dtype()), " ", epoch_ids.shape(), ", expected int64 [E]");
  std::map<int64_t, std::vector<Trajectory>> trajectories;
  const std::vector<int64_t> epochs = epoch_ids.to_vector<int64_t>();
  for (size_t i = 0; i < epochs.size(); ++i) {
    CTRAX_REQUIRE(epochs[i] >= 0 && (i == 0 || epochs[i] > epochs[i - 1]), who, ": tensor '", prefix,
                  "epochs' holds ", epochs[i], " at position ", i, " (expected epochs >= 0 in ascending order)");
    trajectories[epochs[i]] = import_epoch(c, prefix, epochs[i], f.n_dist_inputs);
  }

  // ---- Commit.
  const bool env_restored = restore_env_states(c, prefix, f.has_env_state, f.has_eval_env_state);
  options_.n_replay_epochs = f.n_replay_epochs;
  n_dist_inputs_ = f.n_dist_inputs;
  n_collections_ = static_cast<uint64_t>(f.n_collections);
  n_trajectories_ = f.n_trajectories;
  n_interactions_ = f.n_interactions;
  trajectories_ = std::move(trajectories);
  observations_ = observations;
  episode_return_ = std::move(episode_return);
  episode_length_ = std::move(episode_length);
  // Without the environment's state the copies no longer match observations_: the next
  // training collection resets them (the fallback of docs/rl.md, "Task checkpoints").
  interrupted_ = env_restored ? f.interrupted : true;
}

}  // namespace ctrax
