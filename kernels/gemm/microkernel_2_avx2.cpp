// Micro-kernels, version 2: AVX2 + FMA (compiled with -mavx2 -mfma).
//
// sgemm tile 6 x 16: two ymm of B per k step, 6 broadcasts of A, 12 ymm accumulators (of 16
// registers; the other 4 hold the B row and a broadcast). 12 FMAs per step keep both FMA units
// busy for 6 cycles, enough independent chains to cover the 4-5 cycle FMA latency. dgemm is
// 6 x 8 (4 doubles per ymm). Edge columns use vmaskmov with a lane mask, which never faults on
// the masked-off lanes.
#include "microkernel.h"

#include "../../base/error.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

namespace ctrax::kernels::gemm_detail {

#if defined(__AVX2__) && defined(__FMA__)

namespace {

// Lane masks for vmaskmov: entry k has its first k lanes set (all bits of a 32-bit lane).
alignas(32) constexpr int32_t kLaneMasks[9][8] = {
    {0, 0, 0, 0, 0, 0, 0, 0},         {-1, 0, 0, 0, 0, 0, 0, 0},       {-1, -1, 0, 0, 0, 0, 0, 0},
    {-1, -1, -1, 0, 0, 0, 0, 0},      {-1, -1, -1, -1, 0, 0, 0, 0},    {-1, -1, -1, -1, -1, 0, 0, 0},
    {-1, -1, -1, -1, -1, -1, 0, 0},   {-1, -1, -1, -1, -1, -1, -1, 0}, {-1, -1, -1, -1, -1, -1, -1, -1}};

struct F32x8 {
  using T = float;
  using V = __m256;
  using Mask = __m256i;
  static constexpr int W = 8;
  static V zero() { return _mm256_setzero_ps(); }
  static V load(const T* p) { return _mm256_loadu_ps(p); }
  static V load_masked(const T* p, Mask m) { return _mm256_maskload_ps(p, m); }
  static V broadcast(const T* p) { return _mm256_broadcast_ss(p); }
  static V set1(T x) { return _mm256_set1_ps(x); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  // x <= 0 ? +0 : x (an ordered compare: NaN stays NaN).
  static V relu(V x) { return _mm256_blendv_ps(x, zero(), _mm256_cmp_ps(x, zero(), _CMP_LE_OQ)); }
  // m > 0 ? x : +0 (ordered: a NaN m gives 0).
  static V where_positive(V m, V x) { return _mm256_and_ps(x, _mm256_cmp_ps(m, zero(), _CMP_GT_OQ)); }
  static void store(T* p, V v) { _mm256_storeu_ps(p, v); }
  static void store_masked(T* p, Mask m, V v) { _mm256_maskstore_ps(p, m, v); }
  static Mask mask_first(int lanes) {
    return _mm256_load_si256(reinterpret_cast<const __m256i*>(kLaneMasks[lanes]));
  }
  // Halving tree: lanes l and l + 4, then l and l + 2, then 0 and 1.
  static T reduce_add(V v) { return sum4(_mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1))); }
  static T sum4(__m128 s) {
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
  }
  // Four reduce_adds at once, each sum through the same tree, the vectors transposed into each
  // other's free lanes between the steps so every shuffle and add serves all four.
  static void reduce_add4(const V* v, T* sums) {
    // (a[l] + a[l+4] | b[l] + b[l+4]) and likewise for c, d.
    const V ab = _mm256_add_ps(_mm256_permute2f128_ps(v[0], v[1], 0x20), _mm256_permute2f128_ps(v[0], v[1], 0x31));
    const V cd = _mm256_add_ps(_mm256_permute2f128_ps(v[2], v[3], 0x20), _mm256_permute2f128_ps(v[2], v[3], 0x31));
    // Lanes (0, 1 | 4, 5) = a, b lanes l + (l + 2); lanes (2, 3 | 6, 7) = c, d.
    const V s2 = _mm256_add_ps(_mm256_shuffle_ps(ab, cd, 0x44), _mm256_shuffle_ps(ab, cd, 0xee));
    // Lane 0: a, lane 2: c, lane 4: b, lane 6: d.
    const V s1 = _mm256_add_ps(s2, _mm256_permute_ps(s2, 0xb1));
    alignas(32) T lanes[8];
    _mm256_store_ps(lanes, s1);
    sums[0] = lanes[0], sums[1] = lanes[4], sums[2] = lanes[2], sums[3] = lanes[6];
  }
};

struct F64x4 {
  using T = double;
  using V = __m256d;
  using Mask = __m256i;
  static constexpr int W = 4;
  static V zero() { return _mm256_setzero_pd(); }
  static V load(const T* p) { return _mm256_loadu_pd(p); }
  static V load_masked(const T* p, Mask m) { return _mm256_maskload_pd(p, m); }
  static V broadcast(const T* p) { return _mm256_broadcast_sd(p); }
  static V set1(T x) { return _mm256_set1_pd(x); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_pd(a, b, c); }
  static V mul(V a, V b) { return _mm256_mul_pd(a, b); }
  static V add(V a, V b) { return _mm256_add_pd(a, b); }
  static V relu(V x) { return _mm256_blendv_pd(x, zero(), _mm256_cmp_pd(x, zero(), _CMP_LE_OQ)); }
  static V where_positive(V m, V x) { return _mm256_and_pd(x, _mm256_cmp_pd(m, zero(), _CMP_GT_OQ)); }
  static void store(T* p, V v) { _mm256_storeu_pd(p, v); }
  static void store_masked(T* p, Mask m, V v) { _mm256_maskstore_pd(p, m, v); }
  // A double lane is two 32-bit mask entries; vmaskmovpd reads the top bit of each 64-bit lane.
  static Mask mask_first(int lanes) {
    return _mm256_load_si256(reinterpret_cast<const __m256i*>(kLaneMasks[2 * lanes]));
  }
  // Halving tree: lanes l and l + 2, then 0 and 1.
  static T reduce_add(V v) { return sum2(_mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1))); }
  static T sum2(__m128d s) { return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s))); }
  // Four reduce_adds at once (same tree per sum, see F32x8::reduce_add4).
  static void reduce_add4(const V* v, T* sums) {
    const V ab = _mm256_add_pd(_mm256_permute2f128_pd(v[0], v[1], 0x20), _mm256_permute2f128_pd(v[0], v[1], 0x31));
    const V cd = _mm256_add_pd(_mm256_permute2f128_pd(v[2], v[3], 0x20), _mm256_permute2f128_pd(v[2], v[3], 0x31));
    // (a0 + a1, c0 + c1 | b0 + b1, d0 + d1): unpacklo/hi pair lane 0 with lane 1 of each half.
    const V s = _mm256_add_pd(_mm256_unpacklo_pd(ab, cd), _mm256_unpackhi_pd(ab, cd));
    alignas(32) T lanes[4];
    _mm256_store_pd(lanes, s);
    sums[0] = lanes[0], sums[1] = lanes[2], sums[2] = lanes[1], sums[3] = lanes[3];
  }
};

#include "microkernel_body.h"
#include "narrow_body.h"
#include "small_k_body.h"

constexpr int kMR = 6;

}  // namespace

KernelSpec<float> avx2_sgemm_kernel() {
  return {GemmIsa::avx2, kMR, 16, /*mc=*/144, /*kc=*/256, /*nc=*/4096, &tile_dispatch<F32x8, kMR, 2>,
          &narrow_dispatch<F32x8>, &small_k_dispatch<F32x8>};
}

KernelSpec<double> avx2_dgemm_kernel() {
  return {GemmIsa::avx2, kMR, 8, /*mc=*/144, /*kc=*/256, /*nc=*/2048, &tile_dispatch<F64x4, kMR, 2>,
          &narrow_dispatch<F64x4>, &small_k_dispatch<F64x4>};
}

#else  // compiled without the ISA flags (not x86-64, or another compiler): never selected,
      // because gemm_isa_supported() is false wherever these flags are not applied.

KernelSpec<float> avx2_sgemm_kernel() {
  CTRAX_THROW("the avx2 GEMM micro-kernel was not compiled into this build");
}
KernelSpec<double> avx2_dgemm_kernel() {
  CTRAX_THROW("the avx2 GEMM micro-kernel was not compiled into this build");
}

#endif

}  // namespace ctrax::kernels::gemm_detail
