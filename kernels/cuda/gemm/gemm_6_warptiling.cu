// Version 6: warp tiling on top of version 5 (after siboehm's SGEMM_CUDA kernel 10).
//
// Three levels of tiles: the block's 128 x 128 tile of C is split into four 64 x 64 warp
// tiles; each warp tile is covered WNITER = 4 times by a 64 x 16 sub-tile in which every lane
// owns a TM x TN = 8 x 4 block (8 x 4 lanes x 8 x 4 = 64 x 16). A thread so computes
// 8 x 16 = 128 results from, per step of kk, 8 op(A) values and 16 op(B) values read from
// shared memory as float4. Keeping a warp's reads inside its own 64-row and 64-column slices
// of As and Bs makes them mostly broadcasts, and the small per-warp footprint gives the
// scheduler independent FMAs across WNITER to hide shared-memory latency. Block k step 16.
#include "../cuda_check.h"
#include "gemm_common.cuh"

namespace ctrax::kernels::cuda::gemm {

namespace {

constexpr int kWarp = 32;
constexpr int kBM = 128, kBN = 128, kBK = 16;
constexpr int kWM = 64, kWN = 64, kWNIter = 4;
constexpr int kTM = 8, kTN = 4;
constexpr int kThreads = (kBM / kWM) * (kBN / kWN) * kWarp;  // one warp per warp tile: 128
// Sub-tiles of a warp tile: kWMIter x kWNIter of kWSubM x kWSubN, each covered once by the warp.
constexpr int kWMIter = (kWM * kWN) / (kWarp * kTM * kTN * kWNIter);
constexpr int kWSubM = kWM / kWMIter, kWSubN = kWN / kWNIter;
static_assert(kWMIter >= 1 && kWSubM * kWSubN == kWarp * kTM * kTN, "a sub-tile must be one result block per lane");
constexpr int kSldA = kBM + 4, kSldB = kBN + 4;

template <bool TransA, bool TransB>
__global__ void __launch_bounds__(kThreads)
    warptiling_kernel(int m, int n, int k, float alpha, const float* __restrict__ a, int64_t lda,
                      const float* __restrict__ b, int64_t ldb, float beta, float* __restrict__ c, int64_t ldc,
                      bool vec_a, bool vec_b, bool vec_c) {
  __shared__ __align__(16) float As[kBK * kSldA];  // As[kk][i]
  __shared__ __align__(16) float Bs[kBK * kSldB];  // Bs[kk][j]
  const int tid = threadIdx.x;
  const int row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN;
  const int warp = tid / kWarp, lane = tid % kWarp;
  const int warp_row = warp / (kBN / kWN), warp_col = warp % (kBN / kWN);
  const int lane_row = lane / (kWSubN / kTN), lane_col = lane % (kWSubN / kTN);
  // First row and column, inside the block tile, of this thread's blocks.
  const int m_base = warp_row * kWM + lane_row * kTM;
  const int n_base = warp_col * kWN + lane_col * kTN;

  float acc[kWMIter * kTM][kWNIter * kTN] = {};
  float regM[kWMIter * kTM], regN[kWNIter * kTN];
  for (int k0 = 0; k0 < k; k0 += kBK) {
    device::load_tile<kBM, kBK, kSldA, kThreads, !TransA>(As, device::tile_origin<!TransA>(a, lda, row0, k0), lda,
                                                          m - row0, k - k0, vec_a, tid);
    device::load_tile<kBN, kBK, kSldB, kThreads, TransB>(Bs, device::tile_origin<TransB>(b, ldb, col0, k0), ldb,
                                                         n - col0, k - k0, vec_b, tid);
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kBK; ++kk) {
#pragma unroll
      for (int wm = 0; wm < kWMIter; ++wm)
#pragma unroll
        for (int i = 0; i < kTM; i += 4)
          device::unpack(*reinterpret_cast<const float4*>(As + kk * kSldA + m_base + wm * kWSubM + i),
                         regM + wm * kTM + i);
#pragma unroll
      for (int wn = 0; wn < kWNIter; ++wn)
#pragma unroll
        for (int j = 0; j < kTN; j += 4)
          device::unpack(*reinterpret_cast<const float4*>(Bs + kk * kSldB + n_base + wn * kWSubN + j),
                         regN + wn * kTN + j);
#pragma unroll
      for (int i = 0; i < kWMIter * kTM; ++i)
#pragma unroll
        for (int j = 0; j < kWNIter * kTN; ++j) acc[i][j] = fmaf(regM[i], regN[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int wm = 0; wm < kWMIter; ++wm)
#pragma unroll
    for (int i = 0; i < kTM; ++i) {
      const int row = row0 + m_base + wm * kWSubM + i;
      if (row >= m) continue;
#pragma unroll
      for (int wn = 0; wn < kWNIter; ++wn) {
        const int col = col0 + n_base + wn * kWSubN;
        device::store_c_row<kTN>(c + int64_t{row} * ldc + col, acc[wm * kTM + i] + wn * kTN, n - col, alpha, beta,
                                 vec_c);
      }
    }
}

}  // namespace

void sgemm_warptiling(const SgemmArgs& s, cudaStream_t stream) {
  const dim3 grid = tile_grid(s, kBM, kBN, "warptiling");
  const bool vec_a = float4_ok(s.a, s.lda), vec_b = float4_ok(s.b, s.ldb), vec_c = float4_ok(s.c, s.ldc);
  dispatch_transposes(s.trans_a, s.trans_b, [&](auto ta, auto tb) {
    warptiling_kernel<decltype(ta)::value, decltype(tb)::value><<<grid, kThreads, 0, stream>>>(
        s.m, s.n, s.k, s.alpha, s.a, s.lda, s.b, s.ldb, s.beta, s.c, s.ldc, vec_a, vec_b, vec_c);
  });
  CTRAX_CUDA_CHECK_LAUNCH("warptiling_kernel");
}

}  // namespace ctrax::kernels::cuda::gemm
