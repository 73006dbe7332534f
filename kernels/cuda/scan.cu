// Scans along one axis (scan.h).
//
// Layout of the work: one thread per line, i.e. per (outer, inner) pair, walking the n steps
// of its line sequentially with the running value in a register. Lines are independent, so
// this needs no synchronisation and gives exactly the CPU's order of operations (hence its
// rounding). Consecutive threads take consecutive inner indices, so with inner > 1 (e.g.
// rewards stored (time, batch)) every step is a coalesced read of a row. RL scans are short
// (episode lengths) and batched wide, which suits this; a single very long line runs on one
// thread, and a parallel (Blelloch-style) scan per line is the next version if that matters.
#include "scan.h"

#include <type_traits>

#include "cuda_check.h"
#include "indexing.cuh"
#include "runtime.h"

namespace ctrax::kernels::cuda {

namespace {

constexpr int kThreads = 256;

template <typename T, bool kDiscounted>
__global__ void scan_lines_kernel(const T* x, T* y, int64_t lines, int64_t n, int64_t inner, bool reverse,
                                  double discount) {
  using Carry = std::conditional_t<std::is_floating_point_v<T>, double, unsigned long long>;
  for (int64_t line = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; line < lines;
       line += int64_t{gridDim.x} * blockDim.x) {
    const int64_t o = line / inner, i = line % inner;
    const int64_t base = o * n * inner + i;
    Carry carry = 0;
    for (int64_t s = 0; s < n; ++s) {
      const int64_t at = base + (reverse ? n - 1 - s : s) * inner;
      if constexpr (std::is_floating_point_v<T>) {
        const double v = static_cast<double>(x[at]);
        // Separately rounded multiply and add: the CPU's expression, never contracted.
        carry = kDiscounted ? __dadd_rn(v, __dmul_rn(discount, carry)) : __dadd_rn(carry, v);
      } else {
        carry += static_cast<unsigned long long>(x[at]);  // wraps modulo 2^64 like the CPU
      }
      y[at] = static_cast<T>(carry);
    }
  }
}

}  // namespace

void scan_lines(const void* x, void* y, ElementType type, int64_t outer, int64_t n, int64_t inner, bool reverse,
                bool discounted, double discount) {
  const int64_t lines = outer * inner;
  if (lines == 0 || n == 0) return;
  const auto stream = static_cast<cudaStream_t>(current_stream());
  const unsigned blocks = device::blocks_for(lines, kThreads);
  bool launched = false;
  device::dispatch_element_type(type, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, int64_t>) {
      if (discounted) {
        if constexpr (std::is_floating_point_v<T>) {
          scan_lines_kernel<T, true><<<blocks, kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y),
                                                                      lines, n, inner, reverse, discount);
          CTRAX_CUDA_CHECK_LAUNCH("scan_lines_kernel");
          launched = true;
        }
      } else {
        scan_lines_kernel<T, false><<<blocks, kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y),
                                                                     lines, n, inner, reverse, discount);
        CTRAX_CUDA_CHECK_LAUNCH("scan_lines_kernel");
        launched = true;
      }
    }
  });
  CTRAX_CHECK(launched, "scan_lines: unsupported element type ", static_cast<int>(type),
              discounted ? " for discounted_cumsum" : " for cumsum");
}

}  // namespace ctrax::kernels::cuda
