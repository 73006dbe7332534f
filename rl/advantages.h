// Advantage estimators (Trax's rl/advantages.py) and discounted returns.
//
// What it is for: turning a batch of trajectory slices (rl/trajectory.h's TimeStepBatch) and a
// value network's estimates into the advantages A_t = G_t - V_t that the policy losses weight
// log-probabilities with, and the targets G_t the value loss regresses to. What it is not for:
// gradients. The results are constants for the losses (Trax computes them in NumPy outside the
// graph); the functions read plain arrays in double and return fresh float32 tensors.
//
// Inputs, all [B, L] (any real or bool dtype; nonzero = set for the flags):
//   rewards r_t, returns R_t (rl/trajectory.h; only monte_carlo reads them), values V_t,
//   dones d_t       the episode terminated after step t: nothing after it is bootstrapped;
//   mask m_t        1 for a step (an action was taken), 0 for an entry that is only an
//                   observation: the final observation of a truncated or cut piece, or padding.
//                   Undefined: all 1 (Trax's estimators take no mask);
//   discount_mask   gamma_t = gamma and lambda_t = lambda where set, else 1 (Trax's
//                   mask_discount). Undefined: all set.
// Output: [B, L - margin] float32, the first L - margin entries (0 <= margin < L): the last
// margin entries only serve as look-ahead.
//
// Gymnasium's semantics. A terminated step does not bootstrap (d_t = 1: G_t = r_t). A truncated
// or cut piece is laid out with its final observation as a mask-0 entry right after its last
// step, so its last step bootstraps from that entry's value: G_t = r_t + gamma_t V_{t+1}. A
// mask-0 entry itself has no action: its return is its value (G_t = V_t, A_t = 0), and nothing
// before it looks past it. So rows may hold several episodes in sequence, each followed by its
// final observation unless it terminated. The last column has nothing after it: G = r there if
// it is a terminated step, else G = V (A = 0); that is why margin >= 1 is needed for
// advantages at the ends of slices.
//
// Per row, for t < L, with "next" meaning entry t + 1:
//   monte_carlo   A_t = R_t - V_t, with R_t = r_t and V_t = 0 at terminated steps (Trax's
//                 convention: at a terminal step A_t = r_t); 0 at mask-0 entries.
//   td_k          k = margin >= 1. G_t = sum_{j<n} (prod_{i<j} gamma_{t+i}) r_{t+j}
//                 + (prod_{i<n} gamma_{t+i}) V_{t+n} where n <= k stops early at a terminated
//                 step (no V term) or before a mask-0 entry (whose V is the bootstrap);
//                 A_t = G_t - V_t. (Trax ignores dones after step t inside the window.)
//   td_lambda     G_t = r_t + gamma_t ((1 - lambda_t) V_{t+1} + lambda_t G_{t+1}) for a
//                 non-terminated step; A_t = G_t - V_t.
//   gae           delta_t = r_t + gamma_t V_{t+1} - V_t; A_t = delta_t + gamma_t lambda_t A_{t+1}
//                 (Schulman et al. 2015); A_t = r_t - V_t at a terminated step.
// td_lambda and gae give the same advantages (A = G - V satisfies the gae recursion); both are
// kept, as in Trax. Without dones inside td_k's windows and with an all-ones mask, every
// estimator equals Trax's on the first L - margin entries, except at a terminated step in the
// last column, where Trax's td_lambda and gae give 0 (ctrax: r - V).
#pragma once

#include <cstdint>
#include <functional>

#include "../tensor/tensor.h"

namespace ctrax {

struct AdvantageInputs {
  Tensor rewards;        // [B, L]
  Tensor returns;        // [B, L]; read by monte_carlo only (may be undefined otherwise)
  Tensor values;         // [B, L]
  Tensor dones;          // [B, L]
  Tensor mask;           // [B, L] or undefined (all 1)
  Tensor discount_mask;  // [B, L] or undefined (all set)
};

// gamma in [0, 1]; lambda in [0, 1]; margin as above. ctrax::Error for shapes that differ or
// are not [B, L], undefined required inputs, or parameters out of range.
Tensor monte_carlo_advantages(const AdvantageInputs& in, double gamma, int64_t margin);
Tensor td_k_advantages(const AdvantageInputs& in, double gamma, int64_t margin);
Tensor td_lambda_advantages(const AdvantageInputs& in, double gamma, int64_t margin, double lambda = 0.95);
Tensor gae_advantages(const AdvantageInputs& in, double gamma, int64_t margin, double lambda = 0.95);

// An estimator with its own parameters bound, as the trainers take one (Trax passes
// `advantage_estimator(gamma, margin)` the same way): (inputs, gamma, margin) -> [B, L - margin].
using AdvantageEstimator = std::function<Tensor(const AdvantageInputs& in, double gamma, int64_t margin)>;
AdvantageEstimator monte_carlo();
AdvantageEstimator td_k();
AdvantageEstimator td_lambda(double lambda = 0.95);
AdvantageEstimator gae(double lambda = 0.95);

// R_t = r_t + gamma_t (1 - d_t) R_{t+1} along the last axis of rewards [..., T], R past the end
// = 0, gamma_t as above (Trax's discounted_returns(rewards, mask_discount(gamma, mask))).
// discount_mask and dones: the rewards' shape, or undefined (all set / none). float32.
Tensor discounted_returns(const Tensor& rewards, double gamma, const Tensor& discount_mask = Tensor(),
                          const Tensor& dones = Tensor());

}  // namespace ctrax
