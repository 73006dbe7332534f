// custom_gradient (see custom.h).
#include "custom.h"

#include "../base/error.h"
#include "grad.h"

namespace ctrax {

std::vector<Tensor> custom_gradient(const std::vector<Tensor>& inputs, const CustomForward& forward,
                                    CustomBackward backward) {
  CTRAX_REQUIRE(forward != nullptr && backward != nullptr, "custom_gradient: forward and backward must be callable");
  for (size_t i = 0; i < inputs.size(); ++i)
    CTRAX_REQUIRE(inputs[i].defined(), "custom_gradient: input ", i, " is undefined");
  std::vector<Tensor> outputs;
  {
    detail::RecordingPause pause;
    std::vector<Tensor> constants = inputs;
    for (Tensor& t : constants) t = stop_gradient(t);
    outputs = forward(constants);
  }
  CTRAX_REQUIRE(!outputs.empty(), "custom_gradient: the forward returned no outputs");
  for (size_t j = 0; j < outputs.size(); ++j) {
    CTRAX_REQUIRE(outputs[j].defined(), "custom_gradient: forward output ", j, " is undefined");
    outputs[j] = stop_gradient(outputs[j]);  // fresh handles: the tape marks them below
  }
  if (GradientTape* tape = GradientTape::current()) {
    std::vector<const Tensor*> in;
    in.reserve(inputs.size());
    for (const Tensor& t : inputs) in.push_back(&t);
    tape->record_custom(in, outputs, std::move(backward));
  }
  return outputs;
}

Tensor custom_gradient(const std::vector<Tensor>& inputs, const std::function<Tensor(const std::vector<Tensor>&)>& forward,
                       CustomBackward backward) {
  CTRAX_REQUIRE(forward != nullptr, "custom_gradient: forward must be callable");
  return custom_gradient(
      inputs, [&forward](const std::vector<Tensor>& in) { return std::vector<Tensor>{forward(in)}; },
      std::move(backward))[0];
}

}  // namespace ctrax
