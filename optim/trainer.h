// Trainer: supervised training of a model with a loss and an optimizer (Trax's
// supervised.Trainer, which every RL trainer builds on): steps, evaluation, metrics files and
// checkpoints that resume bit-exactly. Not data loading (the streams give batches).
// Design and the step in detail: docs/tour.md, "The supervised Trainer".
//
// Batches: (model inputs..., targets[, weights with has_weights]); the loss and metrics take
// (model outputs..., targets, weights) -> scalar. Missing weights are ones; id_to_mask = k zeroes
// the weight of targets equal to k. With n_loss_inputs = k >= 1 a batch is (model inputs...,
// k loss inputs), passed on as they are (has_weights and id_to_mask must be unset).
// Streams: called with the batch index (the training step; 0 .. n - 1 per evaluate(n)); a stream
// that is a function of the index makes runs reproducible and resumable. Train batch 0 is read at
// construction for the input signature unless input_signature is given.
// Output directory: metrics.csv, metrics.jsonl, checkpoints/ (tensors weights/, state/, slots/;
// fields step, rng_0, rng_1, optimizer). An existing checkpoint there is restored at construction
// (names, shapes and dtypes checked) and metric rows of later steps are dropped.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "../dist/communicator.h"
#include "../io/checkpoint.h"
#include "../layers/layer.h"
#include "../tensor/compile.h"
#include "../tensor/random.h"
#include "../tensor/tree.h"
#include "metrics_log.h"
#include "optimizer.h"
#include "schedules.h"

namespace ctrax {


using Batch = std::vector<Tensor>;
using BatchStream = std::function<Batch(int64_t index)>;

struct TrainerOptions {
  LayerPtr model;                         // required
  LayerPtr loss;                          // required: (outputs..., targets, weights) -> scalar
  // Default: Trax's Trainer default, Adam with the multifactor schedule
  // (AdamOptions{.learning_rate = multifactor_schedule()}). A given optimizer's learning rate
  // (a value or a schedule) is the rate used.
  std::shared_ptr<Optimizer> optimizer;
  BatchStream train_stream;               // required
  BatchStream eval_stream;                // default: the train stream
  std::map<std::string, LayerPtr> metrics;  // evaluated with the loss; the loss is always "loss"
  bool has_weights = false;
  std::optional<int64_t> id_to_mask;
  int n_loss_inputs = 0;                  // >= 0; see the top of this file (0: targets[, weights])
  std::filesystem::path output_dir;       // empty: nothing is written
  uint64_t seed = 0;
  int checkpoints_to_keep = 3;            // >= 1
  int64_t log_every_steps = 1;            // >= 1
  int64_t eval_steps_per_epoch = 0;       // >= 0; evaluation batches at the end of train_epoch
  bool restore = true;                    // restore the newest checkpoint in output_dir, if any
  std::optional<Signature> input_signature;  // default: read from train batch 0
  std::vector<std::shared_ptr<MetricsSink>> sinks;  // in addition to the output directory's files
  // Runs each training step's forward, backward, loss, optimizer update (and, on logged steps,
  // metrics) as a compiled plan (tensor/compile.h) after its first step with a batch signature,
  // drawing from the step's key: the same results bit for bit, without the per-op overhead.
  // Off: every step runs eagerly. (An optimizer that does not say runs_in_plans(), or weights
  // on a GPU, update eagerly after the plan.)
  bool compile = true;
  // Data-parallel training (dist/communicator.h): every rank trains a Trainer made with the
  // same options and seed on its own batches; each step's gradients are averaged over the
  // ranks (in rank order, the same bits on every rank) before the update, so the weights stay
  // identical. Null or one rank: a plain single-process Trainer. The update then runs after the
  // plan (eagerly), since the gradients leave the plan for the collective. Gradients on a GPU
  // go GPU to GPU through NCCL when every rank has a GPU of its own and the CUDA module has NCCL
  // (the same bits), else through host memory.
  std::shared_ptr<dist::Communicator> communicator;
};

class NcclAllreduce;

class Trainer {
 public:
  // Validates the options (throws ctrax::Error naming the option), initialises the model from
  // the input signature and the seed, the optimizer's slots, and restores a checkpoint.
  explicit Trainer(TrainerOptions options);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // One training step on the train stream's batch `step()`; returns its row of metrics.
  Metrics train_step(bool with_metrics = true);
  // One training step on the given batch (for trainers that make their own batches).
  // with_metrics = false skips the metric layers unless the row goes to a sink this step: a
  // caller that reads only the last of many steps' metrics (the RL agents) saves their cost
  // (for PPO on CartPole about a fifth of a step), and the optimizer's norms: the row then holds
  // loss and learning_rate only. A logged step's row also has gradients_l2 and weights_l2.
  Metrics train_step(const Batch& batch, bool with_metrics = true);
  // n_steps training steps, then evaluation and a checkpoint (see above). Returns the metrics
  // of the last training step.
  Metrics train_epoch(int64_t n_steps);
  // The loss and metrics averaged over n_steps eval batches (Mode::eval), written to the sinks
  // as phase "eval".
  Metrics evaluate(int64_t n_steps);

  // Saves a checkpoint of the current step now (a no-op without an output directory).
  void save_checkpoint();
  // Restores the newest checkpoint of the output directory; false when there is none.
  bool restore_checkpoint();

  // The trainer's whole state as checkpoint entries, for owners that save several trainers in
  // one checkpoint (the RL agents of rl/): tensors "<prefix>weights/<path>", "<prefix>state/...",
  // "<prefix>slots/..." and fields "<prefix>step", "<prefix>rng_0", "<prefix>rng_1",
  // "<prefix>optimizer". prefix is e.g. "policy/" (or empty).
  void export_state(std::map<std::string, Tensor>& tensors, io::ManifestFields& fields,
                    const std::string& prefix) const;
  // Sets weights, state, slots, rng and step from such entries, after checking every name, shape
  // and dtype (ctrax::Error naming the checkpoint and the entry; the trainer is unchanged then).
  // Metric rows of later steps are dropped from the sinks.
  void import_state(const io::Checkpoint& checkpoint, const std::string& prefix);

  int64_t step() const { return step_; }
  // The weights and the state are updated in place by later steps (the state once a step has
  // produced it: a BatchNorm's statistics), so a tree held across steps shows the current values;
  // clone() what must stay as it was.
  const Tree& weights() const { return weights_; }
  const Tree& state() const { return state_; }
  const Tree& slots() const { return slots_; }
  Key rng() const { return rng_; }
  const Layer& model() const { return *options_.model; }
  LayerPtr model_ptr() const { return options_.model; }
  const Optimizer& optimizer() const { return *options_.optimizer; }
  const TrainerOptions& options() const { return options_; }
  // The model's outputs in Mode::eval with the current weights and state, compiled like the
  // steps (TrainerOptions::compile): a plan per input signature, replayed with the weights and
  // state as they are at each call. The results are the caller's own tensors.
  Stack predict(const Stack& inputs) const;

  // Replaces the weights (e.g. copying shared layers between networks, as Trax's actor-critic
  // does); the new tree must match the model's structure, shapes and dtypes.
  void set_weights(Tree weights);
  // Multiplies every later step's scheduled rate by `factor` (finite, >= 0; default 1): the RL
  // agents anneal their networks' rates by the run's progress with it. Not saved in
  // checkpoints: its owner sets it again from its own saved state.
  void set_learning_rate_factor(double factor);
  double learning_rate_factor() const { return lr_factor_; }
  // Changes whenever the weights tree is replaced (set_weights, a restore); plans that read the
  // weights' storages key on it (rl/agents/collect_model.h).
  uint64_t weights_generation() const { return weights_generation_; }
  // How the compiled training step ran (recordings, replays, eager calls, plans).
  const CompileStats& compile_stats() const { return compiled_step_.stats(); }
  // Replaces the model's state (e.g. the observation statistics an RL agent's collect model
  // gathered, as Trax copies them into the policy trainer); same checks as set_weights.
  void set_state(Tree state);

 private:
  struct Split;  // a batch cut into inputs, targets and weights
  Split split_batch(const Batch& batch, const char* stream, int64_t index) const;
  Stack loss_inputs(const Stack& outputs, const Split& split, const Layer& loss_or_metric) const;
  // The metric layers' one-element results, in options_.metrics order, and their values.
  std::vector<Tensor> metric_tensors(const Stack& outputs, const Split& split, Mode mode) const;
  Metrics metrics_of(std::span<const Tensor> values) const;
  Metrics metrics_of(const Stack& outputs, const Split& split, Mode mode) const;
  void log(int64_t step, const char* phase, const Metrics& metrics);
  void validate_and_init();
  void init_heads(const Split& split);
  // The compiled part of a step, on (batch..., state leaves...[, step, learning rate]): the loss
  // and gradients, the metrics of a logged step and, with step_updates_, the optimizer's update.
  // Returns the loss, the gradients' leaves (unless step_updates_), the model outputs' leaves,
  // the new state's leaves, the metrics (on logged steps) and the optimizer's statistics (with
  // step_updates_), in that order.
  std::vector<Tensor> step_function(const std::vector<Tensor>& inputs, Key step_key);
  // predict's compiled part, on (inputs..., state leaves...): the model's outputs.
  std::vector<Tensor> predict_function(const std::vector<Tensor>& inputs) const;
  // Whether the optimizer's update runs inside step_function (Optimizer::runs_in_plans and CPU
  // weights); otherwise it runs after it, eagerly.
  bool update_in_step();
  // The gradients averaged over the ranks of options_.communicator (data-parallel training).
  Tree averaged_over_ranks(const Tree& gradients);
  // Gradients on GPUs of their own go through NCCL (optim/nccl_allreduce.h); decided at the first
  // exchange, by a collective.
  std::unique_ptr<NcclAllreduce> nccl_;
  bool nccl_decided_ = false;

  TrainerOptions options_;
  Tree weights_;
  Tree state_;
  // state_'s leaves once a step has made them (keep_owned_leaves): later steps copy into them in
  // place. Empty while state_ holds tensors someone else gave (the model's initial state,
  // set_state, a checkpoint).
  std::vector<Tensor> owned_state_;
  Tree slots_;
  Key rng_;
  int64_t step_ = 0;
  double lr_factor_ = 1.0;
  bool heads_ready_ = false;  // the loss and metrics have been initialised (init_heads)
  CompiledFunction compiled_step_;  // runs step_function
  mutable CompiledFunction compiled_predict_;  // runs predict_function
  mutable size_t n_predict_inputs_ = 0;        // read by predict_function
  uint64_t weights_generation_ = 0;  // changes when weights_ is replaced: plans read its storages
  size_t n_model_outputs_ = 0;       // leaves of the model's outputs, set by loss_and_gradients
  bool step_metrics_ = false;        // read by step_function: this step also computes the metrics
  bool step_updates_ = false;        // read by step_function: this step also updates the weights
  bool step_stats_ = false;          // read by step_function: the update reports its norms (a logged step)
  uint64_t update_checked_generation_ = ~uint64_t{0};  // update_in_step's cache
  bool update_in_step_ = false;
  Tensor step_input_;                // int64 scalar: the step, an input of step_function
  Tensor learning_rate_input_;       // float64 scalar: the step's learning rate
  Tree new_state_structure_;         // the structure of the new state, set by step_function
  std::vector<std::shared_ptr<MetricsSink>> sinks_;
  std::unique_ptr<io::CheckpointDirectory> checkpoints_;
};

}  // namespace ctrax
