// Scans on the GPU (the CUDA side of cumsum and discounted_cumsum, tensor/ops/scan.cpp).
//
// What it is for: running sums along the middle axis of a contiguous (outer, n, inner) block,
// with the CPU's arithmetic so that results agree to rounding:
//   cumsum:            carry += x[t]                      (forward or reverse)
//   discounted_cumsum: carry  = x[t] + discount * carry   (always reverse: the RL return
//                      G[t] = r[t] + discount * G[t + 1])
// Floating data (float32, float64) carries the running value in double and rounds it once per
// output element; int64 carries a wrapping uint64 (the tensor layer converts integer and bool
// inputs to int64 first, as the CPU does). The multiply and add are done with __dmul_rn and
// __dadd_rn, so nvcc cannot fuse them into an FMA the (baseline x86-64, FMA-free) CPU build
// does not use: both sides perform the same correctly rounded operations in the same order,
// and the results are identical.
//
// What it is not for: strided inputs (the caller makes them contiguous) or other dtypes.
#pragma once

#include <cstdint>

#include "strided.h"

namespace ctrax::kernels::cuda {

// y[o, t, i] = scan over t of x[o, ., i] for every (o, i); x and y hold `type` elements
// (float32, float64 or int64), contiguous (outer, n, inner). `discounted` selects
// discounted_cumsum (then `reverse` must be true). Asynchronous on current_stream().
void scan_lines(const void* x, void* y, ElementType type, int64_t outer, int64_t n, int64_t inner, bool reverse,
                bool discounted, double discount);

}  // namespace ctrax::kernels::cuda
