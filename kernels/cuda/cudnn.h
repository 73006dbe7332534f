// cuDNN calls for the ops that backend.h can send to it: softmax rows, activations and 2-D
// convolution (CTRAX_USE_CUDNN builds only; include only under #ifdef CTRAX_USE_CUDNN).
//
// What it is for: the vendor side of the hand-written/cuDNN comparison. Plain C++ over raw
// device pointers of the current device, like the other kernels/cuda headers; no cuDNN type
// appears here, so callers do not need cudnn.h's include path. Each function queues its work on
// current_stream() (kernels/cuda/runtime.h) and returns without waiting. One cudnnHandle_t per
// device, created on first use and bound to that stream on every call. Every cuDNN call is
// checked: a failure throws ctrax::Error naming the call, cuDNN's message, the file and line.
//
// Numerics: float32 convolutions run with CUDNN_FMA_MATH (true FP32, no TF32 tensor cores), so
// cuDNN and the hand-written path agree to float32 rounding, as sgemm's cuBLAS version does.
//
// What it is not for: strided views (callers make inputs contiguous or use the hand-written
// kernels), or choosing between backends (backend.h).
#pragma once

#include <cstdint>

#include "strided.h"

namespace ctrax::kernels::cuda {

// cudnnGetVersion() of the loaded library (e.g. 91900 for 9.19.0); 0 if it does not answer.
int cudnn_library_version();

// y[r, :] = softmax(x[r, :]) (log_softmax with `log`) for `rows` contiguous rows of `len`
// elements; float32 or float64 (cudnnSoftmaxForward, ACCURATE: the max is subtracted first).
// x and y may not overlap. rows * len must fit cuDNN's int sizes (checked).
void cudnn_softmax_rows(const void* x, void* y, ElementType type, int64_t rows, int64_t len, bool log);

enum class CudnnActivation { relu, tanh, sigmoid };
// y[i] = f(x[i]) for n contiguous float32 or float64 elements (NaN propagates, as the CPU's).
void cudnn_activation(CudnnActivation activation, const void* x, void* y, ElementType type, int64_t n);

// A 2-D cross-correlation (what ctrax and deep learning call convolution), channels-last:
//   x [batch, height, width, in_channels]           NHWC
//   w [filters, kernel_h, kernel_w, in_channels]    KRSC (cuDNN's NHWC filter layout)
//   y [batch, out_h, out_w, filters]                NHWC
//   y[b, i, j, f] = sum_{p, q, c} x[b, i s_h + p - pad_h, j s_w + q - pad_w, c] w[f, p, q, c]
// with zeros outside x. The padding is the same on both sides of an axis (cuDNN's legacy API);
// callers pad an asymmetric extra row or column themselves.
// out = floor((size + 2 pad - kernel) / stride) + 1 per axis.
struct CudnnConv2d {
  int64_t batch = 0, height = 0, width = 0, in_channels = 0;
  int64_t filters = 0, kernel_h = 0, kernel_w = 0;
  int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
  int64_t out_h() const { return (height + 2 * pad_h - kernel_h) / stride_h + 1; }
  int64_t out_w() const { return (width + 2 * pad_w - kernel_w) / stride_w + 1; }
};

// Throws ctrax::Error for a non-positive size, a window larger than the padded input, sizes
// beyond cuDNN's int dimensions, or a dtype other than float32. The algorithm for each shape is
// cuDNN's first working heuristic choice (cudnnGetConvolution*Algorithm_v7), remembered per
// shape and device; its workspace comes from ctrax's caching allocator.
void cudnn_conv2d_forward(const CudnnConv2d& conv, ElementType type, const void* x, const void* w, void* y);
// dx = dL/dx from dy = dL/dy (overwrites dx).
void cudnn_conv2d_backward_data(const CudnnConv2d& conv, ElementType type, const void* w, const void* dy, void* dx);
// dw = dL/dw from x and dy (overwrites dw).
void cudnn_conv2d_backward_filter(const CudnnConv2d& conv, ElementType type, const void* x, const void* dy,
                                  void* dw);

}  // namespace ctrax::kernels::cuda
