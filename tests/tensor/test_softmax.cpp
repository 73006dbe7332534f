// softmax and log_softmax against a plain double-precision reference along every axis, on
// contiguous, strided and expanded inputs, integer inputs, empty axes, infinities, huge values,
// the threaded path, and errors.
#include <cmath>
#include <limits>

#include "test_util.h"

using namespace ctrax;
using namespace ctrax::test;

CTRAX_OPS_TESTED(softmax, log_softmax);

namespace {

const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();


// The definitions, written the naive way but in double with the max subtracted.
std::vector<double> ref_softmax(const std::vector<double>& v) {
  double m = -kInf;
  for (double x : v) m = std::max(m, x);
  double s = 0;
  for (double x : v) s += std::exp(x - m);
  std::vector<double> out;
  for (double x : v) out.push_back(std::exp(x - m) / s);
  return out;
}
std::vector<double> ref_log_softmax(const std::vector<double>& v) {
  double m = -kInf;
  for (double x : v) m = std::max(m, x);
  double s = 0;
  for (double x : v) s += std::exp(x - m);
  std::vector<double> out;
  for (double x : v) out.push_back(x - m - std::log(s));
  return out;
}

Tolerance softmax_tolerance(DType dtype) {
  return dtype == DType::float64 ? Tolerance{1e-13, 1e-12} : Tolerance{1e-6, 1e-5};
}

void check_both(const Tensor& x, int axis, const std::string& what) {
  const DType out_dtype = is_floating(x.dtype()) ? x.dtype() : DType::float32;
  Tensor y = softmax(x, axis);
  CHECK(y.dtype() == out_dtype);
  check_close(y, x.shape(), ref_along_axis(x, axis, ref_softmax), softmax_tolerance(out_dtype), "softmax " + what);
  y = log_softmax(x, axis);
  CHECK(y.dtype() == out_dtype);
  check_close(y, x.shape(), ref_along_axis(x, axis, ref_log_softmax), softmax_tolerance(out_dtype),
              "log_softmax " + what);
}

}  // namespace

TEST_CASE("softmax: every axis, layout and dtype") {
  for (DType dtype : {DType::float32, DType::float64, DType::int32, DType::boolean}) {
    const Tensor base = random_tensor(Shape{3, 4, 5}, dtype, 1, -5, 5);
    const std::vector<std::pair<std::string, Tensor>> inputs = {
        {"contiguous", base},
        {"transposed storage", non_contiguous(base)},
        {"step slice", random_tensor(Shape{3, 8, 5}, dtype, 2, -5, 5).slice(1, 0, 8, 2)},
        {"expanded", random_tensor(Shape{3, 1, 5}, dtype, 3, -5, 5).expand(Shape{3, 4, 5})},
    };
    for (const auto& [layout, x] : inputs)
      for (int axis : {0, 1, 2, -1, -2, -3}) check_both(x, axis, std::string(dtype_name(dtype)) + " " + layout + " axis " + std::to_string(axis));
    check_both(random_tensor(Shape{7}, dtype, 4), 0, "rank 1");
    check_both(random_tensor(Shape{1, 1}, dtype, 5), -1, "one element");
  }
}

TEST_CASE("softmax: rows sum to one and default axis is the last") {
  const Tensor x = random_tensor(Shape{4, 6}, DType::float32, 6);
  const std::vector<float> y = softmax(x).to_vector<float>();
  for (int r = 0; r < 4; ++r) {
    double s = 0;
    for (int c = 0; c < 6; ++c) s += y[static_cast<size_t>(r * 6 + c)];
    CHECK(s == doctest::Approx(1.0).epsilon(1e-6));
  }
}

TEST_CASE("softmax: empty axes, infinities and huge values") {
  CHECK(softmax(zeros(Shape{2, 0}), 1).shape() == Shape{2, 0});
  CHECK(log_softmax(zeros(Shape{0, 3}), 1).shape() == Shape{0, 3});
  CHECK(softmax(zeros(Shape{0, 3}), 0).shape() == Shape{0, 3});

  const Tensor x = from_vector<float>({-INFINITY, 0.0f, -INFINITY, 1e30f, 1e30f, -1e30f}, Shape{2, 3});
  check_close(softmax(x), Shape{2, 3}, {0, 1, 0, 0.5, 0.5, 0}, {1e-7, 1e-6}, "-inf entries and 1e30");
  check_close(log_softmax(x), Shape{2, 3}, {-kInf, 0, -kInf, -std::log(2.0), -std::log(2.0), -2e30}, {1e-6, 1e-6},
              "log_softmax -inf entries and 1e30");
  // a row of only -inf has no distribution: NaN, as NumPy and JAX give
  const Tensor dead = full(Shape{2, 3}, -kInf);
  check_close(softmax(dead, 1), Shape{2, 3}, std::vector<double>(6, kNaN), {0, 0}, "all -inf");
  check_close(log_softmax(dead, 1), Shape{2, 3}, std::vector<double>(6, kNaN), {0, 0}, "log all -inf");
  check_close(softmax(dead, 0), Shape{2, 3}, std::vector<double>(6, kNaN), {0, 0}, "all -inf along axis 0");
  // NaN poisons its row only
  const Tensor with_nan = from_vector<double>({1, kNaN, 2, 1, 2, 3}, Shape{2, 3});
  const std::vector<double> y = softmax(with_nan).to_vector<double>();
  CHECK(std::isnan(y[0]));
  CHECK(std::isnan(y[2]));
  CHECK(y[5] == doctest::Approx(ref_softmax({1, 2, 3})[2]));
}

TEST_CASE("softmax: large inputs take the threaded path") {
  const Tensor x = random_tensor(Shape{200, 300}, DType::float32, 7, -10, 10);
  check_both(x, 1, "large last axis");
  check_both(x, 0, "large first axis");
}

TEST_CASE("softmax: bad arguments throw with a clear message") {
  check_error([] { softmax(zeros(Shape{2, 3}), 2); }, {"softmax", "axis 2", "rank 2"});
  check_error([] { log_softmax(zeros(Shape{2, 3}), -3); }, {"log_softmax", "axis -3"});
  check_error([] { softmax(scalar_tensor(1.0f)); }, {"softmax", "rank"});
  check_error([] { softmax(Tensor{}); }, {"softmax", "undefined"});
  check_error([] { log_softmax(Tensor{}, 0); }, {"log_softmax", "undefined"});
}
