// Index kernels on the GPU: one_hot, gather along an axis (the CUDA side of take_along_axis and
// index_select) and scatter_add.
//
// What it is for: the device half of tensor/ops/index.cpp. The tensor layer checks shapes and
// dtypes, allocates the result and describes every operand as a StridedArg viewed at the loop
// shape (zero strides on broadcast axes); these functions only launch.
//
// Out-of-range indices: a kernel cannot throw, so each thread that meets an index outside
// [-n, n) atomicMin's its linear position (row-major over the loop shape) into one device
// word instead of reading or writing. After the launch the word is copied back to the host
// (this waits for the stream) and, when set, the index value at that position is read too.
// The smallest position is the one a serial row-major loop meets first, so the caller can
// throw exactly the message the CPU op throws, naming the same index.
//
// scatter_add uses atomicAdd: duplicate indices send several threads to one target element,
// and a plain read-modify-write would lose all but one of their additions. Integer sums are
// exact and wrap around like the CPU's (int64 through the unsigned long long atomicAdd, which
// is two's complement addition), so they match the CPU bit for bit. Floating sums do not: the
// order in which the atomics land is up to the hardware, so with duplicate targets a float
// result may differ from the CPU's serial row-major order (and from run to run) by rounding.
//
// What it is not for: the join ops (concatenate, stack, split, pad, flip), which are strided
// copies and fills (copy.h).
#pragma once

#include <cstdint>

#include "strided.h"

namespace ctrax::kernels::cuda {

// The first (row-major) out-of-range index a launch met, if any.
struct BadIndex {
  bool found = false;
  int64_t value = 0;  // the index as stored (before adding n to a negative one)
};

// out (contiguous, shape indices.shape + [depth], already zero) gets a 1 of out_type at
// [p, indices[p]] for every p whose index lies in [0, depth); other indices leave their row
// zero (jax.nn.one_hot). Asynchronous on current_stream().
void one_hot(void* out, ElementType out_type, const StridedArg& indices, ElementType index_type, int64_t depth);

// out[p] = x[p + (index[p] resolved to [0, axis_size)) * axis_stride] for every position p of
// out's shape, where `index` and `x` are viewed at out's shape and x's stride on the gathered
// axis is 0 (axis_stride, in elements, is its real one). Waits for the stream to read the
// error word; returns the first out-of-range index, in which case out is incomplete.
BadIndex gather(const StridedArg& out, const StridedArg& x, ElementType value_type, const StridedArg& index,
                ElementType index_type, int64_t axis_size, int64_t axis_stride);

// target[p + (index[p] resolved) * axis_stride] += src[p] for every position p of index's
// shape, with atomicAdd; `target` is viewed at that shape with stride 0 on the axis, `src` has
// value_type (float32, float64, int32 or int64). Waits like gather; on a bad index the other
// additions have already happened.
BadIndex scatter_add(const StridedArg& target, const StridedArg& src, ElementType value_type, const StridedArg& index,
                     ElementType index_type, int64_t axis_size, int64_t axis_stride);

}  // namespace ctrax::kernels::cuda
