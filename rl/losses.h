// The losses and metrics of the actor-critic trainers, as weightless layers (Trax's
// rl/actor_critic.py, rl/actor_critic_joint.py and rl/rl_layers.py).
//
// What it is for: a trainer stacks one of these on its model's outputs and the batch, and
// value_and_grad differentiates the result; everything is built from differentiable tensor ops,
// so the gradient reaches the model outputs (dist_inputs, and values for the joint losses)
// through Distribution::log_prob and entropy. The metric layers score the same batches for
// logging. What it is not for: computing advantages from trajectories (rl/advantages.h; the
// joint losses compute only Trax's one-step advantage inside), or the value network's own loss
// (layers/metrics.h's L2Loss on (values, targets, mask)).
//
// Every layer is weightless, has n_out = 1 and returns a rank-0 tensor of dist_inputs' float
// dtype (values' dtype for ValueExplainedVariance): float32 for float32 models.
//
// ---- Notation ------------------------------------------------------------------------------
//   m        the mask [B, L]: 1 for a real step, 0 for padding (and for a trajectory's final
//            observation, which has no action). Bool, integer or float; values must be finite
//            and >= 0 (fractional values weight the steps). B, L stand for the mask's shape:
//            any rank works, and every per-step input must have exactly that shape.
//   mean_m   the masked mean mean_m(x) = sum(x m) / sum(m). When sum(m) == 0 (a batch of
//            padding only) it is 0 with a zero gradient, not NaN (Trax divides by zero).
//   Var_m    the masked (population) variance Var_m(x) = mean_m((x - mean_m(x))^2).
//   logp     dist->log_prob(dist_inputs, actions)                      [B, L]
//   old_logp dist->log_prob(old_dist_inputs, actions), a constant      [B, L]
//   H        dist->entropy(dist_inputs)                                [B, L]
//   rho      exp(logp - old_logp), the probability ratio of the taken actions.
//
// Padding: values at mask-0 steps never change a result. Before anything is computed, every
// per-step input is replaced by 0 where m == 0 (actions by category 0 / the point 0), so a
// padding entry holding NaN, inf or an out-of-range category id adds nothing to the value and
// exactly 0 to the gradient (a plain x * m would give inf * 0 = NaN).
//
// ---- Separate actor-critic policy losses (A2C, PPO, AWR) -----------------------------------
// Inputs, n_in = 5: (dist_inputs [B, L, D], actions [B, L, event], advantages [B, L],
// old_dist_inputs [B, L, D], mask [B, L]), D = dist->n_inputs(). The advantages come already
// normalised (the trainer does it) and are constants, as are old_dist_inputs.
//   A2CLoss(dist, c)          -mean_m(logp A) - c mean_m(H)
//   PPOLoss(dist, eps, c)     -mean_m(min(rho A, clip(rho, 1 - eps, 1 + eps) A)) - c mean_m(H)
//   AWRLoss(dist, beta, w_max, c)
//                             -mean_m(logp w) - c mean_m(H), w = min(exp(A / beta), w_max),
//                             a constant; w_max = +inf means no clipping.
// Trax averages the entropy over every entry, padding included (jnp.mean(entropy)); ctrax takes
// mean_m(H), so padding does not dilute the entropy bonus.
//
// ---- Joint (one network, two heads) losses (PPOJoint, A2CJoint, AWRJoint) ------------------
// Inputs, n_in = 8, in the order the joint trainers' stack holds them: (dist_inputs [B, L, D],
// values V [B, L], returns R [B, L], dones d [B, L] (bool or numeric, nonzero = done),
// rewards r [B, L], actions [B, L, event], old_log_probs [B, L], mask [B, L]). The batch carries
// the old log-probs themselves (not old dist inputs): rho = exp(logp - old_log_probs).
// Advantage (Trax's): A = where(d, r, R) - where(d, 0, stop_gradient(V)); with
// normalize_advantages, A <- (A - mean_m(A)) / (sqrt(Var_m(A)) + 1e-8). A is a constant, so the
// gradient with respect to V comes from the value term alone.
//   value term                c_v mean_m((R - V)^2)
//   PPOJointLoss(dist, eps, c_v, c_e, norm)
//                             -mean_m(min(rho A, clip(rho, 1 - eps, 1 + eps) A)) + value term
//                             - c_e mean_m(H)
//   A2CJointLoss(dist, c_v, c_e, norm)    -mean_m(logp A) + value term - c_e mean_m(H)
//   AWRJointLoss(dist, beta, w_max, c_v, c_e, norm)
//                             -mean_m(logp min(exp(A / beta), w_max)) + value term - c_e mean_m(H)
// Trax's PPOJoint ignores the mask entirely (plain means, and unmasked statistics for the
// advantage normalisation in all three); ctrax applies the mask to every mean and statistic.
//
// ---- Metrics --------------------------------------------------------------------------------
// Constants to autodiff (computed without recording). On the 5 separate-policy inputs:
//   PolicyEntropy(dist)       mean_m(H)
//   ApproximateKL(dist)       mean_m((logp - old_logp)^2) / 2
//   ClipFraction(dist, eps)   mean_m(|rho - 1| > eps): the share of steps PPO clips
//   LogProbMean(dist)         mean_m(logp)
//   AdvantageMean()           mean_m(A)
//   AdvantageNorm()           sqrt(mean_m(A^2)), the root mean square of the advantages
//   PreferredMove(dist)       mean_m of the distribution's mode, averaged over the event's
//                             elements: the mean argmax category for a Categorical (Trax's
//                             preferred_move; ties go to the lowest id), the mean of the means for
//                             a Gaussian (its first dist input, for a scalar event), the sample at
//                             temperature 0 for any other distribution. A float.
// On the 8 joint inputs, the same with old_log_probs for old_logp and the raw (un-normalised)
// advantage A = where(d, r, R) - where(d, 0, V):
//   JointEntropy, JointApproximateKL, JointClipFraction, JointLogProbMean, JointAdvantageMean,
//   JointAdvantageNorm, JointPreferredMove, and
//   JointValueLoss()          mean_m((R - V)^2) (the value term without its coefficient)
//   ExplainedVariance()       1 - Var_m(R - V) / Var_m(R)
// On the separate value trainer's 3 inputs (values [B, L], targets [B, L], weights = mask [B, L]):
//   ValueExplainedVariance()  1 - Var_m(targets - values) / Var_m(targets)
// Explained variance is computed in float64 and is 0 when Var_m(R) <= 1e-12 mean_m(R^2), i.e.
// the returns are constant up to rounding, or there is no real step. There Trax's
// 1 - Var(R - V) / Var(R) is NaN or -inf (or, after rounding, noise divided by noise): a value
// function cannot explain a constant, and 0 is also what predicting the mean scores.
//
// ---- Errors ---------------------------------------------------------------------------------
// Construction throws ctrax::Error naming the layer for: a null distribution; epsilon outside
// (0, 1); beta not finite or <= 0; w_max NaN or <= 0; a coefficient negative, NaN or inf.
// Applying throws (with the layer's path) for: a per-step input whose shape is not the mask's;
// dist_inputs or old_dist_inputs not [B, L, D]; actions not [B, L, event shape] or of the wrong
// dtype for the distribution; a non-float dist_inputs or values; a mask with a negative, NaN or
// inf entry.
#pragma once

#include <memory>
#include <optional>

#include "../layers/layer.h"
#include "distributions.h"

namespace ctrax {

// Trax's coefficients, written once: the losses' default arguments below and the agents' option
// structs (PPOOptions, AWRJointOptions, ...) both take their defaults from here.
namespace loss_defaults {
inline constexpr double epsilon = 0.2;            // PPO's clip
inline constexpr double entropy_coeff = 0.01;     // A2C, PPO and their joint versions
inline constexpr double awr_beta = 1.0;
inline constexpr double awr_w_max = 20.0;
inline constexpr double awr_entropy_coeff = 0.0;  // AWR's and AWRJoint's
inline constexpr double value_loss_coeff = 0.1;   // the joint losses'
}  // namespace loss_defaults

// ---- Separate policy losses: (dist_inputs, actions, advantages, old_dist_inputs, mask) --------
LayerPtr A2CLoss(DistributionPtr dist, double entropy_coeff = loss_defaults::entropy_coeff);
LayerPtr PPOLoss(DistributionPtr dist, double epsilon = loss_defaults::epsilon,
                 double entropy_coeff = loss_defaults::entropy_coeff);
// The same with a clip range read at every call through a shared handle (the PPO agent anneals
// it: PPOOptions::anneal_epsilon); each call checks it is still in (0, 1).
LayerPtr PPOLoss(DistributionPtr dist, std::shared_ptr<const double> epsilon, double entropy_coeff);
LayerPtr AWRLoss(DistributionPtr dist, double beta = loss_defaults::awr_beta, double w_max = loss_defaults::awr_w_max,
                 double entropy_coeff = loss_defaults::awr_entropy_coeff);

// ---- Joint losses: (dist_inputs, values, returns, dones, rewards, actions, old_log_probs, mask)
// AWRJoint's defaults have no entropy term and no normalisation (Trax's).
LayerPtr PPOJointLoss(DistributionPtr dist, double epsilon = loss_defaults::epsilon,
                      double value_loss_coeff = loss_defaults::value_loss_coeff,
                      double entropy_coeff = loss_defaults::entropy_coeff, bool normalize_advantages = true);
LayerPtr A2CJointLoss(DistributionPtr dist, double value_loss_coeff = loss_defaults::value_loss_coeff,
                      double entropy_coeff = loss_defaults::entropy_coeff, bool normalize_advantages = true);
LayerPtr AWRJointLoss(DistributionPtr dist, double beta = loss_defaults::awr_beta,
                      double w_max = loss_defaults::awr_w_max, double value_loss_coeff = loss_defaults::value_loss_coeff,
                      double entropy_coeff = loss_defaults::awr_entropy_coeff, bool normalize_advantages = false);

// ---- Metrics on the separate policy batch (n_in = 5) ------------------------------------------
LayerPtr PolicyEntropy(DistributionPtr dist);
LayerPtr ApproximateKL(DistributionPtr dist);
LayerPtr ClipFraction(DistributionPtr dist, double epsilon = loss_defaults::epsilon);
LayerPtr ClipFraction(DistributionPtr dist, std::shared_ptr<const double> epsilon);
LayerPtr LogProbMean(DistributionPtr dist);
LayerPtr AdvantageMean();
LayerPtr AdvantageNorm();
LayerPtr PreferredMove(DistributionPtr dist);

// ---- Metrics on the joint batch (n_in = 8) ------------------------------------------------------
LayerPtr JointEntropy(DistributionPtr dist);
LayerPtr JointApproximateKL(DistributionPtr dist);
LayerPtr JointClipFraction(DistributionPtr dist, double epsilon = loss_defaults::epsilon);
LayerPtr JointLogProbMean(DistributionPtr dist);
LayerPtr JointAdvantageMean();
LayerPtr JointAdvantageNorm();
LayerPtr JointPreferredMove(DistributionPtr dist);
LayerPtr JointValueLoss();
LayerPtr ExplainedVariance();

// ---- Metric on the value batch (values, targets, weights), n_in = 3 ------------------------------
LayerPtr ValueExplainedVariance();
// Rollout passes (rl/actor_critic.h): (values [B, L], targets, mask, old values) -> the mean over
// mask-1 steps of (V - G)^2, or with a clip c > 0 of max((V - G)^2, (V_old + clip(V - V_old, -c,
// c) - G)^2) (OpenAI baselines' clipped value loss); and its explained variance of the targets.
LayerPtr RolloutValueLoss(std::optional<double> clip = std::nullopt);
LayerPtr RolloutValueExplainedVariance();

}  // namespace ctrax
