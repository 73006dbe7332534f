// Gradient cases of the reductions, over every axis pattern: all axes, one axis, several axes,
// negative axes, keepdims on and off, a rank-0 input and a strided view; var/std with
// correction 0 and 1; prod with one and with two zeros in a reduced group. Ties of max/min
// are checked separately against the documented rule (ties share the gradient evenly), since
// finite differences are undefined there.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
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
// A reduction called as op(x, axes, keepdims).
using Reduce = std::function<Tensor(const Tensor&, const std::vector<int>&, bool)>;

// The axis patterns every reduction is checked on. Random continuous values, so max/min have
// no ties. `lo`, `hi` bound the values (prod keeps them near 1 so products stay moderate).
std::vector<GradientCase> reduce_cases(const std::string& op, const std::string& variant, const Reduce& fn,
                                       uint64_t seed, double lo, double hi, bool rank0 = true) {
  const std::string v = variant.empty() ? "" : variant + ", ";
  auto make = [&](const Shape& s, uint64_t k) { return test::random_f64(s, seed + k, lo, hi); };
  std::vector<GradientCase> cases = {
      {op, v + "all axes of [3,4]", [fn](const Inputs& x) { return fn(x[0], {}, false); }, {make(Shape{3, 4}, 0)}},
      {op, v + "all axes of [2,3], keepdims", [fn](const Inputs& x) { return fn(x[0], {}, true); },
       {make(Shape{2, 3}, 1)}},
      {op, v + "axis 1 of [3,4]", [fn](const Inputs& x) { return fn(x[0], {1}, false); }, {make(Shape{3, 4}, 2)}},
      {op, v + "axis 0 of [3,4], keepdims", [fn](const Inputs& x) { return fn(x[0], {0}, true); },
       {make(Shape{3, 4}, 3)}},
      {op, v + "axes 0, 2 of [2,3,4]", [fn](const Inputs& x) { return fn(x[0], {0, 2}, false); },
       {make(Shape{2, 3, 4}, 4)}},
      {op, v + "axes -1, -3 of [2,3,4], keepdims", [fn](const Inputs& x) { return fn(x[0], {-1, -3}, true); },
       {make(Shape{2, 3, 4}, 5)}},
      {op, v + "axis -2 of [2,3,4]", [fn](const Inputs& x) { return fn(x[0], {-2}, false); },
       {make(Shape{2, 3, 4}, 6)}},
      {op, v + "axis 0 of a transposed view of [4,3]", [fn](const Inputs& x) { return fn(x[0].mT(), {0}, false); },
       {make(Shape{4, 3}, 7)}},
      {op, v + "axis 1 of columns 0, 2, 4 of [3,6], keepdims",
       [fn](const Inputs& x) { return fn(x[0].slice(1, 0, 6, 2), {1}, true); }, {make(Shape{3, 6}, 8)}},
  };
  if (rank0)
    cases.push_back({op, v + "rank 0", [fn](const Inputs& x) { return fn(x[0], {}, false); }, {make(Shape{}, 9)}});
  return cases;
}

void append(std::vector<GradientCase>& all, std::vector<GradientCase> more) {
  for (GradientCase& c : more) all.push_back(std::move(c));
}

}  // namespace

CTRAX_GRADIENT_CASES(reduce) {
  std::vector<GradientCase> all;
  append(all, reduce_cases("sum", "", [](const Tensor& x, const std::vector<int>& a, bool k) { return sum(x, a, k); },
                           500, -2, 2));
  append(all, reduce_cases("mean", "", [](const Tensor& x, const std::vector<int>& a, bool k) { return mean(x, a, k); },
                           520, -2, 2));
  for (int64_t correction : {0, 1}) {
    const std::string v = "correction " + std::to_string(correction);
    const uint64_t seed = 540 + 20 * static_cast<uint64_t>(correction);
    // var of one element with correction 0 is identically 0 (gradient 0); with correction 1
    // it is NaN, so no rank-0 case then.
    append(all, reduce_cases("var", v, [correction](const Tensor& x, const std::vector<int>& a, bool k) {
             return var(x, a, k, correction);
           }, seed, -2, 2, correction == 0));
    // Likewise std: constant 0 with correction 0 (the backward's y = 0 rule gives 0), NaN with 1.
    append(all, reduce_cases("std", v, [correction](const Tensor& x, const std::vector<int>& a, bool k) {
             return ctrax::std(x, a, k, correction);
           }, seed + 10, -2, 2, correction == 0));
  }
  append(all, reduce_cases("max", "", [](const Tensor& x, const std::vector<int>& a, bool k) { return max(x, a, k); },
                           600, -2, 2));
  append(all, reduce_cases("min", "", [](const Tensor& x, const std::vector<int>& a, bool k) { return min(x, a, k); },
                           620, -2, 2));
  append(all, reduce_cases("prod", "", [](const Tensor& x, const std::vector<int>& a, bool k) { return prod(x, a, k); },
                           640, 0.5, 1.5));
  append(all, reduce_cases("logsumexp", "",
                           [](const Tensor& x, const std::vector<int>& a, bool k) { return logsumexp(x, a, k); }, 660,
                           -3, 3));

  // prod with zeros: d/dx_i = product of the others, exact (no division by the product). With
  // one zero in a group only that element has a nonzero gradient; with two, none has. prod is
  // linear in each element, so central differences are exact there too.
  const Tensor one_zero = tensor({0.9, 1.2, 0.0, -1.1, 1.3, 0.7, -0.8, 1.1, 1.4, 0.6, 1.05, -1.2}, {3, 4});
  const Tensor two_zeros = tensor({0.9, 0.0, 1.2, 0.0, 1.3, 0.7, -0.8, 1.1, 1.4, 0.0, 1.05, -1.2}, {3, 4});
  all.push_back({"prod", "one zero, axis -1", [](const Inputs& x) { return prod(x[0], {-1}); }, {one_zero}});
  all.push_back({"prod", "one zero, all axes", [](const Inputs& x) { return prod(x[0]); }, {one_zero}});
  all.push_back({"prod", "two zeros in row 0 and one in row 2, axis 1, keepdims",
                 [](const Inputs& x) { return prod(x[0], {1}, true); }, {two_zeros}});
  all.push_back({"prod", "three zeros, all axes", [](const Inputs& x) { return prod(x[0]); }, {two_zeros}});
  all.push_back({"prod", "one zero, axis 0 of the transpose", [](const Inputs& x) { return prod(x[0].mT(), {0}); },
                 {one_zero}});
  all.push_back({"prod", "a zero rank-0 input", [](const Inputs& x) { return prod(x[0]); },
                 {scalar_tensor(0.0, DType::float64)}});
  return all;
}

// ---- Ties of max and min: the gradient is shared evenly among the tied elements ------------

namespace {
const test::Tolerance kExact{1e-15, 0.0};
}

TEST_CASE("autograd: max and min share the gradient evenly among tied elements") {
  // The max along axis 1: row 0 has a two-way tie (3), row 1 a three-way tie (2), row 2 none.
  const Tensor x = tensor({1.0, 3.0, 3.0, -1.0, 2.0, 2.0, 0.0, 2.0, -4.0, 5.0, 1.0, -2.0}, {3, 4});
  test::check_close(grad([](const Tensor& x) { return sum(max(x, {1})); })(x), Shape{3, 4},
                    {0, 0.5, 0.5, 0, 1.0 / 3, 1.0 / 3, 0, 1.0 / 3, 0, 1, 0, 0}, kExact);
  // The min along axis 1 has no tie: the whole gradient goes to the one minimum of each row.
  test::check_close(grad([](const Tensor& x) { return sum(min(x, {1})); })(x), Shape{3, 4},
                    {0, 0, 0, 1, 0, 0, 1, 0, 1, 0, 0, 0}, kExact);
  // Two equal rows: every column of the min along axis 0 is a two-way tie.
  const Tensor y = tensor({1.0, -2.0, 0.5, 1.0, -2.0, 0.5}, {2, 3});
  test::check_close(grad([](const Tensor& y) { return sum(min(y, {0})); })(y), Shape{2, 3},
                    {0.5, 0.5, 0.5, 0.5, 0.5, 0.5}, kExact);
}

TEST_CASE("autograd: a tie over all axes, with keepdims and a non-uniform cotangent") {
  const Tensor x = tensor({4.0, -1.0, 4.0, 0.0, 4.0, 2.0}, {2, 3});
  GradientTape tape;
  const Tensor w = tape.watch(x);
  const Tensor y = max(w, {}, true);  // [1,1] = 4, reached three times
  const std::vector<Tensor> g = tape.gradient(y, {w}, tensor({6.0}, {1, 1}));
  test::check_close(g[0], Shape{2, 3}, {2, 0, 2, 0, 2, 0}, kExact);
}

TEST_CASE("autograd: min with a tie along a negative axis, seeded per output") {
  // min over axis -1 of [2,2,2]: pairs (1, 1) and (5, 5) tie, (0, 3) and (2, -1) do not.
  const Tensor x = tensor({1.0, 1.0, 0.0, 3.0, 2.0, -1.0, 5.0, 5.0}, {2, 2, 2});
  GradientTape tape;
  const Tensor w = tape.watch(x);
  const Tensor y = min(w, {-1});  // [2,2]
  const std::vector<Tensor> g = tape.gradient(y, {w}, tensor({2.0, 3.0, 4.0, 10.0}, {2, 2}));
  test::check_close(g[0], Shape{2, 2, 2}, {1, 1, 3, 0, 0, 4, 5, 5}, kExact);
}

TEST_CASE("autograd: std has gradient 0 where it is 0 instead of 0/0") {
  // Row 0 is constant (std 0, no derivative: the documented choice is 0); row 1 is not:
  // d std / dx = (x - mean) / (n std) with n = 3, std = sqrt(2/3).
  const Tensor x = tensor({2.0, 2.0, 2.0, 1.0, 2.0, 3.0}, {2, 3});
  const double d = 1.0 / (3.0 * std::sqrt(2.0 / 3.0));
  test::check_close(grad([](const Tensor& x) { return sum(ctrax::std(x, {1})); })(x), Shape{2, 3},
                    {0, 0, 0, -d, 0, d}, test::Tolerance{1e-15, 1e-14});
  // One element: std is identically 0.
  test::check_close(grad([](const Tensor& x) { return ctrax::std(x); })(scalar_tensor(1.5, DType::float64)), Shape{},
                    {0.0}, kExact);
}
