// Advantage estimators (Trax's rl/advantages.py) and discounted returns: from a batch of slices
// (rl/learning/trajectory.h) and a value network's estimates, the advantages A_t = G_t - V_t the
// policy losses weight log-probabilities with, and the targets G_t the value loss regresses to.
// Constants, not gradients: read in double, returned as fresh float32 tensors.
// Formulas, Gymnasium's bootstrapping rules and differences from Trax: docs/rl.md, "Advantages".
//
// Inputs, all [B, L], any real or bool dtype (nonzero = set for the flags): dones d_t (terminated
// after step t: no bootstrap past it); mask m_t (1 for a step, 0 for an entry that is only an
// observation: the final observation of a truncated or cut piece, or padding; undefined = all 1);
// discount_mask (gamma and lambda apply where set, else 1; undefined = all set).
// Output: [B, L - margin] float32, 0 <= margin < L; the last margin entries are look-ahead only,
// and advantages at the end of a slice need margin >= 1. A mask-0 entry gets A = 0.
#pragma once

#include <cstdint>
#include <functional>

#include "../../tensor/tensor.h"

namespace ctrax {

struct AdvantageInputs {
  Tensor rewards;        // [B, L]
  Tensor returns;        // [B, L]; read by monte_carlo only (may be undefined otherwise)
  Tensor values;         // [B, L]
  Tensor dones;          // [B, L]
  Tensor mask;           // [B, L] or undefined (all 1)
  Tensor discount_mask;  // [B, L] or undefined (all set)
};

// monte_carlo: R - V (R = r, V = 0 at terminated steps); td_k: k = margin steps of rewards then V;
// td_lambda: lambda-returns; gae: Schulman et al. 2015 (the same advantages as td_lambda).
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
