// Agent: the RL training loop every trainer shares (Trax's rl/training.py Agent, formerly
// RLTrainer).
//
// What it is for: running epochs of "collect, train, evaluate (and confirm), log, save" around an RLTask
// (rl/learning/task.h). Subclasses say how to act (act) and how to learn from the stored trajectories
// (train_epoch); the policy-gradient, actor-critic and joint trainers are subclasses
// (rl/agents/policy_agent.h, rl/agents/actor_critic.h, rl/agents/actor_critic_joint.h). What it is not for:
// choosing hyperparameters (configs/) or running several agents at once.
//
// One epoch of run(n):
//   1. epoch += 1; collect n_trajectories_per_epoch trajectories (or n_interactions_per_epoch
//      steps) at temperature 1 into the task's replay epoch `epoch` (with only_eval, collect the
//      same amount for evaluation without storing, and train nothing);
//   2. train_epoch() (the subclass);
//   3. the routine evaluation: n_eval_episodes episodes per eval temperature (0: the greedy
//      action or the Gaussian mean) of the policy just trained;
//   4. a confirmation (confirm()): n_confirm_episodes greedy episodes (the first eval
//      temperature) on seeds that training and the routine evaluation never use, when the
//      routine evaluation reaches target_return, and always in the run's final epoch (max_epochs
//      or total_env_steps reached). The run is solved when a confirmation meets the target;
//   5. one row of metrics (phase "rl", step = epoch), then the checkpoint (every
//      checkpoint_every epochs, and always when the run is solved or final), and a copy of it
//      as the best checkpoint when a confirmation beats every earlier one.
// run(n) stops early once done(): solved, or max_epochs or total_env_steps reached.
// Differences from Trax: Trax evaluates before training and its callers stop after training,
// so the policy a run stops with is one training epoch past the one that scored (often worse);
// here the evaluated policy is the one the epoch's checkpoint holds, and a stop needs the
// confirmation, not one routine evaluation of a few episodes. Training is the same either way
// (evaluations change no statistics and draw no random numbers training uses).
//
// Metrics of an epoch's row (absent when they do not apply; docs/algorithms.md lists them):
//   train/episode_return_mean, train/episode_length_mean, train/episodes: the episodes that
//     ended during this epoch's collection, whole (their steps in earlier epochs included);
//   eval/return_mean, eval/return_std, eval/length_mean: the routine evaluation at temperature 0
//     (eval_T<t>/... for another temperature t);
//   confirm/return_mean, _std, _min, _median, _max, _ci95_low, _ci95_high, confirm/length_mean,
//     confirm/episodes, confirm/solved (1 when it met the target): the confirmation;
//   n_interactions, n_trajectories: totals so far (the initial random trajectories included);
//   time/epoch_seconds: wall-clock since the previous row (so it includes the previous epoch's
//     checkpoint and logging), with its parts time/collect_seconds, time/train_seconds,
//     time/eval_seconds (routine and confirmation) and time/checkpoint_seconds (the previous
//     epoch's save; in the background, its snapshot and any wait for it);
//     time/env_steps_per_second: this epoch's collected steps / epoch_seconds;
//   and whatever train_epoch returns (policy/..., value/...: losses, entropy, KL, ...).
//
// Device (AgentOptions::device): where the agent's networks live and train. The environments,
// the task's replay buffer and the advantage estimators stay on the CPU. Per environment step the
// observations of all copies move to the device once, the policy runs there, and its outputs
// come back once (actions are sampled on the CPU from them, with the same random numbers as on
// the CPU). Per training step each tensor of the batch moves to the device once; the loss, the
// gradients and the optimizer's update run there. Checkpoints hold CPU copies, so a run saved on
// one device resumes on another. A GPU needs a build with the CUDA backend, a usable GPU and an
// optimizer with a CUDA update; the constructor throws ctrax::Error saying which is missing.
//
// Output directory (when set): metrics.jsonl and metrics.csv with the rows of every epoch, and
// checkpoints/ (io/checkpoint.h) holding the agent (epoch, returns), the task (its replay buffer,
// counters and the environments' states: RLTask::export_state under "task/") and whatever the
// subclass exports (its networks, optimizer slots, rng and the collect model's statistics), and
// checkpoints/best/ holding the best confirmed policy's checkpoint. A new Agent on a directory
// with a checkpoint restores one (AgentOptions::restore_from: the newest, the best or a given
// epoch) when its construction finishes (restore(), see below); given a task built
// with the same options, the resumed run then continues exactly as the uninterrupted one would
// (bit for bit, environments that support checkpoints; see rl/learning/task.h for those that do not).
// The metric rows of later epochs are dropped (all of them when there is no checkpoint), and so
// are the checkpoints of later epochs when the run continues from an older one.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../../io/checkpoint.h"
#include "../../optim/metrics_log.h"
#include "../../tensor/device.h"
#include "../learning/evaluation.h"
#include "../learning/task.h"

namespace ctrax {

// Which checkpoint a new agent restores: the newest, the best confirmed one, or epoch N's.
struct CheckpointChoice {
  enum class Kind { latest, best, epoch } kind = Kind::latest;
  int64_t epoch = 0;  // Kind::epoch only
  // "latest", "best" or an epoch number >= 0; anything else throws ctrax::Error.
  static CheckpointChoice parse(const std::string& text);
  std::string to_string() const;
};

struct AgentOptions {
  // Collection per epoch: exactly one of these (Trax's collect_per_epoch became these two).
  std::optional<int64_t> n_trajectories_per_epoch;
  std::optional<int64_t> n_interactions_per_epoch;
  int64_t n_eval_episodes = 0;                 // >= 0 per eval temperature
  std::vector<double> eval_temperatures = {0.0};
  std::optional<int64_t> eval_max_steps;       // >= 1; default the task's max_steps
  bool only_eval = false;                      // collect for evaluation only, train nothing
  std::filesystem::path output_dir;            // empty: nothing is written
  bool read_only = false;                      // restore from output_dir's newest checkpoint but
                                               // write nothing there (evaluating a finished run)
  int checkpoints_to_keep = 2;                 // >= 1
  std::vector<std::shared_ptr<MetricsSink>> sinks;  // in addition to the output directory's files
  Device device = Device::cpu();               // the networks' device (see the top of this file)
  // Stopping (see the top of this file). With a target, n_eval_episodes must be >= 1.
  std::optional<double> target_return;         // finite; none: no early stop
  int64_t n_confirm_episodes = 100;            // >= 1
  // What of the confirmation must reach the target: its mean, or the lower end of its 95%
  // interval (stricter: a policy that just makes the target on average is not taken).
  enum class ConfirmStatistic { mean, ci95_low } confirm_statistic = ConfirmStatistic::mean;
  std::optional<int64_t> max_epochs;           // >= 1: the run's length in epochs
  std::optional<int64_t> total_env_steps;      // >= 1: the run's budget of environment steps, the
                                               // initial random trajectories' included
  int64_t checkpoint_every = 1;                // >= 1 epochs between checkpoints
  // Write each epoch's checkpoint on a thread of its own while the next epoch collects and
  // trains (io::CheckpointDirectory::save_in_background): a save is mostly fsync waits. The
  // next epoch waits for it before writing its metrics row, so a failed save still stops the
  // run before another row is written; finish_saving() (or the destructor) waits for the last.
  // `ctrax train` turns it on.
  bool background_checkpoints = false;
  CheckpointChoice restore_from;               // which checkpoint of output_dir to restore
  // Linear annealing of every network's learning rate (the schedule's rate times 1 - progress(),
  // set before each epoch's training, as Stable-Baselines3 anneals). Needs max_epochs or
  // total_env_steps.
  bool anneal_learning_rate = false;
  // Every network's training step runs compiled (TrainerOptions::compile, tensor/compile.h):
  // the same results bit for bit, without the per-op overhead. false: eager.
  bool compile = true;
};

// The prefix of the routine evaluation's metrics at `temperature`: "eval/" for 0, else
// "eval_T<t>/" (e.g. "eval_T0.5/").
std::string eval_metric_prefix(double temperature);

// A confirmation: the episodes' statistics and whether they met the target.
struct Confirmation {
  int64_t epoch = 0;
  EpisodeSummary summary;
  bool solved = false;
};

class Agent {
 public:
  // The agent shares ownership of the task (the caller may keep its own pointer to inspect it).
  // Throws ctrax::Error for a null task or options out of range.
  Agent(TaskPtr task, AgentOptions options);
  virtual ~Agent();
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // The algorithm ("PPO", "PolicyGradient", ...): checkpoints record it and restore only into
  // the same algorithm.
  virtual std::string name() const = 0;

  // Runs up to n_epochs >= 1 epochs, fewer when done() first (see the top of this file);
  // returns the row of the last epoch run (empty when none ran).
  Metrics run(int64_t n_epochs);
  // Solved, or max_epochs or total_env_steps reached: run() does nothing more.
  bool done() const;
  bool solved() const { return solved_; }
  // The fraction of the run done: during an epoch's training, what was done before its
  // collection (n_interactions then / total_env_steps, else (epoch - 1) / max_epochs); between
  // epochs, everything so far; 0 without either limit. In [0, 1].
  double progress() const;
  // The latest and the best confirmation so far (nullopt before the first).
  const std::optional<Confirmation>& last_confirmation() const { return last_confirmation_; }
  const std::optional<Confirmation>& best_confirmation() const { return best_confirmation_; }
  // Plays n_confirm_episodes episodes of the current policy at the first eval temperature on
  // seeds derived from the epoch under a tag of their own (RLTask::evaluation_seed), without
  // changing any statistics or counter; `solved` compares its confirm_statistic with
  // target_return (false without a target).
  Confirmation confirm();

  int64_t epoch() const { return epoch_; }
  // The mean collection return of every epoch so far (Trax's avg_returns).
  const std::vector<double>& avg_returns() const { return avg_returns_; }
  // The eval returns of every epoch so far, per temperature.
  const std::map<double, std::vector<double>>& eval_returns() const { return eval_returns_; }
  RLTask& task() const { return *task_; }
  const TaskPtr& task_ptr() const { return task_; }
  const AgentOptions& agent_options() const { return options_; }
  // Where the networks live and train (AgentOptions::device).
  Device device() const { return options_.device; }

  // The policy as the task's collector calls it: one call per step for all copies.
  CollectPolicy collect_policy();

  // Plays n_episodes >= 1 episodes in the task's eval environment at `temperature` (0: the
  // greedy action) without storing them or changing any statistics, as the epochs' evaluation
  // does; max_steps defaults to eval_max_steps. Returns their mean return and length.
  // With `seed`, the eval environment is reset with it and the task's counters are untouched
  // (CollectOptions::eval_seed).
  CollectStats evaluate(int64_t n_episodes, double temperature, std::optional<int64_t> max_steps = std::nullopt,
                        std::optional<uint64_t> seed = std::nullopt);
  // The policy in evaluation mode (statistics untouched) for [N, ...] observations: for
  // programs that run a trained agent in their own loop (`ctrax eval --render`).
  PolicyOutput evaluation_act(const Tensor& observations, Key key, double temperature);

  // Saves a checkpoint now (a no-op without an output directory or when read-only); with
  // background_checkpoints it is written in the background.
  void save();
  // Waits for a checkpoint being written in the background; rethrows its ctrax::Error.
  void finish_saving();
  // The factor annealed learning rates are multiplied by: 1 - progress() with
  // anneal_learning_rate, else 1.
  double learning_rate_factor() const;

 protected:
  // Actions and distribution inputs for the [N, ...] observations (one row per copy).
  virtual PolicyOutput act(const Tensor& observations, Key key, double temperature) = 0;
  // Trains on the task's trajectories; returns the metrics to log.
  virtual Metrics train_epoch() = 0;
  // The subclass's part of a checkpoint, and restoring it (all names and fields are the
  // subclass's; the agent's own fields start with "agent/").
  virtual void export_state(std::map<std::string, Tensor>& tensors, io::ManifestFields& fields) const = 0;
  virtual void import_state(const io::Checkpoint& checkpoint) = 0;
  // Restores the chosen checkpoint of the output directory (AgentOptions::restore_from), if
  // any; it finishes the agent's construction. Subclasses call it at the end of their
  // constructors (when everything import_state needs exists), or are built with build_agent<A>,
  // which calls it; run() and save() refuse an agent on which it never ran (which would
  // otherwise start over silently on a directory with a checkpoint). Returns whether one was
  // restored. Asking for the best or an epoch that does not exist throws ctrax::Error.
  bool restore();
  // True while run() plays evaluation episodes (act() then leaves statistics alone).
  bool evaluating() const { return evaluating_; }

 private:
  void log(const Metrics& row);
  void save_to(io::CheckpointDirectory& directory, bool in_background = false);
  void open_existing_csv();
  std::optional<io::Checkpoint> load_chosen();
  void evaluate_epoch(Metrics& row);
  bool final_epoch() const;

  TaskPtr task_;
  AgentOptions options_;
  int64_t epoch_ = 0;
  bool evaluating_ = false;
  std::vector<double> avg_returns_;
  std::map<double, std::vector<double>> eval_returns_;
  std::vector<std::shared_ptr<MetricsSink>> sinks_;
  std::shared_ptr<MetricsSink> csv_;  // made at the first row, when the columns are known
  std::unique_ptr<io::CheckpointDirectory> checkpoints_;
  bool solved_ = false;
  std::optional<Confirmation> last_confirmation_, best_confirmation_;
  double last_checkpoint_seconds_ = 0.0;
  std::optional<int64_t> epoch_start_steps_;  // set from an epoch's start to the end of its training
  std::optional<std::chrono::steady_clock::time_point> last_row_time_;
  bool construction_finished_ = false;  // restore() has run

  void require_construction_finished(const char* what) const;
  template <typename A, typename... Args>
  friend std::unique_ptr<A> build_agent(Args&&... args);
};

// Constructs an agent of type A (any Agent subclass) from `args` and finishes its
// construction: restore() runs once, whether or not A's constructor called it, so the agent
// resumes from its output directory's checkpoint.
template <typename A, typename... Args>
std::unique_ptr<A> build_agent(Args&&... args) {
  static_assert(std::is_base_of_v<Agent, A>, "build_agent: A must derive from ctrax::Agent");
  std::unique_ptr<A> agent = std::make_unique<A>(std::forward<Args>(args)...);
  Agent& base = *agent;
  if (!base.construction_finished_) base.restore();
  return agent;
}

}  // namespace ctrax
