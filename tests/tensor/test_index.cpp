// Reference tests of the indexing ops (tensor/ops/index.cpp): one_hot, take_along_axis
// (gather), index_select and scatter_add, against plain loops over unravelled indices.
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "test_util.h"

using namespace ctrax;
using namespace ctrax::test;

CTRAX_OPS_TESTED(one_hot, take_along_axis, index_select, scatter_add);

namespace {



// Contiguous, transposed-storage and stepped layouts of the same values.
std::vector<std::pair<std::string, Tensor>> layouts(const Tensor& t) {
  return {{"contiguous", t}, {"transposed storage", non_contiguous(t)}, {"stepped", stepped(t)}};
}

// Random integers in [lo, hi) of an index dtype.
Tensor random_indices(const Shape& shape, DType dtype, uint64_t seed, int64_t lo, int64_t hi) {
  return random_tensor(shape, dtype, seed, static_cast<double>(lo), static_cast<double>(hi));
}

// Replaces coordinate `axis` of a multi-index.
std::vector<int64_t> with_axis(std::vector<int64_t> idx, int axis, int64_t value) {
  idx[static_cast<size_t>(axis)] = value;
  return idx;
}

std::string describe(const Shape& s, DType d, const std::string& layout) {
  return to_string(s) + " " + dtype_name(d) + " " + layout;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// one_hot
// ---------------------------------------------------------------------------------------------

TEST_CASE("index: one_hot against a reference, out-of-range indices give zero rows") {
  const Shape shapes[] = {Shape{}, Shape{5}, Shape{3, 4}, Shape{2, 0, 3}, Shape{2, 3, 2}};
  uint64_t seed = 1;
  for (const Shape& shape : shapes)
    for (DType index_dtype : {DType::int32, DType::int64})
      for (int64_t depth : {0, 1, 4})
        for (DType out_dtype : kAllDTypes) {
          const Tensor indices = random_indices(shape, index_dtype, seed++, -2, depth + 2);
          for (const auto& [layout, idx] : layouts(indices)) {
            const Tensor out = one_hot(idx, depth, out_dtype);
            CHECK(out.dtype() == out_dtype);
            CHECK(out.is_contiguous());
            Shape out_shape = shape;
            out_shape.push_back(depth);
            const std::vector<int64_t> iv = indices.to_vector<int64_t>();
            std::vector<double> ref(static_cast<size_t>(out_shape.numel()));
            for (size_t p = 0; p < iv.size(); ++p)
              for (int64_t j = 0; j < depth; ++j) ref[p * depth + j] = iv[p] == j ? 1.0 : 0.0;
            check_close(out, out_shape, ref, {0, 0}, describe(shape, index_dtype, layout));
          }
        }
}

TEST_CASE("index: one_hot default dtype, explicit values and expanded indices") {
  const Tensor out = one_hot(tensor<int64_t>({2, -1, 0, 3}), 3);
  CHECK(out.dtype() == DType::float32);
  check_close(out, Shape{4, 3}, {0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0}, {0, 0});
  // an expanded index tensor (stride 0)
  const Tensor expanded = tensor<int32_t>({1}).expand(Shape{3});
  check_close(one_hot(expanded, 2, DType::int32), Shape{3, 2}, {0, 1, 0, 1, 0, 1}, {0, 0});
}

TEST_CASE("index: one_hot errors") {
  check_error([] { one_hot(tensor<float>({1.f}), 3); }, {"one_hot", "int32 or int64", "float32"});
  check_error([] { one_hot(tensor<bool>({true}), 3); }, {"one_hot", "bool"});
  check_error([] { one_hot(tensor<int64_t>({1}), -1); }, {"one_hot", "depth", "-1"});
  check_error([] { one_hot(zeros(Shape{1, 1, 1, 1, 1, 1, 1, 1}, DType::int64), 2); }, {"one_hot", "rank", "9"});
  check_error([] { one_hot(Tensor(), 2); }, {"one_hot", "undefined"});
}

// ---------------------------------------------------------------------------------------------
// take_along_axis / gather
// ---------------------------------------------------------------------------------------------

namespace {
// out[p] = x[p with axis coordinate index[p]] with x and index broadcast on other axes.
std::vector<double> take_along_axis_ref(const Tensor& x, const Tensor& index, int axis, Shape& out_shape) {
  const int rank = x.rank();
  const int a = axis < 0 ? axis + rank : axis;
  out_shape = index.shape();
  for (int d = 0; d < rank; ++d)
    if (d != a) out_shape[d] = x.shape()[d] == 1 ? index.shape()[d] : x.shape()[d];
  const std::vector<double> xv = x.to_vector<double>();
  const std::vector<int64_t> iv = index.to_vector<int64_t>();
  const int64_t n = x.shape()[a];
  std::vector<double> ref(static_cast<size_t>(out_shape.numel()));
  for (int64_t p = 0; p < out_shape.numel(); ++p) {
    const std::vector<int64_t> oi = unravel(p, out_shape);
    int64_t j = iv[static_cast<size_t>(ravel_broadcast(oi, index.shape()))];
    if (j < 0) j += n;
    ref[static_cast<size_t>(p)] = xv[static_cast<size_t>(ravel_broadcast(with_axis(oi, a, j), x.shape()))];
  }
  return ref;
}
}  // namespace

TEST_CASE("index: take_along_axis against a reference (ranks 1-4, all dtypes, negative indices and axes)") {
  struct Case {
    Shape x, index;
    int axis;
  };
  const Case cases[] = {
      {{5}, {3}, 0},
      {{5}, {0}, -1},
      {{4, 3}, {4, 2}, 1},
      {{4, 3}, {6, 3}, 0},
      {{4, 3}, {1, 5}, -1},        // index broadcast over rows
      {{1, 3}, {4, 3}, 1},         // x broadcast over rows
      {{3, 4, 5}, {3, 2, 5}, 1},
      {{3, 4, 5}, {3, 4, 2}, -1},
      {{3, 4, 5}, {1, 4, 1}, 2},
      {{2, 3, 4, 3}, {2, 3, 4, 5}, 3},
      {{2, 3, 4, 3}, {2, 1, 4, 1}, -3},
      {{2, 0, 3}, {2, 0, 2}, 2},   // zero-sized non-axis dim
      {{2, 3}, {2, 0}, 1},         // no picks
  };
  uint64_t seed = 100;
  for (const Case& c : cases)
    for (DType dtype : kAllDTypes)
      for (DType index_dtype : {DType::int32, DType::int64}) {
        const int a = c.axis < 0 ? c.axis + c.x.rank() : c.axis;
        const int64_t n = c.x[a];
        const Tensor x = random_tensor(c.x, dtype, seed++, -50, 50);
        const Tensor index = random_indices(c.index, index_dtype, seed++, -n, n);
        Shape out_shape;
        const std::vector<double> ref = take_along_axis_ref(x, index, c.axis, out_shape);
        for (const auto& [xl, xs] : layouts(x))
          for (const auto& [il, is] : layouts(index)) {
            const Tensor out = take_along_axis(xs, is, c.axis);
            CHECK(out.dtype() == dtype);
            CHECK(out.is_contiguous());
            check_close(out, out_shape, ref, {0, 0}, describe(c.x, dtype, xl + " x, " + il + " index"));
          }
        // gather is the same op
        check_close(gather(x, index, c.axis), out_shape, ref, {0, 0}, "gather");
      }
}

TEST_CASE("index: take_along_axis on expanded inputs and a large (threaded) case") {
  // x expanded along rows (stride 0), index expanded too
  const Tensor row = tensor<float>({10.f, 20.f, 30.f});
  const Tensor x = row.expand(Shape{4, 3});
  const Tensor index = tensor<int64_t>({2, 0}, Shape{1, 2}).expand(Shape{4, 2});
  check_close(take_along_axis(x, index, 1), Shape{4, 2}, {30, 10, 30, 10, 30, 10, 30, 10}, {0, 0});

  const Tensor big = random_tensor(Shape{300, 257}, DType::float32, 7);
  const Tensor big_index = random_indices(Shape{300, 200}, DType::int64, 8, -257, 257);
  Shape out_shape;
  const std::vector<double> ref = take_along_axis_ref(big, big_index, 1, out_shape);
  check_close(take_along_axis(big, big_index, 1), out_shape, ref, {0, 0});
}

TEST_CASE("index: take_along_axis errors") {
  const Tensor x = zeros(Shape{2, 3});
  check_error([&] { take_along_axis(x, tensor<int64_t>({0, 3}, Shape{1, 2}), 1); },
              {"take_along_axis", "index 3", "axis 1", "size 3"});
  check_error([&] { take_along_axis(x, tensor<int32_t>({-4}, Shape{1, 1}), -1); },
              {"take_along_axis", "index -4", "axis 1", "size 3"});
  check_error([&] { take_along_axis(x, tensor<int64_t>({2}, Shape{1, 1}), 0); },
              {"take_along_axis", "index 2", "axis 0", "size 2"});
  check_error([&] { take_along_axis(zeros(Shape{2, 0}), zeros(Shape{2, 1}, DType::int64), 1); },
              {"take_along_axis", "index 0", "size 0"});
  check_error([&] { take_along_axis(x, zeros(Shape{2, 1}), 1); }, {"take_along_axis", "int32 or int64", "float32"});
  check_error([&] { take_along_axis(x, zeros(Shape{2, 1}, DType::boolean), 1); }, {"take_along_axis", "bool"});
  check_error([&] { take_along_axis(x, zeros(Shape{2}, DType::int64), 1); },
              {"take_along_axis", "[2]", "[2, 3]", "rank"});
  check_error([&] { take_along_axis(x, zeros(Shape{3, 1}, DType::int64), 1); },
              {"take_along_axis", "[2, 3]", "[3, 1]", "broadcast"});
  check_error([&] { take_along_axis(x, zeros(Shape{2, 1}, DType::int64), 2); }, {"take_along_axis", "axis 2"});
  check_error([&] { take_along_axis(x, zeros(Shape{2, 1}, DType::int64), -3); }, {"take_along_axis", "axis -3"});
  check_error([&] { take_along_axis(scalar_tensor(1.0), scalar_tensor(0, DType::int64), 0); },
              {"take_along_axis", "axis 0", "rank 0"});
  check_error([&] { take_along_axis(Tensor(), zeros(Shape{2, 1}, DType::int64), 1); },
              {"take_along_axis", "undefined"});
  check_error([&] { take_along_axis(x, Tensor(), 1); }, {"take_along_axis", "undefined"});
}

// ---------------------------------------------------------------------------------------------
// index_select
// ---------------------------------------------------------------------------------------------

TEST_CASE("index: index_select against a reference (all dtypes, layouts, negative axes and indices)") {
  const Shape shapes[] = {Shape{6}, Shape{4, 3}, Shape{2, 5, 3}, Shape{2, 3, 2, 4}, Shape{3, 0, 2}};
  uint64_t seed = 300;
  for (const Shape& shape : shapes)
    for (int axis = -shape.rank(); axis < shape.rank(); ++axis)
      for (DType dtype : kAllDTypes)
        for (int64_t m : {0, 1, 7}) {
          const int a = axis < 0 ? axis + shape.rank() : axis;
          const int64_t n = shape[a];
          if (n == 0 && m > 0) continue;
          const DType index_dtype = seed % 2 ? DType::int32 : DType::int64;
          const Tensor x = random_tensor(shape, dtype, seed++, -50, 50);
          const Tensor indices = random_indices(Shape{m}, index_dtype, seed++, -n, n);
          const std::vector<double> xv = x.to_vector<double>();
          const std::vector<int64_t> iv = indices.to_vector<int64_t>();
          Shape out_shape = shape;
          out_shape[a] = m;
          std::vector<double> ref(static_cast<size_t>(out_shape.numel()));
          for (int64_t p = 0; p < out_shape.numel(); ++p) {
            const std::vector<int64_t> oi = unravel(p, out_shape);
            int64_t j = iv[static_cast<size_t>(oi[a])];
            if (j < 0) j += n;
            ref[static_cast<size_t>(p)] = xv[static_cast<size_t>(ravel_broadcast(with_axis(oi, a, j), shape))];
          }
          for (const auto& [xl, xs] : layouts(x))
            for (const auto& [il, is] : layouts(indices)) {
              const Tensor out = index_select(xs, axis, is);
              CHECK(out.dtype() == dtype);
              CHECK(out.is_contiguous());
              check_close(out, out_shape, ref, {0, 0},
                          describe(shape, dtype, xl + " x, " + il + " indices, axis " + std::to_string(axis)));
            }
        }
}

TEST_CASE("index: index_select of an expanded tensor and of minibatch rows") {
  const Tensor x = tensor<double>({1, 2, 3}).expand(Shape{4, 3});
  check_close(index_select(x, 0, tensor<int64_t>({3, 0})), Shape{2, 3}, {1, 2, 3, 1, 2, 3}, {0, 0});
  check_close(index_select(x, 1, tensor<int64_t>({-1, 0, 0})), Shape{4, 3},
              {3, 1, 1, 3, 1, 1, 3, 1, 1, 3, 1, 1}, {0, 0});
  const Tensor obs = arange(0.0, 12.0, 1.0).reshape(Shape{4, 3});
  const Tensor picked = index_select(obs, 0, tensor<int32_t>({2, 2, 0}));
  check_close(picked, Shape{3, 3}, {6, 7, 8, 6, 7, 8, 0, 1, 2}, {0, 0});
  CHECK_FALSE(picked.shares_storage_with(obs));
}

TEST_CASE("index: index_select errors") {
  const Tensor x = zeros(Shape{2, 3});
  check_error([&] { index_select(x, 1, tensor<int64_t>({0, 5})); }, {"index_select", "index 5", "axis 1", "size 3"});
  // Several bad indices: the first is named (in-range indices skip resolving; these do not).
  check_error([&] { index_select(x, 1, tensor<int64_t>({0, 7, -9, 2})); }, {"index_select", "index 7", "size 3"});
  check_error([&] { index_select(x, 1, tensor<int32_t>({2, -4, 9})); }, {"index_select", "index -4", "size 3"});
  check_error([&] { index_select(x, 0, tensor<int32_t>({-3})); }, {"index_select", "index -3", "axis 0", "size 2"});
  check_error([&] { index_select(non_contiguous(x), 0, tensor<int32_t>({2})); },
              {"index_select", "index 2", "axis 0", "size 2"});
  // every index is checked even when the result is empty
  check_error([&] { index_select(zeros(Shape{0, 3}), 1, tensor<int64_t>({3})); },
              {"index_select", "index 3", "size 3"});
  check_error([&] { index_select(x, 0, tensor<float>({0.f})); }, {"index_select", "int32 or int64", "float32"});
  check_error([&] { index_select(x, 0, zeros(Shape{1, 1}, DType::int64)); }, {"index_select", "1-D", "[1, 1]"});
  check_error([&] { index_select(x, 0, scalar_tensor(0, DType::int64)); }, {"index_select", "1-D", "[]"});
  check_error([&] { index_select(x, 2, tensor<int64_t>({0})); }, {"index_select", "axis 2"});
  check_error([&] { index_select(scalar_tensor(1.0), 0, tensor<int64_t>({0})); }, {"index_select", "rank 0"});
  check_error([&] { index_select(Tensor(), 0, tensor<int64_t>({0})); }, {"index_select", "undefined"});
  check_error([&] { index_select(x, 0, Tensor()); }, {"index_select", "undefined"});
}

// ---------------------------------------------------------------------------------------------
// scatter_add
// ---------------------------------------------------------------------------------------------

namespace {
// out = x; out[p with axis coordinate index[p]] += src[p] for p in row-major order.
std::vector<double> scatter_add_ref(const Tensor& x, int axis, const Tensor& index, const Tensor& src) {
  const int a = axis < 0 ? axis + x.rank() : axis;
  const int64_t n = x.shape()[a];
  std::vector<double> out = x.to_vector<double>();
  const std::vector<int64_t> iv = index.to_vector<int64_t>();
  const std::vector<double> sv = src.to_vector<double>();
  for (int64_t p = 0; p < index.numel(); ++p) {
    const std::vector<int64_t> pi = unravel(p, index.shape());
    int64_t j = iv[static_cast<size_t>(p)];
    if (j < 0) j += n;
    int64_t flat = 0;
    const std::vector<int64_t> target = with_axis(pi, a, j);
    for (int d = 0; d < x.rank(); ++d) flat = flat * x.shape()[d] + target[static_cast<size_t>(d)];
    out[static_cast<size_t>(flat)] += sv[static_cast<size_t>(p)];
  }
  return out;
}
}  // namespace

TEST_CASE("index: scatter_add against a reference (duplicates, promotion, layouts, shorter index)") {
  struct Case {
    Shape x, index;
    int axis;
  };
  const Case cases[] = {
      {{5}, {8}, 0},
      {{4, 3}, {4, 6}, 1},
      {{4, 3}, {9, 3}, 0},
      {{4, 3}, {2, 5}, -1},      // index shorter than x on axis 0: rows 2, 3 untouched
      {{3, 4, 5}, {3, 2, 5}, 1},
      {{3, 4, 5}, {2, 3, 7}, -1},
      {{2, 3, 2, 3}, {2, 3, 2, 4}, 3},
      {{2, 3, 2, 3}, {5, 3, 2, 3}, 0},
      {{2, 0, 3}, {2, 0, 4}, 2},
      {{2, 3}, {2, 0}, 1},
  };
  struct Dtypes {
    DType x, src;
  };
  const Dtypes dtype_pairs[] = {{DType::float32, DType::float32}, {DType::float64, DType::float64},
                                {DType::float64, DType::float32}, {DType::float32, DType::int32},
                                {DType::int32, DType::int32},     {DType::int64, DType::int32},
                                {DType::int64, DType::boolean},   {DType::float32, DType::boolean}};
  uint64_t seed = 500;
  for (const Case& c : cases)
    for (const Dtypes& dt : dtype_pairs) {
      const int a = c.axis < 0 ? c.axis + c.x.rank() : c.axis;
      const int64_t n = c.x[a];
      const DType index_dtype = seed % 2 ? DType::int32 : DType::int64;
      const Tensor x = random_tensor(c.x, dt.x, seed++, -20, 20);
      const Tensor index = random_indices(c.index, index_dtype, seed++, -n, n);
      const Tensor src = random_tensor(c.index, dt.src, seed++, -20, 20);
      const std::vector<double> ref = scatter_add_ref(x, c.axis, index, src);
      for (const auto& [xl, xs] : layouts(x))
        for (const auto& [il, is] : layouts(index))
          for (const auto& [sl, ss] : layouts(src)) {
            const Tensor out = scatter_add(xs, c.axis, is, ss);
            CHECK(out.dtype() == dt.x);
            CHECK(out.is_contiguous());
            check_close(out, c.x, ref, default_tolerance(dt.x),
                        describe(c.x, dt.x, xl + " x, " + il + " index, " + sl + " src " + dtype_name(dt.src)));
          }
      // out-of-place: x is unchanged
      check_close(x, c.x, x.to_vector<double>(), {0, 0});
    }
}

TEST_CASE("index: scatter_add accumulates duplicates in increasing position, deterministically") {
  // In float32, 1e8 + 1 rounds back to 1e8, so the result shows the order of the additions:
  // position order gives ((0 + 1e8) + 1) - 1e8 = 0, while adding -1e8 before 1 would give 1.
  const Tensor x = zeros(Shape{1});
  const Tensor index = zeros(Shape{3}, DType::int64);
  check_close(scatter_add(x, 0, index, tensor<float>({1e8f, 1.f, -1e8f})), Shape{1}, {0.0}, {0, 0});
  check_close(scatter_add(x, 0, index, tensor<float>({1e8f, -1e8f, 1.f})), Shape{1}, {1.0}, {0, 0});

  // many duplicates into few targets, large enough that a threaded loop would split it
  const Tensor big_index = random_indices(Shape{100000}, DType::int64, 9, 0, 3);
  const Tensor big_src = random_tensor(Shape{100000}, DType::float32, 10);
  const Tensor first = scatter_add(zeros(Shape{3}), 0, big_index, big_src);
  std::vector<float> ordered(3, 0.f);
  const std::vector<int64_t> iv = big_index.to_vector<int64_t>();
  const std::vector<float> sv = big_src.to_vector<float>();
  for (size_t p = 0; p < iv.size(); ++p) ordered[static_cast<size_t>(iv[p])] += sv[p];
  const std::vector<float> got = first.to_vector<float>();
  for (int j = 0; j < 3; ++j) CHECK(got[j] == ordered[j]);  // bit-exact: same order of float adds
}

TEST_CASE("index: scatter_add wraps integer overflow and reads expanded src") {
  const Tensor x = tensor<int32_t>({std::numeric_limits<int32_t>::max(), 0});
  check_close(scatter_add(x, 0, tensor<int64_t>({0}), tensor<int32_t>({1})), Shape{2},
              {static_cast<double>(std::numeric_limits<int32_t>::min()), 0}, {0, 0});
  const Tensor src = scalar_tensor(2.0).expand(Shape{2, 3});
  const Tensor index = tensor<int64_t>({0, 1, 1, 2, 2, 2}, Shape{2, 3});
  check_close(scatter_add(zeros(Shape{2, 3}), 1, index, src), Shape{2, 3}, {2, 4, 0, 0, 0, 6}, {0, 0});
}

TEST_CASE("index: scatter_add errors") {
  const Tensor x = zeros(Shape{2, 3});
  const Tensor index = zeros(Shape{2, 2}, DType::int64);
  const Tensor src = ones(Shape{2, 2});
  check_error([&] { scatter_add(x, 1, tensor<int64_t>({0, 3}, Shape{1, 2}), ones(Shape{1, 2})); },
              {"scatter_add", "index 3", "axis 1", "size 3"});
  check_error([&] { scatter_add(x, 0, tensor<int32_t>({-3}, Shape{1, 1}), ones(Shape{1, 1})); },
              {"scatter_add", "index -3", "axis 0", "size 2"});
  check_error([&] { scatter_add(zeros(Shape{2, 3}, DType::boolean), 1, index, src.to(DType::boolean)); },
              {"scatter_add", "bool"});
  check_error([&] { scatter_add(x, 1, index, src.to(DType::float64)); }, {"scatter_add", "float64", "float32"});
  check_error([&] { scatter_add(x.to(DType::int32), 1, index, src); }, {"scatter_add", "float32", "int32"});
  check_error([&] { scatter_add(x.to(DType::int32), 1, index, src.to(DType::int64)); },
              {"scatter_add", "int64", "int32"});
  check_error([&] { scatter_add(x, 1, index, ones(Shape{2, 1})); }, {"scatter_add", "[2, 2]", "[2, 1]", "same shape"});
  check_error([&] { scatter_add(x, 0, zeros(Shape{2}, DType::int64), ones(Shape{2})); }, {"scatter_add", "rank"});
  check_error([&] { scatter_add(x, 1, zeros(Shape{3, 1}, DType::int64), ones(Shape{3, 1})); },
              {"scatter_add", "[3, 1]", "[2, 3]", "axis 0"});
  check_error([&] { scatter_add(x, 1, src, src); }, {"scatter_add", "int32 or int64", "float32"});
  check_error([&] { scatter_add(x, 2, index, src); }, {"scatter_add", "axis 2"});
  check_error([&] { scatter_add(Tensor(), 1, index, src); }, {"scatter_add", "undefined"});
  check_error([&] { scatter_add(x, 1, Tensor(), src); }, {"scatter_add", "undefined"});
  check_error([&] { scatter_add(x, 1, index, Tensor()); }, {"scatter_add", "undefined"});
}
