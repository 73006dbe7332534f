// RLTask: an environment plus the trajectories collected in it (Trax's rl/task.py RLTask).
//
// What it is for: the data side of every RL trainer. collect_trajectories plays a policy in N
// copies of the environment at once (a VectorEnv: the policy runs once per step on the
// [N, ...] batch of observations, never once per copy), stores the finished pieces per epoch
// in a replay buffer, and trajectory_batch gives reproducible batches of trajectory slices
// (rl/learning/trajectory.h) for training, and export_state/import_state put all of it into a
// checkpoint (below). What it is not for: learning (the trainers), or advantage estimation
// (rl/learning/advantages.h).
//
// Collection. Each copy i fills an open piece step by step. A piece closes when
//   - the episode terminates or is truncated (by the environment's time limit, time_limit
//     below): the VectorEnv resets the copy and the next piece starts the new episode;
//   - it reaches max_steps steps: the episode continues in the next piece, from the last
//     observation (Trax: "max_steps cuts a slice, the episode continues in the next collection
//     until time_limit"). time_limit counts the steps of the whole episode, max_steps those of
//     one piece.
// With n_trajectories = k, copy i must close quota_i = k / N (+1 for i < k % N) pieces: the
// first quota_i pieces of copy i are "the trajectories collected", whose total returns are
// averaged (the first pieces of each copy, so short episodes are not favoured as they would be
// by taking the first k to close among all copies). With n_interactions = n, the copies take
// ceil(n / N) steps together and every piece closed on the way counts. Steps taken beyond
// that (a copy past its quota, open pieces when collection stops) are stored too, as pieces cut
// by the collector (neither terminated nor truncated), so no experience is thrown away; their
// episodes continue in the next collection. With N = 1 and n_trajectories this gives the
// pieces Trax's collection gives.
//
// Evaluation (only_eval): the eval VectorEnv is reset (seeded) at the start of every call,
// pieces are whole episodes from a reset cut at max_steps (a copy whose counted episode was
// cut waits, uncounted, until the environment ends that episode), and nothing is stored. The
// eval VectorEnv is always a second one, so evaluation never disturbs the training episodes
// in progress (Trax shares the training env unless given an env name).
//
// Replay: pieces of a collection go to its epoch (an int >= 0). After storing into epoch e, the
// epochs < e - n_replay_epochs are dropped, so n_replay_epochs + 1 epochs survive (Trax keeps
// keys >= e - n_replay_epochs; epoch 0, the initial random trajectories, gets no special
// treatment and goes too once e > n_replay_epochs).
//
// Initial trajectories: initial_trajectories = k > 0 collects k pieces with random_policy (the
// action space's sampler) into epoch 0 at construction, in the training environment (whose
// episodes then continue into epoch 1, as in Trax). They have no dist_inputs (D = 0; batches
// fill zeros, which for a Categorical are the uniform policy that chose them).
//
// Batches (Trax's trajectory_batch_stream): each of the B examples picks an epoch with
// probability proportional to its number of slices (n_slices in rl/learning/trajectory.h), then a
// trajectory of it proportional to its slices (or uniformly), then a start uniformly among its
// slices; the slices are stacked by stack_slices. Batch `index` is a pure function of the
// task's key, the index and the buffer's contents, so training on it is reproducible and
// resumable (optim/trainer.h's BatchStream).
//
// Reproducibility: everything random comes from RLTaskOptions::key: the training environment's
// seed, the eval environment's seed for each eval call, the policy's key for each step of each
// collection (policy keys fold in a collection counter and the step), and batch sampling. Two
// tasks built with the same options and driven by the same calls hold the same data.
//
// Time limits: Gymnasium's truncation is a truncation here too (bootstrap), where Trax marked
// the time-limit step done. time_limit defaults to max_steps (Trax), and without either to the
// environment's registered limit.
//
// Checkpoints (export_state/import_state): a task made with the same options that imports what
// another exported continues exactly as the exporter would have: the same replay buffer, the
// same counters (so the same policy keys, eval seeds and batches), and, through the training
// VectorEnv's checkpoint_state (rl/environments/vector_env.h), the same episodes in progress and the same
// future resets. The eval environment is reseeded on every eval call from the collection
// counter; its checkpoint_state is saved too where it has one (it matters only for state its
// wrappers carry across calls, such as NormalizeObservation's statistics).
//
// Fallback when the environment cannot be checkpointed (a user Env or wrapper without
// checkpoint_state: CheckpointNotSupported): export_state still saves the buffer and the
// counters and records "<prefix>has_env_state" = false. import_state then restores those and
// marks the training environment interrupted, so the next training collection resets it
// (seeded from the collection counter, as after a collection that threw): the episodes that
// were in progress are abandoned, and the run goes on reproducibly (the same checkpoint resumed
// twice gives the same data) but not as the uninterrupted run would have. The same happens
// when the checkpoint holds an environment state that this task's environment cannot restore
// for want of support (a different environment factory). The eval environment is then left as
// it is.
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

struct CollectOptions {
  std::optional<int64_t> n_trajectories;  // exactly one of these two, >= 1
  std::optional<int64_t> n_interactions;
  bool only_eval = false;
  std::optional<int64_t> max_steps;       // >= 1; default the task's
  int64_t epoch = 1;                      // >= 0; where training pieces are stored
  double temperature = 1.0;               // passed to the policy
  // only_eval: reset the eval environment with this seed (copy i gets seed + i) instead of the
  // seed derived from the collection counter, and leave the counter as it is, so that the
  // episodes are a pure function of the seed and training is not shifted by them (the agents'
  // confirmations and `ctrax eval` use seeds derived under tags training never uses).
  std::optional<uint64_t> eval_seed;
};

struct CollectStats {
  // Mean total (undiscounted) return of the pieces that count (see the top of this file);
  // 0 when none closed (Trax).
  double mean_return = 0.0;
  double mean_length = 0.0;    // mean number of steps of the pieces that count; 0 when none
  int64_t n_trajectories = 0;  // pieces that count
  int64_t n_interactions = 0;  // environment steps taken, all copies together
  // The counted pieces' returns and lengths, in the order they closed (for evaluation these
  // are whole episodes: the statistics of `ctrax eval` and of the agents' confirmations).
  std::vector<double> returns;
  std::vector<int64_t> lengths;
  // Training collections: the episodes that ended during this collection, with their whole
  // return and length (the steps of earlier collections included: the pieces above are cut at
  // collection boundaries, these are not). Empty for evaluation.
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

  // Plays `policy` (see the top of this file). Throws ctrax::Error when not exactly one of
  // n_trajectories and n_interactions is given, for values out of range, and when the policy
  // answers with undefined tensors, wrong shapes, an action dtype of the wrong kind, or a D
  // different from earlier calls. A collection that throws stores nothing; the episodes it
  // interrupted are abandoned (the next collection resets the training environment).
  CollectStats collect_trajectories(const CollectPolicy& policy, const CollectOptions& options);

  // Batch `index` >= 0 (see the top of this file). Throws ctrax::Error for options out of
  // range, or when the selected epochs hold no trajectory.
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
  // Training and eval collections so far (folded into policy keys and eval seeds).
  int64_t n_collections() const { return static_cast<int64_t>(n_collections_); }
  // The D >= 1 of the policies seen so far (0: none yet).
  int64_t n_dist_inputs() const { return n_dist_inputs_; }
  // The seed the eval environment is reset with for evaluation stream `tag` (>= 1), number
  // `index`: derived from the task's key under a tag that training never uses, so such
  // episodes are disjoint from the training and routine-evaluation episodes (CollectOptions::
  // eval_seed). The agents use tag 1 for confirmations, `ctrax eval` tag 2.
  uint64_t evaluation_seed(uint64_t tag, uint64_t index) const;

  // The task's whole state as checkpoint entries, for owners that save it with other things in
  // one checkpoint (the RL agents; the pattern of optim/trainer.h). prefix is e.g. "task/".
  //   fields   <prefix>env_name, observation_space, action_space (as printed), n_envs,
  //            n_eval_envs, gamma, key_0, key_1, max_steps, time_limit (0: none),
  //            n_replay_epochs, n_dist_inputs, n_collections, n_trajectories, n_interactions,
  //            interrupted, has_env_state, has_eval_env_state;
  //   tensors  <prefix>observations [N, ...]: the training copies' current observations;
  //            <prefix>episode_returns float64 [N], <prefix>episode_lengths int64 [N]: the
  //            return and length of each copy's episode in progress (a checkpoint without
  //            them, from before they existed, restores zeros);
  //            <prefix>env_state, <prefix>eval_env_state: float64 [S], the VectorEnvs'
  //            checkpoint_state (present when has_env_state / has_eval_env_state);
  //            <prefix>epochs int64 [E]: the stored epochs, ascending; and for each epoch e,
  //            the K trajectories of that epoch concatenated along the first axis in order:
  //            <prefix>epoch_<e>/index int64 [K, 4]: per trajectory T, D, terminated, truncated;
  //            .../observations [sum (T + 1), ...], .../actions [sum T, ...],
  //            .../rewards, .../returns float32 [sum T], .../discount_mask bool [sum T],
  //            .../dist_inputs float32 [sum of T over those with D > 0, n_dist_inputs],
  //            .../total_returns float64 [K].
  // When the training environment throws CheckpointNotSupported, has_env_state is false (see
  // the fallback at the top of this file); any other error propagates.
  void export_state(std::map<std::string, Tensor>& tensors, io::ManifestFields& fields,
                    const std::string& prefix) const;
  // Restores everything export_state saved, after checking it against this task: the same
  // environment name, spaces, N (training and eval), gamma, key, max_steps and time_limit;
  // every tensor's presence, shape and dtype; the trajectories' lengths, D (0 or n_dist_inputs)
  // and flags; counts >= 0. Any mismatch throws ctrax::Error naming the checkpoint's manifest
  // and the entry, and the task is then unchanged (the environments' states included).
  // n_replay_epochs is restored too (set_n_replay_epochs may have changed it). Without an
  // environment state, the fallback at the top of this file applies.
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
  // The training copies' current observations [N, ...]: collections close every open piece
  // when they stop, so this is all that carries over to the next one.
  Tensor observations_;
  // Set while a training collection runs: if it throws, the copies' state no longer matches
  // observations_, and the next collection starts them afresh (reset).
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
