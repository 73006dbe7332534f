// The activation backward kernels (see activation_backward.h), compiled once per instruction
// set as elementwise.cpp's loops are: plain C++ loops inlined into entry points that carry a
// `target` attribute, widened by the auto-vectoriser.
#include "activation_backward.h"

#include "elementwise.h"

// No FMA contraction: 1 - y * y as one fused operation would round once where the baseline
// rounds twice, and the gradient would depend on the CPU (see optimizer_steps.cpp).
#pragma GCC optimize("fp-contract=off")

namespace ctrax::kernels {

namespace {

template <ActivationBackward Op, typename T>
inline void backward_loop(const T* g, const T* y, T* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (Op == ActivationBackward::tanh) out[i] = g[i] * (T(1) - y[i] * y[i]);
    if constexpr (Op == ActivationBackward::sigmoid) out[i] = g[i] * y[i] * (T(1) - y[i]);
    if constexpr (Op == ActivationBackward::softplus) out[i] = g[i] * softplus_derivative(y[i]);
  }
}

template <typename T>
inline void backward_switch(ActivationBackward op, const T* g, const T* y, T* out, int64_t n) {
  switch (op) {
    case ActivationBackward::tanh: return backward_loop<ActivationBackward::tanh>(g, y, out, n);
    case ActivationBackward::sigmoid: return backward_loop<ActivationBackward::sigmoid>(g, y, out, n);
    case ActivationBackward::softplus: return backward_loop<ActivationBackward::softplus>(g, y, out, n);
  }
}

#define CTRAX_ACTIVATION_BACKWARD_VARIANT(NAME, ATTRIBUTES)                                             \
  namespace NAME {                                                                                       \
  ATTRIBUTES void f32(ActivationBackward op, const float* g, const float* y, float* o, int64_t n) {    \
    backward_switch(op, g, y, o, n);                                                                     \
  }                                                                                                      \
  ATTRIBUTES void f64(ActivationBackward op, const double* g, const double* y, double* o, int64_t n) { \
    backward_switch(op, g, y, o, n);                                                                     \
  }                                                                                                      \
  }

CTRAX_ACTIVATION_BACKWARD_VARIANT(portable, __attribute__((flatten)))
CTRAX_ACTIVATION_BACKWARD_VARIANT(avx2, __attribute__((flatten, target("avx2,fma"))))
CTRAX_ACTIVATION_BACKWARD_VARIANT(avx512, __attribute__((flatten, target("avx512f,avx512vl,avx512dq,fma"))))
#undef CTRAX_ACTIVATION_BACKWARD_VARIANT

}  // namespace

void activation_backward(ActivationBackward op, const float* g, const float* y, float* out, int64_t n) {
  switch (active_elementwise_isa()) {
    case ElementwiseIsa::portable: return portable::f32(op, g, y, out, n);
    case ElementwiseIsa::avx2: return avx2::f32(op, g, y, out, n);
    case ElementwiseIsa::avx512: return avx512::f32(op, g, y, out, n);
  }
}

void activation_backward(ActivationBackward op, const double* g, const double* y, double* out, int64_t n) {
  switch (active_elementwise_isa()) {
    case ElementwiseIsa::portable: return portable::f64(op, g, y, out, n);
    case ElementwiseIsa::avx2: return avx2::f64(op, g, y, out, n);
    case ElementwiseIsa::avx512: return avx512::f64(op, g, y, out, n);
  }
}

}  // namespace ctrax::kernels
