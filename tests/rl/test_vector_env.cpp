// Vector environments: the batched CartPole and Pendulum (BatchedEnv) against N independent
// CartPoleEnv or PendulumEnv + TimeLimit copies, SyncVectorEnv, make_vector_env, auto-reset, seeding, thread
// counts, and the errors for misuse.
//
// The reference for every comparison is a plain loop over N environments made by make_env,
// reset with seed + i and auto-reset by hand with reset() (the semantics vector_env.h
// documents). The batched CartPole calls the same cartpole_step and draws the same initial
// states, so the comparisons are exact: states as doubles, observations as float32 bits.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <array>
#include <cmath>
#include <memory>
#include <optional>
#include <vector>

#include <ctrax/kernels/parallel.h>
#include <ctrax/rl/environments/cartpole_vector_env.h>
#include <ctrax/rl/environments/classic_control/cartpole.h>
#include <ctrax/rl/environments/classic_control/pendulum.h>
#include <ctrax/rl/environments/pendulum_vector_env.h>
#include <ctrax/rl/environments/time_limit.h>
#include <ctrax/rl/environments/env_registry.h>
#include <ctrax/rl/environments/vector_env.h>
#include <ctrax/tensor/random.h>

#include "test_util.h"

namespace {

using ctrax::CartPoleVectorEnv;
using ctrax::DType;
using ctrax::Env;
using ctrax::EnvPtr;
using ctrax::Error;
using ctrax::Key;
using ctrax::PendulumVectorEnv;
using ctrax::Shape;
using ctrax::Space;
using ctrax::SyncVectorEnv;
using ctrax::Tensor;
using ctrax::VectorEnv;
using ctrax::VectorStep;

// N environments stepped by hand with same-step auto-reset: the reference semantics.
struct Reference {
  std::vector<EnvPtr> envs;
  std::vector<std::vector<float>> observations, final_observations;
  std::vector<double> rewards;
  std::vector<bool> terminated, truncated;

  Reference(const std::string& name, int64_t n, std::optional<int64_t> limit) {
    for (int64_t i = 0; i < n; ++i) envs.push_back(ctrax::make_env(name, limit));
    observations.resize(static_cast<size_t>(n));
    final_observations.resize(static_cast<size_t>(n));
    rewards.resize(static_cast<size_t>(n));
    terminated.resize(static_cast<size_t>(n));
    truncated.resize(static_cast<size_t>(n));
  }
  void reset(uint64_t seed) {
    for (size_t i = 0; i < envs.size(); ++i) observations[i] = envs[i]->reset(seed + i).to_vector<float>();
  }
  void step(const std::vector<int64_t>& actions) {
    std::vector<Tensor> rows;
    for (int64_t a : actions) rows.push_back(ctrax::scalar_tensor(static_cast<double>(a), DType::int64));
    step(rows);
  }
  // Copy i takes actions[i] (its action space's shape).
  void step(const std::vector<Tensor>& actions) {
    for (size_t i = 0; i < envs.size(); ++i) {
      const ctrax::StepResult r = envs[i]->step(actions[i]);
      rewards[i] = r.reward;
      terminated[i] = r.terminated;
      truncated[i] = r.truncated;
      observations[i] = r.observation.to_vector<float>();
      if (r.terminated || r.truncated) {
        final_observations[i] = observations[i];
        observations[i] = envs[i]->reset().to_vector<float>();
      }
    }
  }
};

std::vector<float> row(const Tensor& batch, int64_t i) { return batch.select(0, i).to_vector<float>(); }

// Checks one step of a vector environment against the reference, exactly. Counts the flags.
void check_step(const VectorStep& step, const Reference& ref, int64_t& terminations, int64_t& truncations) {
  const auto n = static_cast<int64_t>(ref.envs.size());
  const std::vector<double> rewards = step.rewards.to_vector<double>();
  const std::vector<uint8_t> terminated = step.terminated.to_vector<uint8_t>();
  const std::vector<uint8_t> truncated = step.truncated.to_vector<uint8_t>();
  for (int64_t i = 0; i < n; ++i) {
    const auto k = static_cast<size_t>(i);
    CAPTURE(i);
    CHECK(rewards[k] == ref.rewards[k]);
    CHECK(static_cast<bool>(terminated[k]) == ref.terminated[k]);
    CHECK(static_cast<bool>(truncated[k]) == ref.truncated[k]);
    CHECK(row(step.observations, i) == ref.observations[k]);
    if (ref.terminated[k] || ref.truncated[k]) CHECK(row(step.final_observations, i) == ref.final_observations[k]);
    terminations += ref.terminated[k];
    truncations += ref.truncated[k];
  }
}

std::vector<int64_t> random_actions(uint64_t seed, int64_t n) {
  return ctrax::randint(Key(seed), Shape{n}, 0, 2).to_vector<int64_t>();
}

Tensor actions_tensor(const std::vector<int64_t>& actions) { return ctrax::from_vector(actions); }

}  // namespace

TEST_CASE("CartPoleVectorEnv draws its initial states as CartPoleEnv does, bit for bit") {
  // The batched reset spells out cartpole_initial_state's uniform draw without a tensor; this
  // is the check that the two stay the same.
  constexpr int64_t n = 257;
  CartPoleVectorEnv env(n, 500);
  const uint64_t seed = 0xfeedbeefcafeULL;
  env.reset(seed);
  for (int64_t i = 0; i < n; ++i) {
    const auto expected = ctrax::cartpole_initial_state(ctrax::fold_in(Key(seed + static_cast<uint64_t>(i)), 0));
    CHECK(env.state(i) == std::vector<double>(expected.begin(), expected.end()));
  }
  // A reset without a seed draws each copy's next episode.
  env.reset();
  for (int64_t i = 0; i < n; ++i) {
    const auto expected = ctrax::cartpole_initial_state(ctrax::fold_in(Key(seed + static_cast<uint64_t>(i)), 1));
    CHECK(env.state(i) == std::vector<double>(expected.begin(), expected.end()));
  }
}

TEST_CASE("CartPoleVectorEnv agrees step by step with N CartPoleEnv copies under TimeLimit") {
  constexpr int64_t n = 37, limit = 30;
  CartPoleVectorEnv env(n, limit);
  Reference ref("CartPole-v1", n, limit);
  const Tensor first = env.reset(11);
  ref.reset(11);
  for (int64_t i = 0; i < n; ++i) CHECK(row(first, i) == ref.observations[static_cast<size_t>(i)]);
  int64_t terminations = 0, truncations = 0;
  for (uint64_t t = 0; t < 300; ++t) {
    const std::vector<int64_t> actions = random_actions(1000 + t, n);
    const VectorStep& step = env.step(actions_tensor(actions));
    ref.step(actions);
    check_step(step, ref, terminations, truncations);
    for (int64_t i = 0; i < n; ++i) REQUIRE(env.state(i) == ref.envs[static_cast<size_t>(i)]->state());
  }
  // Both kinds of episode end happened (random actions drop the pole in ~20 steps; some last 30).
  CHECK(terminations > 0);
  CHECK(truncations > 0);
}

TEST_CASE("CartPoleVectorEnv from set states agrees with CartPoleEnv set_state") {
  constexpr int64_t n = 16;
  CartPoleVectorEnv env(n, 500);
  Reference ref("CartPole-v1", n, 500);
  env.reset(3);
  ref.reset(3);
  const std::vector<int64_t> first_actions = random_actions(49, n);
  const VectorStep* last = &env.step(actions_tensor(first_actions));
  ref.step(first_actions);
  // States spread over the region, some right at the termination thresholds.
  const std::vector<double> u = ctrax::uniform(Key(99), Shape{n, 4}, DType::float64, -1.0, 1.0).to_vector<double>();
  for (int64_t i = 0; i < n; ++i) {
    const auto k = static_cast<size_t>(i);
    std::vector<double> state = {2.4 * u[4 * k], 2.0 * u[4 * k + 1], 0.2094 * u[4 * k + 2], 2.0 * u[4 * k + 3]};
    env.set_state(i, state);
    ref.envs[k]->set_state(state);
    CHECK(env.state(i) == state);
    CHECK(env.elapsed_steps(i) == 0);
    // set_state writes the copy's observation row at once.
    CHECK(row(last->observations, i) == ref.envs[k]->observation().to_vector<float>());
  }
  int64_t terminations = 0, truncations = 0;
  for (uint64_t t = 0; t < 40; ++t) {
    const std::vector<int64_t> actions = random_actions(50 + t, n);
    last = &env.step(actions_tensor(actions));
    ref.step(actions);
    check_step(*last, ref, terminations, truncations);
  }
  CHECK(terminations > 0);
}

TEST_CASE("CartPoleVectorEnv auto-reset: truncation at the limit, final observations, new episodes") {
  constexpr int64_t n = 4, limit = 5;
  CartPoleVectorEnv env(n, limit);
  env.reset(21);
  // Alternating pushes keep every pole up for 5 steps: only the limit ends the episodes.
  for (int64_t t = 1; t <= limit; ++t) {
    const VectorStep& step = env.step(actions_tensor(std::vector<int64_t>(n, t % 2)));
    for (int64_t i = 0; i < n; ++i) {
      CAPTURE(i);
      CHECK_FALSE(step.terminated.to_vector<uint8_t>()[static_cast<size_t>(i)]);
      CHECK(static_cast<bool>(step.truncated.to_vector<uint8_t>()[static_cast<size_t>(i)]) == (t == limit));
    }
  }
  const VectorStep& step = env.step(actions_tensor(std::vector<int64_t>(n, 0)));
  CHECK(step.truncated.to_vector<uint8_t>() == std::vector<uint8_t>(n, 0));
  for (int64_t i = 0; i < n; ++i) CHECK(env.elapsed_steps(i) == 1);

  // The episode ends at the limit step: replay copy 0 alone.
  EnvPtr single = ctrax::make_env("CartPole-v1", limit);
  single->reset(21);
  CartPoleVectorEnv again(n, limit);
  again.reset(21);
  ctrax::StepResult r;
  for (int64_t t = 1; t <= limit; ++t) {
    r = single->step(ctrax::scalar_tensor(static_cast<double>(t % 2), DType::int64));
    const VectorStep& s = again.step(actions_tensor(std::vector<int64_t>(n, t % 2)));
    if (t == limit) {
      CHECK(r.truncated);
      CHECK(row(s.final_observations, 0) == r.observation.to_vector<float>());
      // The new episode is the copy's episode 1: its first observation is in observations.
      const auto start = ctrax::cartpole_initial_state(ctrax::fold_in(Key(21), 1));
      CHECK(again.state(0) == std::vector<double>(start.begin(), start.end()));
      CHECK(row(s.observations, 0) == single->reset().to_vector<float>());
    }
  }
}

TEST_CASE("CartPoleVectorEnv sets terminated and truncated together when the pole falls on the last step") {
  // Always pushing right drops copy 0's pole after k steps; with the limit at k, that step is
  // both terminal and the last allowed one.
  EnvPtr single = ctrax::make_env("CartPole-v1", 0);
  single->reset(5);
  int64_t k = 0;
  ctrax::StepResult r;
  do {
    r = single->step(ctrax::scalar_tensor(1.0, DType::int64));
    ++k;
  } while (!r.terminated && k < 1000);
  REQUIRE(r.terminated);
  CartPoleVectorEnv env(3, k);
  env.reset(5);
  for (int64_t t = 1; t <= k; ++t) {
    const VectorStep& step = env.step(actions_tensor({1, 1, 1}));
    if (t < k) continue;
    CHECK(step.terminated.to_vector<uint8_t>()[0] == 1);
    CHECK(step.truncated.to_vector<uint8_t>()[0] == 1);
    CHECK(step.rewards.to_vector<double>()[0] == 1.0);
    CHECK(row(step.final_observations, 0) == r.observation.to_vector<float>());
  }
}

TEST_CASE("CartPoleVectorEnv seeding: reproducible, copy i independent of N") {
  auto run = [](int64_t n, uint64_t seed, int64_t steps) {
    CartPoleVectorEnv env(n, 500);
    std::vector<std::vector<float>> observations;
    observations.push_back(env.reset(seed).to_vector<float>());
    for (int64_t t = 0; t < steps; ++t) {
      std::vector<int64_t> actions = random_actions(7 + static_cast<uint64_t>(t), 10);
      actions.resize(static_cast<size_t>(n));
      observations.push_back(env.step(actions_tensor(actions)).observations.to_vector<float>());
    }
    return observations;
  };
  const auto a = run(10, 42, 60), b = run(10, 42, 60), other = run(10, 43, 60);
  CHECK(a == b);
  CHECK(a[0] != other[0]);
  // The first 3 copies of a batch of 3 are those of a batch of 10.
  const auto small = run(3, 42, 60);
  for (size_t t = 0; t < small.size(); ++t)
    CHECK(small[t] == std::vector<float>(a[t].begin(), a[t].begin() + 12));
  // Reseeding restarts the streams.
  CartPoleVectorEnv env(10, 500);
  env.reset(42);
  for (int t = 0; t < 30; ++t) env.step(actions_tensor(random_actions(static_cast<uint64_t>(t), 10)));
  CHECK(env.reset(42).to_vector<float>() == a[0]);
  // The first reset without a seed counts as seed 0.
  CartPoleVectorEnv unseeded(10, 500);
  CHECK(unseeded.reset().to_vector<float>() == run(10, 0, 0)[0]);
}

TEST_CASE("CartPoleVectorEnv results do not depend on the thread count") {
  ctrax::test::ThreadCountGuard guard;
  constexpr int64_t n = 5000;  // several chunks of the parallel split
  auto run = [](int threads) {
    ctrax::kernels::set_num_threads(threads);
    CartPoleVectorEnv env(n, 50);
    std::vector<std::vector<float>> out;
    env.reset(1);
    for (uint64_t t = 0; t < 80; ++t) {
      const VectorStep& s = env.step(actions_tensor(random_actions(t, n)));
      out.push_back(s.observations.to_vector<float>());
      out.push_back(s.final_observations.to_vector<float>());
      std::vector<float> flags;
      for (uint8_t f : s.terminated.to_vector<uint8_t>()) flags.push_back(f);
      for (uint8_t f : s.truncated.to_vector<uint8_t>()) flags.push_back(f);
      out.push_back(flags);
    }
    return out;
  };
  const auto one = run(1);
  CHECK(run(2) == one);
  CHECK(run(3) == one);
}

TEST_CASE("CartPoleVectorEnv accepts int32 and strided actions") {
  CartPoleVectorEnv a(6, 500), b(6, 500);
  a.reset(8);
  b.reset(8);
  const std::vector<int64_t> actions = {0, 1, 1, 0, 1, 0};
  // Every other element of a [12] int32 tensor.
  std::vector<int32_t> spread(12, 7);
  for (size_t i = 0; i < 6; ++i) spread[2 * i] = static_cast<int32_t>(actions[i]);
  const Tensor strided = ctrax::from_vector(spread).slice(0, 0, 12, 2);
  REQUIRE_FALSE(strided.is_contiguous());
  CHECK(a.step(actions_tensor(actions)).observations.to_vector<float>() ==
        b.step(strided).observations.to_vector<float>());
}

TEST_CASE("CartPoleVectorEnv rejects bad actions and calls, and a bad batch changes nothing") {
  CartPoleVectorEnv env(4, 500);
  CHECK_THROWS_WITH_AS(env.step(actions_tensor({0, 1, 0, 1})), doctest::Contains("before reset()"), Error);
  CHECK_THROWS_WITH_AS(env.set_state(0, {0, 0, 0, 0}), doctest::Contains("before reset()"), Error);
  env.reset(2);
  const std::vector<double> state0 = env.state(0);
  CHECK_THROWS_WITH_AS(env.step(ctrax::from_vector(std::vector<float>{0, 1, 0, 1})), doctest::Contains("dtype float32"),
                       Error);
  CHECK_THROWS_WITH_AS(env.step(ctrax::zeros(Shape{4}, DType::boolean)), doctest::Contains("expected int32 or int64"),
                       Error);
  CHECK_THROWS_WITH_AS(env.step(actions_tensor({0, 1, 0})), doctest::Contains("expected [4]"), Error);
  CHECK_THROWS_WITH_AS(env.step(ctrax::zeros(Shape{4, 1}, DType::int64)), doctest::Contains("expected [4]"), Error);
  CHECK_THROWS_WITH_AS(env.step(ctrax::scalar_tensor(1, DType::int64)), doctest::Contains("expected [4]"), Error);
  CHECK_THROWS_WITH_AS(env.step(Tensor()), doctest::Contains("undefined"), Error);
  CHECK_THROWS_WITH_AS(env.step(actions_tensor({0, 1, 2, 1})), doctest::Contains("actions[2] is 2 (expected 0 or 1)"),
                       Error);
  CHECK_THROWS_WITH_AS(env.step(ctrax::from_vector(std::vector<int32_t>{0, 1, 0, -1})),
                       doctest::Contains("actions[3] is -1"), Error);
  CHECK(env.state(0) == state0);
  CHECK(env.elapsed_steps(0) == 0);

  CHECK_THROWS_WITH_AS(env.state(4), doctest::Contains("copy index 4 is out of range"), Error);
  CHECK_THROWS_WITH_AS(env.elapsed_steps(-1), doctest::Contains("out of range"), Error);
  CHECK_THROWS_WITH_AS(env.set_state(0, {0, 0, 0}), doctest::Contains("expects 4 values, got 3"), Error);
  CHECK_THROWS_WITH_AS(env.set_state(0, {0, 0, std::nan(""), 0}), doctest::Contains("value 2 is nan"), Error);
  CHECK_THROWS_WITH_AS(CartPoleVectorEnv(0, 500), doctest::Contains("num_envs must be >= 1"), Error);
  CHECK_THROWS_WITH_AS(CartPoleVectorEnv(2, -1), doctest::Contains("max_episode_steps must be >= 0"), Error);
}

TEST_CASE("CartPoleVectorEnv without a time limit never truncates") {
  CartPoleVectorEnv env(8, 0);
  env.reset(4);
  // Alternating pushes keep the poles up for a long time; with no limit nothing truncates.
  for (int64_t t = 0; t < 600; ++t) {
    const VectorStep& s = env.step(actions_tensor(std::vector<int64_t>(8, t % 2)));
    REQUIRE(s.truncated.to_vector<uint8_t>() == std::vector<uint8_t>(8, 0));
  }
}

TEST_CASE("SyncVectorEnv agrees with the reference loop and with CartPoleVectorEnv") {
  constexpr int64_t n = 9, limit = 25;
  SyncVectorEnv sync([=] { return ctrax::make_env("CartPole-v1", limit); }, n);
  CartPoleVectorEnv batched(n, limit);
  Reference ref("CartPole-v1", n, limit);
  CHECK(sync.name() == "CartPole-v1");
  CHECK(sync.num_envs() == n);
  CHECK(sync.single_action_space() == Space::discrete(2));
  CHECK(sync.single_observation_space() == batched.single_observation_space());
  CHECK(sync.reset(77).to_vector<float>() == batched.reset(77).to_vector<float>());
  ref.reset(77);
  int64_t terminations = 0, truncations = 0;
  for (uint64_t t = 0; t < 150; ++t) {
    const std::vector<int64_t> actions = random_actions(300 + t, n);
    const VectorStep& s = sync.step(actions_tensor(actions));
    const VectorStep& b = batched.step(actions_tensor(actions));
    ref.step(actions);
    check_step(s, ref, terminations, truncations);
    CHECK(s.observations.to_vector<float>() == b.observations.to_vector<float>());
    CHECK(s.rewards.to_vector<double>() == b.rewards.to_vector<double>());
  }
  CHECK(terminations > 0);
  CHECK(truncations > 0);
}

TEST_CASE("SyncVectorEnv steps Box and three-action environments") {
  SyncVectorEnv pendulum([] { return ctrax::make_env("Pendulum-v1"); }, 3);
  CHECK(pendulum.reset(1).shape() == Shape{3, 3});
  const VectorStep& s = pendulum.step(ctrax::from_vector(std::vector<float>{-1, 0, 2}, Shape{3, 1}));
  CHECK(s.observations.shape() == Shape{3, 3});
  CHECK(s.observations.dtype() == DType::float32);
  CHECK(s.rewards.shape() == Shape{3});
  for (double r : s.rewards.to_vector<double>()) CHECK(r <= 0.0);
  // 200 steps: the registered limit truncates every copy at once.
  const VectorStep* last = &s;
  for (int t = 1; t < 200; ++t) last = &pendulum.step(ctrax::zeros(Shape{3, 1}));
  CHECK(last->truncated.to_vector<uint8_t>() == std::vector<uint8_t>{1, 1, 1});

  SyncVectorEnv car([] { return ctrax::make_env("MountainCar-v0"); }, 2);
  car.reset(0);
  CHECK(car.step(actions_tensor({0, 2})).observations.shape() == Shape{2, 2});
}

namespace {

// Observation space Box float32 [2], but observations of another dtype: a user bug.
class WrongObservationEnv final : public Env {
 public:
  std::string name() const override { return "WrongObservation"; }
  const Space& observation_space() const override { return obs_; }
  const Space& action_space() const override { return act_; }
  Tensor reset(std::optional<uint64_t>) override { return observation(); }
  ctrax::StepResult step(const Tensor&) override { return {observation(), 0.0, false, false}; }
  std::vector<double> state() const override { return {}; }
  void set_state(const std::vector<double>&) override {}
  Tensor observation() const override { return ctrax::zeros(Shape{2}, DType::float64); }

 private:
  Space obs_ = Space::box(Shape{2}, -1.0, 1.0, DType::float32);
  Space act_ = Space::discrete(2);
};

}  // namespace

TEST_CASE("SyncVectorEnv rejects bad factories, actions and observations") {
  CHECK_THROWS_WITH_AS(SyncVectorEnv(std::function<EnvPtr()>(), 2), doctest::Contains("factory is empty"), Error);
  CHECK_THROWS_WITH_AS(SyncVectorEnv([] { return EnvPtr(); }, 2), doctest::Contains("null environment for copy 0"),
                       Error);
  CHECK_THROWS_WITH_AS(SyncVectorEnv([] { return ctrax::make_env("CartPole-v1"); }, 0),
                       doctest::Contains("num_envs must be >= 1"), Error);
  int made = 0;
  CHECK_THROWS_WITH_AS(SyncVectorEnv(
                           [&made] {
                             return ctrax::make_env(made++ == 0 ? "CartPole-v1" : "MountainCar-v0");
                           },
                           2),
                       doctest::Contains("same spaces"), Error);

  SyncVectorEnv env([] { return ctrax::make_env("CartPole-v1"); }, 3);
  CHECK_THROWS_WITH_AS(env.step(actions_tensor({0, 1, 0})), doctest::Contains("before reset()"), Error);
  env.reset(0);
  CHECK_THROWS_WITH_AS(env.step(actions_tensor({0, 1})), doctest::Contains("expected [3"), Error);
  CHECK_THROWS_WITH_AS(env.step(ctrax::scalar_tensor(0, DType::int64)), doctest::Contains("expected [3"), Error);
  CHECK_THROWS_WITH_AS(env.step(Tensor()), doctest::Contains("undefined"), Error);
  CHECK_THROWS_WITH_AS(env.step(actions_tensor({1, 1, 5})), doctest::Contains("actions[2]"), Error);

  SyncVectorEnv wrong([] { return std::make_unique<WrongObservationEnv>(); }, 2);
  CHECK_THROWS_WITH_AS(wrong.reset(0), doctest::Contains("returned an observation of dtype float64"), Error);
}

TEST_CASE("SyncVectorEnv: discrete action errors leave every copy where it was") {
  SyncVectorEnv sync([] { return ctrax::make_env("CartPole-v1"); }, 3);
  CartPoleVectorEnv batched(3, 500);
  sync.reset(6);
  batched.reset(6);
  CHECK_THROWS_AS(sync.step(actions_tensor({1, 1, -1})), Error);
  CHECK(sync.step(actions_tensor({1, 0, 1})).observations.to_vector<float>() ==
        batched.step(actions_tensor({1, 0, 1})).observations.to_vector<float>());
}

TEST_CASE("VectorEnv tensors: reset returns a fresh tensor, steps reuse theirs") {
  CartPoleVectorEnv env(4, 500);
  const Tensor first = env.reset(1);
  const VectorStep& a = env.step(actions_tensor({0, 1, 0, 1}));
  const Tensor observations = a.observations;
  CHECK_FALSE(first.shares_storage_with(a.observations));
  const VectorStep& b = env.step(actions_tensor({0, 1, 0, 1}));
  CHECK(&a == &b);
  CHECK(observations.shares_storage_with(b.observations));
  CHECK(b.observations.shape() == Shape{4, 4});
  CHECK(b.final_observations.shape() == Shape{4, 4});
  CHECK(b.rewards.dtype() == DType::float64);
  CHECK(b.terminated.dtype() == DType::boolean);
  CHECK(b.truncated.shape() == Shape{4});
}

TEST_CASE("make_vector_env picks the batched CartPole with the registered limits, else SyncVectorEnv") {
  const ctrax::VectorEnvPtr v1 = ctrax::make_vector_env("CartPole-v1", 8);
  const auto* cartpole = dynamic_cast<const CartPoleVectorEnv*>(v1.get());
  REQUIRE(cartpole != nullptr);
  CHECK(cartpole->max_episode_steps() == 500);
  CHECK(v1->name() == "CartPole-v1");
  CHECK(v1->num_envs() == 8);
  CHECK(v1->single_observation_space() == ctrax::make_env("CartPole-v1")->observation_space());

  const ctrax::VectorEnvPtr v0 = ctrax::make_vector_env("CartPole-v0", 2);
  CHECK(dynamic_cast<const CartPoleVectorEnv&>(*v0).max_episode_steps() == 200);
  CHECK(v0->name() == "CartPole-v0");
  CHECK(dynamic_cast<const CartPoleVectorEnv&>(*ctrax::make_vector_env("CartPole-v1", 2, 0)).max_episode_steps() == 0);
  CHECK(dynamic_cast<const CartPoleVectorEnv&>(*ctrax::make_vector_env("CartPole-v1", 2, 7)).max_episode_steps() == 7);

  const ctrax::VectorEnvPtr acrobot = ctrax::make_vector_env("Acrobot-v1", 2);
  CHECK(dynamic_cast<const SyncVectorEnv*>(acrobot.get()) != nullptr);
  CHECK(acrobot->single_action_space() == Space::discrete(3));
  CHECK(acrobot->reset(0).shape() == Shape{2, 6});

  CHECK_THROWS_WITH_AS(ctrax::make_vector_env("CartPole-v9", 2), doctest::Contains("unknown environment"), Error);
  CHECK_THROWS_WITH_AS(ctrax::make_vector_env("CartPole-v1", 0), doctest::Contains("num_envs must be >= 1"), Error);
  CHECK_THROWS_WITH_AS(ctrax::make_vector_env("CartPole-v1", 2, -3), doctest::Contains("max_episode_steps"), Error);
}

// ---- The batched Pendulum ------------------------------------------------------------------

namespace {

// Torques for n copies, beyond the bounds too (the dynamics clip them), as [n, 1] float32.
Tensor pendulum_actions(uint64_t seed, int64_t n) {
  return ctrax::uniform(Key(seed), Shape{n, 1}, DType::float32, -3.0, 3.0);
}

std::vector<Tensor> action_rows(const Tensor& actions) {
  std::vector<Tensor> rows;
  for (int64_t i = 0; i < actions.shape()[0]; ++i) rows.push_back(actions.select(0, i).clone());
  return rows;
}

}  // namespace

TEST_CASE("PendulumVectorEnv draws its initial states as PendulumEnv does, bit for bit") {
  constexpr int64_t n = 65;
  PendulumVectorEnv env(n, 200);
  ctrax::PendulumEnv single;
  const uint64_t seed = 0x5eedULL;
  env.reset(seed);
  for (int64_t i = 0; i < n; ++i) {
    single.reset(seed + static_cast<uint64_t>(i));
    CHECK(env.state(i) == single.state());
  }
  env.reset();  // each copy's next episode
  for (int64_t i = 0; i < n; ++i) {
    single.reset(seed + static_cast<uint64_t>(i));
    single.reset();
    CHECK(env.state(i) == single.state());
  }
}

TEST_CASE("PendulumVectorEnv agrees step by step with N PendulumEnv copies under TimeLimit") {
  constexpr int64_t n = 9, limit = 23;
  PendulumVectorEnv env(n, limit);
  Reference ref("Pendulum-v1", n, limit);
  const Tensor first = env.reset(3);
  ref.reset(3);
  for (int64_t i = 0; i < n; ++i) CHECK(row(first, i) == ref.observations[static_cast<size_t>(i)]);
  int64_t terminations = 0, truncations = 0;
  for (uint64_t t = 0; t < 100; ++t) {
    const Tensor actions = pendulum_actions(500 + t, n);
    const VectorStep& step = env.step(actions);
    ref.step(action_rows(actions));
    check_step(step, ref, terminations, truncations);
    for (int64_t i = 0; i < n; ++i) REQUIRE(env.state(i) == ref.envs[static_cast<size_t>(i)]->state());
  }
  CHECK(terminations == 0);  // Pendulum never terminates
  CHECK(truncations == n * (100 / limit));
}

namespace {
// std::sin alone, out of line: next to a cos of the same angle GCC would make it a sincos call.
[[gnu::noinline]] double plain_sin(double x) { return std::sin(x); }
}  // namespace

// The batched Pendulum keeps each observation's sin th for the next step's dynamics: it must be
// std::sin's value exactly, and a cache that describes another angle must not be used.
TEST_CASE("PendulumVectorEnv reuses the observation's sine only for its own angle, with std::sin's bits") {
  const ctrax::PendulumParams params;
  std::vector<double> angles = {0.0, -0.0, 3.141592653589793, -3.141592653589793, 1e-300, 1e6, -7.5e7, 1e15};
  const std::vector<double> drawn =
      ctrax::uniform(Key(17), Shape{20000}, DType::float64, -1e4, 1e4).to_vector<double>();
  angles.insert(angles.end(), drawn.begin(), drawn.end());
  for (const double th : angles) {
    ctrax::PendulumPhysics::Cache cache;
    float row[3];
    ctrax::PendulumPhysics::write_observation(params, {th, 0.5}, cache, row);
    REQUIRE(cache.th == th);
    const double want = plain_sin(th);
    REQUIRE(std::memcmp(&cache.sin_th, &want, sizeof want) == 0);
  }
  // A stale cache (another angle) is ignored; a current one is what the step uses.
  for (const double th : {0.3, -2.0, 40.0}) {
    std::array<double, 2> plain{th, 1.5}, cached{th, 1.5};
    ctrax::PendulumPhysics::Cache stale{th + 1.0, 123.0};
    const auto a = ctrax::pendulum_step(params, plain, 0.7f);
    const auto b = ctrax::PendulumPhysics::step(params, cached, stale, 0.7f);
    CHECK(a.reward == b.reward);
    CHECK(plain == cached);
    std::array<double, 2> wrong{th, 1.5};
    ctrax::PendulumPhysics::Cache current{th, 123.0};  // a current cache is trusted: proof that it is read
    ctrax::PendulumPhysics::step(params, wrong, current, 0.7f);
    CHECK(wrong != plain);
  }
  // Through the environment: set_state between steps, then many steps, against PendulumEnv.
  constexpr int64_t n = 5;
  PendulumVectorEnv env(n, 0);
  env.reset(9);
  std::vector<ctrax::PendulumEnv> singles;
  for (int64_t i = 0; i < n; ++i) {
    singles.emplace_back();
    singles.back().reset(0);
    const std::vector<double> state = {-20.0 + 9.0 * static_cast<double>(i), 0.25 * static_cast<double>(i)};
    env.set_state(i, state);
    singles.back().set_state(state);
  }
  for (uint64_t t = 0; t < 300; ++t) {
    const Tensor actions = pendulum_actions(900 + t, n);
    env.step(actions);
    const std::vector<float> a = actions.to_vector<float>();
    for (int64_t i = 0; i < n; ++i) {
      singles[static_cast<size_t>(i)].step(ctrax::from_vector(std::vector<float>{a[static_cast<size_t>(i)]}, Shape{1}));
      REQUIRE(env.state(i) == singles[static_cast<size_t>(i)].state());
    }
  }
}

TEST_CASE("make_vector_env gives Pendulum-v1 its batched version, with the registered limit") {
  const ctrax::VectorEnvPtr env = ctrax::make_vector_env("Pendulum-v1", 3);
  const auto* batched = dynamic_cast<const PendulumVectorEnv*>(env.get());
  REQUIRE(batched != nullptr);
  CHECK(batched->max_episode_steps() == 200);
  CHECK(env->single_observation_space().shape() == Shape{3});
  CHECK(env->single_action_space().shape() == Shape{1});
}

TEST_CASE("PendulumVectorEnv accepts float64 and strided actions and clips torques as PendulumEnv does") {
  PendulumVectorEnv a(4, 200), b(4, 200), c(4, 200);
  a.reset(1);
  b.reset(1);
  c.reset(1);
  const Tensor f32 = ctrax::from_vector(std::vector<float>{0.5f, -1.0f, 2.0f, -2.0f}, Shape{4, 1});
  // The same values as float64, as a strided column of a [4, 2] tensor, and beyond the bounds.
  const Tensor wide = ctrax::from_vector(std::vector<double>{0.5, 9, -1.0, 9, 2.0, 9, -2.0, 9}, Shape{4, 2});
  const Tensor strided = wide.slice(1, 0, 1);
  REQUIRE_FALSE(strided.is_contiguous());
  const Tensor beyond = ctrax::from_vector(std::vector<float>{0.5f, -1.0f, 1e30f, -3.0f}, Shape{4, 1});
  const std::vector<float> expected = a.step(f32).observations.to_vector<float>();
  CHECK(b.step(strided).observations.to_vector<float>() == expected);
  CHECK(c.step(beyond).observations.to_vector<float>() == expected);
}

TEST_CASE("PendulumVectorEnv rejects bad actions and calls, and a bad batch changes nothing") {
  PendulumVectorEnv env(4, 200);
  const Tensor good = ctrax::zeros(Shape{4, 1});
  CHECK_THROWS_WITH_AS(env.step(good), doctest::Contains("before reset()"), Error);
  env.reset(2);
  const std::vector<double> state2 = env.state(2);
  CHECK_THROWS_WITH_AS(env.step(ctrax::zeros(Shape{4, 1}, DType::int64)),
                       doctest::Contains("expected float32 or float64"), Error);
  CHECK_THROWS_WITH_AS(env.step(ctrax::zeros(Shape{4})), doctest::Contains("expected [4, 1]"), Error);
  CHECK_THROWS_WITH_AS(env.step(ctrax::zeros(Shape{3, 1})), doctest::Contains("expected [4, 1]"), Error);
  CHECK_THROWS_WITH_AS(env.step(Tensor()), doctest::Contains("undefined"), Error);
  const Tensor nan_row = ctrax::from_vector(std::vector<float>{0, 0, std::nanf(""), 0}, Shape{4, 1});
  CHECK_THROWS_WITH_AS(env.step(nan_row), doctest::Contains("actions[2] is nan (expected a finite number)"), Error);
  const Tensor inf_row = ctrax::from_vector(std::vector<double>{0, 0, 0, -INFINITY}, Shape{4, 1});
  CHECK_THROWS_WITH_AS(env.step(inf_row), doctest::Contains("actions[3] is -inf"), Error);
  CHECK(env.state(2) == state2);
  CHECK(env.elapsed_steps(2) == 0);
  CHECK_THROWS_WITH_AS(env.set_state(0, {0, 0, 0}), doctest::Contains("expects 2 values, got 3"), Error);
  CHECK_THROWS_WITH_AS(PendulumVectorEnv(0, 200), doctest::Contains("PendulumVectorEnv: num_envs must be >= 1"), Error);
}

TEST_CASE("PendulumVectorEnv checkpoints: a restored copy continues bit for bit, another kind is refused") {
  constexpr int64_t n = 5, limit = 17;
  PendulumVectorEnv env(n, limit);
  env.reset(8);
  for (uint64_t t = 0; t < 30; ++t) env.step(pendulum_actions(t, n));
  const std::vector<double> saved = env.checkpoint_state();
  CHECK(saved.front() == 3.0);
  PendulumVectorEnv restored(n, limit);
  restored.restore_checkpoint_state(saved);
  for (uint64_t t = 30; t < 60; ++t) {
    const Tensor actions = pendulum_actions(t, n);
    const VectorStep& x = env.step(actions);
    const VectorStep& y = restored.step(actions);
    REQUIRE(x.observations.to_vector<float>() == y.observations.to_vector<float>());
    REQUIRE(x.rewards.to_vector<double>() == y.rewards.to_vector<double>());
    REQUIRE(x.truncated.to_vector<uint8_t>() == y.truncated.to_vector<uint8_t>());
  }
  CartPoleVectorEnv cartpole(n, limit);
  CHECK_THROWS_WITH_AS(cartpole.restore_checkpoint_state(saved),
                       doctest::Contains("the state is of kind 3 (a PendulumVectorEnv), expected 2 (a CartPoleVectorEnv)"),
                       Error);
  PendulumVectorEnv other_limit(n, limit + 1);
  CHECK_THROWS_WITH_AS(other_limit.restore_checkpoint_state(saved), doctest::Contains("time limit of 17"), Error);
}
