// Sorting ops: sort, argsort, topk.
//
// What it is for: ordering the elements of each line along one axis. All three share one
// routine: copy a line into a buffer of (value, position) pairs, order the buffer (fully, or
// only its first k with partial_sort for topk), and write values and/or positions out.
//
// The order is total, so results never depend on the algorithm:
//   - ascending: smaller values first, NaN after every number (as NumPy);
//   - descending: larger values first, NaN before every number (NaN counts as the largest,
//     as torch.sort and torch.topk do);
//   - equal values (and NaNs among themselves) keep their original order, in both
//     directions. So descending is NOT the reverse of ascending when there are ties: the
//     stable order of [1a, 1b] descending is [1a, 1b].
// Because ties are broken by position, std::sort and std::partial_sort give exactly what a
// stable sort would, and topk(k) is the first k elements of the stable sort.
//
// Rank-0 inputs are treated as one line of one element (axis 0 or -1).
//
// On a GPU (kernels/cuda/sort.h) the sorted axis is moved last and made contiguous, a merge
// sort orders the rows by the same total order (so the results are identical), and the
// results are moved back.
//
// What it is not for: sorting across several axes (flatten first).
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <utility>
#include <vector>

#include "../trace.h"
#include "../../kernels/cuda/sort.h"
#include "../../kernels/parallel.h"
#include "../cuda_arg.h"
#include "../ops.h"

namespace ctrax {

namespace {

template <typename T>
inline bool is_nan_value(T v) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(v);
  else return false;
}

// The total order described above on (value, position) pairs.
template <typename T>
struct LineOrder {
  bool descending;
  bool operator()(const std::pair<T, int64_t>& a, const std::pair<T, int64_t>& b) const {
    const bool a_nan = is_nan_value(a.first), b_nan = is_nan_value(b.first);
    if (a_nan != b_nan) return descending ? a_nan : b_nan;  // NaN last ascending, first descending
    if (!a_nan && a.first != b.first) return descending ? a.first > b.first : a.first < b.first;
    return a.second < b.second;  // ties keep their original order
  }
};

// The axis to sort along; a rank-0 tensor is one line of one element (axis 0 or -1).
int resolve_axis(const Tensor& x, int axis, const char* op) {
  CTRAX_REQUIRE(x.rank() > 0 || axis == 0 || axis == -1, op, ": axis ", axis,
                " is out of range for a rank-0 tensor (expected 0 or -1)");
  return x.rank() == 0 ? 0 : normalize_axis(axis, x.rank(), op);
}

struct SortResult {
  Tensor values;   // undefined unless requested
  Tensor indices;  // int64; undefined unless requested
};

// The GPU path of sort_lines: xc (rank >= 1, any layout) with the sorted axis `a` moved last
// and made contiguous is sorted row by row, and the results are moved back to out_shape's layout.
SortResult sort_lines_cuda(const Tensor& xc, int a, int64_t k, bool descending, bool want_values, bool want_indices,
                           const Shape& out_shape, const char* op) {
  cuda_detail::use_device_of(xc);
  const int rank = xc.rank();
  std::vector<int> to_last, back(static_cast<size_t>(rank));
  for (int d = 0; d < rank; ++d)
    if (d != a) to_last.push_back(d);
  to_last.push_back(a);
  for (int d = 0; d < rank; ++d) back[to_last[d]] = d;
  const Tensor rows = xc.permute(to_last).contiguous();
  Shape sorted_shape = rows.shape();
  sorted_shape[rank - 1] = k;
  const int64_t len = rows.shape()[rank - 1];
  const int64_t row_count = len == 0 ? 0 : rows.numel() / len;  // len == 0 forces k == 0: nothing to do
  Tensor values, indices;
  if (want_values) values = Tensor(sorted_shape, xc.dtype(), xc.device());
  if (want_indices) indices = Tensor(sorted_shape, DType::int64, xc.device());
  kernels::cuda::sort_rows(rows.device_data(), cuda_detail::element_type(xc.dtype()), row_count, len, k, descending,
                           want_values ? values.device_data() : nullptr,
                           want_indices ? static_cast<int64_t*>(indices.device_data()) : nullptr);
  SortResult result;
  if (want_values) result.values = values.permute(back).contiguous().reshape(out_shape);
  if (want_indices) result.indices = indices.permute(back).contiguous().reshape(out_shape);
  return result;
}

// Orders every line of x along `axis` and keeps the first k of each (k = n for a full sort).
SortResult sort_lines(const Tensor& x, int axis, int64_t k, bool descending, bool want_values, bool want_indices,
                      const char* op) {
  const int a = resolve_axis(x, axis, op);
  const Tensor lines_view = x.rank() == 0 ? x.reshape(Shape{1}) : x;
  const int64_t n = lines_view.shape()[a];
  CTRAX_REQUIRE(x.rank() > 0 || k == 1, op, ": k = ", k, " for a rank-0 tensor (expected k = 1: the result keeps rank 0)");
  CTRAX_REQUIRE(k >= 0 && k <= n, op, ": k = ", k, " is out of range for axis ", axis, " of size ", n,
                " (expected k in [0, ", n, "])");
  Shape out_shape = x.shape();
  if (x.rank() > 0) out_shape[a] = k;
  if (x.device().is_cuda())
    return sort_lines_cuda(lines_view, a, k, descending, want_values, want_indices, out_shape, op);

  // Lines are at o * n * inner + j * inner + i for outer index o, position j, inner index i.
  const Tensor xc = lines_view.contiguous();
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < a; ++d) outer *= xc.shape()[d];
  for (int d = a + 1; d < xc.rank(); ++d) inner *= xc.shape()[d];

  SortResult result;
  if (want_values) result.values = Tensor(out_shape, x.dtype());
  if (want_indices) result.indices = Tensor(out_shape, DType::int64);
  const int64_t lines = outer * inner;
  if (lines == 0 || k == 0) return result;

  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* src = static_cast<const T*>(xc.raw_data());
    T* values = want_values ? static_cast<T*>(result.values.raw_data()) : nullptr;
    int64_t* indices = want_indices ? static_cast<int64_t*>(result.indices.raw_data()) : nullptr;
    const LineOrder<T> order{descending};
    // Lines are independent; each chunk sorts whole lines with its own buffer.
    const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(n, 1));
    kernels::parallel_for(lines, grain, [&](int64_t begin, int64_t end) {
      std::vector<std::pair<T, int64_t>> buffer(static_cast<size_t>(n));
      for (int64_t line = begin; line < end; ++line) {
        const int64_t o = line / inner, i = line % inner;
        const T* in = src + o * n * inner + i;
        for (int64_t j = 0; j < n; ++j) buffer[j] = {in[j * inner], j};
        if (k < n) std::partial_sort(buffer.begin(), buffer.begin() + k, buffer.end(), order);
        else std::sort(buffer.begin(), buffer.end(), order);
        const int64_t out_base = o * k * inner + i;
        for (int64_t j = 0; j < k; ++j) {
          if (values) values[out_base + j * inner] = buffer[j].first;
          if (indices) indices[out_base + j * inner] = buffer[j].second;
        }
      }
    });
  });
  return result;
}

// Sorts run on the input's device (cpu, or cuda in a CUDA build).
void require_defined(const Tensor& t, const char* op) {
  CTRAX_REQUIRE(t.defined(), op, ": x is undefined (default-constructed)");
}

// The size of `axis` of x, counting a rank-0 tensor as one line of one element.
int64_t line_length(const Tensor& x, int axis, const char* op) {
  const int a = resolve_axis(x, axis, op);
  return x.rank() == 0 ? 1 : x.shape()[a];
}

}  // namespace

Tensor sort(const Tensor& x, int axis, bool descending) {
  return traced_op(OpId::sort, {&x}, [&] {
    require_defined(x, "sort");
    return sort_lines(x, axis, line_length(x, axis, "sort"), descending, true, false, "sort").values;
  }, [&] { return OpAttrs{AxisAttrs{axis, descending}}; });
}

Tensor argsort(const Tensor& x, int axis, bool descending) {
  require_defined(x, "argsort");
  return sort_lines(x, axis, line_length(x, axis, "argsort"), descending, false, true, "argsort").indices;
}

std::pair<Tensor, Tensor> topk(const Tensor& x, int64_t k, int axis, bool largest) {
  require_defined(x, "topk");
  const Tensor* in[] = {&x};
  if (!detail::any_traced(in)) {
    SortResult r = sort_lines(x, axis, k, largest, true, true, "topk");
    return {r.values, r.indices};
  }
  Tensor outs[2];
  {
    detail::RecordingPause pause;
    SortResult r = sort_lines(x, axis, k, largest, true, true, "topk");
    outs[0] = r.values;
    outs[1] = r.indices;
  }
  record_op(OpId::topk, in, outs, AxisAttrs{axis, largest});
  return {outs[0], outs[1]};
}

}  // namespace ctrax
