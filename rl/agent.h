// Agent: the RL training loop every trainer shares (Trax's rl/training.py Agent, formerly
// RLTrainer).
//
// What it is for: running epochs of "collect, evaluate, train, log, save" around an RLTask
// (rl/task.h). Subclasses say how to act (act) and how to learn from the stored trajectories
// (train_epoch); the policy-gradient, actor-critic and joint trainers are subclasses
// (rl/policy_agent.h, rl/actor_critic.h, rl/actor_critic_joint.h). What it is not for:
// choosing hyperparameters (configs/) or running several agents at once.
//
// One epoch of run(n) (Trax's order: collection happens before training):
//   1. epoch += 1;
//   2. collect n_trajectories_per_epoch trajectories (or n_interactions_per_epoch steps) at
//      temperature 1 into the task's replay epoch `epoch`; with only_eval, collect the same
//      amount for evaluation without storing (and train nothing);
//   3. for each eval temperature, play n_eval_episodes episodes in the task's eval environment
//      (temperature 0 is the argmax action or the Gaussian mean);
//   4. train_epoch() (the subclass), unless only_eval;
//   5. write one row of metrics (phase "rl", step = epoch) and save a checkpoint.
//
// Metrics of an epoch's row: return (mean undiscounted return of the trajectories collected),
// episode_length (their mean length), eval_return_T<temperature> (e.g. eval_return_T0),
// n_interactions and n_trajectories (totals so far), env_steps_per_second (collection only),
// epoch_seconds with its parts collect_seconds, eval_seconds and train_seconds (the checkpoint
// written after the row is not counted), and whatever train_epoch returns (losses, entropy, KL, ...).
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
// subclass exports (its networks, optimizer slots, rng and the collect model's statistics). A
// new Agent on a directory with a checkpoint restores it when the subclass calls restore() at
// the end of its constructor; given a task built with the same options, the resumed run then
// continues exactly as the uninterrupted one would (bit for bit, environments that support
// checkpoints; see rl/task.h for those that do not).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "../io/checkpoint.h"
#include "../optim/metrics_log.h"
#include "../tensor/device.h"
#include "task.h"

namespace ctrax {

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
};

class Agent {
 public:
  // The task must outlive the agent. Throws ctrax::Error for options out of range.
  Agent(RLTask& task, AgentOptions options);
  virtual ~Agent();
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // The algorithm ("PPO", "PolicyGradient", ...): checkpoints record it and restore only into
  // the same algorithm.
  virtual std::string name() const = 0;

  // Runs n_epochs >= 1 epochs (see the top of this file); returns the row of the last one.
  Metrics run(int64_t n_epochs);

  int64_t epoch() const { return epoch_; }
  // The mean collection return of every epoch so far (Trax's avg_returns).
  const std::vector<double>& avg_returns() const { return avg_returns_; }
  // The eval returns of every epoch so far, per temperature.
  const std::map<double, std::vector<double>>& eval_returns() const { return eval_returns_; }
  RLTask& task() const { return task_; }
  const AgentOptions& agent_options() const { return options_; }
  // Where the networks live and train (AgentOptions::device).
  Device device() const { return options_.device; }

  // The policy as the task's collector calls it: one call per step for all copies.
  CollectPolicy collect_policy();

  // Plays n_episodes >= 1 episodes in the task's eval environment at `temperature` (0: the
  // greedy action) without storing them or changing any statistics, as the epochs' evaluation
  // does; max_steps defaults to eval_max_steps. Returns their mean return and length.
  CollectStats evaluate(int64_t n_episodes, double temperature, std::optional<int64_t> max_steps = std::nullopt);
  // The policy in evaluation mode (statistics untouched) for [N, ...] observations: for
  // programs that run a trained agent in their own loop (`ctrax eval --render`).
  PolicyOutput evaluation_act(const Tensor& observations, Key key, double temperature);

  // Saves a checkpoint now (a no-op without an output directory).
  void save();

 protected:
  // Actions and distribution inputs for the [N, ...] observations (one row per copy).
  virtual PolicyOutput act(const Tensor& observations, Key key, double temperature) = 0;
  // Trains on the task's trajectories; returns the metrics to log.
  virtual Metrics train_epoch() = 0;
  // The subclass's part of a checkpoint, and restoring it (all names and fields are the
  // subclass's; the agent's own fields start with "agent/").
  virtual void export_state(std::map<std::string, Tensor>& tensors, io::ManifestFields& fields) const = 0;
  virtual void import_state(const io::Checkpoint& checkpoint) = 0;
  // Restores the newest checkpoint of the output directory, if any; subclasses call it at the
  // end of their constructors (when everything import_state needs exists). Returns whether
  // one was restored.
  bool restore();
  // True while run() plays evaluation episodes (act() then leaves statistics alone).
  bool evaluating() const { return evaluating_; }
  // Task batch indices: policy batch i and value batch i draw different slices from the same
  // task (RLTask::trajectory_batch is a function of the index).
  static int64_t policy_batch_index(int64_t step) { return 2 * step; }
  static int64_t value_batch_index(int64_t step) { return 2 * step + 1; }

 private:
  void log(const Metrics& row);

  RLTask& task_;
  AgentOptions options_;
  int64_t epoch_ = 0;
  bool evaluating_ = false;
  std::vector<double> avg_returns_;
  std::map<double, std::vector<double>> eval_returns_;
  std::vector<std::shared_ptr<MetricsSink>> sinks_;
  std::shared_ptr<MetricsSink> csv_;  // made at the first row, when the columns are known
  std::unique_ptr<io::CheckpointDirectory> checkpoints_;
};

}  // namespace ctrax
