// Reductions against a plain double-precision reference: every op, every axis subset of a
// rank-3 tensor (positive and negative axes, keepdims both ways), contiguous, transposed,
// step-sliced and expanded inputs, rank 0, zero-sized axes, NaN and infinities, integer and
// bool dtypes, float32 accuracy, the multi-threaded paths, and the errors.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include <ctrax/kernels/parallel.h>

#include "test_util.h"

using namespace ctrax;
using namespace ctrax::test;

CTRAX_OPS_TESTED(sum, mean, var, std, max, min, prod, logsumexp, any, all, argmax, argmin);

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

using RefFn = std::function<double(const std::vector<double>&)>;

// Groups the elements of x by output position (each group in row-major order of the reduced
// axes) and applies f to each group. Sets out_shape.
std::vector<double> ref_reduce(const Tensor& x, std::vector<int> axes, bool keepdims, const RefFn& f,
                               Shape& out_shape) {
  const int r = x.rank();
  std::vector<bool> reduced(static_cast<size_t>(r), axes.empty());
  for (int a : axes) reduced[static_cast<size_t>(a < 0 ? a + r : a)] = true;
  out_shape = Shape{};
  Shape kept;
  for (int d = 0; d < r; ++d) {
    if (!reduced[d]) kept.push_back(x.shape()[d]);
    if (!reduced[d] || keepdims) out_shape.push_back(reduced[d] ? 1 : x.shape()[d]);
  }
  std::vector<std::vector<double>> groups(static_cast<size_t>(kept.numel()));
  const std::vector<double> values = x.to_vector<double>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    const std::vector<int64_t> idx = unravel(i, x.shape());
    int64_t o = 0;
    for (int d = 0; d < r; ++d)
      if (!reduced[d]) o = o * x.shape()[d] + idx[d];
    groups[static_cast<size_t>(o)].push_back(values[static_cast<size_t>(i)]);
  }
  std::vector<double> out;
  for (const auto& g : groups) out.push_back(f(g));
  return out;
}

double ref_sum(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}
double ref_prod(const std::vector<double>& v) {
  double p = 1;
  for (double x : v) p *= x;
  return p;
}
double ref_mean(const std::vector<double>& v) { return ref_sum(v) / static_cast<double>(v.size()); }
double ref_var(const std::vector<double>& v, int64_t correction) {
  const double m = ref_mean(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  const double dof = static_cast<double>(static_cast<int64_t>(v.size()) - correction);
  return dof > 0 ? s / dof : kNaN;
}
double ref_max(const std::vector<double>& v) {
  double m = -kInf;
  for (double x : v) {
    if (std::isnan(x)) return kNaN;
    m = std::max(m, x);
  }
  return m;
}
double ref_min(const std::vector<double>& v) {
  double m = kInf;
  for (double x : v) {
    if (std::isnan(x)) return kNaN;
    m = std::min(m, x);
  }
  return m;
}
double ref_logsumexp(const std::vector<double>& v) {
  const double m = ref_max(v);
  if (!std::isfinite(m)) return m;
  double s = 0;
  for (double x : v) s += std::exp(x - m);
  return m + std::log(s);
}
double ref_any(const std::vector<double>& v) {
  for (double x : v)
    if (x != 0) return 1;
  return 0;
}
double ref_all(const std::vector<double>& v) {
  for (double x : v)
    if (x == 0) return 0;
  return 1;
}
double ref_argmax(const std::vector<double>& v) {
  size_t best = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (std::isnan(v[i])) return static_cast<double>(i);
    if (v[i] > v[best]) best = i;
  }
  return static_cast<double>(best);
}
double ref_argmin(const std::vector<double>& v) {
  size_t best = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (std::isnan(v[i])) return static_cast<double>(i);
    if (v[i] < v[best]) best = i;
  }
  return static_cast<double>(best);
}

using ReduceFn = std::function<Tensor(const Tensor&, const std::vector<int>&, bool)>;

struct ReduceCase {
  const char* name;
  ReduceFn op;
  RefFn ref;
};

std::vector<ReduceCase> all_reductions() {
  return {
      {"sum", [](const Tensor& x, const std::vector<int>& a, bool k) { return sum(x, a, k); }, ref_sum},
      {"mean", [](const Tensor& x, const std::vector<int>& a, bool k) { return mean(x, a, k); }, ref_mean},
      {"var", [](const Tensor& x, const std::vector<int>& a, bool k) { return var(x, a, k); },
       [](const std::vector<double>& v) { return ref_var(v, 0); }},
      {"var1", [](const Tensor& x, const std::vector<int>& a, bool k) { return var(x, a, k, 1); },
       [](const std::vector<double>& v) { return ref_var(v, 1); }},
      {"std", [](const Tensor& x, const std::vector<int>& a, bool k) { return ctrax::std(x, a, k); },
       [](const std::vector<double>& v) { return std::sqrt(ref_var(v, 0)); }},
      {"max", [](const Tensor& x, const std::vector<int>& a, bool k) { return max(x, a, k); }, ref_max},
      {"min", [](const Tensor& x, const std::vector<int>& a, bool k) { return min(x, a, k); }, ref_min},
      {"prod", [](const Tensor& x, const std::vector<int>& a, bool k) { return prod(x, a, k); }, ref_prod},
      {"logsumexp", [](const Tensor& x, const std::vector<int>& a, bool k) { return logsumexp(x, a, k); },
       ref_logsumexp},
      {"any", [](const Tensor& x, const std::vector<int>& a, bool k) { return any(x, a, k); }, ref_any},
      {"all", [](const Tensor& x, const std::vector<int>& a, bool k) { return all(x, a, k); }, ref_all},
  };
}

Tolerance reduce_tolerance(DType dtype) {
  if (dtype == DType::float32) return {1e-5, 1e-5};
  if (dtype == DType::float64) return {1e-12, 1e-12};
  return {0, 0};
}

// The same logical (3, 4, 5) values in several layouts.
std::vector<std::pair<std::string, Tensor>> layouts(DType dtype, uint64_t seed) {
  const Tensor base = random_tensor(Shape{3, 4, 5}, dtype, seed);
  Tensor big = random_tensor(Shape{3, 8, 5}, dtype, seed + 1);
  return {
      {"contiguous", base},
      {"transposed storage", non_contiguous(base)},
      {"permuted", random_tensor(Shape{5, 3, 4}, dtype, seed + 2).permute({1, 2, 0})},
      {"step slice", big.slice(1, 0, 8, 2)},
      {"expanded", random_tensor(Shape{3, 1, 5}, dtype, seed + 3).expand(Shape{3, 4, 5})},
  };
}

// Size-1 axes: a reduction over only those has one element per output (its own loop).
std::vector<std::pair<std::string, Tensor>> unit_axis_layouts(DType dtype, uint64_t seed) {
  return {{"[4, 1, 5]", random_tensor(Shape{4, 1, 5}, dtype, seed)},
          {"[1, 6, 1]", random_tensor(Shape{1, 6, 1}, dtype, seed + 1)},
          {"[1, 6, 1] from a transposed [1, 1, 6]", random_tensor(Shape{1, 1, 6}, dtype, seed + 2).permute({0, 2, 1})},
          {"[1, 1, 1]", random_tensor(Shape{1, 1, 1}, dtype, seed + 3)}};
}

std::vector<std::vector<int>> axis_subsets() {
  return {{}, {0}, {1}, {2}, {0, 1}, {0, 2}, {1, 2}, {0, 1, 2}, {-1}, {-3, -1}, {2, 0}, {-2}};
}

}  // namespace

TEST_CASE("reduce: every op, every axis subset, every layout (float32, float64)") {
  for (DType dtype : {DType::float32, DType::float64}) {
    for (const auto& [layout, x] : layouts(dtype, 11)) {
      for (const ReduceCase& c : all_reductions()) {
        for (const auto& axes : axis_subsets()) {
          for (bool keepdims : {false, true}) {
            Shape shape;
            const std::vector<double> ref = ref_reduce(x, axes, keepdims, c.ref, shape);
            const Tensor got = c.op(x, axes, keepdims);
            const std::string what = std::string(c.name) + " " + dtype_name(dtype) + " " + layout + " axes " +
                                     std::to_string(axes.size()) + (axes.empty() ? "" : " first " + std::to_string(axes[0])) +
                                     (keepdims ? " keepdims" : "");
            const bool boolean = std::string(c.name) == "any" || std::string(c.name) == "all";
            CHECK_MESSAGE(got.dtype() == (boolean ? DType::boolean : dtype), what);
            check_close(got, shape, ref, reduce_tolerance(dtype), what);
          }
        }
      }
    }
  }
}

TEST_CASE("reduce: every op over size-1 axes (one element per output), with NaN and infinities") {
  for (DType dtype : {DType::float32, DType::float64}) {
    auto cases = unit_axis_layouts(dtype, 5);
    cases.emplace_back("[3, 1] with NaN and infinities",
                       from_vector<double>({kNaN, kInf, -kInf}, Shape{3, 1}).to(dtype));
    for (const auto& [layout, x] : cases) {
      for (const ReduceCase& c : all_reductions()) {
        for (const auto& axes : std::vector<std::vector<int>>{{1}, {-1}, {0}, {0, 1}}) {
          if (axes[0] >= x.rank() || -axes[0] > x.rank()) continue;
          for (bool keepdims : {false, true}) {
            Shape shape;
            const std::vector<double> ref = ref_reduce(x, axes, keepdims, c.ref, shape);
            const std::string what = std::string(c.name) + " " + dtype_name(dtype) + " " + layout + " axes " +
                                     std::to_string(axes.size()) + " first " + std::to_string(axes[0]) +
                                     (keepdims ? " keepdims" : "");
            check_close(c.op(x, axes, keepdims), shape, ref, reduce_tolerance(dtype), what);
          }
        }
      }
      for (int axis : {0, -1}) {
        Shape shape;
        check_close(argmax(x, axis), shape, ref_reduce(x, {axis}, false, ref_argmax, shape), {0, 0},
                    "argmax " + layout);
        check_close(argmin(x, axis), shape, ref_reduce(x, {axis}, false, ref_argmin, shape), {0, 0},
                    "argmin " + layout);
      }
    }
  }
}

TEST_CASE("reduce: argmax and argmin along every axis and flattened") {
  for (DType dtype : {DType::float32, DType::float64, DType::int32, DType::int64, DType::boolean}) {
    for (const auto& [layout, x] : layouts(dtype, 23)) {
      for (int axis : {0, 1, 2, -1, -3}) {
        for (bool keepdims : {false, true}) {
          Shape shape;
          const std::string what = std::string(dtype_name(dtype)) + " " + layout + " axis " + std::to_string(axis);
          Tensor got = argmax(x, axis, keepdims);
          CHECK(got.dtype() == DType::int64);
          check_close(got, shape, ref_reduce(x, {axis}, keepdims, ref_argmax, shape), {0, 0}, "argmax " + what);
          got = argmin(x, axis, keepdims);
          check_close(got, shape, ref_reduce(x, {axis}, keepdims, ref_argmin, shape), {0, 0}, "argmin " + what);
        }
      }
      Shape shape;
      check_close(argmax(x), Shape{}, ref_reduce(x, {}, false, ref_argmax, shape), {0, 0}, "argmax flat " + layout);
      check_close(argmin(x), Shape{}, ref_reduce(x, {}, false, ref_argmin, shape), {0, 0}, "argmin flat " + layout);
    }
  }
}

TEST_CASE("reduce: integer and bool dtypes") {
  for (DType dtype : {DType::int32, DType::int64, DType::boolean}) {
    for (const auto& [layout, x] : layouts(dtype, 37)) {
      for (const auto& axes : axis_subsets()) {
        Shape shape;
        const std::string what = std::string(dtype_name(dtype)) + " " + layout;
        Tensor got = sum(x, axes);
        CHECK(got.dtype() == DType::int64);
        check_close(got, shape, ref_reduce(x, axes, false, ref_sum, shape), {0, 0}, "sum " + what);
        got = prod(x, axes);
        CHECK(got.dtype() == DType::int64);
        check_close(got, shape, ref_reduce(x, axes, false, ref_prod, shape), {0, 0}, "prod " + what);
        got = mean(x, axes);
        CHECK(got.dtype() == DType::float32);
        check_close(got, shape, ref_reduce(x, axes, false, ref_mean, shape), {1e-6, 1e-6}, "mean " + what);
        got = var(x, axes);
        CHECK(got.dtype() == DType::float32);
        check_close(got, shape, ref_reduce(x, axes, false, [](const std::vector<double>& v) { return ref_var(v, 0); }, shape),
                    {1e-5, 1e-5}, "var " + what);
        got = logsumexp(x, axes);
        CHECK(got.dtype() == DType::float32);
        check_close(got, shape, ref_reduce(x, axes, false, ref_logsumexp, shape), {1e-5, 1e-5}, "logsumexp " + what);
        got = max(x, axes);
        CHECK(got.dtype() == dtype);
        check_close(got, shape, ref_reduce(x, axes, false, ref_max, shape), {0, 0}, "max " + what);
        got = min(x, axes);
        CHECK(got.dtype() == dtype);
        check_close(got, shape, ref_reduce(x, axes, false, ref_min, shape), {0, 0}, "min " + what);
        check_close(any(x, axes), shape, ref_reduce(x, axes, false, ref_any, shape), {0, 0}, "any " + what);
        check_close(all(x, axes), shape, ref_reduce(x, axes, false, ref_all, shape), {0, 0}, "all " + what);
      }
    }
  }
  // int64 sums wrap modulo 2^64 like NumPy instead of overflowing (no undefined behaviour)
  const Tensor big = tensor<int64_t>({std::numeric_limits<int64_t>::max(), 1});
  CHECK(sum(big).item<int64_t>() == std::numeric_limits<int64_t>::min());
  CHECK(prod(tensor<int64_t>({int64_t{1} << 62, 4})).item<int64_t>() == 0);
}

TEST_CASE("reduce: rank 0 inputs") {
  const Tensor s = scalar_tensor(2.5);
  CHECK(sum(s).shape() == Shape{});
  CHECK(sum(s).item<double>() == 2.5);
  CHECK(sum(s, {}, true).shape() == Shape{});
  CHECK(mean(s).item<double>() == 2.5);
  CHECK(var(s).item<double>() == 0.0);
  CHECK(std::isnan(var(s, {}, false, 1).item<double>()));  // no degrees of freedom left
  CHECK(max(s).item<double>() == 2.5);
  CHECK(prod(s).item<double>() == 2.5);
  CHECK(logsumexp(s).item<double>() == doctest::Approx(2.5));
  CHECK(any(s).item<bool>());
  CHECK(argmax(s).item<int64_t>() == 0);
  CHECK(argmin(s).item<int64_t>() == 0);
  check_error([&] { sum(s, {0}); }, {"sum", "axis 0"});
  check_error([&] { argmax(s, 0); }, {"argmax", "axis 0"});
}

TEST_CASE("reduce: zero-sized axes") {
  const Tensor e = zeros(Shape{0, 3});
  check_close(sum(e, {0}), Shape{3}, {0, 0, 0}, {0, 0}, "sum");
  check_close(prod(e, {0}), Shape{3}, {1, 1, 1}, {0, 0}, "prod");
  check_close(any(e, {0}), Shape{3}, {0, 0, 0}, {0, 0}, "any");
  check_close(all(e, {0}), Shape{3}, {1, 1, 1}, {0, 0}, "all");
  check_close(sum(e, {0}, true), Shape{1, 3}, {0, 0, 0}, {0, 0}, "sum keepdims");
  CHECK(sum(e).item<float>() == 0.0f);
  CHECK(sum(zeros(Shape{0}, DType::int32)).dtype() == DType::int64);
  // reducing the non-empty axis of an empty tensor gives an empty result, for every op
  CHECK(max(e, {1}).shape() == Shape{0});
  CHECK(mean(e, {1}).shape() == Shape{0});
  CHECK(argmax(e, 1).shape() == Shape{0});
  CHECK(logsumexp(e, {1}, true).shape() == Shape{0, 1});
  // an empty set has no mean, variance, extremum or argmax
  check_error([&] { mean(e, {0}); }, {"mean", "zero elements", "[0, 3]"});
  check_error([&] { var(e); }, {"var", "zero elements"});
  check_error([&] { ctrax::std(e, {0}); }, {"std", "zero elements"});
  check_error([&] { max(e, {0}); }, {"max", "zero elements"});
  check_error([&] { min(e); }, {"min", "zero elements"});
  check_error([&] { logsumexp(e, {0}); }, {"logsumexp", "zero elements"});
  check_error([&] { argmax(e, 0); }, {"argmax", "zero elements"});
  check_error([&] { argmin(e); }, {"argmin", "zero elements"});
}

TEST_CASE("reduce: NaN and infinities") {
  const Tensor x = from_vector<double>({1, kNaN, 3, kNaN, 2, 5, -kInf, -kInf, 4, 4, 1, 4}, Shape{3, 4});
  check_close(max(x, {1}), Shape{3}, {kNaN, 5, 4}, {0, 0}, "max propagates NaN");
  check_close(min(x, {1}), Shape{3}, {kNaN, -kInf, 1}, {0, 0}, "min propagates NaN");
  check_close(max(x, {0}), Shape{4}, {4, kNaN, 3, kNaN}, {0, 0}, "max over rows (row mode)");
  check_close(argmax(x, 1), Shape{3}, {1, 1, 0}, {0, 0}, "first NaN, then first max (tie at 4)");
  check_close(argmin(x, 1), Shape{3}, {1, 2, 2}, {0, 0}, "first NaN, then first min (tie at -inf)");
  check_close(argmax(x, 0), Shape{4}, {2, 0, 0, 0}, {0, 0}, "argmax over rows (row mode)");
  CHECK(argmax(x).item<int64_t>() == 1);
  const Tensor ninf = full(Shape{2, 3}, -kInf, DType::float32);
  check_close(logsumexp(ninf, {1}), Shape{2}, {-kInf, -kInf}, {0, 0}, "all -inf gives -inf");
  check_close(logsumexp(from_vector<float>({1, std::numeric_limits<float>::infinity()}, Shape{2})), Shape{},
              {kInf}, {0, 0}, "+inf gives +inf");
  check_close(logsumexp(from_vector<float>({1e30f, 1e30f}, Shape{2})), Shape{}, {1e30 + std::log(2.0)},
              {0, 1e-6}, "large values do not overflow");
  // ties: the first occurrence wins
  check_close(argmax(tensor<int32_t>({2, 7, 7, 1})), Shape{}, {1}, {0, 0}, "argmax tie");
  check_close(argmin(tensor<float>({3, 0, 5, 0})), Shape{}, {1}, {0, 0}, "argmin tie");
  check_close(any(tensor<float>({0, static_cast<float>(kNaN)})), Shape{}, {1}, {0, 0}, "NaN is truthy");
}

TEST_CASE("reduce: float32 sums are accurate on 1e6 elements") {
  const int64_t n = 1000000;
  const Tensor x = full(Shape{n}, 0.1, DType::float32);
  const double exact = static_cast<double>(n) * static_cast<double>(0.1f);
  CHECK(std::fabs(sum(x).item<double>() - exact) <= 1e-5 * exact);
  CHECK(std::fabs(mean(x).item<double>() - 0.1) <= 1e-6);
  // the same sum down a column (row mode: accumulated across rows)
  const Tensor col = x.reshape(Shape{n / 8, 8});
  const std::vector<double> sums = sum(col, {0}).to_vector<double>();
  for (double s : sums) CHECK(std::fabs(s - exact / 8) <= 1e-5 * exact / 8);
  // var of a large offset: the two-pass algorithm has no cancellation
  const Tensor shifted = from_vector<float>({1e4f + 1, 1e4f + 2, 1e4f + 3, 1e4f + 4});
  CHECK(var(shifted).item<double>() == doctest::Approx(1.25).epsilon(1e-6));
}

TEST_CASE("reduce: large inputs take the threaded paths and agree with the reference") {
  // 300 x 500 = 150000 elements: above the threading threshold, in run mode and row mode
  const Tensor x = random_tensor(Shape{3, 100, 500}, DType::float32, 5);
  for (const auto& axes : std::vector<std::vector<int>>{{2}, {1}, {0, 1}, {1, 2}, {0}}) {
    Shape shape;
    check_close(sum(x, axes), shape, ref_reduce(x, axes, false, ref_sum, shape), {1e-5, 1e-5}, "sum large");
    check_close(max(x, axes), shape, ref_reduce(x, axes, false, ref_max, shape), {0, 0}, "max large");
    check_close(var(x, axes), shape, ref_reduce(x, axes, false, [](const std::vector<double>& v) { return ref_var(v, 0); }, shape),
                {1e-5, 1e-5}, "var large");
  }
  const int previous = kernels::num_threads();
  kernels::set_num_threads(1);
  const std::vector<float> one = sum(x, {1}).to_vector<float>();
  kernels::set_num_threads(std::max(previous, 2));
  const std::vector<float> many = sum(x, {1}).to_vector<float>();
  kernels::set_num_threads(previous);
  CHECK(one == many);  // bit-identical whatever the thread count
}

TEST_CASE("reduce: bad arguments throw with a clear message") {
  const Tensor x = zeros(Shape{2, 3});
  check_error([&] { sum(x, {2}); }, {"sum", "axis 2"});
  check_error([&] { mean(x, {-3}); }, {"mean", "-3"});
  check_error([&] { max(x, {0, 0}); }, {"max", "repeated", "{0, 0}"});
  check_error([&] { prod(x, {1, -1}); }, {"prod", "repeated", "[2, 3]"});
  check_error([&] { var(x, {}, false, -1); }, {"var", "correction", "-1"});
  check_error([&] { argmax(x, 5); }, {"argmax", "5"});
  check_error([&] { sum(Tensor{}); }, {"sum", "undefined"});
  check_error([&] { argmin(Tensor{}); }, {"argmin", "undefined"});
  check_error([&] { logsumexp(Tensor{}, {0}); }, {"logsumexp", "undefined"});
}
