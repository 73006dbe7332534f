// Core layers: Dense and the weightless layers over one tensor (Trax's layers/core.py and
// activation_fns.py).
//
//   Dense(n_units)   y = x W + b on the last axis; W [d_in, n_units] from kernel_init (Glorot
//                    uniform), b [n_units] from bias_init (normal with stddev 1e-6), use_bias.
//   LearnedColumns(n, init)  x [..., k] -> [..., k + n]: x followed on every row by one learned
//                    vector w [n] ("columns", from init, zeros by default) that does not depend on
//                    x; dw sums the rows' gradients. A policy's state-independent log std, as
//                    Stable-Baselines3's log_std parameter (rl/agents/policy_models.h).
//   Relu, LeakyRelu(a = 0.01): x >= 0 ? x : a x;  Elu(a = 1): x > 0 ? x : a (e^x - 1);
//   Selu: 1.0507 * Elu(1.67326);  Gelu (exact, erf) and FastGelu (tanh form);  Sigmoid, Tanh;
//   HardSigmoid: max(0, min(1, 1 + x)) (Trax's form);  HardTanh: max(-1, min(1, x));
//   Softplus;  Swish: x sigmoid(x);  Glu: a * sigmoid(b) with (a, b) the halves of the last axis.
//   LogSoftmax, Softmax (last axis), Mean/Sum(axis, keepdims), ArgMax(axis), Negate,
//   StopGradient, Flatten(n_axes_to_keep = 1).
//
// What it is not for: losses and metrics (metrics.h), convolutions (conv.h), normalisation
// (normalization.h) or layers made of layers (combinators.h).
#pragma once

#include <string>

#include "initializers.h"
#include "layer.h"

namespace ctrax {

struct DenseOptions {
  Initializer kernel_init = glorot_uniform();
  Initializer bias_init = normal_init(1e-6);
  bool use_bias = true;
};
LayerPtr Dense(int64_t n_units, DenseOptions options = {});
// n >= 1 and init non-empty; else ctrax::Error.
LayerPtr LearnedColumns(int64_t n, Initializer init = constant_init(0.0));

LayerPtr Relu();
LayerPtr LeakyRelu(double a = 0.01);
LayerPtr Elu(double a = 1.0);
LayerPtr Selu();
LayerPtr Gelu();
LayerPtr FastGelu();
LayerPtr Sigmoid();
LayerPtr Tanh();
LayerPtr HardSigmoid();
LayerPtr HardTanh();
LayerPtr Softplus();
LayerPtr Swish();
LayerPtr Glu();
LayerPtr LogSoftmax(int axis = -1);
LayerPtr Softmax(int axis = -1);
LayerPtr Mean(int axis = -1, bool keepdims = false);
LayerPtr Sum(int axis = -1, bool keepdims = false);
LayerPtr ArgMax(int axis = -1, bool keepdims = false);
LayerPtr Negate();
LayerPtr StopGradient();
LayerPtr Flatten(int n_axes_to_keep = 1);

}  // namespace ctrax
