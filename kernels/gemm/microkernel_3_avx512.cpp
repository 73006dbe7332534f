// Micro-kernels, version 3: AVX-512 (compiled with -mavx512f -mavx512vl -mavx512dq -mfma).
//
// sgemm tile 12 x 32: two zmm of B per k step, 12 broadcasts of A, 24 zmm accumulators
// (of 32 registers). Per k step that is 24 FMAs against 14 loads; with two 512-bit FMA units
// the FMAs take 12 cycles, which leaves the load ports room and hides the 4-cycle FMA latency
// behind 24 independent accumulators. dgemm uses the same shape with 8 doubles per zmm
// (12 x 16). Edge columns use AVX-512 lane masks (free on loads and stores).
#include "microkernel.h"

#include <ctrax/kernels/check.h>

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
  static void store(T* p, V v) { _mm512_storeu_ps(p, v); }
  static void store_masked(T* p, Mask m, V v) { _mm512_mask_storeu_ps(p, m, v); }
  static Mask mask_first(int lanes) { return static_cast<Mask>((1u << lanes) - 1u); }
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
  static void store(T* p, V v) { _mm512_storeu_pd(p, v); }
  static void store_masked(T* p, Mask m, V v) { _mm512_mask_storeu_pd(p, m, v); }
  static Mask mask_first(int lanes) { return static_cast<Mask>((1u << lanes) - 1u); }
};

#include "microkernel_body.h"

constexpr int kSgemmMR = 12;
constexpr int kDgemmMR = 12;

}  // namespace

KernelSpec<float> avx512_sgemm_kernel() {
  return {GemmIsa::avx512, kSgemmMR, 32, /*mc=*/240, /*kc=*/256, /*nc=*/4096,
          &tile_dispatch<F32x16, kSgemmMR, 2>};
}

KernelSpec<double> avx512_dgemm_kernel() {
  return {GemmIsa::avx512, kDgemmMR, 16, /*mc=*/240, /*kc=*/256, /*nc=*/2048,
          &tile_dispatch<F64x8, kDgemmMR, 2>};
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
