// Reference tests of the joining and rearranging ops (tensor/ops/join.cpp): concatenate,
// stack, split, pad and flip, against plain loops over unravelled indices.
#include <string>
#include <utility>
#include <vector>

#include "test_util.h"

using namespace ctrax;
using namespace ctrax::test;

CTRAX_OPS_TESTED(concatenate, stack, split, pad, flip);

namespace {



// Layout i of t: 0 contiguous, 1 transposed storage, 2 stepped.
Tensor layout(const Tensor& t, int i) { return i == 0 ? t : i == 1 ? non_contiguous(t) : stepped(t); }
const char* kLayoutNames[] = {"contiguous", "transposed storage", "stepped"};

int norm(int axis, int rank) { return axis < 0 ? axis + rank : axis; }

// Reference concatenation: walk the output and find which input holds each element.
std::vector<double> concatenate_ref(const std::vector<Tensor>& xs, int a, Shape& out_shape) {
  out_shape = xs[0].shape();
  out_shape[a] = 0;
  for (const Tensor& x : xs) out_shape[a] += x.shape()[a];
  std::vector<std::vector<double>> values;
  for (const Tensor& x : xs) values.push_back(x.to_vector<double>());
  std::vector<double> ref(static_cast<size_t>(out_shape.numel()));
  for (int64_t p = 0; p < out_shape.numel(); ++p) {
    std::vector<int64_t> oi = unravel(p, out_shape);
    size_t which = 0;
    while (oi[a] >= xs[which].shape()[a]) oi[a] -= xs[which++].shape()[a];
    ref[static_cast<size_t>(p)] = values[which][static_cast<size_t>(ravel_broadcast(oi, xs[which].shape()))];
  }
  return ref;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// concatenate
// ---------------------------------------------------------------------------------------------

TEST_CASE("join: concatenate against a reference (ranks 1-4, all dtypes, layouts, empty pieces)") {
  struct Case {
    std::vector<Shape> shapes;
    int axis;
  };
  const Case cases[] = {
      {{{3}}, 0},
      {{{3}, {0}, {4}}, 0},
      {{{2, 3}, {4, 3}}, 0},
      {{{2, 3}, {2, 1}, {2, 5}}, -1},
      {{{2, 3, 4}, {2, 2, 4}}, 1},
      {{{2, 3, 4}, {2, 3, 1}, {2, 3, 2}}, 2},
      {{{2, 3, 2, 2}, {2, 3, 2, 3}}, -1},
      {{{1, 3, 2, 2}, {2, 3, 2, 2}, {3, 3, 2, 2}}, 0},
      {{{2, 0, 3}, {2, 0, 3}}, 0},     // empty result
      {{{2, 0, 3}, {2, 2, 3}}, 1},     // an empty piece
  };
  uint64_t seed = 1;
  for (const Case& c : cases)
    for (DType dtype : kAllDTypes)
      for (int layout_index = 0; layout_index < 3; ++layout_index) {
        std::vector<Tensor> xs;
        for (size_t i = 0; i < c.shapes.size(); ++i) {
          const Tensor x = random_tensor(c.shapes[i], dtype, seed++, -50, 50);
          // mix layouts: piece i uses layout (layout_index + i) % 3
          xs.push_back(layout(x, (layout_index + static_cast<int>(i)) % 3));
        }
        Shape out_shape;
        const std::vector<double> ref = concatenate_ref(xs, norm(c.axis, c.shapes[0].rank()), out_shape);
        const Tensor out = concatenate(xs, c.axis);
        CHECK(out.dtype() == dtype);
        CHECK(out.is_contiguous());
        check_close(out, out_shape, ref, {0, 0},
                    to_string(c.shapes[0]) + " " + dtype_name(dtype) + " " + kLayoutNames[layout_index]);
      }
}

TEST_CASE("join: concatenate of contiguous inputs (memcpy path), expanded inputs and a copy for one input") {
  const Tensor a = arange(0.0, 6.0, 1.0).reshape(Shape{2, 3});
  const Tensor b = arange(10.0, 14.0, 1.0).reshape(Shape{2, 2});
  check_close(concatenate({a, b}, 1), Shape{2, 5}, {0, 1, 2, 10, 11, 3, 4, 5, 12, 13}, {0, 0});
  check_close(concatenate({a, a}, 0), Shape{4, 3}, {0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5}, {0, 0});
  const Tensor row = tensor<float>({7.f, 8.f}).expand(Shape{2, 2});
  check_close(concatenate({b, row}, 0), Shape{4, 2}, {10, 11, 12, 13, 7, 8, 7, 8}, {0, 0});
  const Tensor single = concatenate({a});
  CHECK_FALSE(single.shares_storage_with(a));
  check_close(single, a, {0, 0});
}

TEST_CASE("join: concatenate and stack promote dtypes") {
  const Tensor i = tensor<int32_t>({1, 2});
  const Tensor f = tensor<float>({0.5f});
  const Tensor b = tensor<bool>({true, false});
  const Tensor l = tensor<int64_t>({-3});
  const Tensor d = tensor<double>({0.25});
  Tensor out = concatenate({i, f});
  CHECK(out.dtype() == DType::float32);
  check_close(out, Shape{3}, {1, 2, 0.5}, {0, 0});
  out = concatenate({b, l, i});
  CHECK(out.dtype() == DType::int64);
  check_close(out, Shape{5}, {1, 0, -3, 1, 2}, {0, 0});
  out = concatenate({f, d});
  CHECK(out.dtype() == DType::float64);
  out = concatenate({b, b});
  CHECK(out.dtype() == DType::boolean);
  check_close(out, Shape{4}, {1, 0, 1, 0}, {0, 0});
  out = stack({i, b});
  CHECK(out.dtype() == DType::int32);
  check_close(out, Shape{2, 2}, {1, 2, 1, 0}, {0, 0});
}

TEST_CASE("join: concatenate errors") {
  check_error([] { concatenate({}); }, {"concatenate", "empty list"});
  const Tensor a = zeros(Shape{2, 3});
  check_error([&] { concatenate({a, zeros(Shape{3})}); }, {"concatenate", "tensor 1", "[3]", "[2, 3]", "rank"});
  check_error([&] { concatenate({a, a, zeros(Shape{2, 4})}, 0); }, {"concatenate", "tensor 2", "[2, 4]", "[2, 3]"});
  check_error([&] { concatenate({a, a}, 2); }, {"concatenate", "axis 2"});
  check_error([&] { concatenate({a, a}, -3); }, {"concatenate", "axis -3"});
  check_error([&] { concatenate({scalar_tensor(1.0), scalar_tensor(2.0)}); }, {"concatenate", "rank 0"});
  check_error([&] { concatenate({a, Tensor()}); }, {"concatenate", "tensor 1", "undefined"});
  // sizes whose sum overflows int64 (possible with expanded stride-0 dims)
  const Tensor huge = scalar_tensor(1.0).expand(Shape{int64_t{1} << 62});
  check_error([&] { concatenate({huge, huge, huge}); }, {"concatenate", "overflow"});
}

// ---------------------------------------------------------------------------------------------
// stack
// ---------------------------------------------------------------------------------------------

TEST_CASE("join: stack against a reference (every axis, rank 0-3, layouts)") {
  const Shape shapes[] = {Shape{}, Shape{4}, Shape{2, 3}, Shape{2, 0}, Shape{3, 2, 2}};
  uint64_t seed = 200;
  for (const Shape& shape : shapes)
    for (int count : {1, 3})
      for (int axis = -(shape.rank() + 1); axis <= shape.rank(); ++axis)
        for (DType dtype : {DType::float32, DType::int64, DType::boolean}) {
          std::vector<Tensor> xs;
          for (int i = 0; i < count; ++i) xs.push_back(layout(random_tensor(shape, dtype, seed++, -50, 50), i % 3));
          const int a = norm(axis, shape.rank() + 1);
          Shape out_shape = shape;
          out_shape.insert(a, count);
          std::vector<std::vector<double>> values;
          for (const Tensor& x : xs) values.push_back(x.to_vector<double>());
          std::vector<double> ref(static_cast<size_t>(out_shape.numel()));
          for (int64_t p = 0; p < out_shape.numel(); ++p) {
            std::vector<int64_t> oi = unravel(p, out_shape);
            const int64_t which = oi[a];
            oi.erase(oi.begin() + a);
            ref[static_cast<size_t>(p)] = values[static_cast<size_t>(which)][static_cast<size_t>(ravel_broadcast(oi, shape))];
          }
          const Tensor out = stack(xs, axis);
          CHECK(out.is_contiguous());
          CHECK(out.dtype() == dtype);
          check_close(out, out_shape, ref, {0, 0}, to_string(shape) + " axis " + std::to_string(axis));
        }
}

TEST_CASE("join: stack errors") {
  const Tensor a = zeros(Shape{2, 3});
  check_error([] { stack({}); }, {"stack", "empty list"});
  check_error([&] { stack({a, a, zeros(Shape{3, 2})}); }, {"stack", "tensor 2", "[3, 2]", "[2, 3]"});
  check_error([&] { stack({a, zeros(Shape{2, 3, 1})}); }, {"stack", "tensor 1", "[2, 3, 1]", "[2, 3]"});
  check_error([&] { stack({a, a}, 3); }, {"stack", "axis 3"});
  check_error([&] { stack({a, a}, -4); }, {"stack", "axis -4"});
  check_error([&] { stack({Tensor(), a}); }, {"stack", "tensor 0", "undefined"});
  const Tensor rank8 = zeros(Shape{1, 1, 1, 1, 1, 1, 1, 1});
  check_error([&] { stack({rank8, rank8}); }, {"stack", "rank 9"});
}

// ---------------------------------------------------------------------------------------------
// split
// ---------------------------------------------------------------------------------------------

namespace {
void check_split_parts(const Tensor& x, const std::vector<Tensor>& parts, const std::vector<int64_t>& sizes, int axis,
                       const std::string& what) {
  REQUIRE(parts.size() == sizes.size());
  const int a = norm(axis, x.rank());
  const std::vector<double> xv = x.to_vector<double>();
  int64_t start = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    Shape part_shape = x.shape();
    part_shape[a] = sizes[i];
    std::vector<double> ref(static_cast<size_t>(part_shape.numel()));
    for (int64_t p = 0; p < part_shape.numel(); ++p) {
      std::vector<int64_t> pi = unravel(p, part_shape);
      pi[a] += start;
      ref[static_cast<size_t>(p)] = xv[static_cast<size_t>(ravel_broadcast(pi, x.shape()))];
    }
    CHECK(parts[i].dtype() == x.dtype());
    CHECK(parts[i].is_contiguous());
    CHECK_FALSE(parts[i].shares_storage_with(x));
    check_close(parts[i], part_shape, ref, {0, 0}, what + " part " + std::to_string(i));
    start += sizes[i];
  }
}
}  // namespace

TEST_CASE("join: split by sections and by sizes against a reference") {
  uint64_t seed = 400;
  const Shape shapes[] = {Shape{6}, Shape{4, 6}, Shape{2, 6, 3}, Shape{2, 3, 2, 6}};
  for (const Shape& shape : shapes)
    for (int axis = -shape.rank(); axis < shape.rank(); ++axis)
      for (DType dtype : kAllDTypes)
        for (int layout_index = 0; layout_index < 3; ++layout_index) {
          const Tensor x = layout(random_tensor(shape, dtype, seed++, -50, 50), layout_index);
          const int64_t n = shape[norm(axis, shape.rank())];
          const std::string what = to_string(shape) + " " + dtype_name(dtype) + " " + kLayoutNames[layout_index] +
                                   " axis " + std::to_string(axis);
          for (int64_t sections = 1; sections <= n; ++sections) {
            if (n % sections) continue;
            check_split_parts(x, split(x, sections, axis), std::vector<int64_t>(sections, n / sections), axis, what);
          }
          const std::vector<int64_t> sizes = {0, n / 2, 0, n - n / 2};
          check_split_parts(x, split(x, sizes, axis), sizes, axis, what + " sizes");
        }
  // an empty axis splits into empty parts
  const Tensor empty_axis = zeros(Shape{0, 2});
  check_split_parts(empty_axis, split(empty_axis, 3, 0), {0, 0, 0}, 0, "empty axis");
  CHECK(split(empty_axis, std::vector<int64_t>{}, 0).empty());
}

TEST_CASE("join: split errors") {
  const Tensor x = zeros(Shape{2, 6});
  check_error([&] { split(x, 4, 1); }, {"split", "4 sections", "axis 1", "size 6"});
  check_error([&] { split(x, 0, 1); }, {"split", "sections", "0"});
  check_error([&] { split(x, -2, 1); }, {"split", "sections", "-2"});
  check_error([&] { split(x, std::vector<int64_t>{2, 3}, 1); }, {"split", "sum to 5", "size 6"});
  check_error([&] { split(x, std::vector<int64_t>{4, 4}, 1); }, {"split", "sum past 6"});
  check_error([&] { split(x, std::vector<int64_t>{7, -1}, 1); }, {"split", "sum past 6"});
  check_error([&] { split(x, std::vector<int64_t>{-1, 7}, 1); }, {"split", "-1", ">= 0"});
  check_error([&] { split(x, 2, 2); }, {"split", "axis 2"});
  check_error([&] { split(scalar_tensor(1.0), 1, 0); }, {"split", "rank 0"});
  check_error([&] { split(Tensor(), 1, 0); }, {"split", "undefined"});
  check_error([&] { split(zeros(Shape{0}), int64_t{1} << 40, 0); }, {"split", "sections"});
}

// ---------------------------------------------------------------------------------------------
// pad
// ---------------------------------------------------------------------------------------------

TEST_CASE("join: pad against a reference (ranks 0-4, all dtypes, layouts, value conversion)") {
  struct Case {
    Shape shape;
    std::vector<std::pair<int64_t, int64_t>> widths;
  };
  const Case cases[] = {
      {{}, {}},
      {{3}, {{2, 1}}},
      {{0}, {{1, 2}}},
      {{2, 3}, {{0, 0}, {0, 0}}},
      {{2, 3}, {{1, 0}, {0, 2}}},
      {{2, 0}, {{1, 1}, {1, 1}}},
      {{2, 3, 2}, {{1, 1}, {2, 0}, {0, 3}}},
      {{2, 2, 1, 3}, {{0, 1}, {1, 0}, {2, 2}, {1, 1}}},
  };
  uint64_t seed = 600;
  for (const Case& c : cases)
    for (DType dtype : kAllDTypes)
      for (double value : {0.0, -2.75})
        for (int layout_index = 0; layout_index < 3; ++layout_index) {
          const Tensor x = random_tensor(c.shape, dtype, seed++, -50, 50);
          Shape out_shape = c.shape;
          for (int d = 0; d < c.shape.rank(); ++d) out_shape[d] += c.widths[d].first + c.widths[d].second;
          // the pad value as the dtype stores it: truncated for integers, != 0 for bool
          const double stored = is_bool(dtype) ? (value != 0) : is_integer(dtype) ? std::trunc(value) : value;
          const std::vector<double> xv = x.to_vector<double>();
          std::vector<double> ref(static_cast<size_t>(out_shape.numel()), stored);
          for (int64_t p = 0; p < out_shape.numel(); ++p) {
            std::vector<int64_t> oi = unravel(p, out_shape);
            bool inside = true;
            for (int d = 0; d < c.shape.rank(); ++d) {
              oi[d] -= c.widths[d].first;
              inside = inside && oi[d] >= 0 && oi[d] < c.shape[d];
            }
            if (inside) ref[static_cast<size_t>(p)] = xv[static_cast<size_t>(ravel_broadcast(oi, c.shape))];
          }
          const Tensor out = pad(layout(x, layout_index), c.widths, value);
          CHECK(out.dtype() == dtype);
          CHECK(out.is_contiguous());
          check_close(out, out_shape, ref, {0, 0}, to_string(c.shape) + " " + dtype_name(dtype));
        }
  // an expanded input
  check_close(pad(tensor<float>({1.f, 2.f}).expand(Shape{2, 2}), {{1, 0}, {0, 1}}, 9.0), Shape{3, 3},
              {9, 9, 9, 1, 2, 9, 1, 2, 9}, {0, 0});
}

TEST_CASE("join: pad errors") {
  const Tensor x = zeros(Shape{2, 3});
  check_error([&] { pad(x, {{1, 1}}); }, {"pad", "1 (before, after) pairs", "[2, 3]", "2"});
  check_error([&] { pad(x, {{0, 0}, {0, 0}, {0, 0}}); }, {"pad", "3 (before, after) pairs"});
  check_error([&] { pad(x, {{0, 0}, {-1, 2}}); }, {"pad", "(-1, 2)", "axis 1", "negative"});
  check_error([&] { pad(x, {{0, -3}, {0, 0}}); }, {"pad", "(0, -3)", "axis 0"});
  check_error([&] { pad(x, {{0, 0}, {INT64_MAX, 1}}); }, {"pad", "overflow"});
  check_error([&] { pad(Tensor(), {}); }, {"pad", "undefined"});
}

// ---------------------------------------------------------------------------------------------
// flip
// ---------------------------------------------------------------------------------------------

TEST_CASE("join: flip against a reference (every axis subset, all dtypes, layouts)") {
  const Shape shapes[] = {Shape{}, Shape{5}, Shape{3, 4}, Shape{2, 3, 4}, Shape{2, 1, 3, 2}, Shape{2, 0, 3}};
  uint64_t seed = 800;
  for (const Shape& shape : shapes)
    for (int mask = 0; mask < (1 << shape.rank()); ++mask)
      for (DType dtype : kAllDTypes)
        for (int layout_index = 0; layout_index < 3; ++layout_index) {
          const Tensor x = random_tensor(shape, dtype, seed++, -50, 50);
          std::vector<int> axes;
          // name the flipped axes alternately by positive and negative numbers
          for (int d = 0; d < shape.rank(); ++d)
            if (mask & (1 << d)) axes.push_back(d % 2 ? d - shape.rank() : d);
          const std::vector<double> xv = x.to_vector<double>();
          std::vector<double> ref(static_cast<size_t>(shape.numel()));
          for (int64_t p = 0; p < shape.numel(); ++p) {
            std::vector<int64_t> oi = unravel(p, shape);
            for (int d = 0; d < shape.rank(); ++d)
              if (mask & (1 << d)) oi[d] = shape[d] - 1 - oi[d];
            ref[static_cast<size_t>(p)] = xv[static_cast<size_t>(ravel_broadcast(oi, shape))];
          }
          const Tensor in = layout(x, layout_index);
          const Tensor out = flip(in, axes);
          CHECK(out.dtype() == dtype);
          CHECK(out.is_contiguous());
          CHECK_FALSE(out.shares_storage_with(in));
          check_close(out, shape, ref, {0, 0}, to_string(shape) + " mask " + std::to_string(mask));
        }
  // an expanded input
  check_close(flip(tensor<int32_t>({1, 2, 3}).expand(Shape{2, 3}), {1}), Shape{2, 3}, {3, 2, 1, 3, 2, 1}, {0, 0});
  // a tensor viewed with a step along the flipped axis
  check_close(flip(arange(0.0, 10.0, 1.0).slice(0, 1, 10, 3), {0}), Shape{3}, {7, 4, 1}, {0, 0});
}

TEST_CASE("join: flip errors") {
  const Tensor x = zeros(Shape{2, 3});
  check_error([&] { flip(x, {0, -2}); }, {"flip", "axis -2", "twice"});
  check_error([&] { flip(x, {2}); }, {"flip", "axis 2"});
  check_error([&] { flip(scalar_tensor(1.0), {0}); }, {"flip", "axis 0", "rank 0"});
  check_error([&] { flip(Tensor(), {}); }, {"flip", "undefined"});
}
