// Convolution and pooling layers, channels-last as Trax (layers/convolution.py, pooling.py):
// 1-D inputs [batch..., length, channels], 2-D [batch..., height, width, channels], with any
// number (>= 1) of leading batch axes. Float inputs only. No NCHW, dilation, groups or 3-D.
// How they are built (im2col, cuDNN on a GPU) and the padding rules: layers/README.md,
// "Convolution and pooling".
//
// Conv: kernel [k..., in_channels, filters] (glorot_uniform, fans counting the receptive field),
// bias [filters] (normal_init(1e-6)). Pools: max or mean per channel over each window; AvgPool
// with SAME divides by the real (unpadded) elements in the window, as JAX and TensorFlow.
// Per spatial axis of size L, window k, stride s: VALID gives floor((L - k) / s) + 1 and needs
// L >= k; SAME gives ceil(L / s), padded as TensorFlow (the extra element, if odd, after).
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
