// Losses and metrics: forward against double-precision references written out here, gradients by
// gradcheck through layer->apply, the sum(w) == 0 rule, and bad inputs.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include <ctrax/autograd/grad.h>
#include <ctrax/autograd/gradcheck.h>
#include <ctrax/layers/combinators.h>
#include <ctrax/layers/core.h>
#include <ctrax/layers/metrics.h>
#include <ctrax/tensor/ops.h>

#include "../test_util.h"

using namespace ctrax;
using test::check_error;

namespace {

const test::Tolerance kF64{1e-12, 1e-11};

double value(const LayerPtr& layer, const Stack& inputs) {
  const Tensor out = layer->apply(inputs, Tree(), Tree()).outputs[0];
  REQUIRE(out.rank() == 0);
  REQUIRE(is_floating(out.dtype()));
  return out.item<double>();
}

// Per-example CE in double: -sum_j p_j (x_j - logsumexp(x)), p = (1 - eps) onehot + eps / N.
std::vector<double> ref_ce(const Tensor& logits, const Tensor& targets, double eps) {
  const std::vector<double> x = logits.to_vector<double>();
  const std::vector<int64_t> t = targets.to_vector<int64_t>();
  const auto n = static_cast<size_t>(logits.shape().back());
  std::vector<double> out;
  for (size_t r = 0; r < t.size(); ++r) {
    const double* row = x.data() + r * n;
    const double m = *std::max_element(row, row + n);
    double s = 0.0;
    for (size_t j = 0; j < n; ++j) s += std::exp(row[j] - m);
    const double lse = m + std::log(s);
    double ce = 0.0;
    for (size_t j = 0; j < n; ++j) {
      const double p = (static_cast<int64_t>(j) == t[r] ? 1.0 - eps : 0.0) + eps / static_cast<double>(n);
      ce -= p * (row[j] - lse);
    }
    out.push_back(ce);
  }
  return out;
}

// sum(loss w) / sum(w) with w broadcast to `shape` (the per-example loss's); 0 when sum(w) == 0.
double ref_weighted_mean(const std::vector<double>& loss, const Shape& shape, const Tensor& w) {
  const std::vector<double> wv = w.to_vector<double>();
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < loss.size(); ++i) {
    const int64_t at = test::ravel_broadcast(test::unravel(static_cast<int64_t>(i), shape), w.shape());
    const double wi = wv[static_cast<size_t>(at)];
    num += loss[i] * wi;
    den += wi;
  }
  return den == 0.0 ? 0.0 : num / den;
}

double ref_mean(const std::vector<double>& v) {
  double s = 0.0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

Tensor random_targets(const Shape& shape, int64_t n, uint64_t seed, DType dtype = DType::int64) {
  return test::random_tensor(shape, dtype, seed, 0.0, static_cast<double>(n));
}

// Checks d(loss)/d(float inputs) of `layer` by gradcheck; `inputs` are float64 except integer
// targets, which gradcheck passes through.
void check_gradients(const LayerPtr& layer, const std::vector<Tensor>& inputs, const std::string& what) {
  INFO(what);
  const GradcheckResult r = gradcheck([&](const std::vector<Tensor>& xs) {
    return layer->apply(Stack(xs.begin(), xs.end()), Tree(), Tree()).outputs[0];
  }, inputs);
  CHECK_MESSAGE(r.ok, r.message);
}

}  // namespace

TEST_CASE("layers: CategoryCrossEntropy is the mean of -sum(p log_softmax) over every leading axis") {
  struct Case {
    Shape logits;
    double eps;
    DType target_dtype;
  };
  const std::vector<Case> cases = {{Shape{5}, 0.0, DType::int64},       {Shape{4, 5}, 0.0, DType::int32},
                                   {Shape{2, 3, 7}, 0.0, DType::int64}, {Shape{4, 5}, 0.1, DType::int64},
                                   {Shape{2, 3, 7}, 0.3, DType::int32}, {Shape{3, 4}, 1.0, DType::int64}};
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    INFO("case " << i);
    Shape lead = c.logits;
    lead.erase(lead.rank() - 1);
    const Tensor logits = test::random_tensor(c.logits, DType::float64, 10 + i, -3.0, 3.0);
    const Tensor targets = random_targets(lead, c.logits.back(), 20 + i, c.target_dtype);
    CHECK(value(CategoryCrossEntropy(c.eps), {logits, targets}) ==
          doctest::Approx(ref_mean(ref_ce(logits, targets, c.eps))).epsilon(1e-12));
    // float32 logits give a float32 loss.
    const Tensor out =
        CategoryCrossEntropy(c.eps)->apply({logits.to(DType::float32), targets}, Tree(), Tree()).outputs[0];
    CHECK(out.dtype() == DType::float32);
    CHECK(out.item<double>() == doctest::Approx(ref_mean(ref_ce(logits, targets, c.eps))).epsilon(1e-5));
    check_gradients(CategoryCrossEntropy(c.eps), {logits, targets}, "gradient of CategoryCrossEntropy");
  }
  // A hand-computed case: logits (0, ln 3) and target 1: p = (1/4, 3/4), CE = -ln(3/4).
  const Tensor logits = tensor({0.0, std::log(3.0)});
  CHECK(value(CategoryCrossEntropy(), {logits, scalar_tensor(1, DType::int64)}) ==
        doctest::Approx(-std::log(0.75)).epsilon(1e-14));
  // eps = 0.5 over 2 classes: p = (1/4, 3/4) as targets, CE = -(ln(1/4) / 4 + ln(3/4) 3 / 4).
  CHECK(value(CategoryCrossEntropy(0.5), {logits, scalar_tensor(1, DType::int64)}) ==
        doctest::Approx(-(std::log(0.25) / 4 + 3 * std::log(0.75) / 4)).epsilon(1e-14));
}

TEST_CASE("layers: WeightedCategoryCrossEntropy weights, smooths and cuts off per example") {
  const Tensor logits = test::random_tensor(Shape{3, 4, 6}, DType::float64, 31, -3.0, 3.0);
  const Tensor targets = random_targets(Shape{3, 4}, 6, 32);
  const std::vector<Tensor> weights = {test::random_tensor(Shape{3, 4}, DType::float64, 33, 0.0, 2.0),
                                       test::random_tensor(Shape{3, 1}, DType::float64, 34, 0.5, 2.0),
                                       scalar_tensor(0.7, DType::float64),
                                       test::random_tensor(Shape{4}, DType::int64, 35, 0.0, 3.0)};
  for (double eps : {0.0, 0.2}) {
    const std::vector<double> ce = ref_ce(logits, targets, eps);
    for (size_t k = 0; k < weights.size(); ++k) {
      INFO("eps " << eps << ", weights " << k);
      CHECK(value(WeightedCategoryCrossEntropy(eps), {logits, targets, weights[k]}) ==
            doctest::Approx(ref_weighted_mean(ce, Shape{3, 4}, weights[k])).epsilon(1e-12));
    }
    // A scalar weight gives the plain mean, i.e. CategoryCrossEntropy.
    CHECK(value(WeightedCategoryCrossEntropy(eps), {logits, targets, scalar_tensor(3.0, DType::float64)}) ==
          doctest::Approx(value(CategoryCrossEntropy(eps), {logits, targets})).epsilon(1e-13));
    check_gradients(WeightedCategoryCrossEntropy(eps), {logits, targets, weights[0]}, "gradient, per-example weights");
    check_gradients(WeightedCategoryCrossEntropy(eps), {logits, targets, weights[1]}, "gradient, broadcast weights");
  }
  // Cutoff at the median CE: the examples below it contribute 0 (and no gradient).
  std::vector<double> ce = ref_ce(logits, targets, 0.0);
  std::vector<double> sorted = ce;
  std::sort(sorted.begin(), sorted.end());
  const double c = 0.5 * (sorted[5] + sorted[6]);
  REQUIRE(sorted[6] - sorted[5] > 1e-3);  // away from the kink for the finite differences
  for (double& x : ce) x = std::max(x, c) - c;
  CHECK(value(WeightedCategoryCrossEntropy(0.0, c), {logits, targets, weights[0]}) ==
        doctest::Approx(ref_weighted_mean(ce, Shape{3, 4}, weights[0])).epsilon(1e-12));
  check_gradients(WeightedCategoryCrossEntropy(0.0, c), {logits, targets, weights[0]}, "gradient with a cutoff");
  const auto r = value_and_grad<0, 1>([&](const Tensor& x, const Tensor& w) {
    return WeightedCategoryCrossEntropy(0.0, c)->apply({x, targets, w}, Tree(), Tree()).outputs[0];
  })(logits, weights[0]);
  const Tensor& g_logits = std::get<0>(r.grad);
  // Rows under the cutoff get no gradient on their logits.
  const std::vector<double> g = g_logits.to_vector<double>();
  const std::vector<double> ce0 = ref_ce(logits, targets, 0.0);
  for (size_t r = 0; r < ce0.size(); ++r)
    if (ce0[r] < c)
      for (size_t j = 0; j < 6; ++j) CHECK(g[r * 6 + j] == 0.0);
  CHECK(std::get<1>(r.grad).shape() == Shape{3, 4});
}

TEST_CASE("layers: CrossEntropyLoss takes log-probs and applies no softmax") {
  const Tensor lp = log_softmax(test::random_tensor(Shape{2, 3, 5}, DType::float64, 41), -1);
  const Tensor targets = random_targets(Shape{2, 3}, 5, 42, DType::int32);
  const Tensor w = test::random_tensor(Shape{2, 3}, DType::float64, 43, 0.1, 1.0);
  CHECK(value(CrossEntropyLoss(), {lp, targets, w}) ==
        doctest::Approx(ref_weighted_mean(ref_ce(lp, targets, 0.0), Shape{2, 3}, w)).epsilon(1e-12));
  // Raw scores are used as given: -x[target], not -log_softmax(x)[target].
  const Tensor raw = tensor({2.0, 5.0, -1.0}, {1, 3});
  CHECK(value(CrossEntropyLoss(), {raw, tensor<int64_t>({1}), ones({1}, DType::float64)}) == -5.0);
  // A log-probability of -inf on another class does not turn into NaN (no 0 * -inf).
  const Tensor with_inf = tensor({std::log(0.5), -std::numeric_limits<double>::infinity(), std::log(0.5)}, {1, 3});
  CHECK(value(CrossEntropyLoss(), {with_inf, tensor<int64_t>({2}), ones({1}, DType::float64)}) ==
        doctest::Approx(std::log(2.0)).epsilon(1e-14));
  check_gradients(CrossEntropyLoss(), {lp, targets, w}, "gradient of CrossEntropyLoss");
}

TEST_CASE("layers: L2Loss and SmoothL1Loss are weighted means of the squared and Huber errors") {
  for (const Shape& shape : {Shape{7}, Shape{3, 4}, Shape{2, 3, 2}}) {
    INFO("shape " << shape);
    const Tensor y = test::random_tensor(shape, DType::float64, 51, -2.0, 2.0);
    const Tensor t = test::random_tensor(shape, DType::float64, 52, -2.0, 2.0);
    const Tensor w = test::random_tensor(shape, DType::float64, 53, 0.1, 1.0);
    const std::vector<double> yv = y.to_vector<double>(), tv = t.to_vector<double>();
    std::vector<double> sq, huber;
    for (size_t i = 0; i < yv.size(); ++i) {
      const double d = yv[i] - tv[i];
      REQUIRE(std::fabs(std::fabs(d) - 1.0) > 1e-4);  // away from the Huber joint
      sq.push_back(d * d);
      huber.push_back(std::fabs(d) < 1.0 ? 0.5 * d * d : std::fabs(d) - 0.5);
    }
    CHECK(value(L2Loss(), {y, t, w}) == doctest::Approx(ref_weighted_mean(sq, shape, w)).epsilon(1e-12));
    CHECK(value(SmoothL1Loss(), {y, t, w}) == doctest::Approx(ref_weighted_mean(huber, shape, w)).epsilon(1e-12));
    check_gradients(L2Loss(), {y, t, w}, "gradient of L2Loss");
    check_gradients(SmoothL1Loss(), {y, t, w}, "gradient of SmoothL1Loss");
  }
  // By hand: errors (0.5, -3) with weights (1, 3): Huber (0.125, 2.5) -> (0.125 + 7.5) / 4.
  const Tensor y = tensor({0.5, -3.0}), t = zeros({2}, DType::float64), w = tensor({1.0, 3.0});
  CHECK(value(SmoothL1Loss(), {y, t, w}) == doctest::Approx(7.625 / 4).epsilon(1e-14));
  CHECK(value(L2Loss(), {y, t, w}) == doctest::Approx((0.25 + 27.0) / 4).epsilon(1e-14));
  // Integer targets are cast to the outputs' dtype; [B, 1] weights broadcast over features.
  const Tensor yb = tensor({1.5, 2.5, 0.0, 1.0}, {2, 2});
  CHECK(value(L2Loss(), {yb, tensor<int64_t>({1, 2, 0, 1}, {2, 2}), tensor({1.0, 0.0}, {2, 1})}) ==
        doctest::Approx(0.25).epsilon(1e-14));
}

TEST_CASE("layers: BinaryCrossEntropy is stable for large logits and matches -t log s - (1-t) log(1-s)") {
  const Tensor z = test::random_tensor(Shape{3, 5}, DType::float64, 61, -4.0, 4.0);
  const Tensor t = test::random_tensor(Shape{3, 5}, DType::float64, 62, 0.0, 1.0);  // soft targets allowed
  const Tensor w = test::random_tensor(Shape{3, 1}, DType::float64, 63, 0.2, 1.0);
  const std::vector<double> zv = z.to_vector<double>(), tv = t.to_vector<double>();
  std::vector<double> ref;
  for (size_t i = 0; i < zv.size(); ++i) {
    const double s = 1.0 / (1.0 + std::exp(-zv[i]));
    ref.push_back(-tv[i] * std::log(s) - (1.0 - tv[i]) * std::log(1.0 - s));
  }
  CHECK(value(BinaryCrossEntropy(), {z, t}) == doctest::Approx(ref_mean(ref)).epsilon(1e-12));
  CHECK(value(BinaryCrossEntropy(true), {z, t, w}) ==
        doctest::Approx(ref_weighted_mean(ref, Shape{3, 5}, w)).epsilon(1e-12));
  check_gradients(BinaryCrossEntropy(), {z, t}, "gradient of BinaryCrossEntropy");
  check_gradients(BinaryCrossEntropy(true), {z, t, w}, "gradient of weighted BinaryCrossEntropy");
  // z = +-1000 in float32: exp would overflow; the loss is |z| when the sign is wrong, 0 when right.
  const Tensor big = tensor({1000.0f, -1000.0f, 1000.0f, -1000.0f});
  const Tensor bits = tensor<int64_t>({0, 1, 1, 0});
  CHECK(value(BinaryCrossEntropy(), {big, bits}) == doctest::Approx(500.0).epsilon(1e-6));
  const Tensor g = grad([&](const Tensor& x) {
    return BinaryCrossEntropy()->apply({x, bits}, Tree(), Tree()).outputs[0];
  })(big);
  test::check_close(g, Shape{4}, {0.25, -0.25, 0.0, 0.0}, {1e-7, 0.0});  // (sigmoid(z) - t) / 4
  // The gradient at z = 0 is sigmoid(0) - t exactly (no kink from the max and |z| pieces).
  const Tensor g0 = grad([&](const Tensor& x) {
    return BinaryCrossEntropy()->apply({x, tensor<int64_t>({0})}, Tree(), Tree()).outputs[0];
  })(zeros({1}, DType::float64));
  CHECK(g0.to_vector<double>()[0] == doctest::Approx(0.5).epsilon(1e-15));
}

TEST_CASE("layers: Accuracy is the weighted mean of argmax hits, ties to the lowest index") {
  // Rows: hit, miss, tie between classes 0 and 2 resolved to 0 (a hit for target 0).
  const Tensor logits = tensor({0.1, 0.9, 0.0, 2.0, 1.0, 0.0, 1.0, 0.0, 1.0}, {3, 3});
  const Tensor targets = tensor<int32_t>({1, 1, 0});
  CHECK(value(Accuracy(), {logits, targets}) == doctest::Approx(2.0 / 3));
  CHECK(value(Accuracy(true), {logits, targets, tensor({1.0, 3.0, 0.0})}) == doctest::Approx(0.25));
  // Leading axes against a reference.
  const Tensor x = test::random_tensor(Shape{4, 5, 3}, DType::float32, 71);
  const Tensor t = random_targets(Shape{4, 5}, 3, 72);
  const Tensor w = test::random_tensor(Shape{4, 5}, DType::float32, 73, 0.0, 1.0);
  const std::vector<double> xv = x.to_vector<double>();
  const std::vector<int64_t> tv = t.to_vector<int64_t>();
  std::vector<double> hit;
  for (size_t r = 0; r < tv.size(); ++r) {
    const auto best = std::max_element(xv.begin() + 3 * r, xv.begin() + 3 * r + 3) - (xv.begin() + 3 * r);
    hit.push_back(best == tv[r] ? 1.0 : 0.0);
  }
  const Tensor acc = Accuracy(true)->apply({x, t, w}, Tree(), Tree()).outputs[0];
  CHECK(acc.dtype() == DType::float32);
  CHECK(acc.item<double>() == doctest::Approx(ref_weighted_mean(hit, Shape{4, 5}, w)).epsilon(1e-5));
  CHECK(value(Accuracy(), {x, t}) == doctest::Approx(ref_mean(hit)).epsilon(1e-6));
}

TEST_CASE("layers: WeightedSum is sum(x w) with broadcast weights of any sign") {
  const Tensor x = test::random_tensor(Shape{3, 4}, DType::float64, 81);
  const Tensor w = test::random_tensor(Shape{4}, DType::float64, 82, -1.0, 1.0);
  const std::vector<double> xv = x.to_vector<double>(), wv = w.to_vector<double>();
  double ref = 0.0;
  for (size_t i = 0; i < xv.size(); ++i) ref += xv[i] * wv[i % 4];
  CHECK(value(WeightedSum(), {x, w}) == doctest::Approx(ref).epsilon(1e-13));
  check_gradients(WeightedSum(), {x, w}, "gradient of WeightedSum");
}

TEST_CASE("layers: a zero weight sum gives loss 0 with zero gradients, and mask_from_ids masks padding") {
  const Tensor logits = test::random_tensor(Shape{2, 3, 4}, DType::float64, 91);
  const Tensor targets = tensor<int64_t>({0, 2, 0, 3, 0, 0}, {2, 3});
  const Tensor mask = mask_from_ids(targets);
  CHECK(mask.dtype() == DType::float32);
  CHECK(mask.to_vector<double>() == std::vector<double>{0, 1, 0, 1, 0, 0});
  CHECK(mask_from_ids(targets, 3).to_vector<double>() == std::vector<double>{1, 1, 1, 0, 1, 1});
  // With the mask, the loss is the mean CE of the two non-padding positions.
  const std::vector<double> ce = ref_ce(logits, targets, 0.0);
  CHECK(value(WeightedCategoryCrossEntropy(), {logits, targets, mask}) ==
        doctest::Approx((ce[1] + ce[3]) / 2).epsilon(1e-6));
  // Padding only: 0, and zero gradients for logits and weights (Trax would give NaN).
  const Tensor zero_w = zeros({2, 3}, DType::float64);
  for (const LayerPtr& loss : {WeightedCategoryCrossEntropy(0.1), CrossEntropyLoss()}) {
    INFO(loss->name());
    auto r = value_and_grad<0, 1>([&](const Tensor& x, const Tensor& w) {
      return loss->apply({x, targets, w}, Tree(), Tree()).outputs[0];
    })(logits, zero_w);
    CHECK(r.value.item<double>() == 0.0);
    for (double g : std::get<0>(r.grad).to_vector<double>()) CHECK(g == 0.0);
    for (double g : std::get<1>(r.grad).to_vector<double>()) CHECK(g == 0.0);
  }
  CHECK(value(L2Loss(), {ones({3}), zeros({3}), zeros({3})}) == 0.0);
  CHECK(value(Accuracy(true), {logits, targets, zero_w}) == 0.0);
  // An empty batch: 0 rather than the mean of nothing.
  CHECK(value(CategoryCrossEntropy(), {zeros({0, 4}), zeros({0}, DType::int64)}) == 0.0);
  CHECK(value(BinaryCrossEntropy(), {zeros({0}), zeros({0})}) == 0.0);
}

TEST_CASE("layers: losses reject bad inputs with clear messages") {
  const Tensor logits = zeros({2, 3, 4});
  const Tensor targets = zeros({2, 3}, DType::int64);
  const Tensor w = ones({2, 3});
  auto run = [](const LayerPtr& l, const Stack& in) { l->apply(in, Tree(), Tree()); };
  check_error([&] { run(CategoryCrossEntropy(), {logits, zeros({2, 3})}); },
              {"CategoryCrossEntropy: targets have dtype float32, expected int32 or int64 class ids"});
  check_error([&] { run(Accuracy(), {logits, zeros({2, 3})}); }, {"Accuracy: targets have dtype float32"});
  check_error([&] { run(CategoryCrossEntropy(), {logits, zeros({3, 2}, DType::int64)}); },
              {"targets of shape [3, 2] do not match logits of shape [2, 3, 4]: expected targets of shape [2, 3]"});
  check_error([&] { run(WeightedCategoryCrossEntropy(), {logits, zeros({2}, DType::int64), w}); },
              {"WeightedCategoryCrossEntropy: targets of shape [2] do not match logits"});
  check_error([&] { run(CategoryCrossEntropy(), {logits, full({2, 3}, 4.0, DType::int64)}); },
              {"target ids must be in [0, 4), got 4"});
  check_error([&] { run(CrossEntropyLoss(), {logits, full({2, 3}, -1.0, DType::int32), w}); },
              {"CrossEntropyLoss: target ids must be in [0, 4), got -1"});
  check_error([&] { run(CategoryCrossEntropy(), {zeros({2, 3}, DType::int64), targets.slice(1, 0, 1).squeeze(1)}); },
              {"logits have dtype int64, expected float32 or float64"});
  check_error([] { CategoryCrossEntropy(-0.1); },
              {"CategoryCrossEntropy: label_smoothing must be in [0, 1], got -0.1"});
  check_error([] { WeightedCategoryCrossEntropy(1.5); }, {"label_smoothing must be in [0, 1], got 1.5"});
  check_error([] { WeightedCategoryCrossEntropy(0.0, -1.0); }, {"cutoff must be >= 0, got -1"});
  check_error([&] { run(WeightedCategoryCrossEntropy(), {logits, targets, ones({3, 2})}); },
              {"weights of shape [3, 2] do not broadcast to the per-example loss of shape [2, 3]"});
  check_error([&] { run(WeightedCategoryCrossEntropy(), {logits, targets, ones({2, 3, 4})}); },
              {"weights of shape [2, 3, 4] do not broadcast"});
  check_error([&] { run(L2Loss(), {zeros({3}), zeros({3}), tensor({1.0f, -1.0f, 1.0f})}); },
              {"L2Loss: weights must be >= 0, got -1"});
  check_error([&] { run(L2Loss(), {zeros({3}), zeros({2}), ones({3})}); },
              {"L2Loss: targets of shape [2] do not match outputs of shape [3]"});
  check_error([&] { run(BinaryCrossEntropy(), {zeros({3, 1}), zeros({3})}); },
              {"BinaryCrossEntropy: targets of shape [3] do not match logits of shape [3, 1]"});
  check_error([&] { run(BinaryCrossEntropy(), {zeros({3}, DType::int32), zeros({3})}); },
              {"logits have dtype int32"});
  check_error([&] { run(WeightedCategoryCrossEntropy(), {logits, targets}); },
              {"WeightedCategoryCrossEntropy: expected 3 inputs, got 2"});
  // Inside a model the path names the loss.
  LayerPtr model = Serial({Dense(4), CategoryCrossEntropy()}, "Model");
  auto model_initialized = model->init({{Shape{2, 5}, DType::float32}, {Shape{2}, DType::int64}}, Key(0));
  Tree& mw = model_initialized.first;
  Tree& ms = model_initialized.second;
  check_error([&] { model->apply({zeros({2, 5}), zeros({2})}, mw, ms); },
              {"Model > CategoryCrossEntropy[1]: targets have dtype float32", "(inputs (float32[2, 4], float32[2]))"});
}
