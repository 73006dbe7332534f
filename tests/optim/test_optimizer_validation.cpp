// The optimizers' errors: every hyperparameter rule (NaN included), every mismatch between the
// weights, gradients and slots, and that an update that throws has modified nothing.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <ctrax/optim/adafactor.h>
#include <ctrax/optim/adam.h>
#include <ctrax/optim/momentum.h>
#include <ctrax/optim/rmsprop.h>
#include <ctrax/optim/sgd.h>
#include <ctrax/tensor/ops.h>

#include "../test_util.h"

namespace {

using ctrax::DType;
using ctrax::Shape;
using ctrax::Tensor;
using ctrax::Tree;
using ctrax::test::check_error;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// {layer: {bias: [3], kernel: [2, 3]}, head: [(w [3, 1])]}: leaves layer/bias, layer/kernel, head/0.
Tree weights_tree(DType dtype = DType::float32) {
  Tree::Dict layer{{"bias", Tree(ctrax::full(Shape{3}, 0.5, dtype))},
                   {"kernel", Tree(ctrax::test::random_tensor(Shape{2, 3}, dtype, 1))}};
  return Tree(Tree::Dict{{"layer", Tree(std::move(layer))},
                         {"head", Tree(Tree::List{Tree(ctrax::test::random_tensor(Shape{3, 1}, dtype, 2))})}});
}
Tree gradients_like(const Tree& w) {
  return w.map([](const Tensor& t) { return ctrax::full(t.shape(), 0.25, t.dtype()); });
}

std::vector<std::vector<double>> snapshot(const Tree& t) {
  std::vector<std::vector<double>> out;
  for (const Tensor& x : t.leaves()) out.push_back(x.defined() ? x.to_vector<double>() : std::vector<double>{});
  return out;
}

// An update that must throw with all `fragments` in its message and leave weights and slots as
// they were. The slots have been through one successful step first, so they are not all zero.
void check_rejected(const ctrax::Optimizer& opt, const std::function<void(Tree& g, Tree& w, Tree& s)>& spoil,
                    const std::vector<std::string>& fragments, double lr = 0.01, int64_t step = 1) {
  Tree w = weights_tree();
  Tree s = opt.init(w);
  opt.update(0, 0.01, gradients_like(w), w, s);
  Tree g = gradients_like(w);
  spoil(g, w, s);
  const auto w_before = snapshot(w), s_before = snapshot(s);
  check_error([&] { opt.update(step, lr, g, w, s); }, fragments);
  CHECK(snapshot(w) == w_before);
  CHECK(snapshot(s) == s_before);
}

template <typename Make>
void check_hyperparameter(Make make, const std::vector<std::string>& fragments) {
  check_error([&] { make(); }, fragments);
}

}  // namespace

TEST_CASE("Optimizer constructors reject a bad learning_rate or clip_grad_norm, NaN included") {
  for (double lr : {-1.0, kNaN, kInf, -kInf}) {
    INFO(lr);
    check_error([&] { ctrax::SGD(ctrax::SGDOptions{lr, std::nullopt}); },
                {"learning_rate must be >= 0 and finite, got "});
    check_error([&] { ctrax::AdamOptions o; o.learning_rate = lr; ctrax::Adam a(o); }, {"learning_rate"});
  }
  for (double c : {0.0, -1.0, kNaN, kInf}) {
    INFO(c);
    check_error([&] { ctrax::SGD(ctrax::SGDOptions{0.1, c}); }, {"clip_grad_norm must be > 0 and finite"});
    check_error([&] { ctrax::RMSPropOptions o; o.clip_grad_norm = c; ctrax::RMSProp r(o); }, {"clip_grad_norm"});
  }
  // Zero and finite values are fine.
  CHECK(ctrax::SGD(ctrax::SGDOptions{0.0, 2.5}).clip_grad_norm() == 2.5);
  CHECK(ctrax::Adam().learning_rate().is_constant());
  CHECK(ctrax::Adam().learning_rate_at(7) == 1e-4);
  CHECK_FALSE(ctrax::Adam().clip_grad_norm().has_value());
}

TEST_CASE("Momentum, Adam and AdamW reject their bad hyperparameters") {
  for (double bad : {-0.1, 1.0, 1.5, kNaN}) {
    INFO(bad);
    check_hyperparameter([&] { ctrax::MomentumOptions o; o.mass = bad; ctrax::Momentum m(o); },
                         {"Momentum: mass must be in [0, 1), got "});
    check_hyperparameter([&] { ctrax::MomentumOptions o; o.weight_decay_rate = bad; ctrax::Momentum m(o); },
                         {"Momentum: weight_decay_rate must be in [0, 1)"});
    check_hyperparameter([&] { ctrax::AdamOptions o; o.b1 = bad; ctrax::Adam a(o); }, {"Adam: b1 must be in [0, 1)"});
    check_hyperparameter([&] { ctrax::AdamOptions o; o.b2 = bad; ctrax::Adam a(o); }, {"Adam: b2 must be in [0, 1)"});
    check_hyperparameter([&] { ctrax::AdamOptions o; o.weight_decay_rate = bad; ctrax::Adam a(o); },
                         {"Adam: weight_decay_rate must be in [0, 1)"});
    check_hyperparameter([&] { ctrax::AdamWOptions o; o.b1 = bad; ctrax::AdamW a(o); }, {"AdamW: b1 must be in [0, 1)"});
    check_hyperparameter([&] { ctrax::AdamWOptions o; o.b2 = bad; ctrax::AdamW a(o); }, {"AdamW: b2 must be in [0, 1)"});
  }
  for (double bad : {0.0, -1e-8, kNaN, kInf}) {
    INFO(bad);
    check_hyperparameter([&] { ctrax::AdamOptions o; o.eps = bad; ctrax::Adam a(o); }, {"Adam: eps must be > 0 and finite"});
    check_hyperparameter([&] { ctrax::AdamWOptions o; o.eps = bad; ctrax::AdamW a(o); }, {"AdamW: eps must be > 0"});
  }
  for (double bad : {-0.01, kNaN, kInf}) {
    INFO(bad);
    check_hyperparameter([&] { ctrax::AdamWOptions o; o.weight_decay = bad; ctrax::AdamW a(o); },
                         {"AdamW: weight_decay must be >= 0 and finite"});
  }
  // lr * weight_decay must stay below 1 (else the decay zeroes or flips every weight).
  check_hyperparameter([&] { ctrax::AdamWOptions o; o.learning_rate = 0.5; o.weight_decay = 2.0; ctrax::AdamW a(o); },
                       {"AdamW: learning_rate * weight_decay must be < 1, got 1"});
  // Edges that are allowed: b = 0, weight decay 0, mass 0.
  ctrax::AdamOptions edge;
  edge.b1 = 0;
  edge.b2 = 0;
  edge.weight_decay_rate = 0;
  CHECK(ctrax::Adam(edge).options().b2 == 0);
  CHECK(ctrax::Momentum(ctrax::MomentumOptions{0.01, 0.0, 0.0, false, std::nullopt}).options().mass == 0);
}

TEST_CASE("RMSProp and Adafactor reject their bad hyperparameters") {
  for (double bad : {-0.1, 1.0, kNaN}) {
    INFO(bad);
    check_hyperparameter([&] { ctrax::RMSPropOptions o; o.gamma = bad; ctrax::RMSProp r(o); },
                         {"RMSProp: gamma must be in [0, 1)"});
    check_hyperparameter([&] { ctrax::AdafactorOptions o; o.beta1 = bad; ctrax::Adafactor a(o); },
                         {"Adafactor: beta1 must be in [0, 1)"});
    check_hyperparameter([&] { ctrax::AdafactorOptions o; o.weight_decay_rate = bad; ctrax::Adafactor a(o); },
                         {"Adafactor: weight_decay_rate must be in [0, 1)"});
  }
  for (double bad : {0.0, -1.0, kNaN, kInf}) {
    INFO(bad);
    check_hyperparameter([&] { ctrax::RMSPropOptions o; o.eps = bad; ctrax::RMSProp r(o); },
                         {"RMSProp: eps must be > 0 and finite"});
    check_hyperparameter([&] { ctrax::AdafactorOptions o; o.decay_rate = bad; ctrax::Adafactor a(o); },
                         {"Adafactor: decay_rate must be > 0 and finite"});
    check_hyperparameter([&] { ctrax::AdafactorOptions o; o.clipping_threshold = bad; ctrax::Adafactor a(o); },
                         {"Adafactor: clipping_threshold must be > 0 and finite"});
    check_hyperparameter([&] { ctrax::AdafactorOptions o; o.epsilon1 = bad; ctrax::Adafactor a(o); },
                         {"Adafactor: epsilon1 must be > 0 and finite"});
  }
  for (double bad : {-1.0, kNaN, kInf}) {
    INFO(bad);
    check_hyperparameter([&] { ctrax::RMSPropOptions o; o.initial_mean_square = bad; ctrax::RMSProp r(o); },
                         {"RMSProp: initial_mean_square must be >= 0 and finite"});
    check_hyperparameter([&] { ctrax::AdafactorOptions o; o.epsilon2 = bad; ctrax::Adafactor a(o); },
                         {"Adafactor: epsilon2 must be >= 0 and finite"});
  }
  ctrax::AdafactorOptions zero_eps2;
  zero_eps2.epsilon2 = 0;
  CHECK(ctrax::Adafactor(zero_eps2).options().epsilon2 == 0);
}

TEST_CASE("update rejects a bad step or learning rate and modifies nothing") {
  const ctrax::Adam adam;
  const auto none = [](Tree&, Tree&, Tree&) {};
  check_rejected(adam, none, {"Adam.update: step must be >= 0", "got -1"}, 0.01, -1);
  for (double lr : {-0.5, kNaN, kInf}) check_rejected(adam, none, {"Adam: learning_rate must be >= 0 and finite"}, lr);
  // AdamW's lr * weight_decay < 1, checked against the learning rate given to update.
  const ctrax::AdamW adamw;  // weight_decay 0.01
  check_rejected(adamw, none, {"AdamW: learning_rate * weight_decay must be < 1, got 1"}, 100.0);
  check_rejected(adamw, none, {"AdamW: learning_rate * weight_decay must be < 1, got 2"}, 200.0);
}

TEST_CASE("update rejects gradients whose structure differs, naming the path") {
  const ctrax::Adam adam;
  check_rejected(adam, [](Tree& g, Tree&, Tree&) { g["head"].list().push_back(Tree(ctrax::zeros(Shape{1}))); },
                 {"Adam.update: the gradients do not match the weights at 'head'", "a list of 1 item",
                  "a list of 2 items"});
  check_rejected(adam, [](Tree& g, Tree&, Tree&) {
                   Tree::Dict& d = g["layer"].dict();
                   d["Kernel"] = d.at("kernel");
                   d.erase("kernel");
                 },
                 {"at 'layer'", "keys (bias, kernel)", "keys (Kernel, bias)"});
  check_rejected(adam, [](Tree& g, Tree&, Tree&) { g["head"][0] = Tree(Tree::List{}); },
                 {"at 'head/0'", "a tensor float32[3, 1]", "the gradients a list of 0 items"});
  check_rejected(adam, [](Tree& g, Tree&, Tree&) { g = Tree(ctrax::zeros(Shape{1})); },
                 {"at the root", "a dict with keys (head, layer)"});
}

TEST_CASE("update rejects a gradient of another shape, dtype, or undefined") {
  const ctrax::Momentum momentum;
  check_rejected(momentum, [](Tree& g, Tree&, Tree&) { g["layer"]["kernel"] = Tree(ctrax::zeros(Shape{3, 2})); },
                 {"Momentum.update: the gradient at 'layer/kernel' has shape [3, 2], the weight [2, 3]"});
  check_rejected(momentum,
                 [](Tree& g, Tree&, Tree&) { g["layer"]["kernel"] = Tree(ctrax::zeros(Shape{2, 3}, DType::float64)); },
                 {"the gradient at 'layer/kernel' has dtype float64, the weight float32"});
  check_rejected(momentum, [](Tree& g, Tree&, Tree&) { g["layer"]["bias"] = Tree(Tensor()); },
                 {"the gradient at 'layer/bias' is undefined"});
}

TEST_CASE("update rejects integer, undefined and non-contiguous weights") {
  const ctrax::SGD sgd;
  check_rejected(sgd, [](Tree& g, Tree& w, Tree&) {
                   w["head"][0] = Tree(ctrax::zeros(Shape{3, 1}, DType::int32));
                   g["head"][0] = Tree(ctrax::zeros(Shape{3, 1}, DType::int32));
                 },
                 {"SGD.update: the weight at 'head/0' has dtype int32; weights must be float32 or float64"});
  check_rejected(sgd, [](Tree&, Tree& w, Tree&) { w["head"][0] = Tree(Tensor()); },
                 {"the weight at 'head/0' is undefined"});
  check_rejected(sgd, [](Tree& g, Tree& w, Tree&) {
                   // Same shape [2, 3], but a transposed view of [3, 2] memory.
                   w["layer"]["kernel"] = Tree(ctrax::zeros(Shape{3, 2}).transpose(0, 1));
                 },
                 {"the weight at 'layer/kernel' (float32[2, 3]) is not contiguous"});
  // init refuses integer and undefined weights too.
  check_error([&] { sgd.init(Tree(Tree::List{Tree(ctrax::zeros(Shape{2}, DType::int64))})); },
              {"SGD.init: the weight at '0' has dtype int64"});
  check_error([&] { ctrax::Adam().init(Tree(Tree::Dict{{"w", Tree(Tensor())}})); },
              {"Adam.init: the weight at 'w' is undefined"});
}

TEST_CASE("update rejects slots of the wrong structure, count, shape, dtype or layout") {
  const ctrax::Adam adam;
  check_rejected(adam, [](Tree&, Tree&, Tree& s) { s = ctrax::SGD().init(weights_tree()); },
                 {"Adam.update: the slots of the weight at 'head/0' must be a list of 2 tensors, got a list of 0 items"});
  check_rejected(adam, [](Tree&, Tree&, Tree& s) { s = ctrax::RMSProp().init(weights_tree()); },
                 {"must be a list of 2 tensors, got a list of 1 item"});
  check_rejected(adam, [](Tree&, Tree&, Tree& s) { s["layer"].dict().erase("bias"); },
                 {"the slots do not match the weights at 'layer'", "the slots a dict with keys (kernel)"});
  check_rejected(adam, [](Tree&, Tree&, Tree& s) { s["layer"]["kernel"][1] = Tree(ctrax::zeros(Shape{6})); },
                 {"slot 1 of the weight at 'layer/kernel' is float32[6], expected float32[2, 3]"});
  check_rejected(adam,
                 [](Tree&, Tree&, Tree& s) { s["layer"]["kernel"][0] = Tree(ctrax::zeros(Shape{2, 3}, DType::float64)); },
                 {"slot 0 of the weight at 'layer/kernel' is float64[2, 3], expected float32[2, 3]"});
  check_rejected(adam,
                 [](Tree&, Tree&, Tree& s) { s["layer"]["kernel"][0] = Tree(ctrax::zeros(Shape{3, 2}).transpose(0, 1)); },
                 {"slot 0 of the weight at 'layer/kernel' must be a contiguous tensor"});
  check_rejected(adam, [](Tree&, Tree&, Tree& s) { s["head"][0][1] = Tree(Tree::List{}); },
                 {"slot 1 of the weight at 'head/0' must be a tensor, got a list of 0 items"});
  // Adafactor's factored slots have their own shapes.
  ctrax::AdafactorOptions o;
  o.factored = false;
  check_rejected(ctrax::Adafactor(), [&](Tree&, Tree&, Tree& s) { s = ctrax::Adafactor(o).init(weights_tree()); },
                 {"Adafactor.update: the slots of the weight at 'head/0' must be a list of 2 tensors, got a list of 1 item"});
}

TEST_CASE("A float64 tree updates, and a mixed float32 / float64 tree too") {
  Tree w = weights_tree(DType::float64);
  w["head"][0] = Tree(ctrax::ones(Shape{3, 1}, DType::float32));
  const ctrax::Adam adam;
  Tree s = adam.init(w);
  CHECK(s["head"][0][0].leaf().dtype() == DType::float32);
  CHECK(s["layer"]["bias"][1].leaf().dtype() == DType::float64);
  adam.update(0, 0.1, gradients_like(w), w, s);
  CHECK(w["head"][0].leaf().to_vector<double>()[0] < 1.0);
  CHECK(w["layer"]["bias"].leaf().to_vector<double>()[0] < 0.5);
}
