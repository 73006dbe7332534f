// custom_gradient: a function whose backward you write yourself.
//
// What it is for: fused ops (softmax cross-entropy, layer norm) whose hand-written backward
// is cheaper or more stable than differentiating their forward op by op, and functions
// whose gradient should deliberately differ from the true one (straight-through estimators,
// gradient clipping inside a graph).
// What it is not for: ops whose ordinary gradient is wanted (every op already has one), or
// higher-order derivatives (the backward runs unrecorded, so its result has no gradient).
//
//   Tensor y = custom_gradient({x, w},
//       [](const std::vector<Tensor>& in) { return fused_forward(in[0], in[1]); },
//       [](const CustomGradContext& c) {   // c.inputs, c.outputs, c.output_grads
//         return std::vector<Tensor>{dx(c), dw(c)};   // one per input; undefined = zero
//       });
//
// The forward runs with recording paused: the ops inside it are not on the tape, and only
// the user's backward is used. The backward runs during gradient(), also unrecorded; it must
// return one gradient per input, each of the input's shape (or one that broadcasts to it:
// it is summed down) and a float dtype (it is cast to the input's). Violations throw
// ctrax::Error. Inputs and outputs are kept alive until the backward has run.
#pragma once

#include <functional>
#include <vector>

#include "../tensor/tensor.h"
#include "tape.h"

namespace ctrax {

using CustomForward = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

std::vector<Tensor> custom_gradient(const std::vector<Tensor>& inputs, const CustomForward& forward,
                                    CustomBackward backward);

// Single-output form.
Tensor custom_gradient(const std::vector<Tensor>& inputs, const std::function<Tensor(const std::vector<Tensor>&)>& forward,
                       CustomBackward backward);

}  // namespace ctrax
