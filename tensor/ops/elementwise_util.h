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

#include "../../kernels/cuda/elementwise.h"
#include "../../kernels/elementwise/elementwise.h"
#include "../plan.h"
#include "../plan_fusion.h"
#include "../strided_loop.h"
#include "../tensor.h"
#include "../cuda_arg.h"

namespace ctrax::ops_detail {

// Throws unless `t` is defined, on any device: for the ops that have a CUDA path (every op of
// unary.cpp and binary.cpp), which then check that all operands share one device.
inline void require_defined_input(const Tensor& t, const char* op, const char* role) {
  CTRAX_REQUIRE(t.defined(), op, ": operand ", role, " is an undefined (default-constructed) tensor");
}

// Throws unless `t` is on `device` (the first operand's); never throws without the CUDA module, where
// every tensor is on the cpu.
inline void require_same_device(const char* op, Device device, const Tensor& t, const char* role) {
  CTRAX_REQUIRE(t.device() == device, op, ": operand ", role, " is on ", t.device(), " but the others are on ",
                device, "; move it first with .to(", device, ")");
}

// ---- CUDA launches ------------------------------------------------------------------------------
// The CUDA side of the loops below: the tensor layer has already chosen the dtypes and the
// shape and converted the operands (Tensor::to works on the device), so these only allocate
// the output on the operand's device and launch kernels/cuda/elementwise.h (through the CUDA
// module's loader). Without the module no tensor is ever on a GPU, so they are unreachable then.

namespace kc = kernels::cuda;

// op(x) as a fresh contiguous tensor of x's shape and dtype out_dtype on x's device.
inline Tensor cuda_unary(kc::UnaryOp op, const Tensor& x, DType out_dtype,
                         double p0 = 0, double p1 = 0) {
  cuda_detail::use_device_of(x);
  Tensor out(x.shape(), out_dtype, x.device());
  kc::unary(op, cuda_detail::strided_arg(out), cuda_detail::element_type(out_dtype), cuda_detail::strided_arg(x),
            cuda_detail::element_type(x.dtype()), p0, p1);
  return out;
}

// a (op) b broadcast to `shape`, both already of dtype `compute`; out of dtype out_dtype.
inline Tensor cuda_binary(kc::BinaryOp op, const Tensor& a, const Tensor& b,
                          const Shape& shape, DType compute,
                          DType out_dtype) {
  cuda_detail::use_device_of(a);
  Tensor out(shape, out_dtype, a.device());
  kc::binary(op, cuda_detail::strided_arg(out), cuda_detail::element_type(out_dtype),
             cuda_detail::strided_arg(a, shape), cuda_detail::strided_arg(b, shape),
             cuda_detail::element_type(compute));
  return out;
}

// t (op) s, or s (op) t when scalar_first; t already of dtype `compute`. The scalar is
// converted to `compute` with saturate_cast's rule inside the launch.
inline Tensor cuda_binary_scalar(kc::BinaryOp op, const Tensor& t, DType compute,
                                 DType out_dtype, double s,
                                 bool scalar_first) {
  cuda_detail::use_device_of(t);
  Tensor out(t.shape(), out_dtype, t.device());
  kc::binary_scalar(op, cuda_detail::strided_arg(out), cuda_detail::element_type(out_dtype),
                    cuda_detail::strided_arg(t), cuda_detail::element_type(compute), s, scalar_first);
  return out;
}

// cond ? a : b broadcast to `shape`; a and b already of dtype `dtype`, cond bool.
inline Tensor cuda_where(const Tensor& cond, const Tensor& a, const Tensor& b,
                         const Shape& shape, DType dtype) {
  cuda_detail::use_device_of(cond);
  Tensor out(shape, dtype, cond.device());
  kc::where(cuda_detail::strided_arg(out), cuda_detail::element_type(dtype), cuda_detail::strided_arg(cond, shape),
            cuda_detail::strided_arg(a, shape), cuda_detail::strided_arg(b, shape));
  return out;
}

// True when the integer CUDA tensor t has a negative element (waits for the device).
inline bool cuda_any_negative(const Tensor& t) {
  cuda_detail::use_device_of(t);
  return kc::any_negative(cuda_detail::strided_arg(t), cuda_detail::element_type(t.dtype()), t.device().index);
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
  detail::KernelScope scope;
  std::array<char*, 2> base{static_cast<char*>(out.raw_data()), static_cast<char*>(x.raw_data())};
  std::array<Shape, 2> strides{contiguous_strides(out.shape()), detail::broadcast_byte_strides(x, out.shape())};
  for (int d = 0; d < out.rank(); ++d) strides[0][d] *= static_cast<int64_t>(sizeof(Out));
  // One run through the vectorised kernel (contiguous, not split by strided_loop): an activation
  // that may fuse into the GEMM before it (told after its kernel is recorded, below).
  // Past one grain strided_loop may split the run, and a short last piece takes the inline loop,
  // whose bits differ from the kernel's for the approximated functions; relu is exact either way.
  bool may_fuse = false;
  if constexpr (Kernel != kNoKernel && std::is_same_v<In, Out> && kHasFloatKernels<In>)
    may_fuse = detail::t_capture_state.recorder != nullptr && strides[1] == strides[0] &&
               out.numel() >= kMinKernelRun &&
               (out.numel() <= detail::kElementwiseGrain || Kernel == static_cast<int>(kernels::UnaryKernel::relu));
  detail::run_kernel([shape = out.shape(), base, strides, f] {
  detail::strided_loop<2>(shape, base, strides, [&f](std::array<char*, 2> p, std::array<int64_t, 2> st, int64_t n) {
    if (st[0] != static_cast<int64_t>(sizeof(Out))) {  // a column of short rows (RunOrder::any): f, as a short row
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<Out*>(p[0] + i * st[0]) = f(*reinterpret_cast<const In*>(p[1] + i * st[1]));
      return;
    }
    Out* o = reinterpret_cast<Out*>(p[0]);
    if (st[1] == static_cast<int64_t>(sizeof(In))) {
      const In* in = reinterpret_cast<const In*>(p[1]);
      if constexpr (Kernel != kNoKernel && std::is_same_v<In, Out> && kHasFloatKernels<In>) {
        // A short run: the same per-element formula as f, four floats at a time (the baseline
        // variant has no FMA, so its bits are f's; a Gaussian policy's four softplus values of
        // a collection step took 70 ns one by one).
        if (n >= kMinKernelRun) {
          kernels::unary_kernel(static_cast<kernels::UnaryKernel>(Kernel), in, o, n);
        } else {
          kernels::unary_kernel_baseline(static_cast<kernels::UnaryKernel>(Kernel), in, o, n);
        }
      } else {
        for (int64_t i = 0; i < n; ++i) o[i] = f(in[i]);
      }
    } else {
      for (int64_t i = 0; i < n; ++i) o[i] = f(*reinterpret_cast<const In*>(p[1] + i * st[1]));
    }
  }, detail::kElementwiseGrain, detail::RunOrder::any);
  });
  if constexpr (Kernel != kNoKernel && std::is_same_v<In, Out> && kHasFloatKernels<In>)
    if (may_fuse) detail::note_activation(static_cast<kernels::UnaryKernel>(Kernel), base[1], base[0], out);
}

// Which operand of map_binary is a C++ scalar: its pointer is then read once when the kernel is
// made and the value travels with the kernel (a recorded plan replays it after the caller's
// local variable is gone).
enum class ScalarOperand { none, a, b };

// out = f(a, b) elementwise with broadcasting. a and b are given as base pointers plus byte
// strides at out's shape (0 on broadcast axes), so a C++ scalar can take part without being
// wrapped in a tensor. With a kernel id (a kernels::BinaryKernel) and T == Out floating,
// runs where each input is contiguous or a single broadcast value go to the vectorised kernel.
// The caller holds a detail::KernelScope around taking a's and b's pointers.
template <typename T, typename Out, int Kernel = kNoKernel, typename F>
void map_binary(const Tensor& out, const char* a, const Shape& a_strides, const char* b, const Shape& b_strides,
                F f, ScalarOperand scalar = ScalarOperand::none) {
  constexpr auto kSize = static_cast<int64_t>(sizeof(T));
  detail::KernelScope scope;
  std::array<char*, 3> base{static_cast<char*>(out.raw_data()), const_cast<char*>(a), const_cast<char*>(b)};
  std::array<Shape, 3> strides{contiguous_strides(out.shape()), a_strides, b_strides};
  for (int d = 0; d < out.rank(); ++d) strides[0][d] *= static_cast<int64_t>(sizeof(Out));
  const T scalar_value = scalar == ScalarOperand::a ? *reinterpret_cast<const T*>(a)
                         : scalar == ScalarOperand::b ? *reinterpret_cast<const T*>(b) : T{};
  // [rows, n] with each operand whole rows or one repeated row (a bias add among them).
  int64_t a_row = 0, a_step = 0, b_row = 0, b_step = 0, rows = 0, n = 0;
  bool row_form = false;
  if constexpr (Kernel != kNoKernel && std::is_same_v<T, Out> && kHasFloatKernels<T>)
    row_form = detail::as_rows(out.shape(), strides[1], kSize, a_row, a_step, rows, n) &&
               detail::as_rows(out.shape(), strides[2], kSize, b_row, b_step, rows, n);
  // Tells a recording that this add was a bias add, which may fuse into the GEMM before it
  // (after its kernel was recorded; both forms below compute each element as a + b).
  const auto note_if_bias_add = [&] {
    if constexpr (Kernel == static_cast<int>(kernels::BinaryKernel::add) && kHasFloatKernels<T> &&
                  std::is_same_v<T, Out>) {
      const auto whole = [&](int64_t row, int64_t step) { return step == 1 && (row == n || rows == 1); };
      const auto one_row = [&](int64_t row, int64_t step) { return step == 1 && row == 0; };
      if (row_form && scalar == ScalarOperand::none && detail::t_capture_state.recorder != nullptr &&
          ((whole(a_row, a_step) && one_row(b_row, b_step)) || (one_row(a_row, a_step) && whole(b_row, b_step))))
        detail::note_bias_add(base[1], base[2], base[0], out, rows, n);
    }
  };
  if constexpr (Kernel != kNoKernel && std::is_same_v<T, Out> && kHasFloatKernels<T>) {
    // One kernel call for the whole [rows, n] op.
    if (row_form && rows * n >= kMinKernelRun && rows * n <= detail::kElementwiseGrain) {
      detail::run_kernel([base, scalar, scalar_value, a_row, a_step, b_row, b_step, rows, n] {
        T value = scalar_value;
        const T* x = scalar == ScalarOperand::a ? &value : reinterpret_cast<const T*>(base[1]);
        const T* y = scalar == ScalarOperand::b ? &value : reinterpret_cast<const T*>(base[2]);
        kernels::binary_rows_kernel(static_cast<kernels::BinaryKernel>(Kernel), x, a_row, a_step, y, b_row, b_step,
                                    reinterpret_cast<Out*>(base[0]), rows, n);
      });
      note_if_bias_add();
      return;
    }
  }
  detail::run_kernel([shape = out.shape(), base, strides, f, scalar, scalar_value] {
  T value = scalar_value;
  std::array<char*, 3> operands = base;
  if (scalar == ScalarOperand::a) operands[1] = reinterpret_cast<char*>(&value);
  if (scalar == ScalarOperand::b) operands[2] = reinterpret_cast<char*>(&value);
  detail::strided_loop<3>(shape, operands, strides, [&f](std::array<char*, 3> p, std::array<int64_t, 3> st, int64_t n) {
    if (st[0] != static_cast<int64_t>(sizeof(Out))) {  // a column of short rows (RunOrder::any): f, as a short row
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<Out*>(p[0] + i * st[0]) =
            f(*reinterpret_cast<const T*>(p[1] + i * st[1]), *reinterpret_cast<const T*>(p[2] + i * st[2]));
      return;
    }
    Out* o = reinterpret_cast<Out*>(p[0]);
    const T* x = reinterpret_cast<const T*>(p[1]);
    const T* y = reinterpret_cast<const T*>(p[2]);
    if constexpr (Kernel != kNoKernel && std::is_same_v<T, Out> && kHasFloatKernels<T>) {
      // Short runs (e.g. a strided [3, 5] operand's rows) stay inline: the kernel call would
      // cost more than the work. f is the same single IEEE operation as the kernel.
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
  }, detail::kElementwiseGrain, detail::RunOrder::any);
  });
  note_if_bias_add();
}

}  // namespace ctrax::ops_detail
