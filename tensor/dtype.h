// Element types of a tensor and the rules for combining them.
//
// What it is for: naming the five dtypes ctrax supports and deciding the dtype of an op's
// result. What it is not for: conversions of values (Tensor::to(DType) does that).
//
// Promotion rules (used by every binary op; documented in README and tested):
//   - order of categories: bool < integer < floating;
//   - the result takes the higher category; within a category, the wider type
//     (int32 + int64 -> int64, float32 + float64 -> float64);
//   - integer with floating gives that floating type, whatever the widths
//     (int64 + float32 -> float32). This follows PyTorch and JAX rather than NumPy (which
//     would give float64) so that a float32 model never silently becomes float64.
//   - a C++ scalar is "weak": it never widens a tensor of its own category
//     (float32 tensor * 2.0 stays float32); a floating scalar with an integer or bool tensor
//     gives float32.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>

namespace ctrax {

enum class DType : uint8_t { float32, float64, int32, int64, boolean };

inline constexpr int kDTypeCount = 5;

// Bytes per element. Inline: every op asks, so it must cost nothing.
inline size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::float64:
    case DType::int64: return 8;
    case DType::boolean: return 1;
    default: return 4;
  }
}
const char* dtype_name(DType dtype);
inline bool is_floating(DType d) { return d == DType::float32 || d == DType::float64; }
inline bool is_integer(DType d) { return d == DType::int32 || d == DType::int64; }
inline bool is_bool(DType d) { return d == DType::boolean; }

// The dtype of a binary op's result on tensors of dtypes a and b (rules above).
DType promote_types(DType a, DType b);

std::ostream& operator<<(std::ostream& out, DType dtype);

// The C++ type stored for each dtype. bool is stored as one byte (uint8_t 0 or 1) so
// that tensors of bool have a well-defined memory layout.
template <DType D> struct dtype_traits;
template <> struct dtype_traits<DType::float32> { using type = float; };
template <> struct dtype_traits<DType::float64> { using type = double; };
template <> struct dtype_traits<DType::int32> { using type = int32_t; };
template <> struct dtype_traits<DType::int64> { using type = int64_t; };
template <> struct dtype_traits<DType::boolean> { using type = uint8_t; };

// The dtype of a C++ element type (float -> float32, bool or uint8_t -> boolean, ...).
template <typename T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::float32; }
template <> constexpr DType dtype_of<double>() { return DType::float64; }
template <> constexpr DType dtype_of<int32_t>() { return DType::int32; }
template <> constexpr DType dtype_of<int64_t>() { return DType::int64; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::boolean; }
template <> constexpr DType dtype_of<bool>() { return DType::boolean; }

// Calls f with a value of the C++ type of `dtype` (a tag), e.g.
//   dispatch_dtype(t.dtype(), [&](auto tag) { using T = decltype(tag); ... });
template <typename F>
decltype(auto) dispatch_dtype(DType dtype, F&& f) {
  switch (dtype) {
    case DType::float32: return f(float{});
    case DType::float64: return f(double{});
    case DType::int32: return f(int32_t{});
    case DType::int64: return f(int64_t{});
    case DType::boolean: return f(uint8_t{});
  }
  return f(float{});  // unreachable: every enumerator is handled above
}

// Like dispatch_dtype but only for float32/float64.
template <typename F>
decltype(auto) dispatch_floating(DType dtype, F&& f) {
  if (dtype == DType::float64) return f(double{});
  return f(float{});
}

}  // namespace ctrax
