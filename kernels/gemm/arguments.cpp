// check_gemm_arguments (kernels/gemm.h): the BLAS-style checks of every GEMM entry point. Its own
// file because the CUDA module (libctrax_cuda.so) compiles it too: CPU and GPU reject the same calls.
#include <algorithm>

#include "../../base/error.h"
#include "../gemm.h"

namespace ctrax::kernels {

// Cheap, and they catch a wrong leading dimension before it turns into an out-of-bounds read.
void check_gemm_arguments(const char* name, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                          int64_t lda, int64_t ldb, int64_t ldc) {
  CTRAX_REQUIRE(m >= 0 && n >= 0 && k >= 0, name, ": sizes must be >= 0, got m=", m, " n=", n, " k=", k);
  const int64_t a_cols = trans_a ? m : k;
  const int64_t b_cols = trans_b ? k : n;
  CTRAX_REQUIRE(lda >= std::max<int64_t>(1, a_cols), name, ": lda=", lda, " is less than the ", a_cols,
                " columns of A as stored");
  CTRAX_REQUIRE(ldb >= std::max<int64_t>(1, b_cols), name, ": ldb=", ldb, " is less than the ", b_cols,
                " columns of B as stored");
  CTRAX_REQUIRE(ldc >= std::max<int64_t>(1, n), name, ": ldc=", ldc, " is less than n=", n);
}

}  // namespace ctrax::kernels
