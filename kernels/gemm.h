// General matrix multiply on the CPU: C = alpha * op(A) * op(B) + beta * C.
//
// What it is for: the one entry point every matmul in ctrax goes through. Two backends sit
// behind it and are selectable at run time, so every test and benchmark runs on both:
//   - native:   ctrax's own packed-panel GEMM with register-blocked micro-kernels for
//               AVX-512, AVX2+FMA and a portable fallback, picked by CPU feature detection;
//   - openblas: cblas_sgemm / cblas_dgemm, when ctrax was built with CTRAX_OPENBLAS.
// The backend is taken from the CTRAX_GEMM_BACKEND environment variable ("native" or
// "openblas") at first use, and can be changed with set_gemm_backend().
//
// What it is not for: argument validation of user input (the tensor layer does that) or
// non-unit inner strides (the caller packs such operands first).
//
// Layout: all matrices are row-major. op(A) is m x k, op(B) is k x n, C is m x n.
// With trans_a, A is stored k x m (A^T is read without a copy); lda is the row stride of A
// as stored, likewise ldb. beta == 0 means C is written without being read (so C may hold
// NaN garbage), as in BLAS.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ctrax::kernels {

enum class GemmBackend { native, openblas };

// Instruction set of the native micro-kernel.
enum class GemmIsa { portable, avx2, avx512 };

// The BLAS-style argument checks every GEMM entry point makes, CPU and CUDA alike (so both
// devices reject the same calls): sizes >= 0 and leading dimensions at least the stored row
// length. Throws ctrax::Error naming `name` and the offending argument.
void check_gemm_arguments(const char* name, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                          int64_t lda, int64_t ldb, int64_t ldc);

void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
void dgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
           int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc);

// A GEMM epilogue: what is done to each element of C after the product, in this order, each step
// rounded as the separate op rounds it, so a fused call gives exactly the bits of the GEMM
// followed by those ops (an add, then relu):
//   bias: C(i, j) = C(i, j) + bias[j]           (n values, the same row added to every row of C)
//   relu: C(i, j) = C(i, j) <= 0 ? +0 : C(i, j)  (NaN stays NaN)
//   mask: C(i, j) = M(i, j) > 0 ? C(i, j) : +0   (M laid out like C, same ldc: relu's backward,
//                                                 M being relu's output)
// Applied while the tile is still in registers, so C is written once. What it is for: a compiled
// plan fuses a Dense layer's matmul, bias add and relu into one kernel, and in the backward the
// GEMM of a gradient with relu's backward after it (tensor/plan_fusion.h).
template <typename T>
struct GemmEpilogue {
  const T* bias = nullptr;  // null: no bias
  bool relu = false;
  const T* mask = nullptr;  // null: no mask
};

// C = op(A) * op(B) with the epilogue (alpha = 1, beta = 0: C is written without being read).
void sgemm_fused(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                 const float* b, int64_t ldb, float* c, int64_t ldc, const GemmEpilogue<float>& epilogue);
void dgemm_fused(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda,
                 const double* b, int64_t ldb, double* c, int64_t ldc, const GemmEpilogue<double>& epilogue);

// Floating-point operations (2 m n k per call) of every CPU sgemm and dgemm call of this process
// so far, on either backend: for throughput figures (`ctrax train` prints it).
uint64_t gemm_flop_count();

// Backend selection. Selecting openblas when it was not built in throws ctrax::Error.
void set_gemm_backend(GemmBackend backend);
GemmBackend gemm_backend();
bool openblas_available();
// openblas_get_corename(), or "none" without OpenBLAS.
std::string openblas_corename();
// openblas_get_config() (version and build options, e.g. "OpenBLAS 0.3.21 DYNAMIC_ARCH ..."),
// or "none" without OpenBLAS.
std::string openblas_config();
const char* gemm_backend_name(GemmBackend backend);
// Parses "native" / "openblas"; throws ctrax::Error naming the allowed values otherwise.
GemmBackend parse_gemm_backend(const std::string& name);

// Micro-kernel selection for the native backend. By default the best ISA the CPU supports;
// force_gemm_isa() pins one (tests use it to exercise every kernel the CPU can run) and
// throws ctrax::Error if the CPU cannot run it; std::nullopt returns to automatic choice.
bool gemm_isa_supported(GemmIsa isa);
void force_gemm_isa(std::optional<GemmIsa> isa);
GemmIsa active_gemm_isa();
const char* gemm_isa_name(GemmIsa isa);

}  // namespace ctrax::kernels
