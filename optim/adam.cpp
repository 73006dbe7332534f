// Adam and AdamW (see adam.h); both run kernels/optimizer_steps.h's adam_step, which differs
// between them only in the weight's decay factor.
#include "adam.h"

#include <cmath>

#include "../kernels/cuda/optimizer_steps.h"
#include "../kernels/optimizer_steps.h"
#include "device_step.h"

namespace ctrax {

namespace {

// The bias corrections c1 = 1 - b1^(t+1) and 1 / sqrt(c2), c2 = 1 - b2^(t+1), of step t
// (0-based). An update asks for the same step once per weight, and the two pow calls cost
// more than a small weight's whole loop, so the last answer is kept per thread; the values are
// those computed afresh.
struct BiasCorrections {
  int64_t step = -1;
  double b1 = 0, b2 = 0, c1 = 0, inv_sqrt_c2 = 0;
};

const BiasCorrections& bias_corrections(int64_t step, double b1, double b2) {
  thread_local BiasCorrections last;
  if (last.step != step || last.b1 != b1 || last.b2 != b2) {
    const double t = static_cast<double>(step) + 1.0;
    last = {step, b1, b2, 1.0 - std::pow(b1, t), 1.0 / std::sqrt(1.0 - std::pow(b2, t))};
  }
  return last;
}

// The per-leaf scalars of step t, in double: the bias corrections folded into
// step_size = lr / c1 and inv_sqrt_c2.
kernels::AdamStep adam_scalars(int64_t step, double lr, double grad_scale, double b1, double b2, double eps,
                               double decay, bool sum_weights) {
  const BiasCorrections& c = bias_corrections(step, b1, b2);
  return kernels::AdamStep{lr / c.c1, grad_scale, b1, b2, c.inv_sqrt_c2, eps, decay, sum_weights};
}

double run_adam(const kernels::AdamStep& p, const Tensor& gradient, Tensor& weight, std::vector<Tensor>& slots) {
  const int64_t n = weight.numel();
  return optim_detail::run_step(weight, [&](auto tag, bool on_gpu) {
    using T = decltype(tag);
    const T* g = gradient.device_data<T>();
    T *w = weight.device_data<T>(), *m = slots[0].device_data<T>(), *v = slots[1].device_data<T>();
    return on_gpu ? kernels::cuda::adam_step(p, g, w, m, v, n) : kernels::adam_step(p, g, w, m, v, n);
  });
}

std::vector<Tensor> zero_moments(const Tensor& weight) {
  return {zeros(weight.shape(), weight.dtype(), weight.device()), zeros(weight.shape(), weight.dtype(), weight.device())};
}

}  // namespace

// ---- Adam ------------------------------------------------------------------------------------

Adam::Adam(AdamOptions options) : Optimizer(options.learning_rate, options.clip_grad_norm), options_(options) {
  require_hyperparameter(options.b1 >= 0 && options.b1 < 1, "b1", "in [0, 1)", options.b1);
  require_hyperparameter(options.b2 >= 0 && options.b2 < 1, "b2", "in [0, 1)", options.b2);
  require_hyperparameter(std::isfinite(options.eps) && options.eps > 0, "eps", "> 0 and finite", options.eps);
  require_hyperparameter(options.weight_decay_rate >= 0 && options.weight_decay_rate < 1, "weight_decay_rate",
                         "in [0, 1)", options.weight_decay_rate);
}

std::vector<Tensor> Adam::init_slots(const Tensor& weight) const { return zero_moments(weight); }
size_t Adam::num_slots(const Tensor&) const { return 2; }
Shape Adam::slot_shape(const Tensor& weight, size_t) const { return weight.shape(); }

double Adam::update_weight(int64_t step, double learning_rate, double grad_scale, const Tensor& gradient,
                           Tensor& weight, std::vector<Tensor>& slots, bool sum_weights) const {
  const AdamOptions& o = options_;
  return run_adam(
      adam_scalars(step, learning_rate, grad_scale, o.b1, o.b2, o.eps, 1.0 - o.weight_decay_rate, sum_weights),
      gradient, weight, slots);
}

// ---- AdamW -----------------------------------------------------------------------------------

AdamW::AdamW(AdamWOptions options) : Optimizer(options.learning_rate, options.clip_grad_norm), options_(options) {
  require_hyperparameter(options.b1 >= 0 && options.b1 < 1, "b1", "in [0, 1)", options.b1);
  require_hyperparameter(options.b2 >= 0 && options.b2 < 1, "b2", "in [0, 1)", options.b2);
  require_hyperparameter(std::isfinite(options.eps) && options.eps > 0, "eps", "> 0 and finite", options.eps);
  require_hyperparameter(std::isfinite(options.weight_decay) && options.weight_decay >= 0, "weight_decay",
                         ">= 0 and finite", options.weight_decay);
  if (options.learning_rate.is_constant()) check_learning_rate(options.learning_rate.constant());
}

void AdamW::check_learning_rate(double learning_rate) const {
  // The decay multiplies the weight by 1 - lr * weight_decay; at or past 1 it would zero or
  // flip the sign of every weight.
  const double product = learning_rate * options_.weight_decay;
  require_hyperparameter(product < 1, "learning_rate * weight_decay", "< 1", product);
}

std::vector<Tensor> AdamW::init_slots(const Tensor& weight) const { return zero_moments(weight); }
size_t AdamW::num_slots(const Tensor&) const { return 2; }
Shape AdamW::slot_shape(const Tensor& weight, size_t) const { return weight.shape(); }

double AdamW::update_weight(int64_t step, double learning_rate, double grad_scale, const Tensor& gradient,
                            Tensor& weight, std::vector<Tensor>& slots, bool sum_weights) const {
  const AdamWOptions& o = options_;
  return run_adam(adam_scalars(step, learning_rate, grad_scale, o.b1, o.b2, o.eps,
                               1.0 - learning_rate * o.weight_decay, sum_weights),
                  gradient, weight, slots);
}

}  // namespace ctrax
