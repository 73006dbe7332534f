// Rollout passes (rl/learning/rollout_buffer.h, ActorCriticOptions::rollout_passes): the rows, their
// advantages and targets against hand-computed values, minibatch coverage, per-minibatch
// normalisation and the clipped value loss.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <utility>
#include <set>

#include <ctrax/ctrax.h>

#include "agent_test_helpers.h"

using namespace ctrax;
using namespace ctrax::test_rl;

TEST_CASE("RolloutBuffer: rows are the pieces' steps with GAE advantages and V + A targets") {
  const double gamma = 0.9, lambda = 0.5;
  // Piece 0: 2 steps, terminated; piece 1: 3 steps, cut (bootstraps from V of its last observation).
  std::vector<Trajectory> pieces{hand_trajectory(2, true, false, gamma), hand_trajectory(3, false, false, gamma)};
  // V(o) = 10 x the first observation entry: o_i = (i / 10, ...), so V(o_i) = i.
  const auto values = [](const Tensor& obs) { return (obs.slice(2, 0, 1).squeeze(-1) * 10.0).contiguous(); };
  const RolloutBuffer buffer(pieces, values, gae(lambda), gamma);
  REQUIRE(buffer.size() == 5);
  // Hand computation, reward 1 everywhere: delta_t = 1 + gamma V(t + 1) (0 after a terminal) - V(t).
  auto gae_of = [&](const std::vector<double>& v, bool terminated) {
    const size_t steps = v.size() - 1;
    std::vector<double> a(steps);
    double next = 0;
    for (size_t t = steps; t-- > 0;) {
      const double bootstrap = (t + 1 == steps && terminated) ? 0.0 : v[t + 1];
      const double delta = 1.0 + gamma * bootstrap - v[t];
      next = delta + gamma * lambda * ((t + 1 == steps) ? 0.0 : next);
      a[t] = next;
    }
    return a;
  };
  std::vector<double> expected = gae_of({0, 1, 2}, true);
  const std::vector<double> second = gae_of({0, 1, 2, 3}, false);
  expected.insert(expected.end(), second.begin(), second.end());
  const std::vector<double> a = buffer.advantages().to_vector<double>();
  const std::vector<double> old = buffer.old_values().to_vector<double>();
  const std::vector<double> targets = buffer.value_targets().to_vector<double>();
  const std::vector<double> v_rows{0, 1, 0, 1, 2};
  for (size_t i = 0; i < 5; ++i) {
    CAPTURE(i);
    CHECK(a[i] == doctest::Approx(expected[i]).epsilon(1e-6));
    CHECK(old[i] == doctest::Approx(v_rows[i]));
    CHECK(targets[i] == doctest::Approx(v_rows[i] + expected[i]).epsilon(1e-6));
  }
  // Observations, actions and the behaviour policy's inputs are the steps', in order.
  CHECK(buffer.observations().shape() == Shape({5, 4}));
  CHECK(buffer.actions().to_vector<int64_t>() == std::vector<int64_t>{0, 1, 0, 1, 0});
  CHECK(buffer.dist_inputs().shape() == Shape({5, 2}));
  CHECK(buffer.dist_inputs().to_vector<double>()[4 * 2] == doctest::Approx(0.2));
  CHECK_THROWS_WITH_AS(RolloutBuffer({}, values, gae(lambda), gamma), doctest::Contains("holds no trajectory"), Error);
  // A value function of the wrong shape is named with what was expected: one V per row of the
  // call (7 real rows, rounded up to 64).
  const auto flat = [](const Tensor& obs) { return obs.slice(2, 0, 1).squeeze(0).contiguous(); };
  CHECK_THROWS_WITH_AS(RolloutBuffer(pieces, flat, gae(lambda), gamma),
                       doctest::Contains("the value function gave [64, 1] for observations [1, 64, 4]; expected [1, 64]"),
                       Error);
}

TEST_CASE("RolloutBuffer: a large collection's values are computed a few rows at a time, with the same V") {
  const double gamma = 0.9;
  // 40 pieces of 60 steps: a [40, 61] grid of 2440 rows, more than one value call takes.
  std::vector<Trajectory> pieces;
  for (int i = 0; i < 40; ++i) pieces.push_back(hand_trajectory(60, i % 3 == 0, false, gamma));
  std::vector<int64_t> rows_per_call;
  const auto values = [&](const Tensor& obs) {
    rows_per_call.push_back(obs.shape()[0] * obs.shape()[1]);
    return (obs.slice(2, 0, 1).squeeze(-1) * 10.0).contiguous();  // V(o_t) = t, row by row
  };
  const RolloutBuffer buffer(pieces, values, gae(0.95), gamma);
  REQUIRE(buffer.size() == 40 * 60);
  // 2440 real rows: calls of 1024, 1024 and 392 rounded up to 448 (a multiple of 64, so that a
  // compiled value step sees few shapes), the extra rows repeats whose V is dropped.
  CHECK(rows_per_call == std::vector<int64_t>{1024, 1024, 448});
  // Every piece's rows got V of their own observations: 0, 1, ..., 59 piece after piece.
  const std::vector<double> old = buffer.old_values().to_vector<double>();
  for (size_t i = 0; i < old.size(); ++i) {
    CAPTURE(i);
    CHECK(old[i] == doctest::Approx(static_cast<double>(i % 60)));
  }
}

TEST_CASE("RolloutBuffer: each pass's minibatches cover every row exactly once, in a seeded order") {
  const std::vector<Tensor> mb = RolloutBuffer::minibatch_indices(10, 4, Key(3));
  REQUIRE(mb.size() == 3);
  CHECK(mb[0].shape()[0] == 4);
  CHECK(mb[1].shape()[0] == 4);
  CHECK(mb[2].shape()[0] == 2);
  std::multiset<int64_t> seen;
  for (const Tensor& m : mb)
    for (int64_t i : m.to_vector<int64_t>()) seen.insert(i);
  CHECK(seen.size() == 10);
  for (int64_t i = 0; i < 10; ++i) CHECK(seen.count(i) == 1);
  // The same key gives the same order; another key another.
  const std::vector<Tensor> again = RolloutBuffer::minibatch_indices(10, 4, Key(3));
  const std::vector<Tensor> other = RolloutBuffer::minibatch_indices(10, 4, Key(4));
  CHECK(again[0].to_vector<int64_t>() == mb[0].to_vector<int64_t>());
  CHECK(other[0].to_vector<int64_t>() != mb[0].to_vector<int64_t>());
  CHECK_THROWS_AS(RolloutBuffer::minibatch_indices(0, 4, Key(3)), Error);
  CHECK_THROWS_AS(RolloutBuffer::minibatch_indices(4, 0, Key(3)), Error);
  const Tensor rows = from_vector(std::vector<int64_t>{2, 0}, Shape{2});
  const Tensor field = from_vector(std::vector<float>{10, 11, 12}, Shape{3});
  const Tensor picked = RolloutBuffer::select(field, rows);
  CHECK(picked.shape() == Shape({2, 1}));
  CHECK(picked.to_vector<float>() == std::vector<float>{12, 10});
}

TEST_CASE("normalize_minibatch: (A - mean) / (std + epsilon) over the minibatch, population std") {
  const Tensor a = from_vector(std::vector<float>{1, 2, 3, 6}, Shape{4});
  // mean 3, population variance (4 + 1 + 0 + 9) / 4 = 3.5.
  const std::vector<float> out = normalize_minibatch(a, 1e-8, 2.0).to_vector<float>();
  const double sd = std::sqrt(3.5);
  const std::vector<double> expected{-2 * 2 / sd, -2 * 1 / sd, 0.0, 2 * 3 / sd};
  for (size_t i = 0; i < 4; ++i) CHECK(out[i] == doctest::Approx(expected[i]).epsilon(1e-6));
  CHECK(normalize_minibatch(from_vector(std::vector<float>{5, 5}, Shape{2}), 1e-8).to_vector<float>() ==
        std::vector<float>{0, 0});
}

namespace {
bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  const Tensor x = a.contiguous(), y = b.contiguous();
  return std::memcmp(x.raw_data(), y.raw_data(), static_cast<size_t>(x.numel()) * x.element_size()) == 0;
}
}  // namespace

TEST_CASE("RolloutMinibatch: the rows of every field as select() gives them, refilled in place, bad rows refused") {
  const double gamma = 0.9;
  std::vector<Trajectory> pieces{hand_trajectory(4, true, false, gamma), hand_trajectory(5, false, false, gamma)};
  const auto values = [](const Tensor& obs) { return (obs.slice(2, 0, 1).squeeze(-1) * 3.0 - 0.5).contiguous(); };
  const RolloutBuffer buffer(pieces, values, gae(0.95), gamma);
  REQUIRE(buffer.size() == 9);
  const Tensor targets = (buffer.value_targets() * 0.1).to(DType::float32);
  const Tensor old_values = (buffer.old_values() * 0.1).to(DType::float32);
  RolloutMinibatch mb;
  const auto check_rows = [&](const Tensor& rows, bool normalize) {
    CAPTURE(rows.to_vector<int64_t>().size());
    CAPTURE(normalize);
    std::optional<std::pair<double, double>> how;
    if (normalize) how = std::pair{1e-8, 2.0};
    mb.gather(buffer, rows, buffer.advantages(), targets, old_values, how);
    const int64_t b = rows.shape()[0];
    CHECK(same_bits(mb.observations(), RolloutBuffer::select(buffer.observations(), rows)));
    CHECK(same_bits(mb.actions(), RolloutBuffer::select(buffer.actions(), rows)));
    CHECK(same_bits(mb.dist_inputs(), RolloutBuffer::select(buffer.dist_inputs(), rows)));
    const Tensor a = index_select(buffer.advantages(), 0, rows);
    CHECK(same_bits(mb.advantages(), (normalize ? normalize_minibatch(a, 1e-8, 2.0) : a).reshape(Shape{b, 1})));
    CHECK(same_bits(mb.value_targets(), RolloutBuffer::select(targets, rows)));
    CHECK(same_bits(mb.old_values(), RolloutBuffer::select(old_values, rows)));
    CHECK(same_bits(mb.mask(), ones(Shape{b, 1})));
  };
  const Tensor first = from_vector(std::vector<int64_t>{8, 0, 3, 3, 5}, Shape{5});
  const Tensor second = from_vector(std::vector<int64_t>{1, 2, 4, 6, 7}, Shape{5});
  check_rows(first, false);
  const void* storage = mb.observations().raw_data();
  check_rows(second, true);
  CHECK(mb.observations().raw_data() == storage);  // the same size again: refilled in place
  // A field still held by the caller is left as it was; a fresh tensor takes its place.
  const Tensor held = mb.observations();
  const Tensor held_copy = held.clone();
  check_rows(first, true);
  CHECK(mb.observations().raw_data() != held.raw_data());
  CHECK(same_bits(held, held_copy));
  check_rows(from_vector(std::vector<int64_t>{4}, Shape{1}), false);  // another size
  // Rows of every byte width: 4, 8 and 16 above (advantages, int64 actions, observations of 4);
  // 12 (three floats, Pendulum's observations) and 20 (the general copy) here.
  for (int64_t width : {3, 5}) {
    CAPTURE(width);
    const Tensor wide = arange(9 * width).to(DType::float32).reshape(Shape{9, width});
    mb.gather(buffer, first, buffer.advantages(), wide, old_values, std::nullopt);
    CHECK(same_bits(mb.value_targets(), RolloutBuffer::select(wide, first)));
  }
  // Bad rows and fields: a clear error, nothing read out of range.
  CHECK_THROWS_WITH_AS(mb.gather(buffer, from_vector(std::vector<int64_t>{0, 9}, Shape{2}), buffer.advantages(), targets,
                                 old_values, std::nullopt),
                       doctest::Contains("rows must be in [0, 9), got 9"), Error);
  CHECK_THROWS_WITH_AS(mb.gather(buffer, from_vector(std::vector<int64_t>{-1}, Shape{1}), buffer.advantages(), targets,
                                 old_values, std::nullopt),
                       doctest::Contains("got -1"), Error);
  CHECK_THROWS_WITH_AS(mb.gather(buffer, from_vector(std::vector<float>{0}, Shape{1}), buffer.advantages(), targets,
                                 old_values, std::nullopt),
                       doctest::Contains("rows must be a 1-D int64 CPU tensor, got float32[1]"), Error);
  CHECK_THROWS_WITH_AS(mb.gather(buffer, empty(Shape{0}, DType::int64), buffer.advantages(), targets, old_values,
                                 std::nullopt),
                       doctest::Contains("no rows"), Error);
  CHECK_THROWS_WITH_AS(mb.gather(buffer, second, buffer.advantages(), targets.slice(0, 0, 8), old_values, std::nullopt),
                       doctest::Contains("the value targets must be a CPU tensor of 9 rows (the buffer's), got [8]"), Error);
  CHECK_THROWS_WITH_AS(mb.gather(buffer, second, buffer.advantages().to(DType::float64), targets, old_values,
                                 std::pair{1e-8, 1.0}),
                       doctest::Contains("the advantages must be float32 to normalise, got float64"), Error);
}

TEST_CASE("RolloutValueLoss: the mean squared error, or with a clip the larger of the two errors") {
  const Shape s{1, 4};
  const Tensor v = from_vector(std::vector<float>{1.0f, 2.0f, 0.0f, 5.0f}, s);
  const Tensor targets = from_vector(std::vector<float>{0.0f, 2.5f, 1.0f, 5.0f}, s);
  const Tensor mask = from_vector(std::vector<float>{1, 1, 1, 0}, s);
  const Tensor old = from_vector(std::vector<float>{0.0f, 0.0f, 0.5f, 0.0f}, s);
  auto loss_of = [&](std::optional<double> clip) {
    const LayerPtr loss = RolloutValueLoss(clip);
    return loss->apply({v, targets, mask, old}, loss->weights(), loss->state(), Key(), Mode::eval)
        .outputs[0]
        .item<double>();
  };
  // Unclipped: (1 + 0.25 + 1) / 3 over the three steps (the last is masked).
  CHECK(loss_of(std::nullopt) == doctest::Approx(2.25 / 3));
  // Clip 0.4: V_clipped = old + clip(V - old) = 0.4, 0.4, 0.1; errors (0.4 - 0)^2 = 0.16,
  // (0.4 - 2.5)^2 = 4.41, (0.1 - 1)^2 = 0.81; the max with the unclipped 1, 0.25, 1.
  CHECK(loss_of(0.4) == doctest::Approx((1.0 + 4.41 + 1.0) / 3));
  CHECK_THROWS_WITH_AS(RolloutValueLoss(0.0), doctest::Contains("the clip must be > 0"), Error);
  // Its gradient flows through V only where the chosen error depends on it: a gradient check.
  const LayerPtr clipped = RolloutValueLoss(0.4);
  auto f = [&](const Tensor& x) {
    return clipped->apply({x, targets, mask, old}, clipped->weights(), clipped->state(), Key(), Mode::eval).outputs[0];
  };
  const Tensor v64 = from_vector(std::vector<double>{1.0, 2.0, 0.0, 5.0}, s);
  const GradcheckResult check = gradcheck([&](const std::vector<Tensor>& x) { return f(x[0]); }, {v64});
  CHECK_MESSAGE(check.ok, check.message);
}

TEST_CASE("Rollout passes: PPO trains on every row of its collection each pass and stops early on the KL") {
  RLTaskOptions t = cartpole_task(6, 4);
  t.initial_trajectories = 0;
  auto task = std::make_shared<RLTask>("CartPole-v1", t);
  AgentOptions a;
  a.n_interactions_per_epoch = 64;
  ActorCriticOptions v;
  v.value_model = Value(tanh_mlp(8));
  v.rollout_passes = 3;
  v.minibatch_size = 16;
  PPO agent(task, a, small_policy(), v);
  const Metrics row = agent.run(1);
  // 64 rows in minibatches of 16: 4 steps per pass, 3 passes, for both networks.
  CHECK(agent.policy_trainer().step() == 12);
  CHECK(agent.value_trainer().step() == 12);
  CHECK(row.at("policy/passes_completed") == 3);
  CHECK(row.at("policy/early_stop") == 0);

  auto task2 = std::make_shared<RLTask>("CartPole-v1", t);
  // Any change exceeds this KL. A step's KL is measured in its forward pass, before its update:
  // the first minibatch sees the behaviour policy itself (KL 0), the second the first update's
  // change, and ends the epoch.
  v.target_kl = 1e-9;
  PPO stopped(task2, a, small_policy(), v);
  const Metrics row2 = stopped.run(1);
  CHECK(stopped.policy_trainer().step() == 2);
  CHECK(row2.at("policy/early_stop") == 1);
  CHECK(row2.at("policy/passes_completed") == 0);

  auto refused = [&](ActorCriticOptions o, const char* message) {
    auto other = std::make_shared<RLTask>("CartPole-v1", t);
    CHECK_THROWS_WITH_AS(PPO(other, a, small_policy(), o), doctest::Contains(message), Error);
  };
  ActorCriticOptions o = v;
  o.rollout_passes = 0;
  refused(o, "rollout_passes must be >= 1");
  o = v;
  o.n_shared_layers = 1;
  refused(o, "n_shared_layers must be 0");
  o = v;
  o.on_policy = false;
  refused(o, "on_policy = true");
  o = v;
  o.rollout_passes.reset();
  o.value_clip = 0.2;
  refused(o, "value_clip applies to rollout passes");
  o = v;
  o.target_kl = -1.0;
  refused(o, "target_kl must be > 0");
}
