// The backwards that run a one-pass host loop on the CPU (tanh, exp, relu, ...) build the same
// derivative from ops on other devices. DeviceFormulasOnCpu makes them take that ops path on the
// CPU, so every case of the gradient table checks the device formulas here, without a GPU,
// against the host loops (float64; only rounding may differ).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <ctrax/autograd/derivatives.h>
#include <ctrax/autograd/grad.h>
#include <ctrax/tensor/ops.h>

#include "autograd/gradient_cases.h"
#include "test_util.h"

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

// float32 softplus runs its backward on the vectorised kernel when the saved input is contiguous
// and on the host loop otherwise (both through kernels::softplus_derivative): the same bits either
// way, and sigmoid(x) times the cotangent to within the kernel's few ulps of the float64 value.
TEST_CASE("autograd: float32 softplus's gradient is the same on the kernel and the host loop, and matches sigmoid") {
  const Tensor x = test::random_tensor(Shape{37, 19}, DType::float32, 41, -30.0, 30.0);
  const Tensor w = test::random_tensor(Shape{37, 19}, DType::float32, 42, -2.0, 2.0);
  const auto loss = [&w](const Tensor& t) { return sum(mul(softplus(t), w)); };
  const Tensor on_kernel = grad(loss)(x);
  const Tensor strided = test::non_contiguous(x);
  REQUIRE_FALSE(strided.is_contiguous());
  const Tensor on_host_loop = grad(loss)(strided);
  CHECK(test::bitwise_equal(on_kernel.contiguous(), on_host_loop.contiguous()));
  const std::vector<double> xs = x.to_vector<double>(), ws = w.to_vector<double>();
  const std::vector<double> got = on_kernel.to_vector<double>();
  double worst = 0.0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double want = ws[i] / (1.0 + std::exp(-xs[i]));
    worst = std::max(worst, std::fabs(got[i] - want) / std::max(std::fabs(want), 1e-30));
  }
  CHECK(worst < 4e-7);  // a few float32 ulps
}
