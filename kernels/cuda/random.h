// Random numbers on the GPU (the CUDA side of tensor/random.h's samplers).
//
// What it is for: filling device tensors with exactly the CPU's random numbers. The device
// runs the same Philox-4x32-10 block function with the same counter layout
// (counter = (block low, block high, attempt, purpose 0), see tensor/random.h), and element i
// of every output is the same pure function of (key, i), so:
//   - uniform, bernoulli (scalar and per-element p), randint: identical bits to the CPU
//     (integer arithmetic, exact scalings by powers of two, and the affine map done with
//     separately rounded __dmul_rn / __dadd_rn, never contracted into an FMA);
//   - categorical: the same draws and formula argmax_j (logit_j - log(-log u_j)); the device's
//     log is within 1 ulp of glibc's, so a sample can differ only when two scores tie to
//     within ~1e-16 relative (never seen in practice);
//   - normal: the same uniforms, but the device's log, cos and sin may differ from glibc's in
//     the last ulp or two, so normals agree to a few ulps of double (float32 results are
//     almost always identical after rounding, but not guaranteed).
// Each thread computes the Philox block its element needs (up to 4x redundant work across
// neighbouring threads: ~20 integer multiplies, cheap next to the memory traffic); one thread
// per block writing 2 or 4 elements is a possible next step.
//
// What it is not for: argument checks (the tensor layer checks and rounds lo/hi, p and the
// shapes first) or permutation (sequential Fisher-Yates stays on the CPU).
#pragma once

#include <cstdint>

#include "strided.h"

namespace ctrax::kernels::cuda {

struct PhiloxKey {
  uint32_t word0 = 0, word1 = 0;
};

// All functions fill n contiguous elements on the current device, asynchronously on
// current_stream() unless they say otherwise.

// Uniform in [lo, hi) (float32 or float64 `type`): lo, hi and below_hi (the largest value
// below hi) are already exact in `type`, with finite lo < hi.
void random_uniform(PhiloxKey key, void* out, ElementType type, int64_t n, double lo, double hi, double below_hi);
// Normal(mean, stddev^2) by Box-Muller (float32 or float64 `type`).
void random_normal(PhiloxKey key, void* out, ElementType type, int64_t n, double mean, double stddev);
// Bool (uint8) out[i] = u_i < p, with p a scalar or (p_values != null) p_values[i].
void random_bernoulli(PhiloxKey key, uint8_t* out, int64_t n, double p, const double* p_values = nullptr);
// Integers lo + [0, range) (int32 or int64 `type`), Lemire's method with redraws.
void random_randint(PhiloxKey key, void* out, ElementType type, int64_t n, int64_t lo, uint64_t range);
// Gumbel-max samples: sample o reads row strided_offset(rows_of_samples, o) of `table`
// (row-major (rows, categories), float64) and writes the chosen category to out[o], o < n.
void random_categorical(PhiloxKey key, const double* table, int64_t categories, const StridedArg& rows_of_samples,
                        int64_t* out, int64_t n);

// ---- Checks (synchronous: they copy one answer back to the host) -----------------------------
// The first i < n with p[i] outside [0, 1] (or NaN), or -1.
int64_t first_outside_unit_interval(const double* p, int64_t n);
// The first row of `table` (rows, categories) without a distribution: `row` is -1 when every
// row is valid; otherwise nan_category is the first NaN category of that row, or -1 when the
// row has no NaN but every logit is -inf. Matches the CPU's scan order.
struct CategoricalRowProblem {
  int64_t row = -1;
  int64_t nan_category = -1;
};
CategoricalRowProblem first_invalid_categorical_row(const double* table, int64_t rows, int64_t categories);

}  // namespace ctrax::kernels::cuda
