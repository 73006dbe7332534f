// SGD with momentum, Nesterov by default (Trax's Momentum, optimizers/momentum.py).
//
//   v' = mass * v + g
//   w' = (1 - weight_decay_rate) * w - lr * (nesterov ? mass * v' + g : v')
// The weight decay is decoupled (it does not go through the velocity) and, as in Trax, is not
// scaled by the learning rate. With weight_decay_rate = 0 this is PyTorch's SGD with momentum
// (dampening 0), Nesterov or not. Slot: [velocity], starting at zero.
//
// What it is not for: PyTorch's dampening or its coupled weight decay (added to the gradient);
// neither is built.
#pragma once

#include <optional>

#include "optimizer.h"

namespace ctrax {

struct MomentumOptions {
  LearningRate learning_rate = 0.01;
  double mass = 0.9;                  // in [0, 1)
  double weight_decay_rate = 1e-5;    // in [0, 1)
  bool nesterov = true;
  std::optional<double> clip_grad_norm;
};

class Momentum final : public Optimizer {
 public:
  bool supports_cuda() const override { return true; }
  bool runs_in_plans() const override { return true; }
  explicit Momentum(MomentumOptions options = {});
  const char* name() const override { return "Momentum"; }
  const MomentumOptions& options() const { return options_; }

 protected:
  std::vector<Tensor> init_slots(const Tensor& weight) const override;
  size_t num_slots(const Tensor& weight) const override;
  Shape slot_shape(const Tensor& weight, size_t index) const override;
  double update_weight(int64_t step, double learning_rate, double grad_scale, const Tensor& gradient, Tensor& weight,
                       std::vector<Tensor>& slots, bool sum_weights) const override;

 private:
  MomentumOptions options_;
};

}  // namespace ctrax
