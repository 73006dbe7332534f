// Sorting rows on the GPU (the CUDA side of sort, argsort and topk, tensor/ops/sort.cpp).
//
// What it is for: ordering each of `rows` contiguous rows of `len` elements and keeping the
// first k of each, as values and/or int64 positions, in exactly the CPU's order:
//   - ascending: smaller first, NaN after every number;
//   - descending: larger first, NaN before every number;
//   - equal values (and NaNs among themselves) keep their original order in both directions.
// Ties are broken by position, so the order on (value, position) pairs is a strict total
// order and the result does not depend on the algorithm (see sort.cu).
//
// What it is not for: strided inputs or a sort axis other than the last (the tensor layer
// moves the axis last and makes the input contiguous).
#pragma once

#include <cstdint>

#include "strided.h"

namespace ctrax::kernels::cuda {

// For every row r < rows of x (type elements, row-major (rows, len)): the first k elements
// of the sorted row go to values[r * k + j] (type elements) and their positions in the row to
// indices[r * k + j]; either output may be null. 0 <= k <= len. Temporary buffers come from
// the caching allocator of the current device. Asynchronous on current_stream().
void sort_rows(const void* x, ElementType type, int64_t rows, int64_t len, int64_t k, bool descending, void* values,
               int64_t* indices);

}  // namespace ctrax::kernels::cuda
