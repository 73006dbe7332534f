// Every case of the gradient case table (tests/autograd/gradient_cases_*.cpp) through compile
// (tensor/compile.h): the function "value and vector-Jacobian product" is recorded once, then
// replayed on other inputs of the same signature, and every result must equal eager's bit for
// bit (the same kernels run in the same order). Cases whose ops read values on the host run
// eagerly, which must give eager's results too; the plain arithmetic, matmul, reductions and
// softmax families must be planned.
#include <doctest/doctest.h>

#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <ctrax/tensor/compile.h>
#include <ctrax/tensor/ops.h>

#include "autograd/gradient_cases.h"

using namespace ctrax;

namespace {

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.defined() != b.defined()) return false;
  if (!a.defined()) return true;
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  const Tensor ac = a.contiguous(), bc = b.contiguous();
  return std::memcmp(ac.raw_data(), bc.raw_data(), static_cast<size_t>(ac.numel()) * ac.element_size()) == 0;
}

// The same inputs, float ones scaled by 0.9 (inside every op's domain that the case's values are).
std::vector<Tensor> other_inputs(const std::vector<Tensor>& xs) {
  std::vector<Tensor> out;
  for (const Tensor& x : xs) out.push_back(is_floating(x.dtype()) ? mul(x, 0.9) : x);
  return out;
}

}  // namespace

TEST_CASE("compile: every gradient case replays eager's value and gradients bit for bit") {
  CompileLogSink quiet = set_compile_log_sink(nullptr);
  std::map<std::string, int> planned, eager;
  int checked = 0;
  for (const test::GradientCase& c : test::gradient_case_registry()) {
    CAPTURE(c.op);
    CAPTURE(c.label);
    const Tensor y = c.f(c.inputs);
    const Tensor cotangent = test::random_tensor(y.shape(), DType::float64, 99);
    CompiledFunction compiled([&](const std::vector<Tensor>& in) { return test::value_and_vjp(c, in, cotangent); });
    for (const std::vector<Tensor>& in : {c.inputs, other_inputs(c.inputs), c.inputs}) {
      const std::vector<Tensor> want = test::value_and_vjp(c, in, cotangent);
      const std::vector<Tensor>& got = compiled(in);
      REQUIRE(got.size() == want.size());
      for (size_t i = 0; i < got.size(); ++i) {
        CAPTURE(i);
        CHECK(same_bits(got[i], want[i]));
      }
    }
    ++checked;
    (compiled.stats().replays == 2 ? planned : eager)[c.op]++;
  }
  set_compile_log_sink(quiet);
  CHECK(checked > 200);
  // The ops of MLP and RL training steps must be planned (no host reads in them).
  for (const char* op : {"add", "sub", "mul", "div", "neg", "exp", "log", "tanh", "sigmoid", "relu", "square", "sqrt",
                         "matmul", "sum", "mean", "max", "softmax", "log_softmax", "take_along_axis", "reshape",
                         "expand", "concatenate", "where", "maximum", "minimum", "clip"}) {
    CAPTURE(std::string(op));
    CHECK(planned.count(op) == 1);
  }
  std::ostringstream summary;
  for (const auto& [op, n] : eager) summary << op << " ";
  MESSAGE("cases run eagerly (their ops read values on the host): ", summary.str());
}
