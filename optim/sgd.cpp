// SGD: w' = w - lr g (see sgd.h); the loop is kernels/optimizer_steps.h's sgd_step.
#include "sgd.h"

#include "../kernels/cuda/optimizer_steps.h"
#include "../kernels/optimizer_steps.h"
#include "device_step.h"

namespace ctrax {

SGD::SGD(SGDOptions options) : Optimizer(options.learning_rate, options.clip_grad_norm) {}

std::vector<Tensor> SGD::init_slots(const Tensor&) const { return {}; }

size_t SGD::num_slots(const Tensor&) const { return 0; }

Shape SGD::slot_shape(const Tensor&, size_t index) const {
  CTRAX_CHECK(false, "SGD has no slots, asked for slot ", index);
  return {};
}

double SGD::update_weight(int64_t, double learning_rate, double grad_scale, const Tensor& gradient, Tensor& weight,
                          std::vector<Tensor>&, bool sum_weights) const {
  const kernels::SgdStep p{learning_rate, grad_scale, sum_weights};
  return optim_detail::run_step(weight, [&](auto tag, bool on_gpu) {
    using T = decltype(tag);
    const T* g = gradient.device_data<T>();
    T* w = weight.device_data<T>();
    return on_gpu ? kernels::cuda::sgd_step(p, g, w, weight.numel())
                  : kernels::sgd_step(p, g, w, weight.numel());
  });
}

}  // namespace ctrax
