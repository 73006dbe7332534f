// Version 8: warp tiling with double buffering, 256 threads (after the classic 128 x 128 x 8
// SIMT SGEMM that CUTLASS and cuBLAS's own float32 kernels are built like).
//
// Version 6 loads a tile, waits, computes, waits: while a block's tiles are in flight from
// global memory its FMA units idle, and only a few blocks fit on an SM to cover for it. Here
// each thread fetches its share of the next op(A) and op(B) tiles into registers before it
// computes on the current ones, and writes them into the second of two shared buffers after,
// so the global loads' latency hides behind a whole tile of arithmetic and one barrier per k
// step suffices:
//   - the block's 128 x 128 tile of C is eight 64 x 32 warp tiles (2 x 4 warps);
//   - each warp tile is 2 x 2 sub-tiles of 32 x 16, in which every lane owns a 4 x 4 block,
//     so a thread owns 64 results and reads, per kk, two float4 of op(A) and two of op(B)
//     from shared memory (lanes of a warp read 8 and 4 distinct float4: no bank conflicts);
//   - a k step is 8 deep: each tile is 128 x 8 = 256 float4, one per thread and operand.
// Edge tiles and operands that are not 16-byte aligned take the same path with bounds-checked
// scalar loads into the same registers (zeros outside the matrix).
//
// Split over k. A product with few tiles of C and a long k (a weight gradient X^T dY, whose k
// is the batch: [288 x 64] with k = 65536 is 3 tiles) would leave most SMs idle while three
// blocks walk the whole of k. When the tiles cannot fill the GPU, blockIdx.z takes a slice of k:
// each slice writes its partial product to a workspace, and a second kernel sums the slices in
// order into C with alpha and beta (deterministic, but rounded differently from one pass).
#include <algorithm>
#include <mutex>
#include <vector>

#include "../cuda_check.h"
#include "../runtime.h"
#include "gemm_common.cuh"

namespace ctrax::kernels::cuda::gemm {

namespace {

constexpr int kWarp = 32;
constexpr int kBM = 128, kBN = 128, kBK = 8;
constexpr int kWM = 64, kWN = 32;
constexpr int kWMIter = 2, kWNIter = 2;
constexpr int kTM = 4, kTN = 4;
constexpr int kThreads = (kBM / kWM) * (kBN / kWN) * kWarp;  // 8 warps: 256
constexpr int kWSubM = kWM / kWMIter, kWSubN = kWN / kWNIter;  // 32 x 16
static_assert(kWSubM * kWSubN == kWarp * kTM * kTN, "a sub-tile must be one result block per lane");
static_assert(kBM * kBK / 4 == kThreads && kBN * kBK / 4 == kThreads, "one float4 of each tile per thread");
constexpr int kSldA = kBM + 4, kSldB = kBN + 4;

// One thread's four elements of a BX x kBK tile: (x, kk) .. along kk when the operand is
// k-contiguous (A without trans_a, B with trans_b), along x otherwise, so that a warp's loads
// are consecutive addresses either way.
template <int BX, bool KContiguous>
struct TileSlot {
  int x, kk;  // the first element
  __device__ TileSlot(int tid) {
    if constexpr (KContiguous) {
      x = tid / (kBK / 4);
      kk = 4 * (tid % (kBK / 4));
    } else {
      kk = tid / (BX / 4);
      x = 4 * (tid % (BX / 4));
    }
  }
};

// Reads the slot's four values of the tile at `origin` into v. Unchecked: one float4 (the
// block's tiles all lie inside the matrix and the operand is aligned). Checked: one float4 when
// this tile allows it (vec_ok, whole tile inside), else four bounds-checked loads.
template <bool Checked, int BX, bool KContiguous>
__device__ __forceinline__ void fetch(float (&v)[4], const TileSlot<BX, KContiguous>& s,
                                      const float* __restrict__ origin, int64_t ld, int x_left, int k_left,
                                      bool vec_ok) {
  const float* p = KContiguous ? origin + int64_t{s.x} * ld + s.kk : origin + int64_t{s.kk} * ld + s.x;
  if (!Checked || (vec_ok && x_left >= BX && k_left >= kBK)) {
    device::unpack(*reinterpret_cast<const float4*>(p), v);
    return;
  }
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const int x = KContiguous ? s.x : s.x + e, kk = KContiguous ? s.kk + e : s.kk;
    v[e] = x < x_left && kk < k_left ? p[e] : 0.0f;
  }
}

// Writes the four values into the k-major shared tile S[kk * SLD + x]: four scalar stores
// (a transpose) for a k-contiguous operand, one float4 otherwise.
template <int BX, int SLD, bool KContiguous>
__device__ __forceinline__ void stash(float* S, const TileSlot<BX, KContiguous>& s, const float (&v)[4]) {
  if constexpr (KContiguous) {
#pragma unroll
    for (int e = 0; e < 4; ++e) S[(s.kk + e) * SLD + s.x] = v[e];
  } else {
    *reinterpret_cast<float4*>(S + s.kk * SLD + s.x) = make_float4(v[0], v[1], v[2], v[3]);
  }
}

// The block's product over all of its k into acc, double-buffered through As and Bs (two
// buffers of each). Checked: tiles may cross the matrices' edges, or the operands may be
// unaligned; unchecked: neither (the launcher decides for the whole grid).
template <bool TransA, bool TransB, bool Checked>
__device__ __forceinline__ void accumulate(float (&acc)[kWMIter * kTM][kWNIter * kTN], float (*As)[kBK * kSldA],
                                           float (*Bs)[kBK * kSldB], int m, int n, int k, const float* __restrict__ a,
                                           int64_t lda, const float* __restrict__ b, int64_t ldb, bool vec_a,
                                           bool vec_b, int row0, int col0, int m_base, int n_base) {
  const int tid = threadIdx.x;
  const TileSlot<kBM, !TransA> slot_a(tid);
  const TileSlot<kBN, TransB> slot_b(tid);
  float next_a[4], next_b[4];
  fetch<Checked>(next_a, slot_a, device::tile_origin<!TransA>(a, lda, row0, 0), lda, m - row0, k, vec_a);
  fetch<Checked>(next_b, slot_b, device::tile_origin<TransB>(b, ldb, col0, 0), ldb, n - col0, k, vec_b);
  stash<kBM, kSldA>(As[0], slot_a, next_a);
  stash<kBN, kSldB>(Bs[0], slot_b, next_b);
  __syncthreads();

  float regM[kWMIter * kTM], regN[kWNIter * kTN];
  int buffer = 0;
  for (int k0 = 0; k0 < k; k0 += kBK) {
    const bool more = k0 + kBK < k;
    if (more) {  // the next tiles' loads are in flight while this tile is computed
      const int k_left = k - k0 - kBK;
      fetch<Checked>(next_a, slot_a, device::tile_origin<!TransA>(a, lda, row0, k0 + kBK), lda, m - row0, k_left,
                     vec_a);
      fetch<Checked>(next_b, slot_b, device::tile_origin<TransB>(b, ldb, col0, k0 + kBK), ldb, n - col0, k_left,
                     vec_b);
    }
    const float* as = As[buffer];
    const float* bs = Bs[buffer];
#pragma unroll
    for (int kk = 0; kk < kBK; ++kk) {
#pragma unroll
      for (int wm = 0; wm < kWMIter; ++wm)
        device::unpack(*reinterpret_cast<const float4*>(as + kk * kSldA + m_base + wm * kWSubM), regM + wm * kTM);
#pragma unroll
      for (int wn = 0; wn < kWNIter; ++wn)
        device::unpack(*reinterpret_cast<const float4*>(bs + kk * kSldB + n_base + wn * kWSubN), regN + wn * kTN);
#pragma unroll
      for (int i = 0; i < kWMIter * kTM; ++i)
#pragma unroll
        for (int j = 0; j < kWNIter * kTN; ++j) acc[i][j] = fmaf(regM[i], regN[j], acc[i][j]);
    }
    if (more) {
      // The other buffer was last read in the previous step, which the barrier below (of that
      // step) has closed for every thread.
      stash<kBM, kSldA>(As[buffer ^ 1], slot_a, next_a);
      stash<kBN, kSldB>(Bs[buffer ^ 1], slot_b, next_b);
    }
    __syncthreads();
    buffer ^= 1;
  }
}

template <bool TransA, bool TransB, bool Checked>
__global__ void __launch_bounds__(kThreads, 2)
    double_buffered_kernel(int m, int n, int k, float alpha, const float* __restrict__ a, int64_t lda,
                           const float* __restrict__ b, int64_t ldb, float beta, float* __restrict__ c, int64_t ldc,
                           bool vec_a, bool vec_b, bool vec_c, int k_slice, int64_t c_slice_stride) {
  // This block's slice of k (all of it without a split): the operands start at its first column
  // of op(A) and row of op(B), and its partial product goes to its own C.
  {
    const int k_begin = static_cast<int>(blockIdx.z) * k_slice;
    a += TransA ? int64_t{k_begin} * lda : k_begin;
    b += TransB ? k_begin : int64_t{k_begin} * ldb;
    c += blockIdx.z * c_slice_stride;
    k = min(k - k_begin, k_slice);
  }
  __shared__ __align__(16) float As[2][kBK * kSldA];  // As[buffer][kk * kSldA + i]
  __shared__ __align__(16) float Bs[2][kBK * kSldB];  // Bs[buffer][kk * kSldB + j]
  const int tid = threadIdx.x;
  const int row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN;
  const int warp = tid / kWarp, lane = tid % kWarp;
  const int warp_row = warp / (kBN / kWN), warp_col = warp % (kBN / kWN);
  const int lane_row = lane / (kWSubN / kTN), lane_col = lane % (kWSubN / kTN);
  const int m_base = warp_row * kWM + lane_row * kTM;
  const int n_base = warp_col * kWN + lane_col * kTN;

  float acc[kWMIter * kTM][kWNIter * kTN] = {};
  accumulate<TransA, TransB, Checked>(acc, As, Bs, m, n, k, a, lda, b, ldb, vec_a, vec_b, row0, col0, m_base, n_base);
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

// C = alpha * (sum of the `slices` partial products in w, each m x n row-major) + beta * C.
__global__ void sum_slices_kernel(int m, int n, int slices, const float* __restrict__ w, float alpha, float beta,
                                  float* __restrict__ c, int64_t ldc) {
  const int64_t total = int64_t{m} * n;
  for (int64_t idx = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; idx < total;
       idx += int64_t{gridDim.x} * blockDim.x) {
    float sum = 0.0f;
    for (int z = 0; z < slices; ++z) sum += w[z * total + idx];
    device::store_c(c + (idx / n) * ldc + idx % n, sum, alpha, beta);
  }
}

// The multiprocessor count of `device`, read once.
int multiprocessors(int device) {
  static std::mutex mutex;
  static std::vector<int> counts;
  const std::lock_guard<std::mutex> lock(mutex);
  if (counts.size() <= static_cast<size_t>(device)) counts.resize(static_cast<size_t>(device) + 1, 0);
  int& count = counts[static_cast<size_t>(device)];
  if (count == 0) CTRAX_CUDA_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device));
  return count;
}

// How many slices of k: 1 when the tiles already give every SM a block, or k is short; else
// enough for about two blocks per SM (as many as fit), each slice keeping at least 256 of k.
int k_slices(const SgemmArgs& s, const dim3& grid, int device) {
  const int64_t tiles = int64_t{grid.x} * grid.y;
  const int64_t sms = multiprocessors(device);
  if (tiles >= sms || s.k < 512) return 1;
  const int64_t wanted = (2 * sms + tiles - 1) / tiles;
  return static_cast<int>(std::clamp<int64_t>(std::min<int64_t>(wanted, s.k / 256), 1, 64));
}

// Calls launch(kernel) with the instance for the transposes and for `checked` (see accumulate).
template <typename Launch>
void launch_transposed(const SgemmArgs& s, bool checked, Launch&& launch) {
  dispatch_transposes(s.trans_a, s.trans_b, [&](auto ta, auto tb) {
    if (checked) launch(double_buffered_kernel<decltype(ta)::value, decltype(tb)::value, true>);
    else launch(double_buffered_kernel<decltype(ta)::value, decltype(tb)::value, false>);
  });
}

}  // namespace

void sgemm_double_buffered(const SgemmArgs& s, cudaStream_t stream) {
  dim3 grid = tile_grid(s, kBM, kBN, "double_buffered");
  const bool vec_a = float4_ok(s.a, s.lda), vec_b = float4_ok(s.b, s.ldb);
  const int device = current_device();
  int slices = k_slices(s, grid, device);
  // Without bounds checks when every tile lies inside the matrices and the operands are aligned
  // (whole 128 x 128 tiles, whole k steps): 11% faster at 4096^3 on an H200 than the checked
  // loop, whose per-tile test and scalar fallback cost registers and scheduling freedom.
  const bool checked = !(vec_a && vec_b && s.m % kBM == 0 && s.n % kBN == 0 && s.k % kBK == 0);
  if (slices == 1) {
    const bool vec_c = float4_ok(s.c, s.ldc);
    launch_transposed(s, checked, [&](auto kernel) {
      kernel<<<grid, kThreads, 0, stream>>>(s.m, s.n, s.k, s.alpha, s.a, s.lda, s.b, s.ldb, s.beta, s.c, s.ldc,
                                            vec_a, vec_b, vec_c, s.k, 0);
    });
    CTRAX_CUDA_CHECK_LAUNCH("double_buffered_kernel");
    return;
  }
  // Slices of a whole number of k steps; the last may be shorter (never empty).
  const int k_slice = ((s.k + slices - 1) / slices + kBK - 1) / kBK * kBK;
  slices = (s.k + k_slice - 1) / k_slice;
  grid.z = static_cast<unsigned>(slices);
  const int64_t slice_elements = int64_t{s.m} * s.n;
  const size_t bytes = static_cast<size_t>(slices * slice_elements) * sizeof(float);
  float* work = static_cast<float*>(allocate(bytes, device));  // 512-byte aligned: float4 stores
  // The allocator's blocks are reused in stream order (one stream per device), so handing this
  // one back right after queueing the kernels that use it is safe.
  try {
    launch_transposed(s, checked, [&](auto kernel) {
      kernel<<<grid, kThreads, 0, stream>>>(s.m, s.n, s.k, 1.0f, s.a, s.lda, s.b, s.ldb, 0.0f, work, s.n, vec_a,
                                            vec_b, s.n % 4 == 0, k_slice, slice_elements);
    });
    CTRAX_CUDA_CHECK_LAUNCH("double_buffered_kernel (k slices)");
    const int64_t blocks = std::min<int64_t>((slice_elements + 255) / 256, 4096);
    sum_slices_kernel<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(s.m, s.n, slices, work, s.alpha, s.beta, s.c,
                                                                         s.ldc);
    CTRAX_CUDA_CHECK_LAUNCH("sum_slices_kernel");
  } catch (...) {
    deallocate(work, bytes, device);
    throw;
  }
  deallocate(work, bytes, device);
}

}  // namespace ctrax::kernels::cuda::gemm
