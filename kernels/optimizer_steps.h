// The fused update loops of the optimizers (optim/), over raw contiguous float32 / float64 memory.
//
// What it is for: the inner loop of one weight's update. Each step reads the weight, its
// gradient and its slots once and writes the weight and slots in the same pass, multiplying
// the gradient by `grad_scale` (1, or the global-norm clipping factor) as it reads it, and
// returns the sum of squares of the weight's values before the update (the optimizer's
// weights_l2 statistic) at no extra memory traffic. optim/optimizer.cpp walks the trees and
// checks shapes and dtypes; these loops trust their arguments.
//
// What it is not for: strides, dtype conversion, validation, or choosing hyperparameters.
//
// Arithmetic: the scalar factors (learning rate over a bias correction, 1 - b, ...) are computed
// in double by the caller, rounded once to the weight's dtype here, and every per-element
// operation runs in that dtype (float32 weights update in float32, as in Trax and PyTorch).
// Sums of squares accumulate in double, in a fixed number of interleaved partial sums that are
// added in a fixed order at the end, and floating-point contraction (FMA) is off in these loops,
// so every instruction-set variant gives bit-for-bit the same results as the portable one.
//
// Like kernels/elementwise/elementwise.h, each loop is compiled for baseline x86-64, AVX2 and
// AVX-512 and the best variant the CPU can run is picked at first use;
// force_optimizer_isa() pins one so tests can compare the variants.
#pragma once

#include <cstdint>
#include <optional>

#include "elementwise/elementwise.h"

namespace ctrax::kernels {

// sum_i x[i]^2 in double (the gradients' global norm is the square root of the sum over leaves).
double sum_of_squares(const float* x, int64_t n);
double sum_of_squares(const double* x, int64_t n);

// ---- one-pass steps ---------------------------------------------------------------------------
// In every step g = grad_scale * gradient[i]; w, g and the slots are the i-th elements, and the
// return value is sum_i w[i]^2 (the old w) in double, or 0 when the step's sum_weights is false
// (a caller that does not read it saves the conversions; the update is the same bits). The CUDA
// loops always sum.

// SGD: w' = w - learning_rate g.
struct SgdStep {
  double learning_rate;
  double grad_scale;
  bool sum_weights = true;
};
double sgd_step(const SgdStep& p, const float* gradient, float* weight, int64_t n);
double sgd_step(const SgdStep& p, const double* gradient, double* weight, int64_t n);

// Momentum: v' = mass v + g;  w' = decay w - learning_rate (nesterov ? mass v' + g : v').
// decay is 1 - weight_decay_rate.
struct MomentumStep {
  double learning_rate;
  double grad_scale;
  double mass;
  double decay;
  bool nesterov;
  bool sum_weights = true;
};
double momentum_step(const MomentumStep& p, const float* gradient, float* weight, float* velocity, int64_t n);
double momentum_step(const MomentumStep& p, const double* gradient, double* weight, double* velocity, int64_t n);

// Adam and AdamW at 0-based step t, with bias corrections c1 = 1 - b1^(t+1), c2 = 1 - b2^(t+1):
//   m' = b1 m + (1 - b1) g,  v' = b2 v + (1 - b2) g^2,
//   w' = decay w - step_size m' / (sqrt(v') inv_sqrt_c2 + eps)
// where step_size = lr / c1 and inv_sqrt_c2 = 1 / sqrt(c2). This is lr m^ / (sqrt(v^) + eps) with
// m^ = m' / c1 and v^ = v' / c2 rearranged so that no per-element division by c1 or c2 is needed
// (PyTorch evaluates it in the same order). decay is 1 - weight_decay_rate (Trax's Adam) or
// 1 - lr weight_decay (AdamW).
struct AdamStep {
  double step_size;
  double grad_scale;
  double b1;
  double b2;
  double inv_sqrt_c2;
  double eps;
  double decay;
  bool sum_weights = true;
};
double adam_step(const AdamStep& p, const float* gradient, float* weight, float* m, float* v, int64_t n);
double adam_step(const AdamStep& p, const double* gradient, double* weight, double* m, double* v, int64_t n);

// RMSProp: a' = gamma a + (1 - gamma) g^2;  w' = w - learning_rate g / (sqrt(a') + eps).
struct RmsPropStep {
  double learning_rate;
  double grad_scale;
  double gamma;
  double eps;
  bool sum_weights = true;
};
double rmsprop_step(const RmsPropStep& p, const float* gradient, float* weight, float* mean_square, int64_t n);
double rmsprop_step(const RmsPropStep& p, const double* gradient, double* weight, double* mean_square, int64_t n);

// ---- Adafactor (several passes; optim/adafactor.h has the whole rule) -------------------------
// With g = grad_scale * gradient, G = g^2 + epsilon1 and the second-moment decay d:
//
// Factored, for `batch` matrices of rows x cols (a weight of rank >= 2: the leading axes are
// the batch), with row slot r [batch, rows] and column slot c [batch, cols]:
//   pass 1 (adafactor_factored_moments): r' = d r + (1 - d) mean_j G[i, j],
//          c' = d c + (1 - d) mean_i G[i, j]; returns sum w^2;
//   pass 2 (adafactor_factored_sum_y2): y[i, j] = g[i, j] (r'[i] / mean_i r')^(-1/2) c'[j]^(-1/2);
//          returns sum y^2 (only needed for update clipping);
//   pass 3 (adafactor_factored_apply): recomputes y and writes w (and the momentum m).
// Unfactored, with slot v of the weight's shape:
//   pass 1 (adafactor_moments): v' = d v + (1 - d) G; sum w^2 and sum y^2 with y = g v'^(-1/2);
//   pass 2 (adafactor_apply).
// The apply passes compute u = y_scale y, where y_scale = update_scale / clipping_denominator,
// then with momentum m' = beta1 m + (1 - beta1) u and u = m', and finally w' = decay w - u.
// m is null when momentum is off.
struct AdafactorMoments {
  double grad_scale;
  double decay_rate;  // d
  double epsilon1;
};
struct AdafactorApply {
  double grad_scale;
  double y_scale;
  double decay;  // 1 - weight_decay_rate
  double beta1;
};
struct SquareSums {
  double weights = 0;  // sum w^2
  double y = 0;        // sum y^2
};

double adafactor_factored_moments(const AdafactorMoments& p, const float* gradient, const float* weight, float* r,
                                  float* c, int64_t batch, int64_t rows, int64_t cols);
double adafactor_factored_moments(const AdafactorMoments& p, const double* gradient, const double* weight, double* r,
                                  double* c, int64_t batch, int64_t rows, int64_t cols);
double adafactor_factored_sum_y2(double grad_scale, const float* gradient, const float* r, const float* c,
                                 int64_t batch, int64_t rows, int64_t cols);
double adafactor_factored_sum_y2(double grad_scale, const double* gradient, const double* r, const double* c,
                                 int64_t batch, int64_t rows, int64_t cols);
void adafactor_factored_apply(const AdafactorApply& p, const float* gradient, float* weight, const float* r,
                              const float* c, float* m, int64_t batch, int64_t rows, int64_t cols);
void adafactor_factored_apply(const AdafactorApply& p, const double* gradient, double* weight, const double* r,
                              const double* c, double* m, int64_t batch, int64_t rows, int64_t cols);

SquareSums adafactor_moments(const AdafactorMoments& p, const float* gradient, const float* weight, float* v,
                             int64_t n);
SquareSums adafactor_moments(const AdafactorMoments& p, const double* gradient, const double* weight, double* v,
                             int64_t n);
void adafactor_apply(const AdafactorApply& p, const float* gradient, float* weight, const float* v, float* m,
                     int64_t n);
void adafactor_apply(const AdafactorApply& p, const double* gradient, double* weight, const double* v, double* m,
                     int64_t n);

// Instruction-set variant of these loops (the same choices as the elementwise kernels'). By
// default the best the CPU supports; force_optimizer_isa() pins one and throws ctrax::Error if
// the CPU cannot run it; std::nullopt returns to the automatic choice.
void force_optimizer_isa(std::optional<ElementwiseIsa> isa);
ElementwiseIsa active_optimizer_isa();

}  // namespace ctrax::kernels
