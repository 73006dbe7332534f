// Model builders (Trax's models/mlp.py and models/rl.py): MLP and the RL heads. Not the action
// distributions (rl/learning/distributions.h) or sequence models (none built). Design and the
// ActionValue construction: layers/README.md, "Models and the RL heads".
//
// MLP(widths, activation, options): Dense(w) and the activation per width (after the last Dense
// only with out_activation); acts on the last axis and does not flatten (unlike Trax's).
// Heads are sized by n_distribution_inputs (Distribution::n_inputs(); for a distribution with
// state-independent inputs use the forms in rl/agents/policy_models.h, which append them): Policy is
// Serial(normalizer, body, Dense(n)); Value the same with Dense(1) and the last axis dropped;
// PolicyAndValue outputs (distribution inputs, values), with one body and two heads when joint,
// else Branch(Policy, Value). ActionValue is a Q-network: (observations [B, L, ...], actions
// [B, L] ids or [B, L, d] floats) -> Q [B, L], Trax's additive action injection; mis-shaped
// actions and ids outside [0, vocab_size) throw ctrax::Error.
// body and normalizer are factories (a fresh instance per use); null means none.
// head_init_range > 0 draws the heads' kernels uniformly in [-range, range], else Glorot uniform.
#pragma once

#include <functional>
#include <vector>

#include "initializers.h"
#include "layer.h"

namespace ctrax {

using LayerFactory = std::function<LayerPtr()>;

// Options are named at the call site, e.g. MLP({64, 64}, Tanh, {.out_activation = true}) or with
// orthogonal weights {.out_activation = true, .kernel_init = orthogonal(std::sqrt(2.0)),
// .bias_init = constant_init(0)}.
struct MLPOptions {
  bool out_activation = false;  // the activation after the last Dense too
  Initializer kernel_init = glorot_uniform();
  Initializer bias_init = normal_init(1e-6);
};
LayerPtr MLP(const std::vector<int64_t>& widths, LayerFactory activation = nullptr, const MLPOptions& options = {});

LayerPtr Policy(int64_t n_distribution_inputs, LayerFactory body = nullptr, LayerFactory normalizer = nullptr,
                double head_init_range = 0.0);
LayerPtr Value(LayerFactory body = nullptr, LayerFactory normalizer = nullptr, double head_init_range = 0.0);
// vocab_size >= 1 (discrete only; ignored for continuous actions), injection_dim >= 1,
// injection_layers >= 1; else ctrax::Error.
LayerPtr ActionValue(LayerFactory body, bool is_discrete, int64_t vocab_size, int64_t injection_dim = 64,
                     LayerFactory normalizer = nullptr, double head_init_range = 0.0, int64_t injection_layers = 1);
LayerPtr PolicyAndValue(int64_t n_distribution_inputs, LayerFactory body = nullptr, LayerFactory normalizer = nullptr,
                        double head_init_range = 0.0, bool joint = true);
// Heads with the given kernel initializers and zero biases, e.g. orthogonal(0.01) for a policy
// and orthogonal(1) for a value (the initialisation of SB3's and CleanRL's PPO). The joint
// version has one body.
LayerPtr Policy(int64_t n_distribution_inputs, LayerFactory body, LayerFactory normalizer,
                const Initializer& head_init);
LayerPtr Value(LayerFactory body, LayerFactory normalizer, const Initializer& head_init);
LayerPtr PolicyAndValue(int64_t n_distribution_inputs, LayerFactory body, LayerFactory normalizer,
                        const Initializer& policy_head_init, const Initializer& value_head_init);

}  // namespace ctrax
