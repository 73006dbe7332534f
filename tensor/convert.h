// convert: how one element value is converted between stored types; shared by Tensor::to,
// copy_, item and the creation functions so that every conversion follows one rule.
//
// Floating to integer truncates toward zero and saturates at the integer range; NaN becomes
// 0 (a plain cast would be undefined behaviour). Anything to bool is (x != 0).
//
// What it is not for: dtype promotion (which dtype an op's result has: dtype.h) or rounding
// to nearest (floating to integer truncates).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace ctrax::detail {

template <typename To, typename From>
inline To convert(From v) {
  if constexpr (std::is_same_v<To, uint8_t>) {
    return v != From(0) ? 1 : 0;
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    if (std::isnan(v)) return 0;
    if (v <= static_cast<From>(std::numeric_limits<To>::min())) return std::numeric_limits<To>::min();
    if (v >= static_cast<From>(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    return static_cast<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

}  // namespace ctrax::detail
