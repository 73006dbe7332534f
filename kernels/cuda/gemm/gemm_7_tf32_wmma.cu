// Version 7: tensor cores through WMMA, m16n16k8 fragments with TF32 inputs and FP32
// accumulation (compute capability 8.0 or newer; dispatch.cu refuses older GPUs).
//
// TF32 keeps float's 8-bit exponent but only 10 explicit mantissa bits, so each product
// a_ip * b_pj carries a relative rounding error up to about 2^-11 (round to nearest on the
// conversion) before the FP32 accumulation. Over k terms of mixed sign the error of C(i, j)
// grows roughly like 2^-11 * sqrt(k) * sqrt(sum_p (a_ip b_pj)^2): results are good to about
// three decimal digits, which is what the tests allow (relative 1e-2 scaled by sqrt(k)).
//
// Tiles: the block's 128 x 128 tile of C is split over 8 warps as 2 x 4 warp tiles of 64 x 32,
// i.e. 4 x 2 accumulator fragments of 16 x 16 per warp. op(A) and op(B) tiles of depth 32 are
// staged k-major in shared memory by the common loader (zero-filled at the edges, float4 when
// aligned): As[kk][i] is exactly a column-major A fragment with leading dimension kSld, and
// Bs[kk][j] a row-major B fragment. The result goes through a per-warp 16 x 16 staging buffer in
// shared memory, because the layout of an accumulator fragment's elements over the lanes is
// unspecified, and the edge, alpha and beta handling needs to know which element is which.
#include <mma.h>

#include "../cuda_check.h"
#include "gemm_common.cuh"

namespace ctrax::kernels::cuda::gemm {

namespace {

namespace wmma = nvcuda::wmma;

constexpr int kWarp = 32;
constexpr int kBM = 128, kBN = 128, kBK = 32;
constexpr int kWarpsM = 2, kWarpsN = 4;
constexpr int kThreads = kWarpsM * kWarpsN * kWarp;
constexpr int kWM = kBM / kWarpsM, kWN = kBN / kWarpsN;  // 64 x 32 per warp
constexpr int kFrag = 16, kFragK = 8;
constexpr int kFragsM = kWM / kFrag, kFragsN = kWN / kFrag;  // 4 x 2
// WMMA wants a leading dimension that is a multiple of 4 floats and fragment pointers aligned
// to 32 bytes: with kSld = 132, row kk (a multiple of 8) starts 8 * 132 * 4 = 4224 = 132 * 32
// bytes in, and fragment columns (multiples of 16 floats) 64 bytes apart.
constexpr int kSld = kBM + 4;
static_assert(kBM == kBN, "As and Bs share kSld");

template <bool TransA, bool TransB>
__global__ void __launch_bounds__(kThreads)
    tf32_wmma_kernel(int m, int n, int k, float alpha, const float* __restrict__ a, int64_t lda,
                     const float* __restrict__ b, int64_t ldb, float beta, float* __restrict__ c, int64_t ldc,
                     bool vec_a, bool vec_b) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  __shared__ __align__(128) float As[kBK * kSld];  // As[kk][i]
  __shared__ __align__(128) float Bs[kBK * kSld];  // Bs[kk][j]
  __shared__ __align__(128) float stage[kThreads / kWarp][kFrag * kFrag];
  const int tid = threadIdx.x;
  const int row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN;
  const int warp = tid / kWarp, lane = tid % kWarp;
  const int warp_row = warp / kWarpsN, warp_col = warp % kWarpsN;

  wmma::fragment<wmma::accumulator, kFrag, kFrag, kFragK, float> acc[kFragsM][kFragsN];
#pragma unroll
  for (int fm = 0; fm < kFragsM; ++fm)
#pragma unroll
    for (int fn = 0; fn < kFragsN; ++fn) wmma::fill_fragment(acc[fm][fn], 0.0f);

  for (int k0 = 0; k0 < k; k0 += kBK) {
    device::load_tile<kBM, kBK, kSld, kThreads, !TransA>(As, device::tile_origin<!TransA>(a, lda, row0, k0), lda,
                                                         m - row0, k - k0, vec_a, tid);
    device::load_tile<kBN, kBK, kSld, kThreads, TransB>(Bs, device::tile_origin<TransB>(b, ldb, col0, k0), ldb,
                                                        n - col0, k - k0, vec_b, tid);
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kBK; kk += kFragK) {
      wmma::fragment<wmma::matrix_a, kFrag, kFrag, kFragK, wmma::precision::tf32, wmma::col_major> a_frag[kFragsM];
      wmma::fragment<wmma::matrix_b, kFrag, kFrag, kFragK, wmma::precision::tf32, wmma::row_major> b_frag[kFragsN];
#pragma unroll
      for (int fm = 0; fm < kFragsM; ++fm) {
        wmma::load_matrix_sync(a_frag[fm], As + kk * kSld + warp_row * kWM + fm * kFrag, kSld);
        // The tensor cores read only the TF32 bits; converting rounds to nearest instead of
        // truncating, which halves the worst-case input error.
#pragma unroll
        for (int t = 0; t < a_frag[fm].num_elements; ++t) a_frag[fm].x[t] = wmma::__float_to_tf32(a_frag[fm].x[t]);
      }
#pragma unroll
      for (int fn = 0; fn < kFragsN; ++fn) {
        wmma::load_matrix_sync(b_frag[fn], Bs + kk * kSld + warp_col * kWN + fn * kFrag, kSld);
#pragma unroll
        for (int t = 0; t < b_frag[fn].num_elements; ++t) b_frag[fn].x[t] = wmma::__float_to_tf32(b_frag[fn].x[t]);
      }
#pragma unroll
      for (int fm = 0; fm < kFragsM; ++fm)
#pragma unroll
        for (int fn = 0; fn < kFragsN; ++fn) wmma::mma_sync(acc[fm][fn], a_frag[fm], b_frag[fn], acc[fm][fn]);
    }
    __syncthreads();
  }

  float* my_stage = stage[warp];
#pragma unroll
  for (int fm = 0; fm < kFragsM; ++fm)
#pragma unroll
    for (int fn = 0; fn < kFragsN; ++fn) {
      wmma::store_matrix_sync(my_stage, acc[fm][fn], kFrag, wmma::mem_row_major);
      __syncwarp();
      const int frag_row = row0 + warp_row * kWM + fm * kFrag;
      const int frag_col = col0 + warp_col * kWN + fn * kFrag;
      // Lane l takes elements l, l + 32, ...: half a row each, so the stores to C coalesce.
#pragma unroll
      for (int e = lane; e < kFrag * kFrag; e += kWarp) {
        const int row = frag_row + e / kFrag, col = frag_col + e % kFrag;
        if (row < m && col < n) device::store_c(c + int64_t{row} * ldc + col, my_stage[e], alpha, beta);
      }
      __syncwarp();  // the next fragment overwrites the staging buffer
    }
#else
  __trap();  // unreachable: dispatch.cu checks the compute capability first
#endif
}

}  // namespace

void sgemm_tf32_wmma(const SgemmArgs& s, cudaStream_t stream) {
  const dim3 grid = tile_grid(s, kBM, kBN, "tf32_wmma");
  const bool vec_a = float4_ok(s.a, s.lda), vec_b = float4_ok(s.b, s.ldb);
  dispatch_transposes(s.trans_a, s.trans_b, [&](auto ta, auto tb) {
    tf32_wmma_kernel<decltype(ta)::value, decltype(tb)::value><<<grid, kThreads, 0, stream>>>(
        s.m, s.n, s.k, s.alpha, s.a, s.lda, s.b, s.ldb, s.beta, s.c, s.ldc, vec_a, vec_b);
  });
  CTRAX_CUDA_CHECK_LAUNCH("tf32_wmma_kernel");
}

}  // namespace ctrax::kernels::cuda::gemm
