// ActionValue (layers/models.h), the Q-network of the Q-value baselines: the forward pass against a
// hand computation from its weights (discrete actions embedded, continuous ones projected), gradients
// by gradcheck, its stack arity and layout, and bad options and inputs.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include <ctrax/autograd/gradcheck.h>
#include <ctrax/layers/combinators.h>
#include <ctrax/layers/core.h>
#include <ctrax/layers/models.h>
#include <ctrax/tensor/ops.h>

#include "../test_util.h"

using namespace ctrax;

namespace {

// x [rows, in] times the Dense weights {kernel [in, out], bias [out]}: [rows, out], in double.
std::vector<double> dense(const std::vector<double>& x, int64_t rows, const Tree& w) {
  const Tensor& kernel = w["kernel"].leaf();
  const int64_t in = kernel.shape()[0], out = kernel.shape()[1];
  const std::vector<double> k = kernel.to_vector<double>(), b = w["bias"].leaf().to_vector<double>();
  std::vector<double> y(static_cast<size_t>(rows * out));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < out; ++j) {
      double s = b[static_cast<size_t>(j)];
      for (int64_t i = 0; i < in; ++i)
        s += x[static_cast<size_t>(r * in + i)] * k[static_cast<size_t>(i * out + j)];
      y[static_cast<size_t>(r * out + j)] = s;
    }
  return y;
}

// Q by hand for ActionValue(body = Serial(Dense, Tanh), ...) with one injection layer, given the
// action features a [rows, dim] (already embedded or projected).
std::vector<double> q_by_hand(const std::vector<double>& obs, int64_t rows, const Tree& w,
                              const std::vector<double>& action_features) {
  std::vector<double> h = dense(obs, rows, w[0][0]);
  for (double& v : h) v = std::tanh(v);
  std::vector<double> s = dense(h, rows, w[1][0]);
  for (size_t i = 0; i < s.size(); ++i) s[i] += action_features[i];  // the injection: a sum
  std::vector<double> m = dense(s, rows, w[3][0]);                     // then Dense and Relu
  for (double& v : m) v = std::max(0.0, v);
  return dense(m, rows, w[4][0]);
}

LayerFactory tanh_body(int64_t width) {
  return [width] { return Serial({Dense(width), Tanh()}); };
}

}  // namespace

TEST_CASE("Q-value ActionValue with discrete actions: Q(o, a) from the embedded action, by hand") {
  LayerPtr q = ActionValue(tanh_body(5), /*is_discrete=*/true, /*vocab_size=*/3, /*injection_dim=*/4);
  CHECK(q->name() == "ActionValue");
  CHECK(q->n_in() == 2);
  CHECK(q->n_out() == 1);
  const Tensor obs = test::random_tensor(Shape{2, 3, 4}, DType::float32, 1);
  const Tensor actions = tensor<int64_t>({0, 2, 1, 1, 0, 2}, Shape{2, 3});
  auto [w, s] = q->init({ShapeDtype::of(obs), ShapeDtype::of(actions)}, Key(3));
  // The layout the agents rely on: (body, Parallel(Dense, Embedding), inject, MLP, head).
  REQUIRE(w.size() == 5);
  const Tensor& table = w[1][1]["embedding"].leaf();
  REQUIRE(table.shape() == Shape{3, 4});
  const Tensor out = q->apply({obs, actions}, w, s).outputs[0];
  REQUIRE(out.shape() == Shape{2, 3});
  const std::vector<double> t = table.to_vector<double>();
  std::vector<double> features;
  for (int64_t id : actions.to_vector<int64_t>())
    for (int64_t j = 0; j < 4; ++j) features.push_back(t[static_cast<size_t>(id * 4 + j)]);
  const std::vector<double> want = q_by_hand(obs.to_vector<double>(), 6, w, features);
  const std::vector<double> got = out.to_vector<double>();
  for (size_t i = 0; i < 6; ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-5));
  // Different actions in the same state give different values (the injection reaches Q).
  const Tensor other = q->apply({obs, tensor<int64_t>({1, 0, 2, 2, 1, 0}, Shape{2, 3})}, w, s).outputs[0];
  CHECK(other.to_vector<double>() != got);
}

TEST_CASE("Q-value ActionValue with continuous actions: Q(o, a) from the projected action, by hand") {
  LayerPtr q = ActionValue(tanh_body(6), /*is_discrete=*/false, /*vocab_size=*/2, /*injection_dim=*/5,
                           nullptr, /*head_init_range=*/0.5);
  const Tensor obs = test::random_tensor(Shape{3, 2, 3}, DType::float32, 2);
  const Tensor actions = test::random_tensor(Shape{3, 2, 2}, DType::float32, 3);
  auto [w, s] = q->init({ShapeDtype::of(obs), ShapeDtype::of(actions)}, Key(4));
  REQUIRE(w.size() == 5);
  // head_init_range draws the head's kernel in [-0.5, 0.5].
  for (double k : w[4][0]["kernel"].leaf().to_vector<double>()) CHECK(std::abs(k) <= 0.5);
  const std::vector<double> features = dense(actions.to_vector<double>(), 6, w[1][1]);
  const std::vector<double> want = q_by_hand(obs.to_vector<double>(), 6, w, features);
  const Tensor out = q->apply({obs, actions}, w, s).outputs[0];
  REQUIRE(out.shape() == Shape{3, 2});
  const std::vector<double> got = out.to_vector<double>();
  for (size_t i = 0; i < 6; ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-5));
}

TEST_CASE("Q-value ActionValue gradients pass gradcheck for the weights, the observations and continuous actions") {
  // Inputs away from Relu's kink: random weights in float64 rarely put a pre-activation at 0.
  {
    LayerPtr q = ActionValue(tanh_body(4), true, 3, 3);
    const Tensor obs = test::random_tensor(Shape{2, 2, 3}, DType::float64, 5);
    const Tensor actions = tensor<int64_t>({2, 0, 1, 2}, Shape{2, 2});
    auto initialized = q->init({ShapeDtype::of(obs), ShapeDtype::of(actions)}, Key(6));
    Tree& w = initialized.first;
    Tree& s = initialized.second;
    std::vector<Tensor> leaves = w.leaves();
    for (Tensor& leaf : leaves) leaf = leaf.to(DType::float64);
    const GradcheckResult r = gradcheck(
        [&](const std::vector<Tensor>& in) {
          const std::vector<Tensor> weights(in.begin(), in.end() - 1);
          return q->apply({in.back(), actions}, w.with_leaves(weights), s).outputs[0];
        },
        [&] {
          std::vector<Tensor> all = leaves;
          all.push_back(obs);
          return all;
        }());
    CHECK_MESSAGE(r.ok, r.message);
  }
  {
    LayerPtr q = ActionValue(tanh_body(4), false, 2, 3, nullptr, 0.0, /*injection_layers=*/2);
    const Tensor obs = test::random_tensor(Shape{2, 2, 3}, DType::float64, 7);
    const Tensor actions = test::random_tensor(Shape{2, 2, 2}, DType::float64, 8);
    auto initialized = q->init({ShapeDtype::of(obs), ShapeDtype::of(actions)}, Key(9));
    Tree& w = initialized.first;
    Tree& s = initialized.second;
    const GradcheckResult r = gradcheck(
        [&](const std::vector<Tensor>& in) {
          const std::vector<Tensor> weights(in.begin() + 2, in.end());
          return q->apply({in[0], in[1]}, w.with_leaves(weights), s).outputs[0];
        },
        [&] {
          std::vector<Tensor> all{obs, actions};
          for (const Tensor& leaf : w.leaves()) all.push_back(leaf);
          return all;
        }());
    CHECK_MESSAGE(r.ok, r.message);
  }
}

TEST_CASE("Q-value ActionValue without a body and with a normaliser keeps the observation layers first") {
  LayerPtr plain = ActionValue(nullptr, true, 2);
  const Signature sig{{Shape{1, 1, 4}, DType::float32}, {Shape{1, 1}, DType::int64}};
  CHECK(plain->init(sig).first.size() == 4);  // Parallel, inject, MLP, head
  CHECK(plain->apply({zeros(Shape{1, 1, 4}), zeros(Shape{1, 1}, DType::int64)}, plain->init(sig).first,
                     plain->init(sig).second)
            .outputs[0]
            .shape() == Shape{1, 1});
  LayerPtr normalised = ActionValue(tanh_body(3), true, 2, 8, [] { return Tanh(); });
  CHECK(normalised->init(sig).first.size() == 6);  // normaliser, body, Parallel, inject, MLP, head
}

TEST_CASE("Q-value ActionValue rejects bad options, mismatched action shapes and out-of-range ids") {
  CHECK_THROWS_WITH_AS(ActionValue(nullptr, true, 0), doctest::Contains("vocab_size must be >= 1, got 0"), Error);
  CHECK_NOTHROW(ActionValue(nullptr, false, 0));  // the vocabulary is only for discrete actions
  CHECK_THROWS_WITH_AS(ActionValue(nullptr, true, 2, 0), doctest::Contains("injection_dim must be >= 1, got 0"),
                       Error);
  CHECK_THROWS_WITH_AS(ActionValue(nullptr, true, 2, 4, nullptr, 0.0, 0),
                       doctest::Contains("injection_layers must be >= 1, got 0"), Error);
  LayerPtr q = ActionValue(tanh_body(3), false, 2, 4);
  // Continuous actions without their feature axis would broadcast: refused, naming both shapes.
  const Signature bad{{Shape{2, 3, 4}, DType::float32}, {Shape{2, 3, 1, 2}, DType::float32}};
  CHECK_THROWS_WITH_AS(q->init(bad),
                       doctest::Contains("the observation features are [2, 3, 4] but the action features are "
                                         "[2, 3, 1, 4]; actions must be [B, L, d] floats"),
                       Error);
  LayerPtr d = ActionValue(tanh_body(3), true, 2, 4);
  const Signature sig{{Shape{1, 2, 4}, DType::float32}, {Shape{1, 2}, DType::int64}};
  auto [w, s] = d->init(sig);
  CHECK_THROWS_WITH_AS(d->apply({zeros(Shape{1, 2, 4}), tensor<int64_t>({0, 2}, Shape{1, 2})}, w, s),
                       doctest::Contains("id 2 is out of range for a vocabulary of 2"), Error);
  CHECK_THROWS_WITH_AS(d->apply({zeros(Shape{1, 2, 4}), tensor<int64_t>({0, 1, 1, 0}, Shape{1, 2, 2})}, w, s),
                       doctest::Contains("actions must be [B, L] integer ids"), Error);
}
