// The OpenBLAS GEMM backend (see openblas_backend.h).
#include "openblas_backend.h"

#include <ctrax/kernels/check.h>
#include <ctrax/kernels/parallel.h>

#ifdef CTRAX_USE_OPENBLAS
#include <cblas.h>

#include <atomic>
#include <climits>
#endif

namespace ctrax::kernels::openblas_backend {

#ifdef CTRAX_USE_OPENBLAS

namespace {

// cblas takes int sizes; larger ones would silently wrap.
void require_int(int64_t value, const char* what) {
  CTRAX_REQUIRE(value >= 0 && value <= INT_MAX, "gemm (openblas backend): ", what, " = ", value,
                " does not fit OpenBLAS's 32-bit int");
}

void check_sizes(int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldc) {
  require_int(m, "m");
  require_int(n, "n");
  require_int(k, "k");
  require_int(lda, "lda");
  require_int(ldb, "ldb");
  require_int(ldc, "ldc");
}

// Keeps OpenBLAS's thread count equal to ctrax's; only calls into OpenBLAS when it changes.
void sync_threads() {
  static std::atomic<int> applied{0};
  const int wanted = num_threads();
  if (applied.load(std::memory_order_relaxed) != wanted) {
    openblas_set_num_threads(wanted);
    applied.store(wanted, std::memory_order_relaxed);
  }
}

CBLAS_TRANSPOSE trans(bool t) { return t ? CblasTrans : CblasNoTrans; }

}  // namespace

bool available() { return true; }
std::string corename() { return openblas_get_corename(); }
std::string config() { return openblas_get_config(); }

void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  check_sizes(m, n, k, lda, ldb, ldc);
  sync_threads();
  cblas_sgemm(CblasRowMajor, trans(trans_a), trans(trans_b), int(m), int(n), int(k), alpha, a, int(lda), b,
              int(ldb), beta, c, int(ldc));
}

void dgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
           int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  check_sizes(m, n, k, lda, ldb, ldc);
  sync_threads();
  cblas_dgemm(CblasRowMajor, trans(trans_a), trans(trans_b), int(m), int(n), int(k), alpha, a, int(lda), b,
              int(ldb), beta, c, int(ldc));
}

#else  // !CTRAX_USE_OPENBLAS

bool available() { return false; }
std::string corename() { return "none"; }
std::string config() { return "none"; }

void sgemm(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t, float,
           float*, int64_t) {
  CTRAX_THROW("gemm: the openblas backend is not available (ctrax was built without CTRAX_OPENBLAS)");
}

void dgemm(bool, bool, int64_t, int64_t, int64_t, double, const double*, int64_t, const double*, int64_t,
           double, double*, int64_t) {
  CTRAX_THROW("gemm: the openblas backend is not available (ctrax was built without CTRAX_OPENBLAS)");
}

#endif

}  // namespace ctrax::kernels::openblas_backend
