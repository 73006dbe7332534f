// Elementwise kernels (elementwise.h). One kernel template per (op, element type); each
// operand is read in one of five modes chosen on the host (uniform across the grid, so the
// branch costs nothing): a host scalar passed by value, a single device element (all strides
// 0, e.g. a rank-0 tensor), a contiguous run (index i, no index maths), a contiguous row
// repeated over the leading axes (a bias: index i % row length) or a general strided view
// (device::strided_offset). The loops are grid-stride. When every operand is contiguous, a
// scalar, one element or a repeated row, unary, binary and where take the packed kernels
// (several elements per thread and access; see "The packed path" below).
#include "elementwise.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "cuda_check.h"
#include "indexing.cuh"
#include "runtime.h"

namespace ctrax::kernels::cuda {

namespace {

constexpr int kThreads = 256;

enum Mode : int { kScalar, kSingle, kContiguous, kRow, kStrided };

bool all_zero_strides(const StridedArg& arg) {
  for (int d = 0; d < arg.rank; ++d)
    if (arg.shape[d] != 1 && arg.strides[d] != 0) return false;
  return true;
}

// A contiguous last axis repeated over every other axis (stride 0 or size 1 there): the view
// that broadcasting a bias row [n] against [..., n] gives.
bool is_repeated_row(const StridedArg& arg) {
  if (arg.rank < 1 || arg.strides[arg.rank - 1] != 1) return false;
  for (int d = 0; d < arg.rank - 1; ++d)
    if (arg.shape[d] != 1 && arg.strides[d] != 0) return false;
  return true;
}

Mode mode_of(const StridedArg& arg) {
  if (device::is_contiguous(arg)) return kContiguous;
  if (all_zero_strides(arg)) return kSingle;
  if (is_repeated_row(arg)) return kRow;
  return kStrided;
}

// One input operand as the kernels see it.
template <typename T>
struct In {
  StridedArg arg;
  T value{};        // kScalar only
  int64_t row = 1;  // kRow only: the row's length
  Mode mode = kStrided;
};

template <typename T>
In<T> tensor_in(const StridedArg& arg) {
  In<T> in;
  in.arg = arg;
  in.mode = mode_of(arg);
  if (in.mode == kRow) in.row = arg.shape[arg.rank - 1];
  return in;
}

// i % row, in 32 bits when both fit (a 64-bit remainder costs several times more).
__device__ __forceinline__ int64_t row_offset(int64_t i, int64_t row) {
  if (((static_cast<uint64_t>(i) | static_cast<uint64_t>(row)) >> 32) == 0)
    return static_cast<uint32_t>(i) % static_cast<uint32_t>(row);
  return i % row;
}

template <typename T>
__device__ __forceinline__ T load(const In<T>& in, int64_t i) {
  switch (in.mode) {
    case kScalar: return in.value;
    case kSingle: return *static_cast<const T*>(in.arg.data);
    case kContiguous: return static_cast<const T*>(in.arg.data)[i];
    case kRow: return static_cast<const T*>(in.arg.data)[row_offset(i, in.row)];
    default: return static_cast<const T*>(in.arg.data)[device::strided_offset(in.arg, i)];
  }
}

template <typename T>
__device__ __forceinline__ void store(const StridedArg& out, bool contiguous, int64_t i, T v) {
  T* p = static_cast<T*>(out.data);
  p[contiguous ? i : device::strided_offset(out, i)] = v;
}

// A double converted to T on the host with tensor/convert.h's rule (the CPU path's
// saturate_cast): truncation toward zero, saturation at T's range, NaN -> 0, bool = v != 0.
template <typename T>
T host_convert(double v) {
  if constexpr (std::is_same_v<T, uint8_t>) {
    return v != 0.0 ? 1 : 0;
  } else if constexpr (std::is_integral_v<T>) {
    if (v != v) return 0;
    if (v <= static_cast<double>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
    if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  } else {
    return static_cast<T>(v);
  }
}

// ---- float32 maths of kernels/elementwise/vec_math.h, on the device ------------------------
// The same range reduction and polynomials, so that exp/tanh/sigmoid agree with the CPU up to
// FMA contraction (the CPU's documented tolerance between its own ISA variants).
namespace vm {

__device__ __forceinline__ float clamp_below(float x, float lo) { return x < lo ? lo : x; }
__device__ __forceinline__ float clamp_above(float x, float hi) { return x > hi ? hi : x; }

struct Reduced {
  float r;
  int32_t k;
};
// x = k ln2 + r, k = round(x / ln2) via the 1.5 * 2^23 shifter, ln2 split Cody-Waite style.
__device__ __forceinline__ Reduced reduce_ln2(float x) {
  constexpr float kShifter = 12582912.0f;
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693145751953125f;
  constexpr float kLn2Lo = 1.428606765330187e-06f;
  const float t = __fadd_rn(__fmul_rn(x, kLog2e), kShifter);
  const float kf = __fsub_rn(t, kShifter);
  const auto k = static_cast<int32_t>(__float_as_uint(t) - __float_as_uint(kShifter));
  return {(x - kf * kLn2Hi) - kf * kLn2Lo, k};
}
__device__ __forceinline__ float pow2i(int32_t e) { return __uint_as_float((static_cast<uint32_t>(e) + 127u) << 23); }
// e^r - 1 on |r| <= 0.35 by Taylor to r^7, as r + r^2 (1/2 + r/6 + ...).
__device__ __forceinline__ float expm1_reduced(float r) {
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  return r + (r * r) * p;
}
// e^x with x clamped to [-104, 89] (beyond, the result is 0 or inf anyway); 2^k applied in two
// normal halves so the final multiply rounds once into the denormals or overflows.
__device__ __forceinline__ float exp_f32(float x) {
  x = clamp_above(clamp_below(x, -104.0f), 89.0f);
  const Reduced red = reduce_ln2(x);
  const float p = 1.0f + expm1_reduced(red.r);
  const int32_t k1 = red.k >> 1;
  const int32_t k2 = red.k - k1;
  return p * pow2i(k1) * pow2i(k2);
}
// 2^k (e^r - 1) + (2^k - 1): no cancellation near 0. Only for |x| <= 20.
__device__ __forceinline__ float expm1_f32_bounded(float x) {
  const Reduced red = reduce_ln2(x);
  const float scale = pow2i(red.k);
  return scale * expm1_reduced(red.r) + (scale - 1.0f);
}
__device__ __forceinline__ float with_sign_of(float magnitude, float sign_of) {
  return __uint_as_float(__float_as_uint(magnitude) | (__float_as_uint(sign_of) & 0x80000000u));
}
__device__ __forceinline__ float abs_f32(float x) { return __uint_as_float(__float_as_uint(x) & 0x7fffffffu); }
// tanh|x| = e / (e + 2), e = expm1(2|x|), |x| clamped to 10 (tanh rounds to 1 beyond).
__device__ __forceinline__ float tanh_f32(float x) {
  const float ax = clamp_above(abs_f32(x), 10.0f);
  const float e = expm1_f32_bounded(2.0f * ax);
  return with_sign_of(e / (e + 2.0f), x);
}
// z = e^-|x| <= 1: s = 1 / (1 + z), result s (x >= 0) or z s (x < 0); never overflows.
__device__ __forceinline__ float sigmoid_f32(float x) {
  const float z = exp_f32(-abs_f32(x));
  const float s = 1.0f / (1.0f + z);
  return x < 0.0f ? z * s : s;
}

}  // namespace vm

// ---- per-element formulas (tensor/ops/unary.cpp, binary.cpp) --------------------------------

// Integer + - * wrap modulo 2^bits: done in the unsigned type, where overflow is defined.
template <typename T>
__device__ __forceinline__ T wrap_add(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
}
template <typename T>
__device__ __forceinline__ T wrap_sub(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
}
template <typename T>
__device__ __forceinline__ T wrap_mul(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
}

template <typename T>
__device__ __forceinline__ T negate(T v) {
  if constexpr (std::is_integral_v<T>) return wrap_sub(T(0), v);
  else return -v;
}

// Round half to even, independent of the rounding mode: floor, then up when the fraction is
// above 1/2 or exactly 1/2 with an odd floor; the sign is copied back (round(-0.3) = -0).
template <typename T>
__device__ __forceinline__ T round_half_even(T v) {
  T r = floor(v);
  const T fraction = v - r;
  if (fraction > T(0.5) || (fraction == T(0.5) && fmod(r, T(2)) != T(0))) r += T(1);
  return copysign(r, v);
}

template <UnaryOp Op, typename T>
__device__ __forceinline__ auto unary_value(T v, T lo, T hi) {
  if constexpr (Op == UnaryOp::neg) return negate(v);
  else if constexpr (Op == UnaryOp::abs) {
    if constexpr (std::is_integral_v<T>) return v < T(0) ? negate(v) : v;
    else return T(fabs(v));
  } else if constexpr (Op == UnaryOp::sign) return v > T(0) ? T(1) : (v < T(0) ? T(-1) : v);
  else if constexpr (Op == UnaryOp::square) {
    if constexpr (std::is_integral_v<T>) return wrap_mul(v, v);
    else return v * v;
  } else if constexpr (Op == UnaryOp::relu) return v <= T(0) ? T(0) : v;
  else if constexpr (Op == UnaryOp::clip) return v < lo ? lo : (v > hi ? hi : v);
  else if constexpr (Op == UnaryOp::exp) {
    if constexpr (std::is_same_v<T, float>) return vm::exp_f32(v);
    else return T(exp(v));
  } else if constexpr (Op == UnaryOp::tanh) {
    if constexpr (std::is_same_v<T, float>) return vm::tanh_f32(v);
    else return T(tanh(v));
  } else if constexpr (Op == UnaryOp::sigmoid) {
    if constexpr (std::is_same_v<T, float>) {
      return vm::sigmoid_f32(v);
    } else {
      const T z = exp(-fabs(v));
      const T s = T(1) / (T(1) + z);
      return v < T(0) ? z * s : s;
    }
  } else if constexpr (Op == UnaryOp::log) return T(log(v));
  else if constexpr (Op == UnaryOp::log1p) return T(log1p(v));
  else if constexpr (Op == UnaryOp::expm1) return T(expm1(v));
  else if constexpr (Op == UnaryOp::sqrt) return T(sqrt(v));
  else if constexpr (Op == UnaryOp::rsqrt) return T(T(1) / sqrt(v));
  else if constexpr (Op == UnaryOp::reciprocal) return T(T(1) / v);
  else if constexpr (Op == UnaryOp::sin) return T(sin(v));
  else if constexpr (Op == UnaryOp::cos) return T(cos(v));
  // log(1 + e^x) = max(x, 0) + log1p(e^-|x|): the exponent is never positive.
  else if constexpr (Op == UnaryOp::softplus) return T((v > T(0) ? v : T(0)) + log1p(exp(-fabs(v))));
  // x Phi(x) = 0.5 x (1 + erf(x / sqrt 2))
  else if constexpr (Op == UnaryOp::gelu) return T(T(0.5) * v * (T(1) + erf(v * T(0.70710678118654752440))));
  // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
  else if constexpr (Op == UnaryOp::gelu_tanh)
    return T(T(0.5) * v * (T(1) + tanh(T(0.79788456080286535588) * (v + T(0.044715) * v * v * v))));
  else if constexpr (Op == UnaryOp::floor) return T(floor(v));
  else if constexpr (Op == UnaryOp::ceil) return T(ceil(v));
  else if constexpr (Op == UnaryOp::round) return round_half_even(v);
  else if constexpr (Op == UnaryOp::isnan) {
    if constexpr (std::is_floating_point_v<T>) return uint8_t(isnan(v) ? 1 : 0);
    else return uint8_t(0);
  } else if constexpr (Op == UnaryOp::isfinite) {
    if constexpr (std::is_floating_point_v<T>) return uint8_t(isfinite(v) ? 1 : 0);
    else return uint8_t(1);
  } else {
    static_assert(Op == UnaryOp::logical_not);
    return uint8_t(v == T(0) ? 1 : 0);
  }
}

// Which (op, type) pairs the tensor layer can ask for; the rest are never instantiated.
template <UnaryOp Op, typename T>
constexpr bool unary_supported() {
  constexpr bool floating = std::is_floating_point_v<T>;
  switch (Op) {
    case UnaryOp::neg: case UnaryOp::abs: case UnaryOp::sign: case UnaryOp::square: case UnaryOp::relu:
    case UnaryOp::clip:
      return !std::is_same_v<T, uint8_t>;
    case UnaryOp::isnan: case UnaryOp::isfinite: case UnaryOp::logical_not:
      return true;
    default:
      return floating;
  }
}

template <BinaryOp Op, typename T>
__device__ __forceinline__ auto binary_value(T a, T b) {
  if constexpr (Op == BinaryOp::add) {
    if constexpr (std::is_integral_v<T>) return wrap_add(a, b);
    else return a + b;
  } else if constexpr (Op == BinaryOp::sub) {
    if constexpr (std::is_integral_v<T>) return wrap_sub(a, b);
    else return a - b;
  } else if constexpr (Op == BinaryOp::mul) {
    if constexpr (std::is_integral_v<T>) return wrap_mul(a, b);
    else return a * b;
  } else if constexpr (Op == BinaryOp::div) {
    return a / b;  // floating only: div computes integers in float32
  } else if constexpr (Op == BinaryOp::pow) {
    if constexpr (std::is_floating_point_v<T>) {
      return T(pow(a, b));
    } else {
      // Exponentiation by squaring in unsigned arithmetic (wraps); b >= 0 was checked.
      using U = std::make_unsigned_t<T>;
      U result = 1, base = static_cast<U>(a), e = static_cast<U>(b);
      while (e != 0) {
        if (e & 1u) result = static_cast<U>(result * base);
        base = static_cast<U>(base * base);
        e >>= 1;
      }
      return static_cast<T>(result);
    }
  }
  // a != a is the NaN test: a NaN on either side wins.
  else if constexpr (Op == BinaryOp::maximum) return (a > b || a != a) ? a : b;
  else if constexpr (Op == BinaryOp::minimum) return (a < b || a != a) ? a : b;
  else if constexpr (Op == BinaryOp::eq) return uint8_t(a == b ? 1 : 0);
  else if constexpr (Op == BinaryOp::ne) return uint8_t(a != b ? 1 : 0);
  else if constexpr (Op == BinaryOp::lt) return uint8_t(a < b ? 1 : 0);
  else if constexpr (Op == BinaryOp::le) return uint8_t(a <= b ? 1 : 0);
  else if constexpr (Op == BinaryOp::gt) return uint8_t(a > b ? 1 : 0);
  else if constexpr (Op == BinaryOp::ge) return uint8_t(a >= b ? 1 : 0);
  else if constexpr (Op == BinaryOp::logical_and) return uint8_t(a != T(0) && b != T(0) ? 1 : 0);
  else {
    static_assert(Op == BinaryOp::logical_or);
    return uint8_t(a != T(0) || b != T(0) ? 1 : 0);
  }
}

template <BinaryOp Op, typename T>
constexpr bool binary_supported() {
  switch (Op) {
    case BinaryOp::add: case BinaryOp::sub: case BinaryOp::mul: case BinaryOp::pow:
      return !std::is_same_v<T, uint8_t>;
    case BinaryOp::div:
      return std::is_floating_point_v<T>;
    default:
      return true;
  }
}

// ---- kernels ----------------------------------------------------------------------------------

template <UnaryOp Op, typename T>
__global__ void unary_kernel(StridedArg out, bool out_contiguous, In<T> x, T lo, T hi, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    store(out, out_contiguous, i, unary_value<Op>(load(x, i), lo, hi));
}

template <BinaryOp Op, typename T>
__global__ void binary_kernel(StridedArg out, bool out_contiguous, In<T> a, In<T> b, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    store(out, out_contiguous, i, binary_value<Op>(load(a, i), load(b, i)));
}

// The packed path, for the common case of operands that are all contiguous (or a scalar, one
// element, or a repeated row of a whole number of packs) with pointers aligned to a pack: each thread moves pack_of<T>() elements per access
// (16 bytes of float32, as one float4) instead of one, so a memory-bound op issues a quarter of
// the load and store instructions and stays near the device's copy bandwidth
// (bench/bench_cuda_elementwise.cpp measures it). The n % pack_of<T>() leftover elements are
// done one each by the first threads of the grid.
template <typename T>
constexpr int pack_of() {
  return sizeof(T) >= 8 ? 2 : 4;
}

template <typename T, int N>
struct alignas(sizeof(T) * N) Pack {
  T v[N];
};

template <int N, typename T>
__device__ __forceinline__ Pack<T, N> load_pack(const In<T>& in, int64_t pack) {
  if (in.mode == kContiguous) return reinterpret_cast<const Pack<T, N>*>(in.arg.data)[pack];
  if (in.mode == kRow)  // the row's length is a multiple of N: a pack never wraps around it
    return *reinterpret_cast<const Pack<T, N>*>(static_cast<const T*>(in.arg.data) + row_offset(pack * N, in.row));
  const T v = in.mode == kScalar ? in.value : *static_cast<const T*>(in.arg.data);
  Pack<T, N> p;
#pragma unroll
  for (int e = 0; e < N; ++e) p.v[e] = v;
  return p;
}

template <UnaryOp Op, typename T, int N>
__global__ void unary_packed_kernel(void* out, In<T> x, T lo, T hi, int64_t n) {
  using R = decltype(unary_value<Op>(T{}, lo, hi));
  const int64_t packs = n / N;
  const int64_t first = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  for (int64_t p = first; p < packs; p += int64_t{gridDim.x} * blockDim.x) {
    const Pack<T, N> a = load_pack<N>(x, p);
    Pack<R, N> r;
#pragma unroll
    for (int e = 0; e < N; ++e) r.v[e] = unary_value<Op>(a.v[e], lo, hi);
    reinterpret_cast<Pack<R, N>*>(out)[p] = r;
  }
  const int64_t i = packs * N + first;  // the leftover elements
  if (i < n) static_cast<R*>(out)[i] = unary_value<Op>(load(x, i), lo, hi);
}

template <BinaryOp Op, typename T, int N>
__global__ void binary_packed_kernel(void* out, In<T> a, In<T> b, int64_t n) {
  using R = decltype(binary_value<Op>(T{}, T{}));
  const int64_t packs = n / N;
  const int64_t first = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  for (int64_t p = first; p < packs; p += int64_t{gridDim.x} * blockDim.x) {
    const Pack<T, N> x = load_pack<N>(a, p), y = load_pack<N>(b, p);
    Pack<R, N> r;
#pragma unroll
    for (int e = 0; e < N; ++e) r.v[e] = binary_value<Op>(x.v[e], y.v[e]);
    reinterpret_cast<Pack<R, N>*>(out)[p] = r;
  }
  const int64_t i = packs * N + first;
  if (i < n) static_cast<R*>(out)[i] = binary_value<Op>(load(a, i), load(b, i));
}

template <typename T>
__global__ void where_kernel(StridedArg out, bool out_contiguous, In<uint8_t> cond, In<T> a, In<T> b, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    store(out, out_contiguous, i, load(cond, i) != 0 ? load(a, i) : load(b, i));
}

// where on the packed path: the condition is read in packs of the same count (N bytes).
template <typename T, int N>
__global__ void where_packed_kernel(void* out, In<uint8_t> cond, In<T> a, In<T> b, int64_t n) {
  const int64_t packs = n / N;
  const int64_t first = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  for (int64_t p = first; p < packs; p += int64_t{gridDim.x} * blockDim.x) {
    const Pack<uint8_t, N> c = load_pack<N>(cond, p);
    const Pack<T, N> x = load_pack<N>(a, p), y = load_pack<N>(b, p);
    Pack<T, N> r;
#pragma unroll
    for (int e = 0; e < N; ++e) r.v[e] = c.v[e] != 0 ? x.v[e] : y.v[e];
    reinterpret_cast<Pack<T, N>*>(out)[p] = r;
  }
  const int64_t i = packs * N + first;
  if (i < n) static_cast<T*>(out)[i] = load(cond, i) != 0 ? load(a, i) : load(b, i);
}

// Writes 1 to *flag when an element is negative; racing writers all write the same value.
template <typename T>
__global__ void any_negative_kernel(In<T> x, int32_t* flag, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    if (load(x, i) < T(0)) *flag = 1;
}

// ---- host dispatch ------------------------------------------------------------------------------

// Calls f(std::integral_constant<E, value>) for the runtime enum value `op` in [0, count).
template <typename E, int I = 0, int Count, typename F>
void dispatch_enum(E op, F&& f) {
  if constexpr (I < Count) {
    if (static_cast<int>(op) == I) {
      f(std::integral_constant<E, static_cast<E>(I)>{});
      return;
    }
    dispatch_enum<E, I + 1, Count>(op, f);
  } else {
    CTRAX_CHECK(false, "elementwise: unknown op id ", static_cast<int>(op));
  }
}

constexpr int kUnaryCount = static_cast<int>(UnaryOp::gelu_tanh) + 1;  // gelu_tanh is the last
constexpr int kBinaryCount = static_cast<int>(BinaryOp::logical_or) + 1;

// Whether the packed kernels may run: the output contiguous and every input contiguous, a
// scalar, one element or a repeated row whose length is a whole number of packs, with every
// pointer read by packs aligned to its pack.
bool pack_aligned(const void* p, size_t pack_bytes) {
  return reinterpret_cast<uintptr_t>(p) % pack_bytes == 0;
}

// N: the pack's element count (pack_of of the op's type, also for where's bool condition).
template <typename T>
bool packable_input(const In<T>& in, int N = pack_of<T>()) {
  if (in.mode == kScalar || in.mode == kSingle) return true;
  if (in.mode == kRow && in.row % N != 0) return false;
  return (in.mode == kContiguous || in.mode == kRow) && pack_aligned(in.arg.data, sizeof(T) * N);
}

// The output's element is T, or one byte when the op writes bool.
template <typename T>
bool packable_output(const StridedArg& out, bool out_contiguous, bool gives_bool) {
  return out_contiguous && pack_aligned(out.data, (gives_bool ? 1 : sizeof(T)) * pack_of<T>());
}

const char* type_name(ElementType t) {
  switch (t) {
    case ElementType::float32: return "float32";
    case ElementType::float64: return "float64";
    case ElementType::int32: return "int32";
    case ElementType::int64: return "int64";
    case ElementType::boolean: return "bool";
  }
  return "?";
}

}  // namespace

void unary(UnaryOp op, const StridedArg& out, ElementType out_t, const StridedArg& x, ElementType x_t, double p0,
           double p1) {
  CTRAX_CHECK(out.rank == x.rank, "elementwise unary: ranks ", out.rank, " and ", x.rank);
  CTRAX_CHECK(out_t == (unary_gives_bool(op) ? ElementType::boolean : x_t), "elementwise unary: op ",
              static_cast<int>(op), " cannot write ", type_name(out_t), " from ", type_name(x_t));
  const int64_t n = device::numel(out);
  if (n == 0) return;
  const auto stream = static_cast<cudaStream_t>(current_stream());
  const bool out_contiguous = device::is_contiguous(out);
  dispatch_enum<UnaryOp, 0, kUnaryCount>(op, [&](auto op_tag) {
    constexpr UnaryOp Op = decltype(op_tag)::value;
    device::dispatch_element_type(x_t, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (unary_supported<Op, T>()) {
        constexpr int N = pack_of<T>();
        const In<T> in = tensor_in<T>(x);
        if (packable_output<T>(out, out_contiguous, unary_gives_bool(op)) && packable_input(in)) {
          unary_packed_kernel<Op, T, N><<<device::blocks_for(n / N + 1, kThreads), kThreads, 0, stream>>>(
              out.data, in, host_convert<T>(p0), host_convert<T>(p1), n);
          CTRAX_CUDA_CHECK_LAUNCH("unary_packed_kernel");
          return;
        }
        unary_kernel<Op, T><<<device::blocks_for(n, kThreads), kThreads, 0, stream>>>(
            out, out_contiguous, in, host_convert<T>(p0), host_convert<T>(p1), n);
        CTRAX_CUDA_CHECK_LAUNCH("unary_kernel");
      } else {
        CTRAX_CHECK(false, "elementwise unary: op ", static_cast<int>(op), " does not take ", type_name(x_t));
      }
    });
  });
}

namespace {

template <typename T>
void launch_binary(BinaryOp op, const StridedArg& out, const In<T>& a, const In<T>& b, ElementType t) {
  const int64_t n = device::numel(out);
  if (n == 0) return;
  const auto stream = static_cast<cudaStream_t>(current_stream());
  const bool out_contiguous = device::is_contiguous(out);
  dispatch_enum<BinaryOp, 0, kBinaryCount>(op, [&](auto op_tag) {
    constexpr BinaryOp Op = decltype(op_tag)::value;
    if constexpr (binary_supported<Op, T>()) {
      constexpr int N = pack_of<T>();
      if (packable_output<T>(out, out_contiguous, binary_gives_bool(op)) && packable_input(a) && packable_input(b)) {
        binary_packed_kernel<Op, T, N><<<device::blocks_for(n / N + 1, kThreads), kThreads, 0, stream>>>(
            out.data, a, b, n);
        CTRAX_CUDA_CHECK_LAUNCH("binary_packed_kernel");
        return;
      }
      binary_kernel<Op, T><<<device::blocks_for(n, kThreads), kThreads, 0, stream>>>(out, out_contiguous, a, b, n);
      CTRAX_CUDA_CHECK_LAUNCH("binary_kernel");
    } else {
      CTRAX_CHECK(false, "elementwise binary: op ", static_cast<int>(op), " does not take ", type_name(t));
    }
  });
}

}  // namespace

void binary(BinaryOp op, const StridedArg& out, ElementType out_t, const StridedArg& a, const StridedArg& b,
            ElementType t) {
  CTRAX_CHECK(out.rank == a.rank && out.rank == b.rank, "elementwise binary: ranks differ");
  CTRAX_CHECK(out_t == (binary_gives_bool(op) ? ElementType::boolean : t), "elementwise binary: op ",
              static_cast<int>(op), " cannot write ", type_name(out_t), " from ", type_name(t));
  device::dispatch_element_type(t, [&](auto tag) {
    using T = decltype(tag);
    launch_binary<T>(op, out, tensor_in<T>(a), tensor_in<T>(b), t);
  });
}

void binary_scalar(BinaryOp op, const StridedArg& out, ElementType out_t, const StridedArg& x, ElementType t,
                   double scalar, bool scalar_first) {
  CTRAX_CHECK(out.rank == x.rank, "elementwise binary_scalar: ranks differ");
  CTRAX_CHECK(out_t == (binary_gives_bool(op) ? ElementType::boolean : t), "elementwise binary_scalar: op ",
              static_cast<int>(op), " cannot write ", type_name(out_t), " from ", type_name(t));
  device::dispatch_element_type(t, [&](auto tag) {
    using T = decltype(tag);
    In<T> s;
    s.value = host_convert<T>(scalar);
    s.mode = kScalar;
    const In<T> v = tensor_in<T>(x);
    if (scalar_first) launch_binary<T>(op, out, s, v, t);
    else launch_binary<T>(op, out, v, s, t);
  });
}

void where(const StridedArg& out, ElementType t, const StridedArg& cond, const StridedArg& a, const StridedArg& b) {
  CTRAX_CHECK(out.rank == cond.rank && out.rank == a.rank && out.rank == b.rank, "elementwise where: ranks differ");
  const int64_t n = device::numel(out);
  if (n == 0) return;
  const auto stream = static_cast<cudaStream_t>(current_stream());
  device::dispatch_element_type(t, [&](auto tag) {
    using T = decltype(tag);
    constexpr int N = pack_of<T>();
    const bool out_contiguous = device::is_contiguous(out);
    const In<uint8_t> c = tensor_in<uint8_t>(cond);
    const In<T> x = tensor_in<T>(a), y = tensor_in<T>(b);
    if (packable_output<T>(out, out_contiguous, false) && packable_input(c, N) && packable_input(x) &&
        packable_input(y)) {
      where_packed_kernel<T, N><<<device::blocks_for(n / N + 1, kThreads), kThreads, 0, stream>>>(out.data, c, x, y, n);
      CTRAX_CUDA_CHECK_LAUNCH("where_packed_kernel");
      return;
    }
    where_kernel<T><<<device::blocks_for(n, kThreads), kThreads, 0, stream>>>(out, out_contiguous, c, x, y, n);
    CTRAX_CUDA_CHECK_LAUNCH("where_kernel");
  });
}

bool any_negative(const StridedArg& x, ElementType t, int device_index) {
  const int64_t n = device::numel(x);
  if (n == 0) return false;
  const auto stream = static_cast<cudaStream_t>(current_stream());
  int32_t* flag = static_cast<int32_t*>(allocate(sizeof(int32_t), device_index));
  int32_t host = 0;
  try {
    CTRAX_CUDA_CHECK(cudaMemsetAsync(flag, 0, sizeof(int32_t), stream));
    device::dispatch_element_type(t, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_signed_v<T>) {
        any_negative_kernel<T><<<device::blocks_for(n, kThreads), kThreads, 0, stream>>>(tensor_in<T>(x), flag, n);
        CTRAX_CUDA_CHECK_LAUNCH("any_negative_kernel");
      }
    });
    copy_device_to_host(&host, flag, sizeof(int32_t), device_index);
  } catch (...) {
    deallocate(flag, sizeof(int32_t), device_index);
    throw;
  }
  deallocate(flag, sizeof(int32_t), device_index);
  return host != 0;
}

}  // namespace ctrax::kernels::cuda
