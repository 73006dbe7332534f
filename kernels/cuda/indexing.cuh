// Device-side helpers shared by the CUDA kernels: element offsets of strided operands and the
// element conversion rule.
//
// What it is for: one definition of "linear index -> offset in a strided view" (the CUDA
// counterpart of tensor/strided_loop.h) and of the dtype conversion of tensor/convert.h, so
// that every kernel agrees with the CPU reference.
// What it is not for: host code or users (device functions, included only by the .cu files),
// or argument checks (the launchers' callers check before any kernel runs).
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>

#include "strided.h"

namespace ctrax::kernels::cuda::device {

// Offset in elements of the linear (row-major) index `linear` within `arg`.
// Division by the innermost sizes first; each step peels one axis.
__device__ __forceinline__ int64_t strided_offset(const StridedArg& arg, int64_t linear) {
  int64_t offset = 0;
  for (int d = arg.rank - 1; d >= 0; --d) {
    const int64_t size = arg.shape[d];
    const int64_t index = linear % size;
    linear /= size;
    offset += index * arg.strides[d];
  }
  return offset;
}

template <typename To, typename From>
__device__ __forceinline__ To convert(From v) {
  if constexpr (std::is_same_v<To, uint8_t>) {
    return v != From(0) ? 1 : 0;
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    if (v != v) return 0;
    if (v <= static_cast<From>(std::numeric_limits<To>::min())) return std::numeric_limits<To>::min();
    if (v >= static_cast<From>(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    return static_cast<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

// Calls f(T{}) with T the stored type of `type` (bool is stored as uint8_t), on the host.
template <typename F>
void dispatch_element_type(ElementType type, F&& f) {
  switch (type) {
    case ElementType::float32: f(float{}); break;
    case ElementType::float64: f(double{}); break;
    case ElementType::int32: f(int32_t{}); break;
    case ElementType::int64: f(int64_t{}); break;
    case ElementType::boolean: f(uint8_t{}); break;
  }
}

// Grid size for n elements at `threads` per block, capped so that grid-stride loops cover the rest.
inline unsigned blocks_for(int64_t n, int threads) {
  const int64_t blocks = (n + threads - 1) / threads;
  return static_cast<unsigned>(blocks < 65535 * 16 ? (blocks < 1 ? 1 : blocks) : 65535 * 16);
}

inline int64_t numel(const StridedArg& arg) {
  int64_t n = 1;
  for (int d = 0; d < arg.rank; ++d) n *= arg.shape[d];
  return n;
}

// True when the view is row-major without gaps (size-1 axes may have any stride).
inline bool is_contiguous(const StridedArg& arg) {
  int64_t expected = 1;
  for (int d = arg.rank - 1; d >= 0; --d) {
    if (arg.shape[d] != 1 && arg.strides[d] != expected) return false;
    expected *= arg.shape[d];
  }
  return true;
}

}  // namespace ctrax::kernels::cuda::device
