// Adafactor (see adafactor.h), following Trax's optimizers/adafactor.py. The passes over the
// memory are kernels/optimizer_steps.h's adafactor_* loops; this file computes the scalars
// between them (the decay, rms(w), rms(y), the update scale) in double.
#include "adafactor.h"

#include <algorithm>
#include <cmath>

#include "../kernels/optimizer_steps.h"

namespace ctrax {

namespace {

// Slot shapes of a factored weight [..., rows, cols]: rows [..., rows] and columns [..., cols].
Shape row_slot_shape(const Shape& w) { return Shape(w.begin(), w.rank() - 1); }
Shape column_slot_shape(const Shape& w) {
  Shape s(w.begin(), w.rank() - 1);
  s[s.rank() - 1] = w.back();
  return s;
}

template <typename T>
double adafactor_update(const AdafactorOptions& o, bool factored, int64_t step, double lr, double grad_scale,
                        const Tensor& gradient, Tensor& weight, std::vector<Tensor>& slots) {
  const int64_t n = weight.numel();
  // Nothing to update, and rms(w), rms(y) and the row means would be 0 / 0.
  if (n == 0) return 0.0;
  const T* g = gradient.data<T>();
  T* w = weight.data<T>();
  // Trax's decay_rate_pow: d = 1 - (t + 1)^(-decay_rate); d = 0 at the first step, so the first
  // second-moment estimates are the squared gradients themselves.
  const double d = 1.0 - std::pow(static_cast<double>(step) + 1.0, -o.decay_rate);
  const kernels::AdafactorMoments moments{grad_scale, d, o.epsilon1};

  double sum_w2 = 0, sum_y2 = 0;
  int64_t batch = 0, rows = 0, cols = 0;
  if (factored) {
    rows = weight.size(-2);
    cols = weight.size(-1);
    batch = n / (rows * cols);
    sum_w2 = kernels::adafactor_factored_moments(moments, g, w, slots[0].data<T>(), slots[1].data<T>(), batch, rows,
                                                 cols);
    if (o.do_clipping)
      sum_y2 = kernels::adafactor_factored_sum_y2(grad_scale, g, slots[0].data<T>(), slots[1].data<T>(), batch, rows,
                                                  cols);
  } else {
    const kernels::SquareSums sums = kernels::adafactor_moments(moments, g, w, slots[0].data<T>(), n);
    sum_w2 = sums.weights;
    sum_y2 = sums.y;
  }

  const double count = static_cast<double>(n);
  // y /= max(1, rms(y) / clipping_threshold)
  const double clipping_denominator = o.do_clipping ? std::max(1.0, std::sqrt(sum_y2 / count) / o.clipping_threshold)
                                                    : 1.0;
  // update_scale = lr * max(rms(w), epsilon2) with parameter scaling, else lr.
  const double update_scale = o.multiply_by_parameter_scale ? lr * std::max(std::sqrt(sum_w2 / count), o.epsilon2) : lr;
  const kernels::AdafactorApply apply{grad_scale, update_scale / clipping_denominator, 1.0 - o.weight_decay_rate,
                                      o.beta1};
  const size_t first_momentum = factored ? 2 : 1;
  T* m = o.do_momentum ? slots[first_momentum].data<T>() : nullptr;
  if (factored)
    kernels::adafactor_factored_apply(apply, g, w, slots[0].data<T>(), slots[1].data<T>(), m, batch, rows, cols);
  else
    kernels::adafactor_apply(apply, g, w, slots[0].data<T>(), m, n);
  return sum_w2;
}

}  // namespace

Adafactor::Adafactor(AdafactorOptions options)
    : Optimizer(options.learning_rate, options.clip_grad_norm), options_(options) {
  const AdafactorOptions& o = options;
  require_hyperparameter(o.beta1 >= 0 && o.beta1 < 1, "beta1", "in [0, 1)", o.beta1);
  require_hyperparameter(std::isfinite(o.decay_rate) && o.decay_rate > 0, "decay_rate", "> 0 and finite",
                         o.decay_rate);
  require_hyperparameter(std::isfinite(o.clipping_threshold) && o.clipping_threshold > 0, "clipping_threshold",
                         "> 0 and finite", o.clipping_threshold);
  require_hyperparameter(o.weight_decay_rate >= 0 && o.weight_decay_rate < 1, "weight_decay_rate", "in [0, 1)",
                         o.weight_decay_rate);
  require_hyperparameter(std::isfinite(o.epsilon1) && o.epsilon1 > 0, "epsilon1", "> 0 and finite", o.epsilon1);
  require_hyperparameter(std::isfinite(o.epsilon2) && o.epsilon2 >= 0, "epsilon2", ">= 0 and finite", o.epsilon2);
}

bool Adafactor::is_factored(const Tensor& weight) const { return options_.factored && weight.rank() >= 2; }

std::vector<Tensor> Adafactor::init_slots(const Tensor& weight) const {
  std::vector<Tensor> slots;
  for (size_t k = 0; k < num_slots(weight); ++k)
    slots.push_back(zeros(slot_shape(weight, k), weight.dtype(), weight.device()));
  return slots;
}

size_t Adafactor::num_slots(const Tensor& weight) const {
  return (is_factored(weight) ? 2 : 1) + (options_.do_momentum ? 1 : 0);
}

Shape Adafactor::slot_shape(const Tensor& weight, size_t index) const {
  if (is_factored(weight)) {
    if (index == 0) return row_slot_shape(weight.shape());
    if (index == 1) return column_slot_shape(weight.shape());
  }
  return weight.shape();  // v, or the momentum
}

double Adafactor::update_weight(int64_t step, double learning_rate, double grad_scale, const Tensor& gradient,
                                Tensor& weight, std::vector<Tensor>& slots, bool) const {
  // Its passes sum the weights anyway (the update's RMS scaling needs them).
  const bool factored = is_factored(weight);
  if (weight.dtype() == DType::float32)
    return adafactor_update<float>(options_, factored, step, learning_rate, grad_scale, gradient, weight, slots);
  return adafactor_update<double>(options_, factored, step, learning_rate, grad_scale, gradient, weight, slots);
}

}  // namespace ctrax
