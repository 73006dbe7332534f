// Agent: the RL training loop every trainer shares (Trax's rl/training.py Agent). run(n) runs
// epochs of: collect at temperature 1 into the task's replay epoch; train_epoch() (the subclass);
// evaluate the policy just trained at each eval temperature; confirm; log one row of metrics
// (phase "rl", step = epoch); save a checkpoint (every checkpoint_every epochs; always when solved
// or final, and as the best when a confirmation beats every earlier one). Subclasses say how to
// act and how to learn (rl/agents/policy_agent.h, actor_critic.h, actor_critic_joint.h). Not for
// choosing hyperparameters (configs/) or running several agents at once in one process.
//
// Stopping: a routine evaluation that reaches target_return only proposes a stop; a confirmation
// of n_confirm_episodes greedy episodes, on seeds that training and routine evaluations never use,
// decides it. The run's final epoch (max_epochs or total_env_steps) is confirmed too. The policy
// evaluated is the one the epoch's checkpoint holds.
// Output directory: metrics.jsonl, metrics.csv, checkpoints/ (the agent's fields under "agent/",
// the task's under "task/", the rest the subclass's) and checkpoints/best/. A new agent on a
// directory with a checkpoint restores one (restore_from) when its construction finishes, and
// with a task built alike continues bit for bit (for environments that support checkpoints:
// rl/learning/task.h); later epochs' metric rows and checkpoints are dropped.
// Epoch, metrics, devices, resuming, differences from Trax: docs/algorithms.md, "What every
// trainer shares: the epoch".
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

#include "../../dist/communicator.h"
#include "../../io/checkpoint.h"
#include "../../optim/metrics_log.h"
#include "../../tensor/device.h"
#include "../../tensor/tree.h"
#include "../learning/evaluation.h"
#include "../learning/task.h"

namespace ctrax {

class CollectModel;
class Trainer;

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
  // >= 0 per eval temperature, on seeds of the epoch's own (RLTask::evaluation_seed stream 3,
  // the same for every temperature): neither this nor eval_temperatures changes what training draws.
  int64_t n_eval_episodes = 0;
  std::vector<double> eval_temperatures = {0.0};
  std::optional<int64_t> eval_max_steps;       // >= 1; default the task's max_steps
  bool only_eval = false;                      // collect for evaluation only, train nothing
  std::filesystem::path output_dir;            // empty: nothing is written
  bool read_only = false;                      // restore from output_dir (restore_from's choice) but
                                               // write nothing there (evaluating a finished run)
  int checkpoints_to_keep = 2;                 // >= 1
  std::vector<std::shared_ptr<MetricsSink>> sinks;  // in addition to the output directory's files
  // The environments, replay buffer and advantages stay on the CPU; checkpoints hold CPU copies.
  // A GPU needs the CUDA backend, a usable GPU and optimizers with a CUDA update: the agent's
  // constructor throws ctrax::Error saying which is missing.
  Device device = Device::cpu();               // the networks' device (see the top of this file)
  // Stopping (see the top of this file). With a target, n_eval_episodes must be >= 1.
  std::optional<double> target_return;         // finite; none: no early stop
  int64_t n_confirm_episodes = 100;            // >= 1
  // >= 1: a confirmation plays its episodes in this many copies of the environment at once (at
  // most n_confirm_episodes; each rank its share), made for it; none: in the task's eval copies.
  // Wide is faster (one policy call of many rows per step, as RLtools plays its final 1000
  // episodes); the episodes, equally drawn, are then other ones than with the eval copies.
  std::optional<int64_t> n_confirm_envs;
  // What of the confirmation must reach the target: its mean, or the lower end of its 95%
  // interval (stricter: a policy that just makes the target on average is not taken).
  enum class ConfirmStatistic { mean, ci95_low } confirm_statistic = ConfirmStatistic::mean;
  std::optional<int64_t> max_epochs;           // >= 1: the run's length in epochs
  std::optional<int64_t> total_env_steps;      // >= 1: the run's budget of environment steps, the
                                               // initial random trajectories' included
  int64_t checkpoint_every = 1;                // >= 1 epochs between checkpoints
  // Write each checkpoint on a thread of its own while the next epoch runs (save_in_background);
  // the next row waits for it, so a failed save stops the run before another row is written.
  // finish_saving() (or the destructor) waits for the last.
  bool background_checkpoints = false;
  CheckpointChoice restore_from;               // which checkpoint of output_dir to restore
  // Every network's learning rate times 1 - progress(), set before each epoch's training (SB3's
  // linear annealing). Needs max_epochs or total_env_steps.
  bool anneal_learning_rate = false;
  // Training steps run compiled (TrainerOptions::compile): bit for bit the eager results, without
  // the per-op overhead. false: eager.
  bool compile = true;
  // Data-parallel training (docs/scaling.md): this rank's communicator; null or a group of one: a
  // single process. With N ranks every rank builds the same agent on its own task
  // (rank_task_options, rl/agents/data_parallel.h), and the options above describe the whole
  // job: each rank collects its share of the epoch's interactions (which must split evenly) or
  // trajectories, trains on its share of every batch (batch sizes must split evenly) with the
  // gradients averaged over the ranks, and plays its share of the evaluation and confirmation
  // episodes; the Normalize statistics, the metrics and the stopping decisions are combined, the
  // weights checked identical after every epoch. Rank 0 alone writes output_dir and the sinks,
  // its checkpoints holding every rank's task; every rank reads them to resume, which needs the
  // same number of ranks (a read_only agent of one process may read them: rank 0's task). run(), save(), evaluate() and confirm() are then collectives: every
  // rank calls them together.
  std::shared_ptr<dist::Communicator> communicator;
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
  // Data-parallel training (AgentOptions::communicator): this rank and the number of ranks (0
  // and 1 for a single process); the environment steps of every rank together.
  int rank() const { return options_.communicator ? options_.communicator->rank() : 0; }
  int n_ranks() const { return options_.communicator ? options_.communicator->size() : 1; }
  int64_t job_interactions() const;

  // The policy as the task's collector calls it: one call per step for all copies.
  CollectPolicy collect_policy();

  // Plays n_episodes >= 1 episodes in the task's eval environment at `temperature` (0: the
  // greedy action) without storing them or changing any statistics, as the epochs' evaluation
  // does; max_steps defaults to eval_max_steps. Returns their mean return and length.
  // With `seed`, the eval environment is reset with it and the task's counters are untouched
  // (CollectOptions::eval_seed); with a seed, n_envs >= 1 plays the episodes in that many copies
  // at once (CollectOptions::eval_envs; at most n_episodes are made).
  CollectStats evaluate(int64_t n_episodes, double temperature, std::optional<int64_t> max_steps = std::nullopt,
                        std::optional<uint64_t> seed = std::nullopt, std::optional<int64_t> n_envs = std::nullopt);
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
  // Restores the checkpoint restore_from chooses, if any, and finishes construction: call it at
  // the end of a subclass constructor, or build with build_agent<A>. run() and save() refuse an
  // agent on which it never ran (rather than silently start over). Returns whether one was
  // restored; a best or epoch checkpoint that does not exist throws ctrax::Error.
  bool restore();
  // True while run() plays evaluation episodes (act() then leaves statistics alone).
  bool evaluating() const { return evaluating_; }
  // Data-parallel training: the models whose statistics collection changes (combined over the
  // ranks after each collection), and the trainers whose weights every rank must keep equal.
  virtual std::vector<CollectModel*> collect_models() { return {}; }
  virtual std::vector<const Trainer*> trainers() const { return {}; }
  // This rank's share of a batch of `total` rows (total / n_ranks(); ctrax::Error naming `what`
  // when it does not split evenly).
  int64_t batch_share(int64_t total, const char* what) const;
  // The communicator of more than one rank, else null.
  dist::Communicator* ranks() const { return n_ranks() > 1 ? options_.communicator.get() : nullptr; }

 private:
  void log(const Metrics& row);
  void save_to(io::CheckpointDirectory& directory, bool in_background = false);
  void open_existing_csv();
  std::optional<io::Checkpoint> load_chosen();
  void evaluate_epoch(Metrics& row);
  bool final_epoch() const;
  bool restore_from_directory();
  // evaluate() of the job: each rank plays its share of the episodes (rank_share), and the
  // statistics are every rank's episodes' in rank order.
  CollectStats evaluate_job(int64_t n_episodes, double temperature, std::optional<uint64_t> seed,
                            std::optional<int64_t> n_envs = std::nullopt);
  // Data-parallel training: the collection's statistics over every rank (and the collect
  // models' statistics combined), the epoch's metrics averaged, the weights checked.
  CollectStats combine_collection(const CollectStats& local, const std::vector<Tree>& collect_bases);
  void check_weights_replicated();

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
  bool writes_ = false;                 // output_dir given, not read-only, rank 0
  int64_t job_interactions_ = 0;        // with several ranks: every rank's environment steps
  int64_t job_trajectories_ = 0;        // and trajectories

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
