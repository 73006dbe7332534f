// Convolution and pooling layers, channels-last as Trax (layers/convolution.py, pooling.py):
// 1-D inputs are [batch..., length, channels], 2-D inputs [batch..., height, width, channels].
// Any number (>= 1) of leading batch axes is accepted; they are folded into one and restored.
//
// What it is not for: channels-first (NCHW) data, dilation, groups, or 3-D inputs (none of
// them is built).
//
//   Conv1D(filters, k, s, padding, use_bias)
//   Conv2D(filters, {kh, kw}, {sh, sw}, padding, use_bias)
//       y[b, o..., f] = sum_{j..., c} x_pad[b, o*s + j ..., c] kernel[j..., c, f] + bias[f]
//       kernel [k..., in_channels, filters] from glorot_uniform (its fans multiply the leading
//       axes in as the receptive field: fan_in = prod(k) * in, fan_out = prod(k) * filters);
//       bias [filters] from normal_init(1e-6).
//   MaxPool1D / MaxPool2D, AvgPool1D / AvgPool2D (pool size, strides = pool size by default,
//       padding): the max or mean over each window, per channel. AvgPool with SAME divides by
//       the number of real (unpadded) elements in the window, as JAX's and TensorFlow's
//       avg_pool do, so border outputs are not pulled towards zero.
//   All of them take float inputs only (cast integer images first).
//
// Shape maths, per spatial axis of size L with window k and stride s:
//   VALID: no padding, out = floor((L - k) / s) + 1; needs L >= k.
//   SAME:  out = ceil(L / s); the total padding max((out - 1) s + k - L, 0) is split as
//          TensorFlow does, floor(total / 2) before and the rest (one more when odd) after.
//          Every window then holds at least one real element.
//
// How: the forward is built from differentiable tensor ops only, so autodiff gives the backward.
// The input is padded (zeros for Conv and AvgPool, -inf for MaxPool), then for every kernel
// offset j a strided slice x_pad[:, j : j + s (out - 1) + 1 : s, ...] picks that offset's
// element of every window; stacking the prod(k) slices gives the windows
// [batch, out..., prod(k), channels]. Conv reshapes them to rows of prod(k) * channels (im2col)
// and does one matmul with the kernel viewed as [prod(k) * channels, filters]; the pools take
// max or mean over the window axis.
// The exception, on a GPU with cuDNN selected (kernels/cuda/backend.h, CudaOp::convolution) and
// float32 data: Conv1D/Conv2D call cuDNN's convolution forward, and its backward-data and
// backward-filter through a custom gradient (autograd/custom.h).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "initializers.h"
#include "layer.h"

namespace ctrax {

enum class Padding { valid, same };
// "VALID" or "SAME" (case-insensitive); anything else throws ctrax::Error.
Padding padding_from_string(const std::string& name);
const char* padding_name(Padding padding);

// Output size of one spatial axis (see above); throws ctrax::Error for VALID with size < window.
int64_t conv_output_size(int64_t size, int64_t window, int64_t stride, Padding padding);
// {before, after} padding of one spatial axis: {0, 0} for VALID.
std::pair<int64_t, int64_t> conv_padding(int64_t size, int64_t window, int64_t stride, Padding padding);

struct ConvInit {
  Initializer kernel_init = glorot_uniform();
  Initializer bias_init = normal_init(1e-6);
};

LayerPtr Conv1D(int64_t filters, int64_t kernel_size, int64_t stride = 1, Padding padding = Padding::valid,
                bool use_bias = true, ConvInit init = {});
LayerPtr Conv2D(int64_t filters, std::array<int64_t, 2> kernel_size, std::array<int64_t, 2> strides = {1, 1},
                Padding padding = Padding::valid, bool use_bias = true, ConvInit init = {});

// Strides default to the pool size (non-overlapping windows), as Trax.
LayerPtr MaxPool1D(int64_t pool_size = 2, std::optional<int64_t> stride = std::nullopt,
                   Padding padding = Padding::valid);
LayerPtr MaxPool2D(std::array<int64_t, 2> pool_size = {2, 2},
                   std::optional<std::array<int64_t, 2>> strides = std::nullopt, Padding padding = Padding::valid);
LayerPtr AvgPool1D(int64_t pool_size = 2, std::optional<int64_t> stride = std::nullopt,
                   Padding padding = Padding::valid);
LayerPtr AvgPool2D(std::array<int64_t, 2> pool_size = {2, 2},
                   std::optional<std::array<int64_t, 2>> strides = std::nullopt, Padding padding = Padding::valid);

}  // namespace ctrax
