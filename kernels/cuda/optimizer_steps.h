// The fused optimizer updates on a CUDA device: the same steps, parameters and formulas as
// kernels/optimizer_steps.h, over contiguous device memory.
//
// What it is for: one kernel per weight that reads the weight, its gradient and its slots once
// and writes the weight and slots in the same pass (Adam: 4 reads and 3 writes per element,
// the memory traffic floor). Every step returns sum_i w[i]^2 of the weight before the update, as
// the CPU steps do; that sum is accumulated on the device in double and read back, so each call
// waits for its kernel (a few microseconds; the optimizer's statistics need the value).
//
// Arithmetic matches the CPU loops: the scalar factors arrive in double and are rounded once
// to the weight's dtype, every per-element operation runs in that dtype, and this file is
// compiled without FMA contraction (CMake) with IEEE division and square root, so a weight
// updated on the GPU is bit-for-bit the CPU's. The sums of squares add in another order, so
// they agree to rounding only.
//
// What it is not for: Adafactor's factored moments (CPU only for now; the optimizer says so).
#pragma once

#include <cstdint>

#include "../optimizer_steps.h"

namespace ctrax::kernels::cuda {

double sum_of_squares(const float* x, int64_t n);
double sum_of_squares(const double* x, int64_t n);
double sgd_step(const SgdStep& p, const float* gradient, float* weight, int64_t n);
double sgd_step(const SgdStep& p, const double* gradient, double* weight, int64_t n);
double momentum_step(const MomentumStep& p, const float* gradient, float* weight, float* velocity, int64_t n);
double momentum_step(const MomentumStep& p, const double* gradient, double* weight, double* velocity, int64_t n);
double adam_step(const AdamStep& p, const float* gradient, float* weight, float* m, float* v, int64_t n);
double adam_step(const AdamStep& p, const double* gradient, double* weight, double* m, double* v, int64_t n);
double rmsprop_step(const RmsPropStep& p, const float* gradient, float* weight, float* mean_square, int64_t n);
double rmsprop_step(const RmsPropStep& p, const double* gradient, double* weight, double* mean_square, int64_t n);

}  // namespace ctrax::kernels::cuda
