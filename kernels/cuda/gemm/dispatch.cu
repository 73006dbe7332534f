// The entry points of kernels/cuda/gemm.h: argument checks, the version table, the selected
// version, and the cases no kernel needs to see (empty C, k == 0, alpha == 0).
#include <algorithm>
#include <atomic>
#include <climits>

#include "../../gemm.h"  // check_gemm_arguments
#include "../cuda_check.h"
#include "../gemm.h"
#include "../runtime.h"
#include "gemm_common.cuh"

namespace ctrax::kernels::cuda {

namespace {

struct Version {
  const char* name;
  void (*launch)(const gemm::SgemmArgs&, cudaStream_t);
};

// Indexed by SgemmVersion.
constexpr Version kVersions[] = {
    {"cublas", gemm::sgemm_cublas},
    {"naive", gemm::sgemm_naive},
    {"shared_tiling", gemm::sgemm_shared_tiling},
    {"blocktiling_1d", gemm::sgemm_blocktiling_1d},
    {"blocktiling_2d", gemm::sgemm_blocktiling_2d},
    {"vectorized", gemm::sgemm_vectorized},
    {"warptiling", gemm::sgemm_warptiling},
    {"tf32_wmma", gemm::sgemm_tf32_wmma},
    {"double_buffered", gemm::sgemm_double_buffered},
};
constexpr int kVersionCount = static_cast<int>(sizeof(kVersions) / sizeof(kVersions[0]));
static_assert(kVersionCount == kSgemmDoubleBuffered + 1, "kVersions must list every SgemmVersion in order");

std::atomic<int>& selected_version() {
  static std::atomic<int> version{default_sgemm_version()};
  return version;
}

void require_version(const char* what, int version) {
  CTRAX_REQUIRE(version >= 0 && version < kVersionCount, what, ": unknown sgemm version ", version,
                " (versions are 0 to ", kVersionCount - 1, ")");
}

// C = beta * C over an m x n block (k == 0 or alpha == 0: the product term vanishes, and BLAS
// does not read A or B then); beta == 0 writes zeros without reading C.
template <typename T>
__global__ void scale_c_kernel(int64_t m, int64_t n, T beta, T* c, int64_t ldc) {
  for (int64_t i = blockIdx.y; i < m; i += gridDim.y)
    for (int64_t j = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; j < n; j += int64_t{gridDim.x} * blockDim.x) {
      T* p = c + i * ldc + j;
      *p = beta == T(0) ? T(0) : beta * *p;
    }
}

template <typename T>
void scale_c(int64_t m, int64_t n, T beta, T* c, int64_t ldc, cudaStream_t stream) {
  if (beta == T(1)) return;
  constexpr int kThreads = 256;
  const int64_t blocks_x = std::min<int64_t>((n + kThreads - 1) / kThreads, 1024);
  const int64_t blocks_y = std::min<int64_t>(m, 65535);
  scale_c_kernel<T><<<dim3(static_cast<unsigned>(blocks_x), static_cast<unsigned>(blocks_y)), kThreads, 0, stream>>>(
      m, n, beta, c, ldc);
  CTRAX_CUDA_CHECK_LAUNCH("scale_c_kernel");
}

bool supports_tf32_wmma() {
  int device = 0, major = 0;
  CTRAX_CUDA_CHECK(cudaGetDevice(&device));
  CTRAX_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  return major >= 8;
}

}  // namespace

int sgemm_version_count() { return kVersionCount; }

const char* sgemm_version_name(int version) {
  require_version("sgemm_version_name", version);
  return kVersions[version].name;
}

// The fastest hand-written FP32 version on an H200 from 1024 up (bench/results/cuda.md).
int default_sgemm_version() { return kSgemmDoubleBuffered; }

void set_sgemm_version(int version) {
  require_version("set_sgemm_version", version);
  selected_version().store(version, std::memory_order_relaxed);
}

int sgemm_version() { return selected_version().load(std::memory_order_relaxed); }

void sgemm(int version, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  require_version("cuda sgemm", version);
  check_gemm_arguments("cuda sgemm", trans_a, trans_b, m, n, k, lda, ldb, ldc);
  CTRAX_REQUIRE(version != kSgemmTf32 || supports_tf32_wmma(),
                "cuda sgemm: version 7 (tf32_wmma) needs a GPU of compute capability 8.0 or newer");
  if (m == 0 || n == 0) return;
  const auto stream = static_cast<cudaStream_t>(current_stream());
  if (k == 0 || alpha == 0.0f) {
    scale_c(m, n, beta, c, ldc, stream);
    return;
  }
  // The kernels index within a matrix with int (a dense operand with 2^31 rows would not fit
  // in memory anyway); leading dimensions and pointer offsets stay 64-bit.
  CTRAX_REQUIRE(m <= INT_MAX && n <= INT_MAX && k <= INT_MAX, "cuda sgemm: sizes m=", m, " n=", n, " k=", k,
                " exceed 2^31 - 1");
  const gemm::SgemmArgs args{trans_a, trans_b, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k),
                             alpha, a, lda, b, ldb, beta, c, ldc};
  kVersions[version].launch(args, stream);
}

void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  sgemm(sgemm_version(), trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void dgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
           int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  check_gemm_arguments("cuda dgemm", trans_a, trans_b, m, n, k, lda, ldb, ldc);
  if (m == 0 || n == 0) return;
  const auto stream = static_cast<cudaStream_t>(current_stream());
  if (k == 0 || alpha == 0.0) {
    scale_c(m, n, beta, c, ldc, stream);
    return;
  }
  gemm::dgemm_cublas(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, stream);
}

}  // namespace ctrax::kernels::cuda
