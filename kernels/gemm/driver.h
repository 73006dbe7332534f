// The native GEMM driver: cache blocking, packing decisions and threading around a micro-kernel.
//
// Loop nest (Goto / BLIS), for C = alpha * op(A) * op(B) + beta * C:
//   jc over n in steps of nc          B block kc x nc        (L3)
//     pc over k in steps of kc        packed once per (jc, pc)
//       ic over m in steps of mc      A block mc x kc        (L2), packed once per (ic, pc)
//         jr over nc in steps of NR   B micro-panel kc x NR  (L1), reused across the A block
//           ir over mc in steps of MR micro-kernel on an MR x NR tile of C
// beta is applied by the first k block only; later k blocks accumulate (beta = 1).
//
// Small problems (the RL shapes) skip packing where it does not pay: op(B) = B already has
// unit stride along n, and op(A) = A^T already has unit stride along m, which is all the
// micro-kernel needs, so those are read in place when they are small enough to stay in cache.
//
// C with at most 4 columns (a value head, a 2-action policy) does not fill a register tile's
// 16-32 lanes; it takes the narrow path instead (narrow_body.h, driver.cpp: narrow_gemm). A
// product with k <= 4 (a first layer over a few features, the backward through a narrow head)
// runs row by row with its epilogue (small_k_body.h), the register tile's bits.
//
// Threads split C into column (or row) ranges aligned to NR (MR). The k blocking and the tile
// grid are the same for every split, and each tile's k loop is fixed, so the result is
// bitwise independent of the thread count. Work below a threshold stays on the caller.
//
// What it is not for: choosing the backend or checking arguments (kernels/gemm.h does both),
// or the arithmetic of a tile (the micro-kernels, microkernel.h).
#pragma once

#include "microkernel.h"

#include <cstdint>

namespace ctrax::kernels::gemm_detail {

// The epilogue (kernels/gemm.h) is applied by the micro-kernel on the last k block of each tile,
// or as a pass over C on the paths without it (narrow C, k == 0).
template <typename T>
void native_gemm(const KernelSpec<T>& spec, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                 T alpha, const T* a, int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc,
                 const GemmEpilogue<T>& epilogue = {});

// Whether k <= kSmallKMax takes the small-k path (default) or the register tile: for tests and
// benchmarks comparing the two (same bits either way). Process-wide.
void set_small_k_path(bool on);

// The epilogue as a pass over an m x n block of C (gemm.cpp).
template <typename T>
void apply_epilogue_rows(int64_t m, int64_t n, T* c, int64_t ldc, const GemmEpilogue<T>& epilogue);

}  // namespace ctrax::kernels::gemm_detail
