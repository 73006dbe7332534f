// SGD: w' = w - lr g (see sgd.h); the loop is kernels/optimizer_steps.h's sgd_step.
#include "sgd.h"

#include "../kernels/optimizer_steps.h"

namespace ctrax {

SGD::SGD(SGDOptions options) : Optimizer(options.learning_rate, options.clip_grad_norm) {}

std::vector<Tensor> SGD::init_slots(const Tensor&) const { return {}; }

size_t SGD::num_slots(const Tensor&) const { return 0; }

Shape SGD::slot_shape(const Tensor&, size_t index) const {
  CTRAX_CHECK(false, "SGD has no slots, asked for slot ", index);
  return {};
}

double SGD::update_weight(int64_t, double learning_rate, double grad_scale, const Tensor& gradient, Tensor& weight,
                          std::vector<Tensor>&) const {
  const kernels::SgdStep p{learning_rate, grad_scale};
  if (weight.dtype() == DType::float32)
    return kernels::sgd_step(p, gradient.data<float>(), weight.data<float>(), weight.numel());
  return kernels::sgd_step(p, gradient.data<double>(), weight.data<double>(), weight.numel());
}

}  // namespace ctrax
