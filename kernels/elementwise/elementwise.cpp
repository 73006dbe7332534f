// The elementwise loops, compiled once per instruction set, and the run-time choice between
// them (see elementwise.h).
//
// How the variants are made: every loop below is plain C++ over scalars. Each variant is a
// small set of entry points carrying a GCC `target` attribute (none, "avx2,fma", or
// "avx512f,avx512vl,avx512dq,fma") and `flatten`, which inlines the loops into them; the
// auto-vectoriser then widens the inlined loops to the entry point's ISA. No intrinsics are
// needed, and the portable variant is the same source compiled for baseline SSE2.
//
// Only the variant functions carry wide-ISA attributes, and they are the only code that runs
// wide instructions, so nothing can leak AVX code into a baseline path through the linker
// (the hazard of compiling a whole file with -mavx2 when it instantiates inline templates).
#include "elementwise.h"

#include <atomic>
#include <cmath>
#include <type_traits>

#include "../../base/error.h"
#include "../cpu_features.h"
#include "elementwise_math.h"

// With the default -ftrapping-math GCC will not if-convert the NaN-preserving selects
// (x < lo ? lo : x) below for SSE2/AVX2, which leaves the loops scalar. ctrax never reads the
// floating-point exception flags, so allowing comparisons to be evaluated unconditionally
// changes no result. The pragma applies to the functions defined after it in this file only.
#pragma GCC optimize("no-trapping-math")

namespace ctrax::kernels {

namespace {

// ---- loops --------------------------------------------------------------------------------
// One loop per (op, broadcast pattern), each a plain counted loop the vectoriser can widen.

template <BinaryKernel Op, typename T>
inline void binary_loop(const T* a, int64_t a_step, const T* b, int64_t b_step, T* out, int64_t n) {
  if (a_step != 0 && b_step != 0) {
    for (int64_t i = 0; i < n; ++i) out[i] = binary_value<Op>(a[i], b[i]);
  } else if (a_step != 0) {
    const T bv = *b;
    for (int64_t i = 0; i < n; ++i) out[i] = binary_value<Op>(a[i], bv);
  } else if (b_step != 0) {
    const T av = *a;
    for (int64_t i = 0; i < n; ++i) out[i] = binary_value<Op>(av, b[i]);
  } else {
    const T v = binary_value<Op>(*a, *b);
    for (int64_t i = 0; i < n; ++i) out[i] = v;
  }
}

// `rows` rows of n: row r reads a + r * a_row and b + r * b_row (0: the same row for all) and
// writes out + r * n. One call for a whole [rows, n] op, e.g. a bias add, instead of one per row.
template <BinaryKernel Op, typename T>
inline void binary_rows_loop(const T* a, int64_t a_row, int64_t as, const T* b, int64_t b_row, int64_t bs, T* out,
                             int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r) binary_loop<Op>(a + r * a_row, as, b + r * b_row, bs, out + r * n, n);
}

// An operand that is whole rows (row == n, step 1) or one value (row 0, and step 0 or rows of
// one element) reads the same elements as one flat row of rows * n; `flat_step` is then its step
// in that row (1 or 0).
inline bool flat_operand(int64_t row, int64_t step, int64_t n, int64_t& flat_step) {
  if (step == 1 && row == n) {
    flat_step = 1;
    return true;
  }
  if (row == 0 && (step == 0 || n == 1)) {
    flat_step = 0;
    return true;
  }
  return false;
}

template <typename T>
inline void binary_rows_switch(BinaryKernel op, const T* a, int64_t a_row, int64_t as, const T* b, int64_t b_row,
                               int64_t bs, T* out, int64_t rows, int64_t n) {
  // [rows, 1] or a contiguous [rows, n] with a contiguous or scalar other operand: one flat
  // row (a [256, 1] op would otherwise be 256 loops of one element).
  int64_t a_flat = 0, b_flat = 0;
  if (rows > 1 && flat_operand(a_row, as, n, a_flat) && flat_operand(b_row, bs, n, b_flat)) {
    n *= rows;
    rows = 1;
    as = a_flat;
    bs = b_flat;
  }
  switch (op) {
    case BinaryKernel::add: return binary_rows_loop<BinaryKernel::add>(a, a_row, as, b, b_row, bs, out, rows, n);
    case BinaryKernel::sub: return binary_rows_loop<BinaryKernel::sub>(a, a_row, as, b, b_row, bs, out, rows, n);
    case BinaryKernel::mul: return binary_rows_loop<BinaryKernel::mul>(a, a_row, as, b, b_row, bs, out, rows, n);
    case BinaryKernel::div: return binary_rows_loop<BinaryKernel::div>(a, a_row, as, b, b_row, bs, out, rows, n);
    case BinaryKernel::maximum:
      return binary_rows_loop<BinaryKernel::maximum>(a, a_row, as, b, b_row, bs, out, rows, n);
    case BinaryKernel::minimum:
      return binary_rows_loop<BinaryKernel::minimum>(a, a_row, as, b, b_row, bs, out, rows, n);
    case BinaryKernel::relu_backward:
      return binary_rows_loop<BinaryKernel::relu_backward>(a, a_row, as, b, b_row, bs, out, rows, n);
  }
}

template <UnaryKernel Op, typename T>
inline void unary_loop(const T* x, T* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = unary_value<Op>(x[i]);
}

template <typename T>
inline void unary_switch(UnaryKernel op, const T* x, T* out, int64_t n) {
  switch (op) {
    case UnaryKernel::neg: return unary_loop<UnaryKernel::neg>(x, out, n);
    case UnaryKernel::relu: return unary_loop<UnaryKernel::relu>(x, out, n);
    case UnaryKernel::square: return unary_loop<UnaryKernel::square>(x, out, n);
    case UnaryKernel::exp: return unary_loop<UnaryKernel::exp>(x, out, n);
    case UnaryKernel::tanh: return unary_loop<UnaryKernel::tanh>(x, out, n);
    case UnaryKernel::sigmoid: return unary_loop<UnaryKernel::sigmoid>(x, out, n);
    case UnaryKernel::softplus: return unary_loop<UnaryKernel::softplus>(x, out, n);
    case UnaryKernel::log: return unary_loop<UnaryKernel::log>(x, out, n);
  }
}

// B columns summed over all the rows with their sums held in registers (a fixed-size local
// array the compiler keeps in vectors), then stored once.
template <int B, typename T>
inline void accumulate_columns(const T* x, int64_t rows, int64_t row_stride, double* acc) {
  double sums[B];
#pragma GCC unroll 16
  for (int j = 0; j < B; ++j) sums[j] = acc[j];
  for (int64_t r = 0; r < rows; ++r, x += row_stride)
#pragma GCC unroll 16
    for (int j = 0; j < B; ++j) sums[j] += static_cast<double>(x[j]);
#pragma GCC unroll 16
  for (int j = 0; j < B; ++j) acc[j] = sums[j];
}

// Columns in blocks of 16 and 8, then the last 1-7 as one block of their own. Every acc[j]
// still adds its column's values in row order, so the bits are those of the plain row-by-row
// loop. That loop kept the sums in memory (a load and a store per element and row): it ran 3.6x
// slower on the [256, 64] bias gradients of a PPO minibatch, and 4x slower on the [256, 2] of
// its head (Zen 4: 2,100 against 520 TSC cycles), whose few sums each waited on the store of the
// row before.
template <typename T>
inline void accumulate_loop(const T* x, int64_t rows, int64_t row_stride, double* acc, int64_t n) {
  if (rows == 0) return;  // nothing to add, and x may be null (no offset may be applied to it)
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) accumulate_columns<16>(x + j, rows, row_stride, acc + j);
  for (; j + 8 <= n; j += 8) accumulate_columns<8>(x + j, rows, row_stride, acc + j);
  x += j;
  acc += j;
  switch (n - j) {
    case 7: accumulate_columns<7>(x, rows, row_stride, acc); break;
    case 6: accumulate_columns<6>(x, rows, row_stride, acc); break;
    case 5: accumulate_columns<5>(x, rows, row_stride, acc); break;
    case 4: accumulate_columns<4>(x, rows, row_stride, acc); break;
    case 3: accumulate_columns<3>(x, rows, row_stride, acc); break;
    case 2: accumulate_columns<2>(x, rows, row_stride, acc); break;
    case 1: accumulate_columns<1>(x, rows, row_stride, acc); break;
    default: break;
  }
}

// ---- the variants -------------------------------------------------------------------------

using BinaryF32 = void (*)(BinaryKernel, const float*, int64_t, int64_t, const float*, int64_t, int64_t, float*, int64_t,
                           int64_t);
using BinaryF64 = void (*)(BinaryKernel, const double*, int64_t, int64_t, const double*, int64_t, int64_t, double*,
                           int64_t, int64_t);
using UnaryF32 = void (*)(UnaryKernel, const float*, float*, int64_t);
using UnaryF64 = void (*)(UnaryKernel, const double*, double*, int64_t);
using AccumulateF32 = void (*)(const float*, int64_t, int64_t, double*, int64_t);
using AccumulateF64 = void (*)(const double*, int64_t, int64_t, double*, int64_t);

struct Variant {
  ElementwiseIsa isa;
  BinaryF32 binary_f32;
  BinaryF64 binary_f64;
  UnaryF32 unary_f32;
  UnaryF64 unary_f64;
  AccumulateF32 accumulate_f32;
  AccumulateF64 accumulate_f64;
};

// Defines the four entry points of one variant in namespace NAME with the given attributes.
#define CTRAX_ELEMENTWISE_VARIANT(NAME, ATTRIBUTES)                                                            \
  namespace NAME {                                                                                              \
  ATTRIBUTES void binary_f32(BinaryKernel op, const float* a, int64_t ar, int64_t as, const float* b, int64_t br, \
                             int64_t bs, float* o, int64_t rows, int64_t n) {                                   \
    binary_rows_switch(op, a, ar, as, b, br, bs, o, rows, n);                                                   \
  }                                                                                                             \
  ATTRIBUTES void binary_f64(BinaryKernel op, const double* a, int64_t ar, int64_t as, const double* b,         \
                             int64_t br, int64_t bs, double* o, int64_t rows, int64_t n) {                      \
    binary_rows_switch(op, a, ar, as, b, br, bs, o, rows, n);                                                   \
  }                                                                                                             \
  ATTRIBUTES void unary_f32(UnaryKernel op, const float* x, float* o, int64_t n) { unary_switch(op, x, o, n); } \
  ATTRIBUTES void unary_f64(UnaryKernel op, const double* x, double* o, int64_t n) {                           \
    unary_switch(op, x, o, n);                                                                                  \
  }                                                                                                             \
  ATTRIBUTES void accumulate_f32(const float* x, int64_t r, int64_t s, double* acc, int64_t n) {               \
    accumulate_loop(x, r, s, acc, n);                                                                           \
  }                                                                                                             \
  ATTRIBUTES void accumulate_f64(const double* x, int64_t r, int64_t s, double* acc, int64_t n) {              \
    accumulate_loop(x, r, s, acc, n);                                                                           \
  }                                                                                                             \
  }

CTRAX_ELEMENTWISE_VARIANT(portable, __attribute__((flatten)))
CTRAX_ELEMENTWISE_VARIANT(avx2, __attribute__((flatten, target("avx2,fma"))))
CTRAX_ELEMENTWISE_VARIANT(avx512, __attribute__((flatten, target("avx512f,avx512vl,avx512dq,fma"))))
#undef CTRAX_ELEMENTWISE_VARIANT

constexpr Variant kVariants[] = {
    {ElementwiseIsa::portable, portable::binary_f32, portable::binary_f64, portable::unary_f32, portable::unary_f64,
     portable::accumulate_f32, portable::accumulate_f64},
    {ElementwiseIsa::avx2, avx2::binary_f32, avx2::binary_f64, avx2::unary_f32, avx2::unary_f64, avx2::accumulate_f32,
     avx2::accumulate_f64},
    {ElementwiseIsa::avx512, avx512::binary_f32, avx512::binary_f64, avx512::unary_f32, avx512::unary_f64,
     avx512::accumulate_f32, avx512::accumulate_f64},
};

const Variant& variant_of(ElementwiseIsa isa) { return kVariants[static_cast<int>(isa)]; }

ElementwiseIsa best_isa() {
  const CpuFeatures& f = cpu_features();
  if (f.can_run_avx512()) return ElementwiseIsa::avx512;
  if (f.can_run_avx2_fma()) return ElementwiseIsa::avx2;
  return ElementwiseIsa::portable;
}

// The variant in use; null until the first call picks the best one. Relaxed ordering is
// enough: every value ever stored points at an immutable constexpr table entry.
std::atomic<const Variant*> g_active{nullptr};

inline const Variant& active_variant() {
  const Variant* v = g_active.load(std::memory_order_relaxed);
  if (v == nullptr) [[unlikely]] {
    v = &variant_of(best_isa());
    g_active.store(v, std::memory_order_relaxed);
  }
  return *v;
}

}  // namespace

void binary_kernel(BinaryKernel op, const float* a, int64_t a_step, const float* b, int64_t b_step, float* out,
                   int64_t n) {
  active_variant().binary_f32(op, a, 0, a_step, b, 0, b_step, out, 1, n);
}
void binary_kernel(BinaryKernel op, const double* a, int64_t a_step, const double* b, int64_t b_step, double* out,
                   int64_t n) {
  active_variant().binary_f64(op, a, 0, a_step, b, 0, b_step, out, 1, n);
}
void binary_rows_kernel(BinaryKernel op, const float* a, int64_t a_row, int64_t a_step, const float* b, int64_t b_row,
                        int64_t b_step, float* out, int64_t rows, int64_t n) {
  active_variant().binary_f32(op, a, a_row, a_step, b, b_row, b_step, out, rows, n);
}
void binary_rows_kernel(BinaryKernel op, const double* a, int64_t a_row, int64_t a_step, const double* b,
                        int64_t b_row, int64_t b_step, double* out, int64_t rows, int64_t n) {
  active_variant().binary_f64(op, a, a_row, a_step, b, b_row, b_step, out, rows, n);
}
void unary_kernel(UnaryKernel op, const float* x, float* out, int64_t n) { active_variant().unary_f32(op, x, out, n); }
void unary_kernel(UnaryKernel op, const double* x, double* out, int64_t n) {
  active_variant().unary_f64(op, x, out, n);
}
void unary_kernel_baseline(UnaryKernel op, const float* x, float* out, int64_t n) {
  portable::unary_f32(op, x, out, n);
}
void unary_kernel_baseline(UnaryKernel op, const double* x, double* out, int64_t n) {
  portable::unary_f64(op, x, out, n);
}
void accumulate_rows(const float* x, int64_t rows, int64_t row_stride, double* acc, int64_t n) {
  active_variant().accumulate_f32(x, rows, row_stride, acc, n);
}
void accumulate_rows(const double* x, int64_t rows, int64_t row_stride, double* acc, int64_t n) {
  active_variant().accumulate_f64(x, rows, row_stride, acc, n);
}

bool elementwise_isa_supported(ElementwiseIsa isa) {
  const CpuFeatures& f = cpu_features();
  switch (isa) {
    case ElementwiseIsa::portable: return true;
    case ElementwiseIsa::avx2: return f.can_run_avx2_fma();
    case ElementwiseIsa::avx512: return f.can_run_avx512();
  }
  return false;
}

void force_elementwise_isa(std::optional<ElementwiseIsa> isa) {
  if (!isa) {
    g_active.store(&variant_of(best_isa()), std::memory_order_relaxed);
    return;
  }
  CTRAX_REQUIRE(elementwise_isa_supported(*isa), "force_elementwise_isa: this CPU cannot run the ",
                elementwise_isa_name(*isa), " variant (it has: ", cpu_features_string(), ")");
  g_active.store(&variant_of(*isa), std::memory_order_relaxed);
}

ElementwiseIsa active_elementwise_isa() { return active_variant().isa; }

const char* elementwise_isa_name(ElementwiseIsa isa) {
  switch (isa) {
    case ElementwiseIsa::portable: return "portable";
    case ElementwiseIsa::avx2: return "avx2";
    case ElementwiseIsa::avx512: return "avx512";
  }
  return "unknown";
}

}  // namespace ctrax::kernels
