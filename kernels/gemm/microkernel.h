// The micro-kernel contract shared by the GEMM driver and the per-ISA kernel files.
//
// A micro-kernel computes one register tile of C, at most MR x NR:
//     C(i, j) = alpha * sum_{p < k} A(i, p) * B(p, j) + beta * C(i, j),  i < m, j < n
// with beta == 0 meaning C is written without being read, then the epilogue if the tile has one. The sum over p always runs in
// increasing p with one fused multiply-add per step into one accumulator per element, whatever
// m and n are, so edge tiles round exactly like full ones and the result of an element does
// not depend on where the tile boundaries fall (which keeps GEMM thread-count independent).
//
// Operand layouts the kernel reads:
//     A(i, p) = a[p * a_stride + i]       a packed panel (a_stride = MR), or op(A) = A^T in place
//     A(i, p) = a[i * a_row_stride + p]   when a_row_stride != 0: op(A) = A read in place, rows
//                                         unit stride in p (the small-matrix path, no packing)
//     B(p, j) = b[p * b_stride + j]       a packed panel (b_stride = NR), or B read in place
// Rows i >= m of A and columns j >= n of B are never read, so panels need no zero padding and
// in-place operands may end exactly at the edge of their allocation.
//
// What it is not for: blocking, packing or threading (driver.h, pack.h): a micro-kernel sees
// one tile and its k loop, nothing more.
#pragma once

#include "../gemm.h"

#include <cstdint>

namespace ctrax::kernels::gemm_detail {

template <typename T>
struct TileArgs {
  int64_t k;
  const T* a;
  int64_t a_stride;
  int64_t a_row_stride;  // 0: A is column-panel shaped (first layout above)
  const T* b;
  int64_t b_stride;
  T* c;
  int64_t ldc;
  T alpha;
  T beta;
  int m;  // 1..MR
  int n;  // 1..NR
  // The epilogue (kernels/gemm.h), set on the last k block only: bias[j] for the tile's column j
  // (null: none), then relu, then the mask (the tile's corner of it, with C's ldc; null: none).
  const T* bias;
  bool relu;
  const T* mask;
};

template <typename T>
using MicroKernel = void (*)(const TileArgs<T>& tile);

// The narrow-C kernel (narrow_body.h): all of C = alpha * op(A) * B + beta * C for a C of
// 1..kNarrowMaxCols columns. Two forms, by the layout of A:
//   a_transposed == false: A(i, p) = a[i * lda + p], and B must have b_p_stride == 1
//                          (dot products along k);
//   a_transposed == true:  A(i, p) = a[p * lda + i] (vectors along m, B broadcast).
// B(p, j) = b[p * b_p_stride + j * b_j_stride]; C(i, j) = c[i * ldc + j].
constexpr int kNarrowMaxCols = 4;

template <typename T>
struct NarrowArgs {
  int64_t m, k;
  int n;  // 1..kNarrowMaxCols
  bool a_transposed;
  const T* a;
  int64_t lda;
  const T* b;
  int64_t b_p_stride, b_j_stride;
  T* c;
  int64_t ldc;
  T alpha, beta;
};

template <typename T>
using NarrowKernel = void (*)(const NarrowArgs<T>& args);

// The small-k kernel (small_k_body.h): all of C = alpha * op(A) * op(B) + beta * C and then the
// epilogue, for k <= kSmallKMax, four rows of C at a time. With k this small the register
// tile's k loop is a few FMAs and its cost is moving C (and the mask) through the tile; row by
// row, each C vector is computed, finished and stored in one go. The maths per element is the
// register tile's: acc = 0, acc = fma(A(i, p), B(p, j), acc) for p = 0, 1, ..., then the
// tile's store (alpha * acc, or fma(alpha, acc, beta * C)), bias, relu and mask, so the bits
// are the same.
//   A(i, p) = a[i * a_row_stride + p * a_p_stride];  B(p, j) = b[p * ldb + j] (op(B) rows, unit
//   stride in j: B in place or a copy of B^T); C(i, j) = c[i * ldc + j]; mask(i, j) =
//   mask[i * ldc + j]; bias[j].
constexpr int kSmallKMax = 4;

template <typename T>
struct SmallKArgs {
  int64_t m, n;
  int k;  // 1..kSmallKMax
  const T* a;
  int64_t a_row_stride, a_p_stride;
  const T* b;
  int64_t ldb;
  T* c;
  int64_t ldc;
  T alpha, beta;
  const T* bias;  // null: none
  bool relu;
  const T* mask;  // null: none
};

template <typename T>
using SmallKKernel = void (*)(const SmallKArgs<T>& args);

// A micro-kernel with the cache blocking chosen for it (by benchmark, see bench/bench_gemm.cpp):
//   kc: depth of a packed panel pair; a B micro-panel (kc x NR) stays in L1 across a block of A.
//   mc: rows of the packed A block (mc x kc), sized to sit in L2.
//   nc: columns of the packed B block (kc x nc), sized for L3.
template <typename T>
struct KernelSpec {
  GemmIsa isa;
  int mr;
  int nr;
  int64_t mc;
  int64_t kc;
  int64_t nc;
  MicroKernel<T> kernel;
  NarrowKernel<T> narrow;
  SmallKKernel<T> small_k;
};

// One per ISA and type, defined in microkernel_<n>_<isa>.cpp. The AVX2 and AVX-512 ones may
// only be called when cpu_features() says the CPU can run them.
KernelSpec<float> portable_sgemm_kernel();
KernelSpec<double> portable_dgemm_kernel();
KernelSpec<float> avx2_sgemm_kernel();
KernelSpec<double> avx2_dgemm_kernel();
KernelSpec<float> avx512_sgemm_kernel();
KernelSpec<double> avx512_dgemm_kernel();

}  // namespace ctrax::kernels::gemm_detail
