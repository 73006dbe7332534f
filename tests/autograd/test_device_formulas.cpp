// The backwards that run a one-pass host loop on the CPU (tanh, exp, relu, ...) build the same
// derivative from ops on other devices. DeviceFormulasOnCpu makes them take that ops path on the
// CPU, so every case of the gradient table checks the device formulas here, without a GPU,
// against the host loops (float64; only rounding may differ).
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include <ctrax/autograd/derivatives.h>
#include <ctrax/tensor/ops.h>

#include "autograd/gradient_cases.h"

using namespace ctrax;

namespace {

// The gradients alone (test::value_and_vjp without the value).
std::vector<Tensor> vjp(const test::GradientCase& c, const Tensor& cotangent) {
  std::vector<Tensor> out = test::value_and_vjp(c, c.inputs, cotangent);
  out.erase(out.begin());
  return out;
}

}  // namespace

TEST_CASE("autograd: the device formulas of the fused backwards equal the host loops") {
  int compared = 0;
  for (const test::GradientCase& c : test::gradient_case_registry()) {
    CAPTURE(c.op);
    CAPTURE(c.label);
    const Tensor cotangent = test::random_tensor(c.f(c.inputs).shape(), DType::float64, 7);
    const std::vector<Tensor> host = vjp(c, cotangent);
    std::vector<Tensor> device;
    {
      autograd_detail::DeviceFormulasOnCpu on;
      device = vjp(c, cotangent);
    }
    REQUIRE(host.size() == device.size());
    for (size_t i = 0; i < host.size(); ++i) {
      const std::vector<double> h = host[i].to(DType::float64).to_vector<double>();
      const std::vector<double> d = device[i].to(DType::float64).to_vector<double>();
      REQUIRE(h.size() == d.size());
      bool close = true;
      for (size_t k = 0; k < h.size(); ++k) {
        const bool both_nan = std::isnan(h[k]) && std::isnan(d[k]);
        close = close && (both_nan || std::fabs(h[k] - d[k]) <= 1e-12 + 1e-10 * std::fabs(h[k]));
      }
      CHECK(close);
    }
    ++compared;
  }
  CHECK(compared > 200);
}
