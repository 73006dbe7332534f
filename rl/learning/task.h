// RLTask: an environment plus the trajectories collected in it (Trax's rl/task.py RLTask), the
// data side of every RL trainer. collect_trajectories plays a policy in N copies at once (a
// VectorEnv: one policy call per step on the [N, ...] observations), stores the closed pieces
// per epoch in a replay buffer, and trajectory_batch cuts reproducible batches of slices from them
// (rl/learning/trajectory.h); export_state/import_state checkpoint all of it. Not learning (the
// trainers) or advantage estimation (rl/learning/advantages.h). Agents share a task (TaskPtr).
//
// A piece closes when its episode terminates or is truncated (time_limit counts the whole
// episode's steps) or after max_steps steps (the episode goes on in the next piece); pieces still
// open when a collection stops are stored as cut (neither flag). Storing into epoch e drops the
// epochs < e - n_replay_epochs. Everything random comes from RLTaskOptions::key: tasks built with
// the same options and driven by the same calls hold the same data.
// Code: task.cpp (construction, replay, batches), task_collection.cpp (training and evaluation
// collections), task_checkpoint.cpp. Design, the quota rule, evaluation, batch sampling and Trax
// differences: docs/rl.md, "Collection"; checkpoints: docs/rl.md, "Task checkpoints".
#pragma once

#include <cstdint>
#include <memory>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "../../io/checkpoint.h"
#include "../../tensor/random.h"
#include "../../tensor/tensor.h"
#include "../environments/env.h"
#include "../environments/space.h"
#include "trajectory.h"
#include "../environments/vector_env.h"

namespace ctrax {

// A collection policy's answer for the N observations of one step.
struct PolicyOutput {
  Tensor actions;      // [N, ...action shape], each row in the action space
  Tensor dist_inputs;  // [N, D] floating, stored per step; D >= 1 the same on every call of a
                       // task, or D = 0 (none recorded) at any time
};

// Called once per environment step with the [N, ...] observations of all copies (owned by the
// VectorEnv and overwritten by its next step: copy what you keep), a fresh key and the
// collection's temperature. (Not "Policy": that is the policy network of layers/models.h.)
using CollectPolicy = std::function<PolicyOutput(const Tensor& observations, Key key, double temperature)>;

// Uniformly random actions from the space's sampler; dist_inputs [N, 0].
CollectPolicy random_policy(const Space& action_space);

// Makes `num_envs` copies with the given time limit (nullopt: the environment's own).
using VectorEnvFactory = std::function<VectorEnvPtr(int64_t num_envs, std::optional<int64_t> max_episode_steps)>;

struct RLTaskOptions {
  int64_t n_envs = 1;                  // >= 1: copies stepped together in collection
  int64_t n_eval_envs = 1;             // >= 1: copies of the eval environment
  int64_t initial_trajectories = 1;    // >= 0: random-policy pieces stored as epoch 0
  double gamma = 0.99;                 // in [0, 1]
  std::optional<int64_t> max_steps;    // >= 1: the longest piece; none: pieces end with episodes
  std::optional<int64_t> time_limit;   // >= 1: the episode's truncation limit; default max_steps
  int64_t n_replay_epochs = 1;         // >= 0
  Key key;                             // everything random
};

// Which closed pieces count (CollectStats): with n_trajectories = k, copy i's first k / N
// (+1 for i < k % N); with n_interactions = n, every piece closed in the ceil(n / N) steps.
struct CollectOptions {
  std::optional<int64_t> n_trajectories;  // exactly one of these two, >= 1
  std::optional<int64_t> n_interactions;
  // Evaluate in the eval copies, reset at every call: whole episodes cut at max_steps, none stored.
  bool only_eval = false;
  std::optional<int64_t> max_steps;       // >= 1; default the task's
  int64_t epoch = 1;                      // >= 0; where training pieces are stored
  double temperature = 1.0;               // passed to the policy
  // only_eval only: reset with this seed (copy i: seed + i) and leave the collection counter
  // alone, so the episodes are a pure function of the seed (RLTask::evaluation_seed).
  std::optional<uint64_t> eval_seed;
  // With eval_seed only: play in this many copies at once (>= 1) instead of the n_eval_envs
  // eval copies. Copies of that width are made on first use and kept for the next call of the
  // same width. Wider batches amortise the policy's per-call cost: a confirmation of 1000
  // episodes in 1000 copies takes 200 policy calls of 1000 rows where 4 copies take 50,000 of 4.
  // The episodes are a pure function of (eval_seed, eval_envs).
  std::optional<int64_t> eval_envs;
};

struct CollectStats {
  // Mean total (undiscounted) return of the counted pieces (CollectOptions); 0 when none closed.
  double mean_return = 0.0;
  double mean_length = 0.0;    // mean number of steps of the pieces that count; 0 when none
  int64_t n_trajectories = 0;  // pieces that count
  int64_t n_interactions = 0;  // environment steps taken, all copies together
  // The counted pieces' returns and lengths in closing order (evaluation: whole episodes).
  std::vector<double> returns;
  std::vector<int64_t> lengths;
  // Training only: the episodes that ended in this collection, with their whole return and
  // length (earlier collections' steps included); empty for evaluation.
  std::vector<double> episode_returns;
  std::vector<int64_t> episode_lengths;
};

struct TrajectoryBatchOptions {
  int64_t batch_size = 1;                   // >= 1
  std::vector<int64_t> epochs;              // empty: every stored epoch; negative: -1 is the last
  std::optional<int64_t> max_slice_length;  // >= 1; none: whole trajectories
  std::optional<int64_t> min_slice_length;  // >= 1: pad batches to at least this length
  int64_t margin = 0;                       // >= 0: entries past the end (rl/learning/trajectory.h)
  bool sample_trajectories_uniformly = false;
  bool pad_to_power_of_two = true;          // Trax's padding; false: to the longest (stack_slices)
};

class RLTask {
 public:
  // A built-in environment by name (make_vector_env: the batched CartPole where it exists).
  RLTask(const std::string& env_name, RLTaskOptions options = {});
  // Any environment: N copies from `make_env` in a SyncVectorEnv, each in a TimeLimit when a
  // time limit (or max_steps) is given.
  RLTask(const std::function<EnvPtr()>& make_env, RLTaskOptions options = {});
  // Any vector environment: `make` builds the training and the eval one.
  RLTask(const VectorEnvFactory& make, RLTaskOptions options = {});

  ~RLTask();
  RLTask(const RLTask&) = delete;
  RLTask& operator=(const RLTask&) = delete;

  // Plays `policy`; training collections store into options.epoch. Throws ctrax::Error for an
  // empty policy, not exactly one of n_trajectories and n_interactions, values out of range, an
  // eval_seed without only_eval, or policy outputs undefined, ill-shaped, of the wrong dtype kind,
  // off the CPU or with a D unlike earlier calls'. A training collection that throws stores
  // nothing and abandons the episodes in progress (the next one resets the copies).
  CollectStats collect_trajectories(const CollectPolicy& policy, const CollectOptions& options);

  // Batch `index` >= 0: a pure function of the task's key, the index and the stored pieces
  // (sampling: docs/rl.md, "Collection"). Throws ctrax::Error for options out of range, an empty
  // buffer, or selected epochs that hold no trajectory.
  TimeStepBatch trajectory_batch(const TrajectoryBatchOptions& options, int64_t index) const;
  // The same as a function of the index. The task must outlive it; it sees later collections.
  std::function<TimeStepBatch(int64_t)> trajectory_batch_stream(const TrajectoryBatchOptions& options) const;
  // The batch indices of an actor-critic's two streams: policy batch i and value batch i draw
  // different slices from the same task (trajectory_batch is a function of the index).
  static int64_t policy_batch_index(int64_t step) { return 2 * step; }
  static int64_t value_batch_index(int64_t step) { return 2 * step + 1; }

  // Stored pieces by epoch, each epoch in collection order.
  const std::map<int64_t, std::vector<Trajectory>>& trajectories() const { return trajectories_; }
  // Adds pieces (e.g. recorded elsewhere) to `epoch`; they must match the environment's
  // spaces. No eviction happens here.
  void add_trajectories(int64_t epoch, std::vector<Trajectory> trajectories);
  void remove_epoch(int64_t epoch) { trajectories_.erase(epoch); }
  void set_n_replay_epochs(int64_t n_replay_epochs);

  const std::string& env_name() const { return env_name_; }
  const Space& observation_space() const { return env_->single_observation_space(); }
  const Space& action_space() const { return env_->single_action_space(); }
  double gamma() const { return options_.gamma; }
  std::optional<int64_t> max_steps() const { return options_.max_steps; }
  std::optional<int64_t> time_limit() const { return options_.time_limit; }
  int64_t n_envs() const { return options_.n_envs; }
  int64_t n_replay_epochs() const { return options_.n_replay_epochs; }
  // Totals over the training collections (not eval) since construction, epoch 0 included.
  int64_t n_trajectories() const { return n_trajectories_; }
  int64_t n_interactions() const { return n_interactions_; }
  // Collections so far, training and evaluation, except those given an eval_seed.
  int64_t n_collections() const { return static_cast<int64_t>(n_collections_); }
  // The D >= 1 of the policies seen so far (0: none yet).
  int64_t n_dist_inputs() const { return n_dist_inputs_; }
  // The eval seed (CollectOptions::eval_seed) of evaluation stream `tag` >= 1, number `index`,
  // from the key under a tag training never uses (agents' confirmations: tag 1, `ctrax eval`:
  // tag 2, agents' routine evaluations: tag 3). Throws ctrax::Error for tag 0.
  uint64_t evaluation_seed(uint64_t tag, uint64_t index) const;

  // The task's whole state as checkpoint entries under `prefix` (e.g. "task/"), for owners that
  // save it with other things (the RL agents; the pattern of optim/trainer.h): options and
  // counters as fields; as tensors the copies' observations and episodes in progress, the
  // environments' checkpoint_state and every stored epoch's pieces (names, shapes and dtypes:
  // docs/rl.md, "Task checkpoints"). An environment throwing CheckpointNotSupported is recorded
  // as has_env_state / has_eval_env_state false; any other error propagates, adding nothing.
  void export_state(std::map<std::string, Tensor>& tensors, io::ManifestFields& fields,
                    const std::string& prefix) const;
  // Restores everything export_state saved (n_replay_epochs included) after checking it against
  // this task: environment name, spaces, N (training and eval), gamma, key, max_steps and
  // time_limit; every tensor's presence, shape and dtype; the pieces' lengths, D (0 or
  // n_dist_inputs) and flags; counts >= 0. A mismatch throws ctrax::Error naming the manifest and
  // the entry, leaving the task (its environments included) unchanged. Without a restorable
  // training environment state the next training collection starts fresh episodes; checkpoints
  // without episode_returns / episode_lengths restore zeros (docs/rl.md, "Task checkpoints").
  void import_state(const io::Checkpoint& checkpoint, const std::string& prefix);

 private:
  // Collection (task_collection.cpp): the two kinds, the keys of the next one, and one policy
  // call with its checks (d: the collection's dist_inputs per copy, fixed by its first step).
  struct CollectionKeys {
    Key policy_key;
    uint64_t reset_seed = 0;
  };
  CollectStats collect_training(const CollectPolicy& policy, const CollectOptions& options);
  CollectStats collect_evaluation(const CollectPolicy& policy, const CollectOptions& options);
  CollectionKeys next_collection_keys(const CollectOptions& options);
  PolicyOutput policy_step(const CollectPolicy& policy, const Tensor& observations, Key collection_key, int64_t step,
                           double temperature, int64_t& d, bool training);
  PolicyOutput checked_policy_output(PolicyOutput out, int64_t n);
  // The copies an evaluation plays in: the eval copies, or those of its eval_envs width.
  VectorEnv& evaluation_env(const CollectOptions& options);
  void store(int64_t epoch, std::vector<Trajectory> pieces);
  // Checkpoints (task_checkpoint.cpp): the pieces of one stored epoch, and the environments'
  // states restored all or nothing.
  std::vector<Trajectory> import_epoch(const io::Checkpoint& checkpoint, const std::string& prefix, int64_t epoch,
                                       int64_t n_dist_inputs) const;
  bool restore_env_states(const io::Checkpoint& checkpoint, const std::string& prefix, bool has_env_state,
                          bool has_eval_env_state);

  std::string env_name_;
  RLTaskOptions options_;
  VectorEnvPtr env_;
  VectorEnvPtr eval_env_;
  // What made them, kept for the copies of a seeded evaluation's own width (CollectOptions::
  // eval_envs), made on first use; none of their state is saved (every such call resets them).
  VectorEnvFactory make_env_;
  VectorEnvPtr seeded_eval_env_;
  // The training copies' current observations [N, ...]: collections close every open piece
  // when they stop, so this is all that carries over to the next one.
  Tensor observations_;
  // Set while a training collection runs, and by an import without the training environment's
  // state: the copies no longer match observations_, so the next training collection resets them.
  bool interrupted_ = false;
  std::map<int64_t, std::vector<Trajectory>> trajectories_;
  int64_t n_dist_inputs_ = 0;    // the D >= 1 of the policies seen so far (0: none yet)
  uint64_t n_collections_ = 0;   // folded into the policy keys and eval seeds
  int64_t n_trajectories_ = 0;
  int64_t n_interactions_ = 0;
  // Per training copy: the return and length of its episode so far (CollectStats::episode_*).
  std::vector<double> episode_return_;
  std::vector<int64_t> episode_length_;
};

// Agents share ownership of their task (rl/agents/agent.h).
using TaskPtr = std::shared_ptr<RLTask>;

}  // namespace ctrax
