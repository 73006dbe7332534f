// The optimizers' fused loops, compiled once per instruction set (see optimizer_steps.h).
//
// How the variants are made: the same way as kernels/elementwise/elementwise.cpp. Every loop is
// plain C++ over scalars, reached from one entry point per dtype and variant that carries a GCC
// `target` attribute (none, "avx2,fma" or "avx512f,avx512vl,avx512dq,fma") and `flatten`, so the
// loops are inlined into it and auto-vectorised for its instruction set. A call describes its
// loop as a Job (which loop, its scalars and pointers); the entry point switches on it.
//
// Sums of squares: a double accumulator per lane of a kLanes-wide block (acc[k] += x[i + k]^2),
// which the vectoriser widens without reassociating anything, then the lanes are added in a
// fixed order. With contraction off (below) every variant therefore computes the same bits.
//
// Whether the wide variants pay (bench/bench_optimizers.cpp, float32 Adam's loop, one thread,
// CPU time on a loaded 2-core AVX-512 Xeon): on 1M weights (28 bytes per element: read w, g, m, v;
// write w, m, v) the loop is bound by memory, 22 GB/s portable and 30 GB/s wide; on an RL-sized
// 4,610 weights, which stay in L2, the square roots and divisions dominate and the AVX2 and
// AVX-512 variants run at 42-43 GB/s against the portable one's 21, twice as fast.
//
// Square roots and errno: the loops vectorise only when the file is compiled with
// -fno-math-errno (kernels/CMakeLists.txt sets it; ctrax never reads errno). Without it GCC keeps
// a library call for negative arguments (to set errno) in every square root, and the Adam and
// RMSProp loops stay scalar, about 4x slower; the results are the same bits either way. A
// `#pragma GCC optimize` cannot turn errno off per function in GCC 12, hence the file option.
#include "optimizer_steps.h"

#include <atomic>
#include <cmath>

#include "../base/error.h"
#include "cpu_features.h"

// No FMA contraction: a fused multiply-add rounds once where the baseline's multiply and add
// round twice, so with contraction the AVX2 / AVX-512 variants would differ from the portable
// one in the last bit, and training would depend on the CPU it ran on. The loops are memory- or
// sqrt/div-bound, so the FMAs would buy nothing measurable.
#pragma GCC optimize("fp-contract=off")

namespace ctrax::kernels {

namespace {

// Partial sums per block: 16 doubles are two AVX-512 registers (or eight SSE2 ones), enough
// independent additions to hide the add latency.
constexpr int kLanes = 16;

// Adds lanes in a fixed pairwise order.
inline double total(const double (&acc)[kLanes]) {
  double pair[kLanes / 2];
  for (int k = 0; k < kLanes / 2; ++k) pair[k] = acc[k] + acc[k + kLanes / 2];
  double quad[kLanes / 4];
  for (int k = 0; k < kLanes / 4; ++k) quad[k] = pair[k] + pair[k + kLanes / 4];
  return (quad[0] + quad[2]) + (quad[1] + quad[3]);
}

// Runs element(i) for 0 <= i < n, summing the double it returns in kLanes partial sums
// (lane i % kLanes for the full blocks, then a tail sum), and returns the total.
template <typename Element>
inline double summed_loop(int64_t n, Element element) {
  double acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int k = 0; k < kLanes; ++k) acc[k] += element(i + k);
  double tail = 0;
  for (; i < n; ++i) tail += element(i);
  return total(acc) + tail;
}

inline double squared(double x) { return x * x; }

// An update's loop: summed_loop when the caller wants the weights' sum of squares, else the
// same elements with their squares unused (the compiler drops the conversions to double).
template <typename Element>
inline double update_loop(int64_t n, bool sum_weights, Element element) {
  if (sum_weights) return summed_loop(n, element);
  for (int64_t i = 0; i < n; ++i) element(i);
  return 0.0;
}



// ---- the loops ------------------------------------------------------------------------------

template <typename T>
double sum_of_squares_loop(const T* x, int64_t n) {
  return summed_loop(n, [&](int64_t i) { return squared(static_cast<double>(x[i])); });
}

template <typename T>
double sgd_loop(const SgdStep& p, const T* g, T* w, int64_t n) {
  const T lr = static_cast<T>(p.learning_rate), gs = static_cast<T>(p.grad_scale);
  return update_loop(n, p.sum_weights, [&](int64_t i) {
    const T wi = w[i];
    w[i] = wi - lr * (gs * g[i]);
    return squared(static_cast<double>(wi));
  });
}

template <typename T>
double momentum_loop(const MomentumStep& p, const T* g, T* w, T* vel, int64_t n) {
  const T lr = static_cast<T>(p.learning_rate), gs = static_cast<T>(p.grad_scale);
  const T mass = static_cast<T>(p.mass), decay = static_cast<T>(p.decay);
  // Two loops rather than a select per element, so each is a straight line the vectoriser takes.
  if (p.nesterov) {
    return update_loop(n, p.sum_weights, [&](int64_t i) {
      const T wi = w[i], gi = gs * g[i];
      const T v = mass * vel[i] + gi;
      vel[i] = v;
      w[i] = decay * wi - lr * (mass * v + gi);
      return squared(static_cast<double>(wi));
    });
  }
  return update_loop(n, p.sum_weights, [&](int64_t i) {
    const T wi = w[i];
    const T v = mass * vel[i] + gs * g[i];
    vel[i] = v;
    w[i] = decay * wi - lr * v;
    return squared(static_cast<double>(wi));
  });
}

template <typename T>
double adam_loop(const AdamStep& p, const T* g, T* w, T* m, T* v, int64_t n) {
  const T step_size = static_cast<T>(p.step_size), gs = static_cast<T>(p.grad_scale);
  const T b1 = static_cast<T>(p.b1), one_minus_b1 = static_cast<T>(1.0 - p.b1);
  const T b2 = static_cast<T>(p.b2), one_minus_b2 = static_cast<T>(1.0 - p.b2);
  const T inv_sqrt_c2 = static_cast<T>(p.inv_sqrt_c2), eps = static_cast<T>(p.eps), decay = static_cast<T>(p.decay);
  return update_loop(n, p.sum_weights, [&](int64_t i) {
    const T wi = w[i], gi = gs * g[i];
    const T mi = b1 * m[i] + one_minus_b1 * gi;
    const T vi = b2 * v[i] + one_minus_b2 * (gi * gi);
    m[i] = mi;
    v[i] = vi;
    w[i] = decay * wi - step_size * mi / (std::sqrt(vi) * inv_sqrt_c2 + eps);
    return squared(static_cast<double>(wi));
  });
}

template <typename T>
double rmsprop_loop(const RmsPropStep& p, const T* g, T* w, T* a, int64_t n) {
  const T lr = static_cast<T>(p.learning_rate), gs = static_cast<T>(p.grad_scale);
  const T gamma = static_cast<T>(p.gamma), one_minus_gamma = static_cast<T>(1.0 - p.gamma);
  const T eps = static_cast<T>(p.eps);
  return update_loop(n, p.sum_weights, [&](int64_t i) {
    const T wi = w[i], gi = gs * g[i];
    const T ai = gamma * a[i] + one_minus_gamma * (gi * gi);
    a[i] = ai;
    w[i] = wi - lr * gi / (std::sqrt(ai) + eps);
    return squared(static_cast<double>(wi));
  });
}

// Adafactor, factored. Matrix b of the batch starts at element b * rows * cols; its row slot at
// b * rows and its column slot at b * cols.
template <typename T>
double af_factored_moments_loop(const AdafactorMoments& p, const T* g, const T* w, T* r, T* c, int64_t batch,
                                int64_t rows, int64_t cols) {
  const T gs = static_cast<T>(p.grad_scale), eps1 = static_cast<T>(p.epsilon1);
  const T d = static_cast<T>(p.decay_rate);
  // mean_i G[i, j] is accumulated into c' one row at a time: c' = d c + sum_i ((1 - d) / rows) G[i, j].
  const T col_weight = static_cast<T>((1.0 - p.decay_rate) / static_cast<double>(rows));
  const double row_weight = (1.0 - p.decay_rate) / static_cast<double>(cols);
  double sum_w2 = 0;
  for (int64_t b = 0; b < batch; ++b) {
    const T* gb = g + b * rows * cols;
    const T* wb = w + b * rows * cols;
    T* rb = r + b * rows;
    T* cb = c + b * cols;
    for (int64_t j = 0; j < cols; ++j) cb[j] = d * cb[j];
    for (int64_t i = 0; i < rows; ++i) {
      const T* gi = gb + i * cols;
      const T* wi = wb + i * cols;
      sum_w2 += summed_loop(cols, [&](int64_t j) {
        const T gj = gs * gi[j];
        const T big_g = gj * gj + eps1;
        cb[j] = cb[j] + col_weight * big_g;
        return squared(static_cast<double>(wi[j]));
      });
      const double row_sum = summed_loop(cols, [&](int64_t j) {
        const T gj = gs * gi[j];
        return static_cast<double>(gj * gj + eps1);
      });
      rb[i] = static_cast<T>(p.decay_rate * static_cast<double>(rb[i]) + row_weight * row_sum);
    }
  }
  return sum_w2;
}

// The row factor (r'[i] / mean_i r')^(-1/2) of matrix b, row i, computed in double.
template <typename T>
inline double mean_of(const T* x, int64_t n) {
  return summed_loop(n, [&](int64_t i) { return static_cast<double>(x[i]); }) / static_cast<double>(n);
}

template <typename T>
double af_factored_sum_y2_loop(double grad_scale, const T* g, const T* r, const T* c, int64_t batch, int64_t rows,
                               int64_t cols) {
  const T gs = static_cast<T>(grad_scale);
  double sum_y2 = 0;
  for (int64_t b = 0; b < batch; ++b) {
    const T* gb = g + b * rows * cols;
    const T* rb = r + b * rows;
    const T* cb = c + b * cols;
    const double row_mean = mean_of(rb, rows);
    for (int64_t i = 0; i < rows; ++i) {
      const T row_factor = static_cast<T>(1.0 / std::sqrt(static_cast<double>(rb[i]) / row_mean));
      const T* gi = gb + i * cols;
      sum_y2 += summed_loop(cols, [&](int64_t j) {
        const T y = (gs * gi[j]) * row_factor * (T(1) / std::sqrt(cb[j]));
        return squared(static_cast<double>(y));
      });
    }
  }
  return sum_y2;
}

template <typename T>
void af_factored_apply_loop(const AdafactorApply& p, const T* g, T* w, const T* r, const T* c, T* m, int64_t batch,
                            int64_t rows, int64_t cols) {
  const T gs = static_cast<T>(p.grad_scale), y_scale = static_cast<T>(p.y_scale), decay = static_cast<T>(p.decay);
  const T beta1 = static_cast<T>(p.beta1), one_minus_beta1 = static_cast<T>(1.0 - p.beta1);
  for (int64_t b = 0; b < batch; ++b) {
    const T* gb = g + b * rows * cols;
    T* wb = w + b * rows * cols;
    T* mb = m ? m + b * rows * cols : nullptr;
    const T* rb = r + b * rows;
    const T* cb = c + b * cols;
    const double row_mean = mean_of(rb, rows);
    for (int64_t i = 0; i < rows; ++i) {
      const T row_factor = static_cast<T>(1.0 / std::sqrt(static_cast<double>(rb[i]) / row_mean));
      const T* gi = gb + i * cols;
      T* wi = wb + i * cols;
      if (mb) {
        T* mi = mb + i * cols;
        for (int64_t j = 0; j < cols; ++j) {
          const T y = (gs * gi[j]) * row_factor * (T(1) / std::sqrt(cb[j]));
          const T u = beta1 * mi[j] + one_minus_beta1 * (y_scale * y);
          mi[j] = u;
          wi[j] = decay * wi[j] - u;
        }
      } else {
        for (int64_t j = 0; j < cols; ++j) {
          const T y = (gs * gi[j]) * row_factor * (T(1) / std::sqrt(cb[j]));
          wi[j] = decay * wi[j] - y_scale * y;
        }
      }
    }
  }
}

template <typename T>
SquareSums af_moments_loop(const AdafactorMoments& p, const T* g, const T* w, T* v, int64_t n) {
  const T gs = static_cast<T>(p.grad_scale), eps1 = static_cast<T>(p.epsilon1);
  const T d = static_cast<T>(p.decay_rate), one_minus_d = static_cast<T>(1.0 - p.decay_rate);
  SquareSums sums;
  sums.weights = summed_loop(n, [&](int64_t i) {
    const T gi = gs * g[i];
    v[i] = d * v[i] + one_minus_d * (gi * gi + eps1);
    return squared(static_cast<double>(w[i]));
  });
  sums.y = summed_loop(n, [&](int64_t i) {
    const T y = (gs * g[i]) / std::sqrt(v[i]);
    return squared(static_cast<double>(y));
  });
  return sums;
}

template <typename T>
void af_apply_loop(const AdafactorApply& p, const T* g, T* w, const T* v, T* m, int64_t n) {
  const T gs = static_cast<T>(p.grad_scale), y_scale = static_cast<T>(p.y_scale), decay = static_cast<T>(p.decay);
  const T beta1 = static_cast<T>(p.beta1), one_minus_beta1 = static_cast<T>(1.0 - p.beta1);
  if (m) {
    for (int64_t i = 0; i < n; ++i) {
      const T y = (gs * g[i]) / std::sqrt(v[i]);
      const T u = beta1 * m[i] + one_minus_beta1 * (y_scale * y);
      m[i] = u;
      w[i] = decay * w[i] - u;
    }
  } else {
    for (int64_t i = 0; i < n; ++i) {
      const T y = (gs * g[i]) / std::sqrt(v[i]);
      w[i] = decay * w[i] - y_scale * y;
    }
  }
}

// ---- jobs and variants ----------------------------------------------------------------------

enum class Loop : uint8_t { sum_of_squares, sgd, momentum, adam, rmsprop, af_fmoments, af_fsum_y2, af_fapply,
                            af_moments, af_apply };

// One call's loop and arguments. `params` points at the loop's step struct (or, for
// af_fsum_y2, at the grad_scale double); the slot pointers s0..s2 are the loop's slots in order.
template <typename T>
struct Job {
  Loop loop;
  const void* params;
  const T* g;
  T* w;
  T* s0;
  T* s1;
  T* s2;
  int64_t n;  // elements, or for the factored loops the batch
  int64_t rows;
  int64_t cols;
};

template <typename T>
inline SquareSums run(const Job<T>& j) {
  SquareSums out;
  switch (j.loop) {
    case Loop::sum_of_squares: out.weights = sum_of_squares_loop(j.g, j.n); break;
    case Loop::sgd: out.weights = sgd_loop(*static_cast<const SgdStep*>(j.params), j.g, j.w, j.n); break;
    case Loop::momentum:
      out.weights = momentum_loop(*static_cast<const MomentumStep*>(j.params), j.g, j.w, j.s0, j.n);
      break;
    case Loop::adam: out.weights = adam_loop(*static_cast<const AdamStep*>(j.params), j.g, j.w, j.s0, j.s1, j.n); break;
    case Loop::rmsprop:
      out.weights = rmsprop_loop(*static_cast<const RmsPropStep*>(j.params), j.g, j.w, j.s0, j.n);
      break;
    case Loop::af_fmoments:
      out.weights = af_factored_moments_loop(*static_cast<const AdafactorMoments*>(j.params), j.g, j.w, j.s0, j.s1,
                                             j.n, j.rows, j.cols);
      break;
    case Loop::af_fsum_y2:
      out.y = af_factored_sum_y2_loop(*static_cast<const double*>(j.params), j.g, j.s0, j.s1, j.n, j.rows, j.cols);
      break;
    case Loop::af_fapply:
      af_factored_apply_loop(*static_cast<const AdafactorApply*>(j.params), j.g, j.w, j.s0, j.s1, j.s2, j.n, j.rows,
                             j.cols);
      break;
    case Loop::af_moments: out = af_moments_loop(*static_cast<const AdafactorMoments*>(j.params), j.g, j.w, j.s0, j.n); break;
    case Loop::af_apply: af_apply_loop(*static_cast<const AdafactorApply*>(j.params), j.g, j.w, j.s0, j.s1, j.n); break;
  }
  return out;
}

using RunF32 = SquareSums (*)(const Job<float>&);
using RunF64 = SquareSums (*)(const Job<double>&);

struct Variant {
  ElementwiseIsa isa;
  RunF32 f32;
  RunF64 f64;
};

#define CTRAX_OPTIMIZER_VARIANT(NAME, ATTRIBUTES)                                  \
  namespace NAME {                                                                 \
  ATTRIBUTES SquareSums run_f32(const Job<float>& job) { return run(job); }        \
  ATTRIBUTES SquareSums run_f64(const Job<double>& job) { return run(job); }       \
  }

CTRAX_OPTIMIZER_VARIANT(portable, __attribute__((flatten)))
CTRAX_OPTIMIZER_VARIANT(avx2, __attribute__((flatten, target("avx2,fma"))))
CTRAX_OPTIMIZER_VARIANT(avx512, __attribute__((flatten, target("avx512f,avx512vl,avx512dq,fma"))))
#undef CTRAX_OPTIMIZER_VARIANT

constexpr Variant kVariants[] = {
    {ElementwiseIsa::portable, portable::run_f32, portable::run_f64},
    {ElementwiseIsa::avx2, avx2::run_f32, avx2::run_f64},
    {ElementwiseIsa::avx512, avx512::run_f32, avx512::run_f64},
};

ElementwiseIsa best_isa() {
  const CpuFeatures& f = cpu_features();
  if (f.can_run_avx512()) return ElementwiseIsa::avx512;
  if (f.can_run_avx2_fma()) return ElementwiseIsa::avx2;
  return ElementwiseIsa::portable;
}

// The variant in use; null until the first call picks the best one (relaxed ordering: every
// value ever stored points at an immutable constexpr table entry).
std::atomic<const Variant*> g_active{nullptr};

inline const Variant& active_variant() {
  const Variant* v = g_active.load(std::memory_order_relaxed);
  if (v == nullptr) [[unlikely]] {
    v = &kVariants[static_cast<int>(best_isa())];
    g_active.store(v, std::memory_order_relaxed);
  }
  return *v;
}

inline SquareSums dispatch(const Job<float>& job) { return active_variant().f32(job); }
inline SquareSums dispatch(const Job<double>& job) { return active_variant().f64(job); }

template <typename T>
Job<T> job(Loop loop, const void* params, const T* g, T* w, int64_t n, T* s0 = nullptr, T* s1 = nullptr,
           T* s2 = nullptr, int64_t rows = 0, int64_t cols = 0) {
  return Job<T>{loop, params, g, w, s0, s1, s2, n, rows, cols};
}

}  // namespace

double sum_of_squares(const float* x, int64_t n) {
  return dispatch(job<float>(Loop::sum_of_squares, nullptr, x, nullptr, n)).weights;
}
double sum_of_squares(const double* x, int64_t n) {
  return dispatch(job<double>(Loop::sum_of_squares, nullptr, x, nullptr, n)).weights;
}

double sgd_step(const SgdStep& p, const float* g, float* w, int64_t n) {
  return dispatch(job(Loop::sgd, &p, g, w, n)).weights;
}
double sgd_step(const SgdStep& p, const double* g, double* w, int64_t n) {
  return dispatch(job(Loop::sgd, &p, g, w, n)).weights;
}

double momentum_step(const MomentumStep& p, const float* g, float* w, float* velocity, int64_t n) {
  return dispatch(job(Loop::momentum, &p, g, w, n, velocity)).weights;
}
double momentum_step(const MomentumStep& p, const double* g, double* w, double* velocity, int64_t n) {
  return dispatch(job(Loop::momentum, &p, g, w, n, velocity)).weights;
}

double adam_step(const AdamStep& p, const float* g, float* w, float* m, float* v, int64_t n) {
  return dispatch(job(Loop::adam, &p, g, w, n, m, v)).weights;
}
double adam_step(const AdamStep& p, const double* g, double* w, double* m, double* v, int64_t n) {
  return dispatch(job(Loop::adam, &p, g, w, n, m, v)).weights;
}

double rmsprop_step(const RmsPropStep& p, const float* g, float* w, float* mean_square, int64_t n) {
  return dispatch(job(Loop::rmsprop, &p, g, w, n, mean_square)).weights;
}
double rmsprop_step(const RmsPropStep& p, const double* g, double* w, double* mean_square, int64_t n) {
  return dispatch(job(Loop::rmsprop, &p, g, w, n, mean_square)).weights;
}

// The Adafactor loops read the weight without writing it in their first pass; Job's weight
// pointer is non-const for the apply passes, so the const is cast away here and restored by
// the loop's own const parameter.
double adafactor_factored_moments(const AdafactorMoments& p, const float* g, const float* w, float* r, float* c,
                                  int64_t batch, int64_t rows, int64_t cols) {
  return dispatch(job<float>(Loop::af_fmoments, &p, g, const_cast<float*>(w), batch, r, c, nullptr, rows, cols)).weights;
}
double adafactor_factored_moments(const AdafactorMoments& p, const double* g, const double* w, double* r, double* c,
                                  int64_t batch, int64_t rows, int64_t cols) {
  return dispatch(job<double>(Loop::af_fmoments, &p, g, const_cast<double*>(w), batch, r, c, nullptr, rows, cols)).weights;
}
double adafactor_factored_sum_y2(double grad_scale, const float* g, const float* r, const float* c, int64_t batch,
                                 int64_t rows, int64_t cols) {
  return dispatch(job<float>(Loop::af_fsum_y2, &grad_scale, g, nullptr, batch, const_cast<float*>(r),
                             const_cast<float*>(c), nullptr, rows, cols))
      .y;
}
double adafactor_factored_sum_y2(double grad_scale, const double* g, const double* r, const double* c, int64_t batch,
                                 int64_t rows, int64_t cols) {
  return dispatch(job<double>(Loop::af_fsum_y2, &grad_scale, g, nullptr, batch, const_cast<double*>(r),
                              const_cast<double*>(c), nullptr, rows, cols))
      .y;
}
void adafactor_factored_apply(const AdafactorApply& p, const float* g, float* w, const float* r, const float* c,
                              float* m, int64_t batch, int64_t rows, int64_t cols) {
  dispatch(job(Loop::af_fapply, &p, g, w, batch, const_cast<float*>(r), const_cast<float*>(c), m, rows, cols));
}
void adafactor_factored_apply(const AdafactorApply& p, const double* g, double* w, const double* r, const double* c,
                              double* m, int64_t batch, int64_t rows, int64_t cols) {
  dispatch(job(Loop::af_fapply, &p, g, w, batch, const_cast<double*>(r), const_cast<double*>(c), m, rows, cols));
}
SquareSums adafactor_moments(const AdafactorMoments& p, const float* g, const float* w, float* v, int64_t n) {
  return dispatch(job(Loop::af_moments, &p, g, const_cast<float*>(w), n, v));
}
SquareSums adafactor_moments(const AdafactorMoments& p, const double* g, const double* w, double* v, int64_t n) {
  return dispatch(job(Loop::af_moments, &p, g, const_cast<double*>(w), n, v));
}
void adafactor_apply(const AdafactorApply& p, const float* g, float* w, const float* v, float* m, int64_t n) {
  dispatch(job(Loop::af_apply, &p, g, w, n, const_cast<float*>(v), m));
}
void adafactor_apply(const AdafactorApply& p, const double* g, double* w, const double* v, double* m, int64_t n) {
  dispatch(job(Loop::af_apply, &p, g, w, n, const_cast<double*>(v), m));
}

void force_optimizer_isa(std::optional<ElementwiseIsa> isa) {
  if (!isa) {
    g_active.store(&kVariants[static_cast<int>(best_isa())], std::memory_order_relaxed);
    return;
  }
  CTRAX_REQUIRE(elementwise_isa_supported(*isa), "force_optimizer_isa: this CPU cannot run the ",
                elementwise_isa_name(*isa), " variant (it has: ", cpu_features_string(), ")");
  g_active.store(&kVariants[static_cast<int>(*isa)], std::memory_order_relaxed);
}

ElementwiseIsa active_optimizer_isa() { return active_variant().isa; }

}  // namespace ctrax::kernels
