// Gradient checks of the joining and rearranging ops and the scans (autograd/backward/join.cpp):
// concatenate, stack, split, pad, flip, cumsum, discounted_cumsum.
//
// What the cases aim at: each input's slice of g taken at the right offset (inputs of
// different sizes, negative axes), dtype promotion inside concatenate (the float32 input's
// gradient comes back as float32), split parts nothing used (zero gradient), padding on one
// side only, and the scans in both directions with the discounts at which d^(s-t) degenerates
// (0: only s = t counts; 1: a plain reverse cumsum).
#include <vector>

#include <ctrax/autograd/tape.h>
#include <ctrax/tensor/ops.h>

#include "gradient_cases.h"
#include "test_util.h"

using namespace ctrax;
using namespace ctrax::test;

CTRAX_GRADIENT_CASES(join) {
  std::vector<GradientCase> cases;
  auto push = [&](const char* op, const char* label, GradcheckFn f, std::vector<Tensor> inputs,
                  GradcheckOptions options = {}) {
    cases.push_back(GradientCase{op, label, std::move(f), std::move(inputs), options});
  };

  // ---- concatenate ----
  push("concatenate", "2 inputs of different sizes, axis 0",
       [](const std::vector<Tensor>& in) { return concatenate({in[0], in[1]}, 0); }, {random_f64({2, 3}, 1), random_f64({4, 3}, 2)});
  push("concatenate", "3 inputs of different sizes, axis -1, squared",
       [](const std::vector<Tensor>& in) { return square(concatenate({in[0], in[1], in[2]}, -1)); },
       {random_f64({2, 1}, 3), random_f64({2, 3}, 4), random_f64({2, 2}, 5)});
  push("concatenate", "float32 and float64 inputs (promoted), axis -1",
       [](const std::vector<Tensor>& in) { return concatenate({in[0].to(DType::float32), in[1]}, -1); },
       {random_f64({3, 2}, 6), random_f64({3, 4}, 7)}, through_float32());
  push("concatenate", "float64, float32, float64 inputs, axis 0 of rank 3",
       [](const std::vector<Tensor>& in) { return concatenate({in[0], in[1].to(DType::float32), in[2]}, 0); },
       {random_f64({1, 2, 3}, 8), random_f64({2, 2, 3}, 9), random_f64({3, 2, 3}, 10)}, through_float32());
  push("concatenate", "the same input twice (gradients add), of a transposed view",
       [](const std::vector<Tensor>& in) { return concatenate({in[0].mT(), in[1], in[0].mT()}, 0); },
       {random_f64({3, 2}, 11), random_f64({1, 3}, 12)});

  // ---- stack ----
  push("stack", "2 inputs, axis 0",
       [](const std::vector<Tensor>& in) { return stack({in[0], in[1]}, 0); }, {random_f64({2, 3}, 13), random_f64({2, 3}, 14)});
  push("stack", "3 inputs, new last axis (axis -1), squared",
       [](const std::vector<Tensor>& in) { return square(stack({in[0], in[1], in[2]}, -1)); },
       {random_f64({3, 2}, 15), random_f64({3, 2}, 16), random_f64({3, 2}, 17)});
  push("stack", "middle axis, one input twice and one float32",
       [](const std::vector<Tensor>& in) { return stack({in[0], in[1].to(DType::float32), in[0]}, 1); },
       {random_f64({2, 3}, 18), random_f64({2, 3}, 19)}, through_float32());

  // ---- split: the parts' gradients concatenated, zeros for parts nothing used. ----
  push("split", "3 equal sections, axis 0, all parts used",
       [](const std::vector<Tensor>& in) {
         const std::vector<Tensor> p = split(in[0], 3, 0);
         return add(mul(p[0], p[1]), square(p[2]));
       },
       {random_f64({6, 2}, 20)});
  push("split", "sizes 1, 3, 2 on axis -1, parts reordered",
       [](const std::vector<Tensor>& in) {
         const std::vector<Tensor> p = split(in[0], {1, 3, 2}, -1);
         return concatenate({p[2], p[0], p[1]}, -1);
       },
       {random_f64({2, 6}, 21)});
  push("split", "sizes 2, 1, 3 on axis 1, only the first part used (the others get zero)",
       [w = random_f64({3, 2}, 22)](const std::vector<Tensor>& in) { return mul(split(in[0], {2, 1, 3}, 1)[0], w.to(in[0].device())); },
       {random_f64({3, 6}, 23)});
  push("split", "2 equal sections of a middle axis, only the last part used",
       [](const std::vector<Tensor>& in) { return square(split(in[0], 2, 1)[1]); }, {random_f64({2, 4, 3}, 24)});

  // ---- pad: the interior of g. ----
  push("pad", "asymmetric widths on both axes",
       [](const std::vector<Tensor>& in) { return pad(in[0], {{1, 0}, {2, 3}}); }, {random_f64({2, 3}, 25)});
  push("pad", "zero widths on axis 0 and 2, a pad value, squared",
       [](const std::vector<Tensor>& in) { return square(pad(in[0], {{0, 0}, {0, 2}, {0, 0}}, 0.5)); },
       {random_f64({2, 2, 3}, 26)});
  push("pad", "1-D, before only",
       [](const std::vector<Tensor>& in) { return pad(in[0], {{3, 0}}); }, {random_f64({4}, 27)});
  push("pad", "all widths zero, of a transposed view",
       [](const std::vector<Tensor>& in) { return pad(in[0].mT(), {{0, 0}, {0, 0}}); }, {random_f64({3, 4}, 28)});

  // ---- flip: g flipped back. ----
  push("flip", "one axis",
       [](const std::vector<Tensor>& in) { return flip(in[0], {0}); }, {random_f64({3, 4}, 29)});
  push("flip", "axes 0 and -1 of rank 3, squared",
       [](const std::vector<Tensor>& in) { return square(flip(in[0], {0, -1})); }, {random_f64({2, 3, 4}, 30)});
  push("flip", "every axis of a transposed view",
       [](const std::vector<Tensor>& in) { return flip(in[0].mT(), {0, 1}); }, {random_f64({3, 5}, 31)});

  // ---- cumsum: dx_s = sum_{t >= s} g_t (forward), sum_{t <= s} g_t (reverse). ----
  push("cumsum", "forward, axis 0",
       [](const std::vector<Tensor>& in) { return cumsum(in[0], 0); }, {random_f64({4, 3}, 32)});
  push("cumsum", "reverse, axis -1, squared",
       [](const std::vector<Tensor>& in) { return square(cumsum(in[0], -1, true)); }, {random_f64({3, 5}, 33)});
  push("cumsum", "forward on axis 1 then reverse on axis 2, rank 3",
       [](const std::vector<Tensor>& in) { return cumsum(cumsum(in[0], 1), 2, true); }, {random_f64({2, 3, 4}, 34)});
  push("cumsum", "1-D reverse of a stepped view",
       [](const std::vector<Tensor>& in) { return cumsum(in[0].slice(0, 1, 9, 2), 0, true); }, {random_f64({9}, 35)});

  // ---- discounted_cumsum: y_t = sum_{s >= t} d^(s-t) x_s, dx_s = sum_{t <= s} d^(s-t) g_t. ----
  push("discounted_cumsum", "discount 0.9, axis -1",
       [](const std::vector<Tensor>& in) { return discounted_cumsum(in[0], -1, 0.9); }, {random_f64({3, 5}, 36)});
  push("discounted_cumsum", "discount 0 (y = x), axis 0, squared",
       [](const std::vector<Tensor>& in) { return square(discounted_cumsum(in[0], 0, 0.0)); }, {random_f64({4, 3}, 37)});
  push("discounted_cumsum", "discount 1 (a reverse cumsum), middle axis of rank 3",
       [](const std::vector<Tensor>& in) { return discounted_cumsum(in[0], 1, 1.0); }, {random_f64({2, 4, 3}, 38)});
  push("discounted_cumsum", "discount 0.9, axis 0 of a transposed view",
       [](const std::vector<Tensor>& in) { return discounted_cumsum(in[0].mT(), 0, 0.9); }, {random_f64({3, 6}, 39)});
  return cases;
}

TEST_CASE("autograd: split parts nothing uses get a zero gradient") {
  const Tensor x = random_tensor({4, 3}, DType::float64, 40);
  GradientTape tape;
  const Tensor w = tape.watch(x);
  const std::vector<Tensor> parts = split(w, 2, 0);
  // The loss uses x directly but none of the parts: split's backward must not run into x's
  // gradient, and the parts themselves, as sources, get zeros of their shape.
  const Tensor loss = sum(mul(w, 2.0));
  const std::vector<Tensor> g = tape.gradient(loss, {w, parts[0], parts[1]});
  check_close(g[0], x.shape(), std::vector<double>(12, 2.0), default_tolerance(DType::float64), "x");
  for (int i = 1; i < 3; ++i) {
    CHECK(g[i].dtype() == DType::float64);
    check_close(g[i], Shape{2, 3}, std::vector<double>(6, 0.0), {0.0, 0.0}, "unused part");
  }
}

TEST_CASE("autograd: a loss that depends on no split part gives x a zero gradient") {
  const Tensor x = random_tensor({2, 6}, DType::float64, 41);
  GradientTape tape;
  const Tensor w = tape.watch(x);
  const std::vector<Tensor> parts = split(w, {2, 4}, 1);
  const Tensor other = tape.watch(random_tensor({3}, DType::float64, 42));
  const std::vector<Tensor> g = tape.gradient(sum(square(other)), {w});
  check_close(g[0], x.shape(), std::vector<double>(12, 0.0), {0.0, 0.0});
}
