// Adafactor (Shazeer and Stern, 2018) as Trax implements it (optimizers/adafactor.py).
//
// At 0-based step t, with decay d = 1 - (t + 1)^(-decay_rate) and G = g^2 + epsilon1:
//   factored (weights of rank >= 2): row and column second-moment estimates
//       r' = d r + (1 - d) mean_last_axis(G),   c' = d c + (1 - d) mean_second_last_axis(G)
//       y  = g * (r' / mean(r'))^(-1/2) (over rows) * c'^(-1/2) (over columns)
//   otherwise: v' = d v + (1 - d) G,  y = g v'^(-1/2)
//   clipping:  y /= max(1, rms(y) / clipping_threshold)
//   scale:     u = lr * (multiply_by_parameter_scale ? max(rms(w), epsilon2) : 1) * y
//   momentum:  m' = beta1 m + (1 - beta1) u; u = m'   (only with do_momentum)
//   w' = (1 - weight_decay_rate) w - u
// Slots: factored [r, c] (shapes w.shape[:-1] and w.shape[:-2] + w.shape[-1:]) or [v], then
// [m] with momentum. It needs rms(w), the row and column means and rms(y) before it can write
// the weight, so an update makes three passes over a weight instead of the others' one.
//
// What it is not for: GPU weights (its factored moments have no CUDA kernel; update refuses
// them with ctrax::Error).
#pragma once

#include <optional>

#include "optimizer.h"

namespace ctrax {

struct AdafactorOptions {
  LearningRate learning_rate = 0.05;
  bool factored = true;
  bool multiply_by_parameter_scale = true;
  bool do_clipping = true;
  bool do_momentum = false;
  double beta1 = 0.0;                // in [0, 1)
  double decay_rate = 0.8;           // > 0
  double clipping_threshold = 1.0;   // > 0
  double weight_decay_rate = 1e-5;   // in [0, 1)
  double epsilon1 = 1e-16;           // > 0
  double epsilon2 = 1e-3;            // >= 0
  std::optional<double> clip_grad_norm;
};

class Adafactor final : public Optimizer {
 public:
  explicit Adafactor(AdafactorOptions options = {});
  const char* name() const override { return "Adafactor"; }
  const AdafactorOptions& options() const { return options_; }
  bool runs_in_plans() const override { return true; }

 protected:
  std::vector<Tensor> init_slots(const Tensor& weight) const override;
  size_t num_slots(const Tensor& weight) const override;
  Shape slot_shape(const Tensor& weight, size_t index) const override;
  double update_weight(int64_t step, double learning_rate, double grad_scale, const Tensor& gradient, Tensor& weight,
                       std::vector<Tensor>& slots, bool sum_weights) const override;

 private:
  // Factored second moments: options().factored and a weight of rank >= 2.
  bool is_factored(const Tensor& weight) const;

  AdafactorOptions options_;
};

}  // namespace ctrax
