// Seeing a model: its tree of layers with shapes and parameter counts.
//
//   std::cout << summary(*model, {{Shape{64, 4}, DType::float32}});
//
//   Serial                    (float32[64, 4]) -> (float32[64, 2])     4610
//     Dense_64[0]             (float32[64, 4]) -> (float32[64, 64])     320
//     Relu[1]                 (float32[64, 64]) -> (float32[64, 64])      0
//     ...
//   total parameters: 4610
//
// Each line is one layer as the forward met it (a shared instance appears at every place it is
// used, its parameters counted once); the label is the layer's name and its index in its parent.
// The summary runs init (with a fixed key) and one forward pass on zeros, recording nothing; the
// model's own weights are left as they were. operator<< prints the structure alone.
//
// What it is not for: profiling (no timings or memory figures) or saving a model (it is text
// for people; checkpoints are in io/).
#pragma once

#include <ostream>
#include <string>

#include "layer.h"

namespace ctrax {

std::string summary(Layer& model, const Signature& input);
std::ostream& operator<<(std::ostream& out, const Layer& layer);

}  // namespace ctrax
