// The backward of tanh and sigmoid, dx = g * f'(y) from the op's output y, as vectorised
// kernels (one pass, no temporaries):
//   tanh:    dx = g * (1 - y * y)
//   sigmoid: dx = g * y * (1 - y)      (evaluated as (g * y) * (1 - y))
// Each variant computes the same bits as that plain C++ expression: the file is compiled
// without FMA contraction, so the AVX2 and AVX-512 variants round each multiply and subtract
// as the baseline does. The variant is the one force_elementwise_isa()/active_elementwise_isa()
// selects (elementwise.h). out may equal g or y; otherwise no overlap.
#pragma once

#include <cstdint>

namespace ctrax::kernels {

enum class ActivationBackward : uint8_t { tanh, sigmoid };

void activation_backward(ActivationBackward op, const float* g, const float* y, float* out, int64_t n);
void activation_backward(ActivationBackward op, const double* g, const double* y, double* out, int64_t n);

}  // namespace ctrax::kernels
