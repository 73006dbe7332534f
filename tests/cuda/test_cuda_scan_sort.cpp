// cumsum, discounted_cumsum, sort, argsort and topk on a CUDA device against the CPU result:
// every dtype, every axis (negative too), both directions, contiguous, transposed and stepped
// inputs, empty and rank-0 shapes, long rows (5000), NaN, infinities and ties; and the
// gradients of cumsum, discounted_cumsum, sort and topk on the GPU against the CPU's.
//
// Tolerances: none. The scans do the CPU's operations in the CPU's order (double carry,
// separately rounded multiply and add: kernels/cuda/scan.h) and the sorts use the same total
// order, so values and indices must be identical.
#include <cmath>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <ctrax/autograd/tape.h>
#include <ctrax/tensor/ops.h>
#include <ctrax/tensor/tensor.h>

#include "test_util.h"

namespace ctrax {
namespace {

const Device kGpu = Device::cuda(0);
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Both tensors on the cpu, same dtype, shape and values (NaN equals NaN; -0 equals 0).
void check_identical(const Tensor& got, const Tensor& expected, const std::string& what) {
  INFO(what);
  REQUIRE(got.dtype() == expected.dtype());
  REQUIRE(got.shape() == expected.shape());
  const std::vector<double> a = got.to(DType::float64).to_vector<double>();
  const std::vector<double> b = expected.to(DType::float64).to_vector<double>();
  int reported = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const bool same = (std::isnan(a[i]) && std::isnan(b[i])) || a[i] == b[i];
    if (!same && reported++ < 5) FAIL_CHECK("element " << i << ": got " << a[i] << ", expected " << b[i]);
  }
  if (got.dtype() == DType::int64) CHECK(got.to_vector<int64_t>() == expected.to_vector<int64_t>());
}

// Runs f on the cpu input and on the same values on the GPU: both throw, or both give the
// same result (which the GPU leaves on the GPU).
void compare(const std::function<Tensor(const Tensor&)>& f, const Tensor& cpu_x, const Tensor& gpu_x,
             const std::string& what) {
  Tensor expected;
  try {
    expected = f(cpu_x);
  } catch (const ctrax::Error&) {
    INFO(what);
    CHECK_THROWS_AS(f(gpu_x), ctrax::Error);
    return;
  }
  const Tensor got = f(gpu_x);
  CHECK(got.device() == kGpu);
  check_identical(got.to(Device::cpu()), expected, what);
}

// Values with many ties (small integers) and, for floating dtypes, NaN and +-inf.
Tensor values_with_ties(const Shape& shape, DType dtype, uint64_t seed) {
  std::vector<double> v = test::random_tensor(shape, DType::int64, seed, -3, 4).to_vector<double>();
  if (is_floating(dtype))
    for (size_t i = 0; i < v.size(); ++i) {
      if (i % 7 == 3) v[i] = kNaN;
      if (i % 11 == 5) v[i] = -INFINITY;
      if (i % 17 == 9) v[i] = INFINITY;
      if (i % 13 == 8) v[i] = 0.5;
    }
  return from_vector(v, shape).to(dtype);
}

// The cpu layouts of x to test: contiguous, transposed (or stepped for rank 1), stepped on axis 0.
std::vector<std::pair<std::string, Tensor>> layouts(const Tensor& x) {
  std::vector<std::pair<std::string, Tensor>> out = {{"contiguous", x}};
  if (x.rank() >= 1) {
    out.push_back({"non-contiguous", test::non_contiguous(x)});
    out.push_back({"stepped", test::stepped(x)});
  }
  return out;
}

// The GPU copy of a cpu view, with the same strides: the view is rebuilt on the device.
Tensor gpu_view_like(const std::string& layout, const Tensor& x) {
  const Tensor dense = x.contiguous().to(kGpu);
  if (layout == "non-contiguous" && x.rank() >= 2) return dense.transpose(-1, -2).contiguous().transpose(-1, -2);
  if (layout == "non-contiguous" || layout == "stepped") {
    Shape big_shape = x.shape();
    big_shape[0] = 2 * x.shape()[0] + 1;
    Tensor big = zeros(big_shape, x.dtype(), kGpu);
    Tensor view = big.slice(0, 1, 2 * x.shape()[0] + 1, 2);
    view.copy_(dense);
    return view;
  }
  return dense;
}

const std::vector<Shape> kShapes = {Shape{0}, Shape{1}, Shape{7}, Shape{3, 4}, Shape{2, 3, 5}, Shape{4, 0, 3},
                                    Shape{2, 1, 3}, Shape{3, 70, 2}, Shape{5000}, Shape{2, 5000}};

// Calls check(name, cpu_x, gpu_x, axis) for every shape, dtype, layout and axis (and -1).
void for_every_input(const std::function<void(const std::string&, const Tensor&, const Tensor&, int)>& check,
                     bool floating_only = false) {
  uint64_t seed = 1;
  for (const Shape& shape : kShapes)
    for (DType dtype : test::kAllDTypes) {
      if (floating_only && !is_floating(dtype)) continue;
      const Tensor x = values_with_ties(shape, dtype, seed++);
      for (const auto& [layout, cpu_x] : layouts(x)) {
        const Tensor gpu_x = gpu_view_like(layout, cpu_x);
        for (int axis = -1; axis < shape.rank(); ++axis) {
          std::ostringstream what;
          what << "shape " << shape << " dtype " << dtype << " " << layout << " axis " << axis;
          check(what.str(), cpu_x, gpu_x, axis);
        }
      }
    }
}

TEST_CASE("cuda cumsum: every dtype, axis, direction and layout against the cpu") {
  for_every_input([](const std::string& what, const Tensor& cpu_x, const Tensor& gpu_x, int axis) {
    for (bool reverse : {false, true})
      compare([&](const Tensor& x) { return cumsum(x, axis, reverse); }, cpu_x, gpu_x,
              "cumsum " + what + (reverse ? " reverse" : " forward"));
  });
}

TEST_CASE("cuda discounted_cumsum: every dtype, axis, discount and layout against the cpu") {
  for_every_input([](const std::string& what, const Tensor& cpu_x, const Tensor& gpu_x, int axis) {
    for (double discount : {0.0, 0.99, 1.0, -0.5})
      compare([&](const Tensor& x) { return discounted_cumsum(x, axis, discount); }, cpu_x, gpu_x,
              "discounted_cumsum " + what + " discount " + std::to_string(discount));
  });
}

TEST_CASE("cuda cumsum: int64 sums wrap like the cpu, rank 0 and finite random data") {
  const Tensor big = from_vector(std::vector<int64_t>{std::numeric_limits<int64_t>::max(), 5, -7}, Shape{3});
  check_identical(cumsum(big.to(kGpu), 0).to(Device::cpu()), cumsum(big, 0), "int64 wrap");
  const Tensor scalar = full(Shape{}, 2.5, DType::float32);
  compare([](const Tensor& x) { return cumsum(x, 0); }, scalar, scalar.to(kGpu), "rank 0");
  for (DType dtype : {DType::float32, DType::float64}) {
    const Tensor x = test::random_tensor(Shape{64, 300}, dtype, 77, -1e3, 1e3);
    for (int axis : {0, 1}) {
      compare([&](const Tensor& t) { return cumsum(t, axis); }, x, x.to(kGpu), "random cumsum");
      compare([&](const Tensor& t) { return discounted_cumsum(t, axis, 0.97); }, x, x.to(kGpu), "random discounted");
    }
  }
}

TEST_CASE("cuda sort and argsort: every dtype, axis, direction and layout against the cpu") {
  for_every_input([](const std::string& what, const Tensor& cpu_x, const Tensor& gpu_x, int axis) {
    for (bool descending : {false, true}) {
      const std::string dir = descending ? " descending" : " ascending";
      compare([&](const Tensor& x) { return sort(x, axis, descending); }, cpu_x, gpu_x, "sort " + what + dir);
      compare([&](const Tensor& x) { return argsort(x, axis, descending); }, cpu_x, gpu_x, "argsort " + what + dir);
    }
  });
}

TEST_CASE("cuda topk: values and indices for several k against the cpu") {
  for_every_input([](const std::string& what, const Tensor& cpu_x, const Tensor& gpu_x, int axis) {
    const int64_t n = cpu_x.rank() == 0 ? 1 : cpu_x.shape()[axis < 0 ? cpu_x.rank() - 1 : axis];
    for (int64_t k : {int64_t{0}, int64_t{1}, n / 2, n})
      for (bool largest : {true, false}) {
        const std::string tag = what + " k " + std::to_string(k) + (largest ? " largest" : " smallest");
        compare([&](const Tensor& x) { return topk(x, k, axis, largest).first; }, cpu_x, gpu_x, "topk values " + tag);
        compare([&](const Tensor& x) { return topk(x, k, axis, largest).second; }, cpu_x, gpu_x,
                "topk indices " + tag);
      }
  });
}

TEST_CASE("cuda sort: explicit NaN and tie order, rank 0, bad k and axis refused as on the cpu") {
  const Tensor x = from_vector(std::vector<double>{1.0, kNaN, -2.0, 1.0, kNaN, 3.0}, Shape{6});
  const Tensor g = x.to(kGpu);
  CHECK(argsort(g, 0, false).to(Device::cpu()).to_vector<int64_t>() == std::vector<int64_t>{2, 0, 3, 5, 1, 4});
  CHECK(argsort(g, 0, true).to(Device::cpu()).to_vector<int64_t>() == std::vector<int64_t>{1, 4, 5, 0, 3, 2});
  const Tensor scalar = full(Shape{}, 4.0, DType::float64);
  compare([](const Tensor& t) { return sort(t, -1); }, scalar, scalar.to(kGpu), "rank 0 sort");
  compare([](const Tensor& t) { return topk(t, 1, 0).second; }, scalar, scalar.to(kGpu), "rank 0 topk");
  test::check_error([&] { topk(g, 7, 0); }, {"topk", "k = 7"});
  test::check_error([&] { sort(g, 1); }, {"sort"});
  test::check_error([&] { cumsum(g, 2); }, {"cumsum"});
  test::check_error([&] { discounted_cumsum(g, 0, INFINITY); }, {"discounted_cumsum", "finite"});
}

// d(sum(c * f(x)))/dx on the cpu and on the GPU (c fixed random weights, so the gradient is
// not all ones).
void compare_gradient(const std::function<Tensor(const Tensor&)>& f, const Tensor& x, const std::string& what) {
  INFO(what);
  auto grad_on = [&](Device device) {
    GradientTape tape;
    const Tensor w = tape.watch(x.to(device));
    const Tensor y = f(w);
    const Tensor c = test::random_tensor(y.shape(), y.dtype(), 99).to(device);
    return tape.gradient(sum(mul(y, c)), {w})[0].to(Device::cpu());
  };
  const Tensor expected = grad_on(Device::cpu());
  const Tensor got = grad_on(kGpu);
  test::check_close(got, expected, {1e-12, 1e-12}, what);
}

TEST_CASE("cuda gradients of cumsum, discounted_cumsum, sort and topk match the cpu") {
  // Small integers: finite, with ties (the stable order is the same on both devices).
  const Tensor x = values_with_ties(Shape{3, 6}, DType::int64, 5).to(DType::float64);
  compare_gradient([](const Tensor& t) { return cumsum(t, 1); }, x, "cumsum forward");
  compare_gradient([](const Tensor& t) { return cumsum(t, 0, true); }, x, "cumsum reverse");
  compare_gradient([](const Tensor& t) { return discounted_cumsum(t, 1, 0.9); }, x, "discounted_cumsum");
  compare_gradient([](const Tensor& t) { return sort(t, 1, true); }, x, "sort descending");
  compare_gradient([](const Tensor& t) { return sort(t, 0); }, x, "sort ascending axis 0");
  compare_gradient([](const Tensor& t) { return topk(t, 2, 1).first; }, x, "topk");
}

}  // namespace
}  // namespace ctrax
