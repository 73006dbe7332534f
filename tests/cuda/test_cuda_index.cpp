// one_hot, take_along_axis, index_select and scatter_add on a CUDA device against the CPU op on
// the same data: every dtype the CPU op accepts, int32 and int64 indices, negative indices,
// index and x broadcasting against each other, transposed and stepped operands, empty tensors,
// duplicate targets in scatter_add, out-of-range indices (the same error text as the CPU's,
// naming the same index), mixed-device operands, and the gradients of the differentiable ones.
//
// Tolerances: gathers and one_hot copy elements, so they are compared exactly. scatter_add
// adds with atomics in no fixed order, so a float sum over duplicate targets may round
// differently from the CPU's serial order: within k * 2^-24 * sum|terms| for k terms in
// float32 (atol 1e-5 for a few terms in [-2, 2], 1e-3 for the 250-term stress case) and far
// below 1e-12 in float64. Integer sums are exact.
#include <algorithm>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <ctrax/autograd/grad.h>
#include <ctrax/tensor/ops.h>
#include <ctrax/tensor/tensor.h>

#include "test_util.h"

namespace ctrax {
namespace {

const Device kGpu = Device::cuda(0);

// The message f throws, or "" when it returns.
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ctrax::Error& e) {
    return e.what();
  }
  return "";
}

// got (on the GPU) has expected's dtype, shape and values: exact unless tol is given.
void check_same(const Tensor& got_gpu, const Tensor& expected, const std::string& what,
                test::Tolerance tol = {0.0, 0.0}) {
  INFO(what);
  CHECK(got_gpu.device() == kGpu);
  const Tensor got = got_gpu.to(Device::cpu());
  REQUIRE(got.dtype() == expected.dtype());
  REQUIRE(got.shape() == expected.shape());
  if (is_floating(expected.dtype())) {
    test::check_close(got, expected, tol, what);
    return;
  }
  const std::vector<int64_t> a = got.to(DType::int64).to_vector<int64_t>();
  const std::vector<int64_t> b = expected.to(DType::int64).to_vector<int64_t>();
  int reported = 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i] && reported++ < 5) FAIL_CHECK("element " << i << ": got " << a[i] << ", expected " << b[i]);
}

// Runs f on the cpu operands and on their GPU copies: the same error text, or the same result.
void compare(const std::function<Tensor(const std::vector<Tensor>&)>& f, const std::vector<Tensor>& cpu,
             const std::vector<Tensor>& gpu, const std::string& what, test::Tolerance tol = {0.0, 0.0}) {
  Tensor expected;
  const std::string cpu_error = error_of([&] { expected = f(cpu); });
  if (!cpu_error.empty()) {
    INFO(what);
    CHECK(error_of([&] { f(gpu); }) == cpu_error);
    return;
  }
  check_same(f(gpu), expected, what, tol);
}

// The same values as t on `device` in several layouts: contiguous, stored transposed (rank >= 2)
// and every other row of a larger buffer. test::non_contiguous and test::stepped build their
// buffers on the cpu, so the GPU needs its own.
Tensor laid_out(const Tensor& t, Device device, int layout) {
  const Tensor d = t.to(device);
  if (layout == 1 && d.rank() >= 2) return d.transpose(-1, -2).contiguous().transpose(-1, -2);
  if (layout == 2 && d.rank() >= 1) {
    Shape big = d.shape();
    big[0] = 2 * d.shape()[0] + 1;
    Tensor view = full(big, 7.0, d.dtype(), device).slice(0, 1, 2 * d.shape()[0] + 1, 2);
    view.copy_(d);
    return view;
  }
  return d;
}
constexpr const char* kLayoutNames[] = {"contiguous", "transposed", "stepped"};

// Indices uniform in [lo, hi) of an index dtype.
Tensor random_index(const Shape& shape, DType dtype, uint64_t seed, int64_t lo, int64_t hi) {
  return test::random_tensor(shape, DType::float64, seed, static_cast<double>(lo), static_cast<double>(hi))
      .to(DType::int64)
      .to(dtype);
}

constexpr DType kIndexDTypes[] = {DType::int32, DType::int64};

TEST_CASE("cuda one_hot: every output dtype, index dtype, layout and out-of-range index as on the cpu") {
  uint64_t seed = 1;
  for (DType index_dtype : kIndexDTypes) {
    for (const Shape& shape : {Shape{}, Shape{0}, Shape{7}, Shape{3, 4}, Shape{2, 0, 3}, Shape{2, 3, 5}}) {
      // Values in [-3, 7) against depths 0, 1 and 5: negative and too large give zero rows.
      const Tensor indices = random_index(shape, index_dtype, seed++, -3, 7);
      for (int layout = 0; layout < 3; ++layout) {
        const Tensor c = laid_out(indices, Device::cpu(), layout), g = laid_out(indices, kGpu, layout);
        for (DType dtype : test::kAllDTypes) {
          for (int64_t depth : {0, 1, 5}) {
            std::ostringstream what;
            what << "one_hot " << index_dtype << shape << " " << kLayoutNames[layout] << " " << dtype << " depth " << depth;
            compare([&](const std::vector<Tensor>& in) { return one_hot(in[0], depth, dtype); }, {c}, {g}, what.str());
          }
        }
      }
    }
  }
  // Errors: float indices, negative depth.
  const Tensor f = zeros(Shape{3});
  compare([](const std::vector<Tensor>& in) { return one_hot(in[0], 4); }, {f}, {f.to(kGpu)}, "float indices");
  const Tensor i = zeros(Shape{3}, DType::int64);
  compare([](const std::vector<Tensor>& in) { return one_hot(in[0], -1); }, {i}, {i.to(kGpu)}, "negative depth");
}

TEST_CASE("cuda take_along_axis: every dtype, axis, layout and broadcast against the cpu") {
  uint64_t seed = 100;
  const Shape x_shape{3, 4, 5};
  for (DType dtype : test::kAllDTypes) {
    const Tensor x = test::random_tensor(x_shape, dtype, seed++);
    for (DType index_dtype : kIndexDTypes) {
      for (int axis : {0, 1, 2, -1, -3}) {
        const int a = axis < 0 ? axis + 3 : axis;
        const int64_t n = x_shape[a];
        // index: 6 along the axis; equal to x elsewhere, or 1 on one axis (broadcast over x),
        // with x given 1 on another axis (broadcast over index).
        for (int variant = 0; variant < 3; ++variant) {
          Shape index_shape = x_shape;
          index_shape[a] = 6;
          Tensor xv = x;
          if (variant >= 1) index_shape[(a + 1) % 3] = 1;
          if (variant == 2) xv = x.slice((a + 2) % 3, 0, 1);
          const Tensor index = random_index(index_shape, index_dtype, seed++, -n, n);
          for (int layout = 0; layout < 3; ++layout) {
            std::ostringstream what;
            what << "take_along_axis " << dtype << " index " << index_dtype << index_shape << " axis " << axis
                 << " variant " << variant << " " << kLayoutNames[layout];
            compare([&](const std::vector<Tensor>& in) { return take_along_axis(in[0], in[1], axis); },
                    {laid_out(xv, Device::cpu(), layout), laid_out(index, Device::cpu(), 2 - layout)},
                    {laid_out(xv, kGpu, layout), laid_out(index, kGpu, 2 - layout)}, what.str());
          }
        }
      }
    }
  }
  // Empty tensors: an empty batch, an empty index along the axis.
  const Tensor x0 = test::random_tensor(Shape{0, 4}, DType::float32, 7);
  const Tensor i0 = zeros(Shape{0, 3}, DType::int64);
  compare([](const std::vector<Tensor>& in) { return take_along_axis(in[0], in[1], 1); }, {x0, i0},
          {x0.to(kGpu), i0.to(kGpu)}, "empty batch");
  const Tensor x1 = test::random_tensor(Shape{3, 4}, DType::float64, 8);
  const Tensor i1 = zeros(Shape{3, 0}, DType::int32);
  compare([](const std::vector<Tensor>& in) { return take_along_axis(in[0], in[1], 1); }, {x1, i1},
          {x1.to(kGpu), i1.to(kGpu)}, "empty index");
}

TEST_CASE("cuda take_along_axis and index_select: out-of-range indices give the cpu's error") {
  const Tensor x = test::random_tensor(Shape{3, 4}, DType::float32, 9);
  for (DType index_dtype : kIndexDTypes) {
    // One bad index, then two (the first in row-major order is named), then n and -n - 1.
    for (const std::vector<double>& values : {std::vector<double>{0, 1, 2, 4, 0, 1}, {0, -5, 2, 9, 0, 1},
                                              {3, -4, 0, 1, 2, 3}, {0, 0, 0, 0, 0, -1000000}}) {
      const Tensor index = from_vector(values, Shape{3, 2}).to(index_dtype);
      std::ostringstream what;
      what << "take_along_axis bad index " << index;
      const std::string cpu_error = error_of([&] { take_along_axis(x, index, 1); });
      const std::string gpu_error = error_of([&] { take_along_axis(x.to(kGpu), index.to(kGpu), 1); });
      INFO(what.str());
      CHECK(gpu_error == cpu_error);
      const Tensor flat = index.flatten();
      CHECK(error_of([&] { index_select(x.to(kGpu), 1, flat.to(kGpu)); }) == error_of([&] { index_select(x, 1, flat); }));
      CHECK(error_of([&] { index_select(x.to(kGpu), 0, flat.to(kGpu)); }) == error_of([&] { index_select(x, 0, flat); }));
    }
  }
  // An empty result still checks every index (index_select), on the GPU too.
  const Tensor empty_rows = zeros(Shape{0, 4});
  const Tensor bad = from_vector(std::vector<int64_t>{1, 7}, Shape{2});
  const std::string cpu_error = error_of([&] { index_select(empty_rows, 1, bad); });
  CHECK(!cpu_error.empty());
  CHECK(error_of([&] { index_select(empty_rows.to(kGpu), 1, bad.to(kGpu)); }) == cpu_error);
}

TEST_CASE("cuda index_select: every dtype, axis and layout against the cpu") {
  uint64_t seed = 300;
  const Shape x_shape{4, 3, 5};
  for (DType dtype : test::kAllDTypes) {
    const Tensor x = test::random_tensor(x_shape, dtype, seed++);
    for (DType index_dtype : kIndexDTypes) {
      for (int axis : {0, 1, 2, -1}) {
        const int64_t n = x_shape[axis < 0 ? axis + 3 : axis];
        for (int64_t m : {0, 1, 7}) {
          const Tensor indices = random_index(Shape{m}, index_dtype, seed++, -n, n);
          for (int layout = 0; layout < 3; ++layout) {
            std::ostringstream what;
            what << "index_select " << dtype << " axis " << axis << " m " << m << " " << kLayoutNames[layout];
            compare([&](const std::vector<Tensor>& in) { return index_select(in[0], axis, in[1]); },
                    {laid_out(x, Device::cpu(), layout), laid_out(indices, Device::cpu(), layout)},
                    {laid_out(x, kGpu, layout), laid_out(indices, kGpu, layout)}, what.str());
          }
        }
      }
    }
  }
  // A broadcast x (stride 0), and an x with an empty axis.
  const Tensor row = test::random_tensor(Shape{1, 6}, DType::int32, 11);
  const Tensor picks = from_vector(std::vector<int64_t>{5, -6, 0, 0}, Shape{4});
  compare([](const std::vector<Tensor>& in) { return index_select(in[0].expand(Shape{3, 6}), 1, in[1]); },
          {row, picks}, {row.to(kGpu), picks.to(kGpu)}, "expanded x");
  const Tensor hollow = zeros(Shape{3, 0, 2});
  const Tensor none = zeros(Shape{0}, DType::int32);
  compare([](const std::vector<Tensor>& in) { return index_select(in[0], 1, in[1]); }, {hollow, none},
          {hollow.to(kGpu), none.to(kGpu)}, "empty axis");
}

test::Tolerance scatter_tolerance(DType dtype, double float32_atol = 1e-5) {
  return dtype == DType::float32 ? test::Tolerance{float32_atol, 1e-6} : test::Tolerance{1e-12, 1e-12};
}

TEST_CASE("cuda scatter_add: dtypes, duplicates, short index, layouts and errors against the cpu") {
  uint64_t seed = 500;
  const std::vector<DType> value_dtypes = {DType::float32, DType::float64, DType::int32, DType::int64};
  for (DType dtype : value_dtypes) {
    for (DType src_dtype : value_dtypes) {
      if (promote_types(dtype, src_dtype) != dtype) continue;
      const Tensor x = test::random_tensor(Shape{3, 4}, dtype, seed++);
      for (DType index_dtype : kIndexDTypes) {
        for (int axis : {0, 1, -1}) {
          const int a = axis < 0 ? axis + 2 : axis;
          const int64_t n = x.shape()[a];
          // index and src: 5 long on the axis (duplicates are certain), full or shorter (2) off it.
          for (int64_t off : {int64_t{4 - a}, int64_t{2}}) {
            Shape shape = Shape{0, 0};
            shape[a] = 5;
            shape[1 - a] = a == 0 ? std::min<int64_t>(off, 4) : std::min<int64_t>(off, 3);
            const Tensor index = random_index(shape, index_dtype, seed++, -n, n);
            const Tensor src = test::random_tensor(shape, src_dtype, seed++);
            for (int layout = 0; layout < 3; ++layout) {
              std::ostringstream what;
              what << "scatter_add " << dtype << " src " << src_dtype << " index " << index_dtype << shape << " axis "
                   << axis << " " << kLayoutNames[layout];
              compare([&](const std::vector<Tensor>& in) { return scatter_add(in[0], axis, in[1], in[2]); },
                      {laid_out(x, Device::cpu(), layout), laid_out(index, Device::cpu(), layout),
                       laid_out(src, Device::cpu(), 2 - layout)},
                      {laid_out(x, kGpu, layout), laid_out(index, kGpu, layout), laid_out(src, kGpu, 2 - layout)},
                      what.str(), scatter_tolerance(dtype));
            }
          }
        }
      }
    }
  }
  // Many threads adding into few targets (the atomics contend), and integer wrap-around.
  for (DType dtype : value_dtypes) {
    const Tensor x = zeros(Shape{4, 3}, dtype);
    const Tensor index = random_index(Shape{1000, 3}, DType::int64, seed++, -4, 4);
    const Tensor src = test::random_tensor(Shape{1000, 3}, dtype, seed++);
    compare([](const std::vector<Tensor>& in) { return scatter_add(in[0], 0, in[1], in[2]); }, {x, index, src},
            {x.to(kGpu), index.to(kGpu), src.to(kGpu)}, "contended scatter_add", scatter_tolerance(dtype, 1e-3));
  }
  const Tensor big = full(Shape{2}, 9.2e18, DType::int64);
  const Tensor twice = from_vector(std::vector<int64_t>{0, 0, 1}, Shape{3});
  const Tensor add = full(Shape{3}, 9.0e18, DType::int64);
  compare([](const std::vector<Tensor>& in) { return scatter_add(in[0], 0, in[1], in[2]); }, {big, twice, add},
          {big.to(kGpu), twice.to(kGpu), add.to(kGpu)}, "int64 wrap-around");
  // Empty index and src; errors: out of range (first one named), bool x, lossy src dtype.
  const Tensor x = test::random_tensor(Shape{3, 4}, DType::float32, seed++);
  const Tensor e = zeros(Shape{0, 4}, DType::int64);
  compare([](const std::vector<Tensor>& in) { return scatter_add(in[0], 0, in[1], in[2].to(DType::float32)); },
          {x, e, e}, {x.to(kGpu), e.to(kGpu), e.to(kGpu)}, "empty index");
  const Tensor bad = from_vector(std::vector<int64_t>{0, 1, 2, 3, 2, -4, 5, 0}, Shape{2, 4});
  const Tensor ones_src = ones(Shape{2, 4});
  compare([](const std::vector<Tensor>& in) { return scatter_add(in[0], 0, in[1], in[2]); }, {x, bad, ones_src},
          {x.to(kGpu), bad.to(kGpu), ones_src.to(kGpu)}, "out-of-range index");
  const Tensor b = zeros(Shape{2, 4}, DType::boolean);
  compare([](const std::vector<Tensor>& in) { return scatter_add(in[0], 0, in[1], in[2]); }, {b, e, e},
          {b.to(kGpu), e.to(kGpu), e.to(kGpu)}, "bool x");
  const Tensor d = ones(Shape{2, 4}, DType::float64);
  const Tensor z = zeros(Shape{2, 4}, DType::int64);
  compare([](const std::vector<Tensor>& in) { return scatter_add(in[0], 0, in[1], in[2]); }, {x, z, d},
          {x.to(kGpu), z.to(kGpu), d.to(kGpu)}, "float64 src into float32 x");
}

TEST_CASE("cuda index ops: operands on different devices are refused, naming both") {
  const Tensor x = zeros(Shape{3, 4});
  const Tensor index = zeros(Shape{3, 4}, DType::int64);
  const Tensor gx = x.to(kGpu), gindex = index.to(kGpu);
  test::check_error([&] { take_along_axis(gx, index, 1); }, {"take_along_axis", "index is on cpu", "cuda:0"});
  test::check_error([&] { take_along_axis(x, gindex, 1); }, {"take_along_axis", "index is on cuda:0", "on cpu"});
  test::check_error([&] { index_select(gx, 0, index.flatten()); }, {"index_select", "indices is on cpu", "cuda:0"});
  test::check_error([&] { scatter_add(gx, 0, gindex, x); }, {"scatter_add", "src is on cpu", "cuda:0"});
  test::check_error([&] { scatter_add(gx, 0, index, gx); }, {"scatter_add", "index is on cpu", "cuda:0"});
}

// The gradient of sum(f(inputs) * weights) on the GPU against the CPU: each differentiable op's
// backward (scatters for the gathers, a gather for scatter_add) runs on the device.
TEST_CASE("cuda index ops: gradients against the cpu") {
  const Tensor x = test::random_tensor(Shape{3, 4}, DType::float64, 700);
  const Tensor index = from_vector(std::vector<int64_t>{0, 0, -1, 2, 3, 1, 1, 1, -4, 0, 2, 2, -2, 3, 2}, Shape{3, 5});
  const Tensor row_index = from_vector(std::vector<int32_t>{3, 0, 3, -1, 1, 1}, Shape{1, 6});
  const Tensor picks = from_vector(std::vector<int64_t>{2, -1, 0, 2, -3}, Shape{5});
  const Tensor src = test::random_tensor(Shape{3, 5}, DType::float64, 701);
  const Tensor short_index = from_vector(std::vector<int64_t>{3, 3, -1, 0, 2, 0}, Shape{2, 3});
  const Tensor short_src = test::random_tensor(Shape{2, 3}, DType::float64, 702);
  using Fn = std::function<Tensor(const Tensor&, const Tensor&, const std::vector<Tensor>&)>;
  struct Case {
    const char* name;
    Fn f;  // of the differentiated x and src, and the constant operands
    std::vector<Tensor> constants;
    Tensor second;
  };
  const std::vector<Case> cases = {
      {"take_along_axis", [](const Tensor& a, const Tensor&, const std::vector<Tensor>& c) { return take_along_axis(a, c[0], 1); },
       {index}, src},
      {"take_along_axis broadcast index", [](const Tensor& a, const Tensor&, const std::vector<Tensor>& c) { return take_along_axis(a, c[0], -1); },
       {row_index}, src},
      {"index_select axis 1", [](const Tensor& a, const Tensor&, const std::vector<Tensor>& c) { return index_select(a, 1, c[0]); },
       {picks}, src},
      {"index_select transposed", [](const Tensor& a, const Tensor&, const std::vector<Tensor>& c) { return index_select(a.mT(), 0, c[0]); },
       {picks}, src},
      {"scatter_add", [](const Tensor& a, const Tensor& s, const std::vector<Tensor>& c) { return scatter_add(a, 1, c[0], s); },
       {index.slice(1, 0, 4)}, src.slice(1, 0, 4)},
      {"scatter_add short index", [](const Tensor& a, const Tensor& s, const std::vector<Tensor>& c) { return scatter_add(a, 1, c[0], s); },
       {short_index}, short_src},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    std::vector<Tensor> gpu_constants;
    for (const Tensor& t : c.constants) gpu_constants.push_back(t.to(kGpu));
    const Tensor weights = test::random_tensor(c.f(x, c.second, c.constants).shape(), DType::float64, 703);
    const Tensor gpu_weights = weights.to(kGpu);
    auto cpu_loss = [&](const Tensor& a, const Tensor& s) { return sum(c.f(a, s, c.constants) * weights); };
    auto gpu_loss = [&](const Tensor& a, const Tensor& s) { return sum(c.f(a, s, gpu_constants) * gpu_weights); };
    const bool uses_src = std::string(c.name).rfind("scatter_add", 0) == 0;
    if (uses_src) {
      const auto [cpu_dx, cpu_ds] = grad<0, 1>(cpu_loss)(x, c.second);
      const auto [gpu_dx, gpu_ds] = grad<0, 1>(gpu_loss)(x.to(kGpu), c.second.to(kGpu));
      check_same(gpu_dx, cpu_dx, std::string(c.name) + " dx", {1e-12, 1e-12});
      check_same(gpu_ds, cpu_ds, std::string(c.name) + " dsrc", {1e-12, 1e-12});
    } else {
      const Tensor cpu_dx = grad<0>(cpu_loss)(x, c.second);
      const Tensor gpu_dx = grad<0>(gpu_loss)(x.to(kGpu), c.second.to(kGpu));
      check_same(gpu_dx, cpu_dx, std::string(c.name) + " dx", {1e-12, 1e-12});
    }
  }
}

}  // namespace
}  // namespace ctrax
