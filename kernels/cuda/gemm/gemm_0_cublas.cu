// Version 0: cuBLAS, the reference the hand-written versions are tested and measured against,
// and the float64 path.
//
// Row-major through a column-major library: a row-major m x n matrix with row stride ld is,
// byte for byte, the column-major n x m matrix of its transpose with the same leading
// dimension. So instead of C = op(A) op(B) we ask cuBLAS for
//   C^T = op(B)^T op(A)^T        (n x m = (n x k)(k x m)),
// passing B where cuBLAS expects its first operand and A for its second. Without trans_b, B
// (row-major k x n) already is column-major op(B)^T, so cuBLAS takes it untransposed; with
// trans_b, B is stored n x k row-major = column-major k x n = op(B), so cuBLAS must transpose
// it. Likewise for A. The leading dimensions carry over unchanged, and cuBLAS's own checks
// (ld >= rows of the column-major view) are exactly ours on the row-major storage.
#include <cublas_v2.h>

#include <array>
#include <mutex>

#include "../cuda_check.h"
#include "gemm_common.cuh"

namespace ctrax::kernels::cuda::gemm {

namespace {

#define CTRAX_CUBLAS_CHECK(call)                                                                      \
  do {                                                                                                \
    const cublasStatus_t ctrax_cublas_status_ = (call);                                               \
    if (ctrax_cublas_status_ != CUBLAS_STATUS_SUCCESS) [[unlikely]]                                   \
      CTRAX_THROW("cuBLAS error ", cublasGetStatusName(ctrax_cublas_status_), " (",                    \
                  cublasGetStatusString(ctrax_cublas_status_), ") from ", #call, " at ", __FILE__, ":", \
                  __LINE__);                                                                          \
  } while (0)

constexpr int kMaxDevices = 64;

// One handle per device, created on first use on that device. The handles are never
// destroyed: cublasDestroy at static destruction may run after the CUDA runtime has torn
// the contexts down, which fails (or crashes) for no benefit at process exit.
cublasHandle_t handle_for_current_device() {
  static std::mutex mutex;
  static std::array<cublasHandle_t, kMaxDevices> handles{};
  int device = 0;
  CTRAX_CUDA_CHECK(cudaGetDevice(&device));
  CTRAX_REQUIRE(device >= 0 && device < kMaxDevices, "cuda sgemm (cublas): device index ", device,
                " is beyond the ", kMaxDevices, " devices ctrax keeps cuBLAS handles for");
  std::lock_guard<std::mutex> lock(mutex);
  cublasHandle_t& handle = handles[static_cast<size_t>(device)];
  if (handle == nullptr) {
    CTRAX_CUBLAS_CHECK(cublasCreate(&handle));
    // True FP32: no TF32 tensor-core shortcut, so version 0 is the accuracy reference for the
    // hand-written FP32 kernels (version 7 is the TF32 one, and says so).
    CTRAX_CUBLAS_CHECK(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH));
  }
  return handle;
}

cublasOperation_t op(bool transposed) { return transposed ? CUBLAS_OP_T : CUBLAS_OP_N; }

}  // namespace

void sgemm_cublas(const SgemmArgs& args, cudaStream_t stream) {
  cublasHandle_t handle = handle_for_current_device();
  // Setting the stream on every call is cheap and follows set_device and stream changes.
  CTRAX_CUBLAS_CHECK(cublasSetStream(handle, stream));
  CTRAX_CUBLAS_CHECK(cublasSgemm_64(handle, op(args.trans_b), op(args.trans_a), args.n, args.m, args.k,
                                    &args.alpha, args.b, args.ldb, args.a, args.lda, &args.beta, args.c,
                                    args.ldc));
}

void dgemm_cublas(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
                  int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc,
                  cudaStream_t stream) {
  cublasHandle_t handle = handle_for_current_device();
  CTRAX_CUBLAS_CHECK(cublasSetStream(handle, stream));
  CTRAX_CUBLAS_CHECK(
      cublasDgemm_64(handle, op(trans_b), op(trans_a), n, m, k, &alpha, b, ldb, a, lda, &beta, c, ldc));
}

}  // namespace ctrax::kernels::cuda::gemm
