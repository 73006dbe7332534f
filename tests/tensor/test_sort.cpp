// Reference tests of the sorting ops (tensor/ops/sort.cpp): sort, argsort and topk, against
// std::stable_sort of each line with NaN placed explicitly (last ascending, first descending).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "test_util.h"

using namespace ctrax;
using namespace ctrax::test;

CTRAX_OPS_TESTED(sort, argsort, topk);

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Values with many ties (small integers) and, for floating dtypes, a few NaNs and infinities.
Tensor values_with_ties(const Shape& shape, DType dtype, uint64_t seed) {
  std::vector<double> v = random_tensor(shape, DType::int64, seed, -3, 4).to_vector<double>();
  if (is_floating(dtype))
    for (size_t i = 0; i < v.size(); ++i) {
      if (i % 7 == 3) v[i] = kNaN;
      if (i % 11 == 5) v[i] = -INFINITY;
      if (i % 13 == 8) v[i] = 0.5;
    }
  return from_vector(v, shape).to(dtype);
}

// Stable order of positions in one line. Ascending sorts by the key (is NaN, value);
// descending by (is not NaN, -value), so NaN leads and ties keep their order.
std::vector<int64_t> stable_order(const std::vector<double>& line, bool descending) {
  std::vector<int64_t> order(line.size());
  std::iota(order.begin(), order.end(), 0);
  auto key = [&](int64_t i) {
    const double v = line[static_cast<size_t>(i)];
    if (std::isnan(v)) return std::pair<int, double>(descending ? 0 : 1, 0.0);
    return std::pair<int, double>(descending ? 1 : 0, descending ? -v : v);
  };
  std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) { return key(i) < key(j); });
  return order;
}

struct SortRef {
  Shape shape;
  std::vector<double> values, indices;
};

// The first k of the stable order of every line along `axis`.
SortRef sort_ref(const Tensor& x, int axis, int64_t k, bool descending) {
  const Shape shape = x.rank() == 0 ? Shape{1} : x.shape();
  const int a = axis < 0 ? axis + shape.rank() : axis;
  const std::vector<double> xv = x.to_vector<double>();
  SortRef ref;
  ref.shape = x.shape();
  if (x.rank() > 0) ref.shape[a] = k;
  Shape out_shape = shape;
  out_shape[a] = k;
  ref.values.resize(static_cast<size_t>(out_shape.numel()));
  ref.indices.resize(ref.values.size());
  // one line per index of the other axes: sort it once, keep its first k
  Shape lines_shape = shape;
  lines_shape[a] = 1;
  for (int64_t l = 0; l < lines_shape.numel(); ++l) {
    std::vector<int64_t> li = unravel(l, lines_shape);
    std::vector<double> line;
    for (int64_t j = 0; j < shape[a]; ++j) {
      li[a] = j;
      line.push_back(xv[static_cast<size_t>(ravel_broadcast(li, shape))]);
    }
    const std::vector<int64_t> order = stable_order(line, descending);
    for (int64_t j = 0; j < k; ++j) {
      li[a] = j;
      const size_t out = static_cast<size_t>(ravel_broadcast(li, out_shape));
      ref.indices[out] = static_cast<double>(order[static_cast<size_t>(j)]);
      ref.values[out] = line[static_cast<size_t>(order[static_cast<size_t>(j)])];
    }
  }
  return ref;
}

Tensor layout(const Tensor& t, int i) { return i == 0 ? t : i == 1 ? non_contiguous(t) : stepped(t); }

const Shape kShapes[] = {Shape{}, Shape{1}, Shape{9}, Shape{4, 6}, Shape{3, 5, 2}, Shape{2, 3, 2, 4}, Shape{3, 0},
                         Shape{0, 4}};

}  // namespace

TEST_CASE("sort: sort and argsort against a stable reference (all dtypes, axes, layouts, NaN, ties)") {
  uint64_t seed = 1;
  for (const Shape& shape : kShapes)
    for (int axis = -std::max(shape.rank(), 1); axis < std::max(shape.rank(), 1); ++axis)
      for (DType dtype : kAllDTypes)
        for (bool descending : {false, true})
          for (int layout_index = 0; layout_index < 3; ++layout_index) {
            const Tensor x = values_with_ties(shape, dtype, seed++);
            const int a = axis < 0 ? axis + std::max(shape.rank(), 1) : axis;
            const int64_t n = shape.rank() == 0 ? 1 : shape[a];
            const SortRef ref = sort_ref(x, axis, n, descending);
            const Tensor in = layout(x, layout_index);
            const std::string what = to_string(shape) + " " + dtype_name(dtype) + " axis " + std::to_string(axis) +
                                     (descending ? " descending" : " ascending") + " layout " +
                                     std::to_string(layout_index);
            const Tensor sorted = sort(in, axis, descending);
            CHECK(sorted.dtype() == dtype);
            CHECK(sorted.is_contiguous());
            check_close(sorted, ref.shape, ref.values, {0, 0}, what);
            const Tensor order = argsort(in, axis, descending);
            CHECK(order.dtype() == DType::int64);
            check_close(order, ref.shape, ref.indices, {0, 0}, what + " argsort");
          }
}

TEST_CASE("sort: explicit small examples of the NaN and tie rules") {
  const Tensor x = tensor<float>({3.f, 1.f, NAN, 2.f, 1.f, NAN});
  check_close(sort(x), Shape{6}, {1, 1, 2, 3, kNaN, kNaN}, {0, 0});
  check_close(argsort(x), Shape{6}, {1, 4, 3, 0, 2, 5}, {0, 0});
  check_close(sort(x, -1, true), Shape{6}, {kNaN, kNaN, 3, 2, 1, 1}, {0, 0});
  check_close(argsort(x, 0, true), Shape{6}, {2, 5, 0, 3, 1, 4}, {0, 0});
  const Tensor b = tensor<bool>({true, false, true, false});
  check_close(argsort(b), Shape{4}, {1, 3, 0, 2}, {0, 0});
  check_close(argsort(b, 0, true), Shape{4}, {0, 2, 1, 3}, {0, 0});
  // an expanded input: every row is the same line
  const Tensor e = tensor<int32_t>({2, 0, 1}).expand(Shape{2, 3});
  check_close(argsort(e, 1), Shape{2, 3}, {1, 2, 0, 1, 2, 0}, {0, 0});
  check_close(argsort(e, 0), Shape{2, 3}, {0, 0, 0, 1, 1, 1}, {0, 0});
  // integer extremes
  const Tensor big = tensor<int64_t>({std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(), 0});
  CHECK(sort(big).to_vector<int64_t>() ==
        std::vector<int64_t>{std::numeric_limits<int64_t>::min(), 0, std::numeric_limits<int64_t>::max()});
}

TEST_CASE("sort: topk against the first k of the stable sort (largest and smallest)") {
  uint64_t seed = 5000;
  for (const Shape& shape : kShapes)
    for (int axis = -std::max(shape.rank(), 1); axis < std::max(shape.rank(), 1); ++axis)
      for (DType dtype : {DType::float32, DType::float64, DType::int32, DType::boolean})
        for (bool largest : {true, false}) {
          const int a = axis < 0 ? axis + std::max(shape.rank(), 1) : axis;
          const int64_t n = shape.rank() == 0 ? 1 : shape[a];
          for (int64_t k = shape.rank() == 0 ? 1 : 0; k <= n; ++k) {
            const Tensor x = values_with_ties(shape, dtype, seed++);
            const SortRef ref = sort_ref(x, axis, k, largest);
            const std::string what = to_string(shape) + " " + dtype_name(dtype) + " axis " + std::to_string(axis) +
                                     " k " + std::to_string(k) + (largest ? " largest" : " smallest");
            const auto [values, indices] = topk(layout(x, static_cast<int>(k % 3)), k, axis, largest);
            CHECK(values.dtype() == dtype);
            CHECK(indices.dtype() == DType::int64);
            check_close(values, ref.shape, ref.values, {0, 0}, what);
            check_close(indices, ref.shape, ref.indices, {0, 0}, what + " indices");
          }
        }
}

TEST_CASE("sort: topk ties pick the lower index first, and a large threaded case") {
  const auto [v, i] = topk(tensor<int32_t>({5, 7, 5, 7, 1}), 3);
  check_close(v, Shape{3}, {7, 7, 5}, {0, 0});
  check_close(i, Shape{3}, {1, 3, 0}, {0, 0});
  const auto [sv, si] = topk(tensor<double>({5, 7, 5, NAN, 1}), 2, 0, false);
  check_close(sv, Shape{2}, {1, 5}, {0, 0});
  check_close(si, Shape{2}, {4, 0}, {0, 0});
  const auto [nv, ni] = topk(tensor<double>({5, 7, 5, NAN, 1}), 2);
  check_close(nv, Shape{2}, {kNaN, 7}, {0, 0});
  check_close(ni, Shape{2}, {3, 1}, {0, 0});

  const Tensor big = values_with_ties(Shape{200, 300}, DType::float32, 77);
  const SortRef ref = sort_ref(big, 1, 300, false);
  check_close(sort(big, 1), ref.shape, ref.values, {0, 0}, "large sort");
  check_close(argsort(big, 1), ref.shape, ref.indices, {0, 0}, "large argsort");
}

TEST_CASE("sort: errors") {
  const Tensor x = zeros(Shape{2, 3});
  check_error([&] { topk(x, 4); }, {"topk", "k = 4", "size 3", "[0, 3]"});
  check_error([&] { topk(x, -1, 0); }, {"topk", "k = -1", "size 2"});
  check_error([&] { topk(scalar_tensor(1.0), 0); }, {"topk", "k = 0", "rank-0"});
  check_error([&] { topk(x, 1, 2); }, {"topk", "axis 2"});
  check_error([&] { sort(x, 2); }, {"sort", "axis 2"});
  check_error([&] { sort(x, -3); }, {"sort", "axis -3"});
  check_error([&] { argsort(x, 5); }, {"argsort", "axis 5"});
  check_error([&] { sort(scalar_tensor(1.0), 1); }, {"sort", "axis 1", "rank-0"});
  check_error([] { sort(Tensor()); }, {"sort", "undefined"});
  check_error([] { argsort(Tensor()); }, {"argsort", "undefined"});
  check_error([] { topk(Tensor(), 1); }, {"topk", "undefined"});
}
