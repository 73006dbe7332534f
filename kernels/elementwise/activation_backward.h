// The backward of tanh and sigmoid, dx = g * f'(y) from the op's output y, and of softplus,
// dx = g * sigmoid(x) from its input x, as vectorised kernels (one pass, no temporaries):
//   tanh:     dx = g * (1 - y * y)
//   sigmoid:  dx = g * y * (1 - y)      (evaluated as (g * y) * (1 - y))
//   softplus: dx = g * softplus_derivative(x)   (below; the `y` argument is x)
// Each variant computes the same bits as that plain C++ expression: the file is compiled
// without FMA contraction, so the AVX2 and AVX-512 variants round each multiply and subtract
// as the baseline does. The variant is the one force_elementwise_isa()/active_elementwise_isa()
// selects (elementwise.h). out may equal g or y; otherwise no overlap.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "vec_math.h"

namespace ctrax::kernels {

enum class ActivationBackward : uint8_t { tanh, sigmoid, softplus };

// softplus'(x) = sigmoid(x): float32 with vec_math's branch-free sigmoid_f32 (so the loop
// vectorises, and the derivative uses the same exp as softplus_f32 itself), float64 with
// std::exp; either way as e^-|x| so that nothing overflows. The autograd fallback for
// non-contiguous gradients calls this too, so both give the same bits.
template <typename T>
inline T softplus_derivative(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return vec_math::sigmoid_f32(x);
  } else {
    const T e = std::exp(-std::fabs(x));
    return x >= 0 ? T(1) / (1 + e) : e / (1 + e);
  }
}

void activation_backward(ActivationBackward op, const float* g, const float* y, float* out, int64_t n);
void activation_backward(ActivationBackward op, const double* g, const double* y, double* out, int64_t n);

}  // namespace ctrax::kernels
