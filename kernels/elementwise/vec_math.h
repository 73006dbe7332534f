// Branch-free float32 exp, expm1, tanh, sigmoid, softplus and log that compilers can vectorise.
//
// What it is for: the per-element maths of the hot float32 activations. Each function is
// straight-line code (selects, no branches, no calls into libm, no float -> int casts), so a
// loop over it auto-vectorises at whatever width the enclosing function is compiled for
// (SSE2, AVX2 or AVX-512; see elementwise.cpp). The same functions are used for strided
// inputs by the tensor ops, so every path gives the same result up to FMA contraction.
//
// What it is not for: float64 (std::exp and friends are used there) or arguments outside
// the documented ranges of the *_bounded helpers.
//
// Measured accuracy against double-precision std:: functions (tests/kernels/
// test_elementwise_kernels.cpp sweeps ~10^5 points per function plus the extremes, +-inf, NaN
// and denormals, on every ISA variant, and bounds the error at 1.5 / 3 / 3 ulp):
//   exp_f32 0.99 ulp on normal results (denormal results: within one denormal step);
//   tanh_f32 2.14 ulp; sigmoid_f32 2.18 ulp; softplus_f32 2.02 ulp; log_f32 0.80 ulp over every binade,
//   subnormal arguments included (the same test, 2026-12-05).
#pragma once

#include <bit>
#include <cstdint>

namespace ctrax::kernels::vec_math {

// NaN-preserving clamps: a comparison with NaN is false, so NaN falls through unchanged.
inline float clamp_below(float x, float lo) { return x < lo ? lo : x; }
inline float clamp_above(float x, float hi) { return x > hi ? hi : x; }

// Range reduction shared by exp and expm1: x = k ln2 + r with k = round(x / ln2), |r| <= ln2/2
// (a hair more from the rounding of x / ln2). Adding 1.5 * 2^23 rounds x / ln2 to an integer in
// float arithmetic and leaves k in the low mantissa bits, so no float -> int conversion is
// needed (which would be undefined behaviour for NaN in C++). ln2 is split Cody-Waite style
// into a hi part with 12 trailing zero bits (k * ln2_hi is exact for |k| < 2^12) and a lo
// correction, so r keeps full relative precision.
struct Reduced {
  float r;
  int32_t k;
};
inline Reduced reduce_ln2(float x) {
  constexpr float kShifter = 12582912.0f;          // 1.5 * 2^23
  constexpr float kLog2e = 1.44269504088896341f;   // 1 / ln 2
  constexpr float kLn2Hi = 0.693145751953125f;     // ln 2 rounded to 12 significant bits
  constexpr float kLn2Lo = 1.428606765330187e-06f; // ln 2 - kLn2Hi
  const float t = x * kLog2e + kShifter;
  const float kf = t - kShifter;
  // Unsigned subtraction wraps (defined); the value is k whenever x is a number.
  const auto k = static_cast<int32_t>(std::bit_cast<uint32_t>(t) - std::bit_cast<uint32_t>(kShifter));
  return {(x - kf * kLn2Hi) - kf * kLn2Lo, k};
}

// 2^e for e in [-126, 127] built from the exponent bits (unsigned arithmetic, so a garbage e
// from a NaN argument is harmless: the NaN carries through the other factor).
inline float pow2i(int32_t e) { return std::bit_cast<float>((static_cast<uint32_t>(e) + 127u) << 23); }

// e^r - 1 on |r| <= 0.35 by its Taylor series to r^7: the first omitted term, r^8/8!, is below
// 5.2e-9, i.e. < 0.1 ulp of the result; Horner keeps the rounding error near 1 ulp. Written
// as r + r^2 (1/2 + r/6 + ...) so that it stays relatively accurate as r -> 0.
inline float expm1_reduced(float r) {
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  return r + (r * r) * p;
}

// e^x. Arguments are clamped to [-104, 89]: below -103.97 the result underflows to 0 and above
// 88.72 it overflows to inf, so the clamp changes nothing but keeps k small. The scale 2^k
// (k in [-150, 129]) is applied as 2^(k/2) * 2^(k - k/2) so that both factors are normal
// floats; the last multiplication rounds once into the denormal range or overflows to inf.
inline float exp_f32(float x) {
  x = clamp_above(clamp_below(x, -104.0f), 89.0f);
  const Reduced red = reduce_ln2(x);
  const float p = 1.0f + expm1_reduced(red.r);
  const int32_t k1 = red.k >> 1;  // arithmetic shift (defined in C++20)
  const int32_t k2 = red.k - k1;
  return p * pow2i(k1) * pow2i(k2);
}

// e^x - 1 for x in [-20, 20] only (tanh's range): 2^k (e^r - 1) + (2^k - 1). The second term
// is exact and the first carries the relative accuracy of expm1_reduced, so there is no
// cancellation near 0 (where k = 0 and the result is e^r - 1 itself).
inline float expm1_f32_bounded(float x) {
  const Reduced red = reduce_ln2(x);
  const float scale = pow2i(red.k);
  return scale * expm1_reduced(red.r) + (scale - 1.0f);
}

// Copies the sign bit of `sign_of` onto the non-negative `magnitude`.
inline float with_sign_of(float magnitude, float sign_of) {
  const uint32_t sign = std::bit_cast<uint32_t>(sign_of) & 0x80000000u;
  return std::bit_cast<float>(std::bit_cast<uint32_t>(magnitude) | sign);
}
inline float abs_f32(float x) { return std::bit_cast<float>(std::bit_cast<uint32_t>(x) & 0x7fffffffu); }

// tanh|x| = e / (e + 2) with e = expm1(2|x|): no cancellation for small |x| (unlike
// 1 - 2 / (e^2x + 1)). |x| is clamped to 10, past which tanh rounds to 1 in float32
// (1 - tanh(10) = 4e-9 < half an ulp of 1). The sign is copied back, so tanh(-0) = -0.
inline float tanh_f32(float x) {
  const float ax = clamp_above(abs_f32(x), 10.0f);
  const float e = expm1_f32_bounded(2.0f * ax);
  return with_sign_of(e / (e + 2.0f), x);
}

// sigmoid(x) = 1 / (1 + e^-x) for x >= 0 and e^x / (1 + e^x) for x < 0, written with
// z = e^-|x| <= 1 so neither form can overflow: s = 1 / (1 + z), result s or z * s.
inline float sigmoid_f32(float x) {
  const float z = exp_f32(-abs_f32(x));
  const float s = 1.0f / (1.0f + z);
  return x < 0.0f ? z * s : s;
}

// log(1 + z) for z in [0, 1] only (softplus's range): 2 atanh(s) with s = z / (2 + z) in
// [0, 1/3], by its odd series 2 s (1 + w/3 + w^2/5 + ... + w^7/15), w = s^2 <= 1/9. The first
// omitted term, w^8 / 17, is below 1.5e-9 relative (< 0.03 ulp). The rounding error of 2 + z is
// recovered exactly (Fast2Sum: 2 >= z) and s corrected by it, which keeps s within about half
// an ulp (1.6 ulp for the result, against 1.9 without). There is no cancellation as z -> 0;
// below 2^-100, log1p z rounds to z itself, which is returned (dividing a denormal z by 2
// would drop its last bit).
inline float log1p_unit_f32(float z) {
  const float d = 2.0f + z;
  const float d_error = z - (d - 2.0f);  // d + d_error = 2 + z exactly
  float s = z / d;
  s = s - s * (d_error / d);              // z / (2 + z) = (z / d) / (1 + d_error / d)
  const float w = s * s;
  float p = 1.0f / 15.0f;
  p = p * w + 1.0f / 13.0f;
  p = p * w + 1.0f / 11.0f;
  p = p * w + 1.0f / 9.0f;
  p = p * w + 1.0f / 7.0f;
  p = p * w + 1.0f / 5.0f;
  p = p * w + 1.0f / 3.0f;
  const float series = (2.0f * s) + (2.0f * s) * (w * p);
  return z < 0x1p-100f ? z : series;
}

// softplus(x) = log(1 + e^x) = max(x, 0) + log1p(e^-|x|): the exponent is never positive, so
// nothing overflows, and for large |x| the result is max(x, 0) exactly. NaN stays NaN (the
// log1p term carries it); softplus(-inf) = 0, softplus(inf) = inf.
inline float softplus_f32(float x) {
  const float positive = x > 0.0f ? x : 0.0f;
  return positive + log1p_unit_f32(exp_f32(-abs_f32(x)));
}

// log x. x = 2^e m with m in [sqrt(1/2), sqrt(2)) read from the bits: subtracting the bits of
// sqrt(1/2) leaves e in the exponent field and m's mantissa below it (a subnormal x is first
// scaled by 2^23, exactly). With f = m - 1 (exact: m is within a factor 2 of 1) and s = f / (2 + f),
// |s| <= 0.172, log m = 2 atanh(s) = f - (f^2/2 - s (f^2/2 + R)), R = 2 s^2 (1/3 + s^2/5 + ...)
// to s^10 (the first omitted term is below 1e-10 of s, far under half an ulp): the exact f carries
// the result and the rest is a small correction, so there is no cancellation as x -> 1. Then
// e ln 2 is added with ln 2 split as in reduce_ln2 (e ln2_hi exact). log(+0) = log(-0) = -inf,
// log(+inf) = +inf, log(x < 0) = NaN, and NaN stays NaN.
inline float log_f32(float x) {
  constexpr float kLn2Hi = 0.693145751953125f;     // ln 2 rounded to 12 significant bits
  constexpr float kLn2Lo = 1.428606765330187e-06f; // ln 2 - kLn2Hi
  constexpr uint32_t kSqrtHalfBits = 0x3f3504f3u;  // the bits of sqrt(1/2) rounded to float
  const bool subnormal = x < 0x1p-126f;  // also 0 and negatives, which the selects below replace
  const float scaled = subnormal ? x * 0x1p23f : x;
  const uint32_t offset = std::bit_cast<uint32_t>(scaled) - kSqrtHalfBits;
  // Arithmetic shift of the wrapped difference (defined in C++20): the exponent e of m's scale.
  const int32_t e = (static_cast<int32_t>(offset) >> 23) - (subnormal ? 23 : 0);
  const float m = std::bit_cast<float>((offset & 0x007fffffu) + kSqrtHalfBits);
  const float f = m - 1.0f;
  const float s = f / (2.0f + f);
  const float w = s * s;
  float r = 2.0f / 11.0f;
  r = r * w + 2.0f / 9.0f;
  r = r * w + 2.0f / 7.0f;
  r = r * w + 2.0f / 5.0f;
  r = r * w + 2.0f / 3.0f;
  r = r * w;
  const float half_f_sq = 0.5f * f * f;
  const float k = static_cast<float>(e);
  float result = k * kLn2Hi + (f - (half_f_sq - (s * (half_f_sq + r) + k * kLn2Lo)));
  constexpr float kInf = __builtin_inff();
  result = x == kInf ? kInf : result;
  result = x == 0.0f ? -kInf : result;
  result = x < 0.0f ? __builtin_nanf("") : result;
  return x != x ? x : result;
}

}  // namespace ctrax::kernels::vec_math
