// Version 5: version 4 with 128-bit memory operations.
//
// Global loads: whole tiles are read as float4 (four floats per instruction) where the operand
// is 16-byte aligned with a leading dimension that is a multiple of 4; edge tiles and other
// layouts use the bounds-checked scalar loader. A k-contiguous op(A) tile (A not transposed) is
// transposed while it is stored, As[kk][i], so that the compute loop finds the TM values of a
// column of op(A) side by side and reads them as two float4 from shared memory; likewise
// op(B)'s TN values. C is written as float4 too when it is aligned.
#include "../cuda_check.h"
#include "gemm_common.cuh"

namespace ctrax::kernels::cuda::gemm {

namespace {

constexpr int kBM = 128, kBN = 128, kBK = 8, kTM = 8, kTN = 8;
constexpr int kThreads = (kBM / kTM) * (kBN / kTN);
// A multiple of 4 keeps every shared row 16-byte aligned for the float4 reads; 132 also keeps
// the transposing stores conflict-free ((4 kk + x) mod 32).
constexpr int kSldA = kBM + 4, kSldB = kBN + 4;

template <bool TransA, bool TransB>
__global__ void __launch_bounds__(kThreads)
    vectorized_kernel(int m, int n, int k, float alpha, const float* __restrict__ a, int64_t lda,
                      const float* __restrict__ b, int64_t ldb, float beta, float* __restrict__ c, int64_t ldc,
                      bool vec_a, bool vec_b, bool vec_c) {
  __shared__ __align__(16) float As[kBK * kSldA];  // As[kk][i]
  __shared__ __align__(16) float Bs[kBK * kSldB];  // Bs[kk][j]
  const int tid = threadIdx.x;
  const int row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN;
  const int tr = tid / (kBN / kTN), tc = tid % (kBN / kTN);
  float acc[kTM][kTN] = {};
  float regM[kTM], regN[kTN];
  for (int k0 = 0; k0 < k; k0 += kBK) {
    device::load_tile<kBM, kBK, kSldA, kThreads, !TransA>(As, device::tile_origin<!TransA>(a, lda, row0, k0), lda,
                                                          m - row0, k - k0, vec_a, tid);
    device::load_tile<kBN, kBK, kSldB, kThreads, TransB>(Bs, device::tile_origin<TransB>(b, ldb, col0, k0), ldb,
                                                         n - col0, k - k0, vec_b, tid);
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kBK; ++kk) {
#pragma unroll
      for (int i = 0; i < kTM; i += 4)
        device::unpack(*reinterpret_cast<const float4*>(As + kk * kSldA + tr * kTM + i), regM + i);
#pragma unroll
      for (int j = 0; j < kTN; j += 4)
        device::unpack(*reinterpret_cast<const float4*>(Bs + kk * kSldB + tc * kTN + j), regN + j);
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
    if (row < m) device::store_c_row<kTN>(c + int64_t{row} * ldc + col, acc[i], n - col, alpha, beta, vec_c);
  }
}

}  // namespace

void sgemm_vectorized(const SgemmArgs& s, cudaStream_t stream) {
  const dim3 grid = tile_grid(s, kBM, kBN, "vectorized");
  const bool vec_a = float4_ok(s.a, s.lda), vec_b = float4_ok(s.b, s.ldb), vec_c = float4_ok(s.c, s.ldc);
  dispatch_transposes(s.trans_a, s.trans_b, [&](auto ta, auto tb) {
    vectorized_kernel<decltype(ta)::value, decltype(tb)::value><<<grid, kThreads, 0, stream>>>(
        s.m, s.n, s.k, s.alpha, s.a, s.lda, s.b, s.ldb, s.beta, s.c, s.ldc, vec_a, vec_b, vec_c);
  });
  CTRAX_CUDA_CHECK_LAUNCH("vectorized_kernel");
}

}  // namespace ctrax::kernels::cuda::gemm
