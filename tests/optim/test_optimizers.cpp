// The optimizers' update rules against arithmetic written out in double in this file.
//
// Each optimizer runs three steps on a nested tree of weights ([{bias: [3], kernel: [2, 3]},
// scale: [2]]), in float32 and float64, and after every step its weights, slots and statistics
// are compared with a scalar reference that follows the textbook formula (Adam's m^ and v^ are
// divided out, not folded as the kernels fold them). A few first steps are also checked against
// numbers worked out by hand. Validation errors are in test_optimizer_validation.cpp, the
// PyTorch replay in test_optimizer_torch_golden.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
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
using Vec = std::vector<double>;

// ---- the nested tree ----------------------------------------------------------------------------

// Leaf order (depth first, dict keys sorted): 0/bias, 0/kernel, 1.
const std::vector<Shape> kShapes = {Shape{3}, Shape{2, 3}, Shape{2}};

Tree nested(const std::vector<Vec>& leaves, DType dtype) {
  Tree::Dict layer;
  layer["bias"] = Tree(ctrax::from_vector(leaves[0], kShapes[0]).to(dtype));
  layer["kernel"] = Tree(ctrax::from_vector(leaves[1], kShapes[1]).to(dtype));
  return Tree(Tree::List{Tree(std::move(layer)), Tree(ctrax::from_vector(leaves[2], kShapes[2]).to(dtype))});
}

// Deterministic values of mixed signs and magnitudes: leaf l, element i, at step t.
Vec initial_weights(size_t l) {
  Vec w(static_cast<size_t>(kShapes[l].numel()));
  for (size_t i = 0; i < w.size(); ++i) w[i] = std::cos(1.7 * static_cast<double>(i) + 0.9 * static_cast<double>(l)) * 0.8;
  return w;
}
Vec gradient_values(size_t l, int t) {
  Vec g(static_cast<size_t>(kShapes[l].numel()));
  for (size_t i = 0; i < g.size(); ++i)
    g[i] = std::sin(1.3 * static_cast<double>(i) + 0.7 * t + 0.4 * static_cast<double>(l)) * (1.0 + 0.5 * t);
  return g;
}

// ---- the scalar references ---------------------------------------------------------------------

// One weight's update in double, on flat row-major values of the weight's shape. `scale` is the
// clipping factor the gradient is multiplied by.
struct Reference {
  std::function<std::vector<Vec>(const Shape&)> init;
  std::function<void(int t, double lr, double scale, const Shape&, Vec& w, const Vec& g, std::vector<Vec>& slots)>
      step;
};

Reference sgd_reference() {
  return {[](const Shape&) { return std::vector<Vec>{}; },
          [](int, double lr, double scale, const Shape&, Vec& w, const Vec& g, std::vector<Vec>&) {
            for (size_t i = 0; i < w.size(); ++i) w[i] -= lr * scale * g[i];
          }};
}

Reference momentum_reference(double mass, double wd, bool nesterov) {
  return {[](const Shape& s) { return std::vector<Vec>{Vec(static_cast<size_t>(s.numel()), 0.0)}; },
          [=](int, double lr, double scale, const Shape&, Vec& w, const Vec& g, std::vector<Vec>& slots) {
            Vec& v = slots[0];
            for (size_t i = 0; i < w.size(); ++i) {
              const double gi = scale * g[i];
              v[i] = mass * v[i] + gi;
              const double update = nesterov ? mass * v[i] + gi : v[i];
              w[i] = (1 - wd) * w[i] - lr * update;
            }
          }};
}

// decoupled_lr_decay: AdamW's (1 - lr wd) instead of Trax's (1 - wd).
Reference adam_reference(double b1, double b2, double eps, double wd, bool decoupled_lr_decay) {
  return {[](const Shape& s) {
            return std::vector<Vec>{Vec(static_cast<size_t>(s.numel()), 0.0), Vec(static_cast<size_t>(s.numel()), 0.0)};
          },
          [=](int t, double lr, double scale, const Shape&, Vec& w, const Vec& g, std::vector<Vec>& slots) {
            Vec& m = slots[0];
            Vec& v = slots[1];
            const double decay = decoupled_lr_decay ? 1 - lr * wd : 1 - wd;
            for (size_t i = 0; i < w.size(); ++i) {
              const double gi = scale * g[i];
              m[i] = b1 * m[i] + (1 - b1) * gi;
              v[i] = b2 * v[i] + (1 - b2) * gi * gi;
              const double m_hat = m[i] / (1 - std::pow(b1, t + 1));
              const double v_hat = v[i] / (1 - std::pow(b2, t + 1));
              w[i] = decay * w[i] - lr * m_hat / (std::sqrt(v_hat) + eps);
            }
          }};
}

Reference rmsprop_reference(double gamma, double eps, double initial) {
  return {[=](const Shape& s) { return std::vector<Vec>{Vec(static_cast<size_t>(s.numel()), initial)}; },
          [=](int, double lr, double scale, const Shape&, Vec& w, const Vec& g, std::vector<Vec>& slots) {
            Vec& a = slots[0];
            for (size_t i = 0; i < w.size(); ++i) {
              const double gi = scale * g[i];
              a[i] = gamma * a[i] + (1 - gamma) * gi * gi;
              w[i] -= lr * gi / (std::sqrt(a[i]) + eps);
            }
          }};
}

// Trax's adafactor.py transcribed: factored over the last two axes for rank >= 2.
Reference adafactor_reference(const ctrax::AdafactorOptions& o) {
  const auto factored = [o](const Shape& s) { return o.factored && s.rank() >= 2; };
  return {[=](const Shape& s) {
            std::vector<Vec> slots;
            const size_t n = static_cast<size_t>(s.numel());
            if (factored(s)) {
              const size_t cols = static_cast<size_t>(s[s.rank() - 1]), rows = static_cast<size_t>(s[s.rank() - 2]);
              slots.push_back(Vec(n / cols, 0.0));         // [..., rows]
              slots.push_back(Vec(n / rows, 0.0));         // [..., cols]
            } else {
              slots.push_back(Vec(n, 0.0));
            }
            if (o.do_momentum) slots.push_back(Vec(n, 0.0));
            return slots;
          },
          [=](int t, double lr, double scale, const Shape& s, Vec& w, const Vec& g_in, std::vector<Vec>& slots) {
            const size_t n = w.size();
            Vec g(n);
            for (size_t i = 0; i < n; ++i) g[i] = scale * g_in[i];
            const double decay = 1 - std::pow(t + 1.0, -o.decay_rate);
            double w2 = 0;
            for (double x : w) w2 += x * x;
            double update_scale = lr;
            if (o.multiply_by_parameter_scale) update_scale *= std::max(std::sqrt(w2 / n), o.epsilon2);
            Vec y(n);
            if (factored(s)) {
              const size_t cols = static_cast<size_t>(s[s.rank() - 1]), rows = static_cast<size_t>(s[s.rank() - 2]);
              const size_t batch = n / (rows * cols);
              Vec& vr = slots[0];
              Vec& vc = slots[1];
              for (size_t b = 0; b < batch; ++b) {
                for (size_t i = 0; i < rows; ++i) {
                  double mean = 0;
                  for (size_t j = 0; j < cols; ++j) mean += g[(b * rows + i) * cols + j] * g[(b * rows + i) * cols + j] + o.epsilon1;
                  vr[b * rows + i] = decay * vr[b * rows + i] + (1 - decay) * mean / cols;
                }
                for (size_t j = 0; j < cols; ++j) {
                  double mean = 0;
                  for (size_t i = 0; i < rows; ++i) mean += g[(b * rows + i) * cols + j] * g[(b * rows + i) * cols + j] + o.epsilon1;
                  vc[b * cols + j] = decay * vc[b * cols + j] + (1 - decay) * mean / rows;
                }
                double row_mean = 0;
                for (size_t i = 0; i < rows; ++i) row_mean += vr[b * rows + i] / rows;
                for (size_t i = 0; i < rows; ++i)
                  for (size_t j = 0; j < cols; ++j)
                    y[(b * rows + i) * cols + j] = g[(b * rows + i) * cols + j] *
                                                   std::pow(vr[b * rows + i] / row_mean, -0.5) *
                                                   std::pow(vc[b * cols + j], -0.5);
              }
            } else {
              Vec& v = slots[0];
              for (size_t i = 0; i < n; ++i) {
                v[i] = decay * v[i] + (1 - decay) * (g[i] * g[i] + o.epsilon1);
                y[i] = g[i] * std::pow(v[i], -0.5);
              }
            }
            if (o.do_clipping) {
              double y2 = 0;
              for (double x : y) y2 += x * x;
              const double denominator = std::max(1.0, std::sqrt(y2 / n) / o.clipping_threshold);
              for (double& x : y) x /= denominator;
            }
            for (size_t i = 0; i < n; ++i) {
              double subtrahend = update_scale * y[i];
              if (o.do_momentum) {
                Vec& m = slots.back();
                m[i] = o.beta1 * m[i] + (1 - o.beta1) * subtrahend;
                subtrahend = m[i];
              }
              w[i] = (1 - o.weight_decay_rate) * w[i] - subtrahend;
            }
          }};
}

// ---- the runner ---------------------------------------------------------------------------------

// Runs three steps of `opt` on the nested tree and of `ref` on flat copies, with learning rates
// lrs[t], and compares weights, slots and statistics after each.
void check_against_reference(const ctrax::Optimizer& opt, const Reference& ref, DType dtype, const Vec& lrs,
                             std::optional<double> clip = std::nullopt, const std::vector<Shape>& shapes = kShapes) {
  INFO(opt.name() << " in " << dtype);
  const ctrax::test::Tolerance tol = dtype == DType::float64 ? ctrax::test::Tolerance{1e-13, 1e-11}
                                                             : ctrax::test::Tolerance{2e-6, 2e-5};
  std::vector<Vec> w(shapes.size());
  std::vector<std::vector<Vec>> slots(shapes.size());
  for (size_t l = 0; l < shapes.size(); ++l) {
    w[l] = initial_weights(l);
    w[l].resize(static_cast<size_t>(shapes[l].numel()), 0.25);
    slots[l] = ref.init(shapes[l]);
  }
  // The tree: the same structure as nested(), with these shapes.
  const auto make = [&](const std::vector<Vec>& leaves) {
    Tree::Dict layer;
    layer["bias"] = Tree(ctrax::from_vector(leaves[0], shapes[0]).to(dtype));
    layer["kernel"] = Tree(ctrax::from_vector(leaves[1], shapes[1]).to(dtype));
    return Tree(Tree::List{Tree(std::move(layer)), Tree(ctrax::from_vector(leaves[2], shapes[2]).to(dtype))});
  };
  Tree weights = make(w);
  Tree opt_slots = opt.init(weights);
  for (int t = 0; t < static_cast<int>(lrs.size()); ++t) {
    INFO("step " << t);
    std::vector<Vec> g(shapes.size());
    double g2 = 0, w2 = 0;
    for (size_t l = 0; l < shapes.size(); ++l) {
      g[l] = gradient_values(l, t);
      g[l].resize(static_cast<size_t>(shapes[l].numel()), -0.5);
      // The reference sees the gradient after rounding to the dtype, as the optimizer does.
      g[l] = ctrax::from_vector(g[l]).to(dtype).to_vector<double>();
      for (double x : g[l]) g2 += x * x;
      for (double x : w[l]) w2 += x * x;
    }
    double scale = 1;
    if (clip && std::sqrt(g2) > *clip) scale = *clip / std::sqrt(g2);
    const ctrax::OptimizerStats stats = opt.update(t, lrs[t], make(g), weights, opt_slots);
    for (size_t l = 0; l < shapes.size(); ++l) ref.step(t, lrs[t], scale, shapes[l], w[l], g[l], slots[l]);

    CHECK(stats.gradients_l2 == doctest::Approx(std::sqrt(g2)).epsilon(1e-12));
    CHECK(stats.weights_l2 == doctest::Approx(std::sqrt(w2)).epsilon(dtype == DType::float64 ? 1e-12 : 1e-6));
    CHECK(stats.clipped == (scale != 1));
    const std::vector<Tensor> got = weights.leaves();
    const std::vector<Tensor> got_slots = opt_slots.leaves();
    size_t k = 0;
    for (size_t l = 0; l < shapes.size(); ++l) {
      ctrax::test::check_close(got[l], shapes[l], w[l], tol, "weight " + std::to_string(l));
      for (size_t s = 0; s < slots[l].size(); ++s, ++k)
        ctrax::test::check_close(got_slots[k], got_slots[k].shape(), slots[l][s], tol,
                                 "slot " + std::to_string(s) + " of weight " + std::to_string(l));
    }
    CHECK(k == got_slots.size());
  }
}

const DType kFloats[] = {DType::float32, DType::float64};

}  // namespace

// ---- each rule against its reference -------------------------------------------------------------

TEST_CASE("SGD steps match w - lr g on a nested tree") {
  for (DType dtype : kFloats) check_against_reference(ctrax::SGD(), sgd_reference(), dtype, {0.1, 0.05, 0.2});
}

TEST_CASE("Momentum steps match the reference, Nesterov and plain, with weight decay") {
  for (DType dtype : kFloats) {
    check_against_reference(ctrax::Momentum(), momentum_reference(0.9, 1e-5, true), dtype, {0.01, 0.02, 0.03});
    ctrax::MomentumOptions o;
    o.mass = 0.5;
    o.weight_decay_rate = 0.1;
    o.nesterov = false;
    check_against_reference(ctrax::Momentum(o), momentum_reference(0.5, 0.1, false), dtype, {0.1, 0.1, 0.05});
    o.nesterov = true;
    check_against_reference(ctrax::Momentum(o), momentum_reference(0.5, 0.1, true), dtype, {0.1, 0.1, 0.05});
  }
}

TEST_CASE("Adam steps match the bias-corrected reference with Trax's decay") {
  for (DType dtype : kFloats) {
    check_against_reference(ctrax::Adam(), adam_reference(0.9, 0.999, 1e-5, 1e-5, false), dtype, {1e-3, 2e-3, 1e-3});
    ctrax::AdamOptions o;
    o.b1 = 0.5;
    o.b2 = 0.75;
    o.eps = 0.1;
    o.weight_decay_rate = 0.05;
    check_against_reference(ctrax::Adam(o), adam_reference(0.5, 0.75, 0.1, 0.05, false), dtype, {0.1, 0.3, 0.2});
  }
}

TEST_CASE("AdamW steps decay the weights by lr times weight_decay") {
  for (DType dtype : kFloats) {
    check_against_reference(ctrax::AdamW(), adam_reference(0.9, 0.999, 1e-8, 0.01, true), dtype, {1e-3, 1e-2, 5e-3});
    ctrax::AdamWOptions o;
    o.weight_decay = 2.0;
    check_against_reference(ctrax::AdamW(o), adam_reference(0.9, 0.999, 1e-8, 2.0, true), dtype, {0.1, 0.3, 0.2});
  }
}

TEST_CASE("RMSProp steps match the reference, from Trax's ones and from zeros") {
  for (DType dtype : kFloats) {
    check_against_reference(ctrax::RMSProp(), rmsprop_reference(0.9, 1e-8, 1.0), dtype, {1e-3, 1e-2, 1e-2});
    ctrax::RMSPropOptions o;
    o.gamma = 0.6;
    o.eps = 1e-3;
    o.initial_mean_square = 0.0;
    check_against_reference(ctrax::RMSProp(o), rmsprop_reference(0.6, 1e-3, 0.0), dtype, {0.1, 0.2, 0.3});
  }
}

TEST_CASE("Adafactor steps match Trax's rule: factored, unfactored, clipping, momentum, batched matrices") {
  // kernel [2, 3] is factored; bias [3] and scale [2] are not. The second shape set makes the
  // "kernel" a batch of two 2 x 3 matrices and the "bias" a 4 x 1 matrix.
  const std::vector<Shape> batched = {Shape{4, 1}, Shape{2, 2, 3}, Shape{2}};
  for (DType dtype : kFloats) {
    ctrax::AdafactorOptions o;
    check_against_reference(ctrax::Adafactor(o), adafactor_reference(o), dtype, {0.05, 0.05, 0.01});
    check_against_reference(ctrax::Adafactor(o), adafactor_reference(o), dtype, {0.05, 0.05, 0.01}, std::nullopt,
                            batched);
    // Tight update clipping (every step clips), momentum, no parameter scale, no factoring.
    o.clipping_threshold = 0.5;
    o.do_momentum = true;
    o.beta1 = 0.7;
    o.weight_decay_rate = 0.01;
    check_against_reference(ctrax::Adafactor(o), adafactor_reference(o), dtype, {0.1, 0.2, 0.05}, std::nullopt,
                            batched);
    o.multiply_by_parameter_scale = false;
    o.factored = false;
    o.do_clipping = false;
    o.decay_rate = 0.5;
    o.epsilon1 = 1e-3;
    check_against_reference(ctrax::Adafactor(o), adafactor_reference(o), dtype, {0.1, 0.2, 0.05});
  }
}

// ---- numbers worked out by hand --------------------------------------------------------------------

TEST_CASE("First steps worked out by hand") {
  for (DType dtype : kFloats) {
    INFO(dtype);
    const double tol = dtype == DType::float64 ? 1e-15 : 1e-7;
    const auto one = [&](double w, double g) {
      return std::pair<Tree, Tree>{Tree(ctrax::tensor<double>({w}).to(dtype)),
                                   Tree(ctrax::tensor<double>({g}).to(dtype))};
    };
    {  // SGD: 1 - 0.1 * 0.5 = 0.95
      ctrax::SGD opt;
      auto [w, g] = one(1.0, 0.5);
      Tree s = opt.init(w);
      opt.update(0, 0.1, g, w, s);
      CHECK(w.leaf().item<double>() == doctest::Approx(0.95).epsilon(tol));
    }
    {  // Adam, step 0: m^ = g, v^ = g^2, so w' = (1 - 1e-5) w - lr g / (|g| + eps)
      //   = 0.99999 * 2 - 0.01 * 0.5 / 0.50001 = 1.99998 - 0.0099998000039999...
      ctrax::Adam opt;
      auto [w, g] = one(2.0, 0.5);
      Tree s = opt.init(w);
      opt.update(0, 0.01, g, w, s);
      CHECK(w.leaf().item<double>() == doctest::Approx(1.99998 - 0.005 / 0.50001).epsilon(tol));
      CHECK(s[0].leaf().item<double>() == doctest::Approx(0.05).epsilon(tol));      // m = 0.1 g
      CHECK(s[1].leaf().item<double>() == doctest::Approx(0.00025).epsilon(tol));   // v = 0.001 g^2
      // Step 1 with g = -0.5: m = 0.9 * 0.05 - 0.05 = -0.005, v = 0.999 * 0.00025 + 0.00025 = 0.00049975,
      // m^ = -0.005 / 0.19, v^ = 0.00049975 / 0.001999.
      const double before = w.leaf().item<double>();
      Tree g2(ctrax::tensor<double>({-0.5}).to(dtype));
      opt.update(1, 0.01, g2, w, s);
      const double m_hat = -0.005 / (1 - 0.81), v_hat = 0.00049975 / (1 - 0.998001);
      CHECK(w.leaf().item<double>() ==
            doctest::Approx(0.99999 * before - 0.01 * m_hat / (std::sqrt(v_hat) + 1e-5)).epsilon(dtype == DType::float64 ? 1e-13 : 1e-6));
    }
    {  // Momentum (Nesterov), two steps with g = 1: v = 1, w = 0.99999 - 0.01 (0.9 + 1) = 0.98099;
      // then v = 1.9, w = 0.99999 * 0.98099 - 0.01 (0.9 * 1.9 + 1)
      ctrax::Momentum opt;
      auto [w, g] = one(1.0, 1.0);
      Tree s = opt.init(w);
      opt.update(0, 0.01, g, w, s);
      CHECK(w.leaf().item<double>() == doctest::Approx(0.98099).epsilon(tol));
      opt.update(1, 0.01, g, w, s);
      CHECK(s[0].leaf().item<double>() == doctest::Approx(1.9).epsilon(tol));
      CHECK(w.leaf().item<double>() == doctest::Approx(0.99999 * 0.98099 - 0.0271).epsilon(tol));
    }
    {  // RMSProp from a = 1: a = 0.9 + 0.1 * 4 = 1.3, w = 1 - 0.001 * 2 / (sqrt(1.3) + 1e-8)
      ctrax::RMSProp opt;
      auto [w, g] = one(1.0, 2.0);
      Tree s = opt.init(w);
      opt.update(0, 0.001, g, w, s);
      CHECK(s[0].leaf().item<double>() == doctest::Approx(1.3).epsilon(tol));
      CHECK(w.leaf().item<double>() == doctest::Approx(1 - 0.002 / (std::sqrt(1.3) + 1e-8)).epsilon(tol));
    }
    {  // Adafactor, unfactored scalar, step 0: d = 0, v = g^2 + 1e-16, y = g / sqrt(v) ~ sign(g) = 1
      // (rms 1, not clipped); scale = lr * max(|w|, 1e-3) = 0.05 * 3; w' = (1 - 1e-5) 3 - 0.15 y.
      ctrax::Adafactor opt;
      auto [w, g] = one(3.0, 0.25);
      Tree s = opt.init(w);
      opt.update(0, 0.05, g, w, s);
      const double y = 0.25 / std::sqrt(0.0625 + 1e-16);
      CHECK(w.leaf().item<double>() == doctest::Approx(0.99999 * 3 - 0.15 * y).epsilon(tol));
    }
  }
}

TEST_CASE("Adafactor factored step 0 on a 2 x 2 matrix worked out by hand") {
  // g = [[1, 2], [3, 4]], w = all 0.5 (rms 0.5), lr 0.1, no epsilon1 worth counting (1e-16).
  // Step 0: d = 0, so r = row means of g^2 = [2.5, 12.5], c = column means = [5, 10].
  // mean(r) = 7.5, row factors (r / 7.5)^(-1/2) = [sqrt(3), sqrt(0.6)], column factors
  // [1/sqrt(5), 1/sqrt(10)]; y = g * row * col; rms(y)^2 = (3/5 + 12/10 + 5.4/5 + 9.6/10) / 4
  // = 0.96 < 1, so no clipping; w' = (1 - 1e-5) 0.5 - 0.1 * 0.5 * y.
  for (DType dtype : kFloats) {
    INFO(dtype);
    ctrax::Adafactor opt;
    Tree w(ctrax::full(Shape{2, 2}, 0.5, dtype));
    Tree g(ctrax::tensor<double>({1, 2, 3, 4}, Shape{2, 2}).to(dtype));
    Tree s = opt.init(w);
    REQUIRE(s.size() == 2);
    opt.update(0, 0.1, g, w, s);
    const double tol = dtype == DType::float64 ? 1e-12 : 1e-6;
    const Vec r = s[0].leaf().to_vector<double>(), c = s[1].leaf().to_vector<double>();
    CHECK(r[0] == doctest::Approx(2.5).epsilon(tol));
    CHECK(r[1] == doctest::Approx(12.5).epsilon(tol));
    CHECK(c[0] == doctest::Approx(5).epsilon(tol));
    CHECK(c[1] == doctest::Approx(10).epsilon(tol));
    const double y[4] = {1 * std::sqrt(3.0) / std::sqrt(5.0), 2 * std::sqrt(3.0) / std::sqrt(10.0),
                         3 * std::sqrt(0.6) / std::sqrt(5.0), 4 * std::sqrt(0.6) / std::sqrt(10.0)};
    const Vec got = w.leaf().to_vector<double>();
    for (int i = 0; i < 4; ++i) CHECK(got[i] == doctest::Approx(0.99999 * 0.5 - 0.05 * y[i]).epsilon(tol));
  }
}

// ---- clipping and statistics --------------------------------------------------------------------------

TEST_CASE("Global-norm clipping scales every gradient by c / norm and reports it") {
  // Gradients [3] and [[4]] (global norm 5); weights [1] and [[2]] (norm sqrt(5)).
  for (DType dtype : kFloats) {
    INFO(dtype);
    const auto run = [&](const ctrax::Optimizer& opt, double lr) {
      Tree w(Tree::Dict{{"a", Tree(ctrax::tensor<double>({1.0}).to(dtype))},
                        {"b", Tree(Tree::List{Tree(ctrax::tensor<double>({2.0}, Shape{1, 1}).to(dtype))})}});
      Tree g(Tree::Dict{{"a", Tree(ctrax::tensor<double>({3.0}).to(dtype))},
                        {"b", Tree(Tree::List{Tree(ctrax::tensor<double>({4.0}, Shape{1, 1}).to(dtype))})}});
      Tree s = opt.init(w);
      const ctrax::OptimizerStats stats = opt.update(0, lr, g, w, s);
      CHECK(stats.gradients_l2 == doctest::Approx(5.0));
      CHECK(stats.weights_l2 == doctest::Approx(std::sqrt(5.0)));
      return std::tuple{stats.clipped, w["a"].leaf().item<double>(), w["b"][0].leaf().item<double>(), s};
    };
    {  // c = 1: the gradients become [0.6] and [[0.8]].
      ctrax::SGDOptions o;
      o.clip_grad_norm = 1.0;
      const auto [clipped, a, b, s] = run(ctrax::SGD(o), 0.5);
      CHECK(clipped);
      CHECK(a == doctest::Approx(1 - 0.5 * 0.6));
      CHECK(b == doctest::Approx(2 - 0.5 * 0.8));
    }
    {  // c = 5 = norm: not clipped (only a norm above c clips).
      ctrax::SGDOptions o;
      o.clip_grad_norm = 5.0;
      const auto [clipped, a, b, s] = run(ctrax::SGD(o), 0.5);
      CHECK_FALSE(clipped);
      CHECK(a == doctest::Approx(1 - 0.5 * 3));
      CHECK(b == doctest::Approx(2 - 0.5 * 4));
    }
    {  // Without clipping the statistics are the same and nothing is scaled.
      const auto [clipped, a, b, s] = run(ctrax::SGD(), 0.5);
      CHECK_FALSE(clipped);
      CHECK(a == doctest::Approx(1 - 0.5 * 3));
    }
    {  // Adam sees the clipped gradient in its moments: m = 0.1 * 0.6 for "a" with c = 1.
      ctrax::AdamOptions o;
      o.clip_grad_norm = 1.0;
      const auto [clipped, a, b, s] = run(ctrax::Adam(o), 0.01);
      CHECK(clipped);
      CHECK(s["a"][0].leaf().item<double>() == doctest::Approx(0.06));
      CHECK(s["b"][0][1].leaf().item<double>() == doctest::Approx(0.001 * 0.64));
    }
  }
}

TEST_CASE("Clipping against the reference over several steps") {
  // The gradient sets' global norms are about 2.3, 3.6 and 4.9: c = 4 clips the last step only,
  // c = 1 every step.
  for (DType dtype : kFloats) {
    ctrax::AdamOptions o;
    o.clip_grad_norm = 4.0;
    check_against_reference(ctrax::Adam(o), adam_reference(0.9, 0.999, 1e-5, 1e-5, false), dtype, {0.01, 0.01, 0.01},
                            4.0);
    ctrax::MomentumOptions m;
    m.clip_grad_norm = 1.0;
    check_against_reference(ctrax::Momentum(m), momentum_reference(0.9, 1e-5, true), dtype, {0.01, 0.01, 0.01}, 1.0);
  }
}

// ---- slots, in-place updates, special trees -----------------------------------------------------------

TEST_CASE("init gives each weight its slots in its place, named weight path / slot index") {
  const Tree w = nested({initial_weights(0), initial_weights(1), initial_weights(2)}, DType::float32);
  {
    const Tree s = ctrax::Adam().init(w);
    CHECK(s.paths() == std::vector<std::string>{"0/bias/0", "0/bias/1", "0/kernel/0", "0/kernel/1", "1/0", "1/1"});
    for (const Tensor& t : s.leaves()) {
      CHECK(t.dtype() == DType::float32);
      CHECK(ctrax::sum(ctrax::abs(t)).item<double>() == 0.0);
    }
  }
  {
    const Tree s = ctrax::RMSProp().init(w);
    CHECK(s.paths() == std::vector<std::string>{"0/bias/0", "0/kernel/0", "1/0"});
    CHECK(s[0]["kernel"][0].leaf().shape() == Shape{2, 3});
    CHECK(ctrax::min(s[0]["kernel"][0].leaf()).item<double>() == 1.0);  // Trax starts at ones
  }
  {
    const Tree s = ctrax::SGD().init(w);
    CHECK(s.num_leaves() == 0);
    CHECK(s.to_string() == "({bias: (), kernel: ()}, ())");
  }
  {
    const Tree s = ctrax::Momentum().init(nested({initial_weights(0), initial_weights(1), initial_weights(2)}, DType::float64));
    CHECK(s.paths() == std::vector<std::string>{"0/bias/0", "0/kernel/0", "1/0"});
    CHECK(s[1][0].leaf().dtype() == DType::float64);
  }
  {  // Adafactor: [r, c] for rank >= 2 over the last two axes, [v] otherwise, then [m].
    ctrax::AdafactorOptions o;
    o.do_momentum = true;
    const Tree w3(Tree::List{Tree(ctrax::zeros(Shape{4, 2, 3})), Tree(ctrax::zeros(Shape{5})), Tree(ctrax::zeros(Shape{}))});
    const Tree s = ctrax::Adafactor(o).init(w3);
    CHECK(s.to_string() == "((float32[4, 2], float32[4, 3], float32[4, 2, 3]), (float32[5], float32[5]), (float32[], float32[]))");
    o.factored = false;
    o.do_momentum = false;
    CHECK(ctrax::Adafactor(o).init(w3).to_string() == "((float32[4, 2, 3]), (float32[5]), (float32[]))");
  }
}

TEST_CASE("Weights and slots are updated in place, visible through every handle") {
  Tensor kernel = ctrax::ones(Shape{2, 2});
  Tree w(Tree::Dict{{"kernel", Tree(kernel)}});
  const Tensor alias = w["kernel"].leaf();
  ctrax::Adam opt;
  Tree s = opt.init(w);
  const Tensor m = s["kernel"][0].leaf();
  opt.update(0, 0.1, Tree(Tree::Dict{{"kernel", Tree(ctrax::ones(Shape{2, 2}))}}), w, s);
  CHECK(w["kernel"].leaf().shares_storage_with(kernel));
  CHECK(kernel.to_vector<float>()[0] < 1.0f);
  CHECK(alias.to_vector<float>()[0] == kernel.to_vector<float>()[0]);
  CHECK(m.to_vector<float>()[0] == doctest::Approx(0.1));
}

TEST_CASE("Non-contiguous gradients give the same update as contiguous ones") {
  for (DType dtype : kFloats) {
    const Tensor g = ctrax::test::random_tensor(Shape{3, 4}, dtype, 7);
    const Tensor g_view = ctrax::test::non_contiguous(g);
    REQUIRE_FALSE(g_view.is_contiguous());
    Tree w1(ctrax::test::random_tensor(Shape{3, 4}, dtype, 8)), w2(w1.leaf().clone());
    ctrax::AdamOptions o;
    o.clip_grad_norm = 1.0;  // the norm pass reads the view too
    ctrax::Adam opt(o);
    Tree s1 = opt.init(w1), s2 = opt.init(w2);
    const auto st1 = opt.update(0, 0.1, Tree(g), w1, s1);
    const auto st2 = opt.update(0, 0.1, Tree(g_view), w2, s2);
    CHECK(st1.gradients_l2 == st2.gradients_l2);
    CHECK(w1.leaf().to_vector<double>() == w2.leaf().to_vector<double>());
  }
}

TEST_CASE("Empty trees, empty weights and rank-0 weights") {
  ctrax::Adam opt;
  Tree empty;
  Tree s = opt.init(empty);
  const ctrax::OptimizerStats stats = opt.update(0, 0.1, Tree(), empty, s);
  CHECK(stats.gradients_l2 == 0.0);
  CHECK(stats.weights_l2 == 0.0);
  CHECK_FALSE(stats.clipped);
  const ctrax::Adafactor adafactor;
  for (const ctrax::Optimizer* o : {static_cast<const ctrax::Optimizer*>(&opt), static_cast<const ctrax::Optimizer*>(&adafactor)}) {
    INFO(o->name());
    Tree w(Tree::List{Tree(ctrax::zeros(Shape{0, 3})), Tree(ctrax::full(Shape{}, 2.0))});
    Tree g(Tree::List{Tree(ctrax::zeros(Shape{0, 3})), Tree(ctrax::full(Shape{}, 1.0))});
    Tree sl = o->init(w);
    const ctrax::OptimizerStats st = o->update(0, 0.1, g, w, sl);
    CHECK(st.weights_l2 == 2.0);
    CHECK(w[1].leaf().item<double>() < 2.0);
    CHECK(w[0].leaf().shape() == Shape{0, 3});
  }
}
