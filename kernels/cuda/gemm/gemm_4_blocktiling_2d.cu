// Version 4: 2D register blocking. Each thread computes a TM x TN = 8 x 8 block of C.
//
// Per step of kk a thread loads a column of TM values of op(A) and a row of TN values of op(B)
// from shared memory into registers and forms their outer product:
//   acc[i][j] += regM[i] * regN[j],
// TM + TN = 16 shared loads for TM * TN = 64 FMAs (version 3: 9 for 8). The block tile grows to
// 128 x 128 with k step 8 and 256 threads, so each loaded global element is reused 128 times.
#include "../cuda_check.h"
#include "gemm_common.cuh"

namespace ctrax::kernels::cuda::gemm {

namespace {

constexpr int kBM = 128, kBN = 128, kBK = 8, kTM = 8, kTN = 8;
constexpr int kThreads = (kBM / kTM) * (kBN / kTN);
// (kk * 132 + x) mod 32 = (4 kk + x) mod 32: conflict-free transposing stores for kBK = 8.
constexpr int kSldA = kBM + 4, kSldB = kBN + 4;

template <bool TransA, bool TransB>
__global__ void __launch_bounds__(kThreads)
    blocktiling_2d_kernel(int m, int n, int k, float alpha, const float* __restrict__ a, int64_t lda,
                          const float* __restrict__ b, int64_t ldb, float beta, float* __restrict__ c, int64_t ldc) {
  __shared__ float As[kBK * kSldA];  // As[kk][i]
  __shared__ float Bs[kBK * kSldB];  // Bs[kk][j]
  const int tid = threadIdx.x;
  const int row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN;
  const int tr = tid / (kBN / kTN), tc = tid % (kBN / kTN);
  float acc[kTM][kTN] = {};
  float regM[kTM], regN[kTN];
  for (int k0 = 0; k0 < k; k0 += kBK) {
    device::load_tile_scalar<kBM, kBK, kSldA, kThreads, !TransA>(
        As, device::tile_origin<!TransA>(a, lda, row0, k0), lda, m - row0, k - k0, tid);
    device::load_tile_scalar<kBN, kBK, kSldB, kThreads, TransB>(
        Bs, device::tile_origin<TransB>(b, ldb, col0, k0), ldb, n - col0, k - k0, tid);
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kBK; ++kk) {
#pragma unroll
      for (int i = 0; i < kTM; ++i) regM[i] = As[kk * kSldA + tr * kTM + i];
#pragma unroll
      for (int j = 0; j < kTN; ++j) regN[j] = Bs[kk * kSldB + tc * kTN + j];
#pragma unroll
      for (int i = 0; i < kTM; ++i)
#pragma unroll
        for (int j = 0; j < kTN; ++j) acc[i][j] = fmaf(regM[i], regN[j], acc[i][j]);
    }
    __syncthreads();
  }
  const int col = col0 + tc * kTN;
#pragma unroll
  for (int i = 0; i < kTM; ++i) {
    const int row = row0 + tr * kTM + i;
    if (row < m) device::store_c_row<kTN>(c + int64_t{row} * ldc + col, acc[i], n - col, alpha, beta, false);
  }
}

}  // namespace

void sgemm_blocktiling_2d(const SgemmArgs& s, cudaStream_t stream) {
  const dim3 grid = tile_grid(s, kBM, kBN, "blocktiling_2d");
  dispatch_transposes(s.trans_a, s.trans_b, [&](auto ta, auto tb) {
    blocktiling_2d_kernel<decltype(ta)::value, decltype(tb)::value><<<grid, kThreads, 0, stream>>>(
        s.m, s.n, s.k, s.alpha, s.a, s.lda, s.b, s.ldb, s.beta, s.c, s.ldc);
  });
  CTRAX_CUDA_CHECK_LAUNCH("blocktiling_2d_kernel");
}

}  // namespace ctrax::kernels::cuda::gemm
