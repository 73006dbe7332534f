// Warp and block reductions shared by the CUDA kernels (reduce.cu, softmax.cu,
// optimizer_steps.cu).
//
// What it is for: combining one value per thread into one value per warp or per block with
// any associative combine (sum, max, argmax pairs ...). Within a warp the values meet through
// register shuffles (log2(32) = 5 steps, no shared memory); a block then passes one value per
// warp through shared memory.
//
// What it is not for: reductions over a whole tensor or across blocks (the kernels do that
// with a second pass or one atomic per block).
#pragma once

#include <cstdint>
#include <cstring>

namespace ctrax::kernels::cuda::device {

constexpr int kWarpSize = 32;
constexpr unsigned kFullWarpMask = 0xffffffffu;

// __shfl_*_sync move 32-bit words; a value of any trivially copyable type (a double, an
// index-value pair) travels as its words.
template <typename T>
__device__ __forceinline__ T shfl_down(T v, int delta) {
  constexpr int kWords = (sizeof(T) + 3) / 4;
  int w[kWords] = {};
  memcpy(w, &v, sizeof(T));
#pragma unroll
  for (int k = 0; k < kWords; ++k) w[k] = __shfl_down_sync(kFullWarpMask, w[k], delta);
  memcpy(&v, w, sizeof(T));
  return v;
}

template <typename T>
__device__ __forceinline__ T shfl_from(T v, int lane) {
  constexpr int kWords = (sizeof(T) + 3) / 4;
  int w[kWords] = {};
  memcpy(w, &v, sizeof(T));
#pragma unroll
  for (int k = 0; k < kWords; ++k) w[k] = __shfl_sync(kFullWarpMask, w[k], lane);
  memcpy(&v, w, sizeof(T));
  return v;
}

// combine() over the G values of a group of threads; every thread of the group gets the total.
// G is kWarpSize (a warp: the group is the calling thread's warp) or blockDim.x (the block;
// every thread of the block must call, and `shared` holds G / kWarpSize values). Combining in
// a fixed tree order makes the result the same on every run.
template <int G, typename T, typename Combine>
__device__ __forceinline__ T group_reduce(T v, Combine combine, T* shared) {
  static_assert(G % kWarpSize == 0, "a group is whole warps");
#pragma unroll
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) v = combine(v, shfl_down(v, offset));
  if constexpr (G == kWarpSize) {
    return shfl_from(v, 0);
  } else {
    const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    T total = shared[0];
#pragma unroll
    for (int k = 1; k < G / kWarpSize; ++k) total = combine(total, shared[k]);
    __syncthreads();  // shared may be rewritten by the next call
    return total;
  }
}

}  // namespace ctrax::kernels::cuda::device
