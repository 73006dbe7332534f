// Row reductions on the GPU (the CUDA side of sum, mean, var, std, max, min, prod, logsumexp,
// any, all, argmax and argmin).
//
// What it is for: reducing each of `rows` contiguous rows of `len` elements to one value. The
// tensor layer permutes the reduced axes innermost (in their order) and makes the input
// contiguous first, so every reduction over any set of axes arrives here as (rows, len), and
// the position of an element within its row is its row-major position over the reduced axes
// (what argmax reports). The arithmetic matches tensor/ops/reduce.cpp:
//   sum/prod of floats: accumulated in double, result in the input type;
//   sum/prod of int32/int64/bool: wrapping uint64 arithmetic, result int64;
//   mean/var/std/logsumexp: double accumulation, result in out_type (float32 or float64);
//   var/std: two passes (mean, then mean squared deviation), NaN when len - correction <= 0;
//   max/min: NaN wins; argmax/argmin: first extreme, the first NaN beats everything;
//   logsumexp: max m first, then m + log(sum exp(x - m)), m = +-inf or NaN gives m;
//   any/all: bool (uint8) results.
// Only the summation order differs from the CPU (a tree across threads instead of pairwise
// blocks); in double that is far below float32 rounding and ~1e-15 relative for float64.
//
// What it is not for: strided inputs (the caller makes them contiguous) or empty row sets
// (rows == 0 launches nothing; len == 0 gives each row the identity).
#pragma once

#include <cstdint>

#include "../../base/op_list.h"
#include "strided.h"

namespace ctrax::kernels::cuda {

// The reduction family of base/op_list.h, in its order (an OpId converts by position).
enum class ReduceOp : int {
#define CTRAX_CUDA_REDUCE_OP(name, differentiable, result) name,
  CTRAX_FOR_EACH_REDUCE_OP(CTRAX_CUDA_REDUCE_OP)
#undef CTRAX_CUDA_REDUCE_OP
};

// out[r] = op(x[r * len .. r * len + len)) for r < rows. x holds in_type elements; out_type
// must be the type reduce.cpp gives the op. `correction` is var/std's ddof. Asynchronous on
// current_stream().
void reduce_rows(ReduceOp op, const void* x, ElementType in_type, void* out, ElementType out_type, int64_t rows,
                 int64_t len, int64_t correction = 0);

}  // namespace ctrax::kernels::cuda
