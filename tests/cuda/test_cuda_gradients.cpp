// Every gradient case of the CPU suite (tests/autograd/gradient_cases_*.cpp, one table for both
// devices) run on the GPU against the CPU: the forward value and the vector-Jacobian product
// with the same random cotangent must agree.
//
// Why compare against the CPU's autodiff rather than gradcheck's central differences: the CPU
// suite already checks the CPU's gradients against central differences, so equality with the
// CPU proves the GPU's; and it tolerates far less (both sides are float64, so only the order of
// floating-point additions and the last ulp of exp/log differ), where central differences
// would hide a wrong but small term.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <ctrax/autograd/tape.h>
#include <ctrax/base/op_list.h>
#include <ctrax/tensor/ops.h>
#include <ctrax/tensor/random.h>

#include "autograd/gradient_cases.h"

using namespace ctrax;

namespace {

const Device kGpu = Device::cuda(0);

struct VjpResult {
  Tensor value;                  // f(inputs), on the CPU
  std::vector<Tensor> gradients;  // one per float input, on the CPU, float64
};

// f(xs) and the gradients of sum(cotangent * f(xs)) with respect to the float inputs, computed
// on the inputs' device and returned on the CPU. The float inputs are float64, as gradcheck
// makes them.
VjpResult vjp(const test::GradientCase& c, const std::vector<Tensor>& xs, const Tensor& cotangent) {
  const std::vector<Tensor> out = test::value_and_vjp(c, xs, cotangent);
  VjpResult r;
  r.value = out[0].to(Device::cpu());
  for (size_t i = 1; i < out.size(); ++i) r.gradients.push_back(out[i].to(Device::cpu()).to(DType::float64));
  return r;
}

// The first element where got and want differ by more than atol + rtol |want| (NaN matches only
// NaN), described; empty when they agree.
std::string compare(const Tensor& got, const Tensor& want, double rtol, double atol) {
  std::ostringstream out;
  if (got.shape() != want.shape() || got.dtype() != want.dtype()) {
    out << "GPU gives " << got.dtype() << got.shape() << ", CPU " << want.dtype() << want.shape();
    return out.str();
  }
  const std::vector<double> g = got.to(DType::float64).to_vector<double>();
  const std::vector<double> w = want.to(DType::float64).to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) {
    const bool both_nan = std::isnan(g[i]) && std::isnan(w[i]);
    if (both_nan || g[i] == w[i]) continue;
    if (!(std::abs(g[i] - w[i]) <= atol + rtol * std::abs(w[i]))) {
      out << "flat element " << i << ": GPU " << g[i] << ", CPU " << w[i];
      return out.str();
    }
  }
  return {};
}

}  // namespace

TEST_CASE("cuda gradients: every gradient case of the CPU suite agrees with the CPU on the GPU") {
  const std::vector<test::GradientCase>& cases = test::gradient_case_registry();
  REQUIRE(!cases.empty());
  std::map<std::string, int> passed_per_op;
  for (const test::GradientCase& c : cases) {
    INFO("op " << c.op << " (" << c.label << ")");
    std::vector<Tensor> cpu_inputs, gpu_inputs;
    for (const Tensor& x : c.inputs) {
      cpu_inputs.push_back(is_floating(x.dtype()) ? x.to(DType::float64).clone() : x);
      gpu_inputs.push_back(cpu_inputs.back().to(kGpu));
    }
    try {
      // The cotangent, as gradcheck draws it: standard normal of the output's shape.
      Tensor cotangent;
      {
        NoGradScope no_grad;
        cotangent = normal(Key(c.options.seed), c.f(cpu_inputs).shape(), DType::float64);
      }
      const VjpResult want = vjp(c, cpu_inputs, cotangent);
      const VjpResult got = vjp(c, gpu_inputs, cotangent);
      // float64 throughout: the devices differ only by summation order and the last ulp of
      // transcendental functions. Cases that round through float32 inside f keep float32's
      // relative precision.
      const bool through_float32 = c.options.eps > 1e-3 || want.value.dtype() == DType::float32;
      const double rtol = through_float32 ? 1e-5 : 1e-9;
      const double atol = through_float32 ? 1e-6 : 1e-11;
      const std::string value_error = compare(got.value, want.value, rtol, atol);
      INFO("value: " << value_error);
      CHECK(value_error.empty());
      REQUIRE(got.gradients.size() == want.gradients.size());
      bool all_ok = value_error.empty();
      for (size_t i = 0; i < want.gradients.size(); ++i) {
        const std::string error = compare(got.gradients[i], want.gradients[i], rtol, atol);
        INFO("gradient of float input " << i << ": " << error);
        CHECK(error.empty());
        all_ok = all_ok && error.empty();
      }
      if (all_ok) ++passed_per_op[c.op];
    } catch (const std::exception& e) {  // one broken case must not hide the later ones
      FAIL_CHECK("threw: " << std::string(e.what()));
    }
  }
  // Driven by the op table: every differentiable op has at least one case that passed on the GPU.
#define CTRAX_REQUIRE_GPU_GRADIENT(name, differentiable, result)                    \
  if (differentiable) {                                                             \
    INFO("differentiable op with no gradient case passing on the GPU: " << #name); \
    CHECK(passed_per_op[#name] > 0);                                                \
  }
  CTRAX_FOR_EACH_OP(CTRAX_REQUIRE_GPU_GRADIENT)
#undef CTRAX_REQUIRE_GPU_GRADIENT
}
