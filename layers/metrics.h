// Losses and metrics as layers (Trax's layers/metrics.py). Each pops its inputs (model output
// first, then targets, then weights) and pushes one rank-0 float tensor for one batch. The RL
// losses are rl/learning/losses.h's. Design and Trax differences: layers/README.md, "Losses and
// metrics".
//
// Weights: any shape that broadcasts to the per-example loss shape without enlarging it (a scalar
// gives the plain mean); sum(w) is over the broadcast weights; integer and bool weights are cast;
// weights must be >= 0. sum(w) == 0 (padding only, or an empty batch) gives 0 with a zero
// gradient, not NaN. Targets: int32 or int64 ids in [0, N), shaped like the logits without the
// last axis; an id outside that range throws ctrax::Error.
#pragma once

#include <cstdint>

#include "layer.h"

namespace ctrax {

// (logits [..., N], int targets [...]) -> mean of CE = -sum_j p_j log_softmax(logits)_j with
// p = (1 - eps) onehot(target) + eps / N (eps = label_smoothing).
LayerPtr CategoryCrossEntropy(double label_smoothing = 0.0);
// (logits, int targets, weights) -> sum(CE' w) / sum(w), CE' = max(CE, c) - c when cutoff c > 0.
LayerPtr WeightedCategoryCrossEntropy(double label_smoothing = 0.0, double cutoff = 0.0);
// (log-probs [..., N], int targets, weights) -> sum(-x[target] w) / sum(w); no softmax inside.
LayerPtr CrossEntropyLoss();
// (y, t, w) -> sum(w (y - t)^2) / sum(w).
LayerPtr L2Loss();
// (y, t, w) -> weighted mean of Huber (delta 1) per element: d^2 / 2 if |d| < 1, else |d| - 1/2.
LayerPtr SmoothL1Loss();
// (logits z, targets t in [0, 1][, weights]) -> (weighted) mean of softplus(z) - z t, computed
// without overflow. n_in is 3 when weighted, else 2.
LayerPtr BinaryCrossEntropy(bool weighted = false);
// (logits [..., N], int targets[, weights]) -> (weighted) mean of argmax(logits) == target, ties
// to the lowest index. Not differentiable: a constant.
LayerPtr Accuracy(bool weighted = false);
// (x, w) -> sum(x w).
LayerPtr WeightedSum();

// float32 weights of targets' shape: 1 where targets != id_to_mask, 0 where equal (any dtype of
// targets; the comparison is done in targets' dtype). The Trainer's id_to_mask uses it.
Tensor mask_from_ids(const Tensor& targets, int64_t id_to_mask = 0);

}  // namespace ctrax
