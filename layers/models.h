// Model builders (Trax's models/mlp.py and models/rl.py).
//
// What it is not for: the action distributions (rl/distributions.h) or sequence models
// (Trax's Transformer and LSTM models are not built).
//
//   MLP(widths, activation, options): Dense(w) and an activation for each width; the last
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
//   ActionValue(body, is_discrete, vocab_size, injection_dim, normalizer, head_init_range,
//   injection_layers): a Q-network, Trax's Value(inject_actions=True, is_discrete, vocab_size,
//   inject_actions_dim, inject_actions_n_layers) with additive injection (Trax's default;
//   multiplicative injection is not built). Inputs (observations [B, L, ...], actions), output
//   Q [B, L]:
//     s = Dense(injection_dim)(body(normalizer(observations)))            [B, L, dim]
//     a = Embedding(vocab_size, injection_dim)(actions)  discrete: actions [B, L] integer ids
//       = Dense(injection_dim)(actions)                  continuous: actions [B, L, d] float
//     h = MLP(injection_layers x injection_dim, Relu, out_activation)(s + a)
//     Q = Dense(1)(h) with the last axis dropped
//   The nonlinearity after the sum is what lets the action's effect depend on the state: with
//   no layer there, Q(s, a) = f(s) + g(a) and every state would rank the actions alike, so
//   injection_layers >= 1. As a Serial it is (normalizer, body, Parallel(Dense, encoder),
//   InjectActions, MLP, head): the observation layers come first, so n_shared_layers (rl/
//   actor_critic.h) can share them with a Policy. s and a must have the same shape (they are
//   added without broadcasting): actions shaped otherwise throw ctrax::Error naming both. An
//   action id outside [0, vocab_size) throws (Embedding's check; Trax would clip it).
// body and normalizer are factories (a fresh instance per use; joint=false builds two bodies);
// null means none. head_init_range > 0 draws the heads' kernels uniformly in
// [-range, range] (Trax's head_init_range), else Glorot uniform.
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
