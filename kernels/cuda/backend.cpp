// The per-op GPU backend switch (see backend.h). Part of the core: without a CUDA module built
// with cuDNN it answers "not available" and only accepts the hand-written backend.
#include "backend.h"

#include <array>
#include <atomic>

#include "../../base/error.h"
#include "runtime.h"

#include "cudnn.h"

namespace ctrax::kernels::cuda {

namespace {

constexpr size_t kOpCount = 3;

// One relaxed atomic per op: readers on the hot path only need to see some recent choice.
std::array<std::atomic<int>, kOpCount>& selections() {
  static std::array<std::atomic<int>, kOpCount> chosen{};  // zero: handwritten
  return chosen;
}

size_t op_index(CudaOp op) {
  const auto i = static_cast<size_t>(op);
  CTRAX_REQUIRE(i < kOpCount, "cuda backend: unknown CudaOp value ", static_cast<int>(op));
  return i;
}

}  // namespace

const char* cuda_op_name(CudaOp op) {
  switch (op) {
    case CudaOp::softmax: return "softmax";
    case CudaOp::activation: return "activation";
    case CudaOp::convolution: return "convolution";
  }
  return "unknown op";
}

const char* cuda_backend_name(CudaBackend backend) {
  return backend == CudaBackend::cudnn ? "cudnn" : "handwritten";
}

std::string cudnn_unavailable_reason() {
  if (!cudnn_built_in())
    return module_loaded()
               ? "this build of ctrax has no cuDNN backend (configure with -DCTRAX_CUDA=ON -DCTRAX_CUDNN=ON on a "
                 "machine with cuDNN installed in the CUDA toolkit)"
               : "this build of ctrax has no cuDNN backend: " + unavailable_reason();
  if (!available()) return "no CUDA device: " + unavailable_reason();
  if (cudnn_library_version() <= 0) return "the cuDNN library did not load";
  return "";
}

bool cudnn_available() { return cudnn_unavailable_reason().empty(); }

void set_backend(CudaOp op, CudaBackend backend) {
  const size_t i = op_index(op);
  CTRAX_REQUIRE(backend == CudaBackend::handwritten || backend == CudaBackend::cudnn,
                "set_backend(", cuda_op_name(op), "): unknown CudaBackend value ", static_cast<int>(backend));
  if (backend == CudaBackend::cudnn) {
    const std::string why = cudnn_unavailable_reason();
    CTRAX_REQUIRE(why.empty(), "set_backend(", cuda_op_name(op), ", cudnn): cuDNN is not available: ", why,
                  "; the ", cuda_op_name(op), " op keeps the hand-written CUDA kernels");
  }
  selections()[i].store(static_cast<int>(backend), std::memory_order_relaxed);
}

CudaBackend backend(CudaOp op) {
  return static_cast<CudaBackend>(selections()[op_index(op)].load(std::memory_order_relaxed));
}

}  // namespace ctrax::kernels::cuda
