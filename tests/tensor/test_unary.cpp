// Reference tests of the unary elementwise ops (tensor/ops/unary.cpp) and of dtype casts
// (Tensor::to). Each op runs on rank-0, empty, contiguous and strided inputs of every dtype
// it accepts, against a double-precision reference written here.
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "test_util.h"

namespace ctrax::test {

CTRAX_OPS_TESTED(neg, abs, sign, exp, log, log1p, expm1, sqrt, rsqrt, square, reciprocal, tanh, sigmoid, softplus,
                 relu, gelu, sin, cos, floor, ceil, round, clip, isnan, isfinite, logical_not, cast);

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

using UnaryFn = std::function<Tensor(const Tensor&)>;
using RefFn = std::function<double(double)>;

// The input layouts every op is checked on: the tensor itself plus strided views holding
// the same values (transposed storage, a stepped slice, an expanded row).
std::vector<std::pair<std::string, Tensor>> layouts(const Shape& shape, DType dtype, uint64_t seed, double lo,
                                                    double hi) {
  std::vector<std::pair<std::string, Tensor>> out;
  const Tensor base = random_tensor(shape, dtype, seed, lo, hi);
  out.push_back({"contiguous " + to_string(shape), base});
  if (shape.rank() >= 1 && shape.numel() > 1) out.push_back({"non-contiguous " + to_string(shape), non_contiguous(base)});
  if (shape.rank() == 2 && shape[0] > 0) {
    const Tensor big = random_tensor(Shape{shape[0] * 2, shape[1]}, dtype, seed + 1, lo, hi);
    out.push_back({"stepped slice", big.slice(0, 0, shape[0] * 2, 2)});
    out.push_back({"expanded row", random_tensor(Shape{1, shape[1]}, dtype, seed + 2, lo, hi).expand(shape)});
  }
  return out;
}

const std::vector<Shape>& test_shapes() {
  static const std::vector<Shape> shapes = {Shape{}, Shape{0}, Shape{3, 0}, Shape{7}, Shape{3, 5}, Shape{2, 3, 4}};
  return shapes;
}

// Checks op(x) against ref elementwise, for x of `in` dtype drawn from [lo, hi), expecting
// `out_dtype`.
void check_unary(const char* name, const UnaryFn& op, const RefFn& ref, DType in, DType out_dtype, double lo,
                 double hi, Tolerance tol) {
  uint64_t seed = 100;
  for (const Shape& shape : test_shapes()) {
    for (const auto& layout : layouts(shape, in, seed++, lo, hi)) {
      const std::string& what = layout.first;
      const Tensor& x = layout.second;
      const Tensor y = op(x);
      INFO(name << " on " << dtype_name(in) << ", " << what);
      CHECK(y.dtype() == out_dtype);
      CHECK(y.is_contiguous());
      std::vector<double> expected;
      for (double v : x.to_vector<double>()) expected.push_back(ref(v));
      check_close(y, x.shape(), expected, tol, std::string(name) + " " + what);
    }
  }
}

double ref_round_half_even(double v) {
  const double r = std::nearbyint(v);  // default rounding mode: to nearest, ties to even
  return std::copysign(r, v);
}

// The tolerance for a result of `dtype` computed from formula-level maths (libm, not exact).
Tolerance loose(DType dtype) {
  return dtype == DType::float64 ? Tolerance{1e-12, 1e-11} : Tolerance{1e-6, 4e-6};
}

}  // namespace

TEST_CASE("unary: real-valued ops on every dtype and layout") {
  struct Case {
    const char* name;
    UnaryFn op;
    RefFn ref;
    double lo, hi;
  };
  const std::vector<Case> cases = {
      {"exp", [](const Tensor& x) { return exp(x); }, [](double v) { return std::exp(v); }, -5, 5},
      {"log", [](const Tensor& x) { return log(x); }, [](double v) { return std::log(v); }, 0.05, 6},
      {"log1p", [](const Tensor& x) { return log1p(x); }, [](double v) { return std::log1p(v); }, -0.9, 4},
      {"expm1", [](const Tensor& x) { return expm1(x); }, [](double v) { return std::expm1(v); }, -3, 3},
      {"sqrt", [](const Tensor& x) { return sqrt(x); }, [](double v) { return std::sqrt(v); }, 0, 9},
      {"rsqrt", [](const Tensor& x) { return rsqrt(x); }, [](double v) { return 1 / std::sqrt(v); }, 0.1, 9},
      {"reciprocal", [](const Tensor& x) { return reciprocal(x); }, [](double v) { return 1 / v; }, 0.25, 4},
      {"tanh", [](const Tensor& x) { return tanh(x); }, [](double v) { return std::tanh(v); }, -6, 6},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }, [](double v) { return 1 / (1 + std::exp(-v)); }, -12,
       12},
      {"softplus", [](const Tensor& x) { return softplus(x); }, [](double v) { return std::log1p(std::exp(v)); }, -8,
       8},
      {"gelu", [](const Tensor& x) { return gelu(x); },
       [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }, -5, 5},
      {"gelu approximate", [](const Tensor& x) { return gelu(x, true); },
       [](double v) { return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))); }, -5, 5},
      {"sin", [](const Tensor& x) { return sin(x); }, [](double v) { return std::sin(v); }, -7, 7},
      {"cos", [](const Tensor& x) { return cos(x); }, [](double v) { return std::cos(v); }, -7, 7},
  };
  for (const Case& c : cases) {
    for (DType d : {DType::float32, DType::float64}) check_unary(c.name, c.op, c.ref, d, d, c.lo, c.hi, loose(d));
    // integer and bool inputs compute in float32
    const double ilo = std::ceil(c.lo), ihi = std::floor(c.hi) + 1;
    for (DType d : {DType::int32, DType::int64})
      check_unary(c.name, c.op, c.ref, d, DType::float32, ilo, ihi, loose(DType::float32));
    if (ilo <= 0 && ihi > 1) check_unary(c.name, c.op, c.ref, DType::boolean, DType::float32, 0, 2, loose(DType::float32));
  }
}

TEST_CASE("unary: arithmetic ops keep the dtype") {
  struct Case {
    const char* name;
    UnaryFn op;
    RefFn ref;
  };
  const std::vector<Case> cases = {
      {"neg", [](const Tensor& x) { return neg(x); }, [](double v) { return -v; }},
      {"abs", [](const Tensor& x) { return abs(x); }, [](double v) { return std::fabs(v); }},
      {"sign", [](const Tensor& x) { return sign(x); }, [](double v) { return v > 0 ? 1.0 : (v < 0 ? -1.0 : 0.0); }},
      {"square", [](const Tensor& x) { return square(x); }, [](double v) { return v * v; }},
      {"relu", [](const Tensor& x) { return relu(x); }, [](double v) { return v > 0 ? v : 0.0; }},
      {"floor", [](const Tensor& x) { return floor(x); }, [](double v) { return std::floor(v); }},
      {"ceil", [](const Tensor& x) { return ceil(x); }, [](double v) { return std::ceil(v); }},
      {"round", [](const Tensor& x) { return round(x); }, ref_round_half_even},
      {"clip", [](const Tensor& x) { return clip(x, -1, 2); }, [](double v) { return std::min(std::max(v, -1.0), 2.0); }},
      {"operator-", [](const Tensor& x) { return -x; }, [](double v) { return -v; }},
  };
  for (const Case& c : cases) {
    for (DType d : {DType::float32, DType::float64, DType::int32, DType::int64})
      check_unary(c.name, c.op, c.ref, d, d, -4, 4, default_tolerance(d));
  }
  // floor/ceil/round of bool are copies; the arithmetic ones reject bool
  for (const char* name : {"floor", "ceil", "round"}) {
    for (const Case& c : cases)
      if (std::string(c.name) == name) check_unary(name, c.op, c.ref, DType::boolean, DType::boolean, 0, 2, {0, 0});
  }
  const Tensor b = tensor({true, false});
  check_error([&] { neg(b); }, {"neg", "bool", "[2]"});
  check_error([&] { abs(b); }, {"abs", "bool"});
  check_error([&] { sign(b); }, {"sign", "bool"});
  check_error([&] { square(b); }, {"square", "bool"});
  check_error([&] { relu(b); }, {"relu", "bool"});
  check_error([&] { clip(b, 0, 1); }, {"clip", "bool"});
}

TEST_CASE("unary: rounding halves to even, integer rounding is a copy") {
  const Tensor x = tensor({0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4999999, -0.3, 1e300, -7.0});
  check_close(round(x), x.shape(), {0, 2, 2, -0.0, -2, -2, 2, -0.0, 1e300, -7}, {0, 0});
  check_close(round(x.to(DType::float32)), x.shape(), {0, 2, 2, -0.0, -2, -2, 2, -0.0, kInf, -7}, {0, 0});
  CHECK(std::signbit(round(tensor({-0.3})).item<double>()));
  CHECK(std::signbit(round(tensor({-0.5f})).item<float>()));
  CHECK(std::isnan(round(tensor({kNaN})).item<double>()));
  CHECK(round(tensor({-kInf})).item<double>() == -kInf);
  // float32 values at 2^23 and above are already integers
  check_close(round(tensor({8388609.0f, -8388607.5f})), Shape{2}, {8388609, -8388608}, {0, 0});
  const Tensor i = tensor({int64_t{3}, int64_t{-4}});
  const Tensor r = round(i);
  CHECK(r.dtype() == DType::int64);
  CHECK_FALSE(r.shares_storage_with(i));
  CHECK(floor(i).to_vector<int64_t>() == std::vector<int64_t>{3, -4});
}

TEST_CASE("unary: special values (NaN, infinities, signed zero)") {
  const std::vector<double> specials = {kNaN, kInf, -kInf, 0.0, -0.0, 1e-310, -1e-310, 1e308, -1e308};
  struct Case {
    const char* name;
    UnaryFn op;
    RefFn ref;
  };
  const std::vector<Case> cases = {
      {"neg", [](const Tensor& x) { return neg(x); }, [](double v) { return -v; }},
      {"abs", [](const Tensor& x) { return abs(x); }, [](double v) { return std::fabs(v); }},
      {"exp", [](const Tensor& x) { return exp(x); }, [](double v) { return std::exp(v); }},
      {"log", [](const Tensor& x) { return log(x); }, [](double v) { return std::log(v); }},
      {"sqrt", [](const Tensor& x) { return sqrt(x); }, [](double v) { return std::sqrt(v); }},
      {"tanh", [](const Tensor& x) { return tanh(x); }, [](double v) { return std::tanh(v); }},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }, [](double v) { return 1 / (1 + std::exp(-v)); }},
      {"softplus", [](const Tensor& x) { return softplus(x); },
       [](double v) { return std::max(v, 0.0) + std::log1p(std::exp(-std::fabs(v))); }},
      {"relu", [](const Tensor& x) { return relu(x); }, [](double v) { return v > 0 ? v : (v <= 0 ? 0.0 : v); }},
      {"sign", [](const Tensor& x) { return sign(x); }, [](double v) { return v > 0 ? 1.0 : (v < 0 ? -1.0 : v); }},
      {"floor", [](const Tensor& x) { return floor(x); }, [](double v) { return std::floor(v); }},
      {"ceil", [](const Tensor& x) { return ceil(x); }, [](double v) { return std::ceil(v); }},
      {"clip", [](const Tensor& x) { return clip(x, -1.0, 1.0); },
       [](double v) { return v < -1 ? -1.0 : (v > 1 ? 1.0 : v); }},
      {"reciprocal", [](const Tensor& x) { return reciprocal(x); }, [](double v) { return 1 / v; }},
      {"gelu", [](const Tensor& x) { return gelu(x); },
       [](double v) { return std::isinf(v) ? (v > 0 ? v : -0.0) : 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }},
  };
  for (DType d : {DType::float32, DType::float64}) {
    const Tensor x = from_vector(specials).to(d);
    const std::vector<double> xs = x.to_vector<double>();  // float32 flushes the extremes
    for (const Case& c : cases) {
      INFO(c.name << " " << dtype_name(d));
      if (std::string(c.name) == "gelu") {
        // gelu follows its formula, so gelu(-inf) = -inf * 0 = NaN; check the finite values
        // (0, -0 and denormals; the float64 extremes are +-inf in float32)
        const Tensor finite = x.slice(0, 3, d == DType::float64 ? 9 : 7);
        std::vector<double> expected;
        for (double v : finite.to_vector<double>()) expected.push_back(c.ref(v));
        check_close(gelu(finite), finite.shape(), expected, loose(d), "gelu");
        continue;
      }
      std::vector<double> expected;
      for (double v : xs) expected.push_back(c.ref(v));
      const Tensor y = c.op(x);
      check_close(y, x.shape(), expected, loose(d), c.name);
      // signed zeros: sign bit of each zero result must match the reference
      const std::vector<double> got = y.to_vector<double>();
      for (size_t i = 0; i < got.size(); ++i)
        if (expected[i] == 0 && got[i] == 0) CHECK_MESSAGE(std::signbit(got[i]) == std::signbit(expected[i]), i);
    }
  }
  CHECK(std::signbit(tanh(tensor({-0.0f})).item<float>()));
  CHECK_FALSE(std::signbit(relu(tensor({-0.0f})).item<float>()));
  CHECK_FALSE(std::signbit(abs(tensor({-0.0})).item<double>()));
}

TEST_CASE("unary: integer arithmetic wraps instead of overflowing") {
  const int32_t imin = std::numeric_limits<int32_t>::min();
  const int64_t lmin = std::numeric_limits<int64_t>::min();
  CHECK(neg(tensor({imin, 5})).to_vector<int32_t>() == std::vector<int32_t>{imin, -5});
  CHECK(abs(tensor({lmin, int64_t{-3}})).to_vector<int64_t>() == std::vector<int64_t>{lmin, 3});
  CHECK(square(tensor({int32_t{65536}, int32_t{-46341}})).to_vector<int32_t>() ==
        std::vector<int32_t>{0, static_cast<int32_t>(uint32_t{46341} * uint32_t{46341})});
  CHECK(relu(tensor({int64_t{-9}, int64_t{9}})).to_vector<int64_t>() == std::vector<int64_t>{0, 9});
  CHECK(sign(tensor({imin, 0, 7})).to_vector<int32_t>() == std::vector<int32_t>{-1, 0, 1});
}

TEST_CASE("unary: isnan, isfinite and logical_not give bool for every dtype") {
  const Tensor f = tensor({kNaN, kInf, -kInf, 0.0, -0.0, 2.5});
  for (DType d : {DType::float32, DType::float64}) {
    const Tensor x = f.to(d);
    CHECK(isnan(x).dtype() == DType::boolean);
    check_close(isnan(x), x.shape(), {1, 0, 0, 0, 0, 0}, {0, 0}, "isnan");
    check_close(isfinite(x), x.shape(), {0, 0, 0, 1, 1, 1}, {0, 0}, "isfinite");
    check_close(logical_not(x), x.shape(), {0, 0, 0, 1, 1, 0}, {0, 0}, "logical_not");  // NaN is true
    check_close(isnan(non_contiguous(x)), x.shape(), {1, 0, 0, 0, 0, 0}, {0, 0}, "isnan strided");
  }
  for (DType d : {DType::int32, DType::int64, DType::boolean}) {
    for (const Shape& shape : test_shapes()) {
      const Tensor x = random_tensor(shape, d, 7, -2, 2);
      std::vector<double> zero(static_cast<size_t>(shape.numel()), 0.0), one(zero.size(), 1.0), nots;
      for (double v : x.to_vector<double>()) nots.push_back(v == 0 ? 1 : 0);
      check_close(isnan(x), shape, zero, {0, 0}, "isnan int");
      check_close(isfinite(x), shape, one, {0, 0}, "isfinite int");
      check_close(logical_not(x), shape, nots, {0, 0}, "logical_not int");
      check_close(logical_not(non_contiguous(x)), shape, nots, {0, 0}, "logical_not strided");
    }
  }
}

TEST_CASE("unary: clip bounds, dtypes and errors") {
  // NaN stays NaN, the bounds are inclusive
  check_close(clip(tensor({kNaN, -3.0, -1.0, 0.5, 1.0, 9.0}), -1.0, 1.0), Shape{6}, {kNaN, -1, -1, 0.5, 1, 1}, {0, 0});
  // a floating bound turns an integer tensor into float32 (weak scalar rule)
  const Tensor i = tensor({int32_t{-5}, int32_t{0}, int32_t{5}});
  const Tensor fi = clip(i, -0.5, 2.5);
  CHECK(fi.dtype() == DType::float32);
  check_close(fi, Shape{3}, {-0.5, 0, 2.5}, {0, 0});
  // integer bounds keep the dtype; bounds beyond the range saturate rather than wrap
  CHECK(clip(i, -1, 1).dtype() == DType::int32);
  check_close(clip(i, int64_t{-10'000'000'000}, int64_t{3}), Shape{3}, {-5, 0, 3}, {0, 0});
  check_close(clip(i, 1, 1), Shape{3}, {1, 1, 1}, {0, 0});
  check_error([&] { clip(i, 2, 1); }, {"clip", "lo (2)", "hi (1)"});
  check_error([&] { clip(tensor({1.0f}), kNaN, 1.0); }, {"clip", "nan"});
}

TEST_CASE("unary: undefined inputs throw") {
  const Tensor undefined;
  check_error([&] { exp(undefined); }, {"exp", "undefined"});
  check_error([&] { neg(undefined); }, {"neg", "undefined"});
  check_error([&] { round(undefined); }, {"round", "undefined"});
  check_error([&] { isnan(undefined); }, {"isnan", "undefined"});
  check_error([&] { clip(undefined, 0, 1); }, {"clip", "undefined"});
  check_error([&] { gelu(undefined, true); }, {"gelu", "undefined"});
}

TEST_CASE("unary: large inputs split across threads give the serial result") {
  const Tensor x = random_tensor(Shape{3, 70001}, DType::float32, 5, -10, 10);
  const Tensor xt = x.mT();  // strided path
  for (const auto& named_op : std::vector<std::pair<std::string, UnaryFn>>{
           {"exp", [](const Tensor& t) { return exp(t); }},
           {"tanh", [](const Tensor& t) { return tanh(t); }},
           {"sigmoid", [](const Tensor& t) { return sigmoid(t); }},
           {"relu", [](const Tensor& t) { return relu(t); }}}) {
    const std::string& name = named_op.first;
    const UnaryFn& op = named_op.second;
    INFO(name);
    const Tensor a = op(x);
    const Tensor b = op(xt).mT().contiguous();
    check_close(a, b, {1e-30, 1e-6}, name);  // kernel vs scalar path agree to FMA rounding
  }
}

TEST_CASE("unary: short rows run down their columns (strided_loop's RunOrder::any) with the rows' own bits") {
  // Rows shorter than kShortRun after coalescing (here the rows of a transposed or sliced
  // layout) are looped as columns. Each element must still come from the inline formula a
  // short row uses, not from the vectorised kernel a long contiguous run takes: the expected
  // result is the op applied to each row on its own, as a short contiguous tensor.
  for (DType d : {DType::float32, DType::float64})
    for (const Shape& shape : {Shape{256, 2}, Shape{100, 3}, Shape{9, 7}, Shape{300, 1, 2}, Shape{40, 5}}) {
      const Tensor base = random_tensor(shape, d, 21, -6, 6);
      Shape wide_shape = shape;
      wide_shape[shape.rank() - 1] *= 2;
      const Tensor wide = random_tensor(wide_shape, d, 22, -6, 6);
      const std::vector<std::pair<std::string, Tensor>> inputs = {
          {"transposed storage", non_contiguous(base)},
          {"every other column", wide.slice(-1, 0, shape[shape.rank() - 1] * 2, 2)}};
      for (const auto& input : inputs)
        for (const auto& named_op : std::vector<std::pair<std::string, UnaryFn>>{
                 {"exp", [](const Tensor& t) { return exp(t); }},
                 {"tanh", [](const Tensor& t) { return tanh(t); }},
                 {"sigmoid", [](const Tensor& t) { return sigmoid(t); }},
                 {"softplus", [](const Tensor& t) { return softplus(t); }},
                 {"neg", [](const Tensor& t) { return neg(t); }},
                 {"log1p of abs", [](const Tensor& t) { return log1p(abs(t)); }},
                 {"log (NaN for the negative half)", [](const Tensor& t) { return log(t); }},
                 {"isfinite", [](const Tensor& t) { return isfinite(t); }}}) {
          // (A named pair, not a structured binding: clang cannot capture one in INFO's lambda.)
          const std::string& how = input.first;
          const Tensor& x = input.second;
          // (Transposing a [300, 1, 2]'s last two axes leaves it contiguous: one run, the kernel's bits.)
          if (x.is_contiguous()) continue;
          INFO(named_op.first << " " << dtype_name(d) << " " << shape << ", " << how);
          const Tensor got = named_op.second(x);
          Tensor expected = zeros(shape, got.dtype());
          for (int64_t r = 0; r < shape[0]; ++r) expected.select(0, r).copy_(named_op.second(x.select(0, r).contiguous()));
          CHECK(got.is_contiguous());
          CHECK(bitwise_equal(got, expected));
        }
    }
}

// ---- casts ------------------------------------------------------------------------------------

namespace {
// The documented conversion from a floating value: to int truncates toward zero, saturates,
// NaN -> 0; anything -> bool is x != 0; to float32 rounds to nearest.
double ref_cast_float(double v, DType to) {
  switch (to) {
    case DType::boolean: return v != 0 ? 1 : 0;  // NaN != 0 is true
    case DType::int32:
    case DType::int64: {
      if (std::isnan(v)) return 0;
      const double lo = to == DType::int32 ? -2147483648.0 : -9223372036854775808.0;
      const double hi = to == DType::int32 ? 2147483647.0 : 9223372036854775807.0;
      return v <= lo ? lo : (v >= hi ? hi : std::trunc(v));
    }
    case DType::float32: return static_cast<double>(static_cast<float>(v));
    case DType::float64: return v;
  }
  return v;
}
// From an integer or bool value: narrowing integers wrap modulo 2^32 (C++ conversion).
double ref_cast_int(int64_t v, DType to) {
  switch (to) {
    case DType::boolean: return v != 0 ? 1 : 0;
    case DType::int32: return static_cast<double>(static_cast<int32_t>(v));
    case DType::int64: return static_cast<double>(v);
    case DType::float32: return static_cast<double>(static_cast<float>(v));
    case DType::float64: return static_cast<double>(v);
  }
  return 0;
}
}  // namespace

TEST_CASE("unary: cast between all 25 dtype pairs") {
  const std::vector<double> values = {0.0, -0.0, 1.0, -1.0, 2.75, -2.75, 100.5, -129.9, 3e9, -3e9, 1e19, -1e19,
                                      kNaN, kInf, -kInf, 16777217.0, 0.1, 2147483647.0, -2147483648.5};
  const std::vector<DType> dtypes = {DType::float32, DType::float64, DType::int32, DType::int64, DType::boolean};
  for (DType from : dtypes) {
    // the source holds `values` converted into `from`; the float64 -> x rows check that step
    const Tensor src = from_vector(values).to(from);
    for (DType to : dtypes) {
      INFO(dtype_name(from) << " -> " << dtype_name(to));
      std::vector<double> expected;
      if (is_floating(from)) {
        for (double v : src.to_vector<double>()) expected.push_back(ref_cast_float(v, to));
      } else {
        for (int64_t v : src.to_vector<int64_t>()) expected.push_back(ref_cast_int(v, to));
      }
      const Tensor y = src.to(to);
      CHECK(y.dtype() == to);
      check_close(y, src.shape(), expected, {0, 0}, "cast");
      check_close(non_contiguous(src).to(to), src.shape(), expected, {0, 0}, "cast strided");
      check_close(src.reshape(Shape{1, 19}).expand(Shape{2, 19}).to(to).select(0, 1), src.shape(), expected, {0, 0},
                  "cast expanded");
      if (from == to) CHECK(y.shares_storage_with(src));  // to() of the same dtype is the tensor itself
    }
  }
  // spot checks of the saturation rule written out
  const Tensor f = tensor({kNaN, 1e10, -1e10, -2.9, 2.9, kInf, -kInf});
  CHECK(f.to(DType::int32).to_vector<int32_t>() ==
        std::vector<int32_t>{0, 2147483647, -2147483647 - 1, -2, 2, 2147483647, -2147483647 - 1});
  CHECK(f.to(DType::boolean).to_vector<uint8_t>() == std::vector<uint8_t>{1, 1, 1, 1, 1, 1, 1});
  // int64 -> float64 rounds to nearest; int64 -> int32 wraps like C++
  const int64_t big = (int64_t{1} << 62) + 1;
  CHECK(tensor({big}).to(DType::float64).item<double>() == static_cast<double>(big));
  CHECK(tensor({big}).to(DType::int32).item<int32_t>() == 1);
  // empty and rank-0 tensors
  CHECK(zeros(Shape{0, 3}).to(DType::int64).shape() == Shape{0, 3});
  CHECK(scalar_tensor(-7.9).to(DType::int32).item<int32_t>() == -7);
}

}  // namespace ctrax::test
