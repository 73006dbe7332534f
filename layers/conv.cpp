// Convolution and pooling layers (see conv.h for the maths).
//
// On a GPU with backend(CudaOp::convolution) == cudnn (kernels/cuda/backend.h), a float32
// Conv1D/Conv2D runs cuDNN instead of im2col + matmul: cudnnConvolutionForward inside
// custom_gradient, whose backward is cudnnConvolutionBackwardData and BackwardFilter. Conv1D is a
// 1 x L image. Around it, differentiable tensor ops do the layout work, so autodiff handles
// them: the kernel [kh, kw, c, f] is permuted to cuDNN's [f, kh, kw, c], and SAME's odd extra
// row/column after the input (cuDNN pads both sides equally) is added with pad(). The bias is
// added with add() as on the im2col path.
#include "conv.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <sstream>
#include <vector>

#include "../base/error.h"
#include "../tensor/ops.h"
#include <climits>

#include "../autograd/custom.h"
#include "../kernels/cuda/backend.h"
#include "../kernels/cuda/cudnn.h"
#include "../kernels/cuda/runtime.h"

namespace ctrax {

Padding padding_from_string(const std::string& name) {
  std::string upper;
  for (char c : name) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (upper == "VALID") return Padding::valid;
  if (upper == "SAME") return Padding::same;
  CTRAX_THROW("padding must be \"VALID\" or \"SAME\", got \"", name, "\"");
}

const char* padding_name(Padding padding) { return padding == Padding::valid ? "VALID" : "SAME"; }

int64_t conv_output_size(int64_t size, int64_t window, int64_t stride, Padding padding) {
  CTRAX_REQUIRE(window >= 1 && stride >= 1, "conv_output_size: window and stride must be >= 1, got ", window, " and ",
                stride);
  if (padding == Padding::same) return (size + stride - 1) / stride;  // ceil(L / s)
  CTRAX_REQUIRE(size >= window, "a VALID window of ", window, " does not fit in a spatial size of ", size);
  return (size - window) / stride + 1;  // floor((L - k) / s) + 1
}

std::pair<int64_t, int64_t> conv_padding(int64_t size, int64_t window, int64_t stride, Padding padding) {
  if (padding == Padding::valid) return {0, 0};
  const int64_t out = conv_output_size(size, window, stride, padding);
  const int64_t total = std::max<int64_t>((out - 1) * stride + window - size, 0);
  return {total / 2, total - total / 2};  // TensorFlow's split: the odd one goes at the end
}

namespace {

std::string dims_string(const std::vector<int64_t>& v) {
  std::ostringstream out;
  for (size_t i = 0; i < v.size(); ++i) out << (i ? "x" : "") << v[i];
  return out.str();
}

int64_t product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t d : v) p *= d;
  return p;
}

// The window geometry of one input: the folded batch, the spatial sizes, the output sizes and
// the padding of each spatial axis.
struct Geometry {
  Shape batch_dims;  // the leading axes, restored on the output
  int64_t batch = 1;
  std::vector<int64_t> in, out;
  std::vector<std::pair<int64_t, int64_t>> pads;
  int64_t channels = 0;
};

// Base of Conv and the pools: N spatial axes, a window and strides per axis, a padding mode.
class SpatialLayer : public Layer {
 protected:
  SpatialLayer(std::string name, std::string kind, std::vector<int64_t> window, std::vector<int64_t> strides,
               Padding padding)
      : Layer(std::move(name), 1, 1), window_(std::move(window)), strides_(std::move(strides)), padding_(padding) {
    CTRAX_REQUIRE(window_.size() == strides_.size(), kind, ": ", window_.size(), " window sizes but ", strides_.size(),
                  " strides");
    for (int64_t k : window_) CTRAX_REQUIRE(k >= 1, kind, ": window sizes must be >= 1, got ", dims_string(window_));
    for (int64_t s : strides_) CTRAX_REQUIRE(s >= 1, kind, ": strides must be >= 1, got ", dims_string(strides_));
  }

  int n_spatial() const { return static_cast<int>(window_.size()); }

  // Checks an input of this shape and dtype and works out its geometry.
  Geometry geometry(const Shape& shape, DType dtype) const {
    const int n = n_spatial();
    const char* layout = n == 1 ? "[batch, length, channels]" : "[batch, height, width, channels]";
    std::ostringstream got;
    got << shape;
    if (shape.rank() < n + 2)
      fail("input has rank " + std::to_string(shape.rank()) + " (shape " + got.str() + "), expected " +
           std::to_string(n + 2) + ": " + layout);
    if (!is_floating(dtype)) fail(std::string("input dtype ") + dtype_name(dtype) + " is not a float dtype");
    Geometry g;
    const int lead = shape.rank() - n - 1;
    for (int d = 0; d < lead; ++d) {
      g.batch_dims.push_back(shape[d]);
      g.batch *= shape[d];
    }
    for (int d = 0; d < n; ++d) {
      const int64_t size = shape[lead + d];
      if (padding_ == Padding::valid && size < window_[d])
        fail("window " + dims_string(window_) + " is bigger than the VALID input's spatial size " +
             dims_string(std::vector<int64_t>(shape.begin() + lead, shape.begin() + lead + n)) + " (shape " +
             got.str() + "); use SAME padding or a smaller window");
      g.in.push_back(size);
      g.out.push_back(conv_output_size(size, window_[d], strides_[d], padding_));
      g.pads.push_back(conv_padding(size, window_[d], strides_[d], padding_));
    }
    g.channels = shape.back();
    return g;
  }

  // The windows of x as [batch, out..., prod(window), channels] (see conv.h): pad, then one
  // strided slice per window offset, stacked. Only differentiable ops, so gradients flow to x.
  Tensor windows(const Tensor& x, const Geometry& g, double pad_value) const {
    const int n = n_spatial();
    Shape folded{g.batch};
    for (int64_t d : g.in) folded.push_back(d);
    folded.push_back(g.channels);
    Tensor xp = x.reshape(folded);
    std::vector<std::pair<int64_t, int64_t>> widths(static_cast<size_t>(n + 2), {0, 0});
    bool padded = false;
    for (int d = 0; d < n; ++d) {
      widths[d + 1] = g.pads[d];
      padded = padded || g.pads[d].first || g.pads[d].second;
    }
    if (padded) xp = pad(xp, widths, pad_value);
    std::vector<Tensor> parts;
    std::vector<int64_t> offset(static_cast<size_t>(n), 0);
    for (int64_t i = 0; i < product(window_); ++i) {
      int64_t rest = i;  // row-major over the window axes, matching the kernel's [k..., c, f] layout
      for (int d = n - 1; d >= 0; --d) {
        offset[d] = rest % window_[d];
        rest /= window_[d];
      }
      Tensor v = xp;
      for (int d = 0; d < n; ++d)
        v = v.slice(d + 1, offset[d], offset[d] + strides_[d] * (g.out[d] - 1) + 1, strides_[d]);
      parts.push_back(v);
    }
    // A single offset (1x1 window) needs no stacking copy.
    return parts.size() == 1 ? parts[0].unsqueeze(n + 1) : stack(parts, n + 1);
  }

  // [batch, out..., rest] back to the input's leading axes: [batch_dims..., out..., rest].
  static Tensor unfold_batch(const Tensor& y, const Geometry& g) {
    Shape shape = g.batch_dims;
    for (int64_t d : g.out) shape.push_back(d);
    shape.push_back(y.shape().back());
    return y.reshape(shape);
  }

  std::vector<int64_t> window_;
  std::vector<int64_t> strides_;
  Padding padding_;
};

class ConvLayer final : public SpatialLayer {
 public:
  ConvLayer(int64_t filters, std::vector<int64_t> kernel, std::vector<int64_t> strides, Padding padding,
            bool use_bias, ConvInit init)
      : SpatialLayer("Conv" + std::to_string(kernel.size()) + "D_" + std::to_string(filters),
                     "Conv" + std::to_string(kernel.size()) + "D", kernel, std::move(strides), padding),
        filters_(filters),
        use_bias_(use_bias),
        init_(std::move(init)) {
    CTRAX_REQUIRE(filters_ >= 1, name(), ": filters must be >= 1, got ", filters_);
    CTRAX_REQUIRE(init_.kernel_init != nullptr && (!use_bias_ || init_.bias_init != nullptr), name(),
                  ": an initializer is empty");
  }

 protected:
  std::pair<Tree, Tree> init_weights_and_state(const Signature& input, Key rng, LayerPass&) override {
    const Geometry g = geometry(input[0].shape, input[0].dtype);
    Shape kernel_shape(window_);
    kernel_shape.push_back(g.channels);
    kernel_shape.push_back(filters_);
    const auto [k_kernel, k_bias] = split(rng);
    Tree::Dict w;
    w["kernel"] = init_.kernel_init(k_kernel, kernel_shape, input[0].dtype);
    if (use_bias_) w["bias"] = init_.bias_init(k_bias, Shape{filters_}, input[0].dtype);
    return {Tree(std::move(w)), Tree()};
  }

  LayerResult forward(const Stack& inputs, const Tree& weights, const Tree& state, Key, Mode,
                      LayerPass&) const override {
    const Tensor& x = inputs[0];
    const Geometry g = geometry(x.shape(), x.dtype());
    const Tensor& kernel = weights["kernel"].leaf();
    check_kernel(kernel, g);
    if (cudnn_applies(x, kernel, g)) {
      Tensor y = cudnn_conv(x, kernel, g);
      if (use_bias_) y = add(y, weights["bias"].leaf());
      return {{unfold_batch(y, g)}, state};
    }
    // im2col: one row of prod(k) * channels per output position, then one matmul.
    const int64_t patch = product(window_) * g.channels;
    const Tensor rows = windows(x, g, 0.0).reshape(Shape{g.batch * product(g.out), patch});
    Tensor y = matmul(rows, kernel.reshape(Shape{patch, filters_}));
    if (use_bias_) y = add(y, weights["bias"].leaf());
    return {{unfold_batch(y, g)}, state};
  }

 private:
  void check_kernel(const Tensor& kernel, const Geometry& g) const {
    const int n = n_spatial();
    bool ok = kernel.rank() == n + 2 && kernel.size(-1) == filters_;
    for (int d = 0; ok && d < n; ++d) ok = kernel.size(d) == window_[d];
    std::ostringstream shape;
    shape << kernel.shape();
    if (!ok)
      fail("kernel has shape " + shape.str() + ", expected [" + dims_string(window_) + " window..., in_channels, " +
           std::to_string(filters_) + "]");
    if (kernel.size(-2) != g.channels)
      fail("input has " + std::to_string(g.channels) + " channels (last axis), the kernel expects " +
           std::to_string(kernel.size(-2)));
  }

  // cuDNN when selected and the call fits it: float32 input and kernel on the same GPU,
  // nothing empty, sizes within cuDNN's int dimensions. Otherwise im2col runs (same result).
  bool cudnn_applies(const Tensor& x, const Tensor& kernel, const Geometry& g) const {
    namespace kc = kernels::cuda;
    if (!x.device().is_cuda() || kc::backend(kc::CudaOp::convolution) != kc::CudaBackend::cudnn) return false;
    if (x.dtype() != DType::float32 || kernel.dtype() != DType::float32 || kernel.device() != x.device()) return false;
    if (n_spatial() > 2 || x.numel() == 0 || g.batch == 0 || product(g.out) == 0) return false;
    // The input grows by at most one element per axis (SAME's odd extra padding).
    double padded = static_cast<double>(g.batch) * static_cast<double>(g.channels);
    for (int64_t d : g.in) padded *= static_cast<double>(d + 1);
    const double out = static_cast<double>(g.batch) * static_cast<double>(product(g.out)) * static_cast<double>(filters_);
    const double weights = static_cast<double>(product(window_)) * static_cast<double>(g.channels * filters_);
    return padded <= INT_MAX && out <= INT_MAX && weights <= INT_MAX;
  }

  // [batch, out..., filters] (batch folded) through cuDNN; see the comment at the top.
  Tensor cudnn_conv(const Tensor& x, const Tensor& kernel, const Geometry& g) const {
    namespace kc = kernels::cuda;
    const bool two_d = n_spatial() == 2;
    // The 2-D view: height and width; a 1-D input is a 1 x L image.
    const int64_t in_h = two_d ? g.in[0] : 1, in_w = g.in[two_d ? 1 : 0];
    const int64_t k_h = two_d ? window_[0] : 1, k_w = window_[two_d ? 1 : 0];
    const int64_t s_h = two_d ? strides_[0] : 1, s_w = strides_[two_d ? 1 : 0];
    const std::pair<int64_t, int64_t> p_h = two_d ? g.pads[0] : std::pair<int64_t, int64_t>{0, 0};
    const std::pair<int64_t, int64_t> p_w = g.pads[two_d ? 1 : 0];
    // cuDNN pads `first` on both sides; TensorFlow's SAME puts any odd extra element after.
    CTRAX_CHECK(p_h.second >= p_h.first && p_w.second >= p_w.first);
    const int64_t extra_h = p_h.second - p_h.first, extra_w = p_w.second - p_w.first;
    Tensor xp = x.reshape(Shape{g.batch, in_h, in_w, g.channels});
    if (extra_h > 0 || extra_w > 0) xp = pad(xp, {{0, 0}, {0, extra_h}, {0, extra_w}, {0, 0}}, 0.0);
    xp = xp.contiguous();
    // [kh, kw, c, f] -> cuDNN's KRSC [f, kh, kw, c].
    const Tensor w = kernel.reshape(Shape{k_h, k_w, g.channels, filters_}).permute({3, 0, 1, 2}).contiguous();

    kc::CudnnConv2d conv;
    conv.batch = g.batch;
    conv.height = in_h + extra_h;
    conv.width = in_w + extra_w;
    conv.in_channels = g.channels;
    conv.filters = filters_;
    conv.kernel_h = k_h;
    conv.kernel_w = k_w;
    conv.stride_h = s_h;
    conv.stride_w = s_w;
    conv.pad_h = p_h.first;
    conv.pad_w = p_w.first;
    const int64_t out_h = two_d ? g.out[0] : 1, out_w = g.out[two_d ? 1 : 0];
    CTRAX_CHECK(conv.out_h() == out_h && conv.out_w() == out_w, "cuDNN output ", conv.out_h(), "x", conv.out_w(),
                " differs from the layer's ", out_h, "x", out_w);
    const Device device = x.device();
    const Shape y_shape{g.batch, out_h, out_w, filters_};

    auto forward = [conv, device, y_shape](const std::vector<Tensor>& in) {
      kc::set_device(device.index);
      Tensor y(y_shape, DType::float32, device);
      kc::cudnn_conv2d_forward(conv, kc::ElementType::float32, in[0].device_data(), in[1].device_data(), y.device_data());
      return y;
    };
    auto backward = [conv, device](const CustomGradContext& c) {
      kc::set_device(device.index);
      // The incoming gradient may be a broadcast or strided view: cuDNN needs it dense.
      const Tensor dy = c.output_grads[0].to(DType::float32).contiguous();
      Tensor dx(c.inputs[0].shape(), DType::float32, device);
      Tensor dw(c.inputs[1].shape(), DType::float32, device);
      kc::cudnn_conv2d_backward_data(conv, kc::ElementType::float32, c.inputs[1].device_data(), dy.device_data(),
                                     dx.device_data());
      kc::cudnn_conv2d_backward_filter(conv, kc::ElementType::float32, c.inputs[0].device_data(), dy.device_data(),
                                       dw.device_data());
      return std::vector<Tensor>{dx, dw};
    };
    const Tensor y = custom_gradient({xp, w}, forward, backward);
    Shape folded{g.batch};
    for (int64_t d : g.out) folded.push_back(d);
    folded.push_back(filters_);
    return y.reshape(folded);
  }

  int64_t filters_;
  bool use_bias_;
  ConvInit init_;
};

enum class PoolKind { max, avg };

class PoolLayer final : public SpatialLayer {
 public:
  PoolLayer(PoolKind kind, std::vector<int64_t> window, std::vector<int64_t> strides, Padding padding)
      : SpatialLayer(kind_name(kind, window.size()), kind_name(kind, window.size()), window, std::move(strides),
                     padding),
        kind_(kind) {}

 protected:
  LayerResult forward(const Stack& inputs, const Tree&, const Tree& state, Key, Mode, LayerPass&) const override {
    const Tensor& x = inputs[0];
    const Geometry g = geometry(x.shape(), x.dtype());
    const int axis = n_spatial() + 1;  // the window axis of [batch, out..., window, channels]
    Tensor y;
    if (kind_ == PoolKind::max) {
      // -inf padding never wins a max, and every SAME window holds a real element (conv.h).
      y = max(windows(x, g, -std::numeric_limits<double>::infinity()), {axis});
    } else if (padding_ == Padding::valid) {
      y = mean(windows(x, g, 0.0), {axis});
    } else {
      // Sum over zero padding, divided by the count of real elements in each window.
      y = div(sum(windows(x, g, 0.0), {axis}), real_counts(g).to(x.dtype()).to(x.device()));
    }
    return {{unfold_batch(y, g)}, state};
  }

 private:
  static std::string kind_name(PoolKind kind, size_t n) {
    return std::string(kind == PoolKind::max ? "MaxPool" : "AvgPool") + std::to_string(n) + "D";
  }

  // [out..., 1]: the number of unpadded elements in each window, a product over the axes of
  // |[o s - before, o s - before + k) intersected with [0, L)|. A constant: no gradient needed.
  Tensor real_counts(const Geometry& g) const {
    const int n = n_spatial();
    std::vector<std::vector<double>> per_axis(static_cast<size_t>(n));
    for (int d = 0; d < n; ++d) {
      for (int64_t o = 0; o < g.out[d]; ++o) {
        const int64_t start = o * strides_[d] - g.pads[d].first;
        per_axis[d].push_back(static_cast<double>(std::min(start + window_[d], g.in[d]) - std::max<int64_t>(start, 0)));
      }
    }
    std::vector<double> counts(static_cast<size_t>(product(g.out)));
    for (size_t i = 0; i < counts.size(); ++i) {
      int64_t rest = static_cast<int64_t>(i);
      double c = 1.0;
      for (int d = n - 1; d >= 0; --d) {
        c *= per_axis[d][rest % g.out[d]];
        rest /= g.out[d];
      }
      counts[i] = c;
    }
    Shape shape(g.out);
    shape.push_back(1);
    return from_vector(counts, shape);
  }

  PoolKind kind_;
};

std::vector<int64_t> pair_vec(std::array<int64_t, 2> a) { return {a[0], a[1]}; }

}  // namespace

LayerPtr Conv1D(int64_t filters, int64_t kernel_size, int64_t stride, Padding padding, bool use_bias, ConvInit init) {
  return std::make_shared<ConvLayer>(filters, std::vector<int64_t>{kernel_size}, std::vector<int64_t>{stride}, padding,
                                     use_bias, std::move(init));
}
LayerPtr Conv2D(int64_t filters, std::array<int64_t, 2> kernel_size, std::array<int64_t, 2> strides, Padding padding,
                bool use_bias, ConvInit init) {
  return std::make_shared<ConvLayer>(filters, pair_vec(kernel_size), pair_vec(strides), padding, use_bias,
                                     std::move(init));
}
LayerPtr MaxPool1D(int64_t pool_size, std::optional<int64_t> stride, Padding padding) {
  return std::make_shared<PoolLayer>(PoolKind::max, std::vector<int64_t>{pool_size},
                                     std::vector<int64_t>{stride.value_or(pool_size)}, padding);
}
LayerPtr MaxPool2D(std::array<int64_t, 2> pool_size, std::optional<std::array<int64_t, 2>> strides, Padding padding) {
  return std::make_shared<PoolLayer>(PoolKind::max, pair_vec(pool_size), pair_vec(strides.value_or(pool_size)),
                                     padding);
}
LayerPtr AvgPool1D(int64_t pool_size, std::optional<int64_t> stride, Padding padding) {
  return std::make_shared<PoolLayer>(PoolKind::avg, std::vector<int64_t>{pool_size},
                                     std::vector<int64_t>{stride.value_or(pool_size)}, padding);
}
LayerPtr AvgPool2D(std::array<int64_t, 2> pool_size, std::optional<std::array<int64_t, 2>> strides, Padding padding) {
  return std::make_shared<PoolLayer>(PoolKind::avg, pair_vec(pool_size), pair_vec(strides.value_or(pool_size)),
                                     padding);
}

}  // namespace ctrax
