// gradcheck: compares autodiff's gradients with central finite differences in float64.
//
// What it is for: checking a backward (the engine's own, in the tests, or a user's custom
// gradient). For f: inputs -> y, it draws a random cotangent v of y's shape and compares
// the vector-Jacobian product autodiff computes, d sum(v * y) / d x, with
//   (sum(v * f(x + eps e_j)) - sum(v * f(x - eps e_j))) / (2 eps)
// for every element j of every floating input. Floating inputs are converted to float64
// first (integer and bool inputs are passed through and not checked), so the check measures
// the formula, not float32 rounding. Cost: two evaluations of f per input element.
// What it is not for: training or any hot path (that cost), or points at kinks (see below).
//
// f receives contiguous float64 copies of the inputs: to check a backward on non-contiguous
// operands, make the views inside f (x.mT(), x.slice(0, 0, n, 2)), as the engine's own tests do.
//
// Pick inputs away from kinks (relu at 0, ties of max), where finite differences and any
// subgradient disagree.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "../tensor/tensor.h"

namespace ctrax {

struct GradcheckOptions {
  double eps = 1e-6;   // finite-difference step
  double atol = 1e-6;  // |analytic - numeric| <= atol + rtol * |numeric|
  double rtol = 1e-5;
  uint64_t seed = 0;   // for the cotangent
};

struct GradcheckResult {
  bool ok = true;
  double max_abs_error = 0.0;
  double max_rel_error = 0.0;  // |analytic - numeric| / max(|numeric|, 1e-12) where it was worst
  std::string message;         // the first failing element: input, index, analytic, numeric
  explicit operator bool() const { return ok; }
};

using GradcheckFn = std::function<Tensor(const std::vector<Tensor>&)>;

GradcheckResult gradcheck(const GradcheckFn& f, const std::vector<Tensor>& inputs, const GradcheckOptions& options = {});

}  // namespace ctrax
