// RMSProp (Trax's RMSProp, optimizers/rms_prop.py).
//
//   a' = gamma a + (1 - gamma) g^2,   w' = w - lr g / (sqrt(a') + eps)
// Slot: [a], starting at initial_mean_square: Trax starts it at 1 (the default here), PyTorch's
// torch.optim.RMSprop at 0 (set initial_mean_square = 0 to match it; gamma is its alpha).
//
// What it is not for: PyTorch's centered or momentum variants, or weight decay (none is built).
#pragma once

#include <optional>

#include "optimizer.h"

namespace ctrax {

struct RMSPropOptions {
  LearningRate learning_rate = 1e-3;
  double gamma = 0.9;                // in [0, 1)
  double eps = 1e-8;                 // > 0
  double initial_mean_square = 1.0;  // >= 0
  std::optional<double> clip_grad_norm;
};

class RMSProp final : public Optimizer {
 public:
  bool supports_cuda() const override { return true; }
  bool runs_in_plans() const override { return true; }
  explicit RMSProp(RMSPropOptions options = {});
  const char* name() const override { return "RMSProp"; }
  const RMSPropOptions& options() const { return options_; }

 protected:
  std::vector<Tensor> init_slots(const Tensor& weight) const override;
  size_t num_slots(const Tensor& weight) const override;
  Shape slot_shape(const Tensor& weight, size_t index) const override;
  double update_weight(int64_t step, double learning_rate, double grad_scale, const Tensor& gradient, Tensor& weight,
                       std::vector<Tensor>& slots, bool sum_weights) const override;

 private:
  RMSPropOptions options_;
};

}  // namespace ctrax
