// strided_loop: the one loop nest behind every elementwise op, copy and cast.
//
// What it is for: walking N operands that share a logical shape (after broadcasting), each
// with its own strides, without materialising copies. The caller supplies an inner kernel
// that processes one run of `n` elements along the innermost dimension (or, with
// RunOrder::any, possibly down a column of short rows: then every operand's stride, the
// output's included, is a row's):
//
//     inner(std::array<char*, N> ptrs, std::array<int64_t, N> byte_strides, int64_t n)
//
// The kernel typically checks whether every stride equals its element size and then runs a
// plain, vectorisable loop; otherwise it steps by the strides (a broadcast operand has
// stride 0).
//
// Before looping, dimensions are coalesced: adjacent dims merge when every operand's
// strides say they are one run of memory, and size-1 dims disappear. A contiguous tensor of
// any rank therefore becomes a single run. Large loops are split across the thread pool by
// linear element index; each element is written by exactly one chunk, so results do not
// depend on the thread count. With RunOrder::any (below) a small loop with short rows runs down
// its columns instead.
//
// What it is not for: reductions (each output element sums many inputs; see ops/reduce.cpp).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

#include "../kernels/parallel.h"
#include "shape.h"
#include "tensor.h"

namespace ctrax::detail {

// Strides in bytes of `t` viewed at `out_shape` under broadcasting (0 on broadcast dims).
inline Shape broadcast_byte_strides(const Tensor& t, const Shape& out_shape) {
  Shape s = Shape::filled(out_shape.rank(), 0);
  const int shift = out_shape.rank() - t.rank();
  const int64_t es = static_cast<int64_t>(t.element_size());
  for (int i = 0; i < t.rank(); ++i) {
    const int64_t dim = t.shape()[i];
    s[i + shift] = (dim == 1 && out_shape[i + shift] != 1) ? 0 : t.strides()[i] * es;
  }
  return s;
}

// Elements per chunk below which a loop stays on the calling thread.
inline constexpr int64_t kElementwiseGrain = 1 << 15;

// The order in which strided_loop hands out runs. row_major: the elements in row-major order
// (scatter_add accumulates duplicates in that order; the gathers report the first bad index).
// any: a small loop whose last axis is shorter than kShortRun (after coalescing) runs down the
// longer axis before it instead, e.g. a [256, 2] op with an operand broadcast along the last
// axis is 2 runs of 256 rather than 256 runs of 2, each run costing a call of the inner kernel.
// Only for inner kernels that compute each element on its own and honour every operand's
// stride, the output's included: the elementwise maps and where.
enum class RunOrder { row_major, any };
inline constexpr int64_t kShortRun = 8;

// Whether an operand with these byte strides at `shape` is whole rows of the last axis (row
// stride n elements, step 1) or one row repeated (row stride 0; step 0 for a single value):
// the layouts kernels::binary_rows_kernel takes. rows and n are the [rows, n] view of `shape`.
inline bool as_rows(const Shape& shape, const Shape& byte_strides, int64_t element_size, int64_t& row, int64_t& step,
                    int64_t& rows, int64_t& n) {
  const int r = shape.rank();
  if (r == 0) return false;
  n = shape[r - 1];
  rows = n == 0 ? 0 : shape.numel() / n;
  const int64_t last = n == 1 ? element_size : byte_strides[r - 1];
  if (last != element_size && last != 0) return false;
  step = last == 0 ? 0 : 1;
  bool whole = step == 1, repeated = true;
  int64_t expected = n * element_size;  // the contiguous byte stride of the next axis out
  for (int d = r - 2; d >= 0; --d) {
    if (shape[d] != 1) {
      whole = whole && byte_strides[d] == expected;
      repeated = repeated && byte_strides[d] == 0;
    }
    expected *= shape[d];
  }
  if (!whole && !repeated) return false;
  row = whole && rows > 1 ? n : 0;
  return true;
}

template <size_t N, typename Inner>
void strided_loop(const Shape& full_shape, std::array<char*, N> base, std::array<Shape, N> strides, Inner&& inner,
                  int64_t grain = kElementwiseGrain, RunOrder order = RunOrder::row_major) {
  // ---- coalesce: drop size-1 dims, merge dims that are one run for every operand ----
  int64_t dims[kMaxRank];
  int64_t st[N][kMaxRank];
  int rank = 0;
  for (int d = 0; d < full_shape.rank(); ++d) {
    if (full_shape[d] == 0) return;  // nothing to do
    if (full_shape[d] == 1) continue;
    bool merge = rank > 0;
    for (size_t k = 0; k < N && merge; ++k) merge = st[k][rank - 1] == strides[k][d] * full_shape[d];
    if (merge) {
      dims[rank - 1] *= full_shape[d];
      for (size_t k = 0; k < N; ++k) st[k][rank - 1] = strides[k][d];
    } else {
      dims[rank] = full_shape[d];
      for (size_t k = 0; k < N; ++k) st[k][rank] = strides[k][d];
      ++rank;
    }
  }
  if (rank == 0) {  // a single element
    dims[0] = 1;
    for (size_t k = 0; k < N; ++k) st[k][0] = 0;
    rank = 1;
  }
  int64_t total = 1;
  for (int d = 0; d < rank; ++d) total *= dims[d];
  const int64_t row = dims[rank - 1];
  std::array<int64_t, N> inner_strides;
  for (size_t k = 0; k < N; ++k) inner_strides[k] = st[k][rank - 1];

  // Processes the linear element range [begin, end) in row-major order.
  auto run_range = [&](int64_t begin, int64_t end) {
    int64_t index[kMaxRank];
    int64_t rest = begin;
    for (int d = rank - 1; d >= 0; --d) {
      if (rest == 0) {  // (no division: one costs more than a short kernel's whole work)
        index[d] = 0;
        continue;
      }
      index[d] = rest % dims[d];
      rest /= dims[d];
    }
    // Byte offsets rather than pointers: between rows an offset may step outside the
    // operand before the carry brings it back, which is fine for an integer but would be
    // undefined behaviour for a pointer.
    std::array<int64_t, N> off;
    for (size_t k = 0; k < N; ++k) {
      off[k] = 0;
      for (int d = 0; d < rank; ++d) off[k] += index[d] * st[k][d];
    }
    int64_t pos = begin;
    while (pos < end) {
      const int64_t n = std::min(row - index[rank - 1], end - pos);
      std::array<char*, N> ptr;
      for (size_t k = 0; k < N; ++k) ptr[k] = base[k] + off[k];
      inner(ptr, inner_strides, n);
      pos += n;
      if (pos >= end) break;
      // advance to the start of the next row: carry through the outer dims
      for (size_t k = 0; k < N; ++k) off[k] += n * inner_strides[k];
      index[rank - 1] += n;
      for (int d = rank - 1; d > 0 && index[d] == dims[d]; --d) {
        for (size_t k = 0; k < N; ++k) off[k] += st[k][d - 1] - dims[d] * st[k][d];
        index[d] = 0;
        ++index[d - 1];
      }
    }
  };
  if (total <= grain && rank == 1) {
    // One run (every contiguous operand set, whatever its rank): no odometer.
    inner(base, inner_strides, total);
  } else if (total <= grain && rank == 2 && order == RunOrder::any && row < kShortRun && dims[0] > row) {
    // Short rows (see RunOrder): one run per column, down the rows.
    std::array<int64_t, N> column_strides;
    for (size_t k = 0; k < N; ++k) column_strides[k] = st[k][0];
    std::array<char*, N> ptr;
    for (int64_t c = 0; c < row; ++c) {
      for (size_t k = 0; k < N; ++k) ptr[k] = base[k] + c * inner_strides[k];
      inner(ptr, column_strides, dims[0]);
    }
  } else if (total <= grain && rank == 2) {
    // The common small case (a matrix with a broadcast row or column, a transposed view):
    // rows at fixed byte steps, with no odometer to carry.
    std::array<char*, N> ptr;
    for (int64_t r = 0; r < dims[0]; ++r) {
      for (size_t k = 0; k < N; ++k) ptr[k] = base[k] + r * st[k][0];  // never past the last row
      inner(ptr, inner_strides, row);
    }
  } else if (total <= grain) {
    run_range(0, total);
  } else {
    ctrax::kernels::parallel_for(total, grain, run_range);
  }
}

}  // namespace ctrax::detail
