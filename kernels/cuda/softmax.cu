// softmax and log_softmax of contiguous rows (softmax.h).
//
// One group of G threads per row (G = 32, a warp, for rows of up to 256 elements; G = 256, a
// block, otherwise), three sweeps over the row: the maximum m, the sum s of exp(x - m) in
// double, then the outputs. The group combines its threads' partial max and sum by warp
// shuffles and, for G = 256, through shared memory across the 8 warps. Only the order of
// the double sum differs from the CPU, far below float32 rounding.
#include "softmax.h"

#include <cmath>
#include <limits>
#include <type_traits>

#include "cuda_check.h"
#include "group_reduce.cuh"
#include "indexing.cuh"
#include "runtime.h"

namespace ctrax::kernels::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kWarp = device::kWarpSize;
using device::group_reduce;

// The max keeps a NaN once seen (no comparison with NaN is true), as the CPU's loop does.
template <typename T>
__device__ __forceinline__ T max_nan(T a, T b) {
  return (b > a || b != b) ? b : a;
}

__device__ __forceinline__ float exp_of(float v) { return expf(v); }
__device__ __forceinline__ double exp_of(double v) { return exp(v); }

template <int G, typename T, bool kLog>
__global__ void softmax_rows_kernel(const T* x, T* y, int64_t rows, int64_t len) {
  __shared__ T shared_t[kThreads / kWarp];
  __shared__ double shared_d[kThreads / kWarp];
  constexpr int kGroups = kThreads / G;
  const int t = threadIdx.x % G;
  for (int64_t r = blockIdx.x * int64_t{kGroups} + threadIdx.x / G; r < rows; r += int64_t{gridDim.x} * kGroups) {
    const T* in = x + r * len;
    T* out = y + r * len;
    T m = -std::numeric_limits<T>::infinity();
    for (int64_t i = t; i < len; i += G) m = max_nan(m, in[i]);
    m = group_reduce<G>(m, [](T a, T b) { return max_nan(a, b); }, shared_t);
    // e_i = exp(x_i - m) <= 1 (rounded to T as on the CPU); s >= 1 unless the row is NaN.
    double s = 0.0;
    for (int64_t i = t; i < len; i += G) s += static_cast<double>(exp_of(in[i] - m));
    s = group_reduce<G>(s, [](double a, double b) { return a + b; }, shared_d);
    if constexpr (kLog) {
      const double log_s = log(s);
      for (int64_t i = t; i < len; i += G) out[i] = static_cast<T>(static_cast<double>(in[i] - m) - log_s);
    } else {
      const T scale = static_cast<T>(1.0 / s);
      for (int64_t i = t; i < len; i += G) out[i] = exp_of(in[i] - m) * scale;
    }
  }
}

template <typename T, bool kLog>
void launch(const void* x, void* y, int64_t rows, int64_t len) {
  const auto stream = static_cast<cudaStream_t>(current_stream());
  const auto* in = static_cast<const T*>(x);
  auto* out = static_cast<T*>(y);
  if (len <= 8 * kWarp) {
    softmax_rows_kernel<kWarp, T, kLog><<<device::blocks_for(rows, kThreads / kWarp), kThreads, 0, stream>>>(
        in, out, rows, len);
    CTRAX_CUDA_CHECK_LAUNCH("softmax_rows_kernel<warp>");
  } else {
    softmax_rows_kernel<kThreads, T, kLog><<<device::blocks_for(rows, 1), kThreads, 0, stream>>>(in, out, rows, len);
    CTRAX_CUDA_CHECK_LAUNCH("softmax_rows_kernel<block>");
  }
}

}  // namespace

void softmax_rows(const void* x, void* y, ElementType type, int64_t rows, int64_t len, bool log) {
  if (rows == 0 || len == 0) return;
  CTRAX_CHECK(type == ElementType::float32 || type == ElementType::float64,
              "softmax_rows: float32 or float64 expected");
  if (type == ElementType::float32) {
    if (log) launch<float, true>(x, y, rows, len);
    else launch<float, false>(x, y, rows, len);
  } else {
    if (log) launch<double, true>(x, y, rows, len);
    else launch<double, false>(x, y, rows, len);
  }
}

}  // namespace ctrax::kernels::cuda
