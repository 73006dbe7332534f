// Internal helpers shared by the unary and binary op families (unary.cpp, binary.cpp).
//
// What it is for: input checks, the scalar conversions of the weak-scalar rule, and the two
// loop drivers that run a per-element function over strided operands with strided_loop,
// handing contiguous runs of float32/float64 to the vectorised kernels of
// kernels/elementwise/elementwise.h when the op has one.
//
// What it is not for: public API (nothing here is installed for users) or reductions.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "../../kernels/elementwise/elementwise.h"
#include "../strided_loop.h"
#include "../tensor.h"

namespace ctrax::ops_detail {

// Throws unless `t` is a defined CPU tensor; `role` names the operand ("x", "a", "cond").
inline void require_input(const Tensor& t, const char* op, const char* role) {
  CTRAX_REQUIRE(t.defined(), op, ": operand ", role, " is an undefined (default-constructed) tensor");
  CTRAX_REQUIRE(t.device().is_cpu(), op, ": operand ", role, " is on ", t.device(),
                "; only cpu tensors are supported");
}

// A double converted to the stored type T as Tensor::to does: floating to integer truncates
// toward zero and saturates at T's range, NaN gives 0 (a plain cast would be undefined).
template <typename T>
T saturate_cast(double v) {
  if constexpr (std::is_same_v<T, uint8_t>) {
    return v != 0.0 ? 1 : 0;
  } else if constexpr (std::is_integral_v<T>) {
    if (std::isnan(v)) return 0;
    if (v <= static_cast<double>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
    if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  } else {
    return static_cast<T>(v);
  }
}

// Integer arithmetic that wraps modulo 2^bits instead of overflowing (signed overflow is
// undefined behaviour in C++; unsigned arithmetic is defined, and converting back to the
// signed type is modular since C++20). Matches NumPy's int32/int64 behaviour.
template <typename T>
T wrap_add(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
}
template <typename T>
T wrap_sub(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
}
template <typename T>
T wrap_mul(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
}

// The dtype a weak C++ scalar takes next to a tensor of dtype `t` (dtype.h): a floating
// scalar keeps a floating tensor's dtype and makes integer or bool float32; an integer scalar
// keeps an integer or floating tensor's dtype and makes bool int64 (as PyTorch does).
inline DType weak_scalar_dtype(DType t, bool scalar_is_floating) {
  if (scalar_is_floating) return is_floating(t) ? t : DType::float32;
  return is_bool(t) ? DType::int64 : t;
}

// Marker for "this op has no vectorised kernel"; the kernel ids below are cast to int.
inline constexpr int kNoKernel = -1;

template <typename T>
inline constexpr bool kHasFloatKernels = std::is_same_v<T, float> || std::is_same_v<T, double>;

// out = f(x) elementwise, out a fresh contiguous tensor of x's shape and dtype Out, x of
// dtype In. With a kernel id (a kernels::UnaryKernel) and In == Out floating, contiguous
// runs go to the vectorised kernel; everything else runs the plain loop over f.
// Runs shorter than this skip the vectorised kernels (kernels/elementwise): the call and its
// dispatch cost more than a plain loop over a few elements.
inline constexpr int64_t kMinKernelRun = 16;

template <typename In, typename Out, int Kernel = kNoKernel, typename F>
void map_unary(const Tensor& x, const Tensor& out, F f) {
  std::array<char*, 2> base{static_cast<char*>(out.raw_data()), static_cast<char*>(x.raw_data())};
  std::array<Shape, 2> strides{contiguous_strides(out.shape()), detail::broadcast_byte_strides(x, out.shape())};
  for (int d = 0; d < out.rank(); ++d) strides[0][d] *= static_cast<int64_t>(sizeof(Out));
  detail::strided_loop<2>(out.shape(), base, strides, [&f](std::array<char*, 2> p, std::array<int64_t, 2> st, int64_t n) {
    Out* o = reinterpret_cast<Out*>(p[0]);
    if (st[1] == static_cast<int64_t>(sizeof(In))) {
      const In* in = reinterpret_cast<const In*>(p[1]);
      if constexpr (Kernel != kNoKernel && std::is_same_v<In, Out> && kHasFloatKernels<In>) {
        if (n >= kMinKernelRun) {
          kernels::unary_kernel(static_cast<kernels::UnaryKernel>(Kernel), in, o, n);
        } else {
          for (int64_t i = 0; i < n; ++i) o[i] = f(in[i]);
        }
      } else {
        for (int64_t i = 0; i < n; ++i) o[i] = f(in[i]);
      }
    } else {
      for (int64_t i = 0; i < n; ++i) o[i] = f(*reinterpret_cast<const In*>(p[1] + i * st[1]));
    }
  });
}

// out = f(a, b) elementwise with broadcasting. a and b are given as base pointers plus byte
// strides at out's shape (0 on broadcast axes), so a C++ scalar can take part without being
// wrapped in a tensor. With a kernel id (a kernels::BinaryKernel) and T == Out floating,
// runs where each input is contiguous or a single broadcast value go to the vectorised kernel.
template <typename T, typename Out, int Kernel = kNoKernel, typename F>
void map_binary(const Tensor& out, const char* a, const Shape& a_strides, const char* b, const Shape& b_strides,
                F f) {
  constexpr auto kSize = static_cast<int64_t>(sizeof(T));
  std::array<char*, 3> base{static_cast<char*>(out.raw_data()), const_cast<char*>(a), const_cast<char*>(b)};
  std::array<Shape, 3> strides{contiguous_strides(out.shape()), a_strides, b_strides};
  for (int d = 0; d < out.rank(); ++d) strides[0][d] *= static_cast<int64_t>(sizeof(Out));
  detail::strided_loop<3>(out.shape(), base, strides, [&f](std::array<char*, 3> p, std::array<int64_t, 3> st, int64_t n) {
    Out* o = reinterpret_cast<Out*>(p[0]);
    const T* x = reinterpret_cast<const T*>(p[1]);
    const T* y = reinterpret_cast<const T*>(p[2]);
    if constexpr (Kernel != kNoKernel && std::is_same_v<T, Out> && kHasFloatKernels<T>) {
      // Short runs (a [64, 2] + [2] bias add has 64 runs of 2) stay inline: the kernel call
      // would cost more than the work. f is the same single IEEE operation as the kernel.
      if ((st[1] == kSize || st[1] == 0) && (st[2] == kSize || st[2] == 0) && n >= kMinKernelRun) {
        kernels::binary_kernel(static_cast<kernels::BinaryKernel>(Kernel), x, st[1] != 0, y, st[2] != 0, o, n);
        return;
      }
    } else {
      if (st[1] == kSize && st[2] == kSize) {
        for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], y[i]);
        return;
      }
      if (st[1] == kSize && st[2] == 0) {
        const T yv = *y;
        for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], yv);
        return;
      }
    }
    for (int64_t i = 0; i < n; ++i)
      o[i] = f(*reinterpret_cast<const T*>(p[1] + i * st[1]), *reinterpret_cast<const T*>(p[2] + i * st[2]));
  });
}

}  // namespace ctrax::ops_detail
