// General matrix multiply on the GPU: C = alpha * op(A) * op(B) + beta * C, for float32 (several
// hand-written kernel versions plus cuBLAS) and float64 (cuBLAS).
//
// What it is for: the CUDA counterpart of kernels/gemm.h, with the same contract, so that the
// tensor layer can send a matmul to either device with the same arguments:
//   - all matrices are row-major; op(A) is m x k, op(B) is k x n, C is m x n;
//   - with trans_a, A is stored k x m (A^T is read without a copy); lda is the row stride of A
//     as stored, likewise ldb; ldc is the row stride of C;
//   - beta == 0 means C is written without being read (C may hold NaN garbage), and k == 0 or
//     alpha == 0 means A and B are not read: C = beta * C, as in BLAS.
// Every pointer is a device pointer of the current device. The work is queued on
// current_stream() (kernels/cuda/runtime.h) and the call returns without waiting for it.
//
// The float32 versions are a ladder from a naive kernel to tensor cores, in the spirit of
// siboehm's SGEMM_CUDA, each in its own file under kernels/cuda/gemm/. They exist to be
// measured against each other and against cuBLAS (bench/bench_cuda_gemm.cpp); which one
// sgemm() without a version uses is a process-wide setting.
//
// What it is not for: batched or strided-batched products (loop over the batch, or add an
// entry point), non-unit inner strides (pack first), or mixed precisions.
#pragma once

#include <cstdint>

namespace ctrax::kernels::cuda {

// The float32 kernel versions. Version numbers are stable: benches and result files name them.
enum SgemmVersion : int {
  kSgemmCublas = 0,         // cublasSgemm, true FP32 (CUBLAS_DEFAULT_MATH, no TF32)
  kSgemmNaive = 1,          // one thread per element of C
  kSgemmSharedTiling = 2,   // 32 x 32 tiles of A and B in shared memory, coalesced loads
  kSgemmBlocktiling1d = 3,  // each thread computes a column of 8 results
  kSgemmBlocktiling2d = 4,  // each thread computes an 8 x 8 block of results
  kSgemmVectorized = 5,     // 2D blocking with float4 global and shared-memory loads
  kSgemmWarptiling = 6,     // warp-level tiles on top of 5
  kSgemmTf32 = 7,           // tensor cores (WMMA m16n16k8, TF32 inputs, FP32 accumulation), sm_80+
  kSgemmDoubleBuffered = 8, // 256 threads, next k step fetched during this one, k split when few tiles
};

// C = alpha * op(A) * op(B) + beta * C with the given float32 kernel version.
// Throws ctrax::Error for negative sizes, a leading dimension too small for the layout, an
// unknown version, or the TF32 version on a GPU older than sm_80.
void sgemm(int version, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
           const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
// The same with the selected version: default_sgemm_version() unless set_sgemm_version()
// changed it.
void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

int sgemm_version_count();
// A short name ("cublas", "naive", ..., "tf32_wmma"); throws ctrax::Error for an unknown version.
const char* sgemm_version_name(int version);
// The version sgemm() starts with.
int default_sgemm_version();
// Selects the version sgemm() without a version uses, for the whole process (not per thread).
// Throws ctrax::Error for an unknown version.
void set_sgemm_version(int version);
int sgemm_version();

// float64: cublasDgemm, same contract and checks as sgemm.
void dgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
           int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc);

}  // namespace ctrax::kernels::cuda
