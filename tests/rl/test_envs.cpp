// The built-in environments (rl/environments/classic_control/, make_env) against Gymnasium, and the episode rules.
//
// Fixture: tests/fixtures/gymnasium_envs.json, written by tests/fixtures/gymnasium_envs.py (run
// by hand with pip-installed gymnasium). Each recorded episode is replayed twice:
//   - whole: from the recorded initial internal state (set_state), through the environment as
//     make_env builds it (with the recorded time limit), comparing every step's observation,
//     reward and internal state to 1e-6 and the two flags exactly;
//   - step by step: from each recorded internal state, one step, so a difference shows at the
//     step that causes it rather than wherever it has grown past the tolerance.
// The remaining tests check what the fixture cannot: Gymnasium's spaces and registered limits,
// reset distributions, seeding, and the errors for misuse.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <numbers>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include <ctrax/rl/environments/env.h>
#include <ctrax/rl/environments/env_registry.h>
#include <ctrax/rl/environments/classic_control/acrobot.h>
#include <ctrax/rl/environments/classic_control/cartpole.h>
#include <ctrax/rl/environments/classic_control/mountain_car_continuous.h>
#include <ctrax/rl/environments/time_limit.h>

namespace {

using ctrax::DType;
using ctrax::EnvPtr;
using ctrax::Error;
using ctrax::Shape;
using ctrax::Space;
using ctrax::StepResult;
using ctrax::Tensor;
using nlohmann::json;

constexpr double kTolerance = 1e-6;
constexpr double kInf = std::numeric_limits<double>::infinity();

const json& fixture() {
  static const json doc = [] {
    std::ifstream in(CTRAX_FIXTURES_DIR "/gymnasium_envs.json");
    if (!in) return json();
    return json::parse(in, nullptr, /*allow_exceptions=*/false);
  }();
  return doc;
}

Tensor action_tensor(const Space& space, const json& action) {
  if (space.kind() == Space::Kind::discrete) return ctrax::scalar_tensor(action.get<double>(), DType::int64);
  return ctrax::from_vector(action.get<std::vector<double>>()).to(DType::float32);
}

// The first index where |a - b| > tolerance (Gymnasium's float32 observations are compared
// after rounding the recorded values back to float32), or -1.
int mismatch(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(std::abs(a[i] - b[i]) <= kTolerance)) return static_cast<int>(i);
  return -1;
}

std::vector<double> as_float32(std::vector<double> values) {
  for (double& v : values) v = static_cast<float>(v);
  return values;
}

std::optional<int64_t> recorded_limit(const json& episode) {
  if (episode["max_episode_steps"].is_null()) return std::nullopt;
  return episode["max_episode_steps"].get<int64_t>();
}

Tensor i64(int64_t v) { return ctrax::scalar_tensor(static_cast<double>(v), DType::int64); }
Tensor f32(std::vector<double> values) { return ctrax::from_vector(values).to(DType::float32); }

// A linear balancing rule (the fixture script's): keeps CartPole up for hundreds of steps.
int64_t balance(const std::vector<double>& s) { return 10 * s[2] + 2 * s[3] + 0.3 * s[0] + s[1] > 0 ? 1 : 0; }

}  // namespace

TEST_CASE("Built-in environments replay Gymnasium's recorded episodes") {
  REQUIRE_MESSAGE(fixture().contains("episodes"), "missing or unreadable fixture gymnasium_envs.json");
  std::set<std::string> covered;
  int n_episodes = 0;
  for (const json& e : fixture()["episodes"]) {
    const std::string name = e["env"].get<std::string>();
    const std::string how = e["how"].get<std::string>();
    CAPTURE(name);
    CAPTURE(how);
    covered.insert(name);
    ++n_episodes;
    EnvPtr env = ctrax::make_env(name, recorded_limit(e));
    env->reset(0);
    env->set_state(e["initial_state"].get<std::vector<double>>());
    CHECK(env->state() == e["initial_state"].get<std::vector<double>>());
    CHECK(mismatch(env->observation().to_vector<double>(), as_float32(e["initial_observation"].get<std::vector<double>>())) == -1);

    const json& actions = e["actions"];
    REQUIRE(actions.size() >= 1);
    for (size_t t = 0; t < actions.size(); ++t) {
      CAPTURE(t);
      const StepResult r = env->step(action_tensor(env->action_space(), actions[t]));
      const int obs_bad = mismatch(r.observation.to_vector<double>(), as_float32(e["observations"][t].get<std::vector<double>>()));
      const int state_bad = mismatch(env->state(), e["states"][t].get<std::vector<double>>());
      const bool reward_ok = std::abs(r.reward - e["rewards"][t].get<double>()) <= kTolerance;
      const bool flags_ok =
          r.terminated == e["terminated"][t].get<bool>() && r.truncated == e["truncated"][t].get<bool>();
      CHECK(r.observation.dtype() == DType::float32);
      CHECK(obs_bad == -1);
      CHECK(state_bad == -1);
      CHECK(reward_ok);
      CHECK(flags_ok);
      if (obs_bad != -1 || state_bad != -1 || !reward_ok || !flags_ok) break;  // report the first step only
    }
  }
  CHECK(n_episodes >= 10);
  const std::vector<std::string> names = ctrax::env_names();
  CHECK(covered == std::set<std::string>(names.begin(), names.end()));
}

TEST_CASE("Built-in environments match Gymnasium one step at a time from each recorded state") {
  REQUIRE_MESSAGE(fixture().contains("episodes"), "missing or unreadable fixture gymnasium_envs.json");
  for (const json& e : fixture()["episodes"]) {
    const std::string name = e["env"].get<std::string>();
    CAPTURE(name);
    CAPTURE(e["how"].get<std::string>());
    EnvPtr env = ctrax::make_env(name, 0);  // no time limit: set_state would restart its count
    env->reset(0);
    const json& actions = e["actions"];
    for (size_t t = 0; t < actions.size(); ++t) {
      CAPTURE(t);
      env->set_state((t == 0 ? e["initial_state"] : e["states"][t - 1]).get<std::vector<double>>());
      const StepResult r = env->step(action_tensor(env->action_space(), actions[t]));
      const bool ok = mismatch(r.observation.to_vector<double>(), as_float32(e["observations"][t].get<std::vector<double>>())) == -1 &&
                      mismatch(env->state(), e["states"][t].get<std::vector<double>>()) == -1 &&
                      std::abs(r.reward - e["rewards"][t].get<double>()) <= kTolerance &&
                      r.terminated == e["terminated"][t].get<bool>() && !r.truncated;
      CHECK(ok);
      if (!ok) break;
    }
  }
}

TEST_CASE("make_env knows Gymnasium's ids and registered time limits") {
  const std::vector<std::string> expected = {"Acrobot-v1",     "CartPole-v0",
                                             "CartPole-v1",    "MountainCar-v0",
                                             "MountainCarContinuous-v0", "Pendulum-v1"};
  CHECK(ctrax::env_names() == expected);
  const std::vector<int64_t> limits = {500, 200, 500, 200, 999, 200};
  for (size_t i = 0; i < expected.size(); ++i) {
    CAPTURE(expected[i]);
    EnvPtr env = ctrax::make_env(expected[i]);
    CHECK(env->name() == expected[i]);
    auto* limited = dynamic_cast<ctrax::TimeLimit*>(env.get());
    REQUIRE(limited != nullptr);
    CHECK(limited->max_episode_steps() == limits[i]);
    CHECK(dynamic_cast<ctrax::TimeLimit*>(ctrax::make_env(expected[i], 0).get()) == nullptr);
    const EnvPtr seven = ctrax::make_env(expected[i], 7);
    auto* overridden = dynamic_cast<ctrax::TimeLimit*>(seven.get());
    REQUIRE(overridden != nullptr);
    CHECK(overridden->max_episode_steps() == 7);
  }
  CHECK_THROWS_WITH_AS(ctrax::make_env("CartPole-v2"),
                       doctest::Contains("unknown environment \"CartPole-v2\" (known: Acrobot-v1, CartPole-v0, "
                                         "CartPole-v1, MountainCar-v0, MountainCarContinuous-v0, Pendulum-v1"),
                       Error);
  CHECK_THROWS_WITH_AS(ctrax::make_env("CartPole-v1", -1), doctest::Contains("max_episode_steps must be >= 0 (0: no limit), got -1"),
                       Error);
}

TEST_CASE("Built-in environments have Gymnasium's spaces") {
  const double pi = std::numbers::pi;
  const double theta2 = 12 * 2 * pi / 360 * 2;
  CHECK(ctrax::make_env("CartPole-v1")->observation_space() ==
        Space::box(f32({-4.8, -kInf, -theta2, -kInf}), f32({4.8, kInf, theta2, kInf})));
  CHECK(ctrax::make_env("CartPole-v0")->action_space() == Space::discrete(2));
  CHECK(ctrax::make_env("Acrobot-v1")->observation_space() ==
        Space::box(f32({-1, -1, -1, -1, -4 * pi, -9 * pi}), f32({1, 1, 1, 1, 4 * pi, 9 * pi})));
  CHECK(ctrax::make_env("Acrobot-v1")->action_space() == Space::discrete(3));
  CHECK(ctrax::make_env("MountainCar-v0")->observation_space() == Space::box(f32({-1.2, -0.07}), f32({0.6, 0.07})));
  CHECK(ctrax::make_env("MountainCar-v0")->action_space() == Space::discrete(3));
  CHECK(ctrax::make_env("MountainCarContinuous-v0")->observation_space() ==
        Space::box(f32({-1.2, -0.07}), f32({0.6, 0.07})));
  CHECK(ctrax::make_env("MountainCarContinuous-v0")->action_space() == Space::box(Shape{1}, -1.0, 1.0));
  CHECK(ctrax::make_env("Pendulum-v1")->observation_space() == Space::box(f32({-1, -1, -8}), f32({1, 1, 8})));
  CHECK(ctrax::make_env("Pendulum-v1")->action_space() == Space::box(Shape{1}, -2.0, 2.0));
  // Observations are float32 vectors, in the observation space after a reset.
  for (const std::string& name : ctrax::env_names()) {
    CAPTURE(name);
    EnvPtr env = ctrax::make_env(name);
    const Tensor obs = env->reset(1);
    CHECK(obs.dtype() == DType::float32);
    CHECK(env->observation_space().contains(obs));
  }
}

TEST_CASE("Reset distributions are Gymnasium's ranges") {
  struct Range {
    std::string env;
    std::vector<double> lo, hi;  // lo == hi: that value exactly
  };
  const double pi = std::numbers::pi;
  const std::vector<Range> ranges = {
      {"CartPole-v1", {-0.05, -0.05, -0.05, -0.05}, {0.05, 0.05, 0.05, 0.05}},
      {"Acrobot-v1", {-0.1, -0.1, -0.1, -0.1}, {0.1, 0.1, 0.1, 0.1}},
      {"MountainCar-v0", {-0.6, 0.0}, {-0.4, 0.0}},
      {"MountainCarContinuous-v0", {-0.6, 0.0}, {-0.4, 0.0}},
      {"Pendulum-v1", {-pi, -1.0}, {pi, 1.0}},
  };
  for (const Range& range : ranges) {
    CAPTURE(range.env);
    EnvPtr env = ctrax::make_env(range.env);
    env->reset(123);
    const size_t k = range.lo.size();
    std::vector<double> lowest(k, kInf), highest(k, -kInf);
    for (int episode = 0; episode < 400; ++episode) {
      const Tensor obs = env->reset();
      const std::vector<double> s = env->state();
      REQUIRE(s.size() == k);
      CHECK(obs.to_vector<float>() == env->observation().to_vector<float>());
      for (size_t i = 0; i < k; ++i) {
        lowest[i] = std::min(lowest[i], s[i]);
        highest[i] = std::max(highest[i], s[i]);
        if (range.env == "Acrobot-v1") CHECK(s[i] == static_cast<double>(static_cast<float>(s[i])));
      }
    }
    for (size_t i = 0; i < k; ++i) {
      CAPTURE(i);
      const double width = range.hi[i] - range.lo[i];
      CHECK(lowest[i] >= range.lo[i]);
      CHECK(highest[i] <= range.hi[i]);
      // 400 uniform draws cover all but the outer 2% of the range at either end.
      CHECK(lowest[i] <= range.lo[i] + 0.02 * width);
      CHECK(highest[i] >= range.hi[i] - 0.02 * width);
    }
  }
}

TEST_CASE("Seeding: reset(seed) reproduces, later resets continue, never seeded means seed 0") {
  for (const std::string& name : ctrax::env_names()) {
    CAPTURE(name);
    EnvPtr a = ctrax::make_env(name), b = ctrax::make_env(name);
    a->reset(7);
    const std::vector<double> first = a->state();
    a->reset();
    const std::vector<double> second = a->state();
    CHECK(first != second);
    a->reset(7);
    CHECK(a->state() == first);
    a->reset();
    CHECK(a->state() == second);
    b->reset(8);
    CHECK(b->state() != first);
    // Never seeded: the first reset is that of seed 0.
    EnvPtr fresh = ctrax::make_env(name), seeded = ctrax::make_env(name);
    fresh->reset();
    seeded->reset(0);
    CHECK(fresh->state() == seeded->state());
  }
}

TEST_CASE("CartPole-v0 truncates at 200 steps, CartPole-v1 at 500") {
  for (const auto& [id, max_steps] : std::vector<std::pair<std::string, int>>{{"CartPole-v0", 200}, {"CartPole-v1", 500}}) {
    const std::string name = id;
    const int limit = max_steps;
    CAPTURE(name);
    EnvPtr env = ctrax::make_env(name);
    env->reset(3);
    int steps = 0;
    StepResult r;
    do {
      r = env->step(i64(balance(env->state())));
      ++steps;
      CHECK(r.reward == 1.0);
      if (steps < limit) CHECK_FALSE(r.truncated);
    } while (!r.terminated && !r.truncated);
    CHECK(steps == limit);
    CHECK(r.truncated);
    CHECK_FALSE(r.terminated);
    CHECK_THROWS_WITH_AS(env->step(i64(0)),
                         doctest::Contains(("truncated at the time limit of " + std::to_string(limit) + " steps").c_str()),
                         Error);
    env->reset();
    CHECK_NOTHROW(env->step(i64(0)));
  }
}

TEST_CASE("CartPole terminates past 2.4 or 12 degrees with reward 1, and both flags can be set at once") {
  const std::vector<double> near_edge = {2.3, 1.0, 0.01, -0.02};
  // How many pushes to the right end the episode (the cart leaves the track).
  EnvPtr free = ctrax::make_env("CartPole-v1", 0);
  free->reset(0);
  free->set_state(near_edge);
  int n = 0;
  StepResult r;
  do {
    r = free->step(i64(1));
    ++n;
  } while (!r.terminated && n < 100);
  REQUIRE(r.terminated);
  CHECK(r.reward == 1.0);
  CHECK(free->state()[0] > 2.4);
  CHECK_THROWS_WITH_AS(free->step(i64(1)), doctest::Contains("CartPole-v1: step called after the episode terminated"),
                       Error);

  // With the limit at exactly that step, the last step is both terminated and truncated.
  EnvPtr both = ctrax::make_env("CartPole-v1", n);
  both->reset(0);
  both->set_state(near_edge);
  for (int i = 1; i <= n; ++i) {
    r = both->step(i64(1));
    CHECK(r.terminated == (i == n));
    CHECK(r.truncated == (i == n));
  }
  // One step earlier, only truncated.
  EnvPtr early = ctrax::make_env("CartPole-v1", n - 1);
  early->reset(0);
  early->set_state(near_edge);
  for (int i = 1; i < n; ++i) r = early->step(i64(1));
  CHECK(r.truncated);
  CHECK_FALSE(r.terminated);

  // The angle threshold: a pole already past 12 degrees and falling ends the next step.
  free->set_state({0.0, 0.0, 0.2, 1.0});
  r = free->step(i64(0));
  CHECK(r.terminated);
  CHECK(r.reward == 1.0);
  CHECK(r.observation.to_vector<float>()[2] > 0.2094f);
}

TEST_CASE("Stepping before reset or after termination throws, naming the environment") {
  for (const std::string& name : ctrax::env_names()) {
    CAPTURE(name);
    EnvPtr env = ctrax::make_env(name);
    const Tensor action = env->action_space().sample(ctrax::Key(0));
    CHECK_THROWS_WITH_AS(env->step(action), doctest::Contains((name + ": step called before reset()").c_str()), Error);
    env->set_state(env->state());  // set_state starts an episode too
    CHECK_NOTHROW(env->step(action));
  }
  EnvPtr env = ctrax::make_env("MountainCar-v0");
  env->reset(0);
  env->set_state({0.49, 0.05});  // one step from the flag
  const StepResult r = env->step(i64(2));
  CHECK(r.terminated);
  CHECK(r.reward == -1.0);
  CHECK_THROWS_WITH_AS(env->step(i64(2)), doctest::Contains("MountainCar-v0: step called after the episode terminated"),
                       Error);
  env->reset();
  CHECK_NOTHROW(env->step(i64(2)));
}

TEST_CASE("Discrete actions: int32 or int64, one element, in range") {
  EnvPtr env = ctrax::make_env("CartPole-v1");
  env->reset(0);
  CHECK_NOTHROW(env->step(ctrax::scalar_tensor(1, DType::int32)));
  CHECK_NOTHROW(env->step(ctrax::tensor<int64_t>({0})));  // a one-element tensor
  CHECK_THROWS_WITH_AS(env->step(i64(2)), doctest::Contains("action 2 is out of range (expected 0 <= action < 2)"),
                       Error);
  CHECK_THROWS_WITH_AS(env->step(i64(-1)), doctest::Contains("action -1 is out of range"), Error);
  CHECK_THROWS_WITH_AS(env->step(ctrax::scalar_tensor(1.0, DType::float32)),
                       doctest::Contains("the action has dtype float32 (expected int32 or int64"), Error);
  CHECK_THROWS_WITH_AS(env->step(ctrax::scalar_tensor(1.0, DType::boolean)), doctest::Contains("dtype bool"), Error);
  CHECK_THROWS_WITH_AS(env->step(ctrax::tensor<int64_t>({0, 1})),
                       doctest::Contains("the action has shape [2] (expected one integer"), Error);
  CHECK_THROWS_WITH_AS(env->step(Tensor()), doctest::Contains("the action is an undefined tensor"), Error);
  // A refused action leaves the episode where it was.
  const std::vector<double> before = env->state();
  CHECK_THROWS_AS(env->step(i64(5)), Error);
  CHECK(env->state() == before);
}

TEST_CASE("Box actions: float of the action shape and finite, and out-of-range values are clipped as in Gymnasium") {
  EnvPtr env = ctrax::make_env("Pendulum-v1", 0);
  env->reset(0);
  CHECK_THROWS_WITH_AS(env->step(ctrax::tensor<int64_t>({1})),
                       doctest::Contains("Pendulum-v1: the action has dtype int64 (expected float32 or float64"), Error);
  CHECK_THROWS_WITH_AS(env->step(ctrax::scalar_tensor(1.0)), doctest::Contains("the action has shape [] (expected [1])"),
                       Error);
  CHECK_THROWS_WITH_AS(env->step(f32({1.0, 1.0})), doctest::Contains("the action has shape [2] (expected [1])"), Error);
  CHECK_THROWS_WITH_AS(env->step(f32({std::nan("")})), doctest::Contains("(expected a finite number)"), Error);
  CHECK_THROWS_WITH_AS(env->step(ctrax::tensor<double>({kInf})), doctest::Contains("(expected a finite number)"),
                       Error);
  CHECK_THROWS_WITH_AS(env->step(Tensor()), doctest::Contains("undefined"), Error);

  // Pendulum clips the torque to 2 before it enters both the dynamics and the cost.
  const std::vector<double> start = {1.0, 0.5};
  env->set_state(start);
  const StepResult at_bound = env->step(f32({2.0}));
  const std::vector<double> after_bound = env->state();
  env->set_state(start);
  const StepResult beyond = env->step(ctrax::tensor<double>({5.0}));  // float64 accepted
  CHECK(env->state() == after_bound);
  CHECK(beyond.reward == at_bound.reward);

  // MountainCarContinuous clips the force, but its action cost uses the action as given.
  EnvPtr car = ctrax::make_env("MountainCarContinuous-v0", 0);
  car->reset(0);
  car->set_state({-0.5, 0.01});
  const StepResult some = car->step(f32({1.5}));
  const std::vector<double> after_some = car->state();
  car->set_state({-0.5, 0.01});
  const StepResult more = car->step(f32({2.0}));
  CHECK(car->state() == after_some);
  CHECK(more.reward == doctest::Approx(some.reward - 0.1 * (2.0 * 2.0 - 1.5 * 1.5)).epsilon(1e-12));
  // Its state is float32 after a step, as Gymnasium stores it.
  for (double v : car->state()) CHECK(v == static_cast<double>(static_cast<float>(v)));
}

TEST_CASE("set_state checks the length and finiteness, and state() returns what was set") {
  for (const std::string& name : ctrax::env_names()) {
    CAPTURE(name);
    EnvPtr env = ctrax::make_env(name);
    env->reset(0);
    const std::vector<double> s = env->state();
    CHECK_THROWS_WITH_AS(env->set_state(std::vector<double>(s.size() + 1, 0.0)),
                         doctest::Contains((name + ": set_state expects " + std::to_string(s.size()) + " values, got " +
                                            std::to_string(s.size() + 1))
                                               .c_str()),
                         Error);
    std::vector<double> bad = s;
    bad[1] = std::nan("");
    CHECK_THROWS_WITH_AS(env->set_state(bad), doctest::Contains("set_state: value 1 is nan (expected a finite number)"),
                         Error);
    bad[1] = -kInf;
    CHECK_THROWS_WITH_AS(env->set_state(bad), doctest::Contains("value 1 is -inf"), Error);
    CHECK(env->state() == s);  // refused states change nothing
    std::vector<double> other = s;
    other[0] += 0.01;
    env->set_state(other);
    CHECK(env->state() == other);
  }
}

TEST_CASE("TimeLimit counts steps from reset and from set_state") {
  auto limited = std::make_unique<ctrax::TimeLimit>(std::make_unique<ctrax::CartPoleEnv>(), 3);
  ctrax::TimeLimit& env = *limited;
  CHECK(env.name() == "CartPole-v1");
  CHECK(env.max_episode_steps() == 3);
  CHECK(dynamic_cast<ctrax::CartPoleEnv*>(&env.unwrapped()) != nullptr);
  CHECK(&env.inner() == &env.unwrapped());
  env.reset(0);
  CHECK(env.elapsed_steps() == 0);
  CHECK_FALSE(env.step(i64(balance(env.state()))).truncated);
  CHECK_FALSE(env.step(i64(balance(env.state()))).truncated);
  CHECK(env.elapsed_steps() == 2);
  CHECK(env.step(i64(balance(env.state()))).truncated);
  CHECK_THROWS_WITH_AS(env.step(i64(0)), doctest::Contains("truncated at the time limit of 3 steps"), Error);
  env.set_state({0.0, 0.0, 0.0, 0.0});
  CHECK(env.elapsed_steps() == 0);
  CHECK_FALSE(env.step(i64(1)).truncated);
  env.reset();
  CHECK(env.elapsed_steps() == 0);
  // Wrappers of wrappers reach the innermost environment.
  ctrax::TimeLimit outer(std::move(limited), 10);
  CHECK(dynamic_cast<ctrax::CartPoleEnv*>(&outer.unwrapped()) != nullptr);
  CHECK(dynamic_cast<ctrax::TimeLimit*>(&outer.inner()) != nullptr);

  CHECK_THROWS_WITH_AS(ctrax::TimeLimit(std::make_unique<ctrax::CartPoleEnv>(), 0),
                       doctest::Contains("max_episode_steps must be >= 1, got 0"), Error);
  CHECK_THROWS_WITH_AS(ctrax::TimeLimit(nullptr, 5), doctest::Contains("the wrapped environment is null"), Error);
}

TEST_CASE("Without a time limit Pendulum never ends") {
  EnvPtr env = ctrax::make_env("Pendulum-v1", 0);
  env->reset(2);
  for (int i = 0; i < 1000; ++i) {
    const StepResult r = env->step(env->action_space().sample(ctrax::fold_in(ctrax::Key(4), i)));
    REQUIRE_FALSE(r.terminated);
    REQUIRE_FALSE(r.truncated);
    REQUIRE(r.reward <= 0.0);
    REQUIRE(std::abs(env->state()[1]) <= 8.0);
  }
}

TEST_CASE("Acrobot torque noise: off by default, reproducible per seed when on") {
  ctrax::AcrobotParams noisy;
  noisy.torque_noise_max = 0.2;
  ctrax::AcrobotEnv a(noisy), b(noisy), quiet;
  a.reset(5);
  b.reset(5);
  quiet.reset(5);
  CHECK(a.state() == quiet.state());  // the noise does not change the reset draw
  for (int i = 0; i < 5; ++i) {
    a.step(i64(2));
    b.step(i64(2));
    quiet.step(i64(2));
  }
  CHECK(a.state() == b.state());
  CHECK(a.state() != quiet.state());
  // Without noise the step is the deterministic RK4 step of the free function.
  std::array<double, 4> s = {0.1, -0.2, 0.3, -0.4};
  quiet.set_state({s[0], s[1], s[2], s[3]});
  quiet.step(i64(0));
  ctrax::acrobot_step(ctrax::AcrobotParams{}, s, -1.0);
  CHECK(quiet.state() == std::vector<double>(s.begin(), s.end()));
  CHECK_THROWS_WITH_AS(ctrax::AcrobotEnv(ctrax::AcrobotParams{.torque_noise_max = -1.0}),
                       doctest::Contains("torque_noise_max must be finite and >= 0"), Error);
}

TEST_CASE("cartpole_step is the dynamics CartPoleEnv runs") {
  ctrax::CartPoleEnv env;
  env.reset(9);
  std::vector<double> v = env.state();
  std::array<double, 4> s = {v[0], v[1], v[2], v[3]};
  for (int i = 0; i < 20; ++i) {
    const int64_t a = i % 3 == 0 ? 1 : 0;
    const StepResult r = env.step(i64(a));
    const ctrax::CartPoleStepOutcome o = ctrax::cartpole_step(env.params(), s, a);
    REQUIRE(env.state() == std::vector<double>(s.begin(), s.end()));
    REQUIRE(r.reward == o.reward);
    REQUIRE(r.terminated == o.terminated);
    if (o.terminated) break;
  }
  // Sutton and Barto's reward: 0 per step, -1 on termination.
  ctrax::CartPoleEnv sb(ctrax::CartPoleParams{.sutton_barto_reward = true});
  sb.reset(0);
  CHECK(sb.step(i64(0)).reward == 0.0);
  sb.set_state({0.0, 0.0, 0.2, 1.0});
  const StepResult last = sb.step(i64(0));
  CHECK(last.terminated);
  CHECK(last.reward == -1.0);
}

TEST_CASE("MountainCarContinuous computes in float32 after the first step, as NumPy 2 does") {
  // Gymnasium stores the state as float32 after each step; NumPy 2 then evaluates
  //   velocity += force * power - 0.0025 * cos(3 * position); position += velocity
  // in float32 (Python floats are weak), while from a float64 state (after reset) in float64.
  // The expected values here are written directly in float and double arithmetic.
  const ctrax::MountainCarContinuousParams p;
  int differs = 0;
  for (const auto& state_action : std::vector<std::tuple<float, float, float>>{
           {-0.5234f, 0.0123f, 0.37f}, {-0.3f, -0.02f, -0.81f}, {0.1f, 0.035f, 0.999f}, {-0.9f, -0.01f, 0.25f}}) {
    const float p0 = std::get<0>(state_action);
    const float v0 = std::get<1>(state_action);
    const float a = std::get<2>(state_action);
    CAPTURE(p0);
    float v32 = v0 + (a * 0.0015f - static_cast<float>(0.0025 * std::cos(static_cast<double>(3.0f * p0))));
    const float p32 = p0 + v32;
    std::array<double, 2> s = {p0, v0};
    bool float32_state = true;
    ctrax::mountain_car_continuous_step(p, s, float32_state, a);
    CHECK(s[0] == static_cast<double>(p32));
    CHECK(s[1] == static_cast<double>(v32));

    // From a float64 state (after reset) the float32 increment is added in double, and the
    // position too; both are rounded to float32 only when stored.
    const float x = a * 0.0015f - static_cast<float>(0.0025 * std::cos(3 * static_cast<double>(p0)));
    const double v64 = static_cast<double>(v0) + static_cast<double>(x);
    const double p64 = static_cast<double>(p0) + v64;
    std::array<double, 2> s64 = {p0, v0};
    bool from_double = false;
    ctrax::mountain_car_continuous_step(p, s64, from_double, a);
    CHECK(from_double);
    CHECK(s64[0] == static_cast<double>(static_cast<float>(p64)));
    CHECK(s64[1] == static_cast<double>(static_cast<float>(v64)));
    differs += s != s64;
  }
  CHECK(differs > 0);  // the two precisions really give different states here
}
