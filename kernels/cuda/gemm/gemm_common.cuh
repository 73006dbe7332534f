// Shared pieces of the CUDA SGEMM versions (kernels/cuda/gemm/gemm_*.cu): the argument block
// every version takes, the launchers' declarations, and the device helpers that read op(A) and
// op(B) tiles into shared memory and write C.
//
// What it is for: keeping the versions comparable. They differ in how a thread block computes
// its tile of C, not in how they treat transposes, edges or beta, which is done here once.
//
// What it is not for: argument checking (dispatch.cu does that before any launcher runs, so
// launchers may assume m, n, k >= 1, alpha != 0 and valid leading dimensions).
//
// Layout reminder (row-major, as kernels/gemm.h): op(A)(i, p) is a[i * lda + p] without
// trans_a and a[p * lda + i] with it; op(B)(p, j) is b[p * ldb + j] without trans_b and
// b[j * ldb + p] with it.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "../../../base/error.h"

namespace ctrax::kernels::cuda::gemm {

struct SgemmArgs {
  bool trans_a, trans_b;
  int m, n, k;  // dispatch.cu checks that they fit an int; all >= 1 here
  float alpha;
  const float* a;
  int64_t lda;
  const float* b;
  int64_t ldb;
  float beta;  // 0: C is not read
  float* c;
  int64_t ldc;
};

// One launcher per version, all with this signature (the table in dispatch.cu lists them).
void sgemm_cublas(const SgemmArgs& args, cudaStream_t stream);
void sgemm_naive(const SgemmArgs& args, cudaStream_t stream);
void sgemm_shared_tiling(const SgemmArgs& args, cudaStream_t stream);
void sgemm_blocktiling_1d(const SgemmArgs& args, cudaStream_t stream);
void sgemm_blocktiling_2d(const SgemmArgs& args, cudaStream_t stream);
void sgemm_vectorized(const SgemmArgs& args, cudaStream_t stream);
void sgemm_warptiling(const SgemmArgs& args, cudaStream_t stream);
void sgemm_tf32_wmma(const SgemmArgs& args, cudaStream_t stream);
void sgemm_double_buffered(const SgemmArgs& args, cudaStream_t stream);

// float64 through cuBLAS (gemm_0_cublas.cu); m, n, k >= 1, alpha != 0.
void dgemm_cublas(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
                  int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc,
                  cudaStream_t stream);

// ---- Host helpers -----------------------------------------------------------------------------

// Calls f(std::bool_constant<trans_a>{}, std::bool_constant<trans_b>{}): each version is
// instantiated for the four transpose combinations, so the index arithmetic inside the kernel
// is fixed at compile time.
template <typename F>
void dispatch_transposes(bool trans_a, bool trans_b, F&& f) {
  if (trans_a) {
    if (trans_b) f(std::true_type{}, std::true_type{});
    else f(std::true_type{}, std::false_type{});
  } else {
    if (trans_b) f(std::false_type{}, std::true_type{});
    else f(std::false_type{}, std::false_type{});
  }
}

// Grid of tiles: x over columns of C (up to 2^31 - 1 blocks), y over rows (at most 65535).
inline dim3 tile_grid(const SgemmArgs& args, int tile_m, int tile_n, const char* version) {
  const int64_t blocks_y = (int64_t{args.m} + tile_m - 1) / tile_m;
  const int64_t blocks_x = (int64_t{args.n} + tile_n - 1) / tile_n;
  CTRAX_REQUIRE(blocks_y <= 65535, "cuda sgemm (", version, "): m=", args.m, " needs ", blocks_y,
                " row tiles of ", tile_m, ", more than the grid's 65535");
  return dim3(static_cast<unsigned>(blocks_x), static_cast<unsigned>(blocks_y));
}

// float4 loads of an operand need a 16-byte aligned base and a row stride that keeps every
// row 16-byte aligned; tile origins are multiples of 4 elements, so each float4 then is.
inline bool float4_ok(const void* p, int64_t ld) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0 && ld % 4 == 0;
}

// ---- Device helpers ---------------------------------------------------------------------------
namespace device {

// A tile of an operand is addressed as (x, kk): x runs over rows of op(A) or columns of op(B),
// kk over the shared dimension. "k-contiguous" means consecutive kk are adjacent in memory:
// A without trans_a, B with trans_b. Otherwise consecutive x are adjacent.
template <bool KContiguous>
__device__ __forceinline__ const float* tile_origin(const float* p, int64_t ld, int x0, int k0) {
  return KContiguous ? p + int64_t{x0} * ld + k0 : p + int64_t{k0} * ld + x0;
}

// Reads a BX x BK tile starting at `origin` into shared memory stored k-major,
// S[kk * SLD + x], zero-filling whatever lies past x_left rows or k_left columns, so that the
// compute loop never needs bounds checks (a zero contributes nothing to the dot products).
// Consecutive threads take consecutive addresses in global memory, whichever the layout,
// so every warp's loads coalesce. Unroll: how far to unroll the loop; fully where this is the
// main path, 1 where it only serves the edge tiles (load_tile), so it does not add to the
// register pressure of the fast path.
template <int BX, int BK, int SLD, int NT, bool KContiguous, int Unroll = BX * BK / NT>
__device__ __forceinline__ void load_tile_scalar(float* S, const float* __restrict__ origin, int64_t ld, int x_left,
                                                 int k_left, int tid) {
  static_assert((BX * BK) % NT == 0, "the tile must split evenly over the threads");
#pragma unroll Unroll
  for (int it = 0; it < BX * BK / NT; ++it) {
    const int idx = tid + it * NT;
    const int x = KContiguous ? idx / BK : idx % BX;
    const int kk = KContiguous ? idx % BK : idx / BX;
    float v = 0.0f;
    if (x < x_left && kk < k_left) v = KContiguous ? origin[x * ld + kk] : origin[kk * ld + x];
    S[kk * SLD + x] = v;
  }
}

// The same for a tile that lies wholly inside the matrix, with float4 loads. Along kk (k-
// contiguous) the four values go to four rows of S, which is the transpose that lets the
// compute loop read op(A) columns as float4; along x they go to S as one float4 store.
template <int BX, int BK, int SLD, int NT, bool KContiguous>
__device__ __forceinline__ void load_tile_float4(float* S, const float* __restrict__ origin, int64_t ld, int tid) {
  static_assert(BX % 4 == 0 && BK % 4 == 0 && SLD % 4 == 0, "float4 tiles need multiples of 4");
  static_assert((BX * BK / 4) % NT == 0, "the tile must split evenly over the threads");
#pragma unroll
  for (int it = 0; it < BX * BK / 4 / NT; ++it) {
    const int idx = tid + it * NT;
    if constexpr (KContiguous) {
      const int x = idx / (BK / 4), q = idx % (BK / 4);
      const float4 v = *reinterpret_cast<const float4*>(origin + x * ld + 4 * q);
      S[(4 * q + 0) * SLD + x] = v.x;
      S[(4 * q + 1) * SLD + x] = v.y;
      S[(4 * q + 2) * SLD + x] = v.z;
      S[(4 * q + 3) * SLD + x] = v.w;
    } else {
      const int kk = idx / (BX / 4), q = idx % (BX / 4);
      *reinterpret_cast<float4*>(S + kk * SLD + 4 * q) = *reinterpret_cast<const float4*>(origin + kk * ld + 4 * q);
    }
  }
}

// float4 for whole tiles when the operand allows it (vec_ok, uniform over the grid), the
// bounds-checked path for the edge tiles.
template <int BX, int BK, int SLD, int NT, bool KContiguous>
__device__ __forceinline__ void load_tile(float* S, const float* __restrict__ origin, int64_t ld, int x_left,
                                          int k_left, bool vec_ok, int tid) {
  if (vec_ok && x_left >= BX && k_left >= BK) load_tile_float4<BX, BK, SLD, NT, KContiguous>(S, origin, ld, tid);
  else load_tile_scalar<BX, BK, SLD, NT, KContiguous, 1>(S, origin, ld, x_left, k_left, tid);
}

// Copies a float4 into four floats of a register array. (Storing the float4 through a cast
// pointer would assume 16-byte alignment of a float array, which holds only in registers.)
__device__ __forceinline__ void unpack(const float4 v, float* out) {
  out[0] = v.x;
  out[1] = v.y;
  out[2] = v.z;
  out[3] = v.w;
}

// C = alpha * acc + beta * C for one element; beta == 0 must not read C (it may be NaN).
__device__ __forceinline__ void store_c(float* p, float acc, float alpha, float beta) {
  *p = beta == 0.0f ? alpha * acc : fmaf(beta, *p, alpha * acc);
}

// The same for TN adjacent elements of a row of C starting at p, of which cols_left are inside
// the matrix; float4 stores when all TN are inside and C allows it (vec_ok: aligned C, ldc a
// multiple of 4, and p at a column that is a multiple of 4).
template <int TN>
__device__ __forceinline__ void store_c_row(float* p, const float* acc, int cols_left, float alpha, float beta,
                                            bool vec_ok) {
  if constexpr (TN % 4 == 0) {
    if (vec_ok && cols_left >= TN) {
#pragma unroll
      for (int j = 0; j < TN; j += 4) {
        float4 v = make_float4(alpha * acc[j], alpha * acc[j + 1], alpha * acc[j + 2], alpha * acc[j + 3]);
        if (beta != 0.0f) {
          const float4 old = *reinterpret_cast<const float4*>(p + j);
          v.x = fmaf(beta, old.x, v.x);
          v.y = fmaf(beta, old.y, v.y);
          v.z = fmaf(beta, old.z, v.z);
          v.w = fmaf(beta, old.w, v.w);
        }
        *reinterpret_cast<float4*>(p + j) = v;
      }
      return;
    }
  }
#pragma unroll
  for (int j = 0; j < TN; ++j)
    if (j < cols_left) store_c(p + j, acc[j], alpha, beta);
}

}  // namespace device
}  // namespace ctrax::kernels::cuda::gemm
