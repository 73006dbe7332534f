// Losses and metrics as layers (Trax's layers/metrics.py). Each pops its inputs (model output
// first, then targets, then weights) and pushes one rank-0 float tensor.
//
//   CategoryCrossEntropy(eps = 0)        (logits [..., N], int targets [...]):
//                                        mean over [...] of CE = -sum_j p_j log_softmax(logits)_j,
//                                        p = (1 - eps) onehot(target) + eps / N.
//   WeightedCategoryCrossEntropy(eps = 0, cutoff = 0)   (logits, int targets, weights):
//                                        sum(CE' w) / sum(w), CE' = max(CE, c) - c when c > 0
//                                        (elements already below the cutoff stop contributing).
//   CrossEntropyLoss()                   (log-probs [..., N], int targets, weights):
//                                        sum(-x[target] w) / sum(w); no softmax inside.
//   L2Loss()                             (y, t, w): sum(w (y - t)^2) / sum(w).
//   SmoothL1Loss()                       (y, t, w): Huber with delta 1, per element
//                                        |d| < 1 ? d^2 / 2 : |d| - 1/2 with d = y - t; weighted mean.
//   BinaryCrossEntropy(weighted = false) (logits z, targets t in [0, 1][, weights]):
//                                        softplus(z) - z t = max(z, 0) - z t + log1p(exp(-|z|)),
//                                        which never overflows; mean, or weighted mean.
//   Accuracy(weighted = false)           (logits [..., N], int targets [...][, weights]): the
//                                        (weighted) mean of argmax(logits) == target; ties go to
//                                        the lowest index. Not differentiable: computed as a constant.
//   WeightedSum()                        (x, w): sum(x w).
//
// What it is not for: the RL losses (rl/losses.h), or averages over many batches (each call
// gives one batch's value).
//
// Weights: Trax gives weights the targets' shape (one per example, or per element for L2Loss,
// SmoothL1Loss and BinaryCrossEntropy). Here they may be any shape that broadcasts to that
// per-example loss shape without enlarging it (e.g. [B, 1] against [B, T], or a scalar);
// sum(w) is taken over the broadcast weights, so a scalar weight gives the plain mean.
// Integer and bool weights are cast to the loss's dtype. Weights must be >= 0: with negative
// weights sum(w) can vanish or change sign and the "weighted mean" means nothing.
//
// sum(w) == 0 (a batch made only of padding, or an empty batch): Trax divides by zero and gets
// NaN, which then poisons the weights through the optimizer. ctrax returns 0 with a zero
// gradient instead, since padding-only batches do happen; the unweighted losses treat an empty
// batch the same way.
//
// Targets: int32 or int64 class ids in [0, N); an id outside that range is an error (Trax's
// one_hot silently gives that element a zero loss). Their shape must be the logits' shape
// without the last axis.
//
// Padding and id_to_mask: the seed's trainers (Trax's Trainer and TrainTask with
// id_to_mask = 0) weight each target position by 1 where the target is not the padding id and
// 0 where it is, so padded positions add nothing to loss or accuracy: weights =
// mask_from_ids(targets, 0). Without id_to_mask every weight is 1.
#pragma once

#include <cstdint>

#include "layer.h"

namespace ctrax {

LayerPtr CategoryCrossEntropy(double label_smoothing = 0.0);
LayerPtr WeightedCategoryCrossEntropy(double label_smoothing = 0.0, double cutoff = 0.0);
LayerPtr CrossEntropyLoss();
LayerPtr L2Loss();
LayerPtr SmoothL1Loss();
// n_in is 3 when weighted, else 2.
LayerPtr BinaryCrossEntropy(bool weighted = false);
LayerPtr Accuracy(bool weighted = false);
LayerPtr WeightedSum();

// float32 weights of targets' shape: 1 where targets != id_to_mask, 0 where equal (any dtype of
// targets; the comparison is done in targets' dtype).
Tensor mask_from_ids(const Tensor& targets, int64_t id_to_mask = 0);

}  // namespace ctrax
