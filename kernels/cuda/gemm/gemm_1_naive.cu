// Version 1: one thread per element of C, C(i, j) = alpha * sum_p op(A)(i, p) op(B)(p, j) +
// beta * C(i, j), reading both operands straight from global memory.
//
// threadIdx.x runs along j, so a warp reads 32 adjacent elements of a row of op(B) (coalesced
// when B is not transposed) and one element of op(A), broadcast to the warp. Every element of A
// is read n times and every element of B m times from global memory (through L1/L2); that is
// what the later versions cut down.
#include "../cuda_check.h"
#include "gemm_common.cuh"

namespace ctrax::kernels::cuda::gemm {

namespace {

constexpr int kBlockX = 32, kBlockY = 8;

template <bool TransA, bool TransB>
__global__ void __launch_bounds__(kBlockX* kBlockY)
    naive_kernel(int m, int n, int k, float alpha, const float* __restrict__ a, int64_t lda,
                 const float* __restrict__ b, int64_t ldb, float beta, float* __restrict__ c, int64_t ldc) {
  const int i = blockIdx.y * kBlockY + threadIdx.y;
  const int j = blockIdx.x * kBlockX + threadIdx.x;
  if (i >= m || j >= n) return;
  float acc = 0.0f;
  for (int p = 0; p < k; ++p) {
    const float av = TransA ? a[int64_t{p} * lda + i] : a[int64_t{i} * lda + p];
    const float bv = TransB ? b[int64_t{j} * ldb + p] : b[int64_t{p} * ldb + j];
    acc = fmaf(av, bv, acc);
  }
  device::store_c(c + int64_t{i} * ldc + j, acc, alpha, beta);
}

}  // namespace

void sgemm_naive(const SgemmArgs& s, cudaStream_t stream) {
  const dim3 grid = tile_grid(s, kBlockY, kBlockX, "naive");
  dispatch_transposes(s.trans_a, s.trans_b, [&](auto ta, auto tb) {
    naive_kernel<decltype(ta)::value, decltype(tb)::value><<<grid, dim3(kBlockX, kBlockY), 0, stream>>>(
        s.m, s.n, s.k, s.alpha, s.a, s.lda, s.b, s.ldb, s.beta, s.c, s.ldc);
  });
  CTRAX_CUDA_CHECK_LAUNCH("naive_kernel");
}

}  // namespace ctrax::kernels::cuda::gemm
