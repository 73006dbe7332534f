// Core layers: Dense, LearnedColumns, the activations, the weightless layers, initializers, MLP.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>

#include <ctrax/autograd/grad.h>
#include <ctrax/autograd/gradcheck.h>
#include <ctrax/layers/combinators.h>
#include <ctrax/layers/core.h>
#include <ctrax/layers/custom_backward.h>
#include <ctrax/layers/models.h>
#include <ctrax/tensor/ops.h>

#include "../test_util.h"

using namespace ctrax;
using test::check_close;
using test::check_error;

namespace {
const test::Tolerance kTight{1e-12, 1e-12};

// gradcheck of a one-in, one-out layer with respect to its input and every weight.
void check_layer_gradients(const LayerPtr& layer, const Tensor& x) {
  auto initialized = layer->init({ShapeDtype::of(x)}, Key(3));
  Tree& w = initialized.first;
  Tree& s = initialized.second;
  const size_t n_w = w.num_leaves();
  std::vector<Tensor> inputs{x};
  for (const Tensor& t : w.leaves()) inputs.push_back(t);
  const Tree structure = w;
  const GradcheckResult r = gradcheck(
      [&](const std::vector<Tensor>& in) {
        const std::vector<Tensor> leaves(in.begin() + 1, in.end());
        return layer->apply({in[0]}, structure.with_leaves(leaves), s).outputs[0];
      },
      inputs);
  INFO(layer->name() << " with " << n_w << " weights: " << r.message);
  CHECK(r.ok);
}
}  // namespace

TEST_CASE("layers: Dense computes x W + b with Glorot-uniform kernel and tiny bias") {
  LayerPtr dense = Dense(3);
  const Tensor x = test::random_tensor(Shape{4, 5}, DType::float64, 1);
  auto initialized = dense->init({ShapeDtype::of(x)}, Key(2));
  Tree& w = initialized.first;
  Tree& s = initialized.second;
  const Tensor& kernel = w["kernel"].leaf();
  const Tensor& bias = w["bias"].leaf();
  CHECK(kernel.shape() == Shape{5, 3});
  CHECK(bias.shape() == Shape{3});
  const double limit = std::sqrt(6.0 / (5 + 3));
  CHECK(max(abs(kernel)).item<double>() <= limit);
  CHECK(max(abs(bias)).item<double>() < 1e-4);
  check_close(dense->apply({x}, w, s).outputs[0], add(matmul(x, kernel), bias), kTight);
  LayerPtr no_bias = Dense(3, DenseOptions{glorot_uniform(), nullptr, false});
  auto [w2, s2] = no_bias->init({ShapeDtype::of(x)}, Key(2));
  CHECK(!w2.contains("bias"));
  check_close(no_bias->apply({x}, w2, s2).outputs[0], matmul(x, w2["kernel"].leaf()), kTight);
  check_layer_gradients(Dense(3), x);
  // A batch with leading axes.
  check_layer_gradients(Dense(2), test::random_tensor(Shape{2, 3, 4}, DType::float64, 4));
  check_error([] { Dense(0); }, {"Dense: n_units must be >= 1"});
  check_error([&] { dense->apply({test::random_tensor(Shape{4, 6}, DType::float64, 1)}, w, s); },
              {"Dense_3: input has last dimension 6, expected 5"});
}

TEST_CASE("layers: LearnedColumns appends one learned vector to every row") {
  LayerPtr layer = LearnedColumns(2);
  const Tensor x = test::random_tensor(Shape{3, 4}, DType::float64, 5);
  // (no structured binding: clang 14 cannot capture one in the lambdas below)
  auto initialized = layer->init({ShapeDtype::of(x)}, Key(1));
  const Tree& w = initialized.first;
  const Tree& s = initialized.second;
  const Tensor& columns = w["columns"].leaf();
  CHECK(columns.shape() == Shape{2});
  CHECK(columns.dtype() == DType::float64);
  CHECK(columns.to_vector<double>() == std::vector<double>{0.0, 0.0});  // zeros by default
  // Given columns: every row is x's row followed by them, whatever x holds.
  Tree given = w;
  given["columns"] = Tree(tensor({0.25, -1.5}, {2}));
  const Tensor y = layer->apply({x}, given, s).outputs[0];
  CHECK(y.shape() == Shape{3, 6});
  check_close(y.slice(1, 0, 4), x, kTight);
  CHECK(y.slice(1, 4, 6).to_vector<double>() == std::vector<double>{0.25, -1.5, 0.25, -1.5, 0.25, -1.5});
  // The columns' gradient sums the rows' (a weighted sum makes each row count differently);
  // x's gradient is the upstream gradient of x's own columns.
  const Tensor weights_of_rows = test::random_tensor(Shape{3, 6}, DType::float64, 6);
  auto r = value_and_grad(
      [&](const Tensor& c) {
        Tree t = w;
        t["columns"] = Tree(c);
        return sum(mul(layer->apply({x}, t, s).outputs[0], weights_of_rows));
      })(tensor({0.25, -1.5}, {2}));
  check_close(r.grad, sum(weights_of_rows.slice(1, 4, 6), {0}), kTight);
  check_layer_gradients(LearnedColumns(3, normal_init(0.5)), x);
  // Leading axes and a single row.
  check_layer_gradients(LearnedColumns(1, normal_init(0.5)), test::random_tensor(Shape{2, 3, 4}, DType::float64, 7));
  CHECK((*LearnedColumns(2))(test::random_tensor(Shape{4}, DType::float64, 8)).shape() == Shape{6});
  // float32 inputs get float32 columns.
  LayerPtr f32 = LearnedColumns(2, constant_init(0.5));
  CHECK((*f32)(zeros({2, 3}, DType::float32)).to_vector<float>() ==
        std::vector<float>{0, 0, 0, 0.5f, 0.5f, 0, 0, 0, 0.5f, 0.5f});
  check_error([] { LearnedColumns(0); }, {"LearnedColumns: n must be >= 1, got 0"});
  check_error([] { LearnedColumns(2, nullptr); }, {"LearnedColumns: the initializer is empty"});
  check_error([] { LearnedColumns(2)->init({ShapeDtype{Shape{}, DType::float32}}); },
              {"LearnedColumns_2", "rank-0"});
  check_error([] { LearnedColumns(2)->init({ShapeDtype{Shape{3, 2}, DType::int64}}); },
              {"LearnedColumns_2", "int64", "not a float dtype"});
  check_error([&] { layer->apply({test::random_tensor(Shape{3, 4}, DType::float32, 5)}, w, s); },
              {"LearnedColumns_2", "float32", "float64"});
  Tree wrong = w;
  wrong["columns"] = Tree(tensor({1.0, 2.0, 3.0}, {3}));
  check_error([&] { layer->apply({x}, wrong, s); }, {"LearnedColumns_2", "columns weight has shape [3]", "expected [2]"});
}

TEST_CASE("layers: activations against their formulas, with gradients") {
  struct Case {
    LayerPtr layer;
    std::function<double(double)> ref;
  };
  const double alpha = 1.6732632423543772848170429916717, scale = 1.0507009873554804934193349852946;
  auto sig = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  const std::vector<Case> cases = {
      {Relu(), [](double v) { return v > 0 ? v : 0.0; }},
      {LeakyRelu(0.1), [](double v) { return v >= 0 ? v : 0.1 * v; }},
      {Elu(0.5), [](double v) { return v > 0 ? v : 0.5 * std::expm1(v); }},
      {Selu(), [=](double v) { return scale * (v > 0 ? v : alpha * std::expm1(v)); }},
      {Gelu(), [](double v) { return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))); }},
      {FastGelu(), [](double v) { return 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v))); }},
      {Sigmoid(), sig},
      {Tanh(), [](double v) { return std::tanh(v); }},
      {HardSigmoid(), [](double v) { return std::max(0.0, std::min(1.0, 1.0 + v)); }},
      {HardTanh(), [](double v) { return std::max(-1.0, std::min(1.0, v)); }},
      {Softplus(), [](double v) { return std::log1p(std::exp(v)); }},
      {Swish(), [=](double v) { return v * sig(v); }},
      {Negate(), [](double v) { return -v; }},
  };
  // Values away from the kinks at 0, -1 and 1.
  const Tensor x = tensor({-2.5, -1.3, -0.7, -0.2, 0.3, 0.8, 1.4, 2.2}, {2, 4});
  for (const Case& c : cases) {
    INFO(c.layer->name());
    std::vector<double> ref;
    for (double v : x.to_vector<double>()) ref.push_back(c.ref(v));
    check_close((*c.layer)(x), Shape{2, 4}, ref, {1e-12, 1e-12});
    check_layer_gradients(c.layer, x);
  }
  // Glu: a * sigmoid(b) over the halves of the last axis.
  const Tensor g = (*Glu())(x);
  check_close(g, mul(x.slice(1, 0, 2), sigmoid(x.slice(1, 2, 4))), kTight);
  check_layer_gradients(Glu(), x);
  check_error([] { (*Glu())(zeros({2, 3}, DType::float64)); }, {"Glu: the last axis must have an even size"});
}

TEST_CASE("layers: weightless layers over one tensor") {
  const Tensor x = test::random_tensor(Shape{2, 3, 4}, DType::float64, 9);
  check_close((*LogSoftmax())(x), log_softmax(x, -1), kTight);
  check_close((*Softmax(1))(x), softmax(x, 1), kTight);
  check_close((*Mean(1))(x), mean(x, {1}), kTight);
  check_close((*Sum(-1, true))(x), sum(x, {-1}, true), kTight);
  CHECK((*ArgMax())(x).dtype() == DType::int64);
  CHECK((*Flatten())(x).shape() == Shape{2, 12});
  CHECK((*Flatten(2))(x).shape() == Shape{2, 3, 4});
  CHECK((*Flatten(0))(x).shape() == Shape{24});
  check_layer_gradients(LogSoftmax(), x);
  check_layer_gradients(Flatten(), x);
  // StopGradient: the value passes, the gradient does not.
  auto r = value_and_grad([](const Tensor& v) { return sum(mul((*StopGradient())(v), v)); })(x);
  check_close(r.grad, x, kTight);
  check_error([&] { (*Flatten(4))(x); }, {"Flatten: keeps 4 axes of a tensor of shape [2, 3, 4]"});
}

TEST_CASE("layers: initializers have the variance their rule gives") {
  const Shape shape{200, 300};
  const double fan_in = 200, fan_out = 300;
  struct Case {
    const char* name;
    Initializer init;
    double variance;
  };
  const std::vector<Case> cases = {
      {"glorot_uniform", glorot_uniform(), 2.0 / (fan_in + fan_out)},
      {"glorot_normal", glorot_normal(), 2.0 / (fan_in + fan_out)},
      {"he_uniform", he_uniform(), 2.0 / fan_in},
      {"he_normal", he_normal(), 2.0 / fan_in},
      {"lecun_uniform", lecun_uniform(), 1.0 / fan_in},
      {"lecun_normal", lecun_normal(), 1.0 / fan_in},
      {"uniform_init", uniform_init(-0.5, 0.5), 1.0 / 12.0},
      {"normal_init", normal_init(0.2), 0.04},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    const Tensor w = c.init(Key(11), shape, DType::float64);
    CHECK(w.shape() == shape);
    CHECK(std::abs(mean(w).item<double>()) < 0.05 * std::sqrt(c.variance));
    CHECK(var(w).item<double>() == doctest::Approx(c.variance).epsilon(0.03));  // 60000 draws
    check_close(c.init(Key(11), shape, DType::float64), w, {0.0, 0.0});       // deterministic per key
  }
  CHECK(max(constant_init(0.5)(Key(), Shape{3}, DType::float32)).item<double>() == 0.5);
  const auto [fi, fo] = fans(Shape{3, 3, 8, 16});  // a 3x3 convolution, 8 -> 16 channels
  CHECK(fi == 72.0);
  CHECK(fo == 144.0);
  check_error([] { uniform_init(1.0, 0.0); }, {"lo (1) must be <= hi (0)"});
  check_error([] { fans(Shape{}); }, {"rank >= 1"});
}

TEST_CASE("layers: MLP stacks Dense and activations") {
  LayerPtr mlp = MLP({8, 8, 2});
  CHECK(mlp->sublayers().size() == 5);  // Dense, Relu, Dense, Relu, Dense
  CHECK(mlp->output_signature({{Shape{4, 3}, DType::float32}}) == Signature{{Shape{4, 2}, DType::float32}});
  LayerPtr with_out = MLP({4}, [] { return Tanh(); }, {.out_activation = true});
  CHECK(with_out->sublayers().size() == 2);
  CHECK(with_out->sublayers()[1]->name() == "Tanh");
  check_layer_gradients(MLP({3, 2}, [] { return Tanh(); }), test::random_tensor(Shape{2, 3}, DType::float64, 5));
  check_error([] { MLP({4, 0}); }, {"MLP: width 1 is 0"});
}

TEST_CASE("layers: a custom backward replaces autodiff's for a layer") {
  LayerPtr dense = Dense(2);
  // The true gradient of x W + b, doubled: dx = 2 g W^T, dW = 2 x^T g, db = 2 sum(g).
  LayerPtr doubled = WithCustomBackward(dense, [](const LayerGradContext& c) {
    const Tensor& g = c.output_grads[0];
    const Tensor& x = c.inputs[0];
    Tree w;
    w["kernel"] = mul(matmul(x.mT(), g), 2.0);
    w["bias"] = mul(sum(g, {0}), 2.0);
    return LayerGrads{{mul(matmul(g, c.weights["kernel"].leaf().mT()), 2.0)}, w};
  });
  const Tensor x = test::random_tensor(Shape{3, 4}, DType::float64, 2);
  auto initialized = doubled->init({ShapeDtype::of(x)}, Key(1));
  Tree& w = initialized.first;
  Tree& s = initialized.second;
  CHECK(w.contains("kernel"));  // the wrapped layer's weights, unchanged in structure
  check_close(doubled->apply({x}, w, s).outputs[0], dense->apply({x}, w, s).outputs[0], kTight);
  auto loss_custom = [&](const Tree& wt, const Tensor& xt) { return sum(doubled->apply({xt}, wt, s).outputs[0]); };
  auto loss_plain = [&](const Tree& wt, const Tensor& xt) { return sum(dense->apply({xt}, wt, s).outputs[0]); };
  auto got = value_and_grad<0, 1>(loss_custom)(w, x);
  auto want = value_and_grad<0, 1>(loss_plain)(w, x);
  check_close(std::get<0>(got.grad)["kernel"].leaf(), mul(std::get<0>(want.grad)["kernel"].leaf(), 2.0), kTight);
  check_close(std::get<0>(got.grad)["bias"].leaf(), mul(std::get<0>(want.grad)["bias"].leaf(), 2.0), kTight);
  check_close(std::get<1>(got.grad), mul(std::get<1>(want.grad), 2.0), kTight);
  LayerPtr wrong = WithCustomBackward(Dense(2), [](const LayerGradContext&) { return LayerGrads{{}, Tree()}; });
  auto wrong_initialized = wrong->init({ShapeDtype::of(x)}, Key(1));
  Tree& w2 = wrong_initialized.first;
  Tree& s2 = wrong_initialized.second;
  check_error([&] { value_and_grad([&](const Tree& wt) { return sum(wrong->apply({x}, wt, s2).outputs[0]); })(w2); },
              {"WithCustomBackward: the backward returned 0 input gradients for 1 inputs"});
}

TEST_CASE("layers: orthogonal initializer gives orthonormal columns or rows") {
  for (const Shape& shape : {Shape{6, 4}, Shape{3, 5}, Shape{2, 3, 4}}) {
    INFO("shape " << shape);
    const Tensor w = orthogonal(2.0)(Key(5), shape, DType::float64);
    CHECK(w.shape() == shape);
    const Tensor m = w.reshape(Shape{shape.numel() / shape.back(), shape.back()});
    const bool tall = m.size(0) >= m.size(1);
    const Tensor gram = tall ? matmul(m.mT(), m) : matmul(m, m.mT());
    check_close(gram, mul(eye(gram.size(0), -1, DType::float64), 4.0), {1e-12, 1e-12});
  }
  check_error([] { orthogonal()(Key(), Shape{4}, DType::float32); }, {"orthogonal: needs a shape of rank >= 2"});
}

TEST_CASE("layers: Policy, Value and PolicyAndValue heads") {
  auto body = [] { return MLP({8}, nullptr, {.out_activation = true}); };
  const Signature obs{{Shape{5, 3}, DType::float32}};
  CHECK(Policy(4, body)->output_signature(obs) == Signature{{Shape{5, 4}, DType::float32}});
  CHECK(Value(body)->output_signature(obs) == Signature{{Shape{5}, DType::float32}});
  LayerPtr joint = PolicyAndValue(4, body);
  CHECK(joint->n_out() == 2);
  CHECK(joint->output_signature(obs) == Signature{{Shape{5, 4}, DType::float32}, {Shape{5}, DType::float32}});
  auto [wj, sj] = joint->init(obs, Key(1));
  auto [ws, ss] = PolicyAndValue(4, body, nullptr, 0.0, false)->init(obs, Key(1));
  CHECK(Layer::count_parameters(ws) > Layer::count_parameters(wj));  // two bodies instead of one
  auto [wp, sp] = Policy(2, nullptr, nullptr, 0.01)->init(obs, Key(2));
  CHECK(max(abs(wp[0]["kernel"].leaf())).item<double>() <= 0.01);
  check_error([] { Policy(0); }, {"n_distribution_inputs must be >= 1"});
}
