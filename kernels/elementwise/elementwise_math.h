// The per-element maths of the kernelised elementwise ops, for floating types.
//
// What it is for: one definition of what add, maximum, relu, exp, ... compute on one float or
// double, shared by the vectorised loops (elementwise.cpp) and by the tensor ops' strided and
// scalar paths (tensor/ops/unary.cpp, binary.cpp), so every path agrees.
//
// What it is not for: integer types (the tensor layer wraps integer overflow itself).
#pragma once

#include <cmath>
#include <type_traits>

#include "elementwise.h"
#include "vec_math.h"

namespace ctrax::kernels {

// a (op) b for float or double.
template <BinaryKernel Op, typename T>
inline T binary_value(T a, T b) {
  if constexpr (Op == BinaryKernel::add) return a + b;
  if constexpr (Op == BinaryKernel::sub) return a - b;
  if constexpr (Op == BinaryKernel::mul) return a * b;
  if constexpr (Op == BinaryKernel::div) return a / b;
  // a != a is the NaN test; written as a select so that it vectorises.
  if constexpr (Op == BinaryKernel::maximum) return (a > b || a != a) ? a : b;
  if constexpr (Op == BinaryKernel::minimum) return (a < b || a != a) ? a : b;
  if constexpr (Op == BinaryKernel::relu_backward) return b > T(0) ? a : T(0);
}

// op(x) for float or double. relu(x) = x <= 0 ? +0 : x, so relu(-0) = +0 and NaN stays NaN.
// sigmoid uses z = e^-|x| as in vec_math.h so that it cannot overflow.
template <UnaryKernel Op, typename T>
inline T unary_value(T x) {
  if constexpr (Op == UnaryKernel::neg) return -x;
  if constexpr (Op == UnaryKernel::relu) return x <= T(0) ? T(0) : x;
  if constexpr (Op == UnaryKernel::square) return x * x;
  if constexpr (std::is_same_v<T, float>) {
    if constexpr (Op == UnaryKernel::exp) return vec_math::exp_f32(x);
    if constexpr (Op == UnaryKernel::tanh) return vec_math::tanh_f32(x);
    if constexpr (Op == UnaryKernel::sigmoid) return vec_math::sigmoid_f32(x);
    if constexpr (Op == UnaryKernel::softplus) return vec_math::softplus_f32(x);
    if constexpr (Op == UnaryKernel::log) return vec_math::log_f32(x);
  } else {
    if constexpr (Op == UnaryKernel::exp) return std::exp(x);
    if constexpr (Op == UnaryKernel::tanh) return std::tanh(x);
    if constexpr (Op == UnaryKernel::sigmoid) {
      const T z = std::exp(-std::fabs(x));
      const T s = T(1) / (T(1) + z);
      return x < T(0) ? z * s : s;
    }
    if constexpr (Op == UnaryKernel::softplus) return (x > T(0) ? x : T(0)) + std::log1p(std::exp(-std::fabs(x)));
    if constexpr (Op == UnaryKernel::log) return std::log(x);
  }
}

}  // namespace ctrax::kernels
