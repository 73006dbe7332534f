// kernels/cuda/backend.h in any build: the defaults, the names, and set_backend's checks. On a
// machine without a GPU (or a build without cuDNN) selecting cuDNN must fail with a message that
// names the op and says why, and leave the hand-written backend in place.
#include <ctrax/kernels/cuda/backend.h>
#include <doctest/doctest.h>

#include <string>

#include "../test_util.h"

using namespace ctrax::kernels::cuda;

namespace {

constexpr CudaOp kOps[] = {CudaOp::softmax, CudaOp::activation, CudaOp::convolution};

// Puts every op back on the hand-written backend, whatever a test changed.
struct BackendGuard {
  ~BackendGuard() {
    for (CudaOp op : kOps) set_backend(op, CudaBackend::handwritten);
  }
};

}  // namespace

TEST_CASE("cuda backend: every op starts on the hand-written kernels and names read well") {
  for (CudaOp op : kOps) CHECK(backend(op) == CudaBackend::handwritten);
  CHECK(std::string(cuda_op_name(CudaOp::softmax)) == "softmax");
  CHECK(std::string(cuda_op_name(CudaOp::activation)) == "activation");
  CHECK(std::string(cuda_op_name(CudaOp::convolution)) == "convolution");
  CHECK(std::string(cuda_backend_name(CudaBackend::handwritten)) == "handwritten");
  CHECK(std::string(cuda_backend_name(CudaBackend::cudnn)) == "cudnn");
}

TEST_CASE("cuda backend: selecting handwritten always works") {
  BackendGuard guard;
  for (CudaOp op : kOps) {
    set_backend(op, CudaBackend::handwritten);
    CHECK(backend(op) == CudaBackend::handwritten);
  }
}

TEST_CASE("cuda backend: selecting cudnn without cuDNN or a GPU throws naming the op") {
  BackendGuard guard;
  CHECK(cudnn_available() == cudnn_unavailable_reason().empty());
#ifndef CTRAX_USE_CUDA
  CHECK_FALSE(cudnn_built_in());
#endif
  if (!cudnn_built_in()) CHECK(cudnn_unavailable_reason().find("no cuDNN backend") != std::string::npos);
  for (CudaOp op : kOps) {
    const std::string name = cuda_op_name(op);
    if (cudnn_available()) {
      // A GPU machine with cuDNN: the switch works and reads back.
      set_backend(op, CudaBackend::cudnn);
      CHECK(backend(op) == CudaBackend::cudnn);
      set_backend(op, CudaBackend::handwritten);
    } else {
      ctrax::test::check_error([&] { set_backend(op, CudaBackend::cudnn); },
                               {"set_backend(" + name + ", cudnn)", "cuDNN is not available", cudnn_unavailable_reason()});
    }
    CHECK(backend(op) == CudaBackend::handwritten);
  }
}

TEST_CASE("cuda backend: out-of-range enum values are refused") {
  ctrax::test::check_error([] { set_backend(static_cast<CudaOp>(7), CudaBackend::handwritten); }, {"unknown CudaOp"});
  ctrax::test::check_error([] { set_backend(CudaOp::softmax, static_cast<CudaBackend>(5)); },
                           {"set_backend(softmax)", "unknown CudaBackend"});
  ctrax::test::check_error([] { (void)backend(static_cast<CudaOp>(3)); }, {"unknown CudaOp"});
}
