// Micro-kernels, version 3: AVX-512 (compiled with -mavx512f -mavx512vl -mavx512dq -mfma).
//
// sgemm tile 6 x 64: four zmm of B per k step, 6 broadcasts of A, 24 zmm accumulators (of 32
// registers). Per k step that is 24 FMAs against 10 loads, with 24 independent accumulators to
// hide the FMA latency. Version 3 first used 12 x 32 (two zmm of B, 12 broadcasts, 14 loads);
// 6 x 64 does the same FMAs per tile with fewer loads, reads a row-major A in place through 6
// row pointers instead of 12 (12 did not fit the general registers beside the loop's own), and
// covers a 64-wide C, the hidden width of the small RL networks, in one column panel, so A is
// read once. Each element's arithmetic (the k order, the kc blocks) is the same, so the bits
// are. Measured on Zen 4, one thread, bench_gemm medians: [256, 64] x [64, 64] 19.8 -> 18.6 us,
// 64^3 5.0 -> 4.7 us, 128^3 38.8 -> 37.0 us, 256^3 to 1024^3 unchanged within noise; in the
// plans, with their epilogues (TSC cycles): bias + relu 51,900 -> 49,700, relu's mask 53,400 ->
// 50,200. dgemm keeps 12 x 16 (two zmm of 8 doubles). Edge columns use AVX-512 lane masks (free
// on loads and stores).
#include "microkernel.h"

#include "../../base/error.h"

#if defined(__AVX512F__) && defined(__AVX512VL__) && defined(__AVX512DQ__) && defined(__FMA__)
#include <immintrin.h>
#endif

namespace ctrax::kernels::gemm_detail {

#if defined(__AVX512F__) && defined(__AVX512VL__) && defined(__AVX512DQ__) && defined(__FMA__)

namespace {

struct F32x16 {
  using T = float;
  using V = __m512;
  using Mask = __mmask16;
  static constexpr int W = 16;
  static V zero() { return _mm512_setzero_ps(); }
  static V load(const T* p) { return _mm512_loadu_ps(p); }
  static V load_masked(const T* p, Mask m) { return _mm512_maskz_loadu_ps(m, p); }
  static V broadcast(const T* p) { return _mm512_set1_ps(*p); }
  static V set1(T x) { return _mm512_set1_ps(x); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  // x <= 0 ? +0 : x (an ordered compare: NaN stays NaN).
  static V relu(V x) { return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, zero(), _CMP_LE_OQ), x, zero()); }
  // m > 0 ? x : +0 (ordered: a NaN m gives 0).
  static V where_positive(V m, V x) { return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(m, zero(), _CMP_GT_OQ), x); }
  static void store(T* p, V v) { _mm512_storeu_ps(p, v); }
  static void store_masked(T* p, Mask m, V v) { _mm512_mask_storeu_ps(p, m, v); }
  static Mask mask_first(int lanes) { return static_cast<Mask>((1u << lanes) - 1u); }
  // Halving tree: lanes l and l + 8, l and l + 4, l and l + 2, then 0 and 1. (The maskz extracts
  // because GCC 12's plain ones and the cast warn about its undefined pass-through operand.)
  static T reduce_add(V v) {
    const __m256 s8 = _mm256_add_ps(_mm512_maskz_extractf32x8_ps(0xff, v, 0),
                                    _mm512_maskz_extractf32x8_ps(0xff, v, 1));
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
  }
  // 128-bit blocks Imm picks from a (low half) and b (high half), as vshuff32x4.
  template <int Imm>
  static V blocks(V a, V b) {
    return _mm512_maskz_shuffle_f32x4(0xffff, a, b, Imm);
  }
  // Four reduce_adds at once, each sum through the same tree, the vectors transposed into each
  // other's free lanes between the steps so every shuffle and add serves all four.
  static void reduce_add4(const V* v, T* sums) {
    // 128-bit blocks (a0 + a2, a1 + a3, b0 + b2, b1 + b3): lanes l + (l + 8) of a and b.
    const V ab = _mm512_add_ps(blocks<0x44>(v[0], v[1]), blocks<0xee>(v[0], v[1]));
    const V cd = _mm512_add_ps(blocks<0x44>(v[2], v[3]), blocks<0xee>(v[2], v[3]));
    // Block q holds the 4 lanes l + (l + 4) of vector q.
    const V s4 = _mm512_add_ps(blocks<0x88>(ab, cd), blocks<0xdd>(ab, cd));
    // Within each block: lanes l + (l + 2), then lane 0 + lane 1.
    const V s2 = _mm512_add_ps(s4, _mm512_maskz_permute_ps(0xffff, s4, 0x4e));
    const V s1 = _mm512_add_ps(s2, _mm512_maskz_permute_ps(0xffff, s2, 0xb1));
    alignas(64) T lanes[16];
    _mm512_store_ps(lanes, s1);
    sums[0] = lanes[0], sums[1] = lanes[4], sums[2] = lanes[8], sums[3] = lanes[12];
  }
};

struct F64x8 {
  using T = double;
  using V = __m512d;
  using Mask = __mmask8;
  static constexpr int W = 8;
  static V zero() { return _mm512_setzero_pd(); }
  static V load(const T* p) { return _mm512_loadu_pd(p); }
  static V load_masked(const T* p, Mask m) { return _mm512_maskz_loadu_pd(m, p); }
  static V broadcast(const T* p) { return _mm512_set1_pd(*p); }
  static V set1(T x) { return _mm512_set1_pd(x); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_pd(a, b, c); }
  static V mul(V a, V b) { return _mm512_mul_pd(a, b); }
  static V add(V a, V b) { return _mm512_add_pd(a, b); }
  static V relu(V x) { return _mm512_mask_blend_pd(_mm512_cmp_pd_mask(x, zero(), _CMP_LE_OQ), x, zero()); }
  static V where_positive(V m, V x) { return _mm512_maskz_mov_pd(_mm512_cmp_pd_mask(m, zero(), _CMP_GT_OQ), x); }
  static void store(T* p, V v) { _mm512_storeu_pd(p, v); }
  static void store_masked(T* p, Mask m, V v) { _mm512_mask_storeu_pd(p, m, v); }
  static Mask mask_first(int lanes) { return static_cast<Mask>((1u << lanes) - 1u); }
  // Halving tree: lanes l and l + 4, l and l + 2, then 0 and 1.
  static T reduce_add(V v) {
    const __m256d s4 = _mm256_add_pd(_mm512_maskz_extractf64x4_pd(0xf, v, 0),
                                     _mm512_maskz_extractf64x4_pd(0xf, v, 1));
    const __m128d s = _mm_add_pd(_mm256_castpd256_pd128(s4), _mm256_extractf128_pd(s4, 1));
    return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
  }
  template <int Imm>
  static V blocks(V a, V b) {
    return _mm512_maskz_shuffle_f64x2(0xff, a, b, Imm);
  }
  // Four reduce_adds at once (same tree per sum, see F32x16::reduce_add4).
  static void reduce_add4(const V* v, T* sums) {
    // 128-bit blocks (a0 + a2, a1 + a3, b0 + b2, b1 + b3), two doubles each: lanes l + (l + 4).
    const V ab = _mm512_add_pd(blocks<0x44>(v[0], v[1]), blocks<0xee>(v[0], v[1]));
    const V cd = _mm512_add_pd(blocks<0x44>(v[2], v[3]), blocks<0xee>(v[2], v[3]));
    // Block q holds lanes l + (l + 2) of vector q; then lane 0 + lane 1 within each block.
    const V s2 = _mm512_add_pd(blocks<0x88>(ab, cd), blocks<0xdd>(ab, cd));
    const V s1 = _mm512_add_pd(s2, _mm512_maskz_permute_pd(0xff, s2, 0x55));
    alignas(64) T lanes[8];
    _mm512_store_pd(lanes, s1);
    sums[0] = lanes[0], sums[1] = lanes[2], sums[2] = lanes[4], sums[3] = lanes[6];
  }
};

#include "microkernel_body.h"
#include "narrow_body.h"
#include "small_k_body.h"

constexpr int kSgemmMR = 6;
constexpr int kDgemmMR = 12;

}  // namespace

KernelSpec<float> avx512_sgemm_kernel() {
  return {GemmIsa::avx512, kSgemmMR, 64, /*mc=*/240, /*kc=*/256, /*nc=*/4096,
          &tile_dispatch<F32x16, kSgemmMR, 4>, &narrow_dispatch<F32x16>, &small_k_dispatch<F32x16>};
}

KernelSpec<double> avx512_dgemm_kernel() {
  return {GemmIsa::avx512, kDgemmMR, 16, /*mc=*/240, /*kc=*/256, /*nc=*/2048,
          &tile_dispatch<F64x8, kDgemmMR, 2>, &narrow_dispatch<F64x8>, &small_k_dispatch<F64x8>};
}

#else  // compiled without the ISA flags (not x86-64, or another compiler): never selected,
      // because gemm_isa_supported() is false wherever these flags are not applied.

KernelSpec<float> avx512_sgemm_kernel() {
  CTRAX_THROW("the avx512 GEMM micro-kernel was not compiled into this build");
}
KernelSpec<double> avx512_dgemm_kernel() {
  CTRAX_THROW("the avx512 GEMM micro-kernel was not compiled into this build");
}

#endif

}  // namespace ctrax::kernels::gemm_detail
