// Version 3: 1D register blocking. Each thread computes TM = 8 results in one column of C.
//
// Version 2 does two shared-memory loads per FMA. Here a thread loads one op(B) value per step
// of kk and reuses it against TM values of op(A) held in registers' worth of loop:
//   acc[t] += As[kk][r*TM + t] * Bs[kk][j],  t = 0..TM-1,
// so there are TM + 1 shared loads for TM FMAs, and the op(A) loads are warp-wide broadcasts.
// Block tile 64 x 64, k step 8, 512 threads (64 columns x 8 groups of 8 rows).
#include "../cuda_check.h"
#include "gemm_common.cuh"

namespace ctrax::kernels::cuda::gemm {

namespace {

constexpr int kBM = 64, kBN = 64, kBK = 8, kTM = 8;
constexpr int kThreads = kBM * kBN / kTM;
// Padding of 4: a k-contiguous operand's transposing store puts (x, kk) in bank
// (kk * 68 + x) mod 32 = (4 kk + x) mod 32, distinct for the 8 kk x 4 x of one warp.
constexpr int kSldA = kBM + 4, kSldB = kBN + 4;

template <bool TransA, bool TransB>
__global__ void __launch_bounds__(kThreads)
    blocktiling_1d_kernel(int m, int n, int k, float alpha, const float* __restrict__ a, int64_t lda,
                          const float* __restrict__ b, int64_t ldb, float beta, float* __restrict__ c, int64_t ldc) {
  __shared__ float As[kBK * kSldA];  // As[kk][i]
  __shared__ float Bs[kBK * kSldB];  // Bs[kk][j]
  const int tid = threadIdx.x;
  const int row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN;
  const int j = tid % kBN;         // column within the tile: a warp covers 32 adjacent columns
  const int r = tid / kBN;         // which group of kTM rows
  float acc[kTM] = {};
  for (int k0 = 0; k0 < k; k0 += kBK) {
    device::load_tile_scalar<kBM, kBK, kSldA, kThreads, !TransA>(
        As, device::tile_origin<!TransA>(a, lda, row0, k0), lda, m - row0, k - k0, tid);
    device::load_tile_scalar<kBN, kBK, kSldB, kThreads, TransB>(
        Bs, device::tile_origin<TransB>(b, ldb, col0, k0), ldb, n - col0, k - k0, tid);
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kBK; ++kk) {
      const float bv = Bs[kk * kSldB + j];
#pragma unroll
      for (int t = 0; t < kTM; ++t) acc[t] = fmaf(As[kk * kSldA + r * kTM + t], bv, acc[t]);
    }
    __syncthreads();
  }
  if (col0 + j >= n) return;
#pragma unroll
  for (int t = 0; t < kTM; ++t) {
    const int row = row0 + r * kTM + t;
    if (row < m) device::store_c(c + int64_t{row} * ldc + col0 + j, acc[t], alpha, beta);
  }
}

}  // namespace

void sgemm_blocktiling_1d(const SgemmArgs& s, cudaStream_t stream) {
  const dim3 grid = tile_grid(s, kBM, kBN, "blocktiling_1d");
  dispatch_transposes(s.trans_a, s.trans_b, [&](auto ta, auto tb) {
    blocktiling_1d_kernel<decltype(ta)::value, decltype(tb)::value><<<grid, kThreads, 0, stream>>>(
        s.m, s.n, s.k, s.alpha, s.a, s.lda, s.b, s.ldb, s.beta, s.c, s.ldc);
  });
  CTRAX_CUDA_CHECK_LAUNCH("blocktiling_1d_kernel");
}

}  // namespace ctrax::kernels::cuda::gemm
