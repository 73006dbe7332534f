// The actor-critic trainers' losses and metrics as weightless layers (Trax's rl/actor_critic.py,
// rl/actor_critic_joint.py, rl/rl_layers.py). Built from differentiable ops, so value_and_grad
// reaches the model outputs through Distribution::log_prob and entropy; metrics are constants.
// Formulas, padding semantics and differences from Trax: docs/rl.md, "Losses and metrics".
//
// Contract: every layer has n_out = 1 and returns a rank-0 tensor of dist_inputs' float dtype
// (values' for ValueExplainedVariance). The mask m [B, L] (bool, integer or float; finite, >= 0;
// any rank) fixes the per-step shape every other per-step input must have; dist_inputs are
// [B, L, D], D = dist->n_inputs(), actions [B, L, event shape]. Entries with m == 0 never change
// a result (NaN and out-of-range ids there included); sum(m) == 0 gives 0, not NaN.
// Construction throws ctrax::Error naming the layer for a null distribution, epsilon outside
// (0, 1), beta not finite or <= 0, w_max NaN or <= 0, a coefficient negative, NaN or inf.
// Applying throws (with the layer's path) for a per-step shape other than the mask's, ill-shaped
// dist_inputs or actions, actions of the wrong dtype, non-float dist_inputs or values, or a mask
// entry that is negative, NaN or inf.
#pragma once

#include <memory>
#include <optional>

#include "../../layers/layer.h"
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

// Whether a loss's batches may hold padding. `masked`: the mask as described above (Trax's
// slice batches). `none`: every step is real (the rollout passes' minibatches, SB3's layout):
// the mask must be all ones, which is checked (ctrax::Error otherwise), and the zeroing and the
// masked sums are skipped; on an all-ones mask the value and the gradients are `masked`'s bit for
// bit, in fewer kernels.
enum class BatchPadding { masked, none };

// ---- Separate policy losses: (dist_inputs, actions, advantages, old_dist_inputs, mask) --------
// A2C: -mean_m(logp A) - c mean_m(H); PPO: Trax's clipped surrogate; AWR: weights
// min(exp(A / beta), w_max), w_max = +inf for no clip. Advantages come normalised (constants).
LayerPtr A2CLoss(DistributionPtr dist, double entropy_coeff = loss_defaults::entropy_coeff,
                 BatchPadding padding = BatchPadding::masked);
LayerPtr PPOLoss(DistributionPtr dist, double epsilon = loss_defaults::epsilon,
                 double entropy_coeff = loss_defaults::entropy_coeff,
                 BatchPadding padding = BatchPadding::masked);
// The same with a clip range read at every call through a shared handle (the PPO agent anneals
// it: PPOOptions::anneal_epsilon); each call checks it is still in (0, 1).
LayerPtr PPOLoss(DistributionPtr dist, std::shared_ptr<const double> epsilon, double entropy_coeff,
                 BatchPadding padding = BatchPadding::masked);
LayerPtr AWRLoss(DistributionPtr dist, double beta = loss_defaults::awr_beta, double w_max = loss_defaults::awr_w_max,
                 double entropy_coeff = loss_defaults::awr_entropy_coeff,
                 BatchPadding padding = BatchPadding::masked);

// ---- Joint losses: (dist_inputs, values, returns, dones, rewards, actions, old_log_probs, mask)
// Trax's one-step advantage computed inside, plus value_loss_coeff mean_m((R - V)^2); dones are
// bool or numeric (nonzero = done). AWRJoint's defaults have no entropy term and no
// normalisation (Trax's).
LayerPtr PPOJointLoss(DistributionPtr dist, double epsilon = loss_defaults::epsilon,
                      double value_loss_coeff = loss_defaults::value_loss_coeff,
                      double entropy_coeff = loss_defaults::entropy_coeff, bool normalize_advantages = true);
LayerPtr A2CJointLoss(DistributionPtr dist, double value_loss_coeff = loss_defaults::value_loss_coeff,
                      double entropy_coeff = loss_defaults::entropy_coeff, bool normalize_advantages = true);
LayerPtr AWRJointLoss(DistributionPtr dist, double beta = loss_defaults::awr_beta,
                      double w_max = loss_defaults::awr_w_max, double value_loss_coeff = loss_defaults::value_loss_coeff,
                      double entropy_coeff = loss_defaults::awr_entropy_coeff, bool normalize_advantages = false);

// ---- Metrics on the separate policy batch (n_in = 5) ------------------------------------------
// ClipFraction: the share of steps with |rho - 1| > epsilon; AdvantageNorm: the RMS of the
// advantages; PreferredMove: the mean mode over the event (argmax id, or the Gaussian's mean).
LayerPtr PolicyEntropy(DistributionPtr dist);
LayerPtr ApproximateKL(DistributionPtr dist);
LayerPtr ClipFraction(DistributionPtr dist, double epsilon = loss_defaults::epsilon);
LayerPtr ClipFraction(DistributionPtr dist, std::shared_ptr<const double> epsilon);
LayerPtr LogProbMean(DistributionPtr dist);
LayerPtr AdvantageMean();
LayerPtr AdvantageNorm();
LayerPtr PreferredMove(DistributionPtr dist);

// ---- Metrics on the joint batch (n_in = 8) ------------------------------------------------------
// Advantage metrics use the raw (un-normalised) advantage. Explained variance is computed in
// float64 and is 0 when the returns are constant up to rounding or there is no real step.
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
// Rollout passes (rl/agents/actor_critic.h): (values [B, L], targets, mask, old values) ->
// mean_m((V - G)^2), or with a clip c > 0 OpenAI baselines' clipped value loss; and the
// explained variance of the targets. The agent's minibatches have no padding (BatchPadding::none).
LayerPtr RolloutValueLoss(std::optional<double> clip = std::nullopt,
                          BatchPadding padding = BatchPadding::masked);
LayerPtr RolloutValueExplainedVariance();

}  // namespace ctrax
