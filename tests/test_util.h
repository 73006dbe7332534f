// Shared helpers for the tests: deterministic random tensors, non-contiguous variants, and
// closeness checks of the form |actual - ref| <= atol + rtol * |ref| per dtype.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <ctrax/kernels/parallel.h>
#include <ctrax/tensor/ops.h>
#include <ctrax/tensor/tensor.h>

namespace ctrax::test {

// Restores the kernels' thread count (kernels/parallel.h) when a test that changes it ends.
struct ThreadCountGuard {
  int saved = kernels::num_threads();
  ~ThreadCountGuard() { kernels::set_num_threads(saved); }
};

struct Tolerance {
  double atol;
  double rtol;
};

// Default tolerances per dtype for elementwise results.
inline Tolerance default_tolerance(DType dtype) {
  switch (dtype) {
    case DType::float32: return {1e-6, 1e-5};
    case DType::float64: return {1e-12, 1e-11};
    default: return {0.0, 0.0};
  }
}

// A tensor of `shape` and `dtype` with values drawn from a fixed-seed generator: floats
// uniform in [lo, hi), integers uniform in [lo, hi), bools fair coins.
inline Tensor random_tensor(const Shape& shape, DType dtype, uint64_t seed, double lo = -2.0, double hi = 2.0) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> real(lo, hi);
  std::vector<double> values(static_cast<size_t>(shape.numel()));
  for (double& v : values) {
    if (is_floating(dtype)) v = real(gen);
    else if (is_bool(dtype)) v = static_cast<double>(gen() & 1);
    else v = std::floor(real(gen));
  }
  return from_vector(values, shape).to(dtype);
}

// The same values as `t` but laid out non-contiguously: stored transposed (rank >= 2), or
// every other element of a larger buffer (rank 1).
inline Tensor non_contiguous(const Tensor& t) {
  if (t.rank() >= 2) {
    Tensor stored = t.transpose(-1, -2).contiguous();  // memory holds the transpose
    return stored.transpose(-1, -2);                   // same logical values, strided
  }
  if (t.rank() == 1) {
    Tensor big = zeros(Shape{t.size(0) * 2}, t.dtype());
    Tensor view = big.slice(0, 0, t.size(0) * 2, 2);
    view.copy_(t);
    return view;
  }
  return t;
}

// Same shape, dtype and bytes (for "bit for bit" checks; NaN payloads compare as bytes).
inline bool bitwise_equal(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  const Tensor ac = a.contiguous(), bc = b.contiguous();
  return std::memcmp(ac.raw_data(), bc.raw_data(), static_cast<size_t>(ac.numel()) * ac.element_size()) == 0;
}

inline constexpr DType kAllDTypes[] = {DType::float32, DType::float64, DType::int32, DType::int64, DType::boolean};

// The same values as t, laid out with a step of 2 along axis 0 of a larger buffer.
inline Tensor stepped(const Tensor& t) {
  if (t.rank() == 0) return t;
  Shape big_shape = t.shape();
  big_shape[0] = 2 * t.shape()[0] + 1;
  Tensor big = full(big_shape, 7.0, t.dtype());
  Tensor view = big.slice(0, 1, 2 * t.shape()[0] + 1, 2);
  view.copy_(t);
  return view;
}

// Applies f to every line of x along `axis` (in double) and returns the results in x's
// row-major order: the reference for ops that work line by line (softmax, scans, sorts).
inline std::vector<double> ref_along_axis(const Tensor& x, int axis,
                                          const std::function<std::vector<double>(const std::vector<double>&)>& f) {
  const int a = axis < 0 ? axis + x.rank() : axis;
  const std::vector<double> values = x.to_vector<double>();
  std::vector<double> out(values.size());
  const int64_t n = x.shape()[a];
  int64_t inner = 1;
  for (int d = a + 1; d < x.rank(); ++d) inner *= x.shape()[d];
  const int64_t outer = n == 0 ? 0 : x.numel() / (n * inner);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < inner; ++j) {
      std::vector<double> line;
      for (int64_t t = 0; t < n; ++t) line.push_back(values[static_cast<size_t>((o * n + t) * inner + j)]);
      const std::vector<double> result = f(line);
      for (int64_t t = 0; t < n; ++t) out[static_cast<size_t>((o * n + t) * inner + j)] = result[static_cast<size_t>(t)];
    }
  }
  return out;
}

// Checks that `actual` has `shape` and each element is within atol + rtol * |ref| of `ref`
// (NaN matches NaN, equal infinities match). Reports the first mismatches.
inline void check_close(const Tensor& actual, const Shape& shape, const std::vector<double>& ref, Tolerance tol,
                        const std::string& what = "") {
  INFO(what);
  REQUIRE(actual.shape() == shape);
  REQUIRE(static_cast<int64_t>(ref.size()) == actual.numel());
  const std::vector<double> got = actual.to_vector<double>();
  int reported = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double a = got[i], r = ref[i];
    bool ok;
    if (std::isnan(r)) ok = std::isnan(a);
    else if (std::isinf(r)) ok = a == r;
    else ok = std::fabs(a - r) <= tol.atol + tol.rtol * std::fabs(r);
    if (!ok && reported++ < 5) {
      FAIL_CHECK("element " << i << ": got " << a << ", expected " << r << " (atol " << tol.atol << ", rtol "
                            << tol.rtol << ")");
    }
  }
}

inline void check_close(const Tensor& actual, const Tensor& expected, Tolerance tol, const std::string& what = "") {
  check_close(actual, expected.shape(), expected.to_vector<double>(), tol, what);
}

// Runs `f` and checks that it throws ctrax::Error whose message contains every fragment.
inline void check_error(const std::function<void()>& f, const std::vector<std::string>& fragments) {
  bool threw = false;
  try {
    f();
  } catch (const ctrax::Error& e) {
    threw = true;
    const std::string message = e.what();
    for (const std::string& fragment : fragments) {
      INFO("message: " << message);
      CHECK_MESSAGE(message.find(fragment) != std::string::npos, "missing \"" << fragment << "\"");
    }
  }
  CHECK_MESSAGE(threw, "expected ctrax::Error");
}

// Row-major multi-index of flat index i in `shape`.
inline std::vector<int64_t> unravel(int64_t i, const Shape& shape) {
  std::vector<int64_t> idx(static_cast<size_t>(shape.rank()));
  for (int d = shape.rank() - 1; d >= 0; --d) {
    idx[d] = shape[d] ? i % shape[d] : 0;
    if (shape[d]) i /= shape[d];
  }
  return idx;
}

// Flat index in `shape` of a multi-index, broadcasting: dims of size 1 read index 0 and
// missing leading dims are dropped.
inline int64_t ravel_broadcast(const std::vector<int64_t>& idx, const Shape& shape) {
  int64_t flat = 0;
  const int shift = static_cast<int>(idx.size()) - shape.rank();
  for (int d = 0; d < shape.rank(); ++d) flat = flat * shape[d] + (shape[d] == 1 ? 0 : idx[d + shift]);
  return flat;
}

// ---- Op coverage --------------------------------------------------------------------------
// Each test file that checks ops against a reference declares them with
// CTRAX_OPS_TESTED(add, sub, ...). tests/tensor/test_op_coverage.cpp then fails when an op of
// base/op_list.h has no reference test, so a new op cannot land untested.
inline std::set<std::string>& ops_with_reference_tests() {
  static std::set<std::string> names;
  return names;
}
struct OpTestRegistrar {
  explicit OpTestRegistrar(const char* comma_separated) {
    std::string name;
    for (const char* c = comma_separated;; ++c) {
      if (*c == ',' || *c == '\0') {
        if (!name.empty()) ops_with_reference_tests().insert(name);
        name.clear();
        if (*c == '\0') break;
      } else if (*c != ' ' && *c != '\n') {
        name += *c;
      }
    }
  }
};
#define CTRAX_TEST_CONCAT_INNER(a, b) a##b
#define CTRAX_TEST_CONCAT(a, b) CTRAX_TEST_CONCAT_INNER(a, b)
#define CTRAX_OPS_TESTED(...) \
  static const ::ctrax::test::OpTestRegistrar CTRAX_TEST_CONCAT(ctrax_ops_tested_, __LINE__)(#__VA_ARGS__)

}  // namespace ctrax::test
