// Plain stochastic gradient descent: w -= lr * g (Trax's SGD, optimizers/base.py).
//
// What it is for: the simplest baseline and a reference for the other optimizers. No slots.
// What it is not for: momentum (momentum.h) or weight decay (Momentum, Adam: weight_decay_rate).
#pragma once

#include <optional>

#include "optimizer.h"

namespace ctrax {

struct SGDOptions {
  LearningRate learning_rate = 0.01;
  std::optional<double> clip_grad_norm;
};

class SGD final : public Optimizer {
 public:
  bool supports_cuda() const override { return true; }
  bool runs_in_plans() const override { return true; }
  explicit SGD(SGDOptions options = {});
  const char* name() const override { return "SGD"; }

 protected:
  std::vector<Tensor> init_slots(const Tensor& weight) const override;
  size_t num_slots(const Tensor& weight) const override;
  Shape slot_shape(const Tensor& weight, size_t index) const override;
  double update_weight(int64_t step, double learning_rate, double grad_scale, const Tensor& gradient, Tensor& weight,
                       std::vector<Tensor>& slots, bool sum_weights) const override;
};

}  // namespace ctrax
