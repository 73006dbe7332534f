// Reference tests of the binary elementwise ops and where() (tensor/ops/binary.cpp): NumPy
// broadcasting, dtype promotion, the weak-scalar rule, strided and aliased inputs, special
// values and errors, against double-precision references written here.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "test_util.h"

namespace ctrax::test {

CTRAX_OPS_TESTED(add, sub, mul, div, pow, maximum, minimum, eq, ne, lt, le, gt, ge, logical_and, logical_or, where);

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

using BinaryFn = std::function<Tensor(const Tensor&, const Tensor&)>;
using RefFn = std::function<double(double, double)>;

// The broadcast reference: out[idx] = ref(a[idx broadcast], b[idx broadcast]).
std::vector<double> reference(const Tensor& a, const Tensor& b, const Shape& shape, const RefFn& ref) {
  const std::vector<double> av = a.to_vector<double>(), bv = b.to_vector<double>();
  std::vector<double> out;
  for (int64_t i = 0; i < shape.numel(); ++i) {
    const std::vector<int64_t> idx = unravel(i, shape);
    out.push_back(ref(av[ravel_broadcast(idx, a.shape())], bv[ravel_broadcast(idx, b.shape())]));
  }
  return out;
}

struct ShapePair {
  Shape a, b, out;
};
const std::vector<ShapePair>& shape_pairs() {
  static const std::vector<ShapePair> pairs = {
      {Shape{}, Shape{}, Shape{}},
      {Shape{5}, Shape{}, Shape{5}},
      {Shape{}, Shape{2, 3}, Shape{2, 3}},
      {Shape{3, 4}, Shape{3, 4}, Shape{3, 4}},
      {Shape{3, 4}, Shape{4}, Shape{3, 4}},
      {Shape{3, 1}, Shape{1, 4}, Shape{3, 4}},
      {Shape{2, 3, 4}, Shape{3, 1}, Shape{2, 3, 4}},
      {Shape{1, 3, 1}, Shape{2, 1, 5}, Shape{2, 3, 5}},
      {Shape{0, 4}, Shape{4}, Shape{0, 4}},
      {Shape{4, 0}, Shape{1, 0}, Shape{4, 0}},
      {Shape{2, 0, 3}, Shape{}, Shape{2, 0, 3}},
  };
  return pairs;
}

// Checks op over every shape pair, with contiguous and strided operands, for inputs of dtype
// `in` drawn from [lo, hi) (b from [blo, bhi)), expecting `out_dtype`.
void check_binary(const char* name, const BinaryFn& op, const RefFn& ref, DType in, DType out_dtype, double lo,
                  double hi, double blo, double bhi, Tolerance tol) {
  uint64_t seed = 1;
  for (const ShapePair& p : shape_pairs()) {
    const Tensor a = random_tensor(p.a, in, seed++, lo, hi);
    const Tensor b = random_tensor(p.b, in, seed++, blo, bhi);
    const std::vector<double> expected = reference(a, b, p.out, ref);
    const std::vector<std::pair<std::string, std::pair<Tensor, Tensor>>> variants = {
        {"contiguous", {a, b}},
        {"a strided", {non_contiguous(a), b}},
        {"b strided", {a, non_contiguous(b)}},
        {"both strided", {non_contiguous(a), non_contiguous(b)}},
        {"a expanded", {a.expand(p.out), b}},
    };
    for (const auto& variant : variants) {
      const std::string& what = variant.first;
      const std::pair<Tensor, Tensor>& operands = variant.second;
      INFO(name << " " << dtype_name(in) << " " << p.a << " with " << p.b << ", " << what);
      const Tensor y = op(operands.first, operands.second);
      CHECK(y.dtype() == out_dtype);
      CHECK(y.is_contiguous());
      check_close(y, p.out, expected, tol, std::string(name) + " " + what);
    }
  }
}

struct OpCase {
  const char* name;
  BinaryFn op;
  RefFn ref;
};

const std::vector<OpCase>& arithmetic_cases() {
  static const std::vector<OpCase> cases = {
      {"add", [](const Tensor& a, const Tensor& b) { return add(a, b); }, [](double x, double y) { return x + y; }},
      {"sub", [](const Tensor& a, const Tensor& b) { return sub(a, b); }, [](double x, double y) { return x - y; }},
      {"mul", [](const Tensor& a, const Tensor& b) { return mul(a, b); }, [](double x, double y) { return x * y; }},
      {"maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); },
       [](double x, double y) { return std::max(x, y); }},
      {"minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); },
       [](double x, double y) { return std::min(x, y); }},
      {"operator+", [](const Tensor& a, const Tensor& b) { return a + b; }, [](double x, double y) { return x + y; }},
      {"operator*", [](const Tensor& a, const Tensor& b) { return a * b; }, [](double x, double y) { return x * y; }},
  };
  return cases;
}

const std::vector<OpCase>& bool_cases() {
  static const std::vector<OpCase> cases = {
      {"eq", [](const Tensor& a, const Tensor& b) { return eq(a, b); }, [](double x, double y) { return double(x == y); }},
      {"ne", [](const Tensor& a, const Tensor& b) { return ne(a, b); }, [](double x, double y) { return double(x != y); }},
      {"lt", [](const Tensor& a, const Tensor& b) { return lt(a, b); }, [](double x, double y) { return double(x < y); }},
      {"le", [](const Tensor& a, const Tensor& b) { return le(a, b); }, [](double x, double y) { return double(x <= y); }},
      {"gt", [](const Tensor& a, const Tensor& b) { return gt(a, b); }, [](double x, double y) { return double(x > y); }},
      {"ge", [](const Tensor& a, const Tensor& b) { return ge(a, b); }, [](double x, double y) { return double(x >= y); }},
      {"logical_and", [](const Tensor& a, const Tensor& b) { return logical_and(a, b); },
       [](double x, double y) { return double(x != 0 && y != 0); }},
      {"logical_or", [](const Tensor& a, const Tensor& b) { return logical_or(a, b); },
       [](double x, double y) { return double(x != 0 || y != 0); }},
  };
  return cases;
}


}  // namespace

TEST_CASE("binary: arithmetic, maximum and minimum with broadcasting and strides") {
  for (const OpCase& c : arithmetic_cases())
    for (DType d : {DType::float32, DType::float64, DType::int32, DType::int64})
      check_binary(c.name, c.op, c.ref, d, d, -5, 5, -5, 5, default_tolerance(d));
  // maximum/minimum accept bool (they are or / and)
  check_binary("maximum", arithmetic_cases()[3].op, arithmetic_cases()[3].ref, DType::boolean, DType::boolean, 0, 2,
               0, 2, {0, 0});
  check_binary("minimum", arithmetic_cases()[4].op, arithmetic_cases()[4].ref, DType::boolean, DType::boolean, 0, 2,
               0, 2, {0, 0});
}

TEST_CASE("binary: true division and pow") {
  const BinaryFn div_fn = [](const Tensor& a, const Tensor& b) { return div(a, b); };
  const RefFn div_ref = [](double x, double y) { return x / y; };
  for (DType d : {DType::float32, DType::float64})
    check_binary("div", div_fn, div_ref, d, d, -5, 5, 0.5, 3, default_tolerance(d));
  // integers and bools divide in float32 (including by zero)
  for (DType d : {DType::int32, DType::int64, DType::boolean})
    check_binary("div", div_fn, div_ref, d, DType::float32, -5, 5, -3, 3, default_tolerance(DType::float32));
  check_binary("operator/", [](const Tensor& a, const Tensor& b) { return a / b; }, div_ref, DType::float64,
               DType::float64, -5, 5, 0.5, 3, default_tolerance(DType::float64));

  const BinaryFn pow_fn = [](const Tensor& a, const Tensor& b) { return pow(a, b); };
  const RefFn pow_ref = [](double x, double y) { return std::pow(x, y); };
  check_binary("pow", pow_fn, pow_ref, DType::float32, DType::float32, 0.1, 3, -3, 3, {1e-6, 1e-5});
  check_binary("pow", pow_fn, pow_ref, DType::float64, DType::float64, -3, 3, -3, 3, default_tolerance(DType::float64));
  for (DType d : {DType::int32, DType::int64}) check_binary("pow", pow_fn, pow_ref, d, d, -4, 5, 0, 6, {0, 0});
}

TEST_CASE("binary: comparisons and logical ops give bool") {
  for (const OpCase& c : bool_cases()) {
    for (DType d : kAllDTypes) {
      // small ranges make ties common for integers, so ==, <= and >= are really exercised
      check_binary(c.name, c.op, c.ref, d, DType::boolean, -2, 2, -2, 2, {0, 0});
    }
  }
  // ties in floating point
  const Tensor a = tensor({1.0f, 2.0f, 3.0f}), b = tensor({1.0f, 3.0f, 2.0f});
  check_close(eq(a, b), Shape{3}, {1, 0, 0}, {0, 0});
  check_close(le(a, b), Shape{3}, {1, 1, 0}, {0, 0});
  check_close(ge(a, b), Shape{3}, {1, 0, 1}, {0, 0});
}

TEST_CASE("binary: promotion of every dtype pair (add)") {
  for (DType da : kAllDTypes) {
    for (DType db : kAllDTypes) {
      INFO(dtype_name(da) << " + " << dtype_name(db));
      const Tensor a = random_tensor(Shape{2, 3}, da, 11, -3, 3);
      const Tensor b = random_tensor(Shape{3}, db, 12, -3, 3);
      if (da == DType::boolean && db == DType::boolean) {
        check_error([&] { add(a, b); }, {"add", "bool"});
        continue;
      }
      const DType expected = promote_types(da, db);
      const Tensor y = add(a, b);
      CHECK(y.dtype() == expected);
      // the reference adds the values as converted to the result dtype
      check_close(y, Shape{2, 3},
                  reference(a.to(expected), b.to(expected), Shape{2, 3}, [](double x, double z) { return x + z; }),
                  default_tolerance(expected));
      CHECK(div(a, b).dtype() == (is_floating(expected) ? expected : DType::float32));
      CHECK(eq(a, b).dtype() == DType::boolean);
    }
  }
  // the documented table entries
  CHECK(promote_types(DType::int64, DType::float32) == DType::float32);
  CHECK(promote_types(DType::int32, DType::int64) == DType::int64);
  CHECK(promote_types(DType::boolean, DType::int32) == DType::int32);
  CHECK(promote_types(DType::float32, DType::float64) == DType::float64);
}

TEST_CASE("binary: reference check of where()") {
  uint64_t seed = 50;
  for (DType d : kAllDTypes) {
    const std::vector<std::vector<Shape>> shape_sets = {
        {Shape{}, Shape{}, Shape{}},         {Shape{3, 4}, Shape{3, 4}, Shape{3, 4}}, {Shape{3, 1}, Shape{4}, Shape{}},
        {Shape{2, 1, 4}, Shape{3, 1}, Shape{1, 4}}, {Shape{0, 4}, Shape{4}, Shape{1}},
        // Contiguous runs with contiguous or single-value operands (the vectorised select).
        {Shape{5, 7}, Shape{5, 7}, Shape{}}, {Shape{5, 7}, Shape{}, Shape{5, 7}}, {Shape{5, 7}, Shape{}, Shape{}},
        {Shape{37}, Shape{37}, Shape{37}}, {Shape{256, 1}, Shape{256, 1}, Shape{1}}};
    for (const auto& shapes : shape_sets) {
      const Tensor cond = random_tensor(shapes[0], DType::boolean, seed++);
      const Tensor a = random_tensor(shapes[1], d, seed++, -5, 5);
      const Tensor b = random_tensor(shapes[2], d, seed++, -5, 5);
      const Shape out = broadcast_shapes(broadcast_shapes(shapes[0], shapes[1], "t"), shapes[2], "t");
      std::vector<double> expected;
      const std::vector<double> cv = cond.to_vector<double>(), av = a.to_vector<double>(), bv = b.to_vector<double>();
      for (int64_t i = 0; i < out.numel(); ++i) {
        const auto idx = unravel(i, out);
        expected.push_back(cv[ravel_broadcast(idx, cond.shape())] != 0 ? av[ravel_broadcast(idx, a.shape())]
                                                                        : bv[ravel_broadcast(idx, b.shape())]);
      }
      INFO("where " << dtype_name(d) << " " << shapes[0] << " " << shapes[1] << " " << shapes[2]);
      check_close(where(cond, a, b), out, expected, {0, 0});
      check_close(where(non_contiguous(cond), non_contiguous(a), b), out, expected, {0, 0}, "strided");
    }
  }
  // mixed dtypes promote
  const Tensor w = where(tensor({true, false}), tensor({int32_t{1}, int32_t{2}}), tensor({0.5f, 0.25f}));
  CHECK(w.dtype() == DType::float32);
  check_close(w, Shape{2}, {1, 0.25}, {0, 0});
  check_error([&] { where(tensor({1.0f, 0.0f}), tensor({1.0f, 2.0f}), tensor({3.0f, 4.0f})); },
              {"where", "cond", "float32"});
  check_error([&] { where(tensor({true, false, true}), tensor({1.0f, 2.0f}), tensor({3.0f})); },
              {"where", "[3]", "[2]"});
}

TEST_CASE("binary: scalar operands follow the weak-scalar rule") {
  const Tensor f32 = tensor({1.5f, -2.0f}), f64 = tensor({1.5, -2.0});
  const Tensor i32 = tensor({int32_t{3}, int32_t{-4}}), i64 = tensor({int64_t{3}, int64_t{-4}});
  const Tensor b = tensor({true, false});
  // float scalar: keeps floating tensors, integer and bool become float32
  CHECK(mul(f32, 2.0).dtype() == DType::float32);
  CHECK(mul(f64, 2.0f).dtype() == DType::float64);
  CHECK(mul(i64, 2.0).dtype() == DType::float32);
  CHECK(mul(b, 0.5).dtype() == DType::float32);
  // integer scalar: keeps integer and floating tensors; bool becomes int64
  CHECK(add(i32, 2).dtype() == DType::int32);
  CHECK(add(i32, int64_t{2}).dtype() == DType::int32);
  CHECK(add(f32, 2).dtype() == DType::float32);
  CHECK(add(b, 1).dtype() == DType::int64);
  CHECK(div(i32, 2).dtype() == DType::float32);
  CHECK(scalar_like(2.5, i32).dtype() == DType::float32);
  CHECK(scalar_like(2, f64).dtype() == DType::float64);
  CHECK(scalar_like(2, b).dtype() == DType::int64);
  CHECK(scalar_like(2.5, f32).item<float>() == 2.5f);
  CHECK(scalar_like(7, i64).rank() == 0);

  // values, against tensor-tensor forms with scalar_like
  uint64_t seed = 70;
  for (DType d : {DType::float32, DType::float64, DType::int32, DType::int64}) {
    for (const Shape& shape : {Shape{}, Shape{0}, Shape{6}, Shape{3, 4}}) {
      const Tensor x = random_tensor(shape, d, seed++, 1, 5);
      for (const Tensor& t : {x, non_contiguous(x)}) {
        const std::vector<std::pair<std::string, std::pair<Tensor, Tensor>>> pairs = {
            {"add", {add(t, 3), add(t, scalar_like(3, t))}},
            {"add float", {t + 0.5, add(t, scalar_like(0.5, t))}},
            {"sub", {sub(t, 2.0), sub(t, scalar_like(2.0, t))}},
            {"rsub", {sub(2, t), sub(scalar_like(2, t), t)}},
            {"mul", {t * 0.5, mul(t, scalar_like(0.5, t))}},
            {"rmul", {3 * t, mul(t, scalar_like(3, t))}},
            {"div", {t / 4, div(t, scalar_like(4, t))}},
            {"rdiv", {1.0 / t, div(scalar_like(1.0, t), t)}},
            {"pow", {pow(t, 2), pow(t, scalar_like(2, t))}},
            {"maximum", {maximum(t, 2.5), maximum(t, scalar_like(2.5, t))}},
            {"minimum", {minimum(t, 2), minimum(t, scalar_like(2, t))}},
            {"operator-", {t - 1, sub(t, scalar_like(1, t))}},
            {"operator+ left", {1 + t, add(t, scalar_like(1, t))}},
            {"operator- left", {1 - t, sub(scalar_like(1, t), t)}},
        };
        for (const auto& pair : pairs) {
          const std::string& name = pair.first;
          const std::pair<Tensor, Tensor>& ys = pair.second;
          INFO(name << " " << dtype_name(d) << " " << shape);
          CHECK(ys.first.dtype() == ys.second.dtype());
          check_close(ys.first, ys.second, {0, 0}, name);
        }
      }
      // and one direct reference: x * 0.5 in the tensor's own precision
      std::vector<double> expected;
      for (double v : x.to_vector<double>()) expected.push_back(v * 0.5);
      check_close(x * 0.5, shape, expected, default_tolerance(is_floating(d) ? d : DType::float32), "x * 0.5");
    }
  }
  // a scalar outside an integer tensor's range saturates rather than wrapping
  check_close(add(tensor({int32_t{0}}), int64_t{1} << 40), Shape{1}, {2147483647}, {0, 0});
  CHECK(add(b, true).dtype() == DType::int64);  // a bool scalar counts as an integer scalar
  check_error([&] { sub(b, b); }, {"sub", "bool"});
}

TEST_CASE("binary: aliased and expanded operands") {
  const Tensor x = random_tensor(Shape{5, 5}, DType::float32, 3);
  const std::vector<double> xv = x.to_vector<double>();
  std::vector<double> twice, sym;
  for (int64_t i = 0; i < 5; ++i)
    for (int64_t j = 0; j < 5; ++j) {
      twice.push_back(2 * xv[i * 5 + j]);
      sym.push_back(xv[i * 5 + j] + xv[j * 5 + i]);
    }
  check_close(add(x, x), Shape{5, 5}, twice, default_tolerance(DType::float32), "x + x");
  check_close(add(x, x.mT()), Shape{5, 5}, sym, default_tolerance(DType::float32), "x + x^T");
  check_close(add(x.mT(), x), Shape{5, 5}, sym, default_tolerance(DType::float32), "x^T + x");
  // both operands expanded from one element
  const Tensor one = tensor({2.0f}).reshape(Shape{1, 1});
  check_close(mul(one.expand(Shape{3, 4}), one.expand(Shape{3, 4})), Shape{3, 4}, std::vector<double>(12, 4.0),
              {0, 0});
  // the output is always fresh
  CHECK_FALSE(add(x, scalar_like(0, x)).shares_storage_with(x));
}

TEST_CASE("binary: special values") {
  const Tensor a = tensor({kNaN, 1.0, kNaN, kInf, -kInf, 0.0, -0.0, 2.0});
  const Tensor b = tensor({1.0, kNaN, kNaN, kInf, kInf, -0.0, -0.0, 0.0});
  for (DType d : {DType::float32, DType::float64}) {
    const Tensor x = a.to(d), y = b.to(d);
    INFO(dtype_name(d));
    check_close(maximum(x, y), Shape{8}, {kNaN, kNaN, kNaN, kInf, kInf, 0, -0.0, 2}, {0, 0}, "maximum");
    check_close(minimum(x, y), Shape{8}, {kNaN, kNaN, kNaN, kInf, -kInf, 0, -0.0, 0}, {0, 0}, "minimum");
    check_close(add(x, y), Shape{8}, {kNaN, kNaN, kNaN, kInf, kNaN, 0, -0.0, 2}, {0, 0}, "add");
    check_close(div(x, y), Shape{8}, {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kInf}, {0, 0}, "div");
    check_close(eq(x, y), Shape{8}, {0, 0, 0, 1, 0, 1, 1, 0}, {0, 0}, "eq");
    check_close(ne(x, y), Shape{8}, {1, 1, 1, 0, 1, 0, 0, 1}, {0, 0}, "ne");
    check_close(lt(x, y), Shape{8}, {0, 0, 0, 0, 1, 0, 0, 0}, {0, 0}, "lt");
    check_close(ge(x, y), Shape{8}, {0, 0, 0, 1, 0, 1, 1, 1}, {0, 0}, "ge");
    check_close(logical_and(x, y), Shape{8}, {1, 1, 1, 1, 1, 0, 0, 0}, {0, 0}, "logical_and (NaN is true)");
    check_close(logical_or(x, y), Shape{8}, {1, 1, 1, 1, 1, 0, 0, 1}, {0, 0}, "logical_or");
    // -0 + -0 = -0 and the kernel's scalar-broadcast path keeps signs too
    CHECK(std::signbit(add(x, y).to_vector<double>()[6]));
    CHECK(std::signbit(mul(x.slice(0, 7, 8), -0.0).item<double>()));
    CHECK(std::isnan(maximum(x, 1.0).to_vector<double>()[0]));
    // pow: 0^0 = 1, negative base with fractional exponent is NaN
    check_close(pow(tensor({0.0, -8.0, 2.0}).to(d), tensor({0.0, 1.0 / 3.0, -1.0}).to(d)), Shape{3}, {1, kNaN, 0.5},
                default_tolerance(d), "pow");
  }
  // integer division by zero is float division
  check_close(div(tensor({int32_t{1}, int32_t{-1}, int32_t{0}}), tensor({int32_t{0}, int32_t{0}, int32_t{0}})),
              Shape{3}, {kInf, -kInf, kNaN}, {0, 0}, "int div by 0");
}

TEST_CASE("binary: integer arithmetic wraps") {
  const int32_t imax = std::numeric_limits<int32_t>::max(), imin = std::numeric_limits<int32_t>::min();
  const int64_t lmax = std::numeric_limits<int64_t>::max();
  CHECK(add(tensor({imax}), tensor({int32_t{1}})).item<int32_t>() == imin);
  CHECK(sub(tensor({imin}), 1).item<int32_t>() == imax);
  CHECK(mul(tensor({lmax}), tensor({int64_t{2}})).item<int64_t>() == -2);
  CHECK(pow(tensor({int32_t{2}}), 40).item<int32_t>() == 0);
  CHECK(pow(tensor({int32_t{3}}), 21).item<int32_t>() == static_cast<int32_t>(10460353203ULL & 0xffffffffULL));
  CHECK(pow(tensor({int64_t{-2}, int64_t{0}, int64_t{5}}), tensor({int64_t{3}, int64_t{0}, int64_t{0}}))
            .to_vector<int64_t>() == std::vector<int64_t>{-8, 1, 1});
  check_error([&] { pow(tensor({int32_t{2}}), -1); }, {"pow", "negative", "-1"});
  check_error([&] { pow(tensor({int64_t{2}, int64_t{3}}), tensor({int64_t{1}, int64_t{-2}})); }, {"pow", "negative"});
  CHECK(pow(tensor({int32_t{2}}), -1.0).item<float>() == 0.5f);  // a float exponent gives float32
  check_error([&] { pow(tensor({true}), tensor({true})); }, {"pow", "bool"});
}

TEST_CASE("binary: errors name the op and the operands") {
  const Tensor a = zeros(Shape{2, 3}), b = zeros(Shape{4});
  check_error([&] { add(a, b); }, {"add", "[2, 3]", "[4]"});
  check_error([&] { mul(b, a); }, {"mul", "[4]", "[2, 3]"});
  check_error([&] { eq(a, b); }, {"eq", "[2, 3]", "[4]"});
  check_error([&] { logical_or(a, zeros(Shape{3, 3})); }, {"logical_or", "[2, 3]", "[3, 3]"});
  const Tensor t = tensor({true});
  check_error([&] { add(t, t); }, {"add", "bool"});
  check_error([&] { mul(t, t); }, {"mul", "bool"});
  const Tensor undefined;
  check_error([&] { add(undefined, a); }, {"add", "undefined"});
  check_error([&] { add(a, undefined); }, {"add", "undefined"});
  check_error([&] { mul(undefined, 2.0); }, {"mul", "undefined"});
  check_error([&] { where(undefined, a, a); }, {"where", "undefined"});
  check_error([&] { scalar_like(1, undefined); }, {"scalar_like", "undefined"});
}

TEST_CASE("binary: large broadcast inputs split across threads give the serial result") {
  const Tensor x = random_tensor(Shape{300, 257}, DType::float32, 9);
  const Tensor row = random_tensor(Shape{257}, DType::float32, 10);
  const Tensor y = add(x, row);
  check_close(y, x.shape(), reference(x, row, x.shape(), [](double p, double q) { return double(float(p) + float(q)); }),
              {0, 0}, "add");
  const Tensor z = mul(x.mT(), 0.5);
  check_close(z, Shape{257, 300}, reference(x.mT().contiguous(), scalar_tensor(0.5), Shape{257, 300},
                           [](double p, double q) { return p * q; }),
              {0, 0}, "mul strided");
}

}  // namespace ctrax::test

namespace ctrax::test {

TEST_CASE("binary ops over whole or repeated rows (one kernel call) match the element-by-element result") {
  // Each pair takes the [rows, n] path of map_binary (kernels::binary_rows_kernel); the
  // expected values are computed one element at a time with broadcasting by hand.
  struct Case {
    Shape a, b;
  };
  for (const Case& c : std::vector<Case>{{{64, 20}, {20}}, {{20}, {64, 20}}, {{64, 20}, {64, 20}}, {{2, 3, 17}, {17}},
                                         {{5, 2}, {2}}, {{1, 40}, {40}}, {{8, 1, 24}, {24}},
                                         // Flat layouts (one row of rows * n): [rows, 1] columns,
                                         // a column and one value, whole rows and one value.
                                         {{256, 1}, {256, 1}}, {{256, 1}, {1}}, {{1}, {256, 1}},
                                         {{3, 256, 1}, {1, 1}}, {{64, 20}, {1, 1}}, {{7, 5}, {7, 5}}}) {
    CAPTURE(c.a);
    CAPTURE(c.b);
    const Tensor a = random_tensor(c.a, DType::float32, 1);
    const Tensor b = random_tensor(c.b, DType::float32, 2);
    const Shape out_shape = broadcast_shapes(c.a, c.b, "test");
    const Tensor ae = a.expand(out_shape).contiguous(), be = b.expand(out_shape).contiguous();
    const std::vector<float> x = ae.to_vector<float>(), y = be.to_vector<float>();
    for (int op = 0; op < 4; ++op) {
      CAPTURE(op);
      const Tensor got = op == 0 ? add(a, b) : op == 1 ? sub(a, b) : op == 2 ? mul(a, b) : maximum(a, b);
      const std::vector<float> g = got.to_vector<float>();
      REQUIRE(g.size() == x.size());
      bool same = true;
      for (size_t i = 0; i < x.size(); ++i) {
        const float want = op == 0 ? x[i] + y[i] : op == 1 ? x[i] - y[i] : op == 2 ? x[i] * y[i] : std::max(x[i], y[i]);
        same = same && g[i] == want;
      }
      CHECK(same);
    }
    // And with a C++ scalar operand on either side.
    const std::vector<float> s1 = add(a, 0.5).to_vector<float>(), s2 = sub(2.0, a).to_vector<float>();
    const std::vector<float> av = a.to_vector<float>();
    bool same = true;
    for (size_t i = 0; i < av.size(); ++i) same = same && s1[i] == av[i] + 0.5f && s2[i] == 2.0f - av[i];
    CHECK(same);
  }
}

TEST_CASE("binary ops and where over short rows (run down the columns) match the element-by-element result") {
  // Layouts whose rows stay short after coalescing, an operand broadcast along the last axis
  // among them (a [256, 1, 2] op with a [256, 1, 1] mask): strided_loop runs them down their
  // columns (RunOrder::any). Expected values one element at a time, in float, after expanding
  // both operands by hand.
  struct Case {
    Tensor a, b;
  };
  const Tensor t = random_tensor(Shape{2, 50}, DType::float32, 31);
  const std::vector<Case> cases = {
      {random_tensor(Shape{256, 2}, DType::float32, 32), random_tensor(Shape{256, 1}, DType::float32, 33)},
      {random_tensor(Shape{100, 1, 2}, DType::float32, 34), random_tensor(Shape{100, 1, 1}, DType::float32, 35)},
      {t.mT(), random_tensor(Shape{50, 1}, DType::float32, 36)},
      {random_tensor(Shape{50, 6}, DType::float32, 37).slice(-1, 0, 6, 2), random_tensor(Shape{50, 1}, DType::float32, 40)},
      {random_tensor(Shape{40, 3}, DType::float32, 38), non_contiguous(random_tensor(Shape{40, 3}, DType::float32, 39))}};
  for (const Case& c : cases) {
    CAPTURE(c.a.shape());
    CAPTURE(c.b.shape());
    const Shape out_shape = broadcast_shapes(c.a.shape(), c.b.shape(), "test");
    const std::vector<float> x = c.a.expand(out_shape).contiguous().to_vector<float>();
    const std::vector<float> y = c.b.expand(out_shape).contiguous().to_vector<float>();
    for (int op = 0; op < 6; ++op) {
      CAPTURE(op);
      const Tensor got = op == 0 ? add(c.a, c.b)
                         : op == 1 ? sub(c.a, c.b)
                         : op == 2 ? mul(c.a, c.b)
                         : op == 3 ? div(c.a, c.b)
                         : op == 4 ? maximum(c.a, c.b)
                                   : lt(c.a, c.b);
      REQUIRE(got.shape() == out_shape);
      const std::vector<float> g = got.to(DType::float32).to_vector<float>();
      bool same = true;
      for (size_t i = 0; i < x.size(); ++i) {
        const float want = op == 0   ? x[i] + y[i]
                           : op == 1 ? x[i] - y[i]
                           : op == 2 ? x[i] * y[i]
                           : op == 3 ? x[i] / y[i]
                           : op == 4 ? std::max(x[i], y[i])
                                     : static_cast<float>(x[i] < y[i]);
        same = same && g[i] == want;
      }
      CHECK(same);
    }
    // where with the mask broadcast along the last axis and a one-value other operand.
    const Tensor cond = gt(c.b, scalar_tensor(0.0f));
    const Tensor w = where(cond, c.a, scalar_tensor(7.0f));
    const std::vector<float> g = w.to_vector<float>();
    bool same = true;
    for (size_t i = 0; i < x.size(); ++i) same = same && g[i] == (y[i] > 0 ? x[i] : 7.0f);
    CHECK(same);
  }
}

}  // namespace ctrax::test
