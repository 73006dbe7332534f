// Model builders (Trax's models/mlp.py and models/rl.py).
//
//   MLP(widths, activation, out_activation): Dense(w) and an activation for each width; the last
//   Dense has the activation only if out_activation. Unlike Trax's MLP it does not flatten its input
//   (it acts on the last axis, so an RL body can take [batch, time, features]); put Flatten() in
//   front where that is wanted.
//
// Policy, Value and PolicyAndValue (Trax's RL heads) need the distributions of the RL-substrate
// issue and arrive with it.
#pragma once

#include <functional>
#include <vector>

#include "layer.h"

namespace ctrax {

using LayerFactory = std::function<LayerPtr()>;

LayerPtr MLP(const std::vector<int64_t>& widths, LayerFactory activation = nullptr, bool out_activation = false);

}  // namespace ctrax
