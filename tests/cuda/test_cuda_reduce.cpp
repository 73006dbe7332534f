// Reductions, softmax and log_softmax on a CUDA device against the CPU result: every op of the
// family over every set of axes (with and without keepdims), every dtype, contiguous,
// transposed, stepped and broadcast (stride-0) inputs, empty and rank-0 shapes, rows long
// enough for the block-per-row kernels, NaN/inf handling, ties for argmax/argmin and integer
// wrap-around.
//
// Tolerances: the GPU accumulates floating sums in double like the CPU, only in a tree order
// across threads, so the double results differ by a few ulp (n * 2^-53 * sum|x| at most) and
// float32 results by at most one float32 rounding (rtol 2.5e-7 ~ 2 ulp). softmax computes
// exp in float32 with expf (within 2 ulp of the correctly rounded value glibc returns), hence
// rtol 1e-6 there. Integer and bool results are compared exactly.
#include <cmath>
#include <functional>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <ctrax/base/op_list.h>
#include <ctrax/tensor/ops.h>
#include <ctrax/tensor/tensor.h>

#include "test_util.h"

namespace ctrax {
namespace {

const Device kGpu = Device::cuda(0);

using ReduceFn = std::function<Tensor(const Tensor&, const std::vector<int>&, bool)>;

struct ReduceEntry {
  const char* name;
  ReduceFn fn;
  bool all_axis_sets;  // false: argmax/argmin take one axis (or none = flattened)
};

const std::vector<ReduceEntry>& reduce_table() {
  static const std::vector<ReduceEntry> table = {
      {"sum", [](const Tensor& x, const std::vector<int>& a, bool k) { return sum(x, a, k); }, true},
      {"mean", [](const Tensor& x, const std::vector<int>& a, bool k) { return mean(x, a, k); }, true},
      {"var", [](const Tensor& x, const std::vector<int>& a, bool k) { return var(x, a, k, 0); }, true},
      {"std", [](const Tensor& x, const std::vector<int>& a, bool k) { return ctrax::std(x, a, k, 1); }, true},
      {"max", [](const Tensor& x, const std::vector<int>& a, bool k) { return max(x, a, k); }, true},
      {"min", [](const Tensor& x, const std::vector<int>& a, bool k) { return min(x, a, k); }, true},
      {"prod", [](const Tensor& x, const std::vector<int>& a, bool k) { return prod(x, a, k); }, true},
      {"logsumexp", [](const Tensor& x, const std::vector<int>& a, bool k) { return logsumexp(x, a, k); }, true},
      {"any", [](const Tensor& x, const std::vector<int>& a, bool k) { return any(x, a, k); }, true},
      {"all", [](const Tensor& x, const std::vector<int>& a, bool k) { return all(x, a, k); }, true},
      {"argmax",
       [](const Tensor& x, const std::vector<int>& a, bool k) { return a.empty() ? argmax(x) : argmax(x, a[0], k); },
       false},
      {"argmin",
       [](const Tensor& x, const std::vector<int>& a, bool k) { return a.empty() ? argmin(x) : argmin(x, a[0], k); },
       false},
  };
  return table;
}

using AxisFn = std::function<Tensor(const Tensor&, int)>;
struct AxisEntry {
  const char* name;
  AxisFn fn;
};
const std::vector<AxisEntry>& softmax_table() {
  static const std::vector<AxisEntry> table = {
      {"softmax", [](const Tensor& x, int axis) { return softmax(x, axis); }},
      {"log_softmax", [](const Tensor& x, int axis) { return log_softmax(x, axis); }},
  };
  return table;
}

test::Tolerance tolerance_for(DType dtype, const std::string& op) {
  const bool soft = op == "softmax" || op == "log_softmax";
  if (dtype == DType::float32) return soft ? test::Tolerance{1e-6, 1e-6} : test::Tolerance{1e-6, 2.5e-7};
  return {1e-12, 1e-12};
}

// Runs `f` on the cpu input and on the same values on the GPU; both must throw, or give the
// same dtype, shape and values.
void compare(const std::string& op, const std::function<Tensor(const Tensor&)>& f, const Tensor& cpu_x,
             const Tensor& gpu_x, const std::string& what) {
  INFO(op << " " << what);
  Tensor expected;
  bool cpu_threw = false;
  try {
    expected = f(cpu_x);
  } catch (const ctrax::Error&) {
    cpu_threw = true;
  }
  if (cpu_threw) {
    CHECK_THROWS_AS(f(gpu_x), ctrax::Error);
    return;
  }
  const Tensor got_gpu = f(gpu_x);
  CHECK(got_gpu.device() == kGpu);
  const Tensor got = got_gpu.to(Device::cpu());
  REQUIRE(got.dtype() == expected.dtype());
  REQUIRE(got.shape() == expected.shape());
  if (is_floating(expected.dtype())) {
    test::check_close(got, expected, tolerance_for(expected.dtype(), op), op + " " + what);
  } else {
    const std::vector<int64_t> a = got.to(DType::int64).to_vector<int64_t>();
    const std::vector<int64_t> b = expected.to(DType::int64).to_vector<int64_t>();
    int reported = 0;
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i] != b[i] && reported++ < 5) FAIL_CHECK("element " << i << ": got " << a[i] << ", expected " << b[i]);
  }
}

// Every subset of the axes of a rank-r tensor (the empty one means "all axes").
std::vector<std::vector<int>> axis_sets(int rank, bool all_sets) {
  std::vector<std::vector<int>> sets;
  if (!all_sets) {
    sets.push_back({});
    for (int d = 0; d < rank; ++d) sets.push_back({d});
    if (rank > 0) sets.push_back({-1});
    return sets;
  }
  for (int mask = 0; mask < (1 << rank); ++mask) {
    std::vector<int> s;
    for (int d = 0; d < rank; ++d)
      if (mask & (1 << d)) s.push_back(d);
    sets.push_back(s);
  }
  if (rank > 1) sets.push_back({-1, 0});
  return sets;
}

std::string axes_text(const std::vector<int>& axes, bool keepdims) {
  std::string s = "axes {";
  for (int a : axes) s += std::to_string(a) + ",";
  return s + "} keepdims " + (keepdims ? "1" : "0");
}

const std::vector<Shape> kShapes = {
    Shape{}, Shape{0}, Shape{1}, Shape{7}, Shape{3, 4}, Shape{2, 3, 5}, Shape{4, 0, 3}, Shape{2, 1, 3},
    Shape{5, 300}, Shape{1000}, Shape{3, 70, 2},
};

// The same values as t on `device`, stored transposed (rank >= 2) or every other element of a
// larger buffer (rank 1); test::non_contiguous builds its buffer on the cpu, so the GPU needs
// its own.
Tensor transposed_on(const Tensor& t, Device device) {
  const Tensor d = t.to(device);
  if (d.rank() >= 2) return d.transpose(-1, -2).contiguous().transpose(-1, -2);
  if (d.rank() == 1) {
    Tensor view = zeros(Shape{d.size(0) * 2}, d.dtype(), device).slice(0, 0, d.size(0) * 2, 2);
    view.copy_(d);
    return view;
  }
  return d;
}

// The same values as t on `device`, with a step of 2 along axis 0 of a larger buffer.
Tensor stepped_on(const Tensor& t, Device device) {
  if (t.rank() == 0) return t.to(device);
  Shape big_shape = t.shape();
  big_shape[0] = 2 * t.shape()[0] + 1;
  Tensor view = full(big_shape, 7.0, t.dtype(), device).slice(0, 1, 2 * t.shape()[0] + 1, 2);
  view.copy_(t);
  return view;
}

// The layouts each input is tried in, the same on both devices.
struct Layout {
  const char* name;
  std::function<Tensor(const Tensor&, Device)> make;
};
const std::vector<Layout>& layouts() {
  static const std::vector<Layout> l = {
      {"contiguous", [](const Tensor& t, Device d) { return t.to(d); }},
      {"transposed", transposed_on},
      {"stepped", stepped_on},
  };
  return l;
}

void check_reduce_op(const ReduceEntry& e, const std::vector<Shape>& shapes) {
  uint64_t seed = 100;
  for (DType dtype : test::kAllDTypes) {
    for (const Shape& shape : shapes) {
      const Tensor x = test::random_tensor(shape, dtype, seed++);
      for (const Layout& layout : layouts()) {
        const Tensor cx = layout.make(x, Device::cpu()), gx = layout.make(x, kGpu);
        for (const std::vector<int>& axes : axis_sets(shape.rank(), e.all_axis_sets)) {
          for (bool keepdims : {false, true}) {
            std::ostringstream what;
            what << dtype << " " << shape << " " << layout.name << " " << axes_text(axes, keepdims);
            compare(e.name, [&](const Tensor& t) { return e.fn(t, axes, keepdims); }, cx, gx, what.str());
          }
        }
      }
    }
    // Broadcast input (stride 0 along axis 0), expanded on each device.
    const Tensor small = test::random_tensor(Shape{1, 6}, dtype, seed++);
    for (const std::vector<int>& axes : axis_sets(2, e.all_axis_sets)) {
      std::ostringstream what;
      what << dtype << " expanded {5, 6} " << axes_text(axes, false);
      compare(e.name, [&](const Tensor& t) { return e.fn(t, axes, false); }, small.expand(Shape{5, 6}),
              small.to(kGpu).expand(Shape{5, 6}), what.str());
    }
  }
}

TEST_CASE("cuda reductions: every op, axis set, dtype and layout against the cpu") {
  for (const ReduceEntry& e : reduce_table()) check_reduce_op(e, kShapes);
}

// Few rows of at least 4 * 16384 elements take the chunked path (partial results per block,
// then a combine per row); 70000 rows of 2 the warp-per-row one.
TEST_CASE("cuda reductions: long rows against the cpu") {
  const std::vector<Shape> shapes = {Shape{3, 70000}, Shape{140000}, Shape{70000, 2}};
  for (const ReduceEntry& e : reduce_table()) check_reduce_op(e, shapes);
}

TEST_CASE("cuda softmax and log_softmax: every axis, dtype and layout against the cpu") {
  uint64_t seed = 900;
  for (const AxisEntry& e : softmax_table()) {
    for (DType dtype : test::kAllDTypes) {
      for (const Shape& shape : kShapes) {
        const Tensor x = test::random_tensor(shape, dtype, seed++, -30.0, 30.0);
        for (const Layout& layout : layouts()) {
          const Tensor cx = layout.make(x, Device::cpu()), gx = layout.make(x, kGpu);
          for (int axis = -1; axis < shape.rank(); ++axis) {  // -1 twice for rank 1 is fine; rank 0 throws
            std::ostringstream what;
            what << dtype << " " << shape << " " << layout.name << " axis " << axis;
            compare(e.name, [&](const Tensor& t) { return e.fn(t, axis); }, cx, gx, what.str());
          }
        }
      }
    }
  }
}

// NaN, infinities, all -inf rows and ties, in float32 and float64, short and long rows.
TEST_CASE("cuda reductions and softmax: NaN, inf and ties as on the cpu") {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  for (DType dtype : {DType::float32, DType::float64}) {
    for (int64_t n : {5, 300}) {
      std::vector<double> v(static_cast<size_t>(6 * n), 1.0);
      for (int64_t j = 0; j < n; ++j) {
        v[static_cast<size_t>(0 * n + j)] = static_cast<double>(j % 3);                // ties of the max
        v[static_cast<size_t>(1 * n + j)] = -inf;                                      // all -inf
        v[static_cast<size_t>(2 * n + j)] = j == n / 2 || j == n - 1 ? nan : 0.5;      // two NaNs
        v[static_cast<size_t>(3 * n + j)] = j == 1 ? inf : -1.0;                       // one +inf
        v[static_cast<size_t>(4 * n + j)] = j % 2 ? -inf : 2.0;                        // some -inf
        v[static_cast<size_t>(5 * n + j)] = j == n - 1 ? nan : (j == 0 ? inf : -inf);  // NaN after inf
      }
      const Tensor x = from_vector(v, Shape{6, n}).to(dtype);
      const Tensor gx = x.to(kGpu);
      for (const ReduceEntry& e : reduce_table()) {
        for (const std::vector<int>& axes : std::vector<std::vector<int>>{{1}, {0}, {}}) {
          compare(e.name, [&](const Tensor& t) { return e.fn(t, axes, false); }, x, gx,
                  "special values n " + std::to_string(n) + " " + axes_text(axes, false));
        }
      }
      for (const AxisEntry& e : softmax_table()) {
        for (int axis : {0, 1}) {
          compare(e.name, [&](const Tensor& t) { return e.fn(t, axis); }, x, gx,
                  "special values n " + std::to_string(n) + " axis " + std::to_string(axis));
        }
      }
    }
  }
}

TEST_CASE("cuda reductions: integer sums and products wrap like the cpu") {
  const Tensor big = test::random_tensor(Shape{4, 300}, DType::int64, 7, -4e18, 4e18);
  const Tensor mid = test::random_tensor(Shape{4, 300}, DType::int32, 8, -1000.0, 1000.0);
  for (const Tensor& x : {big, mid}) {
    for (const char* name : {"sum", "prod"}) {
      for (const ReduceEntry& e : reduce_table()) {
        if (std::string(e.name) != name) continue;
        for (const std::vector<int>& axes : std::vector<std::vector<int>>{{1}, {0}, {}})
          compare(e.name, [&](const Tensor& t) { return e.fn(t, axes, false); }, x, x.to(kGpu),
                  std::string("wrap ") + axes_text(axes, false));
      }
    }
  }
}

TEST_CASE("cuda reductions: the cpu's refusals apply on the gpu too") {
  const Tensor g = ones(Shape{2, 3}, DType::float32, kGpu);
  test::check_error([&] { sum(g, {0, 0}); }, {"sum", "repeated"});
  test::check_error([&] { mean(g, {5}); }, {"mean"});
  test::check_error([&] { max(zeros(Shape{0, 3}, DType::float32, kGpu), {0}); }, {"max", "empty"});
  test::check_error([&] { var(g, {1}, false, -1); }, {"var", "correction"});
  test::check_error([&] { softmax(ones(Shape{}, DType::float32, kGpu), 0); }, {"softmax", "rank"});
}

// Every reduction op of base/op_list.h (the block from sum to argmin) and softmax/log_softmax
// must have an entry in the tables above.
TEST_CASE("cuda reductions: every reduction op of op_list has a cuda test entry") {
  std::set<std::string> covered;
  for (const ReduceEntry& e : reduce_table()) covered.insert(e.name);
  for (const AxisEntry& e : softmax_table()) covered.insert(e.name);
  std::vector<std::string> family;
  bool in_block = false;
  for (const char* name : kOpNames) {
    const std::string n = name;
    if (n == "sum") in_block = true;
    if (in_block || n == "softmax" || n == "log_softmax") family.push_back(n);
    if (n == "argmin") in_block = false;
  }
  CHECK(family.size() >= 14);
  for (const std::string& n : family) CHECK_MESSAGE(covered.count(n) == 1, "no cuda test entry for " << n);
}

}  // namespace
}  // namespace ctrax
