// Version 2: 32 x 32 tiles of op(A) and op(B) staged in shared memory.
//
// A block of 32 x 32 threads owns a 32 x 32 tile of C. For each step of 32 along k it copies
// the matching 32 x 32 tiles of op(A) and op(B) into shared memory (one element per thread,
// with consecutive threads on consecutive addresses whatever the transposes, so the loads
// coalesce), then each thread accumulates its 32 products from shared memory. Global traffic
// drops by the tile size, 32x, against version 1; now shared-memory bandwidth (two loads per
// FMA) is the limit.
#include "../cuda_check.h"
#include "gemm_common.cuh"

namespace ctrax::kernels::cuda::gemm {

namespace {

constexpr int kTile = 32;
constexpr int kThreads = kTile * kTile;
// One column of padding so the transposing stores (k-contiguous operands) hit 32 different
// banks: element (x, kk) sits in bank (kk * 33 + x) mod 32 = (kk + x) mod 32.
constexpr int kSld = kTile + 1;

template <bool TransA, bool TransB>
__global__ void __launch_bounds__(kThreads)
    shared_tiling_kernel(int m, int n, int k, float alpha, const float* __restrict__ a, int64_t lda,
                         const float* __restrict__ b, int64_t ldb, float beta, float* __restrict__ c, int64_t ldc) {
  // Both k-major: As[kk][i], Bs[kk][j].
  __shared__ float As[kTile * kSld];
  __shared__ float Bs[kTile * kSld];
  const int tid = threadIdx.y * kTile + threadIdx.x;
  const int row0 = blockIdx.y * kTile, col0 = blockIdx.x * kTile;
  const int i = threadIdx.y, j = threadIdx.x;
  float acc = 0.0f;
  for (int k0 = 0; k0 < k; k0 += kTile) {
    device::load_tile_scalar<kTile, kTile, kSld, kThreads, !TransA>(
        As, device::tile_origin<!TransA>(a, lda, row0, k0), lda, m - row0, k - k0, tid);
    device::load_tile_scalar<kTile, kTile, kSld, kThreads, TransB>(
        Bs, device::tile_origin<TransB>(b, ldb, col0, k0), ldb, n - col0, k - k0, tid);
    __syncthreads();
    // As[kk][i] is one address per warp (a broadcast); Bs[kk][j] is 32 consecutive words.
#pragma unroll
    for (int kk = 0; kk < kTile; ++kk) acc = fmaf(As[kk * kSld + i], Bs[kk * kSld + j], acc);
    __syncthreads();
  }
  if (row0 + i < m && col0 + j < n) device::store_c(c + int64_t{row0 + i} * ldc + col0 + j, acc, alpha, beta);
}

}  // namespace

void sgemm_shared_tiling(const SgemmArgs& s, cudaStream_t stream) {
  const dim3 grid = tile_grid(s, kTile, kTile, "shared_tiling");
  dispatch_transposes(s.trans_a, s.trans_b, [&](auto ta, auto tb) {
    shared_tiling_kernel<decltype(ta)::value, decltype(tb)::value><<<grid, dim3(kTile, kTile), 0, stream>>>(
        s.m, s.n, s.k, s.alpha, s.a, s.lda, s.b, s.ldb, s.beta, s.c, s.ldc);
  });
  CTRAX_CUDA_CHECK_LAUNCH("shared_tiling_kernel");
}

}  // namespace ctrax::kernels::cuda::gemm
