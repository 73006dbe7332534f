// Trainer: supervised training of a model with a loss and an optimizer (Trax's
// supervised.Trainer, which every RL trainer builds on).
//
// What it is for: the loop "take a batch, compute loss and gradients, update the weights",
// with evaluation, metrics files and checkpoints that resume bit-exactly. The RL trainers (rl/)
// construct one per network, with their own loss layers and batch streams, exactly as Trax's
// do. What it is not for: data loading (the streams give batches) or choosing models.
//
// Batches: a batch is a list of tensors laid out as
//     (model inputs..., targets)            or, with has_weights,
//     (model inputs..., targets, weights)
// where the model takes model->n_in() inputs. Without has_weights every example weighs 1
// (a float32 tensor of ones shaped like the targets). With id_to_mask = k, the weight of every
// target equal to k is set to 0 (Trax uses it to ignore padding actions). The loss layer and
// every metric take (model outputs..., targets, weights) and give a scalar, e.g.
// CrossEntropyLoss, L2Loss or Accuracy (layers/metrics.h).
//
// Losses that need more than targets and weights (the RL losses of rl/losses.h take actions,
// advantages, old distribution inputs and a mask) set n_loss_inputs = k >= 1: a batch is then
//     (model inputs..., k loss inputs)
// and the loss and every metric take (model outputs..., k loss inputs) as they are (nothing is
// added; has_weights and id_to_mask must be unset).
//
// Streams: a BatchStream is called with the index of the batch it must give: 0, 1, 2, ... for
// training (the index is the training step) and 0 .. n - 1 for each evaluate(n). A stream that
// is a function of the index (e.g. draws with Key(seed) folded with the index) makes training
// reproducible and resumable bit-exactly; a stream that ignores the index works too, without
// that guarantee. At construction the train stream's batch 0 is read once to learn the input
// signature, unless TrainerOptions::input_signature is given.
//
// Each training step s (counting from 0): the learning rate is the optimizer's rate at step s
// (Optimizer::learning_rate_at: its value, or its schedule's); the rng key is
// split into this step's key and the next state; the model runs in Mode::train; the optimizer
// updates the weights in place; the row (loss, metrics, learning_rate, gradients_l2,
// weights_l2) goes to the sinks every log_every_steps steps. train_epoch(n) runs n steps, then
// an evaluation of eval_steps_per_epoch batches when that is > 0, then saves a checkpoint when
// there is an output directory.
//
// Output directory (when set):
//   metrics.csv, metrics.jsonl     every row written (optim/metrics_log.h)
//   checkpoints/                   io/checkpoint.h: tensors "weights/<path>", "state/<path>",
//                                  "slots/<path>"; fields step, rng_0, rng_1, optimizer
// A Trainer whose output directory already holds a checkpoint restores the newest one at
// construction (as Trax's does), after checking that every tensor's name, shape and dtype
// matches the model and optimizer, and drops the metric rows of later steps.
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
};

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
  // (for PPO on CartPole about a fifth of a step). The row then holds loss, learning_rate,
  // gradients_l2 and weights_l2 only.
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
  const Tree& weights() const { return weights_; }
  const Tree& state() const { return state_; }
  const Tree& slots() const { return slots_; }
  Key rng() const { return rng_; }
  const Layer& model() const { return *options_.model; }
  LayerPtr model_ptr() const { return options_.model; }
  const Optimizer& optimizer() const { return *options_.optimizer; }
  const TrainerOptions& options() const { return options_; }
  // The model's outputs in Mode::eval with the current weights and state.
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
  // weights' storages key on it (rl/collect_model.h).
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
  // Whether the optimizer's update runs inside step_function (Optimizer::runs_in_plans and CPU
  // weights); otherwise it runs after it, eagerly.
  bool update_in_step();

  TrainerOptions options_;
  Tree weights_;
  Tree state_;
  Tree slots_;
  Key rng_;
  int64_t step_ = 0;
  double lr_factor_ = 1.0;
  bool heads_ready_ = false;  // the loss and metrics have been initialised (init_heads)
  CompiledFunction compiled_step_;  // runs step_function
  uint64_t weights_generation_ = 0;  // changes when weights_ is replaced: plans read its storages
  size_t n_model_outputs_ = 0;       // leaves of the model's outputs, set by loss_and_gradients
  bool step_metrics_ = false;        // read by step_function: this step also computes the metrics
  bool step_updates_ = false;        // read by step_function: this step also updates the weights
  uint64_t update_checked_generation_ = ~uint64_t{0};  // update_in_step's cache
  bool update_in_step_ = false;
  Tensor step_input_;                // int64 scalar: the step, an input of step_function
  Tensor learning_rate_input_;       // float64 scalar: the step's learning rate
  Tree new_state_structure_;         // the structure of the new state, set by step_function
  std::vector<std::shared_ptr<MetricsSink>> sinks_;
  std::unique_ptr<io::CheckpointDirectory> checkpoints_;
};

}  // namespace ctrax
