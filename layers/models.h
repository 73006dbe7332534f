// Model builders (Trax's models/mlp.py and models/rl.py).
//
//   MLP(widths, activation, out_activation): Dense(w) and an activation for each width; the last
//   Dense has the activation only if out_activation. Unlike Trax's MLP it does not flatten its input
//   (it acts on the last axis, so an RL body can take [batch, time, features]); put Flatten() in
//   front where that is wanted.
//
// The RL heads (Trax's models/rl.py). A policy's head gives the inputs of its action distribution
// (logits for Categorical, means and stds for Gaussian); the distributions themselves live in rl/
// (one layer up), so here a head is sized by n_distribution_inputs, which a distribution reports.
//   Policy(n, body, normalizer, head_init_range): Serial(normalizer, body, Dense(n)).
//   Value(body, normalizer, head_init_range): Serial(normalizer, body, Dense(1), drop the last axis).
//   PolicyAndValue(n, body, normalizer, head_init_range, joint): joint, one body with two heads,
//   Serial(normalizer, body, Branch(Dense(n), value head)); separate, two bodies
//   Branch(Policy, Value). Outputs (distribution inputs, values).
// body and normalizer are factories (a fresh instance per use; joint=false builds two bodies);
// null means none. head_init_range > 0 draws the heads' kernels uniformly in
// [-range, range] (Trax's head_init_range), else Glorot uniform.
#pragma once

#include <functional>
#include <vector>

#include "layer.h"

namespace ctrax {

using LayerFactory = std::function<LayerPtr()>;

LayerPtr MLP(const std::vector<int64_t>& widths, LayerFactory activation = nullptr, bool out_activation = false);

LayerPtr Policy(int64_t n_distribution_inputs, LayerFactory body = nullptr, LayerFactory normalizer = nullptr,
                double head_init_range = 0.0);
LayerPtr Value(LayerFactory body = nullptr, LayerFactory normalizer = nullptr, double head_init_range = 0.0);
LayerPtr PolicyAndValue(int64_t n_distribution_inputs, LayerFactory body = nullptr, LayerFactory normalizer = nullptr,
                        double head_init_range = 0.0, bool joint = true);

}  // namespace ctrax
