// cumsum and discounted_cumsum against a plain double-precision reference along every axis, on
// contiguous, strided and expanded inputs, integer and bool inputs, empty axes, the threaded
// path, and errors.
#include <cmath>
#include <limits>

#include "test_util.h"

using namespace ctrax;
using namespace ctrax::test;

CTRAX_OPS_TESTED(cumsum, discounted_cumsum);

namespace {


std::vector<double> ref_cumsum(const std::vector<double>& v, bool reverse) {
  std::vector<double> out(v.size());
  double s = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    const size_t t = reverse ? v.size() - 1 - i : i;
    s += v[t];
    out[t] = s;
  }
  return out;
}

// The RL return, straight from its definition: G[t] = sum_{s >= t} discount^(s - t) x[s].
std::vector<double> ref_discounted(const std::vector<double>& v, double discount) {
  std::vector<double> out(v.size());
  for (size_t t = 0; t < v.size(); ++t) {
    double g = 0;
    for (size_t s = t; s < v.size(); ++s) g += std::pow(discount, static_cast<double>(s - t)) * v[s];
    out[t] = g;
  }
  return out;
}

std::vector<std::pair<std::string, Tensor>> inputs(DType dtype) {
  const Tensor base = random_tensor(Shape{3, 4, 5}, dtype, 1, -5, 5);
  return {
      {"contiguous", base},
      {"transposed storage", non_contiguous(base)},
      {"step slice", random_tensor(Shape{3, 8, 5}, dtype, 2, -5, 5).slice(1, 0, 8, 2)},
      {"expanded", random_tensor(Shape{3, 1, 5}, dtype, 3, -5, 5).expand(Shape{3, 4, 5})},
      {"rank 1", random_tensor(Shape{9}, dtype, 4, -5, 5)},
      {"rank 1 strided", non_contiguous(random_tensor(Shape{9}, dtype, 5, -5, 5))},
  };
}

Tolerance scan_tolerance(DType dtype) {
  if (dtype == DType::float32) return {1e-5, 1e-6};
  if (dtype == DType::float64) return {1e-12, 1e-12};
  return {0, 0};
}

}  // namespace

TEST_CASE("scan: cumsum forward and reverse along every axis") {
  for (DType dtype : {DType::float32, DType::float64, DType::int32, DType::int64, DType::boolean}) {
    const DType out_dtype = is_floating(dtype) ? dtype : DType::int64;
    for (const auto& [layout, x] : inputs(dtype)) {
      for (int axis = -x.rank(); axis < x.rank(); ++axis) {
        for (bool reverse : {false, true}) {
          const Tensor y = cumsum(x, axis, reverse);
          CHECK(y.dtype() == out_dtype);
          check_close(y, x.shape(), ref_along_axis(x, axis, [&](const std::vector<double>& v) { return ref_cumsum(v, reverse); }),
                      scan_tolerance(out_dtype),
                      std::string(dtype_name(dtype)) + " " + layout + " axis " + std::to_string(axis) + (reverse ? " reverse" : ""));
        }
      }
    }
  }
}

TEST_CASE("scan: discounted_cumsum along every axis") {
  for (DType dtype : {DType::float32, DType::float64, DType::int32, DType::boolean}) {
    const DType out_dtype = is_floating(dtype) ? dtype : DType::float32;
    for (const auto& [layout, x] : inputs(dtype)) {
      for (int axis = -x.rank(); axis < x.rank(); ++axis) {
        for (double discount : {0.99, 0.5, 0.0, 1.0, -0.5}) {
          const Tensor y = discounted_cumsum(x, axis, discount);
          CHECK(y.dtype() == out_dtype);
          check_close(y, x.shape(), ref_along_axis(x, axis, [&](const std::vector<double>& v) { return ref_discounted(v, discount); }),
                      scan_tolerance(out_dtype),
                      std::string(dtype_name(dtype)) + " " + layout + " axis " + std::to_string(axis) + " discount " +
                          std::to_string(discount));
        }
      }
    }
  }
  // an episode of rewards stored (time, batch): the return of each step, per column
  const Tensor rewards = from_vector<float>({1, 0, 0, 2, 1, 1}, Shape{3, 2});
  check_close(discounted_cumsum(rewards, 0, 0.5), Shape{3, 2}, {1.25, 1.25, 0.5, 2.5, 1, 1}, {1e-7, 1e-7}, "returns");
}

TEST_CASE("scan: rank 0, empty axes and large inputs") {
  check_close(cumsum(zeros(Shape{0, 3}), 0), Shape{0, 3}, {}, {0, 0}, "empty scanned axis");
  check_close(cumsum(zeros(Shape{3, 0}), 0), Shape{3, 0}, {}, {0, 0}, "empty other axis");
  check_close(discounted_cumsum(zeros(Shape{0}), 0, 0.9), Shape{0}, {}, {0, 0}, "empty discounted");
  const Tensor big = random_tensor(Shape{300, 200}, DType::float32, 9);
  for (int axis : {0, 1}) {
    check_close(cumsum(big, axis), big.shape(), ref_along_axis(big, axis, [](const std::vector<double>& v) { return ref_cumsum(v, false); }),
                {1e-4, 1e-5}, "large cumsum");
    check_close(discounted_cumsum(big, axis, 0.9), big.shape(),
                ref_along_axis(big, axis, [](const std::vector<double>& v) { return ref_discounted(v, 0.9); }), {1e-4, 1e-5},
                "large discounted");
  }
  // integer cumsum wraps modulo 2^64 instead of overflowing (no undefined behaviour)
  const Tensor near_max = tensor<int64_t>({std::numeric_limits<int64_t>::max(), 1});
  CHECK(cumsum(near_max, 0).to_vector<int64_t>()[1] == std::numeric_limits<int64_t>::min());
}

TEST_CASE("scan: bad arguments throw with a clear message") {
  const Tensor x = zeros(Shape{2, 3});
  check_error([&] { cumsum(x, 2); }, {"cumsum", "axis 2"});
  check_error([&] { discounted_cumsum(x, -3, 0.9); }, {"discounted_cumsum", "axis -3"});
  check_error([&] { discounted_cumsum(x, 0, std::numeric_limits<double>::quiet_NaN()); },
              {"discounted_cumsum", "discount", "finite", "nan"});
  check_error([&] { discounted_cumsum(x, 0, std::numeric_limits<double>::infinity()); },
              {"discounted_cumsum", "discount", "inf"});
  check_error([&] { cumsum(scalar_tensor(1.0f), 0); }, {"cumsum", "rank"});
  check_error([&] { cumsum(Tensor{}, 0); }, {"cumsum", "undefined"});
  check_error([&] { discounted_cumsum(Tensor{}, 0, 0.9); }, {"discounted_cumsum", "undefined"});
}
