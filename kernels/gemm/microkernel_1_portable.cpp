// Micro-kernels, version 1: portable C++ (baseline x86-64, or any CPU).
//
// The reference for the vector kernels and the fallback for CPUs without AVX2. The "vector"
// is one scalar, so the shared tile loop becomes a 4 x 4 block of scalar accumulators that
// the compiler keeps in registers. a * b + c is written out (not std::fma) so a CPU without
// FMA hardware does not call the slow software fma; the build must not contract it either way
// within one binary, which baseline x86-64 (no FMA instructions) guarantees.
#include "microkernel.h"

namespace ctrax::kernels::gemm_detail {

namespace {

template <typename Scalar>
struct Scalar1 {
  using T = Scalar;
  using V = Scalar;
  using Mask = int;
  static constexpr int W = 1;
  static V zero() { return V(0); }
  static V load(const T* p) { return *p; }
  static V load_masked(const T* p, Mask) { return *p; }  // W == 1: a vector is full or absent
  static V broadcast(const T* p) { return *p; }
  static V set1(T x) { return x; }
  static V fma(V a, V b, V c) { return a * b + c; }
  static V mul(V a, V b) { return a * b; }
  static V add(V a, V b) { return a + b; }
  static V relu(V x) { return x <= V(0) ? V(0) : x; }
  static V where_positive(V m, V x) { return m > V(0) ? x : V(0); }
  static void store(T* p, V v) { *p = v; }
  static void store_masked(T* p, Mask, V v) { *p = v; }
  static Mask mask_first(int) { return 1; }
  static T reduce_add(V v) { return v; }
  static void reduce_add4(const V* v, T* sums) {
    for (int q = 0; q < 4; ++q) sums[q] = v[q];
  }
};

#include "microkernel_body.h"
#include "narrow_body.h"
#include "small_k_body.h"

constexpr int kMR = 4;
constexpr int kNR = 4;

}  // namespace

KernelSpec<float> portable_sgemm_kernel() {
  return {GemmIsa::portable, kMR, kNR, /*mc=*/128, /*kc=*/256, /*nc=*/1024,
          &tile_dispatch<Scalar1<float>, kMR, kNR>, &narrow_dispatch<Scalar1<float>>,
          &small_k_dispatch<Scalar1<float>>};
}

KernelSpec<double> portable_dgemm_kernel() {
  return {GemmIsa::portable, kMR, kNR, /*mc=*/128, /*kc=*/256, /*nc=*/1024,
          &tile_dispatch<Scalar1<double>, kMR, kNR>, &narrow_dispatch<Scalar1<double>>,
          &small_k_dispatch<Scalar1<double>>};
}

}  // namespace ctrax::kernels::gemm_detail
