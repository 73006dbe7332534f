// WithCustomBackward: a layer whose gradient is written by hand (Trax's has_backward/backward).
//
// The wrapped layer's forward runs as usual (unrecorded); during backprop the user's function
// receives the inputs, the weights, the outputs and the outputs' gradients, and returns the
// gradients of the inputs and of the weights (a Tree of the weights' structure; undefined leaves
// and undefined input gradients mean zero). For fused layers whose hand-written backward is
// cheaper or more stable, and for deliberate estimators (straight-through).
// What it is not for: a function of tensors without weights (custom_gradient, autograd/custom.h
// is simpler), or layers whose true gradient autodiff already gives.
#pragma once

#include <functional>

#include "layer.h"

namespace ctrax {

struct LayerGradContext {
  const Stack& inputs;
  const Tree& weights;
  const Stack& outputs;
  const Stack& output_grads;  // zeros where an output was not used
};
struct LayerGrads {
  Stack inputs;  // one per input
  Tree weights;  // the weights' structure
};
using LayerBackward = std::function<LayerGrads(const LayerGradContext&)>;

LayerPtr WithCustomBackward(LayerPtr layer, LayerBackward backward);

}  // namespace ctrax
