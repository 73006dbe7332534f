// The native GEMM driver (see driver.h).
#include "driver.h"

#include "pack.h"

#include "../parallel.h"

#include <algorithm>
#include <atomic>

namespace ctrax::kernels::gemm_detail {

namespace {

// Below this many multiply-adds (m * n * k) a GEMM runs on the calling thread: waking a
// worker costs a few microseconds, which is what ~100k FMAs take on one AVX-512 core.
// (Measured: at 128^3 = 2^21 two threads still lose to one on this 2-core machine.)
constexpr int64_t kMinParallelFmas = int64_t{1} << 22;

// An operand is read in place (not packed) when its kc-deep slice spans at most this many
// bytes of rows: small enough that its lines stay in L1/L2 across the tiles that reuse them.
constexpr int64_t kInPlaceMaxRowBytes = 1024;

// op(A) = A is read in place, row by row, when C has at most this many columns.
constexpr int64_t kRowsInPlaceMaxCols = 128;

template <typename T>
PackBuffer<T>& a_buffer() {
  thread_local PackBuffer<T> buffer;
  return buffer;
}
template <typename T>
PackBuffer<T>& b_buffer() {
  thread_local PackBuffer<T> buffer;
  return buffer;
}

template <typename T>
PackBuffer<T>& narrow_buffer() {
  thread_local PackBuffer<T> buffer;
  return buffer;
}

// C = beta * C on an m x n block (beta == 0 writes zeros without reading C).
template <typename T>
void scale_c(int64_t m, int64_t n, T beta, T* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    T* row = c + i * ldc;
    if (beta == T(0)) {
      std::fill(row, row + n, T(0));
    } else if (beta != T(1)) {
      for (int64_t j = 0; j < n; ++j) row[j] *= beta;
    }
  }
}

struct Problem {
  bool trans_a, trans_b;
  int64_t m, n, k;
  int64_t lda, ldb, ldc;
};

// One thread's share: the whole loop nest of driver.h on an m x n block of C.
template <typename T>
void blocked_gemm(const KernelSpec<T>& spec, const Problem& p, T alpha, const T* a, const T* b, T beta,
                  T* c, const GemmEpilogue<T>& epilogue) {
  const int64_t mr = spec.mr, nr = spec.nr;
  // In place: op(B) = B rows are unit stride in j; op(A) = A^T rows are unit stride in i.
  // A single row (column) of tiles reads each B (A) panel exactly once, so packing it would
  // be pure overhead whatever its size.
  const bool b_in_place = !p.trans_b && (p.n * int64_t(sizeof(T)) <= kInPlaceMaxRowBytes || p.m <= mr);
  const bool a_in_place = p.trans_a && (p.m * int64_t(sizeof(T)) <= kInPlaceMaxRowBytes || p.n <= nr);
  // op(A) = A has unit stride along k instead: the kernel can broadcast from its rows directly.
  // Packing it pays once the A block is reused by many column panels, so only for narrow C.
  const bool a_rows_in_place = !p.trans_a && p.n <= kRowsInPlaceMaxCols;

  const int64_t kc_max = std::min(spec.kc, p.k);
  const int64_t mc_max = std::min(spec.mc, p.m);
  const int64_t nc_max = std::min(spec.nc, p.n);
  T* a_pack = a_in_place || a_rows_in_place ? nullptr : a_buffer<T>().reserve((mc_max + mr - 1) / mr * mr * kc_max);
  T* b_pack = b_in_place ? nullptr : b_buffer<T>().reserve((nc_max + nr - 1) / nr * nr * kc_max);

  TileArgs<T> tile{};
  tile.ldc = p.ldc;
  tile.alpha = alpha;

  for (int64_t jc = 0; jc < p.n; jc += spec.nc) {
    const int64_t nc = std::min(spec.nc, p.n - jc);
    for (int64_t pc = 0; pc < p.k; pc += spec.kc) {
      const int64_t kc = std::min(spec.kc, p.k - pc);
      tile.k = kc;
      tile.beta = pc == 0 ? beta : T(1);
      // The epilogue once C holds the whole sum: on the last k block.
      const bool last_block = pc + kc >= p.k;
      tile.relu = last_block && epilogue.relu;

      // B block: panel jr starts at b_block + jr * b_panel_step.
      const T* b_block;
      int64_t b_panel_step;
      if (b_in_place) {
        b_block = b + pc * p.ldb + jc;
        tile.b_stride = p.ldb;
        b_panel_step = 1;
      } else {
        pack_b(p.trans_b, p.trans_b ? b + jc * p.ldb + pc : b + pc * p.ldb + jc, p.ldb, kc, nc,
               static_cast<int>(nr), b_pack);
        b_block = b_pack;
        tile.b_stride = nr;
        b_panel_step = kc;
      }

      for (int64_t ic = 0; ic < p.m; ic += spec.mc) {
        const int64_t mc = std::min(spec.mc, p.m - ic);
        const T* a_block;
        int64_t a_panel_step;
        if (a_in_place) {
          a_block = a + pc * p.lda + ic;
          tile.a_stride = p.lda;
          a_panel_step = 1;
        } else if (a_rows_in_place) {
          a_block = a + ic * p.lda + pc;
          tile.a_stride = 1;
          tile.a_row_stride = p.lda;
          a_panel_step = p.lda;
        } else {
          pack_a(p.trans_a, p.trans_a ? a + pc * p.lda + ic : a + ic * p.lda + pc, p.lda, mc, kc,
                 static_cast<int>(mr), a_pack);
          a_block = a_pack;
          tile.a_stride = mr;
          a_panel_step = kc;
        }

        for (int64_t jr = 0; jr < nc; jr += nr) {
          tile.b = b_block + jr * b_panel_step;
          tile.n = static_cast<int>(std::min(nr, nc - jr));
          tile.bias = last_block && epilogue.bias != nullptr ? epilogue.bias + jc + jr : nullptr;
          T* c_col = c + ic * p.ldc + jc + jr;
          for (int64_t ir = 0; ir < mc; ir += mr) {
            tile.a = a_block + ir * a_panel_step;
            tile.m = static_cast<int>(std::min(mr, mc - ir));
            tile.c = c_col + ir * p.ldc;
            tile.mask = last_block && epilogue.mask != nullptr ? epilogue.mask + (tile.c - c) : nullptr;
            spec.kernel(tile);
          }
        }
      }
    }
  }
}

// blocked_gemm on the whole problem, split over threads when it is big enough. Ranges are
// whole tiles, so the tile grid (and with it every rounding) is that of the one-thread run.
template <typename T>
void threaded_gemm(const KernelSpec<T>& spec, const Problem& p, T alpha, const T* a, const T* b, T beta, T* c,
                   const GemmEpilogue<T>& epilogue) {
  const bool parallel = p.m * p.n * p.k >= kMinParallelFmas && !in_parallel_region() && num_threads() > 1;
  if (!parallel) {
    blocked_gemm(spec, p, alpha, a, b, beta, c, epilogue);
    return;
  }

  // Split the side with more tiles; ranges are whole tiles so the tile grid does not move.
  const int64_t col_tiles = (p.n + spec.nr - 1) / spec.nr;
  const int64_t row_tiles = (p.m + spec.mr - 1) / spec.mr;
  if (col_tiles >= row_tiles) {
    parallel_for(col_tiles, 1, [&](int64_t t0, int64_t t1) {
      const int64_t j0 = t0 * spec.nr, j1 = std::min(p.n, t1 * spec.nr);
      Problem part = p;
      part.n = j1 - j0;
      const T* b_part = p.trans_b ? b + j0 * p.ldb : b + j0;
      GemmEpilogue<T> part_epilogue = epilogue;
      if (epilogue.bias != nullptr) part_epilogue.bias = epilogue.bias + j0;
      if (epilogue.mask != nullptr) part_epilogue.mask = epilogue.mask + j0;
      blocked_gemm(spec, part, alpha, a, b_part, beta, c + j0, part_epilogue);
    });
  } else {
    parallel_for(row_tiles, 1, [&](int64_t t0, int64_t t1) {
      const int64_t i0 = t0 * spec.mr, i1 = std::min(p.m, t1 * spec.mr);
      Problem part = p;
      part.m = i1 - i0;
      const T* a_part = p.trans_a ? a + i0 : a + i0 * p.lda;
      GemmEpilogue<T> part_epilogue = epilogue;
      if (epilogue.mask != nullptr) part_epilogue.mask = epilogue.mask + i0 * p.ldc;
      blocked_gemm(spec, part, alpha, a_part, b, beta, c + i0 * p.ldc, part_epilogue);
    });
  }
}

// The N columns of a k x N row-major B as N rows of k: out[j * k + q] = B(q, j). N fixed at
// compile time so the inner loop unrolls into N streams; for dense rows (ldb == N, a layer's
// weight) the stride is a constant too, and the copy vectorises (a [64, 2] head weight: about
// 35 ns -> 10 ns, which is a tenth of a 4-row head product).
template <typename T, int N>
void copy_columns(const T* b, int64_t ldb, int64_t k, T* out) {
  if (ldb == N) {
    for (int64_t q = 0; q < k; ++q)
      for (int j = 0; j < N; ++j) out[j * k + q] = b[q * N + j];
    return;
  }
  for (int64_t q = 0; q < k; ++q)
    for (int j = 0; j < N; ++j) out[j * k + q] = b[q * ldb + j];
}

// Runs body(i0, i1) on row ranges covering C's rows: the whole [0, m) on the calling thread, or
// ranges over the workers when the problem is big enough. For the paths whose rows of C are
// independent and computed the same way in any range (narrow, small-k), so the split changes no
// bit.
template <typename Body>
void for_row_ranges(const Problem& p, Body&& body) {
  const bool parallel = p.m * p.n * p.k >= kMinParallelFmas && !in_parallel_region() && num_threads() > 1;
  if (parallel)
    parallel_for(p.m, 64, body);
  else
    body(int64_t{0}, p.m);
}

// C with at most kNarrowMaxCols columns (see narrow_body.h for why the register tile does not
// fit it): dot products along k when op(A) = A (rows unit stride in k), vectors along m with
// B broadcast when op(A) = A^T. Neither depends on the thread count: rows of C split freely.
template <typename T>
void narrow_gemm(const KernelSpec<T>& spec, const Problem& p, T alpha, const T* a, const T* b, T beta, T* c) {
  const int n = static_cast<int>(p.n);
  NarrowArgs<T> args{p.m, p.k, n, p.trans_a, a, p.lda, b, 0, 0, c, p.ldc, alpha, beta};
  // op(B)(q, j) = b[q * b_p_stride + j * b_j_stride].
  args.b_p_stride = p.trans_b ? 1 : p.ldb;
  args.b_j_stride = p.trans_b ? p.ldb : 1;
  if (!p.trans_a && !p.trans_b && !(n == 1 && p.ldb == 1)) {
    // The dot form needs B's columns unit stride in k (a single column of dense rows already is).
    T* columns = narrow_buffer<T>().reserve(static_cast<size_t>(p.n * p.k));
    switch (n) {
      case 1: copy_columns<T, 1>(b, p.ldb, p.k, columns); break;
      case 2: copy_columns<T, 2>(b, p.ldb, p.k, columns); break;
      case 3: copy_columns<T, 3>(b, p.ldb, p.k, columns); break;
      default: copy_columns<T, 4>(b, p.ldb, p.k, columns); break;
    }
    args.b = columns;
    args.b_p_stride = 1;
    args.b_j_stride = p.k;
  }
  // The column copy above lives in the calling thread's buffer; workers only read it.
  for_row_ranges(p, [&](int64_t i0, int64_t i1) {
    NarrowArgs<T> part = args;
    part.m = i1 - i0;
    part.a = p.trans_a ? a + i0 : a + i0 * p.lda;
    part.c = c + i0 * p.ldc;
    spec.narrow(part);
  });
}

// C with k <= kSmallKMax (and more than kNarrowMaxCols columns), row by row with the epilogue
// (small_k_body.h). op(B)'s rows must be unit stride in j: B in place, or a copy of B^T (k x n,
// a few hundred elements). Rows of C split over threads freely, as in narrow_gemm.
template <typename T>
void small_k_gemm(const KernelSpec<T>& spec, const Problem& p, T alpha, const T* a, const T* b, T beta, T* c,
                  const GemmEpilogue<T>& epilogue) {
  SmallKArgs<T> args{p.m, p.n, static_cast<int>(p.k), a, p.trans_a ? 1 : p.lda, p.trans_a ? p.lda : 1, b, p.ldb,
                     c, p.ldc, alpha, beta, epilogue.bias, epilogue.relu, epilogue.mask};
  if (p.trans_b) {
    T* rows = narrow_buffer<T>().reserve(static_cast<size_t>(p.n * p.k));
    for (int64_t q = 0; q < p.k; ++q)
      for (int64_t j = 0; j < p.n; ++j) rows[q * p.n + j] = b[j * p.ldb + q];
    args.b = rows;
    args.ldb = p.n;
  }
  for_row_ranges(p, [&](int64_t i0, int64_t i1) {
    SmallKArgs<T> part = args;
    part.m = i1 - i0;
    part.a = a + i0 * args.a_row_stride;
    part.c = c + i0 * p.ldc;
    if (part.mask != nullptr) part.mask = epilogue.mask + i0 * p.ldc;
    spec.small_k(part);
  });
}

std::atomic<bool> g_small_k_path{true};

}  // namespace

void set_small_k_path(bool on) { g_small_k_path.store(on, std::memory_order_relaxed); }

template <typename T>
void native_gemm(const KernelSpec<T>& spec, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                 T alpha, const T* a, int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc,
                 const GemmEpilogue<T>& epilogue) {
  if (m == 0 || n == 0) return;
  const bool has_epilogue = epilogue.bias != nullptr || epilogue.relu || epilogue.mask != nullptr;
  if (k == 0 || alpha == T(0)) {
    scale_c(m, n, beta, c, ldc);
    if (has_epilogue) apply_epilogue_rows(m, n, c, ldc, epilogue);
    return;
  }
  const Problem whole{trans_a, trans_b, m, n, k, lda, ldb, ldc};
  if (n <= kNarrowMaxCols) {
    narrow_gemm(spec, whole, alpha, a, b, beta, c);
    if (has_epilogue) apply_epilogue_rows(m, n, c, ldc, epilogue);
    return;
  }
  if (k <= kSmallKMax && g_small_k_path.load(std::memory_order_relaxed)) {
    small_k_gemm(spec, whole, alpha, a, b, beta, c, epilogue);
    return;
  }
  threaded_gemm(spec, whole, alpha, a, b, beta, c, epilogue);
}

template void native_gemm<float>(const KernelSpec<float>&, bool, bool, int64_t, int64_t, int64_t, float,
                                 const float*, int64_t, const float*, int64_t, float, float*, int64_t,
                                 const GemmEpilogue<float>&);
template void native_gemm<double>(const KernelSpec<double>&, bool, bool, int64_t, int64_t, int64_t, double,
                                  const double*, int64_t, const double*, int64_t, double, double*,
                                  int64_t, const GemmEpilogue<double>&);

}  // namespace ctrax::kernels::gemm_detail
