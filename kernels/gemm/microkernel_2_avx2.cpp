// Micro-kernels, version 2: AVX2 + FMA (compiled with -mavx2 -mfma).
//
// sgemm tile 6 x 16: two ymm of B per k step, 6 broadcasts of A, 12 ymm accumulators (of 16
// registers; the other 4 hold the B row and a broadcast). 12 FMAs per step keep both FMA units
// busy for 6 cycles, enough independent chains to cover the 4-5 cycle FMA latency. dgemm is
// 6 x 8 (4 doubles per ymm). Edge columns use vmaskmov with a lane mask, which never faults on
// the masked-off lanes.
#include "microkernel.h"

#include <ctrax/kernels/check.h>

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
  static void store(T* p, V v) { _mm256_storeu_ps(p, v); }
  static void store_masked(T* p, Mask m, V v) { _mm256_maskstore_ps(p, m, v); }
  static Mask mask_first(int lanes) {
    return _mm256_load_si256(reinterpret_cast<const __m256i*>(kLaneMasks[lanes]));
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
  static void store(T* p, V v) { _mm256_storeu_pd(p, v); }
  static void store_masked(T* p, Mask m, V v) { _mm256_maskstore_pd(p, m, v); }
  // A double lane is two 32-bit mask entries; vmaskmovpd reads the top bit of each 64-bit lane.
  static Mask mask_first(int lanes) {
    return _mm256_load_si256(reinterpret_cast<const __m256i*>(kLaneMasks[2 * lanes]));
  }
};

#include "microkernel_body.h"

constexpr int kMR = 6;

}  // namespace

KernelSpec<float> avx2_sgemm_kernel() {
  return {GemmIsa::avx2, kMR, 16, /*mc=*/144, /*kc=*/256, /*nc=*/4096, &tile_dispatch<F32x8, kMR, 2>};
}

KernelSpec<double> avx2_dgemm_kernel() {
  return {GemmIsa::avx2, kMR, 8, /*mc=*/144, /*kc=*/256, /*nc=*/2048, &tile_dispatch<F64x4, kMR, 2>};
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
