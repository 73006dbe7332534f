// Normalisation layers: LayerNorm and BatchNorm (Trax's layers/normalization.py) and the RL
// observation normaliser Normalize (Trax's rl/normalization.py).
//
//   LayerNorm(eps = 1e-6)   over the last axis of x, features d:
//                             mu = mean(x), s2 = mean((x - mu)^2),
//                             y = (x - mu) / sqrt(s2 + eps) * scale + bias
//                           weights {scale: ones[d], bias: zeros[d]}; no state.
//   BatchNorm(axes = {0}, eps = 1e-5, momentum = 0.999, center, scale)
//                           statistics over `axes` (the batch axes): y = (x - m) / sqrt(v + eps) * scale + bias,
//                           with (m, v) the batch's mean and population variance in Mode::train and the running
//                           statistics in every other mode. Weights {scale, bias} have x's shape without `axes`
//                           (each only when enabled); state {mean, var, n_batches}, mean and var with x's shape
//                           and size 1 on `axes`.
//   Normalize(options)      running observation normalisation for RL. Input [batch, time, features...];
//                           statistics of shape [features...]; y = clip((x - mean) / (sqrt(var) + eps), +-clip).
//                           The statistics change only in Mode::collect; state {mean, var, count}.
//
// Weights and state take the input's floating dtype (Trax makes them float32 always; following the input lets a
// float64 model, as in the gradient checks, stay float64).
//
// What it is not for: reward normalisation (NormalizeReward, rl/environments/wrappers.h), or group and
// instance norms (not built).
#pragma once

#include <limits>
#include <vector>

#include "layer.h"

namespace ctrax {

LayerPtr LayerNorm(double epsilon = 1e-6);

LayerPtr BatchNorm(std::vector<int> axes = {0}, double epsilon = 1e-5, double momentum = 0.999, bool center = true,
                   bool scale = true);

struct NormalizeOptions {
  // Observations counted at most (Trax's sample_limit): later ones no longer move the statistics.
  double sample_limit = std::numeric_limits<double>::infinity();
  double epsilon = 1e-5;
  // |normalised value| is clipped to this; infinity (Trax's behaviour) clips nothing.
  double clip = std::numeric_limits<double>::infinity();
};
LayerPtr Normalize(NormalizeOptions options = {});

// Data-parallel collection (docs/scaling.md): every rank started from the same model state `base`
// and collected on its own, so ranks[r] is base plus rank r's observations. The result adds each
// rank's new observations to base in rank order with the parallel update above (per Normalize
// statistics, found as {mean, var, count} subtrees; computed in float64, rounded once), the same
// bits on every rank. Every other state leaf must be equal on all ranks (then rank 0's is kept),
// else ctrax::Error naming its path. A sample_limit is applied per rank, so the combined count may
// pass it (by less than one rank's share of an epoch).
Tree combine_rank_statistics(const Tree& base, const std::vector<Tree>& ranks);

}  // namespace ctrax
