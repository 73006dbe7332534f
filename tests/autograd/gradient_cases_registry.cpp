// The gradient case table's storage, in a file of its own so that both test binaries (the CPU
// suite's test_op_gradients.cpp and the GPU suite's tests/cuda/test_cuda_gradients.cpp) link it.
#include "gradient_cases.h"

namespace ctrax::test {

std::vector<GradientCase>& gradient_case_registry() {
  static std::vector<GradientCase> cases;
  return cases;
}

}  // namespace ctrax::test
