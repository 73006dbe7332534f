// reduce_util: the loop machinery shared by every reduction (sum, max, argmax, var, ...), so that
// each reduction in reduce.cpp is only its arithmetic. Not for ops with more than one output per
// element (scans, softmax). Kept and reduced axes are coalesced separately, then one of two loop
// shapes runs: run mode (a unit-stride reduced axis: each output folds whole runs) or row mode (a
// unit-stride kept axis: a tile of outputs adds whole rows). Why: docs/tour.md, "Reductions".
// Both visit one output's elements in the row-major order of the reduced axes (argmax's "first
// maximum" relies on it), and each output is computed by one chunk of the thread pool, so results
// never depend on the thread count.
//
// A policy P provides:
//   using In, Acc, Out;             element, accumulator and result types
//   Acc init(int64_t out_index)      the starting accumulator of one output
//   Acc step(Acc, In, int64_t pos)   fold in one element; pos = its position in the reduced
//                                    row-major order (argmax needs it)
//   Out finish(Acc)                  the result
// and optionally Acc run(Acc, const In* x, int64_t n, int64_t stride, int64_t first_pos), a
// faster fold of a whole run (called with any stride, including 0 for expanded inputs), and
// void add_rows(Acc* acc, const In* x, int64_t rows, int64_t row_stride, int64_t w), row mode's
// acc[j] = step(acc[j], row[j]) over `rows` rows `row_stride` apart, when a vectorised kernel
// does it faster (the same additions in the same order).
#pragma once

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "../../kernels/parallel.h"
#include "../tensor.h"

namespace ctrax::detail {

// Work (elements touched) below which a reduction stays on the calling thread.
inline constexpr int64_t kReduceGrain = 1 << 15;
// Outputs per row-mode tile: the accumulators of a tile stay in L1.
inline constexpr int64_t kRowTile = 256;

struct ReduceLayout {
  int kept_rank = 0;
  int red_rank = 0;
  int64_t kept_dims[kMaxRank] = {};
  int64_t kept_strides[kMaxRank] = {};  // in elements
  int64_t red_dims[kMaxRank] = {};
  int64_t red_strides[kMaxRank] = {};
  int64_t n_out = 1;  // number of outputs
  int64_t n_red = 1;  // elements folded into each output
};

struct ReducePlan {
  Shape out_shape;  // the result's shape (keepdims applied)
  ReduceLayout layout;
  // The input's axes, kept ones first then reduced ones (each group in order): the CUDA path
  // permutes by it so that every output's elements form one contiguous row.
  std::vector<int> kept_then_reduced;
};

inline std::string axes_to_string(const std::vector<int>& axes) {
  std::ostringstream s;
  s << "{";
  for (size_t i = 0; i < axes.size(); ++i) s << (i ? ", " : "") << axes[i];
  s << "}";
  return s.str();
}

// The checks every op of this family starts with.
inline void require_cpu_input(const Tensor& x, const char* op) {
  CTRAX_REQUIRE(x.defined(), op, ": the input tensor is undefined (default-constructed)");
  CTRAX_REQUIRE(x.device().is_cpu(), op, ": only cpu tensors are supported, got a tensor on ", x.device());
}

// Drops size-1 axes and merges neighbours (in the given order) that are one run of memory.
inline void coalesce_axes(const int64_t* dims, const int64_t* strides, int n, int64_t* out_dims,
                          int64_t* out_strides, int& out_rank) {
  out_rank = 0;
  for (int i = 0; i < n; ++i) {
    if (dims[i] == 1) continue;
    if (out_rank > 0 && out_strides[out_rank - 1] == strides[i] * dims[i]) {
      out_dims[out_rank - 1] *= dims[i];
      out_strides[out_rank - 1] = strides[i];
    } else {
      out_dims[out_rank] = dims[i];
      out_strides[out_rank] = strides[i];
      ++out_rank;
    }
  }
}

// Validates `axes` (empty = all; negative from the end; repeats are an error) and builds the plan.
// Accepts cpu and cuda inputs (the reductions have both paths); the loops below are cpu only.
inline ReducePlan plan_reduce(const Tensor& x, const std::vector<int>& axes, bool keepdims, const char* op) {
  CTRAX_REQUIRE(x.defined(), op, ": the input tensor is undefined (default-constructed)");
  const int rank = x.rank();
  bool reduced[kMaxRank] = {};
  if (axes.empty()) {
    for (int d = 0; d < rank; ++d) reduced[d] = true;
  } else {
    for (int a : axes) {
      const int d = normalize_axis(a, rank, op);
      CTRAX_REQUIRE(!reduced[d], op, ": axis ", a, " is repeated in axes ", axes_to_string(axes),
                    " for a tensor of shape ", x.shape(), " (expected distinct axes)");
      reduced[d] = true;
    }
  }
  ReducePlan plan;
  int64_t kd[kMaxRank], ks[kMaxRank], rd[kMaxRank], rs[kMaxRank];
  int nk = 0, nr = 0;
  for (int d = 0; d < rank; ++d) {
    if (reduced[d]) {
      rd[nr] = x.shape()[d];
      rs[nr++] = x.strides()[d];
      if (keepdims) plan.out_shape.push_back(1);
    } else {
      kd[nk] = x.shape()[d];
      ks[nk++] = x.strides()[d];
      plan.out_shape.push_back(x.shape()[d]);
    }
  }
  for (int d = 0; d < rank; ++d)
    if (!reduced[d]) plan.kept_then_reduced.push_back(d);
  for (int d = 0; d < rank; ++d)
    if (reduced[d]) plan.kept_then_reduced.push_back(d);
  ReduceLayout& L = plan.layout;
  for (int i = 0; i < nk; ++i) L.n_out *= kd[i];
  for (int i = 0; i < nr; ++i) L.n_red *= rd[i];
  coalesce_axes(kd, ks, nk, L.kept_dims, L.kept_strides, L.kept_rank);
  coalesce_axes(rd, rs, nr, L.red_dims, L.red_strides, L.red_rank);
  return plan;
}

// Offset (elements) of multi-index `index` over `rank` dims with `strides`.
inline int64_t offset_of(const int64_t* index, const int64_t* strides, int rank) {
  int64_t off = 0;
  for (int d = 0; d < rank; ++d) off += index[d] * strides[d];
  return off;
}

// Sets index to the row-major multi-index of `linear` in dims.
inline void unravel_index(int64_t linear, const int64_t* dims, int rank, int64_t* index) {
  for (int d = rank - 1; d >= 0; --d) {
    index[d] = linear % dims[d];
    linear /= dims[d];
  }
}

// Advances a row-major odometer over dims by one and returns the change of the memory offset.
inline int64_t step_offset(int64_t* index, const int64_t* dims, const int64_t* strides, int rank) {
  int64_t delta = 0;
  for (int d = rank - 1; d >= 0; --d) {
    if (++index[d] < dims[d]) return delta + strides[d];
    delta -= (dims[d] - 1) * strides[d];
    index[d] = 0;
  }
  return delta;
}

// ---- Pairwise summation in double (error bound: see reduce.cpp) ----

// Up to 128 contiguous elements with 8 accumulators (independent chains the compiler turns into
// vector adds; a single accumulator would be one long dependency chain).
template <typename T>
inline double block_sum(const T* x, int64_t n) {
  double a[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) a[k] += static_cast<double>(x[i + k]);
  double s = ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
  for (; i < n; ++i) s += static_cast<double>(x[i]);
  return s;
}

template <typename T>
inline double pairwise_sum(const T* x, int64_t n) {
  if (n <= 128) return block_sum(x, n);
  const int64_t half = (n / 2 + 7) / 8 * 8;  // a multiple of 8 keeps the blocks aligned
  return pairwise_sum(x, half) + pairwise_sum(x + half, n - half);
}

template <typename P>
inline typename P::Acc fold_run(const P& p, typename P::Acc acc, const typename P::In* x, int64_t n, int64_t stride,
                                int64_t first_pos) {
  if constexpr (requires { p.run(acc, x, n, stride, first_pos); }) {
    return p.run(acc, x, n, stride, first_pos);
  } else {
    for (int64_t i = 0; i < n; ++i) acc = p.step(acc, x[i * stride], first_pos + i);
    return acc;
  }
}

// run_reduction's run mode: the last reduced axis is the run; the others are walked by an
// odometer, per output.
template <typename P>
void reduce_by_runs(const ReduceLayout& L, const typename P::In* x, typename P::Out* out, const P& p) {
  using Acc = typename P::Acc;
  const int outer_rank = std::max(L.red_rank - 1, 0);
  const int64_t run_n = L.red_rank ? L.red_dims[L.red_rank - 1] : 1;
  const int64_t run_stride = L.red_rank ? L.red_strides[L.red_rank - 1] : 0;
  const int64_t runs = L.n_red / run_n;
  auto outputs = [&](int64_t begin, int64_t end) {
    int64_t kidx[kMaxRank];
    unravel_index(begin, L.kept_dims, L.kept_rank, kidx);
    int64_t koff = offset_of(kidx, L.kept_strides, L.kept_rank);
    for (int64_t o = begin; o < end; ++o) {
      Acc acc = p.init(o);
      int64_t ridx[kMaxRank] = {};
      int64_t roff = 0;
      for (int64_t r = 0; r < runs; ++r) {
        acc = fold_run(p, acc, x + koff + roff, run_n, run_stride, r * run_n);
        if (r + 1 < runs) roff += step_offset(ridx, L.red_dims, L.red_strides, outer_rank);
      }
      out[o] = p.finish(acc);
      if (o + 1 < end) koff += step_offset(kidx, L.kept_dims, L.kept_strides, L.kept_rank);
    }
  };
  if (L.n_out * L.n_red <= kReduceGrain) outputs(0, L.n_out);
  else kernels::parallel_for(L.n_out, std::max<int64_t>(1, kReduceGrain / L.n_red), outputs);
}

// run_reduction's row mode: tiles of contiguous outputs along the innermost kept axis, each
// reduced row by row (whole contiguous rows are added at once when the policy can).
template <typename P>
void reduce_by_rows(const ReduceLayout& L, const typename P::In* x, typename P::Out* out, const P& p) {
  using Acc = typename P::Acc;
  const int64_t width = L.kept_dims[L.kept_rank - 1];
  const int64_t lines = L.n_out / width;
  const int64_t tiles = (width + kRowTile - 1) / kRowTile;
  const int line_rank = L.kept_rank - 1;
  auto units = [&](int64_t begin, int64_t end) {
    Acc acc[kRowTile];
    for (int64_t u = begin; u < end; ++u) {
      const int64_t line = u / tiles;
      const int64_t j0 = (u % tiles) * kRowTile;
      const int64_t w = std::min(kRowTile, width - j0);
      int64_t lidx[kMaxRank];
      unravel_index(line, L.kept_dims, line_rank, lidx);
      const typename P::In* base = x + offset_of(lidx, L.kept_strides, line_rank) + j0;
      const int64_t o0 = line * width + j0;
      for (int64_t j = 0; j < w; ++j) acc[j] = p.init(o0 + j);
      if constexpr (requires { p.add_rows(acc, base, L.n_red, int64_t{0}, w); }) {
        if (L.red_rank == 1) {  // equally spaced rows: one call for the whole tile
          p.add_rows(acc, base, L.n_red, L.red_strides[0], w);
          for (int64_t j = 0; j < w; ++j) out[o0 + j] = p.finish(acc[j]);
          continue;
        }
      }
      int64_t ridx[kMaxRank] = {};
      int64_t roff = 0;
      for (int64_t r = 0; r < L.n_red; ++r) {
        const typename P::In* row = base + roff;
        if constexpr (requires { p.add_rows(acc, row, int64_t{1}, int64_t{0}, w); }) p.add_rows(acc, row, 1, 0, w);
        else
          for (int64_t j = 0; j < w; ++j) acc[j] = p.step(acc[j], row[j], r);
        if (r + 1 < L.n_red) roff += step_offset(ridx, L.red_dims, L.red_strides, L.red_rank);
      }
      for (int64_t j = 0; j < w; ++j) out[o0 + j] = p.finish(acc[j]);
    }
  };
  const int64_t units_total = lines * tiles;
  if (L.n_out * L.n_red <= kReduceGrain) units(0, units_total);
  else
    kernels::parallel_for(units_total, std::max<int64_t>(1, kReduceGrain / (std::min(width, kRowTile) * L.n_red)),
                          units);
}

// Runs policy `p` over input `x` (pointing at the first element) into the contiguous `out`.
template <typename P>
void run_reduction(const ReduceLayout& L, const typename P::In* x, typename P::Out* out, const P& p) {
  if (L.n_out == 0) return;
  if (L.n_red == 0) {  // empty reductions: the identity, without touching (possibly absent) memory
    for (int64_t o = 0; o < L.n_out; ++o) out[o] = p.finish(p.init(o));
    return;
  }
  if (L.n_red == 1) {  // one element per output (a sum over a size-1 axis): no runs to walk
    if (L.kept_rank == 1) {  // one kept axis (the common [n, 1] -> [n]): a plain strided loop
      const int64_t stride = L.kept_strides[0];
      for (int64_t o = 0; o < L.n_out; ++o) out[o] = p.finish(p.step(p.init(o), x[o * stride], 0));
      return;
    }
    int64_t kidx[kMaxRank] = {};
    int64_t koff = 0;
    for (int64_t o = 0; o < L.n_out; ++o) {
      out[o] = p.finish(p.step(p.init(o), x[koff], 0));
      if (o + 1 < L.n_out) koff += step_offset(kidx, L.kept_dims, L.kept_strides, L.kept_rank);
    }
    return;
  }
  const bool row_mode = L.kept_rank > 0 && L.kept_strides[L.kept_rank - 1] == 1 && L.red_rank > 0 &&
                        L.red_strides[L.red_rank - 1] != 1;
  if (row_mode) reduce_by_rows(L, x, out, p);
  else reduce_by_runs(L, x, out, p);
}

}  // namespace ctrax::detail
