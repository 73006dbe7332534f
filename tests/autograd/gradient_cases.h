// The table of gradient checks: one entry per (differentiable op, shape/layout case).
//
// Each file gradient_cases_<family>.cpp adds its entries with CTRAX_GRADIENT_CASES; the single
// test in test_op_gradients.cpp runs every entry through gradcheck (float64 central
// differences against autodiff) and fails when an op that base/op_list.h marks
// differentiable has no entry, so an op added without a gradient check fails the suite.
// tests/cuda/test_cuda_gradients.cpp runs the same table on a GPU against the CPU, so f must
// not mix devices: a constant it captures is moved to its inputs' device (c.to(in[0].device())).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <ctrax/autograd/gradcheck.h>
#include <ctrax/tensor/tensor.h>

#include "test_util.h"

namespace ctrax::test {

struct GradientCase {
  std::string op;                  // the op_list.h name this case covers
  std::string label;               // what is special about it: shapes, broadcasting, layout
  std::function<Tensor(const std::vector<Tensor>&)> f;
  std::vector<Tensor> inputs;      // float64 where differentiated; integer inputs are constants
  GradcheckOptions options = {};
};

std::vector<GradientCase>& gradient_case_registry();

// f(xs) followed by the gradients of sum(cotangent * f(xs)) with respect to the float inputs of
// xs, all on the inputs' device (the cotangent is moved there and cast to f's dtype).
std::vector<Tensor> value_and_vjp(const GradientCase& c, const std::vector<Tensor>& xs, const Tensor& cotangent);

// The inputs of most cases: float64 values uniform in [lo, hi) from a fixed seed.
inline Tensor random_f64(const Shape& shape, uint64_t seed, double lo = -2.0, double hi = 2.0) {
  return random_tensor(shape, DType::float64, seed, lo, hi);
}

// Options for a case that rounds through float32 inside f: f is linear in the rounded value, so
// central differences are exact but for the rounding of x +- eps to float32 (relative 6e-8),
// which a step of 1e-2 keeps below 1e-5.
inline GradcheckOptions through_float32() {
  GradcheckOptions o;
  o.eps = 1e-2;
  o.atol = 1e-4;
  o.rtol = 1e-4;
  return o;
}

struct GradientCaseAdder {
  explicit GradientCaseAdder(std::vector<GradientCase> (*make)()) {
    for (GradientCase& c : make()) gradient_case_registry().push_back(std::move(c));
  }
};

}  // namespace ctrax::test

#define CTRAX_GRADIENT_CASES_CAT2(a, b) a##b
#define CTRAX_GRADIENT_CASES_CAT(a, b) CTRAX_GRADIENT_CASES_CAT2(a, b)
// CTRAX_GRADIENT_CASES(family) { return {GradientCase{...}, ...}; }
#define CTRAX_GRADIENT_CASES(family)                                                                   \
  static std::vector<::ctrax::test::GradientCase> ctrax_gradient_cases_##family();                     \
  static const ::ctrax::test::GradientCaseAdder CTRAX_GRADIENT_CASES_CAT(ctrax_gradient_adder_, family){ \
      &ctrax_gradient_cases_##family};                                                                 \
  static std::vector<::ctrax::test::GradientCase> ctrax_gradient_cases_##family()
