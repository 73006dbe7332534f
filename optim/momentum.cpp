// Momentum (see momentum.h); the loop is kernels/optimizer_steps.h's momentum_step.
#include "momentum.h"

#include "../kernels/cuda/optimizer_steps.h"
#include "../kernels/optimizer_steps.h"
#include "device_step.h"

namespace ctrax {

Momentum::Momentum(MomentumOptions options)
    : Optimizer(options.learning_rate, options.clip_grad_norm), options_(options) {
  require_hyperparameter(options.mass >= 0 && options.mass < 1, "mass", "in [0, 1)", options.mass);
  require_hyperparameter(options.weight_decay_rate >= 0 && options.weight_decay_rate < 1, "weight_decay_rate",
                         "in [0, 1)", options.weight_decay_rate);
}

std::vector<Tensor> Momentum::init_slots(const Tensor& weight) const {
  return {zeros(weight.shape(), weight.dtype(), weight.device())};
}

size_t Momentum::num_slots(const Tensor&) const { return 1; }

Shape Momentum::slot_shape(const Tensor& weight, size_t) const { return weight.shape(); }

double Momentum::update_weight(int64_t, double learning_rate, double grad_scale, const Tensor& gradient,
                               Tensor& weight, std::vector<Tensor>& slots, bool sum_weights) const {
  const kernels::MomentumStep p{learning_rate, grad_scale, options_.mass, 1.0 - options_.weight_decay_rate,
                                options_.nesterov, sum_weights};
  const int64_t n = weight.numel();
  return optim_detail::run_step(weight, [&](auto tag, bool on_gpu) {
    using T = decltype(tag);
    const T* g = gradient.device_data<T>();
    T *w = weight.device_data<T>(), *velocity = slots[0].device_data<T>();
    return on_gpu ? kernels::cuda::momentum_step(p, g, w, velocity, n)
                  : kernels::momentum_step(p, g, w, velocity, n);
  });
}

}  // namespace ctrax
