// Conv1D/Conv2D and the pools: forward against direct loops, gradients, shapes, bad inputs.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include <ctrax/autograd/gradcheck.h>
#include <ctrax/layers/combinators.h>
#include <ctrax/layers/conv.h>
#include <ctrax/tensor/ops.h>

#include "../test_util.h"

using namespace ctrax;
using test::check_close;
using test::check_error;

namespace {
const test::Tolerance kTight{1e-12, 1e-11};

// The SAME padding before the first element, computed here from TensorFlow's rule so the
// reference does not reuse the layer's code: out = ceil(L / s), total = max((out-1) s + k - L, 0).
int64_t pad_before(int64_t size, int64_t k, int64_t s, Padding padding) {
  if (padding == Padding::valid) return 0;
  const int64_t out = (size + s - 1) / s;
  return std::max<int64_t>((out - 1) * s + k - size, 0) / 2;
}
int64_t out_size(int64_t size, int64_t k, int64_t s, Padding padding) {
  return padding == Padding::same ? (size + s - 1) / s : (size - k) / s + 1;
}

// Direct-loop 2-D convolution of x [B, H, W, C] with kernel [kh, kw, C, F] plus bias [F];
// 1-D cases call it with H = kh = sh = 1. Out-of-range taps read zero.
std::vector<double> naive_conv(const Tensor& x, const Tensor& kernel, const Tensor& bias, int64_t sh, int64_t sw,
                               Padding padding, Shape* out_shape) {
  const int64_t B = x.size(0), H = x.size(1), W = x.size(2), C = x.size(3);
  const int64_t kh = kernel.size(0), kw = kernel.size(1), F = kernel.size(3);
  const int64_t Ho = out_size(H, kh, sh, padding), Wo = out_size(W, kw, sw, padding);
  const int64_t ph = pad_before(H, kh, sh, padding), pw = pad_before(W, kw, sw, padding);
  const auto xv = x.to_vector<double>(), kv = kernel.to_vector<double>(), bv = bias.to_vector<double>();
  std::vector<double> y;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < Ho; ++i)
      for (int64_t j = 0; j < Wo; ++j)
        for (int64_t f = 0; f < F; ++f) {
          double acc = bv[f];
          for (int64_t di = 0; di < kh; ++di)
            for (int64_t dj = 0; dj < kw; ++dj) {
              const int64_t r = i * sh + di - ph, c = j * sw + dj - pw;
              if (r < 0 || r >= H || c < 0 || c >= W) continue;
              for (int64_t ch = 0; ch < C; ++ch)
                acc += xv[((b * H + r) * W + c) * C + ch] * kv[((di * kw + dj) * C + ch) * F + f];
            }
          y.push_back(acc);
        }
  *out_shape = Shape{B, Ho, Wo, F};
  return y;
}

// Direct-loop pooling of x [B, H, W, C]: max, or the mean of the real elements of each window.
std::vector<double> naive_pool(const Tensor& x, bool is_max, int64_t kh, int64_t kw, int64_t sh, int64_t sw,
                               Padding padding, Shape* out_shape) {
  const int64_t B = x.size(0), H = x.size(1), W = x.size(2), C = x.size(3);
  const int64_t Ho = out_size(H, kh, sh, padding), Wo = out_size(W, kw, sw, padding);
  const int64_t ph = pad_before(H, kh, sh, padding), pw = pad_before(W, kw, sw, padding);
  const auto xv = x.to_vector<double>();
  std::vector<double> y;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < Ho; ++i)
      for (int64_t j = 0; j < Wo; ++j)
        for (int64_t ch = 0; ch < C; ++ch) {
          double best = -std::numeric_limits<double>::infinity(), total = 0.0;
          int count = 0;
          for (int64_t di = 0; di < kh; ++di)
            for (int64_t dj = 0; dj < kw; ++dj) {
              const int64_t r = i * sh + di - ph, c = j * sw + dj - pw;
              if (r < 0 || r >= H || c < 0 || c >= W) continue;
              const double v = xv[((b * H + r) * W + c) * C + ch];
              best = std::max(best, v);
              total += v;
              ++count;
            }
          y.push_back(is_max ? best : total / count);
        }
  *out_shape = Shape{B, Ho, Wo, C};
  return y;
}

Tree conv_weights(const Tensor& kernel, const Tensor& bias) {
  Tree::Dict w;
  w["kernel"] = kernel;
  if (bias.defined()) w["bias"] = bias;
  return Tree(std::move(w));
}

const ConvInit kVisibleBias{glorot_uniform(), normal_init(0.5)};  // a bias large enough to check
}  // namespace

TEST_CASE("layers: conv_output_size and conv_padding follow VALID and TensorFlow's SAME") {
  struct Case {
    int64_t size, k, s;
    Padding padding;
    int64_t out, before, after;
  };
  const std::vector<Case> cases = {
      {7, 3, 1, Padding::valid, 5, 0, 0}, {7, 3, 2, Padding::valid, 3, 0, 0}, {8, 3, 2, Padding::valid, 3, 0, 0},
      {3, 3, 5, Padding::valid, 1, 0, 0}, {7, 3, 1, Padding::same, 7, 1, 1},  {5, 4, 1, Padding::same, 5, 1, 2},
      {7, 3, 2, Padding::same, 4, 1, 1},  {8, 3, 2, Padding::same, 4, 0, 1},  {6, 1, 3, Padding::same, 2, 0, 0},
      {2, 5, 1, Padding::same, 2, 2, 2},  {4, 2, 2, Padding::same, 2, 0, 0},
  };
  for (const Case& c : cases) {
    INFO("L " << c.size << " k " << c.k << " s " << c.s << " " << padding_name(c.padding));
    CHECK(conv_output_size(c.size, c.k, c.s, c.padding) == c.out);
    CHECK(conv_padding(c.size, c.k, c.s, c.padding) == std::pair<int64_t, int64_t>{c.before, c.after});
  }
  CHECK(padding_from_string("same") == Padding::same);
  CHECK(padding_from_string("VALID") == Padding::valid);
  check_error([] { padding_from_string("FULL"); }, {"padding must be \"VALID\" or \"SAME\", got \"FULL\""});
  check_error([] { conv_output_size(2, 3, 1, Padding::valid); }, {"VALID window of 3 does not fit"});
}

TEST_CASE("layers: Conv1D matches a direct loop for several shapes, strides and paddings") {
  struct Case {
    int64_t B, L, C, F, k, s;
    Padding padding;
  };
  const std::vector<Case> cases = {
      {2, 7, 3, 4, 3, 1, Padding::valid}, {2, 7, 3, 4, 3, 1, Padding::same}, {1, 9, 2, 3, 4, 2, Padding::same},
      {3, 8, 1, 2, 3, 3, Padding::valid}, {2, 5, 4, 5, 1, 1, Padding::valid}, {1, 4, 2, 2, 4, 1, Padding::valid},
      {2, 3, 2, 3, 5, 2, Padding::same},  {1, 10, 3, 2, 2, 4, Padding::same},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    INFO("case " << i);
    LayerPtr conv = Conv1D(c.F, c.k, c.s, c.padding, true, kVisibleBias);
    const Tensor x = test::random_tensor(Shape{c.B, c.L, c.C}, DType::float64, 100 + i);
    auto [w, s] = conv->init({ShapeDtype::of(x)}, Key(i));
    REQUIRE(w["kernel"].leaf().shape() == Shape{c.k, c.C, c.F});
    REQUIRE(w["bias"].leaf().shape() == Shape{c.F});
    const Tensor y = conv->apply({x}, w, s).outputs[0];
    Shape ref_shape;
    const std::vector<double> ref = naive_conv(x.unsqueeze(1), w["kernel"].leaf().unsqueeze(0), w["bias"].leaf(), 1,
                                               c.s, c.padding, &ref_shape);
    check_close(y, Shape{c.B, ref_shape[2], c.F}, ref, kTight);
  }
}

TEST_CASE("layers: Conv2D matches a direct loop for several shapes, strides and paddings") {
  struct Case {
    int64_t B, H, W, C, F, kh, kw, sh, sw;
    Padding padding;
  };
  const std::vector<Case> cases = {
      {2, 5, 6, 3, 4, 3, 3, 1, 1, Padding::valid}, {2, 5, 6, 3, 4, 3, 3, 1, 1, Padding::same},
      {1, 7, 6, 2, 3, 3, 2, 2, 3, Padding::same},  {1, 7, 6, 2, 3, 2, 3, 2, 1, Padding::valid},
      {3, 4, 4, 1, 2, 1, 1, 1, 1, Padding::valid}, {1, 3, 5, 2, 2, 4, 2, 1, 2, Padding::same},
      {2, 6, 6, 3, 1, 2, 2, 2, 2, Padding::valid},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    INFO("case " << i);
    LayerPtr conv = Conv2D(c.F, {c.kh, c.kw}, {c.sh, c.sw}, c.padding, true, kVisibleBias);
    const Tensor x = test::random_tensor(Shape{c.B, c.H, c.W, c.C}, DType::float64, 200 + i);
    auto [w, s] = conv->init({ShapeDtype::of(x)}, Key(i));
    REQUIRE(w["kernel"].leaf().shape() == Shape{c.kh, c.kw, c.C, c.F});
    Shape ref_shape;
    const std::vector<double> ref =
        naive_conv(x, w["kernel"].leaf(), w["bias"].leaf(), c.sh, c.sw, c.padding, &ref_shape);
    check_close(conv->apply({x}, w, s).outputs[0], ref_shape, ref, kTight);
  }
  // float32 runs the same path.
  LayerPtr conv = Conv2D(3, {2, 2}, {1, 1}, Padding::same);
  const Tensor x = test::random_tensor(Shape{2, 4, 5, 3}, DType::float32, 7);
  auto [w, s] = conv->init({ShapeDtype::of(x)}, Key(3));
  Shape ref_shape;
  const auto ref = naive_conv(x, w["kernel"].leaf(), w["bias"].leaf(), 1, 1, Padding::same, &ref_shape);
  const Tensor y = conv->apply({x}, w, s).outputs[0];
  CHECK(y.dtype() == DType::float32);
  check_close(y, ref_shape, ref, {1e-5, 1e-5});
}

TEST_CASE("layers: Conv leading batch axes are folded and restored, and use_bias=false has no bias") {
  LayerPtr conv = Conv1D(2, 3, 1, Padding::same, false);
  const Tensor x = test::random_tensor(Shape{2, 3, 6, 4}, DType::float64, 9);
  auto [w, s] = conv->init({ShapeDtype::of(x)}, Key(1));
  CHECK(w.paths() == std::vector<std::string>{"kernel"});
  const Tensor y = conv->apply({x}, w, s).outputs[0];
  Shape ref_shape;
  const auto ref = naive_conv(x.reshape(Shape{6, 1, 6, 4}), w["kernel"].leaf().unsqueeze(0), zeros({2}, DType::float64),
                              1, 1, Padding::same, &ref_shape);
  check_close(y, Shape{2, 3, 6, 2}, ref, kTight);
}

TEST_CASE("layers: Conv kernels are Glorot uniform over the receptive field and names are readable") {
  LayerPtr conv = Conv2D(16, {3, 3});
  auto [w, s] = conv->init({{Shape{1, 8, 8, 8}, DType::float32}}, Key(5));
  // fan_in = 3*3*8, fan_out = 3*3*16: limit sqrt(6 / 216). A Dense-style fan (8 + 16) would give
  // a limit three times larger, which the max below would exceed.
  const double limit = std::sqrt(6.0 / (9.0 * 8 + 9.0 * 16));
  const auto k = w["kernel"].leaf().to_vector<double>();
  double biggest = 0.0;
  for (double v : k) biggest = std::max(biggest, std::fabs(v));
  CHECK(biggest <= limit);
  CHECK(biggest > 0.95 * limit);  // 1152 draws come close to the edge
  const auto b = w["bias"].leaf().to_vector<double>();
  for (double v : b) CHECK(std::fabs(v) < 1e-5);  // normal(1e-6)
  CHECK(conv->name() == "Conv2D_16");
  CHECK(Conv1D(32, 3)->name() == "Conv1D_32");
  CHECK(MaxPool2D()->name() == "MaxPool2D");
  CHECK(AvgPool1D()->name() == "AvgPool1D");
}

TEST_CASE("layers: MaxPool and AvgPool match a direct loop for several shapes, strides and paddings") {
  struct Case {
    int64_t B, H, W, C, kh, kw, sh, sw;
    Padding padding;
  };
  const std::vector<Case> cases = {
      {2, 6, 6, 3, 2, 2, 2, 2, Padding::valid}, {2, 5, 7, 2, 2, 2, 2, 2, Padding::same},
      {1, 7, 6, 2, 3, 3, 1, 1, Padding::same},  {1, 7, 6, 2, 3, 2, 2, 1, Padding::valid},
      {2, 4, 5, 1, 3, 3, 3, 2, Padding::same},  {1, 2, 3, 2, 4, 4, 1, 1, Padding::same},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const Tensor x = test::random_tensor(Shape{c.B, c.H, c.W, c.C}, DType::float64, 300 + i);
    const Tensor x1 = x.select(1, 0);  // a 1-D input [B, W, C]
    for (bool is_max : {true, false}) {
      INFO("case " << i << (is_max ? " max" : " avg"));
      LayerPtr pool2 = is_max ? MaxPool2D({c.kh, c.kw}, std::array<int64_t, 2>{c.sh, c.sw}, c.padding)
                              : AvgPool2D({c.kh, c.kw}, std::array<int64_t, 2>{c.sh, c.sw}, c.padding);
      Shape ref_shape;
      auto ref = naive_pool(x, is_max, c.kh, c.kw, c.sh, c.sw, c.padding, &ref_shape);
      check_close((*pool2)(x), ref_shape, ref, kTight, "2-D");
      LayerPtr pool1 = is_max ? MaxPool1D(c.kw, c.sw, c.padding) : AvgPool1D(c.kw, c.sw, c.padding);
      ref = naive_pool(x1.unsqueeze(1), is_max, 1, c.kw, 1, c.sw, c.padding, &ref_shape);
      check_close((*pool1)(x1), Shape{c.B, ref_shape[2], c.C}, ref, kTight, "1-D");
    }
  }
}

TEST_CASE("layers: pools default to strides equal to the pool size, and SAME ignores the padding") {
  const Tensor x = tensor({-1.0, -2.0, -3.0, -4.0, -5.0}, Shape{1, 5, 1});
  // Windows {-1,-2}, {-3,-4}, {-5}: zero padding would make the last max 0 and the last mean -2.5.
  check_close((*MaxPool1D(2, std::nullopt, Padding::same))(x), Shape{1, 3, 1}, {-1.0, -3.0, -5.0}, kTight);
  check_close((*AvgPool1D(2, std::nullopt, Padding::same))(x), Shape{1, 3, 1}, {-1.5, -3.5, -5.0}, kTight);
  check_close((*AvgPool1D())(x), Shape{1, 2, 1}, {-1.5, -3.5}, kTight);
  const Tensor img = tensor({1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0}, Shape{1, 3, 3, 1});
  // 2x2 SAME with stride 2 on 3x3: padding (0, 1) per axis, windows of 4, 2, 2 and 1 real elements.
  check_close((*AvgPool2D({2, 2}, std::nullopt, Padding::same))(img), Shape{1, 2, 2, 1}, {3.0, 4.5, 7.5, 9.0}, kTight);
  check_close((*MaxPool2D())(img), Shape{1, 1, 1, 1}, {5.0}, kTight);
}

TEST_CASE("layers: Conv gradients with respect to input, kernel and bias pass gradcheck") {
  struct Case {
    LayerPtr layer;
    Shape x_shape;
  };
  const std::vector<Case> cases = {
      {Conv1D(2, 3, 1, Padding::valid), Shape{2, 5, 2}},
      {Conv1D(3, 2, 2, Padding::same), Shape{1, 5, 2}},
      {Conv2D(2, {2, 3}, {1, 2}, Padding::same), Shape{1, 4, 5, 2}},
      {Conv2D(2, {3, 2}, {2, 1}, Padding::valid), Shape{2, 5, 3, 1}},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    INFO("case " << i << ": " << cases[i].layer->name());
    const LayerPtr& layer = cases[i].layer;
    const Tensor x = test::random_tensor(cases[i].x_shape, DType::float64, 400 + i);
    auto initialized = layer->init({ShapeDtype::of(x)}, Key(i));
    Tree& w = initialized.first;
    Tree& s = initialized.second;
    auto f = [&](const std::vector<Tensor>& in) {
      return layer->apply({in[0]}, conv_weights(in[1], in[2]), s).outputs[0];
    };
    const GradcheckResult r = gradcheck(f, {x, w["kernel"].leaf(), test::random_tensor(w["bias"].leaf().shape(),
                                                                                       DType::float64, 9)});
    CHECK_MESSAGE(r.ok, r.message);
  }
}

TEST_CASE("layers: pool gradients pass gradcheck, including SAME borders") {
  // Random inputs have no ties, so max's gradient is well defined away from the (measure-zero) kinks.
  const std::vector<std::pair<LayerPtr, Shape>> cases = {
      {MaxPool1D(2, 1, Padding::valid), Shape{2, 5, 2}},
      {MaxPool1D(3, 2, Padding::same), Shape{1, 6, 2}},
      {AvgPool1D(3, 2, Padding::same), Shape{1, 6, 2}},
      {MaxPool2D({2, 2}, std::nullopt, Padding::same), Shape{1, 3, 5, 2}},
      {AvgPool2D({3, 2}, std::array<int64_t, 2>{1, 2}, Padding::same), Shape{1, 4, 3, 2}},
      {AvgPool2D({2, 2}), Shape{2, 4, 4, 1}},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    INFO("case " << i << ": " << cases[i].first->name());
    const LayerPtr& layer = cases[i].first;
    auto f = [&](const std::vector<Tensor>& in) { return layer->apply({in[0]}, Tree(), Tree()).outputs[0]; };
    const GradcheckResult r = gradcheck(f, {test::random_tensor(cases[i].second, DType::float64, 500 + i)});
    CHECK_MESSAGE(r.ok, r.message);
  }
}

TEST_CASE("layers: output_signature of Conv and the pools") {
  const ShapeDtype seq{Shape{2, 7, 3}, DType::float32};
  const ShapeDtype img{Shape{2, 9, 8, 3}, DType::float64};
  CHECK(Conv1D(4, 3, 2, Padding::same)->output_signature({seq}) == Signature{{Shape{2, 4, 4}, DType::float32}});
  CHECK(Conv1D(4, 3, 2)->output_signature({seq}) == Signature{{Shape{2, 3, 4}, DType::float32}});
  CHECK(Conv2D(5, {3, 2}, {2, 3})->output_signature({img}) == Signature{{Shape{2, 4, 3, 5}, DType::float64}});
  CHECK(Conv2D(5, {3, 3}, {1, 1}, Padding::same)->output_signature({img}) ==
        Signature{{Shape{2, 9, 8, 5}, DType::float64}});
  CHECK(MaxPool2D()->output_signature({img}) == Signature{{Shape{2, 4, 4, 3}, DType::float64}});
  CHECK(AvgPool2D({2, 2}, std::nullopt, Padding::same)->output_signature({img}) ==
        Signature{{Shape{2, 5, 4, 3}, DType::float64}});
  CHECK(MaxPool1D(3, 1)->output_signature({seq}) == Signature{{Shape{2, 5, 3}, DType::float32}});
  CHECK(Conv2D(5, {3, 3})->output_signature({{Shape{4, 2, 9, 8, 3}, DType::float32}}) ==
        Signature{{Shape{4, 2, 7, 6, 5}, DType::float32}});
  // In a model: a small CNN's shapes compose.
  LayerPtr model = Serial({Conv2D(8, {3, 3}, {1, 1}, Padding::same), MaxPool2D(), Conv2D(4, {3, 3}), AvgPool2D()});
  CHECK(model->output_signature({{Shape{2, 10, 10, 1}, DType::float32}}) ==
        Signature{{Shape{2, 1, 1, 4}, DType::float32}});
}

TEST_CASE("layers: Conv and pools reject bad inputs with clear errors") {
  LayerPtr conv = Conv1D(4, 3);
  check_error([&] { conv->init({{Shape{7, 3}, DType::float32}}); },
              {"Conv1D_4: input has rank 2 (shape [7, 3]), expected 3: [batch, length, channels]"});
  check_error([&] { (*Conv2D(2, {2, 2}))(zeros({5, 5, 3})); },
              {"Conv2D_2: input has rank 3", "[batch, height, width, channels]"});
  check_error([&] { (*MaxPool2D())(zeros({4, 4})); }, {"MaxPool2D: input has rank 2"});

  auto initialized = conv->init({{Shape{2, 7, 3}, DType::float32}}, Key(0));
  Tree& w = initialized.first;
  Tree& s = initialized.second;
  check_error([&] { conv->apply({zeros({2, 7, 5})}, w, s); },
              {"Conv1D_4: input has 5 channels (last axis), the kernel expects 3", "(inputs (float32[2, 7, 5]))"});
  check_error([&] { conv->apply({zeros({2, 2, 3})}, w, s); },
              {"Conv1D_4: window 3 is bigger than the VALID input's spatial size 2", "use SAME padding"});
  check_error([&] { (*Conv2D(2, {3, 3}))(zeros({1, 5, 2, 1})); },
              {"window 3x3 is bigger than the VALID input's spatial size 5x2"});
  check_error([&] { (*AvgPool1D(4))(zeros({1, 3, 1})); }, {"AvgPool1D: window 4 is bigger"});
  // SAME accepts the same small input.
  CHECK((*Conv1D(4, 3, 1, Padding::same))(zeros({2, 2, 3})).shape() == Shape{2, 2, 4});

  Tree bad = w;
  bad["kernel"].leaf() = zeros({2, 3, 4});
  check_error([&] { conv->apply({zeros({2, 7, 3})}, bad, s); },
              {"kernel has shape [2, 3, 4], expected [3 window..., in_channels, 4]"});
  check_error([&] { (*Conv1D(2, 2))(zeros({1, 4, 2}, DType::int32)); }, {"int32 is not a float dtype"});

  check_error([] { Conv1D(4, 3, 0); }, {"Conv1D: strides must be >= 1, got 0"});
  check_error([] { Conv2D(4, {3, 3}, {1, 0}); }, {"Conv2D: strides must be >= 1, got 1x0"});
  check_error([] { MaxPool1D(2, 0); }, {"MaxPool1D: strides must be >= 1, got 0"});
  check_error([] { AvgPool2D({2, 0}); }, {"AvgPool2D: window sizes must be >= 1, got 2x0"});
  check_error([] { Conv1D(0, 3); }, {"Conv1D_0: filters must be >= 1, got 0"});
}
