// RMSProp (see rmsprop.h); the loop is kernels/optimizer_steps.h's rmsprop_step.
#include "rmsprop.h"

#include <cmath>

#include "../kernels/cuda/optimizer_steps.h"
#include "../kernels/optimizer_steps.h"
#include "device_step.h"

namespace ctrax {

RMSProp::RMSProp(RMSPropOptions options)
    : Optimizer(options.learning_rate, options.clip_grad_norm), options_(options) {
  require_hyperparameter(options.gamma >= 0 && options.gamma < 1, "gamma", "in [0, 1)", options.gamma);
  require_hyperparameter(std::isfinite(options.eps) && options.eps > 0, "eps", "> 0 and finite", options.eps);
  require_hyperparameter(std::isfinite(options.initial_mean_square) && options.initial_mean_square >= 0,
                         "initial_mean_square", ">= 0 and finite", options.initial_mean_square);
}

std::vector<Tensor> RMSProp::init_slots(const Tensor& weight) const {
  return {full(weight.shape(), options_.initial_mean_square, weight.dtype(), weight.device())};
}

size_t RMSProp::num_slots(const Tensor&) const { return 1; }

Shape RMSProp::slot_shape(const Tensor& weight, size_t) const { return weight.shape(); }

double RMSProp::update_weight(int64_t, double learning_rate, double grad_scale, const Tensor& gradient,
                              Tensor& weight, std::vector<Tensor>& slots, bool sum_weights) const {
  const kernels::RmsPropStep p{learning_rate, grad_scale, options_.gamma, options_.eps, sum_weights};
  const int64_t n = weight.numel();
  return optim_detail::run_step(weight, [&](auto tag, bool on_gpu) {
    using T = decltype(tag);
    const T* g = gradient.device_data<T>();
    T *w = weight.device_data<T>(), *mean_square = slots[0].device_data<T>();
    return on_gpu ? kernels::cuda::rmsprop_step(p, g, w, mean_square, n)
                  : kernels::rmsprop_step(p, g, w, mean_square, n);
  });
}

}  // namespace ctrax
