// Core layers (see core.h).
#include "core.h"

#include "../autograd/tape.h"
#include "../base/error.h"
#include "../tensor/ops.h"
#include "combinators.h"

namespace ctrax {

namespace {

class DenseLayer final : public Layer {
 public:
  DenseLayer(int64_t n_units, DenseOptions options)
      : Layer("Dense_" + std::to_string(n_units), 1, 1), n_units_(n_units), options_(std::move(options)) {
    CTRAX_REQUIRE(n_units_ >= 1, "Dense: n_units must be >= 1, got ", n_units_);
    CTRAX_REQUIRE(options_.kernel_init != nullptr && (!options_.use_bias || options_.bias_init != nullptr),
                  "Dense: an initializer is empty");
  }

 protected:
  std::pair<Tree, Tree> init_weights_and_state(const Signature& input, Key rng, LayerPass&) override {
    const ShapeDtype& x = input[0];
    if (x.shape.rank() < 1) fail("input is a rank-0 tensor; Dense needs a last axis of features");
    if (!is_floating(x.dtype)) fail(std::string("input dtype ") + dtype_name(x.dtype) + " is not a float dtype");
    const auto [k_kernel, k_bias] = split(rng);
    Tree::Dict w;
    w["kernel"] = options_.kernel_init(k_kernel, Shape{x.shape.back(), n_units_}, x.dtype);
    if (options_.use_bias) w["bias"] = options_.bias_init(k_bias, Shape{n_units_}, x.dtype);
    return {Tree(std::move(w)), Tree()};
  }

  LayerResult forward(const Stack& inputs, const Tree& weights, const Tree& state, Key, Mode,
                      LayerPass&) const override {
    const Tensor& x = inputs[0];
    const Tensor& kernel = weights["kernel"].leaf();
    if (x.rank() < 1) fail("input is a rank-0 tensor; Dense needs a last axis of features");
    if (x.shape().back() != kernel.size(0))
      fail("input has last dimension " + std::to_string(x.shape().back()) + ", expected " +
           std::to_string(kernel.size(0)));
    Tensor y = matmul(x, kernel);
    if (options_.use_bias) y = add(y, weights["bias"].leaf());
    return {{y}, state};
  }

 private:
  int64_t n_units_;
  DenseOptions options_;
};

class LearnedColumnsLayer final : public Layer {
 public:
  LearnedColumnsLayer(int64_t n, Initializer init)
      : Layer("LearnedColumns_" + std::to_string(n), 1, 1), n_(n), init_(std::move(init)) {
    CTRAX_REQUIRE(n_ >= 1, "LearnedColumns: n must be >= 1, got ", n_);
    CTRAX_REQUIRE(init_ != nullptr, "LearnedColumns: the initializer is empty");
  }

 protected:
  std::pair<Tree, Tree> init_weights_and_state(const Signature& input, Key rng, LayerPass&) override {
    const ShapeDtype& x = input[0];
    if (x.shape.rank() < 1) fail("input is a rank-0 tensor; LearnedColumns needs a last axis of features");
    if (!is_floating(x.dtype)) fail(std::string("input dtype ") + dtype_name(x.dtype) + " is not a float dtype");
    Tree::Dict w;
    w["columns"] = init_(rng, Shape{n_}, x.dtype);
    return {Tree(std::move(w)), Tree()};
  }

  LayerResult forward(const Stack& inputs, const Tree& weights, const Tree& state, Key, Mode,
                      LayerPass&) const override {
    const Tensor& x = inputs[0];
    const Tensor& columns = weights["columns"].leaf();
    if (x.rank() < 1) fail("input is a rank-0 tensor; LearnedColumns needs a last axis of features");
    if (columns.shape() != Shape{n_})
      fail("the columns weight has shape " + to_string(columns.shape()) + ", expected [" + std::to_string(n_) + "]");
    if (x.dtype() != columns.dtype())
      fail(std::string("input dtype ") + dtype_name(x.dtype()) + " differs from the columns' dtype " +
           dtype_name(columns.dtype()));
    // The vector viewed as [1, ..., 1, n] and broadcast over x's rows: expand's backward sums
    // the rows' gradients into it.
    Shape ones = Shape::filled(x.rank(), 1);
    ones[x.rank() - 1] = n_;
    Shape rows = x.shape();
    rows[rows.rank() - 1] = n_;
    return {{concatenate({x, columns.reshape(ones).expand(rows)}, -1)}, state};
  }

 private:
  int64_t n_;
  Initializer init_;
};

LayerPtr unary(std::string name, std::function<Tensor(const Tensor&)> f) {
  CTRAX_REQUIRE(f != nullptr, "layer ", name, ": the function is empty");
  return Fn(std::move(name), std::move(f));
}

}  // namespace

LayerPtr Dense(int64_t n_units, DenseOptions options) { return std::make_shared<DenseLayer>(n_units, std::move(options)); }

LayerPtr LearnedColumns(int64_t n, Initializer init) {
  return std::make_shared<LearnedColumnsLayer>(n, std::move(init));
}

LayerPtr Relu() { return unary("Relu", [](const Tensor& x) { return relu(x); }); }
LayerPtr LeakyRelu(double a) {
  return unary("LeakyRelu", [a](const Tensor& x) { return where(ge(x, scalar_like(0.0, x)), x, mul(x, a)); });
}
LayerPtr Elu(double a) {
  return unary("Elu", [a](const Tensor& x) { return where(gt(x, scalar_like(0.0, x)), x, mul(expm1(x), a)); });
}
LayerPtr Selu() {
  constexpr double kAlpha = 1.6732632423543772848170429916717;
  constexpr double kScale = 1.0507009873554804934193349852946;
  return unary("Selu", [](const Tensor& x) {
    return mul(where(gt(x, scalar_like(0.0, x)), x, mul(expm1(x), kAlpha)), kScale);
  });
}
LayerPtr Gelu() { return unary("Gelu", [](const Tensor& x) { return gelu(x, false); }); }
LayerPtr FastGelu() { return unary("FastGelu", [](const Tensor& x) { return gelu(x, true); }); }
LayerPtr Sigmoid() { return unary("Sigmoid", [](const Tensor& x) { return sigmoid(x); }); }
LayerPtr Tanh() { return unary("Tanh", [](const Tensor& x) { return tanh(x); }); }
LayerPtr HardSigmoid() { return unary("HardSigmoid", [](const Tensor& x) { return clip(add(x, 1.0), 0.0, 1.0); }); }
LayerPtr HardTanh() { return unary("HardTanh", [](const Tensor& x) { return clip(x, -1.0, 1.0); }); }
LayerPtr Softplus() { return unary("Softplus", [](const Tensor& x) { return softplus(x); }); }
LayerPtr Swish() { return unary("Swish", [](const Tensor& x) { return mul(x, sigmoid(x)); }); }
LayerPtr Glu() {
  return unary("Glu", [](const Tensor& x) {
    CTRAX_REQUIRE(x.rank() >= 1 && x.shape().back() % 2 == 0, "Glu: the last axis must have an even size, got shape ",
                  x.shape());
    const std::vector<Tensor> halves = split(x, 2, -1);
    return mul(halves[0], sigmoid(halves[1]));
  });
}
LayerPtr LogSoftmax(int axis) { return unary("LogSoftmax", [axis](const Tensor& x) { return log_softmax(x, axis); }); }
LayerPtr Softmax(int axis) { return unary("Softmax", [axis](const Tensor& x) { return softmax(x, axis); }); }
LayerPtr Mean(int axis, bool keepdims) {
  return unary("Mean", [axis, keepdims](const Tensor& x) { return mean(x, {axis}, keepdims); });
}
LayerPtr Sum(int axis, bool keepdims) {
  return unary("Sum", [axis, keepdims](const Tensor& x) { return sum(x, {axis}, keepdims); });
}
LayerPtr ArgMax(int axis, bool keepdims) {
  return unary("ArgMax", [axis, keepdims](const Tensor& x) { return argmax(x, axis, keepdims); });
}
LayerPtr Negate() { return unary("Negate", [](const Tensor& x) { return neg(x); }); }
LayerPtr StopGradient() { return unary("StopGradient", [](const Tensor& x) { return stop_gradient(x); }); }
LayerPtr Flatten(int n_axes_to_keep) {
  CTRAX_REQUIRE(n_axes_to_keep >= 0, "Flatten: n_axes_to_keep must be >= 0, got ", n_axes_to_keep);
  return unary("Flatten", [n_axes_to_keep](const Tensor& x) {
    CTRAX_REQUIRE(x.rank() >= n_axes_to_keep, "Flatten: keeps ", n_axes_to_keep, " axes of a tensor of shape ",
                  x.shape());
    if (x.rank() == n_axes_to_keep) return x;
    return n_axes_to_keep == 0 ? x.reshape(Shape{x.numel()}) : x.flatten(n_axes_to_keep, -1);
  });
}

}  // namespace ctrax
