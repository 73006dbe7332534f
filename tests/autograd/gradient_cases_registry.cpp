// The gradient case table's storage, in a file of its own so that both test binaries (the CPU
// suite's test_op_gradients.cpp and the GPU suite's tests/cuda/test_cuda_gradients.cpp) link it.
#include "gradient_cases.h"

#include <ctrax/autograd/tape.h>

namespace ctrax::test {

std::vector<GradientCase>& gradient_case_registry() {
  static std::vector<GradientCase> cases;
  return cases;
}

std::vector<Tensor> value_and_vjp(const GradientCase& c, const std::vector<Tensor>& xs, const Tensor& cotangent) {
  GradientTape tape;
  std::vector<Tensor> watched = xs, sources;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (!is_floating(xs[i].dtype())) continue;
    watched[i] = tape.watch(xs[i]);
    sources.push_back(watched[i]);
  }
  const Tensor y = c.f(watched);
  std::vector<Tensor> out{y};
  for (const Tensor& g : tape.gradient(y, sources, cotangent.to(y.device()).to(y.dtype()))) out.push_back(g);
  return out;
}

}  // namespace ctrax::test
