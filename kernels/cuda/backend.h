// Which implementation runs an op on the GPU: ctrax's hand-written CUDA kernels or NVIDIA's
// cuDNN, chosen at run time per op and process-wide (like set_sgemm_version), so a benchmark can
// time both on the same call and a run can use the vendor library where it is faster. Each op
// keeps its own checks and dtype rules; the backend only decides which code computes the result:
//   softmax     softmax, log_softmax (tensor/ops/softmax.cpp): cudnnSoftmaxForward on the
//               rows once the axis is innermost, float32 and float64;
//   activation  relu, tanh, sigmoid (tensor/ops/unary.cpp) on contiguous float32/float64
//               tensors: cudnnActivationForward;
//   convolution Conv1D, Conv2D (layers/conv.cpp) on float32: cudnnConvolutionForward, and
//               BackwardData / BackwardFilter for the gradients.
// Where cuDNN cannot take a call (another dtype, a strided input, an empty tensor, sizes beyond
// cuDNN's int dimensions) the hand-written kernel runs, so selecting cuDNN never changes which
// calls succeed. GEMM has its own switch (kernels::cuda::set_sgemm_version, kernels/cuda/gemm.h;
// float64 always uses cuBLAS). The CPU has no alternative here. In every build: without cuDNN or
// a CUDA device, set_backend(op, cudnn) throws and backend(op) stays handwritten.
#pragma once

#include <string>

namespace ctrax::kernels::cuda {

enum class CudaOp { softmax, activation, convolution };
enum class CudaBackend { handwritten, cudnn };

// "softmax", "activation", "convolution"; "handwritten", "cudnn".
const char* cuda_op_name(CudaOp op);
const char* cuda_backend_name(CudaBackend backend);

// True when this build of ctrax has the cuDNN backend (configured with CTRAX_CUDNN=ON).
bool cudnn_built_in();
// True when cuDNN is built in, its library loads and a CUDA device is present. Never throws;
// the reason when false is cudnn_unavailable_reason().
bool cudnn_available();
std::string cudnn_unavailable_reason();

// Selects the backend of `op` for the whole process. Throws ctrax::Error naming the op when
// `backend` is cudnn and cudnn_available() is false; handwritten is always accepted.
void set_backend(CudaOp op, CudaBackend backend);
// The selected backend of `op`; handwritten until set_backend changes it.
CudaBackend backend(CudaOp op);

}  // namespace ctrax::kernels::cuda
