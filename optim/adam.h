// Adam (Trax's defaults and decoupled decay) and AdamW (PyTorch's).
//
// Both keep slots [m, v] starting at zero and, at 0-based step t,
//   m' = b1 m + (1 - b1) g,   v' = b2 v + (1 - b2) g^2,
//   m^ = m' / (1 - b1^(t+1)), v^ = v' / (1 - b2^(t+1)).
// Adam (Trax, optimizers/adam.py):   w' = (1 - weight_decay_rate) w - lr m^ / (sqrt(v^) + eps)
//   Trax's defaults: lr 1e-4, b1 0.9, b2 0.999, eps 1e-5, weight_decay_rate 1e-5. The decay is
//   not scaled by the learning rate. With weight_decay_rate = 0 it is PyTorch's Adam.
// AdamW (Loshchilov and Hutter; PyTorch's torch.optim.AdamW):
//   w' = (1 - lr weight_decay) w - lr m^ / (sqrt(v^) + eps)
//   PyTorch's defaults: lr 1e-3, b1 0.9, b2 0.999, eps 1e-8, weight_decay 0.01.
//
// What it is not for: AMSGrad, or L2 regularisation through the gradient (both decays here
// act on the weight directly).
#pragma once

#include <optional>

#include "optimizer.h"

namespace ctrax {

struct AdamOptions {
  LearningRate learning_rate = 1e-4;
  double b1 = 0.9;                  // in [0, 1)
  double b2 = 0.999;                // in [0, 1)
  double eps = 1e-5;                // > 0
  double weight_decay_rate = 1e-5;  // in [0, 1)
  std::optional<double> clip_grad_norm;
};

class Adam final : public Optimizer {
 public:
  bool supports_cuda() const override { return true; }
  bool runs_in_plans() const override { return true; }
  explicit Adam(AdamOptions options = {});
  const char* name() const override { return "Adam"; }
  const AdamOptions& options() const { return options_; }

 protected:
  std::vector<Tensor> init_slots(const Tensor& weight) const override;
  size_t num_slots(const Tensor& weight) const override;
  Shape slot_shape(const Tensor& weight, size_t index) const override;
  double update_weight(int64_t step, double learning_rate, double grad_scale, const Tensor& gradient, Tensor& weight,
                       std::vector<Tensor>& slots, bool sum_weights) const override;

 private:
  AdamOptions options_;
};

struct AdamWOptions {
  LearningRate learning_rate = 1e-3;
  double b1 = 0.9;
  double b2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.01;  // >= 0; lr * weight_decay must stay below 1
  std::optional<double> clip_grad_norm;
};

class AdamW final : public Optimizer {
 public:
  bool supports_cuda() const override { return true; }
  bool runs_in_plans() const override { return true; }
  explicit AdamW(AdamWOptions options = {});
  const char* name() const override { return "AdamW"; }
  const AdamWOptions& options() const { return options_; }

 protected:
  std::vector<Tensor> init_slots(const Tensor& weight) const override;
  void check_learning_rate(double learning_rate) const override;
  size_t num_slots(const Tensor& weight) const override;
  Shape slot_shape(const Tensor& weight, size_t index) const override;
  double update_weight(int64_t step, double learning_rate, double grad_scale, const Tensor& gradient, Tensor& weight,
                       std::vector<Tensor>& slots, bool sum_weights) const override;

 private:
  AdamWOptions options_;
};

}  // namespace ctrax
