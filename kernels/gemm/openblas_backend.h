// The OpenBLAS GEMM backend: a thin wrapper over cblas_?gemm (row-major).
//
// Built meaningfully only with CTRAX_USE_OPENBLAS (the root CMake defines it for this file and
// finds cblas.h). OpenBLAS is not linked: the first question (available(), a GEMM) opens it
// with dlopen, so programs that keep the native GEMM never load it. Without it, or when it does
// not load, available() is false, unavailable_reason() says why and the gemm entry points
// throw ctrax::Error.
// OpenBLAS's own thread count follows ctrax's num_threads(), so "2 threads" means the same
// thing for both backends in benchmarks.
// What it is not for: BLAS routines other than ?gemm, or choosing the backend (kernels/gemm.h,
// CTRAX_GEMM_BACKEND).
#pragma once

#include <cstdint>
#include <string>

namespace ctrax::kernels::openblas_backend {

bool available();
std::string unavailable_reason();
std::string corename();  // openblas_get_corename(), "none" without OpenBLAS
std::string config();    // openblas_get_config(), e.g. "OpenBLAS 0.3.21 DYNAMIC_ARCH ...", or "none"

void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
void dgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
           int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc);

}  // namespace ctrax::kernels::openblas_backend
