// The unary elementwise ops of tensor/ops.h: neg, abs, ..., logical_not.
//
// What it is for: each op's dtype rule and per-element formula. The loop itself is
// ops_detail::map_unary (elementwise_util.h), which walks any strided input and sends
// contiguous float runs of neg, relu, square, exp, tanh and sigmoid to the vectorised kernels.
// On a CUDA tensor the same dtype rule runs, then kernels/cuda/elementwise.h does the loop.
// relu, tanh and sigmoid of a contiguous float tensor go to cudnnActivationForward instead when
// backend(CudaOp::activation) == cudnn (kernels/cuda/backend.h); other layouts and dtypes keep
// the hand-written kernel. Their gradients are tensor ops either way.
//
// Dtype families (ops.h):
//   real      exp, log, ..., gelu, sin, cos: integer and bool inputs become float32;
//   arithmetic neg, abs, sign, square, relu, clip: keep the dtype; bool throws; integers wrap
//             modulo 2^bits where the true result does not fit (neg/abs of INT_MIN);
//   rounding  floor, ceil, round: integer and bool inputs are returned as a copy;
//   tests     isnan, isfinite, logical_not: give bool for every input dtype.
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "../../kernels/elementwise/elementwise_math.h"
#include "../ops.h"
#include "../trace.h"
#include "elementwise_util.h"
#include "op_kinds.h"
#include <climits>

#include "../../kernels/cuda/backend.h"
#include "../../kernels/cuda/cudnn.h"
#include "../cuda_arg.h"

namespace ctrax {

namespace {

using ops_detail::map_unary;
namespace kc = kernels::cuda;


// cuDNN's activation when it is selected and the layout fits (a non-empty contiguous float
// tensor on a GPU, within cuDNN's int sizes); otherwise an undefined tensor, and the caller
// runs the hand-written path (which also does the checks and dtype rules for every other input).
Tensor cudnn_activation_if_selected(const Tensor& x, kc::CudnnActivation activation) {
  if (!x.defined() || !x.device().is_cuda() || !is_floating(x.dtype()) || !x.is_contiguous() || x.numel() == 0 ||
      x.numel() > INT_MAX || kc::backend(kc::CudaOp::activation) != kc::CudaBackend::cudnn)
    return Tensor();
  cuda_detail::use_device_of(x);
  Tensor y(x.shape(), x.dtype(), x.device());
  kc::cudnn_activation(activation, x.device_data(), y.device_data(), cuda_detail::element_type(x.dtype()), x.numel());
  return y;
}

// Real-valued op: computes in float32 (or float64 for float64 input).
template <OpId Op, typename F>
Tensor real_unary(const Tensor& x, F f, kc::UnaryOp cuda_op = ops_detail::cuda_unary_op(Op)) {
  constexpr int Kernel = ops_detail::vector_kernel(Op);
  const char* op = op_name(Op);
  ops_detail::require_defined_input(x, op, "x");
  const Tensor xf = is_floating(x.dtype()) ? x : x.to(DType::float32);
  if (xf.device().is_cuda()) return ops_detail::cuda_unary(cuda_op, xf, xf.dtype());
  Tensor out(xf.shape(), xf.dtype());
  dispatch_floating(xf.dtype(), [&](auto tag) {
    using T = decltype(tag);
    map_unary<T, T, Kernel>(xf, out, [f](T v) -> T { return f(v); });
  });
  return out;
}

inline void require_not_bool(const Tensor& x, const char* op) {
  CTRAX_REQUIRE(!is_bool(x.dtype()), op, ": arithmetic on a bool tensor (shape ", x.shape(),
                ") is not supported; cast it first, e.g. x.to(DType::int32)");
}

// Arithmetic op: same dtype in and out, bool rejected.
template <OpId Op, typename F>
Tensor arithmetic_unary(const Tensor& x, F f, kc::UnaryOp cuda_op = ops_detail::cuda_unary_op(Op)) {
  constexpr int Kernel = ops_detail::vector_kernel(Op);
  const char* op = op_name(Op);
  ops_detail::require_defined_input(x, op, "x");
  require_not_bool(x, op);
  if (x.device().is_cuda()) return ops_detail::cuda_unary(cuda_op, x, x.dtype());
  Tensor out(x.shape(), x.dtype());
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, uint8_t>) map_unary<T, T, Kernel>(x, out, [f](T v) -> T { return f(v); });
  });
  return out;
}

// Rounding op: floating inputs are rounded, integer and bool ones copied.
template <OpId Op, typename F>
Tensor rounding_unary(const Tensor& x, F f) {
  const char* op = op_name(Op);
  const kc::UnaryOp cuda_op = ops_detail::cuda_unary_op(Op);
  ops_detail::require_defined_input(x, op, "x");
  if (!is_floating(x.dtype())) return x.clone();
  if (x.device().is_cuda()) return ops_detail::cuda_unary(cuda_op, x, x.dtype());
  Tensor out(x.shape(), x.dtype());
  dispatch_floating(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    map_unary<T, T>(x, out, [f](T v) -> T { return f(v); });
  });
  return out;
}

// Test op: any dtype in, bool (stored as uint8_t 0/1) out.
template <OpId Op, typename F>
Tensor test_unary(const Tensor& x, F f) {
  const char* op = op_name(Op);
  const kc::UnaryOp cuda_op = ops_detail::cuda_unary_op(Op);
  ops_detail::require_defined_input(x, op, "x");
  if (x.device().is_cuda()) return ops_detail::cuda_unary(cuda_op, x, DType::boolean);
  Tensor out(x.shape(), DType::boolean);
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    map_unary<T, uint8_t>(x, out, [f](T v) -> uint8_t { return f(v) ? 1 : 0; });
  });
  return out;
}

// -x for integers wraps, so -INT_MIN == INT_MIN (as NumPy) instead of overflowing.
template <typename T>
T negate(T v) {
  if constexpr (std::is_integral_v<T>) return ops_detail::wrap_sub(T(0), v);
  else return ops_detail::vector_formula<OpId::neg>(v);
}

// Round half to even: floor, then step up when the fraction is above one half, or exactly
// one half with an odd floor. The sign is copied back so that round(-0.3) = -0 (as NumPy).
// Unlike std::nearbyint this does not depend on the floating-point rounding mode.
template <typename T>
T round_half_even(T v) {
  T r = std::floor(v);
  const T fraction = v - r;  // NaN for +-inf and NaN, which then fall through unchanged
  if (fraction > T(0.5) || (fraction == T(0.5) && std::fmod(r, T(2)) != T(0))) r += T(1);
  return std::copysign(r, v);
}

}  // namespace

// ---- arithmetic -------------------------------------------------------------------------------

Tensor neg(const Tensor& x) {
  return traced_op(OpId::neg, {&x}, [&] {
    return arithmetic_unary<OpId::neg>(x, [](auto v) { return negate(v); });
  });
}

Tensor abs(const Tensor& x) {
  return traced_op(OpId::abs, {&x}, [&] {
    return arithmetic_unary<OpId::abs>(x, [](auto v) {
      using T = decltype(v);
      if constexpr (std::is_integral_v<T>) return v < T(0) ? negate(v) : v;
      else return std::fabs(v);
    });
  });
}

Tensor sign(const Tensor& x) {
  // 0, -0 and NaN are returned as they are.
  return arithmetic_unary<OpId::sign>(x, [](auto v) {
    using T = decltype(v);
    return v > T(0) ? T(1) : (v < T(0) ? T(-1) : v);
  });
}

Tensor square(const Tensor& x) {
  return traced_op(OpId::square, {&x}, [&] {
    return arithmetic_unary<OpId::square>(x, [](auto v) {
      using T = decltype(v);
      if constexpr (std::is_integral_v<T>) return ops_detail::wrap_mul(v, v);
      else return ops_detail::vector_formula<OpId::square>(v);
    });
  });
}

Tensor relu(const Tensor& x) {
  return traced_op(OpId::relu, {&x}, [&] {
    if (Tensor y = cudnn_activation_if_selected(x, kc::CudnnActivation::relu); y.defined()) return y;
    return arithmetic_unary<OpId::relu>(x, [](auto v) {
      using T = decltype(v);
      return v <= T(0) ? T(0) : v;  // kernels::unary_value<relu> for floats: +0 for -0, NaN kept
    });
  });
}

Tensor clip(const Tensor& x, Scalar lo, Scalar hi) {
  return traced_op(OpId::clip, {&x}, [&] {
    ops_detail::require_defined_input(x, "clip", "x");
    require_not_bool(x, "clip");
    CTRAX_REQUIRE(lo.value <= hi.value, "clip: lo (", lo.value, ") must be <= hi (", hi.value,
                  "), and neither may be NaN");
    // The bounds are weak scalars: a floating bound makes an integer tensor float32.
    const DType dtype = (lo.is_floating || hi.is_floating) ? ops_detail::weak_scalar_dtype(x.dtype(), true) : x.dtype();
    const Tensor xc = x.to(dtype);
    // The bounds travel as doubles and are saturate-cast to the element type in the launch.
    if (xc.device().is_cuda()) return ops_detail::cuda_unary(ops_detail::cuda_unary_op(OpId::clip), xc, dtype, lo.value, hi.value);
    Tensor out(xc.shape(), dtype);
    dispatch_dtype(dtype, [&](auto tag) {
      using T = decltype(tag);
      // Saturating conversion: an int32 tensor clipped to [-1e20, 1e20] is left unchanged.
      const T low = ops_detail::saturate_cast<T>(lo.value);
      const T high = ops_detail::saturate_cast<T>(hi.value);
      map_unary<T, T>(xc, out, [low, high](T v) -> T { return v < low ? low : (v > high ? high : v); });
    });
    return out;
  }, [&] { return OpAttrs{ScalarAttrs{lo.value, hi.value, 0}}; });
}

// ---- real-valued ------------------------------------------------------------------------------

Tensor exp(const Tensor& x) {
  return traced_op(OpId::exp, {&x}, [&] {
    return real_unary<OpId::exp>(x, [](auto v) { return ops_detail::vector_formula<OpId::exp>(v); });
  });
}
Tensor tanh(const Tensor& x) {
  return traced_op(OpId::tanh, {&x}, [&] {
    if (Tensor y = cudnn_activation_if_selected(x, kc::CudnnActivation::tanh); y.defined()) return y;
    return real_unary<OpId::tanh>(x, [](auto v) { return ops_detail::vector_formula<OpId::tanh>(v); });
  });
}
Tensor sigmoid(const Tensor& x) {
  return traced_op(OpId::sigmoid, {&x}, [&] {
    if (Tensor y = cudnn_activation_if_selected(x, kc::CudnnActivation::sigmoid); y.defined()) return y;
    return real_unary<OpId::sigmoid>(x, [](auto v) { return ops_detail::vector_formula<OpId::sigmoid>(v); });
  });
}
Tensor log(const Tensor& x) {
  return traced_op(OpId::log, {&x}, [&] {
    return real_unary<OpId::log>(x, [](auto v) { return ops_detail::vector_formula<OpId::log>(v); });
  });
}
Tensor log1p(const Tensor& x) { return traced_op(OpId::log1p, {&x}, [&] { return real_unary<OpId::log1p>(x, [](auto v) { return std::log1p(v); }); }); }
Tensor expm1(const Tensor& x) { return traced_op(OpId::expm1, {&x}, [&] { return real_unary<OpId::expm1>(x, [](auto v) { return std::expm1(v); }); }); }
Tensor sqrt(const Tensor& x) { return traced_op(OpId::sqrt, {&x}, [&] { return real_unary<OpId::sqrt>(x, [](auto v) { return std::sqrt(v); }); }); }
Tensor rsqrt(const Tensor& x) {
  return traced_op(OpId::rsqrt, {&x}, [&] {
    return real_unary<OpId::rsqrt>(x, [](auto v) { return decltype(v)(1) / std::sqrt(v); });
  });
}
Tensor reciprocal(const Tensor& x) {
  return traced_op(OpId::reciprocal, {&x}, [&] {
    return real_unary<OpId::reciprocal>(x, [](auto v) { return decltype(v)(1) / v; });
  });
}
Tensor sin(const Tensor& x) { return traced_op(OpId::sin, {&x}, [&] { return real_unary<OpId::sin>(x, [](auto v) { return std::sin(v); }); }); }
Tensor cos(const Tensor& x) { return traced_op(OpId::cos, {&x}, [&] { return real_unary<OpId::cos>(x, [](auto v) { return std::cos(v); }); }); }

Tensor softplus(const Tensor& x) {
  return traced_op(OpId::softplus, {&x}, [&] {
    // log(1 + e^x) = max(x, 0) + log1p(e^-|x|): the exponent is never positive, so no overflow,
    // and for large |x| the result tends to max(x, 0) exactly.
    // float32 by the vectorised kernel's formula (kernels/elementwise/vec_math.h), float64 by libm.
    return real_unary<OpId::softplus>(x, [](auto v) { return ops_detail::vector_formula<OpId::softplus>(v); });
  });
}

Tensor gelu(const Tensor& x, bool approximate) {
  return traced_op(OpId::gelu, {&x}, [&] {
    if (approximate) {
      // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
      return real_unary<OpId::gelu>(
          x,
          [](auto v) {
            using T = decltype(v);
            const T sqrt_2_over_pi = T(0.79788456080286535588);
            return T(0.5) * v * (T(1) + std::tanh(sqrt_2_over_pi * (v + T(0.044715) * v * v * v)));
          },
          kc::UnaryOp::gelu_tanh);  // the CUDA kernel of the approximation
    }
    // x Phi(x) = 0.5 x (1 + erf(x / sqrt 2))
    return real_unary<OpId::gelu>(x, [](auto v) {
      using T = decltype(v);
      return T(0.5) * v * (T(1) + std::erf(v * T(0.70710678118654752440)));
    });
  }, [&] { return OpAttrs{GeluAttrs{approximate}}; });
}

// ---- rounding -------------------------------------------------------------------------------

Tensor floor(const Tensor& x) { return rounding_unary<OpId::floor>(x, [](auto v) { return std::floor(v); }); }
Tensor ceil(const Tensor& x) { return rounding_unary<OpId::ceil>(x, [](auto v) { return std::ceil(v); }); }
Tensor round(const Tensor& x) { return rounding_unary<OpId::round>(x, [](auto v) { return round_half_even(v); }); }

// ---- tests ----------------------------------------------------------------------------------

Tensor isnan(const Tensor& x) {
  return test_unary<OpId::isnan>(x, [](auto v) {
    if constexpr (std::is_floating_point_v<decltype(v)>) return std::isnan(v);
    else return false;
  });
}
Tensor isfinite(const Tensor& x) {
  return test_unary<OpId::isfinite>(x, [](auto v) {
    if constexpr (std::is_floating_point_v<decltype(v)>) return std::isfinite(v);
    else return true;
  });
}
Tensor logical_not(const Tensor& x) {
  return test_unary<OpId::logical_not>(x, [](auto v) { return v == decltype(v)(0); });
}

}  // namespace ctrax
