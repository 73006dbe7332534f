// Optimizer: updates a tree of weights from a tree of gradients, with per-weight slots. Weights,
// gradients and slots are Trees (tensor/tree.h) of one structure; each optimizer defines one
// weight's slots and update, and this base class walks the trees, applies global-norm gradient
// clipping and reports norms. The learning rate is part of the options (a value or a schedule,
// optim/schedules.h); update() takes the step's rate, which the trainers read from
// learning_rate_at(step). Adam's maths and its loop: docs/tour.md, "An optimizer step".
//
// Slots: init(weights) replaces each weight leaf by the list of its slots (Adam: [m, v]; SGD: []),
// so a slot's path is "<weight path>/<slot index>" (the names checkpoints store it under).
// Cost: one fused pass over each weight's memory (kernels/optimizer_steps.h) plus one read-only
// pass over the gradients for their norm; no allocation in a steady state (Adafactor: three
// passes). Weights are updated in place (every handle sees the new values) and must be contiguous
// float32 or float64; gradients must have their weights' shapes and dtypes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "../tensor/tensor.h"
#include "../tensor/tree.h"
#include "schedules.h"

namespace ctrax {

// Reported by every update, before the weights change (Trax's tree_update stats). An update
// asked for no statistics (with_stats = false) leaves the norms it did not compute NaN.
struct OptimizerStats {
  double gradients_l2 = 0;  // global L2 norm of the gradients, before clipping
  double weights_l2 = 0;    // global L2 norm of the weights before the update
  bool clipped = false;     // whether global-norm clipping scaled the gradients
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;

  // "Adam", "SGD", ...
  virtual const char* name() const = 0;
  // The learning rate the optimizer was configured with (its options' default unless set): a
  // value or a schedule. The trainers take each step's rate from it.
  const LearningRate& learning_rate() const { return learning_rate_; }
  // The rate of step `step` (learning_rate().at(step)).
  double learning_rate_at(int64_t step) const { return learning_rate_.at(step); }
  // Global-norm clipping threshold (Trax's clip_grad_norm); nullopt when off.
  std::optional<double> clip_grad_norm() const { return clip_grad_norm_; }

  // Slots for these weights, all zero (or the optimizer's documented initial value).
  Tree init(const Tree& weights) const;

  // One step: updates `weights` and `slots` in place. `step` counts from 0 (Adam's bias
  // correction uses step + 1). When clipping is on and the gradients' global norm g exceeds
  // the threshold c, every gradient is scaled by c / g. Throws ctrax::Error naming the path of
  // the first weight whose gradient or slots do not match (structure, shape or dtype), or
  // whose weight is not a contiguous float tensor, before anything is modified. A gradient
  // may be a non-contiguous view: it is then copied to contiguous memory (once for the norm,
  // once for the update), the one case in which an update allocates. A NaN norm never clips
  // (the NaN reaches the weights either way, as in Trax). with_stats = false is for a caller
  // that does not read the norms: the gradients' norm is then computed only when clipping needs
  // it, and the weights' not at all (a pass over the gradients and a conversion per weight
  // saved; the update is the same bits).
  OptimizerStats update(int64_t step, double learning_rate, const Tree& gradients, Tree& weights, Tree& slots,
                        bool with_stats = true) const;

  // The same update as one kernel that reads the step (an int64 tensor of one element) and the
  // learning rate (float64, one element) when it runs, so that a compiled plan (tensor/compile.h)
  // replays it with each call's values: the Trainer runs its optimizer inside the compiled step
  // this way. Returns a float64 tensor [gradients_l2, weights_l2, clipped (0 or 1)] (with_stats
  // as in update(): NaN for the norms not computed). The trees
  // are checked now, as by update(); the step and the rate are checked when the kernel runs (a
  // replay throws the same errors). Same bits as update(). The kernel keeps the trees' tensors
  // and calls this optimizer, which must outlive the plans that hold it. Requires
  // runs_in_plans() and CPU weights.
  Tensor update_from_tensors(const Tensor& step, const Tensor& learning_rate, const Tree& gradients, Tree& weights,
                             Tree& slots, bool with_stats = true) const;
  // True when update_weight only runs loops over the memory of the tensors it is given (no
  // tensor ops, no allocation), so that update_from_tensors may replay it as a kernel. The
  // optimizers here do; a subclass says so by overriding this (the Trainer otherwise runs its
  // update eagerly after the compiled step).
  virtual bool runs_in_plans() const { return false; }

  // True when the optimizer also updates weights on a CUDA device (kernels/cuda/
  // optimizer_steps.h); update() refuses GPU weights otherwise, so an optimizer written for the
  // CPU never reads device memory from the host. A trainer asks before moving its weights.
  virtual bool supports_cuda() const { return false; }

 protected:
  // clip_grad_norm, when set, must be > 0 and finite. (The error says "Optimizer: ...": name()
  // is not the subclass's yet while the base is built.)
  Optimizer(LearningRate learning_rate, std::optional<double> clip_grad_norm);

  // The slots of one weight tensor.
  virtual std::vector<Tensor> init_slots(const Tensor& weight) const = 0;
  // The number of slots of `weight` and the shape of slot `index` (slots have their weight's
  // dtype): update() checks the slots against these before it modifies anything. The defaults
  // ask init_slots, which allocates; the optimizers here override them with arithmetic on the
  // weight's shape so that an update allocates nothing.
  virtual size_t num_slots(const Tensor& weight) const;
  virtual Shape slot_shape(const Tensor& weight, size_t index) const;
  // Checks what depends on the learning rate given to update() (AdamW: lr * weight_decay < 1),
  // before anything is modified; update() has already checked that it is >= 0 and finite.
  virtual void check_learning_rate(double /*learning_rate*/) const {}
  // Updates one weight and its slots. The gradient is to be multiplied by grad_scale (1, or
  // the clipping factor) inside the loop. Returns the sum of squares of the weight's values
  // before the update (computed in the same pass, for OptimizerStats::weights_l2); with
  // sum_weights false nobody reads it, and an optimizer may skip it and return 0. update()
  // has checked everything first: the weight is a contiguous float32 or float64 tensor (on the
  // CPU, or on a GPU when supports_cuda()), the gradient is contiguous with its shape and dtype,
  // and the slots match num_slots/slot_shape and are contiguous.
  virtual double update_weight(int64_t step, double learning_rate, double grad_scale, const Tensor& gradient,
                               Tensor& weight, std::vector<Tensor>& slots, bool sum_weights) const = 0;

  // Throws ctrax::Error "<name>: <what> must be <rule>, got <value>" (hyperparameter checks
  // for the subclasses' constructors).
  void require_hyperparameter(bool ok, const char* what, const char* rule, double value) const;

 private:
  LearningRate learning_rate_;
  std::optional<double> clip_grad_norm_;

  void check_step_and_rate(int64_t step, double learning_rate) const;
  // Throws unless gradients and slots match the weights (update()'s contract).
  void check_trees(const Tree& gradients, const Tree& weights, const Tree& slots) const;
  // The checked update: the global norm, the clipping factor, one pass per weight. The slots of
  // the k-th weight (in leaf order) are slot_lists[k], or gathered from `slots` when null.
  OptimizerStats apply(int64_t step, double learning_rate, const Tree& gradients, Tree& weights, const Tree& slots,
                       std::vector<std::vector<Tensor>>* slot_lists, bool with_stats) const;
};

}  // namespace ctrax
