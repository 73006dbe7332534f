// Gradient cases of the elementwise ops (unary, binary, clip, where), and the documented
// subgradients at their kinks, checked against hand-computed values (finite differences are
// meaningless there).
//
// Inputs stay clear of kinks and domain edges: log/sqrt/rsqrt get positive values, relu/abs/
// reciprocal values at least 0.2 away from 0, clip values at least 0.1 away from its bounds,
// and maximum/minimum operands on two interleaved grids, so they never tie. Non-contiguous
// layouts are made inside f with views (gradcheck clones its inputs, which makes them
// contiguous), so the backward receives strided inputs and gradients flow through the view.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <ctrax/autograd/grad.h>
#include <ctrax/autograd/tape.h>
#include <ctrax/tensor/ops.h>

#include "../test_util.h"
#include "gradient_cases.h"

using namespace ctrax;
using test::GradientCase;

namespace {

using Inputs = std::vector<Tensor>;
using Unary = std::function<Tensor(const Tensor&)>;
using Binary = std::function<Tensor(const Tensor&, const Tensor&)>;

constexpr DType f64 = DType::float64;

// Values of t pushed at least `margin` away from each of `points` (to the nearer side).
Tensor avoiding(const Tensor& t, std::initializer_list<double> points, double margin) {
  std::vector<double> v = t.to_vector<double>();
  for (double& x : v)
    for (double p : points)
      if (std::abs(x - p) < margin) x = x >= p ? p + margin : p - margin;
  return from_vector(v, t.shape());
}

// 0.25 k + offset for random integers k in [-8, 8): two tensors with offsets 0 and 0.1 differ
// by at least 0.1 everywhere, whatever broadcasting pairs up.
Tensor grid(const Shape& s, uint64_t seed, double offset) {
  std::mt19937_64 gen(seed);
  std::uniform_int_distribution<int> k(-8, 7);
  std::vector<double> v(static_cast<size_t>(s.numel()));
  for (double& x : v) x = 0.25 * k(gen) + offset;
  return from_vector(v, s);
}

// Four layouts of a unary op: a matrix, a rank-0 tensor, a transposed view, and every other
// row of a larger matrix (the skipped rows must get zero gradient).
std::vector<GradientCase> unary_cases(const std::string& op, const std::string& variant, const Unary& fn,
                                      const std::function<Tensor(const Shape&, uint64_t)>& make, uint64_t seed) {
  const std::string v = variant.empty() ? "" : variant + ", ";
  return {
      {op, v + "[3,4]", [fn](const Inputs& x) { return fn(x[0]); }, {make(Shape{3, 4}, seed)}},
      {op, v + "rank 0", [fn](const Inputs& x) { return fn(x[0]); }, {make(Shape{}, seed + 1)}},
      {op, v + "transposed view of [5,3]", [fn](const Inputs& x) { return fn(x[0].mT()); },
       {make(Shape{5, 3}, seed + 2)}},
      {op, v + "rows 0, 2, 4 of [6,4]", [fn](const Inputs& x) { return fn(x[0].slice(0, 0, 6, 2)); },
       {make(Shape{6, 4}, seed + 3)}},
  };
}

std::function<Tensor(const Shape&, uint64_t)> in_range(double lo, double hi) {
  return [lo, hi](const Shape& s, uint64_t seed) { return test::random_f64(s, seed, lo, hi); };
}
// In [-2, 2) and at least 0.2 away from 0.
std::function<Tensor(const Shape&, uint64_t)> away_from_zero() {
  return [](const Shape& s, uint64_t seed) { return avoiding(test::random_f64(s, seed, -2.0, 2.0), {0.0}, 0.2); };
}

// The layouts and shapes of a binary op: equal shapes, broadcasting between different shapes
// and ranks, a rank-0 operand, strided views on both sides, and the same tensor on both sides
// (its gradients add up). make_a / make_b give each operand's values.
std::vector<GradientCase> binary_cases(const std::string& op, const Binary& fn,
                                       const std::function<Tensor(const Shape&, uint64_t)>& make_a,
                                       const std::function<Tensor(const Shape&, uint64_t)>& make_b, uint64_t seed) {
  auto both = [fn](const Inputs& x) { return fn(x[0], x[1]); };
  return {
      {op, "[3,4] and [3,4]", both, {make_a(Shape{3, 4}, seed), make_b(Shape{3, 4}, seed + 1)}},
      {op, "[3,1] and [4] broadcast to [3,4]", both, {make_a(Shape{3, 1}, seed + 2), make_b(Shape{4}, seed + 3)}},
      {op, "[2,3,4] and [3,1]", both, {make_a(Shape{2, 3, 4}, seed + 4), make_b(Shape{3, 1}, seed + 5)}},
      {op, "[1,4] and [2,3,1]", both, {make_a(Shape{1, 4}, seed + 6), make_b(Shape{2, 3, 1}, seed + 7)}},
      {op, "rank 0 and [3,4]", both, {make_a(Shape{}, seed + 8), make_b(Shape{3, 4}, seed + 9)}},
      {op, "[2,3] and rank 0", both, {make_a(Shape{2, 3}, seed + 10), make_b(Shape{}, seed + 11)}},
      {op, "transposed view of [4,3] and rows 0, 2, 4 of [5,4]",
       [fn](const Inputs& x) { return fn(x[0].mT(), x[1].slice(0, 0, 5, 2)); },
       {make_a(Shape{4, 3}, seed + 12), make_b(Shape{5, 4}, seed + 13)}},
  };
}

void append(std::vector<GradientCase>& all, std::vector<GradientCase> more) {
  for (GradientCase& c : more) all.push_back(std::move(c));
}

}  // namespace

CTRAX_GRADIENT_CASES(elementwise) {
  std::vector<GradientCase> all;
  const auto any = in_range(-2.0, 2.0);
  const auto positive = in_range(0.2, 3.0);

  // ---- unary ----
  append(all, unary_cases("neg", "", [](const Tensor& x) { return neg(x); }, any, 100));
  append(all, unary_cases("abs", "", [](const Tensor& x) { return abs(x); }, away_from_zero(), 110));
  append(all, unary_cases("exp", "", [](const Tensor& x) { return exp(x); }, any, 120));
  append(all, unary_cases("log", "", [](const Tensor& x) { return log(x); }, positive, 130));
  append(all, unary_cases("log1p", "", [](const Tensor& x) { return log1p(x); }, in_range(-0.6, 2.0), 140));
  append(all, unary_cases("expm1", "", [](const Tensor& x) { return expm1(x); }, any, 150));
  append(all, unary_cases("sqrt", "", [](const Tensor& x) { return sqrt(x); }, positive, 160));
  append(all, unary_cases("rsqrt", "", [](const Tensor& x) { return rsqrt(x); }, positive, 170));
  append(all, unary_cases("square", "", [](const Tensor& x) { return square(x); }, any, 180));
  append(all, unary_cases("reciprocal", "", [](const Tensor& x) { return reciprocal(x); }, away_from_zero(), 190));
  append(all, unary_cases("tanh", "", [](const Tensor& x) { return tanh(x); }, in_range(-2.5, 2.5), 200));
  append(all, unary_cases("sigmoid", "", [](const Tensor& x) { return sigmoid(x); }, in_range(-4.0, 4.0), 210));
  // softplus switches formula at 0 internally (max(x, 0) + log1p(exp(-|x|))); the sum is smooth.
  append(all, unary_cases("softplus", "", [](const Tensor& x) { return softplus(x); }, in_range(-4.0, 4.0), 220));
  append(all, unary_cases("relu", "", [](const Tensor& x) { return relu(x); }, away_from_zero(), 230));
  append(all, unary_cases("gelu", "exact", [](const Tensor& x) { return gelu(x); }, in_range(-3.0, 3.0), 240));
  append(all, unary_cases("gelu", "tanh approximation", [](const Tensor& x) { return gelu(x, true); },
                          in_range(-3.0, 3.0), 250));
  append(all, unary_cases("sin", "", [](const Tensor& x) { return sin(x); }, in_range(-3.0, 3.0), 260));
  append(all, unary_cases("cos", "", [](const Tensor& x) { return cos(x); }, in_range(-3.0, 3.0), 270));
  // Bounds -0.5 and 0.7; values at least 0.1 away from both, some inside and some outside.
  const auto clip_values = [](const Shape& s, uint64_t seed) {
    return avoiding(test::random_f64(s, seed, -2.0, 2.0), {-0.5, 0.7}, 0.1);
  };
  append(all, unary_cases("clip", "", [](const Tensor& x) { return clip(x, -0.5, 0.7); }, clip_values, 280));
  all.push_back({"clip", "explicit values on both sides of integer bounds",
                 [](const Inputs& x) { return clip(x[0], -1, 1); },
                 {tensor({-2.5, -1.2, -0.8, 0.0, 0.4, 0.9, 1.3, 3.0}, {2, 4})}});

  // ---- binary ----
  const auto nonzero = [](const Shape& s, uint64_t seed) {
    return avoiding(test::random_f64(s, seed, -2.0, 2.0), {0.0}, 0.5);
  };
  append(all, binary_cases("add", [](const Tensor& a, const Tensor& b) { return add(a, b); }, any, any, 300));
  append(all, binary_cases("sub", [](const Tensor& a, const Tensor& b) { return sub(a, b); }, any, any, 320));
  append(all, binary_cases("mul", [](const Tensor& a, const Tensor& b) { return mul(a, b); }, any, any, 340));
  append(all, binary_cases("div", [](const Tensor& a, const Tensor& b) { return div(a, b); }, any, nonzero, 360));
  // a > 0 so that d/db = a^b log a exists.
  append(all, binary_cases("pow", [](const Tensor& a, const Tensor& b) { return pow(a, b); },
                           in_range(0.3, 2.5), in_range(-1.5, 2.5), 380));
  const auto grid0 = [](const Shape& s, uint64_t seed) { return grid(s, seed, 0.0); };
  const auto grid1 = [](const Shape& s, uint64_t seed) { return grid(s, seed, 0.1); };
  append(all, binary_cases("maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); }, grid0, grid1,
                           400));
  append(all, binary_cases("minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); }, grid0, grid1,
                           420));
  // The same tensor on both sides: its two gradients are added.
  all.push_back({"mul", "x * x", [](const Inputs& x) { return mul(x[0], x[0]); }, {test::random_f64(Shape{3, 4}, 440, -2, 2)}});
  all.push_back({"div", "x / x.mT()", [](const Inputs& x) { return div(x[0], x[0].mT()); },
                 {avoiding(test::random_f64(Shape{4, 4}, 441, -2, 2), {0.0}, 0.5)}});
  // An integer operand is a constant (promoted to float64 in the op, no gradient asked).
  all.push_back({"mul", "float64 [3,4] times an int32 [4] constant", [](const Inputs& x) { return mul(x[0], x[1]); },
                 {test::random_f64(Shape{3, 4}, 442, -2, 2), tensor({-2, 3, 1, 4}).to(DType::int32)}});

  // Scalar forms: the scalar becomes a rank-0 constant operand.
  const Tensor s34 = test::random_f64(Shape{3, 4}, 450, -2, 2);
  all.push_back({"add", "x + 2.5", [](const Inputs& x) { return add(x[0], 2.5); }, {s34}});
  all.push_back({"sub", "x - 2.5", [](const Inputs& x) { return sub(x[0], 2.5); }, {s34}});
  all.push_back({"sub", "1.0 - x", [](const Inputs& x) { return sub(1.0, x[0]); }, {s34}});
  all.push_back({"mul", "x * 2.5", [](const Inputs& x) { return mul(x[0], 2.5); }, {s34}});
  all.push_back({"mul", "3 * x (integer scalar)", [](const Inputs& x) { return 3 * x[0]; }, {s34}});
  all.push_back({"div", "x / 2.5", [](const Inputs& x) { return div(x[0], 2.5); }, {s34}});
  all.push_back({"div", "1.5 / x", [](const Inputs& x) { return div(1.5, x[0]); },
                 {avoiding(s34, {0.0}, 0.3)}});
  // a^3 and a^2 are defined for negative a; only d/da is asked.
  all.push_back({"pow", "x^3.0 with negative x", [](const Inputs& x) { return pow(x[0], 3.0); }, {s34}});
  all.push_back({"pow", "x^2 (integer exponent), rank 0", [](const Inputs& x) { return pow(x[0], 2); },
                 {scalar_tensor(-1.3, f64)}});
  all.push_back({"pow", "x^-0.5", [](const Inputs& x) { return pow(x[0], -0.5); },
                 {test::random_f64(Shape{2, 3}, 451, 0.3, 3)}});
  all.push_back({"maximum", "maximum(x, 0.0)", [](const Inputs& x) { return maximum(x[0], 0.0); },
                 {grid(Shape{3, 4}, 452, 0.1)}});
  all.push_back({"minimum", "minimum(x, 0.0)", [](const Inputs& x) { return minimum(x[0], 0.0); },
                 {grid(Shape{3, 4}, 453, 0.1)}});

  // ---- where ----
  // cond is a bool constant; a and b get the gradient where they were picked.
  auto pick = [](const Inputs& x) { return where(x[0], x[1], x[2]); };
  all.push_back({"where", "[3,4] cond, a, b", pick,
                 {test::random_tensor(Shape{3, 4}, DType::boolean, 460), test::random_f64(Shape{3, 4}, 461, -2, 2),
                  test::random_f64(Shape{3, 4}, 462, -2, 2)}});
  all.push_back({"where", "cond [3,1], a [4], b [2,3,4]", pick,
                 {test::random_tensor(Shape{3, 1}, DType::boolean, 463), test::random_f64(Shape{4}, 464, -2, 2),
                  test::random_f64(Shape{2, 3, 4}, 465, -2, 2)}});
  all.push_back({"where", "cond [2,3], rank-0 a, b [3]", pick,
                 {test::random_tensor(Shape{2, 3}, DType::boolean, 466), scalar_tensor(0.7, f64),
                  test::random_f64(Shape{3}, 467, -2, 2)}});
  all.push_back({"where", "cond from the values, transposed a, strided b",
                 [](const Inputs& x) {
                   const Tensor a = x[0].mT(), b = x[1].slice(1, 0, 8, 2);
                   return where(gt(a, b), a, mul(b, 2.0));
                 },
                 {grid(Shape{4, 3}, 468, 0.0), grid(Shape{3, 8}, 469, 0.1)}});
  return all;
}

// ---- Subgradients at the kinks: the documented choices, with exact expected values ----------

namespace {
const test::Tolerance kExact{0.0, 0.0};
}

TEST_CASE("autograd: relu and abs have gradient 0 at exactly 0") {
  const Tensor x = tensor({-1.5, 0.0, 2.0, -0.0});
  test::check_close(grad([](const Tensor& x) { return sum(relu(x)); })(x), Shape{4}, {0.0, 0.0, 1.0, 0.0}, kExact);
  test::check_close(grad([](const Tensor& x) { return sum(abs(x)); })(x), Shape{4}, {-1.0, 0.0, 1.0, 0.0}, kExact);
}

TEST_CASE("autograd: clip passes the gradient at exactly lo and hi, and blocks it outside") {
  const Tensor x = tensor({-1.0, 1.0, 0.25, -2.0, 3.0});
  auto f = [](const Tensor& x) { return sum(mul(clip(x, -1.0, 1.0), tensor({1.0, 2.0, 3.0, 4.0, 5.0}))); };
  test::check_close(grad(f)(x), Shape{5}, {1.0, 2.0, 3.0, 0.0, 0.0}, kExact);
}

TEST_CASE("autograd: maximum and minimum split the gradient evenly on ties") {
  const Tensor a = tensor({1.0, 2.0, 3.0}), b = tensor({1.0, 0.0, 3.0});
  {
    auto [da, db] = grad<0, 1>([](const Tensor& a, const Tensor& b) { return sum(maximum(a, b)); })(a, b);
    test::check_close(da, Shape{3}, {0.5, 1.0, 0.5}, kExact);
    test::check_close(db, Shape{3}, {0.5, 0.0, 0.5}, kExact);
  }
  {
    auto [da, db] = grad<0, 1>([](const Tensor& a, const Tensor& b) { return sum(minimum(a, b)); })(a, b);
    test::check_close(da, Shape{3}, {0.5, 0.0, 0.5}, kExact);
    test::check_close(db, Shape{3}, {0.5, 1.0, 0.5}, kExact);
  }
  // A broadcast rank-0 operand collects its halves: b = 2 ties with a[1] only.
  {
    auto [da, db] = grad<0, 1>([](const Tensor& a, const Tensor& b) { return sum(maximum(a, b)); })(
        tensor({1.0, 2.0, 3.0}), scalar_tensor(2.0, DType::float64));
    test::check_close(da, Shape{3}, {0.0, 0.5, 1.0}, kExact);
    test::check_close(db, Shape{}, {1.5}, kExact);  // 1 (from a[0]) + 0.5 (the tie)
  }
  // The scalar form ties too: maximum(x, 0) at x = 0.
  test::check_close(grad([](const Tensor& x) { return sum(maximum(x, 0.0)); })(tensor({-1.0, 0.0, 1.0})), Shape{3},
                    {0.0, 0.5, 1.0}, kExact);
}

TEST_CASE("autograd: pow has d/da of a^0 equal to 0 and d/db at a = 0 equal to 0") {
  // Without the rule, d/da of a^0 at a = 0 would be 0 * 0^-1 = NaN and d/db at a = 0 would be
  // 0^b log 0 = NaN (0 * -inf).
  const Tensor a = tensor({0.0, 2.0, -1.5, 0.0, 2.0}), b = tensor({0.0, 0.0, 0.0, 2.0, 1.0});
  auto [da, db] = grad<0, 1>([](const Tensor& a, const Tensor& b) { return sum(pow(a, b)); })(a, b);
  // d/da = b a^(b-1): 0 where b = 0; 2 * 0 = 0 at (0, 2); 1 at (2, 1).
  test::check_close(da, Shape{5}, {0.0, 0.0, 0.0, 0.0, 1.0}, kExact);
  // d/db = a^b log a: 0 where a = 0; log 2 at (2, 0); 2 log 2 at (2, 1). At a = -1.5 the log
  // is NaN (no real derivative), so that element is not checked.
  const std::vector<double> g = db.to_vector<double>();
  CHECK(g[0] == 0.0);
  CHECK(g[1] == doctest::Approx(std::log(2.0)).epsilon(1e-15));
  CHECK(g[3] == 0.0);
  CHECK(g[4] == doctest::Approx(2.0 * std::log(2.0)).epsilon(1e-15));
  // The scalar form, x^0.0 with x = 0: gradient 0, not NaN.
  test::check_close(grad([](const Tensor& x) { return sum(pow(x, 0.0)); })(tensor({0.0, 3.0})), Shape{2}, {0.0, 0.0},
                    kExact);
}
