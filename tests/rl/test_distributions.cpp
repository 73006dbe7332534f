// Action distributions (rl/learning/distributions.h): values against hand-computed references and
// torch.distributions (tests/fixtures/distributions_golden.json, written by
// tests/fixtures/torch_distributions.py), gradchecks of log_prob and entropy for every
// distribution and std mode, sampling statistics with fixed keys, multi-dimensional events,
// normalisation of the Gaussian density and its (correct) entropy, the LogProb and LogLoss
// layers, create_distribution, and every bad input.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <ctrax/autograd/grad.h>
#include <ctrax/autograd/gradcheck.h>
#include <ctrax/autograd/tape.h>
#include <ctrax/rl/learning/distributions.h>
#include <ctrax/tensor/ops.h>
#include <ctrax/tensor/random.h>

#include "../test_util.h"

namespace {

using ctrax::Categorical;
using ctrax::DType;
using ctrax::Error;
using ctrax::Gaussian;
using ctrax::Key;
using ctrax::LearnStd;
using ctrax::Shape;
using ctrax::Space;
using ctrax::Tensor;

const double kLog2Pi = std::log(2.0 * std::numbers::pi);
constexpr double kInf = std::numeric_limits<double>::infinity();

Tensor f64(const std::vector<double>& values, const Shape& shape) { return ctrax::from_vector(values, shape); }
Tensor f64(const std::vector<double>& values) { return ctrax::from_vector(values); }
Tensor i64(const std::vector<int64_t>& values, const Shape& shape) { return ctrax::from_vector(values, shape); }

void check_values(const Tensor& got, const std::vector<double>& want, double tol = 1e-12) {
  const std::vector<double> g = got.to_vector<double>();
  REQUIRE(g.size() == want.size());
  for (size_t i = 0; i < g.size(); ++i) CHECK(g[i] == doctest::Approx(want[i]).epsilon(tol).scale(1.0));
}

double softplus(double x) { return std::log1p(std::exp(x)); }

// Empirical frequency of each category in `samples` (int64).
std::vector<double> frequencies(const Tensor& samples, int64_t n) {
  std::vector<double> f(static_cast<size_t>(n), 0.0);
  const std::vector<int64_t> s = samples.to_vector<int64_t>();
  for (int64_t v : s) f[static_cast<size_t>(v)] += 1.0;
  for (double& x : f) x /= static_cast<double>(s.size());
  return f;
}

std::vector<double> softmax_of(const std::vector<double>& logits, double temperature) {
  std::vector<double> p;
  double z = 0.0;
  for (double l : logits) z += std::exp(l / temperature);
  for (double l : logits) p.push_back(std::exp(l / temperature) / z);
  return p;
}

// The frequencies of `count` samples at `temperature` agree with softmax(logits / T) within
// 4 standard errors sqrt(p (1 - p) / count) per category.
void check_categorical_frequencies(const std::vector<double>& logits, double temperature, Key key, int64_t count) {
  const int64_t n = static_cast<int64_t>(logits.size());
  const Categorical dist(n);
  const Tensor inputs = f64(logits).to(DType::float32).unsqueeze(0).expand(Shape{count, n});
  const Tensor samples = dist.sample(inputs, key, temperature);
  REQUIRE(samples.shape() == Shape{count});
  const std::vector<double> f = frequencies(samples, n);
  const std::vector<double> p = softmax_of(logits, temperature);
  for (size_t j = 0; j < p.size(); ++j) {
    const double se = std::sqrt(p[j] * (1.0 - p[j]) / static_cast<double>(count));
    INFO("T = ", temperature, ", category ", j, ": frequency ", f[j], ", probability ", p[j]);
    CHECK(std::abs(f[j] - p[j]) <= 4.0 * se);
  }
}

void check_gradcheck(const ctrax::GradcheckFn& f, const std::vector<Tensor>& inputs) {
  const ctrax::GradcheckResult r = ctrax::gradcheck(f, inputs);
  INFO(r.message);
  CHECK(r.ok);
}

const std::string kFixturePath = std::string(CTRAX_FIXTURES_DIR) + "/distributions_golden.json";

Shape shape_of(const nlohmann::json& j) { return Shape(j.get<std::vector<int64_t>>()); }

LearnStd learn_std_of(const std::string& s) {
  if (s == "shared") return LearnStd::shared;
  if (s == "separate") return LearnStd::separate;
  REQUIRE(s == "none");
  return LearnStd::none;
}

}  // namespace

TEST_CASE("Categorical: properties, log_prob and entropy of known probabilities") {
  const Categorical dist(3);
  CHECK(dist.name() == "Categorical(3)");
  CHECK(dist.n_inputs() == 3);
  CHECK(dist.n_categories() == 3);
  CHECK(dist.event_shape() == Shape{});
  CHECK(dist.sample_dtype() == DType::int64);
  CHECK(Categorical(4, Shape{2, 3}).name() == "Categorical(4, shape [2, 3])");
  CHECK(Categorical(4, Shape{2, 3}).n_inputs() == 24);

  // Row 0: p = (1, 2, 3) / 6 (logits log(1, 2, 3) + 5: softmax ignores the shift);
  // row 1: uniform over 3.
  const Tensor inputs = f64({5.0, 5.0 + std::log(2.0), 5.0 + std::log(3.0), 0.0, 0.0, 0.0}, Shape{2, 3});
  check_values(dist.log_prob(inputs, i64({2, 0}, Shape{2})), {std::log(0.5), std::log(1.0 / 3.0)});
  check_values(dist.log_prob(inputs, i64({0, 1}, Shape{2}).to(DType::int32)), {std::log(1.0 / 6.0), std::log(1.0 / 3.0)});
  const double h0 = -(1.0 / 6 * std::log(1.0 / 6) + 2.0 / 6 * std::log(2.0 / 6) + 3.0 / 6 * std::log(3.0 / 6));
  check_values(dist.entropy(inputs), {h0, std::log(3.0)});

  // float32 inputs give float32 results.
  const Tensor lp32 = dist.log_prob(inputs.to(DType::float32), i64({2, 0}, Shape{2}));
  CHECK(lp32.dtype() == DType::float32);
  check_values(lp32, {std::log(0.5), std::log(1.0 / 3.0)}, 1e-6);

  // No leading axes: a single example, rank-0 results.
  const Tensor one = f64({0.0, std::log(3.0)});
  CHECK(Categorical(2).log_prob(one, ctrax::scalar_tensor(1, DType::int64)).shape() == Shape{});
  check_values(Categorical(2).log_prob(one, ctrax::scalar_tensor(1, DType::int64)), {std::log(0.75)});
}

TEST_CASE("Categorical: a masked (-inf) logit has probability 0, is never sampled, and keeps entropy finite") {
  const Categorical dist(3);
  const Tensor inputs = f64({0.0, -kInf, 0.0}, Shape{1, 3});
  check_values(dist.entropy(inputs), {std::log(2.0)});
  check_values(dist.log_prob(inputs, i64({2}, Shape{1})), {std::log(0.5)});
  CHECK(std::isinf(dist.log_prob(inputs, i64({1}, Shape{1})).item<double>()));
  const auto r = ctrax::value_and_grad([&](const Tensor& x) { return ctrax::sum(dist.entropy(x)); })(inputs);
  for (double g : r.grad.to_vector<double>()) CHECK(std::isfinite(g));
  const Tensor samples = dist.sample(inputs.expand(Shape{2000, 3}), Key(3));
  CHECK(frequencies(samples, 3)[1] == 0.0);
}

TEST_CASE("Categorical with an event shape: leading axes 4x5, event shape 2") {
  const Categorical dist(3, Shape{2});
  CHECK(dist.n_inputs() == 6);
  const Tensor inputs = ctrax::test::random_tensor(Shape{4, 5, 6}, DType::float64, 11);
  const Tensor point = ctrax::randint(Key(5), Shape{4, 5, 2}, 0, 3);
  const Tensor lp = dist.log_prob(inputs, point);
  const Tensor h = dist.entropy(inputs);
  CHECK(lp.shape() == Shape{4, 5});
  CHECK(h.shape() == Shape{4, 5});
  // The event's elements are independent: the sum of two scalar Categoricals over the
  // consecutive logit blocks [0, 3) and [3, 6).
  const Categorical scalar(3);
  const Tensor first = inputs.slice(-1, 0, 3), second = inputs.slice(-1, 3, 6);
  const Tensor want_lp = ctrax::add(scalar.log_prob(first, point.select(-1, 0)), scalar.log_prob(second, point.select(-1, 1)));
  const Tensor want_h = ctrax::add(scalar.entropy(first), scalar.entropy(second));
  check_values(lp, want_lp.to_vector<double>());
  check_values(h, want_h.to_vector<double>());

  const Tensor s = dist.sample(inputs, Key(8));
  CHECK(s.shape() == Shape{4, 5, 2});
  CHECK(s.dtype() == DType::int64);
  CHECK(ctrax::min(s).item<int64_t>() >= 0);
  CHECK(ctrax::max(s).item<int64_t>() <= 2);
  CHECK(dist.sample(inputs, Key(8), 0.0).shape() == Shape{4, 5, 2});
  CHECK(std::isfinite(ctrax::sum(dist.log_prob(inputs, s)).item<double>()));

  // An empty batch gives empty results.
  const Tensor none = ctrax::zeros(Shape{0, 6});
  CHECK(dist.sample(none, Key(1)).shape() == Shape{0, 2});
  CHECK(dist.sample(none, Key(1), 0.0).shape() == Shape{0, 2});
  CHECK(dist.log_prob(none, ctrax::zeros(Shape{0, 2}, DType::int64)).shape() == Shape{0});
  CHECK(dist.entropy(none).shape() == Shape{0});
}

TEST_CASE("Categorical: gradcheck of log_prob and entropy with respect to the inputs") {
  const Tensor point = i64({0, 2, 1, 1, 2, 0}, Shape{3, 2});
  for (const Shape& event : {Shape{}, Shape{2}}) {
    const Categorical dist(3, event);
    const Shape in_shape = event.rank() == 0 ? Shape{3, 3} : Shape{3, 6};
    const Tensor x = ctrax::test::random_tensor(in_shape, DType::float64, 21);
    const Tensor pt = event.rank() == 0 ? point.select(-1, 0).contiguous() : point;
    INFO(dist.name());
    check_gradcheck([&](const std::vector<Tensor>& in) { return dist.log_prob(in[0], pt); }, {x});
    check_gradcheck([&](const std::vector<Tensor>& in) { return dist.entropy(in[0]); }, {x});
  }
}

TEST_CASE("Categorical sampling: frequencies match softmax(logits / T), and T = 0 is the argmax") {
  const std::vector<double> logits{0.5, -1.0, 1.5, 0.0};
  check_categorical_frequencies(logits, 1.0, Key(101), 20000);
  check_categorical_frequencies(logits, 0.5, Key(102), 20000);  // sharper
  check_categorical_frequencies(logits, 3.0, Key(103), 20000);  // flatter

  const Categorical dist(4);
  const Tensor inputs = f64(logits).unsqueeze(0).expand(Shape{1000, 4});
  // A higher temperature moves mass off the mode.
  const double mode_low = frequencies(dist.sample(inputs, Key(7), 0.25), 4)[2];
  const double mode_high = frequencies(dist.sample(inputs, Key(7), 4.0), 4)[2];
  CHECK(mode_low > 0.95);
  CHECK(mode_high < 0.5);

  // The same key gives the same samples, another key others.
  const Tensor a = dist.sample(inputs, Key(9)), b = dist.sample(inputs, Key(9)), c = dist.sample(inputs, Key(10));
  CHECK(a.to_vector<int64_t>() == b.to_vector<int64_t>());
  CHECK(a.to_vector<int64_t>() != c.to_vector<int64_t>());

  // Temperature 0: the argmax, ties to the lowest index, whatever the key.
  const Tensor tied = f64({1.0, 3.0, 3.0, 0.0, 2.0, 2.0, 2.0, 2.0, -1.0, -5.0, -1.0, -3.0}, Shape{3, 4});
  CHECK(dist.sample(tied, Key(1), 0.0).to_vector<int64_t>() == std::vector<int64_t>{1, 0, 0});
  CHECK(dist.sample(tied, Key(2), 0.0).to_vector<int64_t>() == std::vector<int64_t>{1, 0, 0});
}

TEST_CASE("Distribution samples are constants to a recording tape") {
  ctrax::GradientTape tape;
  const Tensor logits = tape.watch(ctrax::test::random_tensor(Shape{5, 3}, DType::float32, 4));
  const Tensor s = Categorical(3).sample(logits, Key(1));
  CHECK(s.trace_tape() == 0);
  const Tensor g_in = tape.watch(ctrax::test::random_tensor(Shape{5, 4}, DType::float32, 5));
  const Gaussian gauss(Shape{2}, 1.0, LearnStd::separate);
  CHECK(gauss.sample(g_in, Key(1)).trace_tape() == 0);
  const Tensor mode = gauss.sample(g_in, Key(1), 0.0);
  CHECK(mode.trace_tape() == 0);
  CHECK_FALSE(mode.shares_storage_with(g_in));  // a copy, not a view of the policy's outputs
}

TEST_CASE("Gaussian: properties, mean_and_std in every std mode, log_prob and entropy by hand") {
  const Gaussian fixed(Shape{}, 2.0);
  CHECK(fixed.n_inputs() == 1);
  CHECK(fixed.event_shape() == Shape{});
  CHECK(fixed.sample_dtype() == DType::float32);
  CHECK(fixed.name() == "Gaussian(std 2)");
  CHECK(Gaussian(Shape{3}, 1.0, LearnStd::shared).n_inputs() == 4);
  CHECK(Gaussian(Shape{2, 3}, 1.0, LearnStd::separate).n_inputs() == 12);
  CHECK(Gaussian(Shape{2, 3}, 1.0, LearnStd::separate).name() == "Gaussian(shape [2, 3], std 1, learned separate std)");

  // N(1, 2^2) at x = 2: -(1/8) - log 2 - log(2 pi) / 2; entropy log 2 + (1 + log 2 pi) / 2.
  const Tensor inputs = f64({1.0, -3.0}, Shape{2, 1});
  check_values(fixed.log_prob(inputs, f64({2.0, -3.0}, Shape{2})),
               {-0.125 - std::log(2.0) - 0.5 * kLog2Pi, -std::log(2.0) - 0.5 * kLog2Pi});
  const double h = std::log(2.0) + 0.5 * (1.0 + kLog2Pi);
  check_values(fixed.entropy(inputs), {h, h});

  // shared: one raw input per example, std = softplus(raw + 0.5) for every dimension.
  const Gaussian shared(Shape{2}, 0.5, LearnStd::shared);
  const auto [m1, s1] = shared.mean_and_std(f64({1.0, 2.0, -0.3, 3.0, 4.0, 0.7}, Shape{2, 3}));
  CHECK(m1.shape() == Shape{2, 2});
  CHECK(s1.shape() == Shape{2, 2});
  check_values(m1, {1.0, 2.0, 3.0, 4.0});
  check_values(s1, {softplus(0.2), softplus(0.2), softplus(1.2), softplus(1.2)});

  // separate: std_i = softplus(raw_i + 0.5).
  const Gaussian separate(Shape{2}, 0.5, LearnStd::separate);
  const auto [m2, s2] = separate.mean_and_std(f64({1.0, 2.0, -0.3, 0.1}, Shape{1, 4}));
  check_values(m2, {1.0, 2.0});
  check_values(s2, {softplus(0.2), softplus(0.6)});
  const double x0 = 1.5, x1 = 0.0;
  const double want = -(std::pow(x0 - 1.0, 2) / (2 * std::pow(softplus(0.2), 2)) + std::log(softplus(0.2)) +
                        std::pow(x1 - 2.0, 2) / (2 * std::pow(softplus(0.6), 2)) + std::log(softplus(0.6)) + kLog2Pi);
  check_values(separate.log_prob(f64({1.0, 2.0, -0.3, 0.1}, Shape{1, 4}), f64({x0, x1}, Shape{1, 2})), {want});
  check_values(separate.entropy(f64({1.0, 2.0, -0.3, 0.1}, Shape{1, 4})),
               {std::log(softplus(0.2)) + std::log(softplus(0.6)) + 1.0 + kLog2Pi});

  // state_independent: std_i = 0.5 exp(raw_i), the raw log stds at the end of each row (the
  // policy builder makes them one learned vector; the distribution takes any values).
  const Gaussian independent(Shape{2}, 0.5, LearnStd::state_independent);
  CHECK(independent.n_inputs() == 4);
  CHECK(independent.n_state_independent_inputs() == 2);
  CHECK(separate.n_state_independent_inputs() == 0);
  CHECK(Gaussian(Shape{2, 3}, 1.0, LearnStd::state_independent).n_state_independent_inputs() == 6);
  CHECK(independent.name() == "Gaussian(shape [2], std 0.5, learned state-independent std)");
  const Tensor rows = f64({1.0, 2.0, -0.3, 0.1, 3.0, 4.0, 0.0, 0.0}, Shape{2, 4});
  const auto [m3, s3] = independent.mean_and_std(rows);
  check_values(m3, {1.0, 2.0, 3.0, 4.0});
  check_values(s3, {0.5 * std::exp(-0.3), 0.5 * std::exp(0.1), 0.5, 0.5});
  const double ls0 = std::log(0.5) - 0.3, ls1 = std::log(0.5) + 0.1;
  const double want3 = -(std::pow(x0 - 1.0, 2) / (2 * std::exp(2 * ls0)) + ls0 +
                         std::pow(x1 - 2.0, 2) / (2 * std::exp(2 * ls1)) + ls1 + kLog2Pi);
  const double want4 = -(std::pow(x0 - 3.0, 2) / (2 * 0.25) + std::pow(x1 - 4.0, 2) / (2 * 0.25) +
                         2 * std::log(0.5) + kLog2Pi);
  check_values(independent.log_prob(rows, f64({x0, x1, x0, x1}, Shape{2, 2})), {want3, want4});
  check_values(independent.entropy(rows), {ls0 + ls1 + 1.0 + kLog2Pi, 2 * std::log(0.5) + 1.0 + kLog2Pi});
}

TEST_CASE("Gaussian with an event shape: leading axes 4x5, event shape 2") {
  const Gaussian dist(Shape{2}, 0.8, LearnStd::separate);
  const Tensor inputs = ctrax::test::random_tensor(Shape{4, 5, 4}, DType::float64, 31);
  const Tensor point = ctrax::test::random_tensor(Shape{4, 5, 2}, DType::float64, 32);
  const Tensor lp = dist.log_prob(inputs, point);
  CHECK(lp.shape() == Shape{4, 5});
  CHECK(dist.entropy(inputs).shape() == Shape{4, 5});
  CHECK(dist.sample(inputs, Key(1)).shape() == Shape{4, 5, 2});
  // The per-dimension sum, element by element.
  const std::vector<double> x = inputs.to_vector<double>(), p = point.to_vector<double>(), got = lp.to_vector<double>();
  for (size_t e = 0; e < 20; ++e) {
    double want = 0.0;
    for (size_t i = 0; i < 2; ++i) {
      const double mu = x[4 * e + i], sigma = softplus(x[4 * e + 2 + i] + 0.8), z = (p[2 * e + i] - mu) / sigma;
      want -= 0.5 * z * z + std::log(sigma) + 0.5 * kLog2Pi;
    }
    CHECK(got[e] == doctest::Approx(want).epsilon(1e-12));
  }
  // An empty batch gives empty results.
  const Tensor none = ctrax::zeros(Shape{0, 4});
  CHECK(dist.sample(none, Key(1)).shape() == Shape{0, 2});
  CHECK(dist.log_prob(none, ctrax::zeros(Shape{0, 2})).shape() == Shape{0});
  CHECK(dist.entropy(none).shape() == Shape{0});
  // A float32 point against float64 inputs is promoted, not rejected.
  CHECK(dist.log_prob(inputs, point.to(DType::float32)).dtype() == DType::float64);
}

TEST_CASE("Gaussian: gradcheck of log_prob and entropy in every std mode") {
  for (LearnStd mode : {LearnStd::none, LearnStd::shared, LearnStd::separate, LearnStd::state_independent}) {
    for (const Shape& event : {Shape{}, Shape{2}, Shape{2, 2}}) {
      const Gaussian dist(event, 0.7, mode);
      INFO(dist.name());
      const Tensor x = ctrax::test::random_tensor(Shape{3, dist.n_inputs()}, DType::float64, 41);
      Shape point_shape{3};
      for (int64_t d : event) point_shape.push_back(d);
      const Tensor point = ctrax::test::random_tensor(point_shape, DType::float64, 42);
      // With respect to the inputs and the point (a reparameterised action is differentiable too).
      check_gradcheck([&](const std::vector<Tensor>& in) { return dist.log_prob(in[0], in[1]); }, {x, point});
      if (mode != LearnStd::none)  // a fixed std has a constant entropy (nothing to check)
        check_gradcheck([&](const std::vector<Tensor>& in) { return dist.entropy(in[0]); }, {x});
    }
  }
}

TEST_CASE("Gaussian sampling: mean + T std N(0, 1), and the mean at T = 0") {
  const Gaussian dist(Shape{2}, 1.0, LearnStd::separate);
  // mean (1, -2), std softplus(raw + 1) = (0.5, 2).
  const double raw0 = std::log(std::exp(0.5) - 1.0) - 1.0, raw1 = std::log(std::exp(2.0) - 1.0) - 1.0;
  const int64_t count = 20000;
  const Tensor inputs = f64({1.0, -2.0, raw0, raw1}).unsqueeze(0).expand(Shape{count, 4});
  for (double temperature : {1.0, 0.5}) {
    const Tensor s = dist.sample(inputs, Key(77), temperature);
    REQUIRE(s.shape() == Shape{count, 2});
    CHECK(s.dtype() == DType::float32);
    const std::vector<double> m = ctrax::mean(s.to(DType::float64), {0}).to_vector<double>();
    const std::vector<double> sd = ctrax::std(s.to(DType::float64), {0}).to_vector<double>();
    const double want_sd[2] = {0.5 * temperature, 2.0 * temperature};
    const double want_m[2] = {1.0, -2.0};
    for (int i = 0; i < 2; ++i) {
      INFO("T = ", temperature, ", dimension ", i);
      // Standard errors: sd / sqrt(n) for the mean, about sd / sqrt(2 n) for the std.
      CHECK(std::abs(m[i] - want_m[i]) <= 4.0 * want_sd[i] / std::sqrt(double(count)));
      CHECK(std::abs(sd[i] - want_sd[i]) <= 4.0 * want_sd[i] / std::sqrt(2.0 * double(count)));
    }
  }
  const Tensor mode = dist.sample(inputs.slice(0, 0, 3), Key(1), 0.0);
  check_values(mode, {1.0, -2.0, 1.0, -2.0, 1.0, -2.0});
  CHECK(dist.sample(inputs, Key(5)).to_vector<float>() == dist.sample(inputs, Key(5)).to_vector<float>());
  // Bit for bit: mean + (std z) T with z the key's standard normal draws; at T = 1 the
  // multiplication by T is left out, which changes no bit (x * 1 = x).
  const Tensor few = inputs.slice(0, 0, 5).to(DType::float32);
  const auto [mu, sigma] = dist.mean_and_std(few);
  const Tensor z = ctrax::normal(Key(3), mu.shape(), mu.dtype());
  CHECK(dist.sample(few, Key(3), 1.0).to_vector<float>() ==
        ctrax::add(mu, ctrax::mul(ctrax::mul(sigma, z), 1.0)).to_vector<float>());
  CHECK(dist.sample(few, Key(3), 0.5).to_vector<float>() ==
        ctrax::add(mu, ctrax::mul(ctrax::mul(sigma, z), 0.5)).to_vector<float>());
  CHECK(dist.sample(few, Key(3), 0.5).to_vector<float>() != dist.sample(few, Key(3), 1.0).to_vector<float>());
}

TEST_CASE("Gaussian: the density integrates to 1 and the entropy is -integral p log p") {
  // One dimension, each std mode: a Riemann sum over mean +- 12 sigma.
  for (LearnStd mode : {LearnStd::none, LearnStd::shared, LearnStd::separate, LearnStd::state_independent}) {
    const Gaussian dist(Shape{}, 1.3, mode);
    const Tensor one = mode == LearnStd::none ? f64({0.4}) : f64({0.4, 0.9});
    const double sigma = dist.mean_and_std(one).second.item<double>();
    const int64_t n = 24001;
    const double lo = 0.4 - 12 * sigma, hi = 0.4 + 12 * sigma, dx = (hi - lo) / double(n - 1);
    const Tensor grid = ctrax::linspace(lo, hi, n, DType::float64);
    const Tensor lp = dist.log_prob(one.unsqueeze(0).expand(Shape{n, one.numel()}), grid);
    const double mass = ctrax::sum(ctrax::exp(lp)).item<double>() * dx;
    const double integral_h = -ctrax::sum(ctrax::mul(ctrax::exp(lp), lp)).item<double>() * dx;
    INFO(dist.name());
    CHECK(mass == doctest::Approx(1.0).epsilon(1e-9));
    CHECK(dist.entropy(one).item<double>() == doctest::Approx(integral_h).epsilon(1e-9));
    // Trax's formula, exp(sigma) + (1 + log 2 pi) / 2, is not the entropy.
    CHECK(std::abs(std::exp(sigma) + 0.5 * (1 + kLog2Pi) - integral_h) > 0.5);
  }
  // Two dimensions with different stds: a 2-D grid.
  const Gaussian dist(Shape{2}, 1.0, LearnStd::separate);
  const Tensor in = f64({0.5, -1.0, -0.5, 0.3});
  const auto [mu, sigma] = dist.mean_and_std(in);
  const std::vector<double> m = mu.to_vector<double>(), s = sigma.to_vector<double>();
  const int64_t n = 801;
  std::vector<double> points;
  std::vector<double> d(2);
  for (int i = 0; i < 2; ++i) d[i] = 20 * s[i] / double(n - 1);
  for (int64_t a = 0; a < n; ++a)
    for (int64_t b = 0; b < n; ++b) {
      points.push_back(m[0] - 10 * s[0] + double(a) * d[0]);
      points.push_back(m[1] - 10 * s[1] + double(b) * d[1]);
    }
  const Tensor lp = dist.log_prob(in.unsqueeze(0).expand(Shape{n * n, 4}), f64(points, Shape{n * n, 2}));
  CHECK(ctrax::sum(ctrax::exp(lp)).item<double>() * d[0] * d[1] == doctest::Approx(1.0).epsilon(1e-6));
  CHECK(dist.entropy(in).item<double>() ==
        doctest::Approx(-ctrax::sum(ctrax::mul(ctrax::exp(lp), lp)).item<double>() * d[0] * d[1]).epsilon(1e-6));
}

TEST_CASE("Categorical: the entropy is -E(log p) over samples") {
  const Categorical dist(5, Shape{2});
  const int64_t count = 20000;
  const Tensor row = f64({0.3, -1.2, 2.0, 0.0, 0.5, 1.0, 1.0, -2.0, 0.1, 0.7});
  const Tensor inputs = row.unsqueeze(0).expand(Shape{count, 10});
  const Tensor lp = dist.log_prob(inputs, dist.sample(inputs, Key(12)));
  const double estimate = -ctrax::mean(lp).item<double>();
  const double se = ctrax::std(lp).item<double>() / std::sqrt(double(count));
  CHECK(std::abs(estimate - dist.entropy(row).item<double>()) <= 4.0 * se);
}

TEST_CASE("Distributions agree with torch.distributions (fixture)") {
  std::ifstream in(kFixturePath);
  REQUIRE_MESSAGE(in.good(), "missing fixture ", kFixturePath);
  const nlohmann::json doc = nlohmann::json::parse(in);
  REQUIRE(doc.at("cases").size() >= 5);
  for (const nlohmann::json& c : doc.at("cases")) {
    INFO(c.at("name").get<std::string>());
    const Tensor inputs = f64(c.at("inputs").get<std::vector<double>>(), shape_of(c.at("inputs_shape")));
    ctrax::DistributionPtr dist;
    Tensor point;
    if (c.at("kind") == "Categorical") {
      dist = std::make_shared<Categorical>(c.at("n").get<int64_t>(), shape_of(c.at("shape")));
      point = i64(c.at("point").get<std::vector<int64_t>>(), shape_of(c.at("point_shape")));
    } else {
      dist = std::make_shared<Gaussian>(shape_of(c.at("shape")), c.at("std").get<double>(),
                                        learn_std_of(c.at("learn_std").get<std::string>()));
      point = f64(c.at("point").get<std::vector<double>>(), shape_of(c.at("point_shape")));
    }
    check_values(dist->log_prob(inputs, point), c.at("log_prob").get<std::vector<double>>(), 1e-12);
    check_values(dist->entropy(inputs), c.at("entropy").get<std::vector<double>>(), 1e-12);
  }
}

TEST_CASE("LogProb and LogLoss layers: values and gradients to the inputs") {
  const auto dist = std::make_shared<Categorical>(3);
  const Tensor logits = ctrax::test::random_tensor(Shape{4, 3}, DType::float64, 51);
  const Tensor actions = i64({0, 2, 1, 2}, Shape{4});
  const Tensor weights = f64({0.5, 1.0, 0.0, 2.0}, Shape{4});

  const auto log_prob = ctrax::LogProb(dist);
  CHECK(log_prob->n_in() == 2);
  CHECK(log_prob->n_out() == 1);
  check_values((*log_prob)({logits, actions})[0], dist->log_prob(logits, actions).to_vector<double>());

  const auto loss = ctrax::LogLoss(dist);
  CHECK(loss->n_in() == 3);
  CHECK(loss->n_out() == 1);
  const Tensor value = (*loss)({logits, actions, weights})[0];
  CHECK(value.shape() == Shape{});
  const double want = -ctrax::sum(ctrax::mul(weights, dist->log_prob(logits, actions))).item<double>();
  CHECK(value.item<double>() == doctest::Approx(want).epsilon(1e-12));

  // d(-sum w log softmax(l)[a]) / dl = w (softmax(l) - onehot(a)).
  const auto r = ctrax::value_and_grad([&](const Tensor& l) { return (*loss)({l, actions, weights})[0]; })(logits);
  CHECK(r.value.item<double>() == doctest::Approx(want).epsilon(1e-12));
  const Tensor want_grad = ctrax::mul(ctrax::sub(ctrax::softmax(logits, -1), ctrax::one_hot(actions, 3, DType::float64)),
                                      weights.unsqueeze(-1));
  check_values(r.grad, want_grad.to_vector<double>());

  // Gaussian: the gradient flows to the means and the learned stds.
  const auto gauss = std::make_shared<Gaussian>(Shape{2}, 1.0, LearnStd::shared);
  const Tensor g_in = ctrax::test::random_tensor(Shape{4, 3}, DType::float64, 52);
  const Tensor g_pt = ctrax::test::random_tensor(Shape{4, 2}, DType::float64, 53);
  const auto g_loss = ctrax::LogLoss(gauss);
  check_gradcheck([&](const std::vector<Tensor>& in) { return (*g_loss)({in[0], g_pt, weights})[0]; }, {g_in});
  const auto rg = ctrax::value_and_grad([&](const Tensor& x) { return (*g_loss)({x, g_pt, weights})[0]; })(g_in);
  CHECK(ctrax::sum(ctrax::abs(rg.grad.select(-1, 2))).item<double>() > 0.0);

  CHECK_THROWS_WITH_AS(ctrax::LogProb(nullptr), doctest::Contains("LogProb: the distribution is null"), Error);
  CHECK_THROWS_WITH_AS(ctrax::LogLoss(nullptr), doctest::Contains("LogLoss: the distribution is null"), Error);
  // A bad point inside the layer names the layer.
  CHECK_THROWS_WITH_AS((*ctrax::LogLoss(dist))({logits, i64({0, 3, 1, 2}, Shape{4}), weights}),
                       doctest::Contains("category ids must be in [0, 3), got 3"), Error);
}

TEST_CASE("create_distribution: one distribution per kind of space") {
  const auto d = ctrax::create_distribution(Space::discrete(4));
  CHECK(d->name() == "Categorical(4)");
  CHECK(d->n_inputs() == 4);
  CHECK(d->event_shape() == Shape{});

  const auto md = ctrax::create_distribution(Space::multi_discrete({3, 3, 3}));
  const auto* cat = dynamic_cast<const Categorical*>(md.get());
  REQUIRE(cat != nullptr);
  CHECK(cat->n_categories() == 3);
  CHECK(cat->event_shape() == Shape{3});
  CHECK(cat->n_inputs() == 9);

  const auto box = ctrax::create_distribution(Space::box(Shape{2, 3}, -1.0, 1.0));
  CHECK(dynamic_cast<const Gaussian*>(box.get()) != nullptr);
  CHECK(box->event_shape() == Shape{2, 3});
  CHECK(box->n_inputs() == 6);
  CHECK(box->sample_dtype() == DType::float32);
  CHECK(ctrax::create_distribution(Space::box(Shape{}, -2.0, 2.0))->n_inputs() == 1);

  CHECK_THROWS_WITH_AS(ctrax::create_distribution(Space::multi_discrete({2, 3})),
                       doctest::Contains("MultiDiscrete([2, 3]) has unequal entries"), Error);
  CHECK_THROWS_WITH_AS(ctrax::create_distribution(Space::discrete(1)), doctest::Contains("a single action"), Error);
  CHECK_THROWS_WITH_AS(ctrax::create_distribution(Space::multi_discrete({1, 1})),
                       doctest::Contains("a single value per entry"), Error);
}

TEST_CASE("Distributions reject bad construction arguments") {
  CHECK_THROWS_WITH_AS(Categorical(1), doctest::Contains("n_categories must be >= 2, got 1"), Error);
  CHECK_THROWS_WITH_AS(Categorical(0), doctest::Contains("n_categories must be >= 2, got 0"), Error);
  CHECK_THROWS_WITH_AS(Categorical(3, Shape{2, 0}), doctest::Contains("must be >= 1, got shape [2, 0]"), Error);
  CHECK_THROWS_WITH_AS(Gaussian(Shape{0}), doctest::Contains("Gaussian: every dimension"), Error);
  CHECK_THROWS_WITH_AS(Gaussian(Shape{}, 0.0), doctest::Contains("std must be finite and > 0, got 0"), Error);
  CHECK_THROWS_WITH_AS(Gaussian(Shape{}, -1.0), doctest::Contains("std must be finite and > 0, got -1"), Error);
  CHECK_THROWS_WITH_AS(Gaussian(Shape{}, kInf), doctest::Contains("std must be finite and > 0"), Error);
  CHECK_THROWS_WITH_AS(Gaussian(Shape{}, std::nan("")), doctest::Contains("std must be finite and > 0"), Error);
}

TEST_CASE("Distributions reject bad inputs, points and temperatures") {
  const Categorical cat(3, Shape{2});
  const Tensor logits = ctrax::zeros(Shape{4, 6}, DType::float32);
  const Tensor ids = ctrax::zeros(Shape{4, 2}, DType::int64);

  // Inputs: the last axis must be n_inputs; float dtype; rank >= 1; defined.
  CHECK_THROWS_WITH_AS(cat.log_prob(ctrax::zeros(Shape{4, 5}), ids),
                       doctest::Contains("Categorical(3, shape [2]).log_prob: inputs of shape [4, 5] have last axis 5, "
                                         "expected n_inputs = 6"),
                       Error);
  CHECK_THROWS_WITH_AS(cat.entropy(ctrax::zeros(Shape{4, 3})), doctest::Contains("expected n_inputs = 6"), Error);
  CHECK_THROWS_WITH_AS(cat.sample(ctrax::zeros(Shape{7}), Key(1)), doctest::Contains("have last axis 7"), Error);
  CHECK_THROWS_WITH_AS(cat.entropy(ctrax::zeros(Shape{4, 6}, DType::int64)),
                       doctest::Contains("inputs have dtype int64, expected float32 or float64"), Error);
  CHECK_THROWS_WITH_AS(cat.entropy(ctrax::scalar_tensor(1.0)), doctest::Contains("rank-0"), Error);
  CHECK_THROWS_WITH_AS(cat.entropy(Tensor()), doctest::Contains("inputs are undefined"), Error);

  // Categorical points: the leading shape plus the event shape, integer ids in [0, n).
  CHECK_THROWS_WITH_AS(cat.log_prob(logits, ctrax::zeros(Shape{4}, DType::int64)),
                       doctest::Contains("point of shape [4] does not match inputs of shape [4, 6]: expected the "
                                         "inputs' leading shape [4] followed by the event shape [2], i.e. [4, 2]"),
                       Error);
  CHECK_THROWS_WITH_AS(cat.log_prob(logits, ctrax::zeros(Shape{3, 2}, DType::int64)),
                       doctest::Contains("i.e. [4, 2]"), Error);
  CHECK_THROWS_WITH_AS(cat.log_prob(logits, ctrax::zeros(Shape{4, 2}, DType::float32)),
                       doctest::Contains("point has dtype float32, expected int32 or int64 category ids"), Error);
  CHECK_THROWS_WITH_AS(cat.log_prob(logits, ctrax::zeros(Shape{4, 2}, DType::boolean)),
                       doctest::Contains("expected int32 or int64 category ids"), Error);
  CHECK_THROWS_WITH_AS(cat.log_prob(logits, i64({0, 1, 2, 3, 0, 1, 2, 0}, Shape{4, 2})),
                       doctest::Contains("category ids must be in [0, 3), got 3"), Error);
  CHECK_THROWS_WITH_AS(cat.log_prob(logits, i64({0, 1, -1, 2, 0, 1, 2, 0}, Shape{4, 2})),
                       doctest::Contains("category ids must be in [0, 3), got -1"), Error);
  CHECK_THROWS_WITH_AS(cat.log_prob(logits, Tensor()), doctest::Contains("the point is undefined"), Error);

  // Temperatures: finite and >= 0.
  const Gaussian shared(Shape{2}, 1.0, LearnStd::shared);
  for (const ctrax::Distribution* d : std::vector<const ctrax::Distribution*>{&cat, &shared}) {
    const Tensor x = ctrax::zeros(Shape{4, d->n_inputs()});
    CHECK_THROWS_WITH_AS(d->sample(x, Key(1), -0.5),
                         doctest::Contains("sample: temperature must be finite and >= 0, got -0.5"), Error);
    CHECK_THROWS_WITH_AS(d->sample(x, Key(1), std::nan("")), doctest::Contains("temperature must be finite"), Error);
    CHECK_THROWS_WITH_AS(d->sample(x, Key(1), kInf), doctest::Contains("temperature must be finite"), Error);
  }
  // NaN logits have no distribution to sample from (at any temperature).
  const Tensor nan_logits = f64({0.0, std::nan(""), 1.0, 0.0, 0.0, 0.0}, Shape{1, 6});
  CHECK_THROWS_WITH_AS(cat.sample(nan_logits, Key(1)), doctest::Contains("contain NaN"), Error);
  CHECK_THROWS_WITH_AS(cat.sample(nan_logits, Key(1), 0.0), doctest::Contains("contain NaN"), Error);
  // Every category of a group masked: nothing to sample (at any temperature).
  const Tensor all_masked = f64({0.0, 1.0, 2.0, -kInf, -kInf, -kInf}, Shape{1, 6});
  CHECK_THROWS_WITH_AS(cat.sample(all_masked, Key(1)), doctest::Contains("all -inf (every category masked)"), Error);
  CHECK_THROWS_WITH_AS(cat.sample(all_masked, Key(1), 0.0), doctest::Contains("all -inf"), Error);

  // Gaussian points: float, the leading shape plus the event shape.
  const Gaussian g(Shape{2}, 1.0, LearnStd::separate);
  const Tensor g_in = ctrax::zeros(Shape{4, 4});
  CHECK_THROWS_WITH_AS(g.log_prob(g_in, ctrax::zeros(Shape{4, 2}, DType::int64)),
                       doctest::Contains("Gaussian(shape [2], std 1, learned separate std).log_prob: point has dtype "
                                         "int64, expected float32 or float64"),
                       Error);
  CHECK_THROWS_WITH_AS(g.log_prob(g_in, ctrax::zeros(Shape{4, 3})), doctest::Contains("i.e. [4, 2]"), Error);
  CHECK_THROWS_WITH_AS(g.log_prob(ctrax::zeros(Shape{4, 2}), ctrax::zeros(Shape{4, 2})),
                       doctest::Contains("have last axis 2, expected n_inputs = 4"), Error);
  CHECK_THROWS_WITH_AS(g.mean_and_std(ctrax::zeros(Shape{4, 5})), doctest::Contains("expected n_inputs = 4"), Error);
  CHECK_THROWS_WITH_AS(g.entropy(ctrax::zeros(Shape{4, 4}, DType::int32)), doctest::Contains("inputs have dtype int32"),
                       Error);
}
