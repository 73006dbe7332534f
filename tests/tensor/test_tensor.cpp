// Tests of the core Tensor (tensor/tensor.h, tensor.cpp): creation functions, properties,
// every view (checked against reference index arithmetic and for sharing storage), copies,
// conversions, and every misuse that must throw ctrax::Error.
//
// The cases named "tensor: review - ..." pin down defects found in review of tensor.cpp
// (several only showed under ASan/UBSan); they guard the fixes.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <ctrax/kernels/cuda/runtime.h>

#include "test_util.h"

using namespace ctrax;
using namespace ctrax::test;

CTRAX_OPS_TESTED(reshape, permute, slice, expand, squeeze, unsqueeze, contiguous);

namespace {


std::vector<double> vals(const Tensor& t) { return t.to_vector<double>(); }

// 0, 1, 2, ... in `shape` (float64 so the values are exact).
Tensor iota(const Shape& shape, DType dtype = DType::float64) {
  return arange(0.0, static_cast<double>(shape.numel()), 1.0, dtype).reshape(shape);
}

// Row-major values of a strided view computed by hand from its shape, strides and offset
// over the storage values of `base` (a contiguous tensor the view was made from).
std::vector<double> strided_ref(const Tensor& view, const Tensor& base) {
  const std::vector<double> storage = vals(base);
  std::vector<double> out(static_cast<size_t>(view.numel()));
  for (int64_t p = 0; p < view.numel(); ++p) {
    const std::vector<int64_t> idx = unravel(p, view.shape());
    int64_t flat = view.offset() - base.offset();
    for (int d = 0; d < view.rank(); ++d) flat += idx[static_cast<size_t>(d)] * view.strides()[d];
    out[static_cast<size_t>(p)] = storage[static_cast<size_t>(flat)];
  }
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Creation
// ---------------------------------------------------------------------------------------------

TEST_CASE("tensor: zeros, ones, full, *_like and scalar_tensor for every dtype") {
  for (DType dtype : kAllDTypes) {
    const Tensor z = zeros(Shape{2, 3}, dtype);
    CHECK(z.dtype() == dtype);
    CHECK(z.shape() == Shape{2, 3});
    check_close(z, Shape{2, 3}, std::vector<double>(6, 0.0), {0, 0});
    check_close(ones(Shape{4}, dtype), Shape{4}, std::vector<double>(4, 1.0), {0, 0});
    const double stored = is_bool(dtype) ? 1.0 : is_integer(dtype) ? -2.0 : -2.5;
    check_close(full(Shape{3}, -2.5, dtype), Shape{3}, std::vector<double>(3, stored), {0, 0});
    const Tensor like = full_like(z, 1.0);
    CHECK(like.dtype() == dtype);
    CHECK(like.shape() == z.shape());
    CHECK_FALSE(like.shares_storage_with(z));
    check_close(zeros_like(like), Shape{2, 3}, std::vector<double>(6, 0.0), {0, 0});
    check_close(ones_like(z), Shape{2, 3}, std::vector<double>(6, 1.0), {0, 0});
    const Tensor s = scalar_tensor(3.0, dtype);
    CHECK(s.rank() == 0);
    CHECK(s.numel() == 1);
    CHECK(s.item<double>() == (is_bool(dtype) ? 1.0 : 3.0));
    // zero-sized tensors are fine everywhere
    const Tensor e = zeros(Shape{2, 0, 3}, dtype);
    CHECK(e.numel() == 0);
    CHECK(vals(e).empty());
  }
  CHECK(zeros(Shape{2}).dtype() == DType::float32);  // default dtype
  // full converts the value as Tensor::to would: saturating, NaN -> 0 for integers
  check_close(full(Shape{1}, 1e30, DType::int32), Shape{1}, {2147483647.0}, {0, 0});
  check_close(full(Shape{1}, NAN, DType::int64), Shape{1}, {0.0}, {0, 0});
}

TEST_CASE("tensor: arange with positive, negative and fractional steps, and empty ranges") {
  check_close(arange(5), Shape{5}, {0, 1, 2, 3, 4}, {0, 0});
  CHECK(arange(5).dtype() == DType::int64);
  check_close(arange(0), Shape{0}, {}, {0, 0});
  check_close(arange(-3), Shape{0}, {}, {0, 0});
  check_close(arange(2.0, 5.0), Shape{3}, {2, 3, 4}, {0, 0});
  CHECK(arange(2.0, 5.0).dtype() == DType::float32);
  check_close(arange(5.0, 0.0, -1.5, DType::float64), Shape{4}, {5, 3.5, 2, 0.5}, {0, 0});
  check_close(arange(0.0, 1.0, 0.25, DType::float64), Shape{4}, {0, 0.25, 0.5, 0.75}, {0, 0});
  check_close(arange(0.0, 1.1, 0.5, DType::int32), Shape{3}, {0, 0, 1}, {0, 0});  // 0, 0.5, 1 truncated
  check_close(arange(0.0, 5.0, -1.0), Shape{0}, {}, {0, 0});
  check_close(arange(3.0, 3.0), Shape{0}, {}, {0, 0});
  check_close(arange(5.0, 0.0), Shape{0}, {}, {0, 0});
  check_error([] { arange(0.0, 1.0, 0.0); }, {"arange", "step=0"});
  check_error([] { arange(0.0, INFINITY); }, {"arange", "finite"});
  check_error([] { arange(NAN, 1.0); }, {"arange", "finite"});
}

TEST_CASE("tensor: linspace including count 0 and 1, and eye including non-square") {
  check_close(linspace(0.0, 1.0, 5, DType::float64), Shape{5}, {0, 0.25, 0.5, 0.75, 1}, {0, 0});
  check_close(linspace(2.0, -2.0, 3), Shape{3}, {2, 0, -2}, {0, 0});
  check_close(linspace(3.0, 7.0, 1), Shape{1}, {3}, {0, 0});
  check_close(linspace(3.0, 7.0, 0), Shape{0}, {}, {0, 0});
  check_close(linspace(0.0, 0.1, 7, DType::float64).slice(0, -1, 7), Shape{1}, {0.1}, {0, 0});  // exact end
  check_close(linspace(0.0, 3.0, 4, DType::int32), Shape{4}, {0, 1, 2, 3}, {0, 0});
  check_error([] { linspace(0.0, 1.0, -1); }, {"linspace", "count", "-1"});

  check_close(eye(3), Shape{3, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1}, {0, 0});
  check_close(eye(2, 4), Shape{2, 4}, {1, 0, 0, 0, 0, 1, 0, 0}, {0, 0});
  check_close(eye(3, 2, DType::int32), Shape{3, 2}, {1, 0, 0, 1, 0, 0}, {0, 0});
  CHECK(eye(3, 2, DType::int32).dtype() == DType::int32);
  check_close(eye(2, -1, DType::boolean), Shape{2, 2}, {1, 0, 0, 1}, {0, 0});
  check_close(eye(0), Shape{0, 0}, {}, {0, 0});
  check_close(eye(2, 0), Shape{2, 0}, {}, {0, 0});
  check_error([] { eye(-2); }, {"eye", "-2"});
}

TEST_CASE("tensor: from_vector, from_buffer and tensor({...}) for every element type") {
  const Tensor f = tensor({1.5f, -2.f});
  CHECK(f.dtype() == DType::float32);
  check_close(f, Shape{2}, {1.5, -2}, {0, 0});
  const Tensor d = tensor({1.0, 2.0, 3.0, 4.0}, Shape{2, 2});
  CHECK(d.dtype() == DType::float64);
  check_close(d, Shape{2, 2}, {1, 2, 3, 4}, {0, 0});
  const Tensor i = tensor<int32_t>({-7, 8});
  CHECK(i.dtype() == DType::int32);
  CHECK(i.to_vector<int32_t>() == std::vector<int32_t>{-7, 8});
  const Tensor l = from_vector(std::vector<int64_t>{int64_t{1} << 40}, Shape{1, 1});
  CHECK(l.dtype() == DType::int64);
  CHECK(l.item<int64_t>() == int64_t{1} << 40);
  const Tensor b = tensor({true, false, true});
  CHECK(b.dtype() == DType::boolean);
  CHECK(b.to_vector<uint8_t>() == std::vector<uint8_t>{1, 0, 1});
  const Tensor scalar = from_vector(std::vector<double>{4.5}, Shape{});
  CHECK(scalar.rank() == 0);
  CHECK(scalar.item<double>() == 4.5);
  const double raw[3] = {1, 2, 3};
  check_close(from_buffer(raw, Shape{3, 1}), Shape{3, 1}, {1, 2, 3}, {0, 0});
  check_close(from_vector(std::vector<float>{}, Shape{0, 5}), Shape{0, 5}, {}, {0, 0});
  check_error([] { from_vector(std::vector<float>{1, 2, 3}, Shape{2, 2}); }, {"from_vector", "3 values", "[2, 2]"});
  check_error([] { from_vector(std::vector<float>{}, Shape{-1}); }, {"from_vector", "negative", "-1"});
}

// ---------------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------------

TEST_CASE("tensor: properties of fresh tensors and views") {
  const Tensor t = zeros(Shape{2, 3, 4}, DType::float64);
  CHECK(t.defined());
  CHECK(t.rank() == 3);
  CHECK(t.numel() == 24);
  CHECK(t.size(0) == 2);
  CHECK(t.size(-1) == 4);
  CHECK(t.strides() == Shape{12, 4, 1});
  CHECK(t.offset() == 0);
  CHECK(t.element_size() == 8);
  CHECK(t.device() == Device::cpu());
  CHECK(t.storage()->nbytes() >= 24 * 8);
  CHECK(reinterpret_cast<uintptr_t>(t.raw_data()) % kStorageAlignment == 0);
  const Tensor s = t.select(1, 2);
  CHECK(s.offset() == 8);
  CHECK(s.raw_data() == static_cast<char*>(t.raw_data()) + 8 * 8);
  CHECK(s.shares_storage_with(t));
  CHECK_FALSE(Tensor().shares_storage_with(Tensor()));
  CHECK_FALSE(Tensor().defined());
  CHECK(zeros(Shape{}).numel() == 1);
  CHECK(zeros(Shape{}).rank() == 0);
  check_error([&] { t.size(3); }, {"size", "axis 3", "rank 3"});
  check_error([&] { t.size(-4); }, {"size", "axis -4"});
}

TEST_CASE("tensor: is_contiguous") {
  const Tensor t = zeros(Shape{3, 4});
  CHECK(t.is_contiguous());
  CHECK_FALSE(t.transpose(0, 1).is_contiguous());
  CHECK_FALSE(t.slice(1, 0, 4, 2).is_contiguous());
  CHECK_FALSE(t.slice(1, 0, 2).is_contiguous());
  CHECK(t.slice(0, 1, 3).is_contiguous());      // whole rows
  CHECK(t.select(0, 1).is_contiguous());
  CHECK_FALSE(t.select(1, 1).is_contiguous());  // a column
  CHECK(t.slice(1, 2, 3).transpose(0, 1).transpose(0, 1).select(1, 0).rank() == 1);
  CHECK_FALSE(zeros(Shape{4}).expand(Shape{3, 4}).is_contiguous());
  CHECK(zeros(Shape{1, 4}).expand(Shape{1, 4}).is_contiguous());
  CHECK(t.unsqueeze(1).is_contiguous());        // size-1 dims may have any stride
  CHECK(t.slice(0, 0, 1).transpose(0, 1).transpose(0, 1).is_contiguous());
  CHECK(t.slice(0, 1, 2).transpose(0, 1).is_contiguous());  // [4, 1] with strides (1, 4): one run
  CHECK_FALSE(t.slice(0, 1, 3).transpose(0, 1).is_contiguous());
  CHECK(t.slice(1, 0, 4, 2).slice(1, 0, 0).is_contiguous());  // empty
  CHECK(scalar_tensor(1.0).is_contiguous());
}

// ---------------------------------------------------------------------------------------------
// Views
// ---------------------------------------------------------------------------------------------

TEST_CASE("tensor: reshape against a reference, as a view where the strides allow it") {
  const Tensor t = iota(Shape{2, 3, 4});
  // contiguous: every reshape is a view
  for (const Shape& s : {Shape{24}, Shape{4, 6}, Shape{2, 12}, Shape{2, 3, 2, 2}, Shape{1, 24, 1}, Shape{6, -1},
                         Shape{-1}, Shape{2, -1, 4}}) {
    const Tensor r = t.reshape(s);
    CHECK(r.shares_storage_with(t));
    CHECK(r.numel() == 24);
    CHECK(vals(r) == vals(t));
    CHECK(vals(t.view(s)) == vals(t));
  }
  CHECK(t.reshape(Shape{6, -1}).shape() == Shape{6, 4});
  CHECK(t.reshape(Shape{2, -1, 4}).shape() == Shape{2, 3, 4});
  // a transposed tensor: splitting a dim is a view, merging the swapped dims is a copy
  const Tensor tt = iota(Shape{4, 3}).transpose(0, 1);  // [3, 4], strides (1, 3)
  const Tensor split_dims = tt.reshape(Shape{3, 2, 2});
  CHECK(split_dims.shares_storage_with(tt));
  CHECK(vals(split_dims) == vals(tt));
  CHECK(tt.view(Shape{3, 2, 2}).strides() == Shape{1, 6, 3});
  const Tensor merged = tt.reshape(Shape{12});
  CHECK_FALSE(merged.shares_storage_with(tt));
  CHECK(merged.is_contiguous());
  CHECK(vals(merged) == vals(tt));
  check_error([&] { tt.view(Shape{12}); }, {"view", "[3, 4]", "[12]", "without a copy"});
  // merging contiguous dims of a sliced tensor stays a view
  const Tensor rows = iota(Shape{4, 2, 3}).slice(0, 1, 4, 2);  // [2, 2, 3], rows 1 and 3
  const Tensor merged_rows = rows.reshape(Shape{2, 6});
  CHECK(merged_rows.shares_storage_with(rows));
  CHECK(vals(merged_rows) == vals(rows));
  CHECK_FALSE(rows.reshape(Shape{12}).shares_storage_with(rows));
  CHECK(vals(rows.reshape(Shape{12})) == vals(rows));
  // an expanded tensor: size-1 and zero strides
  const Tensor e = tensor<float>({1.f, 2.f}).expand(Shape{3, 2});
  CHECK(vals(e.reshape(Shape{6})) == std::vector<double>{1, 2, 1, 2, 1, 2});
  CHECK(e.reshape(Shape{3, 1, 2}).shares_storage_with(e));
  const Tensor five = scalar_tensor(5.0);
  const Tensor flat_fives = five.expand(Shape{2, 3}).reshape(Shape{6});
  CHECK(flat_fives.shares_storage_with(five));  // all strides 0: still one run
  CHECK(vals(flat_fives) == std::vector<double>(6, 5.0));
  // rank 0 <-> one element, and zero-sized
  CHECK(scalar_tensor(5.0).reshape(Shape{1, 1}).shape() == Shape{1, 1});
  CHECK(tensor<float>({5.f}).reshape(Shape{}).item<float>() == 5.f);
  CHECK(zeros(Shape{0, 3}).reshape(Shape{3, 0, 5}).shape() == Shape{3, 0, 5});
  CHECK(zeros(Shape{0, 3}).reshape(Shape{-1, 3}).shape() == Shape{0, 3});
}

TEST_CASE("tensor: reshape keeps row-major values for many layouts (property test)") {
  // every layout x every target shape: values must read back in the same row-major order
  const Tensor base = iota(Shape{4, 6, 2});
  const std::vector<Tensor> layouts = {base,
                                       base.transpose(0, 1),
                                       base.permute({2, 0, 1}),
                                       base.slice(1, 0, 6, 2),
                                       base.slice(0, 1, 3),
                                       base.select(2, 1),
                                       base.slice(1, 1, 5).transpose(1, 2),
                                       base.unsqueeze(1).expand(Shape{4, 3, 6, 2}).slice(1, 0, 3, 2),
                                       base.slice(2, 0, 1)};
  for (const Tensor& x : layouts) {
    const std::vector<double> ref = vals(x);
    const int64_t n = x.numel();
    std::vector<Shape> targets = {Shape{n}, Shape{1, n}, Shape{n, 1}};
    for (int64_t a = 2; a <= n; ++a)
      if (n % a == 0) {
        targets.push_back(Shape{a, n / a});
        for (int64_t b = 2; b <= n / a; ++b)
          if ((n / a) % b == 0) targets.push_back(Shape{a, b, n / a / b});
      }
    for (int d = 0; d < x.rank(); ++d) {  // split one dim of x in two where it divides
      for (int64_t f = 2; f < x.shape()[d]; ++f) {
        if (x.shape()[d] % f) continue;
        Shape s = x.shape();
        s[d] = x.shape()[d] / f;
        s.insert(d + 1, f);
        targets.push_back(s);
      }
    }
    for (const Shape& s : targets) {
      INFO("layout " << x.shape() << " strides " << x.strides() << " -> " << s);
      const Tensor r = x.reshape(s);
      CHECK(r.shape() == s);
      CHECK(vals(r) == ref);
      // a view must read the same memory as its reference index arithmetic
      if (r.shares_storage_with(base)) CHECK(strided_ref(r, base) == ref);
    }
  }
}

TEST_CASE("tensor: reshape and view errors") {
  const Tensor t = zeros(Shape{2, 3});
  check_error([&] { t.reshape(Shape{4, 2}); }, {"reshape", "[2, 3]", "6 elements", "[4, 2]"});
  check_error([&] { t.reshape(Shape{-1, -1}); }, {"reshape", "only one dimension can be -1"});
  check_error([&] { t.reshape(Shape{-1, 4}); }, {"reshape", "[2, 3]", "[-1, 4]"});
  check_error([&] { t.reshape(Shape{-2, -3}); }, {"reshape", "invalid dimension -2"});
  check_error([&] { t.view(Shape{7}); }, {"view", "[2, 3]", "[7]"});
  check_error([&] { zeros(Shape{0, 3}).reshape(Shape{0, -1}); }, {"reshape", "[0, -1]"});
}

TEST_CASE("tensor: permute, transpose and mT against a reference, sharing storage") {
  const Tensor t = iota(Shape{2, 3, 4});
  const std::vector<double> tv = vals(t);
  const std::vector<std::vector<int>> perms = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}, {-1, 0, -2}};
  for (const std::vector<int>& perm : perms) {
    const Tensor p = t.permute(perm);
    CHECK(p.shares_storage_with(t));
    std::vector<int> axes;
    for (int a : perm) axes.push_back(a < 0 ? a + 3 : a);
    std::vector<double> ref(24);
    for (int64_t i = 0; i < 24; ++i) {
      const std::vector<int64_t> pi = unravel(i, p.shape());
      std::vector<int64_t> ti(3);
      for (int d = 0; d < 3; ++d) ti[static_cast<size_t>(axes[d])] = pi[static_cast<size_t>(d)];
      ref[static_cast<size_t>(i)] = tv[static_cast<size_t>(ravel_broadcast(ti, t.shape()))];
    }
    CHECK(vals(p) == ref);
  }
  const Tensor tr = t.transpose(-1, 0);
  CHECK(tr.shape() == Shape{4, 3, 2});
  CHECK(vals(tr) == vals(t.permute({2, 1, 0})));
  CHECK(vals(t.mT()) == vals(t.permute({0, 2, 1})));
  CHECK(t.mT().shares_storage_with(t));
  CHECK(scalar_tensor(1.0).permute({}).rank() == 0);
  check_error([&] { t.permute({0, 1}); }, {"permute", "2 axes", "rank 3"});
  check_error([&] { t.permute({0, 1, 1}); }, {"permute", "axis 1", "twice"});
  check_error([&] { t.permute({0, 1, -2}); }, {"permute", "axis -2", "twice"});
  check_error([&] { t.permute({0, 1, 3}); }, {"permute", "axis 3"});
  check_error([&] { t.transpose(0, 3); }, {"transpose", "axis 3"});
  check_error([&] { zeros(Shape{3}).mT(); }, {"mT", "rank >= 2", "[3]"});
}

TEST_CASE("tensor: slice with steps, negative and clamped bounds, empty results") {
  const Tensor t = iota(Shape{10});
  struct Case {
    int64_t start, stop, step;
    std::vector<double> expected;
  };
  const Case cases[] = {
      {0, 10, 1, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
      {2, 8, 3, {2, 5}},
      {1, 10, 4, {1, 5, 9}},
      {-3, 10, 1, {7, 8, 9}},
      {-3, -1, 1, {7, 8}},
      {-100, 2, 1, {0, 1}},   // clamped start
      {8, 100, 1, {8, 9}},    // clamped stop
      {5, 5, 1, {}},          // empty
      {7, 2, 1, {}},          // stop before start
      {12, 20, 1, {}},        // beyond the end
      {-1, -100, 2, {}},
      {0, 10, 20, {0}},
  };
  for (const Case& c : cases) {
    INFO("slice(" << c.start << ", " << c.stop << ", " << c.step << ")");
    const Tensor s = t.slice(0, c.start, c.stop, c.step);
    CHECK(s.shares_storage_with(t));
    check_close(s, Shape{static_cast<int64_t>(c.expected.size())}, c.expected, {0, 0});
  }
  // 3-D, negative axis, against reference index arithmetic
  const Tensor u = iota(Shape{3, 4, 5});
  const Tensor v = u.slice(-1, 1, 5, 2).slice(0, -2, 3).slice(1, 0, 4, 3);
  CHECK(v.shape() == Shape{2, 2, 2});
  std::vector<double> ref;
  for (int64_t i = 1; i < 3; ++i)
    for (int64_t j = 0; j < 4; j += 3)
      for (int64_t k = 1; k < 5; k += 2) ref.push_back(static_cast<double>(i * 20 + j * 5 + k));
  CHECK(vals(v) == ref);
  CHECK(strided_ref(v, u) == ref);
  CHECK(zeros(Shape{0, 3}).slice(0, 0, 5).shape() == Shape{0, 3});
  CHECK(zeros(Shape{0, 3}).slice(1, 1, 3).shape() == Shape{0, 2});
  check_error([&] { t.slice(0, 0, 5, 0); }, {"slice", "step", "0"});
  check_error([&] { t.slice(0, 0, 5, -1); }, {"slice", "step", "-1"});
  check_error([&] { t.slice(1, 0, 5); }, {"slice", "axis 1"});
  check_error([&] { scalar_tensor(1.0).slice(0, 0, 1); }, {"slice", "rank 0"});
}

TEST_CASE("tensor: select") {
  const Tensor t = iota(Shape{2, 3, 4});
  const Tensor s = t.select(1, -1);
  CHECK(s.shape() == Shape{2, 4});
  CHECK(s.shares_storage_with(t));
  CHECK(vals(s) == std::vector<double>{8, 9, 10, 11, 20, 21, 22, 23});
  CHECK(vals(t.select(-1, 2)) == std::vector<double>{2, 6, 10, 14, 18, 22});
  CHECK(t.select(0, 1).select(0, 2).select(0, 3).item<double>() == 23);
  check_error([&] { t.select(1, 3); }, {"select", "index 3", "axis 1", "size 3"});
  check_error([&] { t.select(1, -4); }, {"select", "index -4", "size 3"});
  check_error([&] { t.select(3, 0); }, {"select", "axis 3"});
  check_error([&] { zeros(Shape{0}).select(0, 0); }, {"select", "index 0", "size 0"});
}

TEST_CASE("tensor: expand and broadcast_to give zero strides and share storage") {
  const Tensor col = iota(Shape{3, 1});
  const Tensor e = col.expand(Shape{2, 3, 4});
  CHECK(e.shares_storage_with(col));
  CHECK(e.strides() == Shape{0, 1, 0});
  std::vector<double> ref;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) ref.push_back(j);
  CHECK(vals(e) == ref);
  CHECK(vals(col.broadcast_to(Shape{3, 2})) == std::vector<double>{0, 0, 1, 1, 2, 2});
  CHECK(col.expand(Shape{3, 0}).numel() == 0);           // size 1 may become 0
  CHECK(col.expand(Shape{3, 1}).strides()[0] == 1);      // unchanged dims keep strides
  CHECK(vals(scalar_tensor(2.0).expand(Shape{3})) == std::vector<double>{2, 2, 2});
  // writing through the original shows in the expanded view
  Tensor owner = zeros(Shape{1});
  const Tensor view = owner.expand(Shape{3});
  owner.fill_(4.0);
  CHECK(vals(view) == std::vector<double>{4, 4, 4});
  check_error([&] { col.expand(Shape{3, 2}).expand(Shape{3, 4}); }, {"expand", "[3, 2]", "[3, 4]"});
  check_error([&] { col.expand(Shape{2, 1}); }, {"expand", "[3, 1]", "[2, 1]"});
  check_error([&] { col.expand(Shape{3}); }, {"expand", "lower rank"});
  check_error([&] { col.expand(Shape{3, -1}); }, {"expand", "[3, -1]"});
}

TEST_CASE("tensor: squeeze, unsqueeze and flatten") {
  const Tensor t = iota(Shape{1, 3, 1, 2});
  CHECK(t.squeeze().shape() == Shape{3, 2});
  CHECK(t.squeeze().shares_storage_with(t));
  CHECK(t.squeeze(0).shape() == Shape{3, 1, 2});
  CHECK(t.squeeze(-2).shape() == Shape{1, 3, 2});
  CHECK(vals(t.squeeze(2)) == vals(t));
  CHECK(scalar_tensor(1.0).squeeze().rank() == 0);
  CHECK(zeros(Shape{1, 1}).squeeze().rank() == 0);
  const Tensor v = iota(Shape{2, 3});
  CHECK(v.unsqueeze(0).shape() == Shape{1, 2, 3});
  CHECK(v.unsqueeze(1).shape() == Shape{2, 1, 3});
  CHECK(v.unsqueeze(-1).shape() == Shape{2, 3, 1});
  CHECK(v.unsqueeze(-3).shape() == Shape{1, 2, 3});
  CHECK(v.unsqueeze(2).shares_storage_with(v));
  CHECK(vals(v.transpose(0, 1).unsqueeze(1)) == vals(v.transpose(0, 1)));
  CHECK(scalar_tensor(1.0).unsqueeze(0).shape() == Shape{1});
  check_error([&] { t.squeeze(1); }, {"squeeze", "axis 1", "size 3"});
  check_error([&] { t.squeeze(4); }, {"squeeze", "axis 4"});
  check_error([&] { v.unsqueeze(3); }, {"unsqueeze", "axis 3"});
  check_error([&] { v.unsqueeze(-4); }, {"unsqueeze", "axis -4"});
  check_error([&] { zeros(Shape{1, 1, 1, 1, 1, 1, 1, 1}).unsqueeze(0); }, {"unsqueeze", "rank 8"});

  const Tensor f = iota(Shape{2, 3, 4});
  CHECK(f.flatten().shape() == Shape{24});
  CHECK(f.flatten(1).shape() == Shape{2, 12});
  CHECK(f.flatten(0, 1).shape() == Shape{6, 4});
  CHECK(f.flatten(-2, -1).shape() == Shape{2, 12});
  CHECK(f.flatten(1, 1).shape() == Shape{2, 3, 4});
  CHECK(f.flatten().shares_storage_with(f));
  CHECK(vals(f.transpose(0, 2).flatten()) == vals(f.transpose(0, 2)));
  CHECK(scalar_tensor(3.0).flatten().shape() == Shape{1});
  check_error([&] { f.flatten(2, 1); }, {"flatten", "start axis 2", "end axis 1"});
  check_error([&] { f.flatten(0, 3); }, {"flatten", "axis 3"});
}

TEST_CASE("tensor: rank 8 is the limit") {
  const Tensor r8 = zeros(Shape{1, 2, 1, 2, 1, 2, 1, 2});
  CHECK(r8.rank() == 8);
  CHECK(r8.numel() == 16);
  CHECK(r8.permute({7, 6, 5, 4, 3, 2, 1, 0}).shape() == Shape{2, 1, 2, 1, 2, 1, 2, 1});
  CHECK(vals(iota(Shape{16}).reshape(r8.shape()).transpose(1, 7).contiguous()).size() == 16);
  check_error([] { zeros(Shape{1, 1, 1, 1, 1, 1, 1, 1, 1}); }, {"rank 9", "maximum rank 8"});
  check_error([] { zeros(Shape(std::vector<int64_t>(9, 1))); }, {"rank 9"});
  check_error([&] { r8.reshape(Shape(std::vector<int64_t>(9, 1))); }, {"rank 9"});
  check_error([&] { r8.expand(Shape(std::vector<int64_t>(9, 1))); }, {"rank 9"});
}

// ---------------------------------------------------------------------------------------------
// Copies and conversions
// ---------------------------------------------------------------------------------------------

TEST_CASE("tensor: contiguous, clone and to(dtype)") {
  const Tensor t = iota(Shape{3, 4});
  CHECK(t.contiguous().shares_storage_with(t));
  CHECK(t.contiguous().raw_data() == t.raw_data());
  const Tensor tr = t.transpose(0, 1);
  const Tensor c = tr.contiguous();
  CHECK_FALSE(c.shares_storage_with(tr));
  CHECK(c.is_contiguous());
  CHECK(vals(c) == vals(tr));
  CHECK(strided_ref(tr, t) == vals(c));
  const Tensor stepped = t.slice(1, 0, 4, 3);
  CHECK(vals(stepped.contiguous()) == std::vector<double>{0, 3, 4, 7, 8, 11});

  Tensor clone = t.clone();
  CHECK_FALSE(clone.shares_storage_with(t));
  clone.fill_(-1.0);
  CHECK(vals(t)[5] == 5.0);  // the original is untouched
  CHECK(vals(tr.clone()) == vals(tr));

  CHECK(t.to(DType::float64).shares_storage_with(t));  // already float64: no copy
  const Tensor as_int = tensor<double>({-1.7, 2.9, 1e30, -1e30, NAN}).to(DType::int32);
  CHECK(as_int.to_vector<int32_t>() ==
        std::vector<int32_t>{-1, 2, std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::min(), 0});
  CHECK(tensor<float>({0.f, -0.5f, NAN, 3.f}).to(DType::boolean).to_vector<int32_t>() == std::vector<int32_t>{0, 1, 1, 1});
  CHECK(tensor<bool>({true, false}).to(DType::float32).to_vector<float>() == std::vector<float>{1.f, 0.f});
  CHECK(tensor<int64_t>({int64_t{1} << 40}).to(DType::float64).item<double>() == std::ldexp(1.0, 40));
}

TEST_CASE("tensor: copy_ broadcasts and converts, into any view") {
  Tensor dst = zeros(Shape{2, 3}, DType::int32);
  dst.copy_(tensor<float>({1.9f, -2.5f, 3.f}));
  CHECK(dst.to_vector<int32_t>() == std::vector<int32_t>{1, -2, 3, 1, -2, 3});
  dst.copy_(scalar_tensor(7.0));
  CHECK(dst.to_vector<int32_t>() == std::vector<int32_t>(6, 7));
  dst.copy_(tensor<int64_t>({5, 6}, Shape{2, 1}));
  CHECK(dst.to_vector<int32_t>() == std::vector<int32_t>{5, 5, 5, 6, 6, 6});
  // into a transposed view and a stepped view: writes land in the base tensor
  Tensor base = zeros(Shape{2, 3});
  base.transpose(0, 1).copy_(iota(Shape{3, 2}));
  CHECK(vals(base) == std::vector<double>{0, 2, 4, 1, 3, 5});
  base.slice(1, 0, 3, 2).copy_(full(Shape{2, 2}, -1.0));
  CHECK(vals(base) == std::vector<double>{-1, 2, -1, -1, 3, -1});
  // from a non-contiguous source with conversion
  Tensor b2 = zeros(Shape{3, 2}, DType::boolean);
  b2.copy_(iota(Shape{2, 3}).transpose(0, 1));
  CHECK(b2.to_vector<int32_t>() == std::vector<int32_t>{0, 1, 1, 1, 1, 1});
  // a large copy (split across threads)
  Tensor big = zeros(Shape{300, 400});
  big.copy_(iota(Shape{400, 300}).transpose(0, 1));
  CHECK(strided_ref(iota(Shape{400, 300}).transpose(0, 1), iota(Shape{400, 300})) == vals(big));
  check_error([&] { dst.copy_(zeros(Shape{2})); }, {"[2]", "[2, 3]"});
  check_error([&] { dst.copy_(zeros(Shape{1, 2, 3})); }, {"[1, 2, 3]", "[2, 3]"});
  // contiguous views at an offset, both ends (the memcpy path): rows 1-2 of a [4, 3] into rows 2-3
  Tensor rows = iota(Shape{4, 3});
  Tensor into = zeros(Shape{4, 3});
  REQUIRE(rows.slice(0, 1, 3).is_contiguous());
  into.slice(0, 2, 4).copy_(rows.slice(0, 1, 3));
  CHECK(vals(into) == std::vector<double>{0, 0, 0, 0, 0, 0, 3, 4, 5, 6, 7, 8});
  CHECK(vals(rows.slice(0, 3, 4).clone()) == std::vector<double>{9, 10, 11});
  Tensor empty_dst = zeros(Shape{0, 3});
  empty_dst.copy_(zeros(Shape{0, 3}));  // nothing to copy, no pointer touched
  CHECK(empty_dst.numel() == 0);
}

TEST_CASE("tensor: fill_ on every dtype and through views") {
  for (DType dtype : kAllDTypes) {
    Tensor t = zeros(Shape{2, 3}, dtype);
    t.slice(1, 1, 3).fill_(2.0);
    const double two = is_bool(dtype) ? 1.0 : 2.0;
    check_close(t, Shape{2, 3}, {0, two, two, 0, two, two}, {0, 0});
    t.transpose(0, 1).select(1, 0).fill_(0.0);
    check_close(t, Shape{2, 3}, {0, 0, 0, 0, two, two}, {0, 0});
  }
  Tensor i = zeros(Shape{2}, DType::int64);
  i.fill_(-3.99);
  CHECK(i.to_vector<int64_t>() == std::vector<int64_t>{-3, -3});
  i.fill_(NAN);
  CHECK(i.to_vector<int64_t>() == std::vector<int64_t>{0, 0});
}

TEST_CASE("tensor: item, to_vector and data<T>") {
  CHECK(scalar_tensor(2.5).item<float>() == 2.5f);
  CHECK(scalar_tensor(2.5).item<double>() == 2.5);
  CHECK(tensor<int64_t>({-9}, Shape{1, 1}).item<int64_t>() == -9);
  CHECK(tensor<int64_t>({-9}).item<double>() == -9.0);
  CHECK(tensor<bool>({true}).item<bool>());
  CHECK(scalar_tensor(-2.7).item<int32_t>() == -2);
  CHECK(iota(Shape{2, 3}).select(1, 2).select(0, 1).item<double>() == 5.0);
  CHECK(iota(Shape{2, 3}).transpose(0, 1).to_vector<int32_t>() == std::vector<int32_t>{0, 3, 1, 4, 2, 5});
  CHECK(tensor<int32_t>({0, 5, -1}).to_vector<uint8_t>() == std::vector<uint8_t>{0, 1, 1});
  CHECK(zeros(Shape{0, 4}).to_vector<float>().empty());
  Tensor t = zeros(Shape{3}, DType::int32);
  t.data<int32_t>()[1] = 42;
  CHECK(t.to_vector<int32_t>() == std::vector<int32_t>{0, 42, 0});
  CHECK(t.slice(0, 1, 3).data<int32_t>()[0] == 42);
  check_error([&] { t.item<int32_t>(); }, {"item", "one element", "[3]"});
  check_error([] { zeros(Shape{0}).item<float>(); }, {"item", "[0]"});
  check_error([&] { t.data<float>(); }, {"data", "int32", "float32"});
  check_error([&] { t.data<int64_t>(); }, {"data", "int32", "int64"});
  check_error([] { zeros(Shape{1}, DType::boolean).data<float>(); }, {"data", "bool"});
}

TEST_CASE("tensor: cuda tensors are a clear error without a GPU") {
  // With a GPU, tests/cuda covers device tensors; here the reason must be named.
  if (!kernels::cuda::available()) {
    check_error([] { zeros(Shape{2}, DType::float32, Device::cuda()); }, {"cuda", kernels::cuda::unavailable_reason()});
    check_error([] { zeros(Shape{2}).to(Device::cuda()); }, {"to", "cuda:0", "cpu", kernels::cuda::unavailable_reason()});
  }
  check_error([] { empty(Shape{2}, DType::float32, Device::cuda(15)); }, {"cuda:15"});
  CHECK(zeros(Shape{2}).to(Device::cpu()).defined());
  CHECK(parse_device("cuda:3") == Device::cuda(3));
  CHECK(parse_device("cpu") == Device::cpu());
  check_error([] { parse_device("tpu"); }, {"tpu", "cpu", "cuda"});
}

TEST_CASE("tensor: operations on an undefined tensor throw") {
  const Tensor u;
  const Tensor t = zeros(Shape{2});
  check_error([&] { u.reshape(Shape{1}); }, {"reshape", "undefined"});
  check_error([&] { u.view(Shape{1}); }, {"view", "undefined"});
  check_error([&] { u.permute({}); }, {"permute", "undefined"});
  check_error([&] { u.transpose(0, 1); }, {"transpose", "undefined"});
  check_error([&] { u.slice(0, 0, 1); }, {"slice", "undefined"});
  check_error([&] { u.select(0, 0); }, {"select", "undefined"});
  check_error([&] { u.expand(Shape{2}); }, {"expand", "undefined"});
  check_error([&] { u.squeeze(); }, {"squeeze", "undefined"});
  check_error([&] { u.squeeze(0); }, {"squeeze", "undefined"});
  check_error([&] { u.unsqueeze(0); }, {"unsqueeze", "undefined"});
  check_error([&] { u.flatten(); }, {"flatten", "undefined"});
  check_error([&] { u.contiguous(); }, {"contiguous", "undefined"});
  check_error([&] { u.clone(); }, {"clone", "undefined"});
  check_error([&] { u.to(DType::int32); }, {"to", "undefined"});
  check_error([&] { u.to(Device::cpu()); }, {"to", "undefined"});
  check_error([&] { Tensor(u).copy_(t); }, {"copy_", "undefined"});
  check_error([&] { Tensor(t).copy_(u); }, {"copy_", "undefined"});
  check_error([&] { Tensor(u).fill_(1.0); }, {"fill_", "undefined"});
  check_error([&] { u.item<float>(); }, {"item", "undefined"});
  check_error([&] { u.to_vector<float>(); }, {"to_vector", "undefined"});
  check_error([&] { u.raw_data(); }, {"data", "undefined"});
  check_error([&] { u.data<float>(); }, {"data", "undefined"});
}

// ---------------------------------------------------------------------------------------------
// Defects found in review of tensor.cpp, now fixed; these guard the fixes.
// ---------------------------------------------------------------------------------------------

TEST_CASE("tensor: review - item<T> converts like to(): saturating, NaN -> 0") {
  // item() uses a plain static_cast, which is undefined behaviour for NaN or out-of-range
  // floats (x86 gives INT_MIN); to() saturates.
  CHECK(scalar_tensor(1e20).item<int32_t>() == std::numeric_limits<int32_t>::max());
  CHECK(scalar_tensor(-1e20).item<int64_t>() == std::numeric_limits<int64_t>::min());
  CHECK(scalar_tensor(NAN).item<int32_t>() == 0);
  CHECK(scalar_tensor(1e20).item<int32_t>() == scalar_tensor(1e20).to(DType::int32).item<int32_t>());
}

TEST_CASE("tensor: review - from_vector<uint8_t> stores bools as 0 or 1") {
  // bool tensors hold 0 or 1 (dtype.h); from_buffer copies other uint8_t values verbatim.
  const Tensor b = from_vector(std::vector<uint8_t>{0, 2, 255});
  CHECK(b.dtype() == DType::boolean);
  CHECK(b.to_vector<int32_t>() == std::vector<int32_t>{0, 1, 1});
  CHECK(b.slice(0, 1, 2).item<int32_t>() == 1);
}

TEST_CASE("tensor: review - slice with a huge step") {
  // count = (e - b + step - 1) / step overflows int64 for a step near INT64_MAX.
  const Tensor t = iota(Shape{5});
  const Tensor s = t.slice(0, 0, 5, std::numeric_limits<int64_t>::max());
  CHECK(s.shape() == Shape{1});
  CHECK(vals(s) == std::vector<double>{0});
  const Tensor u = iota(Shape{5, 3}).slice(0, 1, 5, int64_t{1} << 62);  // stride 3 * 2^62 overflows too
  CHECK(u.shape() == Shape{1, 3});
  CHECK(vals(u) == std::vector<double>{3, 4, 5});
}

TEST_CASE("tensor: review - arange with a count beyond int64 is an arange error") {
  // static_cast<int64_t>(1e30) is undefined behaviour; it must be an error naming arange.
  check_error([] { arange(0.0, 1e30); }, {"arange", "1e+30"});
}

TEST_CASE("tensor: review - every empty tensor is contiguous") {
  // is_contiguous returns true at the first zero-sized dim it meets scanning from the last
  // axis, so an empty tensor whose zero dim is outer and inner strides are gapped is "not
  // contiguous", while the same with the zero dim inner is. An empty tensor has no layout.
  const Tensor t = zeros(Shape{3, 4});
  CHECK(t.slice(1, 0, 4, 2).slice(1, 0, 0).is_contiguous());  // [3, 0]: true today
  CHECK(t.slice(1, 0, 4, 2).slice(0, 0, 0).is_contiguous());  // [0, 2] with strides (4, 2): false today
  CHECK(t.transpose(0, 1).slice(0, 0, 0).is_contiguous());
}

TEST_CASE("tensor: review - mT on an undefined tensor says so") {
  check_error([] { Tensor().mT(); }, {"mT", "undefined"});
}

TEST_CASE("tensor: review - copy_ between overlapping views of one storage (NumPy semantics)") {
  // copy_ reads src while writing dst; when they overlap, a forward loop reads values it has
  // already overwritten (and the contiguous case calls memcpy on overlapping ranges, which
  // ASan reports). NumPy copies through a temporary: a[1:] = a[:-1] shifts the values.
  Tensor strided = iota(Shape{20});
  strided.slice(0, 2, 20, 2).copy_(strided.slice(0, 0, 18, 2));
  CHECK(vals(strided.slice(0, 0, 20, 2)) == std::vector<double>{0, 0, 2, 4, 6, 8, 10, 12, 14, 16});
  Tensor contiguous = iota(Shape{10});
  contiguous.slice(0, 1, 10).copy_(contiguous.slice(0, 0, 9));
  CHECK(vals(contiguous) == std::vector<double>{0, 0, 1, 2, 3, 4, 5, 6, 7, 8});
}

TEST_CASE("tensor: review - reshape to dims whose product overflows int64 is an error, not UB") {
  // infer_shape multiplies the requested dims in int64 without an overflow check (UBSan:
  // signed integer overflow); Release happens to throw because the product wraps to 0.
  check_error([] { zeros(Shape{4}).reshape(Shape{int64_t{1} << 32, int64_t{1} << 32}); }, {"reshape"});
  check_error([] { zeros(Shape{4}).reshape(Shape{int64_t{1} << 32, int64_t{1} << 32, -1}); }, {"reshape"});
}

TEST_CASE("tensor: allocation counters count storages and bytes, what is alive and the peak") {
  const ctrax::AllocationStats before = ctrax::allocation_stats();
  ctrax::reset_allocation_peak();
  CHECK(ctrax::allocation_stats().peak_live_bytes == before.live_bytes);
  {
    const Tensor a = zeros(Shape{1000}, DType::float32);  // 4000 bytes
    const ctrax::AllocationStats during = ctrax::allocation_stats();
    CHECK(during.storages_allocated == before.storages_allocated + 1);
    CHECK(during.bytes_allocated == before.bytes_allocated + 4000);
    CHECK(during.live_storages == before.live_storages + 1);
    CHECK(during.live_bytes == before.live_bytes + 4000);
    const Tensor view = a.slice(0, 0, 10);  // a view allocates nothing
    CHECK(ctrax::allocation_stats().storages_allocated == during.storages_allocated);
    CHECK(view.numel() == 10);
  }
  const ctrax::AllocationStats after = ctrax::allocation_stats();
  CHECK(after.live_storages == before.live_storages);
  CHECK(after.live_bytes == before.live_bytes);
  CHECK(after.peak_live_bytes >= before.live_bytes + 4000);
}
