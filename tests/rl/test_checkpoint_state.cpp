// Checkpoints of the RL data side: Env::checkpoint_state for every built-in environment (under
// TimeLimit and without), the wrappers of rl/environments/wrappers.h, the vector environments, and
// RLTask::export_state/import_state through a real checkpoint directory.
//
// Every "resumes" test has the same shape: play k steps, take the state, play m more steps
// recording everything (observations as raw bytes, rewards as raw doubles, flags, the
// observations of the resets after episode ends), restore the state into a fresh object made
// the same way, play the same m steps and require the same record byte for byte. Small time
// limits make the m steps cross episode boundaries. The bad-input tests check the message and
// that the object is unchanged (its checkpoint state, or the task's whole export, is the same
// before and after).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <ctrax/io/checkpoint.h>
#include <ctrax/rl/environments/cartpole_vector_env.h>
#include <ctrax/rl/environments/env.h>
#include <ctrax/rl/environments/env_registry.h>
#include <ctrax/rl/environments/env_wrapper.h>
#include <ctrax/rl/environments/classic_control/acrobot.h>
#include <ctrax/rl/learning/task.h>
#include <ctrax/rl/environments/time_limit.h>
#include <ctrax/rl/learning/trajectory.h>
#include <ctrax/rl/environments/vector_env.h>
#include <ctrax/rl/environments/wrappers.h>
#include <ctrax/tensor/ops.h>
#include <ctrax/tensor/random.h>

#include "../io/temp_dir.h"

namespace {

using ctrax::CheckpointNotSupported;
using ctrax::CollectOptions;
using ctrax::CollectStats;
using ctrax::DType;
using ctrax::Env;
using ctrax::EnvPtr;
using ctrax::Error;
using ctrax::Key;
using ctrax::PolicyOutput;
using ctrax::RLTask;
using ctrax::RLTaskOptions;
using ctrax::Shape;
using ctrax::Space;
using ctrax::StepResult;
using ctrax::Tensor;
using ctrax::TimeStepBatch;
using ctrax::Trajectory;
using ctrax::VectorEnv;
using ctrax::VectorStep;
using Trace = std::vector<std::string>;

// dtype, shape and raw bytes: equal exactly when the tensors are bit-identical.
std::string bits(const Tensor& t) {
  std::ostringstream out;
  out << ctrax::dtype_name(t.dtype()) << t.shape() << ':';
  const Tensor c = t.contiguous();
  const size_t bytes = static_cast<size_t>(c.numel()) * c.element_size();
  std::string s = out.str();
  if (bytes > 0) s.append(static_cast<const char*>(c.raw_data()), bytes);
  return s;
}

std::string bits(double x) {
  char b[sizeof(double)];
  std::memcpy(b, &x, sizeof b);
  return std::string(b, sizeof b);
}

// The first index where the traces differ, -1 when they are equal.
int64_t first_difference(const Trace& a, const Trace& b) {
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    if (a[i] != b[i]) return static_cast<int64_t>(i);
  return a.size() == b.size() ? -1 : static_cast<int64_t>(std::min(a.size(), b.size()));
}

// Steps `from` to `to` of a random-action loop: action t is sampled from fold_in(key, t); after
// an episode ends the next step resets first (reset() without a seed: the environment's own
// stream). need_reset is the loop's own knowledge, carried across a checkpoint.
void play(Env& env, bool& need_reset, Key key, uint64_t from, uint64_t to, Trace* trace) {
  for (uint64_t t = from; t < to; ++t) {
    if (need_reset) {
      const Tensor obs = env.reset();
      if (trace) trace->push_back("reset " + bits(obs));
      need_reset = false;
    }
    const StepResult r = env.step(env.action_space().sample(fold_in(key, t)));
    if (trace)
      trace->push_back(bits(r.observation) + bits(r.reward) + (r.terminated ? "T" : "-") + (r.truncated ? "t" : "-"));
    need_reset = r.terminated || r.truncated;
  }
}

// Plays k steps in make()'s environment (after reset(seed); k < 0: not even a reset), takes
// its checkpoint state, plays m more, and the same m in a fresh make() restored from the state.
void check_resumes(const std::function<EnvPtr()>& make, int64_t k, uint64_t m, uint64_t seed = 3) {
  const Key key(seed * 7919 + 1);
  EnvPtr original = make();
  bool need_reset = k < 0;
  if (k >= 0) original->reset(seed);
  play(*original, need_reset, key, 0, static_cast<uint64_t>(std::max<int64_t>(k, 0)), nullptr);
  const std::vector<double> state = original->checkpoint_state();
  const bool need_reset_at_checkpoint = need_reset;
  const uint64_t from = static_cast<uint64_t>(std::max<int64_t>(k, 0));
  Trace expected, got;
  play(*original, need_reset, key, from, from + m, &expected);

  EnvPtr resumed = make();
  resumed->restore_checkpoint_state(state);
  CHECK(resumed->checkpoint_state() == state);
  need_reset = need_reset_at_checkpoint;
  play(*resumed, need_reset, key, from, from + m, &got);
  CHECK(first_difference(expected, got) == -1);
  CHECK(resumed->checkpoint_state() == original->checkpoint_state());
}

// An environment without checkpoint support: episodes of `length` steps, the observation is the
// number of steps left.
class Ticker final : public Env {
 public:
  explicit Ticker(int64_t length = 4)
      : length_(length), obs_space_(Space::box(Shape{1}, 0.0, 1e6)), act_space_(Space::discrete(2)) {}
  std::string name() const override { return "Ticker"; }
  const Space& observation_space() const override { return obs_space_; }
  const Space& action_space() const override { return act_space_; }
  Tensor reset(std::optional<uint64_t>) override {
    left_ = length_;
    return observation();
  }
  StepResult step(const Tensor&) override {
    left_ -= 1;
    return StepResult{observation(), 1.0, left_ == 0, false};
  }
  std::vector<double> state() const override { return {static_cast<double>(left_)}; }
  void set_state(const std::vector<double>& s) override { left_ = static_cast<int64_t>(s.at(0)); }
  Tensor observation() const override { return ctrax::full(Shape{1}, static_cast<double>(left_), DType::float32); }

 private:
  int64_t length_;
  int64_t left_ = 0;
  Space obs_space_, act_space_;
};

// A wrapper with state of its own that does not override the checkpoint calls, and one that
// declares it has none.
class CountingWrapper final : public ctrax::EnvWrapper {
 public:
  explicit CountingWrapper(EnvPtr env) : EnvWrapper(std::move(env)) {}
  StepResult step(const Tensor& action) override {
    ++steps_;
    return EnvWrapper::step(action);
  }

 private:
  int64_t steps_ = 0;
};

class PassThrough final : public ctrax::EnvWrapper {
 public:
  explicit PassThrough(EnvPtr env) : EnvWrapper(std::move(env), Stateless{}) {}
};

// A vector environment that does not override the checkpoint calls.
class PlainVectorEnv final : public VectorEnv {
 public:
  PlainVectorEnv() : space_(Space::discrete(2)) {}
  std::string name() const override { return "Plain"; }
  int64_t num_envs() const override { return 1; }
  const Space& single_observation_space() const override { return space_; }
  const Space& single_action_space() const override { return space_; }
  Tensor reset(std::optional<uint64_t>) override { return ctrax::zeros(Shape{1}, DType::int64); }
  const VectorStep& step(const Tensor&) override { return step_; }

 private:
  Space space_;
  VectorStep step_;
};

}  // namespace

// ---- Environments ------------------------------------------------------------------------------

TEST_CASE("Checkpoint state: every built-in environment resumes bit for bit, across episode ends and resets") {
  for (const std::string& name : ctrax::env_names()) {
    CAPTURE(name);
    // Under a short time limit (episodes end every 7 steps at the latest) and without one.
    for (const int64_t limit : {int64_t{7}, int64_t{0}}) {
      CAPTURE(limit);
      const auto make = [name, limit] { return ctrax::make_env(name, limit); };
      // Before any reset, right after the seeded reset, within an episode, on a step that
      // ended one (the checkpoint falls between the end and the next reset), in a later one.
      for (const int64_t k : {int64_t{-1}, int64_t{0}, int64_t{3}, int64_t{7}, int64_t{12}}) {
        CAPTURE(k);
        check_resumes(make, k, 40);
      }
    }
  }
}

TEST_CASE("Checkpoint state: Acrobot with torque noise resumes bit for bit (its per-step key)") {
  ctrax::AcrobotParams params;
  params.torque_noise_max = 0.5;
  const auto make = [params]() -> EnvPtr {
    return std::make_unique<ctrax::TimeLimit>(std::make_unique<ctrax::AcrobotEnv>(params), 6);
  };
  for (const int64_t k : {int64_t{2}, int64_t{6}, int64_t{9}}) check_resumes(make, k, 30);
}

TEST_CASE("Checkpoint state: built-in layout holds the key words, counters and flags") {
  EnvPtr env = ctrax::make_env("CartPole-v1", 5);
  env->reset(0x123456789abcULL);
  env->step(ctrax::scalar_tensor(1.0, DType::int64));
  env->step(ctrax::scalar_tensor(0.0, DType::int64));
  const std::vector<double> s = env->checkpoint_state();
  // TimeLimit: limit, elapsed, truncated; then the environment: key, episodes, episode key,
  // steps, running, ever reset, x, x_dot, theta, theta_dot.
  REQUIRE(s.size() == 3 + 8 + 4);
  CHECK(s[0] == 5);
  CHECK(s[1] == 2);
  CHECK(s[2] == 0);
  CHECK(s[3] == static_cast<double>(0x56789abcU));
  CHECK(s[4] == static_cast<double>(0x1234U));
  CHECK(s[5] == 1);  // one episode drawn
  const Key episode_key = ctrax::fold_in(Key(0x123456789abcULL), 0);
  CHECK(s[6] == static_cast<double>(episode_key.words()[0]));
  CHECK(s[7] == static_cast<double>(episode_key.words()[1]));
  CHECK(s[8] == 2);
  CHECK(s[9] == 1);
  CHECK(s[10] == 1);
  const std::vector<double> physical = env->state();
  CHECK(std::vector<double>(s.begin() + 11, s.end()) == physical);

  // MountainCarContinuous adds whether its state holds float32 values: 0 after a reset, 1 after a step.
  EnvPtr car = ctrax::make_env("MountainCarContinuous-v0", 0);
  car->reset(1);
  CHECK(car->checkpoint_state().back() == 0);
  car->step(ctrax::full(Shape{1}, 0.5, DType::float32));
  CHECK(car->checkpoint_state().back() == 1);
  CHECK(car->checkpoint_state().size() == 8 + 3);
}

TEST_CASE("Checkpoint state: bad environment states throw and change nothing") {
  EnvPtr env = ctrax::make_env("CartPole-v1", 9);
  env->reset(4);
  for (int i = 0; i < 3; ++i) env->step(ctrax::scalar_tensor(1.0, DType::int64));
  const std::vector<double> good = env->checkpoint_state();
  auto bad = [&](const std::function<void(std::vector<double>&)>& edit, const char* message) {
    std::vector<double> s = good;
    edit(s);
    CHECK_THROWS_WITH_AS(env->restore_checkpoint_state(s), doctest::Contains(message), Error);
    CHECK(env->checkpoint_state() == good);
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  bad([](std::vector<double>& s) { s.pop_back(); }, "too few for the environment's state");
  // (The inner environment's messages count from the start of its own part: TimeLimit's three
  // values come first.)
  bad([](std::vector<double>& s) { s.push_back(0.0); }, "CartPole-v1: restore_checkpoint_state: the state has 13 values, expected 12");
  bad([](std::vector<double>& s) { s.clear(); }, "too few for max_episode_steps");
  bad([&](std::vector<double>& s) { s.back() = nan; }, "the environment's state value 3 (index 11) is nan");
  bad([&](std::vector<double>& s) { s[11] = std::numeric_limits<double>::infinity(); }, "expected a finite number");
  bad([](std::vector<double>& s) { s[3] = 4294967296.0; }, "the key (index 0) is 4.29497e+09");
  bad([](std::vector<double>& s) { s[5] = 1.5; }, "the episode count (index 2) is 1.5 (expected a whole number");
  bad([](std::vector<double>& s) { s[5] = -1; }, "expected a whole number in [0, 9007199254740992]");
  bad([](std::vector<double>& s) { s[9] = 2; }, "the running flag (index 6) is 2 (expected a flag, 0 or 1)");
  bad([](std::vector<double>& s) { s[0] = 500; }, "the state is of a time limit of 500 steps, this TimeLimit has "
                                                  "max_episode_steps 9");
  bad([](std::vector<double>& s) { s[1] = 10; }, "elapsed steps (index 1) is 10");
  bad([](std::vector<double>& s) { s[2] = 1; }, "truncated is set exactly when the limit is reached");
  bad([](std::vector<double>& s) { s[9] = 1, s[10] = 0; }, "says an episode is running but none was ever started");

  // Another environment's state.
  EnvPtr pendulum = ctrax::make_env("Pendulum-v1", 9);
  pendulum->reset(1);
  CHECK_THROWS_WITH_AS(env->restore_checkpoint_state(pendulum->checkpoint_state()),
                       doctest::Contains("CartPole-v1: restore_checkpoint_state"), Error);
  CHECK(env->checkpoint_state() == good);
  // Without the TimeLimit, the layout is off by three values.
  EnvPtr bare = ctrax::make_env("CartPole-v1", 0);
  CHECK_THROWS_WITH_AS(bare->restore_checkpoint_state(good), doctest::Contains("CartPole-v1: restore_checkpoint_state"),
                       Error);

  // MountainCarContinuous: its flag, and float32 values when flagged.
  EnvPtr car = ctrax::make_env("MountainCarContinuous-v0", 0);
  car->reset(2);
  car->step(ctrax::full(Shape{1}, 0.25, DType::float32));
  const std::vector<double> car_good = car->checkpoint_state();
  std::vector<double> s = car_good;
  s.back() = 0.5;
  CHECK_THROWS_WITH_AS(car->restore_checkpoint_state(s), doctest::Contains("the float32-state flag is 0.5"), Error);
  s = car_good;
  s[8] = 0.1;  // not a float32 value
  CHECK_THROWS_WITH_AS(car->restore_checkpoint_state(s), doctest::Contains("flagged float32 but does not hold float32"),
                       Error);
  CHECK(car->checkpoint_state() == car_good);
}

TEST_CASE("Checkpoint state: environments without support throw CheckpointNotSupported with a clear message") {
  Ticker ticker;
  CHECK_THROWS_WITH_AS(ticker.checkpoint_state(),
                       doctest::Contains("Ticker: this environment does not support checkpoints; implement "
                                         "checkpoint_state and restore_checkpoint_state (rl/environments/env.h)"),
                       CheckpointNotSupported);
  CHECK_THROWS_AS(ticker.restore_checkpoint_state({}), CheckpointNotSupported);
  // It is a ctrax::Error like any other.
  CHECK_THROWS_AS(ticker.checkpoint_state(), Error);
  // TimeLimit and stateless wrappers pass the inner answer on.
  ctrax::TimeLimit limited(std::make_unique<Ticker>(), 3);
  CHECK_THROWS_AS(limited.checkpoint_state(), CheckpointNotSupported);

  // A wrapper with state of its own that did not implement the calls refuses, rather than
  // forwarding and dropping its state; a Stateless one forwards.
  CountingWrapper counting(ctrax::make_env("CartPole-v1"));
  CHECK_THROWS_WITH_AS(counting.checkpoint_state(),
                       doctest::Contains("a wrapper around this environment does not support checkpoints"),
                       CheckpointNotSupported);
  CHECK_THROWS_AS(counting.restore_checkpoint_state({}), CheckpointNotSupported);
  PassThrough pass(ctrax::make_env("CartPole-v1"));
  pass.reset(5);
  CHECK(pass.checkpoint_state() == pass.inner().checkpoint_state());

  // Vector environments: the default, and a SyncVectorEnv of such copies.
  PlainVectorEnv plain;
  CHECK_THROWS_WITH_AS(plain.checkpoint_state(),
                       doctest::Contains("Plain: this vector environment does not support checkpoints"),
                       CheckpointNotSupported);
  CHECK_THROWS_AS(plain.restore_checkpoint_state({}), CheckpointNotSupported);
  ctrax::SyncVectorEnv tickers([] { return std::make_unique<Ticker>(); }, 2);
  CHECK_THROWS_AS(tickers.checkpoint_state(), CheckpointNotSupported);
  // (kind 1, N 2, never reset, E 1, the last step's 10 values, two empty copy states.)
  CHECK_THROWS_AS(tickers.restore_checkpoint_state({1, 2, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}),
                  CheckpointNotSupported);
}

// ---- Wrappers ----------------------------------------------------------------------------------

TEST_CASE("Checkpoint state: the wrappers resume bit for bit (statistics, returns, episode counts)") {
  // Pendulum: every wrapper at once, truncated episodes of 6 steps.
  const auto pendulum = []() -> EnvPtr {
    EnvPtr env = ctrax::make_env("Pendulum-v1", 6);
    env = std::make_unique<ctrax::RecordEpisodeStatistics>(std::move(env));
    env = std::make_unique<ctrax::NormalizeReward>(std::move(env), 0.9);
    env = std::make_unique<ctrax::NormalizeObservation>(std::move(env));
    env = std::make_unique<ctrax::RescaleAction>(std::move(env), -1.0, 1.0);
    return std::make_unique<ctrax::ClipAction>(std::move(env));
  };
  for (const int64_t k : {int64_t{-1}, int64_t{0}, int64_t{4}, int64_t{6}, int64_t{15}}) {
    CAPTURE(k);
    check_resumes(pendulum, k, 30);
  }
  // CartPole: terminated episodes (NormalizeReward's return restarts on termination).
  const auto cartpole = []() -> EnvPtr {
    EnvPtr env = ctrax::make_env("CartPole-v1", 40);
    env = std::make_unique<ctrax::RecordEpisodeStatistics>(std::move(env));
    env = std::make_unique<ctrax::NormalizeReward>(std::move(env));
    return std::make_unique<ctrax::NormalizeObservation>(std::move(env));
  };
  for (const int64_t k : {int64_t{5}, int64_t{30}}) {
    CAPTURE(k);
    check_resumes(cartpole, k, 60);
  }

  // Each wrapper's own values come back: statistics, the discounted return, the flags, the
  // episode records.
  auto* stats = new ctrax::RecordEpisodeStatistics(ctrax::make_env("CartPole-v1", 4));
  auto* reward = new ctrax::NormalizeReward(EnvPtr(stats), 0.5);
  auto* obs = new ctrax::NormalizeObservation(EnvPtr(reward));
  EnvPtr env(obs);
  env->reset(9);
  for (int i = 0; i < 6; ++i) {
    const StepResult r = env->step(ctrax::scalar_tensor(1.0, DType::int64));
    if (r.terminated || r.truncated) env->reset();
  }
  obs->set_update_running_mean(false);
  reward->set_update_running_mean(false);
  auto* stats2 = new ctrax::RecordEpisodeStatistics(ctrax::make_env("CartPole-v1", 4));
  auto* reward2 = new ctrax::NormalizeReward(EnvPtr(stats2), 0.5);
  auto* obs2 = new ctrax::NormalizeObservation(EnvPtr(reward2));
  EnvPtr env2(obs2);
  env2->restore_checkpoint_state(env->checkpoint_state());
  CHECK_FALSE(obs2->update_running_mean());
  CHECK_FALSE(reward2->update_running_mean());
  CHECK(bits(obs2->statistics().mean()) == bits(obs->statistics().mean()));
  CHECK(bits(obs2->statistics().var()) == bits(obs->statistics().var()));
  CHECK(obs2->statistics().count() == obs->statistics().count());
  CHECK(bits(reward2->discounted_return()) == bits(reward->discounted_return()));
  CHECK(bits(reward2->statistics().var()) == bits(reward->statistics().var()));
  CHECK(stats2->episode_count() == stats->episode_count());
  CHECK(stats2->episode_count() == 1);
  CHECK(stats2->last_episode_return() == stats->last_episode_return());
  CHECK(stats2->last_episode_length() == stats->last_episode_length());
  CHECK(stats2->episode_length() == stats->episode_length());
  CHECK(bits(obs2->observation()) == bits(obs->observation()));
}

TEST_CASE("Checkpoint state: bad wrapper states throw and change nothing") {
  auto* stats = new ctrax::RecordEpisodeStatistics(ctrax::make_env("CartPole-v1", 4));
  auto* obs = new ctrax::NormalizeObservation(EnvPtr(stats));
  EnvPtr env(obs);
  env->reset(1);
  for (int i = 0; i < 3; ++i) env->step(ctrax::scalar_tensor(0.0, DType::int64));
  const std::vector<double> good = env->checkpoint_state();
  // NormalizeObservation: flag, count, mean[4], var[4]; then RecordEpisodeStatistics: return,
  // length, has last, last return, last length, count; then TimeLimit and CartPole.
  auto bad = [&](size_t i, double v, const char* message) {
    std::vector<double> s = good;
    s[i] = v;
    CHECK_THROWS_WITH_AS(env->restore_checkpoint_state(s), doctest::Contains(message), Error);
    CHECK(env->checkpoint_state() == good);
  };
  bad(0, 3, "(NormalizeObservation): restore_checkpoint_state: update_running_mean (index 0) is 3");
  bad(1, 0, "the statistics' count is 0 (expected > 0)");
  bad(3, std::nan(""), "the statistics' mean value 1 (index 3) is nan");
  bad(7, -1, "the statistics' var value 1 is -1 (expected >= 0)");
  bad(11, 2.5, "(RecordEpisodeStatistics): restore_checkpoint_state: the episode length (index 1) is 2.5");
  bad(12, 1, "an episode has finished exactly when the count is > 0");
  // A bad value deep inside (the CartPole state) leaves the wrappers' values alone too.
  bad(good.size() - 1, std::nan(""), "CartPole-v1: restore_checkpoint_state");

  ctrax::NormalizeReward reward(ctrax::make_env("Pendulum-v1"));
  reward.reset(2);
  std::vector<double> s = reward.checkpoint_state();
  s[4] = std::numeric_limits<double>::infinity();  // the discounted return
  CHECK_THROWS_WITH_AS(reward.restore_checkpoint_state(s), doctest::Contains("the discounted return (index 4) is inf"),
                       Error);
}

// ---- Vector environments -----------------------------------------------------------------------

namespace {

void play_vector(VectorEnv& env, Key key, uint64_t from, uint64_t to, Trace* trace) {
  for (uint64_t t = from; t < to; ++t) {
    const VectorStep& s = env.step(env.single_action_space().sample(fold_in(key, t), env.num_envs()));
    if (trace)
      for (const Tensor* x : {&s.observations, &s.final_observations, &s.rewards, &s.terminated, &s.truncated})
        trace->push_back(bits(*x));
  }
}

void check_vector_resumes(const std::function<ctrax::VectorEnvPtr()>& make, int64_t k, uint64_t m) {
  const Key key(77);
  ctrax::VectorEnvPtr original = make();
  if (k >= 0) original->reset(11);
  const uint64_t from = static_cast<uint64_t>(std::max<int64_t>(k, 0));
  play_vector(*original, key, 0, from, nullptr);
  const std::vector<double> state = original->checkpoint_state();
  Trace expected, got;
  if (k < 0) expected.push_back(bits(original->reset()));
  play_vector(*original, key, from, from + m, &expected);

  ctrax::VectorEnvPtr resumed = make();
  resumed->restore_checkpoint_state(state);
  CHECK(resumed->checkpoint_state() == state);
  if (k < 0) got.push_back(bits(resumed->reset()));
  play_vector(*resumed, key, from, from + m, &got);
  CHECK(first_difference(expected, got) == -1);
  CHECK(resumed->checkpoint_state() == original->checkpoint_state());
}

}  // namespace

TEST_CASE("Checkpoint state: the batched CartPole resumes bit for bit across auto-resets") {
  const auto make = [] { return ctrax::make_vector_env("CartPole-v1", 4, 9); };
  REQUIRE(dynamic_cast<ctrax::CartPoleVectorEnv*>(make().get()) != nullptr);
  for (const int64_t k : {int64_t{-1}, int64_t{0}, int64_t{5}, int64_t{9}, int64_t{23}}) {
    CAPTURE(k);
    check_vector_resumes(make, k, 40);
  }
  // Never reset: restored, it still refuses to step.
  ctrax::VectorEnvPtr fresh = make(), restored = make();
  restored->restore_checkpoint_state(fresh->checkpoint_state());
  CHECK_THROWS_WITH_AS(restored->step(ctrax::zeros(Shape{4}, DType::int64)), doctest::Contains("before reset()"),
                       Error);
}

TEST_CASE("Checkpoint state: SyncVectorEnv of Pendulum (with wrappers) resumes bit for bit across auto-resets") {
  const auto make = []() -> ctrax::VectorEnvPtr {
    return std::make_unique<ctrax::SyncVectorEnv>(
        [] { return std::make_unique<ctrax::NormalizeObservation>(ctrax::make_env("Pendulum-v1", 5)); }, 3);
  };
  for (const int64_t k : {int64_t{-1}, int64_t{0}, int64_t{4}, int64_t{5}, int64_t{13}}) {
    CAPTURE(k);
    check_vector_resumes(make, k, 25);
  }
  // make_vector_env's SyncVectorEnv (Acrobot) too.
  check_vector_resumes([] { return ctrax::make_vector_env("Acrobot-v1", 2, 4); }, 6, 15);
}

TEST_CASE("Checkpoint state: bad vector environment states throw and change nothing") {
  ctrax::VectorEnvPtr cartpole = ctrax::make_vector_env("CartPole-v1", 3, 9);
  cartpole->reset(1);
  play_vector(*cartpole, Key(2), 0, 4, nullptr);
  const std::vector<double> good = cartpole->checkpoint_state();
  // kind, N, limit, ever reset, then per copy x, x_dot, theta, theta_dot, elapsed, key, episodes.
  REQUIRE(good.size() == 4 + 3 * 8 + 3 * 4 * 2 + 3 * 3);
  auto bad = [&](VectorEnv& env, const std::vector<double>& before, std::vector<double> s, const char* message) {
    CHECK_THROWS_WITH_AS(env.restore_checkpoint_state(s), doctest::Contains(message), Error);
    CHECK(env.checkpoint_state() == before);
  };
  auto edited = [](std::vector<double> s, size_t i, double v) {
    s[i] = v;
    return s;
  };
  bad(*cartpole, good, edited(good, 1, 4), "the state holds 4 copies, this vector environment has 3");
  bad(*cartpole, good, edited(good, 2, 500), "the state is of a time limit of 500 steps");
  bad(*cartpole, good, edited(good, 4 + 8 + 2, std::nan("")), "copy 1's state value 2 (index 14) is nan");
  bad(*cartpole, good, edited(good, 4 + 4, 9), "copy 0's elapsed steps (index 8) is 9 (expected a whole number in [0, 8])");
  bad(*cartpole, good, edited(good, good.size() - 1, 2), "the last step's truncated flags value 2 is 2");
  bad(*cartpole, good, edited(good, 4 + 24, 0.1), "the last step's observations value 0 is 0.1 (expected a float32");
  bad(*cartpole, good, std::vector<double>(good.begin(), good.end() - 1), "too few for the last step's truncated");

  // A SyncVectorEnv refuses a CartPoleVectorEnv's state by its kind, and a copy's bad state
  // puts the copies before it back.
  ctrax::SyncVectorEnv sync([] { return ctrax::make_env("CartPole-v1", 9); }, 3);
  sync.reset(1);
  play_vector(sync, Key(2), 0, 4, nullptr);
  const std::vector<double> sync_good = sync.checkpoint_state();
  bad(sync, sync_good, good, "the state is of kind 2 (a CartPoleVectorEnv), expected 1 (a SyncVectorEnv)");
  bad(*cartpole, good, sync_good, "the state is of kind 1 (a SyncVectorEnv), expected 2 (a CartPoleVectorEnv)");
  // Layout: kind, N, ever reset, E, the last step (2 N E + 3 N), then per copy its length and state.
  const size_t copies_at = 4 + 2 * 3 * 4 + 3 * 3;
  const auto copy_length = static_cast<size_t>(sync_good[copies_at]);
  const size_t copy2_last = copies_at + 3 * (1 + copy_length) - 1;
  // Copies 0 and 1 take the state of another moment; copy 2's is broken.
  ctrax::SyncVectorEnv other([] { return ctrax::make_env("CartPole-v1", 9); }, 3);
  other.reset(5);
  std::vector<double> mixed = other.checkpoint_state();
  mixed[copy2_last] = std::nan("");
  bad(sync, sync_good, mixed, "restore_checkpoint_state: copy 2: CartPole-v1");
  bad(sync, sync_good, edited(sync_good, copies_at, 1e9), "copy 0's state length");
}

// ---- Trajectories --------------------------------------------------------------------------------

TEST_CASE("Checkpoint state: Trajectory::from_parts rebuilds a trajectory exactly and checks its parts") {
  ctrax::TrajectoryData data;
  data.observations = ctrax::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, Shape{3, 2});
  data.actions = ctrax::from_vector(std::vector<int64_t>{1, 0});
  data.rewards = ctrax::from_vector(std::vector<double>{0.1, 1e-9});
  data.dist_inputs = ctrax::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, Shape{2, 3});
  data.terminated = true;
  const Trajectory t(data, 0.7);
  const Trajectory u = Trajectory::from_parts(t.parts());
  CHECK(u.length() == 2);
  for (const auto& [a, b] : {std::pair{&t.observations(), &u.observations()}, {&t.actions(), &u.actions()},
                             {&t.rewards(), &u.rewards()}, {&t.returns(), &u.returns()},
                             {&t.dist_inputs(), &u.dist_inputs()}, {&t.discount_mask(), &u.discount_mask()}})
    CHECK(bits(*a) == bits(*b));
  CHECK(u.terminated());
  CHECK_FALSE(u.truncated());
  CHECK(bits(u.total_return()) == bits(t.total_return()));
  // The returns are kept as given, not recomputed from the float32 rewards.
  ctrax::TrajectoryParts parts = t.parts();
  parts.returns = ctrax::from_vector(std::vector<float>{7, 8});
  CHECK(Trajectory::from_parts(parts).returns().to_vector<float>() == std::vector<float>{7, 8});

  parts = t.parts();
  parts.rewards = ctrax::from_vector(std::vector<double>{1, 2});
  CHECK_THROWS_WITH_AS(Trajectory::from_parts(parts), doctest::Contains("rewards must be float32 [T] with T = 2, got float64"),
                       Error);
  parts = t.parts();
  parts.discount_mask = Tensor();
  CHECK_THROWS_WITH_AS(Trajectory::from_parts(parts), doctest::Contains("discount_mask must be bool"), Error);
  parts = t.parts();
  parts.actions = ctrax::from_vector(std::vector<int64_t>{1});
  CHECK_THROWS_WITH_AS(Trajectory::from_parts(parts), doctest::Contains("actions must be [T, ...] with T = 2"), Error);
}

// ---- RLTask ---------------------------------------------------------------------------------------

namespace {

// A CartPole policy that depends on the observation and on the key: logits (0, 10 theta +
// theta_dot), actions sampled from them; the logits are the dist_inputs.
ctrax::CollectPolicy cartpole_policy() {
  return [](const Tensor& obs, Key key, double) {
    const int64_t n = obs.shape()[0], k = obs.shape()[1];
    const std::vector<float> o = obs.contiguous().to_vector<float>();
    std::vector<float> logits(static_cast<size_t>(2 * n), 0.0f);
    for (int64_t i = 0; i < n; ++i) logits[2 * i + 1] = 10.0f * o[i * k + 2] + o[i * k + 3];
    const Tensor l = ctrax::from_vector(logits, Shape{n, 2});
    return PolicyOutput{ctrax::categorical(key, l), l};
  };
}

// A Pendulum policy: torque -thdot / 4 plus noise from the key; dist_inputs (mean, log std).
ctrax::CollectPolicy pendulum_policy() {
  return [](const Tensor& obs, Key key, double) {
    const int64_t n = obs.shape()[0];
    const std::vector<float> o = obs.contiguous().to_vector<float>();
    const std::vector<float> noise = ctrax::normal(key, Shape{n}, DType::float32, 0.0, 0.5).to_vector<float>();
    std::vector<float> actions, dist;
    for (int64_t i = 0; i < n; ++i) {
      const float mean = -o[3 * i + 2] / 4;
      actions.push_back(mean + noise[static_cast<size_t>(i)]);
      dist.insert(dist.end(), {mean, -0.7f});
    }
    return PolicyOutput{ctrax::from_vector(actions, Shape{n, 1}), ctrax::from_vector(dist, Shape{n, 2})};
  };
}

CollectOptions trajectories(int64_t n, int64_t epoch, std::optional<int64_t> max_steps = std::nullopt) {
  CollectOptions o;
  o.n_trajectories = n;
  o.epoch = epoch;
  o.max_steps = max_steps;
  return o;
}

CollectOptions interactions(int64_t n, int64_t epoch) {
  CollectOptions o;
  o.n_interactions = n;
  o.epoch = epoch;
  return o;
}

CollectOptions evaluation(int64_t n) {
  CollectOptions o;
  o.n_trajectories = n;
  o.only_eval = true;
  return o;
}

struct Export {
  std::map<std::string, Tensor> tensors;
  ctrax::io::ManifestFields fields;
};

Export export_of(const RLTask& task, const std::string& prefix = "task/") {
  Export e;
  task.export_state(e.tensors, e.fields, prefix);
  return e;
}

// Field by field and tensor by tensor, bit for bit.
void check_same_export(const Export& a, const Export& b) {
  CHECK(a.fields == b.fields);
  REQUIRE(a.tensors.size() == b.tensors.size());
  for (const auto& entry : a.tensors) {
    const std::string& name = entry.first;
    const Tensor& t = entry.second;
    CAPTURE(name);
    REQUIRE(b.tensors.count(name) == 1);
    CHECK(bits(t) == bits(b.tensors.at(name)));
  }
}

void check_same_buffer(const RLTask& a, const RLTask& b) {
  REQUIRE(a.trajectories().size() == b.trajectories().size());
  for (const auto& entry : a.trajectories()) {
    const int64_t epoch = entry.first;
    const std::vector<Trajectory>& pieces = entry.second;
    CAPTURE(epoch);
    REQUIRE(b.trajectories().count(epoch) == 1);
    const std::vector<Trajectory>& other = b.trajectories().at(epoch);
    REQUIRE(pieces.size() == other.size());
    for (size_t i = 0; i < pieces.size(); ++i) {
      CAPTURE(i);
      const Trajectory &x = pieces[i], &y = other[i];
      CHECK(bits(x.observations()) == bits(y.observations()));
      CHECK(bits(x.actions()) == bits(y.actions()));
      CHECK(bits(x.rewards()) == bits(y.rewards()));
      CHECK(bits(x.returns()) == bits(y.returns()));
      CHECK(bits(x.dist_inputs()) == bits(y.dist_inputs()));
      CHECK(bits(x.discount_mask()) == bits(y.discount_mask()));
      CHECK(x.terminated() == y.terminated());
      CHECK(x.truncated() == y.truncated());
      CHECK(bits(x.total_return()) == bits(y.total_return()));
    }
  }
  CHECK(a.n_trajectories() == b.n_trajectories());
  CHECK(a.n_interactions() == b.n_interactions());
  CHECK(a.n_collections() == b.n_collections());
  CHECK(a.n_dist_inputs() == b.n_dist_inputs());
  CHECK(a.n_replay_epochs() == b.n_replay_epochs());
}

void check_same_stats(const CollectStats& a, const CollectStats& b) {
  CHECK(bits(a.mean_return) == bits(b.mean_return));
  CHECK(bits(a.mean_length) == bits(b.mean_length));
  CHECK(a.n_trajectories == b.n_trajectories);
  CHECK(a.n_interactions == b.n_interactions);
}

void check_same_batches(const RLTask& a, const RLTask& b) {
  ctrax::TrajectoryBatchOptions o;
  o.batch_size = 5;
  o.max_slice_length = 4;
  o.margin = 1;
  ctrax::TrajectoryBatchOptions whole;
  whole.batch_size = 3;
  whole.epochs = {-1};
  for (const auto& options : {o, whole})
    for (const int64_t index : {int64_t{0}, int64_t{3}, int64_t{11}}) {
      CAPTURE(index);
      const TimeStepBatch x = a.trajectory_batch(options, index), y = b.trajectory_batch(options, index);
      CHECK(bits(x.observation) == bits(y.observation));
      CHECK(bits(x.action) == bits(y.action));
      CHECK(bits(x.reward) == bits(y.reward));
      CHECK(bits(x.done) == bits(y.done));
      CHECK(bits(x.mask) == bits(y.mask));
      CHECK(bits(x.dist_inputs) == bits(y.dist_inputs));
      CHECK(bits(x.discount_mask) == bits(y.discount_mask));
      CHECK(bits(x.return_) == bits(y.return_));
    }
}

// Saves `e` with a CheckpointDirectory and loads it back.
ctrax::io::Checkpoint round_trip(const ctrax::test::TempDir& dir, const Export& e, int64_t step = 1) {
  ctrax::io::CheckpointDirectory directory(dir.path());
  directory.save(step, e.tensors, e.fields);
  return directory.load(step);
}

RLTaskOptions cartpole_options() {
  RLTaskOptions o;
  o.n_envs = 3;
  o.n_eval_envs = 2;
  o.initial_trajectories = 2;
  o.time_limit = 25;
  o.n_replay_epochs = 2;
  o.key = Key(17);
  return o;
}

}  // namespace

TEST_CASE("Checkpoint state: RLTask resumed from a checkpoint collects exactly what the uninterrupted task does") {
  const ctrax::CollectPolicy policy = cartpole_policy();
  // A: the uninterrupted run.
  RLTask a("CartPole-v1", cartpole_options());
  a.collect_trajectories(policy, trajectories(4, 1));
  const CollectStats a_eval = a.collect_trajectories(policy, evaluation(2));
  const CollectStats a2 = a.collect_trajectories(policy, interactions(37, 2));
  const CollectStats a3 = a.collect_trajectories(policy, trajectories(5, 3, 6));

  // B: the first collection, then a checkpoint through the directory; C continues from it.
  RLTask b("CartPole-v1", cartpole_options());
  b.collect_trajectories(policy, trajectories(4, 1));
  const Export saved = export_of(b);
  CHECK(std::get<bool>(saved.fields.at("task/has_env_state")));
  CHECK(std::get<bool>(saved.fields.at("task/has_eval_env_state")));
  CHECK(saved.tensors.at("task/env_state").dtype() == DType::float64);
  const ctrax::test::TempDir dir;
  const ctrax::io::Checkpoint checkpoint = round_trip(dir, saved);

  RLTask c("CartPole-v1", cartpole_options());
  c.import_state(checkpoint, "task/");
  check_same_export(export_of(c), saved);
  check_same_buffer(b, c);
  check_same_stats(c.collect_trajectories(policy, evaluation(2)), a_eval);
  check_same_stats(c.collect_trajectories(policy, interactions(37, 2)), a2);
  check_same_stats(c.collect_trajectories(policy, trajectories(5, 3, 6)), a3);
  check_same_buffer(a, c);
  check_same_batches(a, c);
  check_same_export(export_of(c), export_of(a));
  // The replay window moved on exactly as A's: epoch 0 (the initial trajectories) is gone.
  CHECK(c.trajectories().count(0) == 0);
  CHECK(c.trajectories().size() == 3);
}

TEST_CASE("Checkpoint state: RLTask over a SyncVectorEnv with wrappers, cuts and truncations resumes exactly") {
  // NormalizeObservation inside the task's TimeLimit; max_steps cuts pieces within episodes.
  const auto make = [] { return std::make_unique<ctrax::NormalizeObservation>(ctrax::make_env("Pendulum-v1", 0)); };
  RLTaskOptions o;
  o.n_envs = 2;
  o.initial_trajectories = 3;
  o.max_steps = 4;
  o.time_limit = 7;
  o.n_replay_epochs = 3;
  o.key = Key(5);
  const ctrax::CollectPolicy policy = pendulum_policy();
  RLTask a(make, o);
  a.collect_trajectories(policy, interactions(9, 1));
  a.collect_trajectories(policy, evaluation(1));
  a.collect_trajectories(policy, trajectories(3, 2));
  a.set_n_replay_epochs(1);
  a.collect_trajectories(policy, interactions(11, 3));

  RLTask b(make, o);
  b.collect_trajectories(policy, interactions(9, 1));
  const ctrax::test::TempDir dir;
  const ctrax::io::Checkpoint checkpoint = round_trip(dir, export_of(b, ""));
  RLTask c(make, o);
  c.import_state(checkpoint, "");  // an empty prefix works as well
  c.collect_trajectories(policy, evaluation(1));
  c.collect_trajectories(policy, trajectories(3, 2));
  c.set_n_replay_epochs(1);
  c.collect_trajectories(policy, interactions(11, 3));
  check_same_buffer(a, c);
  check_same_batches(a, c);
  check_same_export(export_of(c), export_of(a));

  // n_replay_epochs is part of the state: a task that changed it exports the change.
  RLTask d(make, o);
  d.import_state(ctrax::io::CheckpointDirectory(dir.path()).load(1), "");
  CHECK(d.n_replay_epochs() == 3);
  {
    const ctrax::test::TempDir dir2;
    d.import_state(round_trip(dir2, export_of(c, "")), "");
  }
  CHECK(d.n_replay_epochs() == 1);
}

TEST_CASE("Checkpoint state: RLTask without environment support saves the buffer and restarts episodes on resume") {
  RLTaskOptions o;
  o.n_envs = 2;
  o.initial_trajectories = 0;
  o.key = Key(3);
  const auto make = [] { return std::make_unique<Ticker>(4); };
  // Fixed actions; dist_inputs of width 1.
  const ctrax::CollectPolicy policy = [](const Tensor& obs, Key, double) {
    const int64_t n = obs.shape()[0];
    return PolicyOutput{ctrax::zeros(Shape{n}, DType::int64), ctrax::ones(Shape{n, 1}, DType::float32)};
  };
  RLTask b(make, o);
  b.collect_trajectories(policy, interactions(6, 1));  // 3 steps per copy: episodes of 4 left open
  const Export saved = export_of(b);
  CHECK_FALSE(std::get<bool>(saved.fields.at("task/has_env_state")));
  CHECK_FALSE(std::get<bool>(saved.fields.at("task/has_eval_env_state")));
  CHECK(saved.tensors.count("task/env_state") == 0);
  const ctrax::test::TempDir dir;
  const ctrax::io::Checkpoint checkpoint = round_trip(dir, saved);

  RLTask c(make, o);
  c.import_state(checkpoint, "task/");
  check_same_buffer(b, c);
  CHECK(std::get<bool>(export_of(c).fields.at("task/interrupted")));
  // The next collection resets the copies: its pieces are whole episodes of 4 steps from 4
  // steps left, not the 1 step that was left in each open episode.
  c.collect_trajectories(policy, trajectories(2, 2));
  const std::vector<Trajectory>& pieces = c.trajectories().at(2);
  REQUIRE(pieces.size() == 2);
  for (const Trajectory& t : pieces) {
    CHECK(t.length() == 4);
    CHECK(t.observations().to_vector<float>() == std::vector<float>{4, 3, 2, 1, 0});
    CHECK(t.terminated());
  }
  // Reproducible: another import of the same checkpoint gives the same data.
  RLTask d(make, o);
  d.import_state(checkpoint, "task/");
  d.collect_trajectories(policy, trajectories(2, 2));
  check_same_buffer(c, d);
}

TEST_CASE("Checkpoint state: RLTask import_state refuses mismatched or damaged checkpoints and changes nothing") {
  const ctrax::CollectPolicy policy = cartpole_policy();
  RLTask b("CartPole-v1", cartpole_options());
  b.collect_trajectories(policy, trajectories(4, 1));
  const ctrax::test::TempDir dir;
  const ctrax::io::Checkpoint good = round_trip(dir, export_of(b));
  const std::string manifest = good.manifest_path.string();

  // The task to import into has a state of its own, which every failure must leave alone.
  RLTask c("CartPole-v1", cartpole_options());
  c.collect_trajectories(policy, interactions(10, 1));
  const Export before = export_of(c);
  auto refused = [&](const ctrax::io::Checkpoint& checkpoint, const std::string& message) {
    CHECK_THROWS_WITH_AS(c.import_state(checkpoint, "task/"), doctest::Contains(message.c_str()), Error);
    check_same_export(export_of(c), before);
  };
  auto edited = [&](const std::function<void(ctrax::io::Checkpoint&)>& edit) {
    ctrax::io::Checkpoint copy = good;
    edit(copy);
    return copy;
  };

  // Another environment, another N, another key: named with the manifest and the field.
  {
    RLTask acrobot("Acrobot-v1", cartpole_options());
    const std::string message =
        "RLTask::import_state: checkpoint " + manifest + ": field 'task/env_name' is CartPole-v1, this task has Acrobot-v1";
    CHECK_THROWS_WITH_AS(acrobot.import_state(good, "task/"), doctest::Contains(message.c_str()), Error);
    RLTaskOptions o = cartpole_options();
    o.n_envs = 2;
    RLTask two("CartPole-v1", o);
    CHECK_THROWS_WITH_AS(two.import_state(good, "task/"), doctest::Contains("field 'task/n_envs' is 3, this task has 2"),
                         Error);
    o = cartpole_options();
    o.key = Key(18);
    RLTask other_key("CartPole-v1", o);
    CHECK_THROWS_WITH_AS(other_key.import_state(good, "task/"), doctest::Contains("field 'task/key_0' is 17"), Error);
    o = cartpole_options();
    o.gamma = 0.5;
    RLTask other_gamma("CartPole-v1", o);
    CHECK_THROWS_WITH_AS(other_gamma.import_state(good, "task/"), doctest::Contains("field 'task/gamma'"), Error);
  }
  refused(edited([](ctrax::io::Checkpoint& x) { x.fields["task/observation_space"] = std::string("Discrete(4)"); }),
          "field 'task/observation_space' is Discrete(4)");
  // Missing entries.
  refused(edited([](ctrax::io::Checkpoint& x) { x.fields.erase("task/n_collections"); }),
          manifest + ": the checkpoint has no field 'task/n_collections'");
  refused(edited([](ctrax::io::Checkpoint& x) { x.tensors.erase("task/epoch_1/rewards"); }),
          manifest + ": the checkpoint has no tensor 'task/epoch_1/rewards'");
  refused(edited([](ctrax::io::Checkpoint& x) { x.tensors.erase("task/env_state"); }), "has no tensor 'task/env_state'");
  // Wrong shapes, dtypes and values.
  refused(edited([](ctrax::io::Checkpoint& x) { x.tensors["task/epoch_1/returns"] = ctrax::zeros(Shape{1}); }),
          "tensor 'task/epoch_1/returns' is float32 [1], expected float32 [");
  refused(edited([](ctrax::io::Checkpoint& x) {
            x.tensors["task/observations"] = ctrax::zeros(Shape{3, 4}, DType::float64);
          }),
          "tensor 'task/observations' is float64 [3, 4], expected float32 [3, 4]");
  refused(edited([](ctrax::io::Checkpoint& x) {
            Tensor index = x.tensors.at("task/epoch_1/index").clone();
            index.data<int64_t>()[0] = 0;
            x.tensors["task/epoch_1/index"] = index;
          }),
          "tensor 'task/epoch_1/index' row 0 is (T 0");
  refused(edited([](ctrax::io::Checkpoint& x) {
            Tensor index = x.tensors.at("task/epoch_1/index").clone();
            index.data<int64_t>()[1] = 5;
            x.tensors["task/epoch_1/index"] = index;
          }),
          "D 0 or 2 (the task's n_dist_inputs)");
  refused(edited([](ctrax::io::Checkpoint& x) { x.fields["task/n_interactions"] = int64_t{-4}; }),
          "field 'task/n_interactions' is -4 (expected >= 0)");
  refused(edited([](ctrax::io::Checkpoint& x) { x.tensors["task/epochs"] = ctrax::from_vector(std::vector<int64_t>{1, 0}); }),
          "expected epochs >= 0 in ascending order");
  // A bad environment state, for the training and for the eval environment (the training
  // environment, restored first, is put back).
  auto nan_at = [](const std::string& name, size_t i) {
    return [name, i](ctrax::io::Checkpoint& x) {
      Tensor s = x.tensors.at(name).clone();
      s.data<double>()[i] = std::nan("");
      x.tensors[name] = s;
    };
  };
  refused(edited(nan_at("task/env_state", 4)),
          "tensor 'task/env_state': CartPole-v1 (vector of 3): restore_checkpoint_state: copy 0's state value 0 (index 4) "
          "is nan");
  refused(edited(nan_at("task/eval_env_state", 5)), "tensor 'task/eval_env_state': CartPole-v1 (vector of 2)");

  // After all that, the good checkpoint still imports.
  c.import_state(good, "task/");
  check_same_buffer(b, c);
}
