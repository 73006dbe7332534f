// Wrappers (rl/environments/wrappers.h): RunningMeanStd against two-pass statistics and Gymnasium's merge
// formula; each wrapper against values computed by hand from a scripted environment whose
// observations, rewards and flags are fixed in advance and which records the actions it gets;
// and the errors for misuse.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include <ctrax/rl/environments/env.h>
#include <ctrax/rl/environments/env_registry.h>
#include <ctrax/rl/environments/vector_env.h>
#include <ctrax/rl/environments/wrappers.h>
#include <ctrax/tensor/random.h>

namespace {

using ctrax::DType;
using ctrax::Env;
using ctrax::EnvPtr;
using ctrax::Error;
using ctrax::Key;
using ctrax::RunningMeanStd;
using ctrax::Shape;
using ctrax::Space;
using ctrax::StepResult;
using ctrax::Tensor;

constexpr double kInf = std::numeric_limits<double>::infinity();

struct ScriptedStep {
  std::vector<double> observation;
  double reward = 0.0;
  bool terminated = false;
  bool truncated = false;
};

// Plays a fixed script (cycling) whatever the actions, and records the actions it is given.
class ScriptedEnv final : public Env {
 public:
  ScriptedEnv(std::vector<double> first, std::vector<ScriptedStep> script,
              Space action_space = Space::box(Shape{2}, -1.0, 3.0, DType::float32),
              std::optional<Space> observation_space = std::nullopt)
      : first_(std::move(first)),
        script_(std::move(script)),
        action_space_(std::move(action_space)),
        observation_space_(observation_space.value_or(
            Space::box(Shape{static_cast<int64_t>(first_.size())}, -kInf, kInf, DType::float64))),
        current_(first_) {}

  std::string name() const override { return "Scripted"; }
  const Space& observation_space() const override { return observation_space_; }
  const Space& action_space() const override { return action_space_; }
  Tensor reset(std::optional<uint64_t>) override {
    current_ = first_;
    return observation();
  }
  StepResult step(const Tensor& action) override {
    actions.push_back(action.to_vector<double>());
    action_dtypes.push_back(action.dtype());
    const ScriptedStep& s = script_[next_++ % script_.size()];
    current_ = s.observation;
    return {observation(), s.reward, s.terminated, s.truncated};
  }
  std::vector<double> state() const override { return current_; }
  void set_state(const std::vector<double>& state) override { current_ = state; }
  Tensor observation() const override { return ctrax::from_vector(current_); }

  std::vector<std::vector<double>> actions;
  std::vector<DType> action_dtypes;

 private:
  std::vector<double> first_;
  std::vector<ScriptedStep> script_;
  Space action_space_, observation_space_;
  std::vector<double> current_;
  size_t next_ = 0;
};

Tensor f32(std::vector<float> values) { return ctrax::from_vector(values); }

// Gymnasium's merge of one sample x into (mean, var, count), for scalars.
void merge_one(double& mean, double& var, double& count, double x) {
  const double delta = x - mean, total = count + 1.0;
  var = (var * count + delta * delta * count / total) / total;
  mean = mean + delta / total;
  count = total;
}

}  // namespace

TEST_CASE("RunningMeanStd matches two-pass statistics of everything seen, prior included") {
  // The state starts as `c` pseudo-samples of mean 0 and variance 1; after samples x_1..x_n the
  // mean is sum(x) / (n + c) and the variance (c (1 + mean^2) + sum (x - mean)^2) / (n + c).
  constexpr double c = 1e-4;
  RunningMeanStd rms(Shape{3}, c);
  const Tensor a = ctrax::normal(Key(1), Shape{7, 3}, DType::float64, 2.0, 3.0);
  const Tensor b = ctrax::normal(Key(2), Shape{1, 3}, DType::float64, -1.0, 0.5);
  const Tensor d = ctrax::normal(Key(3), Shape{40, 3}, DType::float32, 5.0, 1.0);
  rms.update(a);
  rms.update(b);
  rms.update_one(d.select(0, 0));
  rms.update(d.slice(0, 1, 40));
  std::vector<std::vector<double>> rows;
  for (const Tensor& t : {a, b, d})
    for (int64_t r = 0; r < t.shape()[0]; ++r) rows.push_back(t.select(0, r).to_vector<double>());
  const double n = static_cast<double>(rows.size());
  CHECK(rms.count() == doctest::Approx(n + c).epsilon(1e-15));
  const std::vector<double> mean = rms.mean().to_vector<double>(), var = rms.var().to_vector<double>();
  for (size_t j = 0; j < 3; ++j) {
    double sum = 0.0;
    for (const auto& x : rows) sum += x[j];
    const double m = sum / (n + c);
    double m2 = c * (1.0 + m * m);
    for (const auto& x : rows) m2 += (x[j] - m) * (x[j] - m);
    CHECK(mean[j] == doctest::Approx(m).epsilon(1e-12));
    CHECK(var[j] == doctest::Approx(m2 / (n + c)).epsilon(1e-12));
  }
}

TEST_CASE("RunningMeanStd: Gymnasium's merge on a hand-worked batch") {
  RunningMeanStd rms;  // shape [], epsilon 1e-4
  CHECK(rms.mean().item<double>() == 0.0);
  CHECK(rms.var().item<double>() == 1.0);
  CHECK(rms.count() == 1e-4);
  // Batch {2, 4}: mean 3, population variance 1, B = 2.
  rms.update(ctrax::tensor<double>({2.0, 4.0}));
  const double total = 2.0001;
  CHECK(rms.count() == doctest::Approx(total).epsilon(1e-15));
  CHECK(rms.mean().item<double>() == doctest::Approx(3.0 * 2.0 / total).epsilon(1e-15));
  CHECK(rms.var().item<double>() == doctest::Approx((1e-4 + 1.0 * 2.0 + 9.0 * 1e-4 * 2.0 / total) / total).epsilon(1e-15));
}

TEST_CASE("RunningMeanStd set restores a state and rejects bad ones") {
  RunningMeanStd rms(Shape{2});
  rms.set(ctrax::tensor<double>({1.0, -2.0}), f32({4.0f, 0.0f}), 10.0);
  CHECK(rms.mean().to_vector<double>() == std::vector<double>{1.0, -2.0});
  CHECK(rms.var().to_vector<double>() == std::vector<double>{4.0, 0.0});
  CHECK(rms.count() == 10.0);
  RunningMeanStd copy(Shape{2});
  copy.set(rms.mean(), rms.var(), rms.count());
  rms.update_one(ctrax::tensor<double>({3.0, 3.0}));
  copy.update_one(ctrax::tensor<double>({3.0, 3.0}));
  CHECK(copy.mean().to_vector<double>() == rms.mean().to_vector<double>());

  const Tensor ok = ctrax::zeros(Shape{2}, DType::float64);
  CHECK_THROWS_WITH_AS(rms.set(ctrax::zeros(Shape{3}), ok, 1.0), doctest::Contains("mean must be a real tensor of shape [2]"),
                       Error);
  CHECK_THROWS_WITH_AS(rms.set(ok, Tensor(), 1.0), doctest::Contains("var must be"), Error);
  CHECK_THROWS_WITH_AS(rms.set(ok, ctrax::tensor<double>({1.0, -1.0}), 1.0), doctest::Contains("expected finite and >= 0"),
                       Error);
  CHECK_THROWS_WITH_AS(rms.set(ctrax::tensor<double>({kInf, 0.0}), ok, 1.0), doctest::Contains("mean value 0"), Error);
  CHECK_THROWS_WITH_AS(rms.set(ok, ok, 0.0), doctest::Contains("count is 0"), Error);
  CHECK(copy.count() == doctest::Approx(11.0));  // the failed calls changed nothing
  CHECK(rms.count() == doctest::Approx(11.0));

  CHECK_THROWS_WITH_AS(rms.update(ctrax::zeros(Shape{2})), doctest::Contains("samples of shape [2] stacked"), Error);
  CHECK_THROWS_WITH_AS(rms.update(ctrax::zeros(Shape{0, 2})), doctest::Contains("B >= 1"), Error);
  CHECK_THROWS_WITH_AS(rms.update(ctrax::zeros(Shape{1, 2}, DType::boolean)), doctest::Contains("dtype bool"), Error);
  CHECK_THROWS_WITH_AS(rms.update(ctrax::tensor<double>({1.0, std::nan("")}, Shape{1, 2})),
                       doctest::Contains("expected finite values"), Error);
  CHECK_THROWS_WITH_AS(rms.update_one(ctrax::zeros(Shape{3})), doctest::Contains("expected [2]"), Error);
  CHECK_THROWS_WITH_AS(RunningMeanStd(Shape{}, 0.0), doctest::Contains("epsilon must be > 0"), Error);
}

TEST_CASE("NormalizeObservation normalises with the statistics of every observation so far") {
  auto owned = std::make_unique<ScriptedEnv>(std::vector<double>{1.0, 2.0},
                                             std::vector<ScriptedStep>{{{3.0, 6.0}}, {{-1.0, 0.5}}});
  ctrax::NormalizeObservation env(std::move(owned));
  CHECK(env.observation_space() == Space::box(Shape{2}, -kInf, kInf, DType::float32));
  // Expected: merge each observation, then (x - mean) / sqrt(var + 1e-8), rounded to float32.
  std::vector<double> mean(2, 0.0), var(2, 1.0), count(2, 1e-4);
  auto expect = [&](const std::vector<double>& x) {
    std::vector<float> out;
    for (size_t j = 0; j < 2; ++j) {
      merge_one(mean[j], var[j], count[j], x[j]);
      out.push_back(static_cast<float>((x[j] - mean[j]) / std::sqrt(var[j] + 1e-8)));
    }
    return out;
  };
  auto near = [](const std::vector<float>& got, const std::vector<float>& want) {
    REQUIRE(got.size() == want.size());
    for (size_t j = 0; j < got.size(); ++j) CHECK(got[j] == doctest::Approx(want[j]).epsilon(1e-6));
  };
  const Tensor first = env.reset(0);
  CHECK(first.dtype() == DType::float32);
  near(first.to_vector<float>(), expect({1.0, 2.0}));
  near(env.step(f32({0, 0})).observation.to_vector<float>(), expect({3.0, 6.0}));
  near(env.step(f32({0, 0})).observation.to_vector<float>(), expect({-1.0, 0.5}));
  CHECK(env.statistics().count() == doctest::Approx(3.0001));
  // observation() normalises the current one without counting it again.
  near(env.observation().to_vector<float>(),
       {static_cast<float>((-1.0 - mean[0]) / std::sqrt(var[0] + 1e-8)),
        static_cast<float>((0.5 - mean[1]) / std::sqrt(var[1] + 1e-8))});
  CHECK(env.statistics().count() == doctest::Approx(3.0001));

  // Frozen: the statistics stay, and still normalise.
  env.set_update_running_mean(false);
  CHECK_FALSE(env.update_running_mean());
  const std::vector<double> frozen_mean = env.statistics().mean().to_vector<double>();
  const std::vector<float> got = env.step(f32({0, 0})).observation.to_vector<float>();
  CHECK(env.statistics().mean().to_vector<double>() == frozen_mean);
  near(got, {static_cast<float>((3.0 - mean[0]) / std::sqrt(var[0] + 1e-8)),
             static_cast<float>((6.0 - mean[1]) / std::sqrt(var[1] + 1e-8))});
  // Restored statistics are used as they are.
  env.statistics().set(ctrax::tensor<double>({1.0, 2.0}), ctrax::tensor<double>({4.0, 9.0}), 5.0);
  near(env.step(f32({0, 0})).observation.to_vector<float>(),
       {static_cast<float>(-2.0 / std::sqrt(4.0 + 1e-8)), static_cast<float>(-1.5 / std::sqrt(9.0 + 1e-8))});
}

TEST_CASE("NormalizeObservation on CartPole inside a SyncVectorEnv") {
  ctrax::SyncVectorEnv vec([] { return std::make_unique<ctrax::NormalizeObservation>(ctrax::make_env("CartPole-v1")); },
                           3);
  CHECK(vec.single_observation_space().dtype() == DType::float32);
  vec.reset(0);
  for (int t = 0; t < 50; ++t) {
    const ctrax::VectorStep& s = vec.step(ctrax::from_vector(std::vector<int64_t>{0, 1, static_cast<int64_t>(t % 2)}));
    for (float x : s.observations.to_vector<float>()) REQUIRE(std::isfinite(x));
  }
}

TEST_CASE("NormalizeObservation rejects non-Box observations and bad epsilon") {
  auto discrete = std::make_unique<ScriptedEnv>(std::vector<double>{0.0}, std::vector<ScriptedStep>{{{0.0}}},
                                                Space::discrete(2), Space::discrete(3));
  CHECK_THROWS_WITH_AS(ctrax::NormalizeObservation(std::move(discrete)), doctest::Contains("expected a Box"), Error);
  CHECK_THROWS_WITH_AS(ctrax::NormalizeObservation(ctrax::make_env("CartPole-v1"), 0.0),
                       doctest::Contains("epsilon must be > 0"), Error);
  CHECK_THROWS_WITH_AS(ctrax::NormalizeObservation(nullptr), doctest::Contains("null"), Error);
}

TEST_CASE("NormalizeReward divides by the running std of the discounted return") {
  // Rewards 1, 2 (terminating), 3, 4 (truncated), 5, gamma 0.5.
  auto owned = std::make_unique<ScriptedEnv>(
      std::vector<double>{0.0}, std::vector<ScriptedStep>{{{0.0}, 1.0, false, false},
                                                          {{0.0}, 2.0, true, false},
                                                          {{0.0}, 3.0, false, false},
                                                          {{0.0}, 4.0, false, true},
                                                          {{0.0}, 5.0, false, false}});
  ctrax::NormalizeReward env(std::move(owned), 0.5, 1e-8);
  env.reset(0);
  double g = 0.0, mean = 0.0, var = 1.0, count = 1e-4;
  // G: 1; 2 (the termination drops the old return, keeps this reward); 3 + 1 = 4; 4 + 2 = 6
  // (truncation does not reset); 5 + 3 = 8.
  const std::vector<double> expected_g = {1.0, 2.0, 4.0, 6.0, 8.0};
  const std::vector<std::pair<double, bool>> script = {{1, false}, {2, true}, {3, false}, {4, false}, {5, false}};
  for (size_t t = 0; t < script.size(); ++t) {
    g = g * 0.5 * (script[t].second ? 0.0 : 1.0) + script[t].first;
    CHECK(g == expected_g[t]);
    merge_one(mean, var, count, g);
    const StepResult r = env.step(f32({0, 0}));
    CHECK(env.discounted_return() == expected_g[t]);
    CHECK(r.reward == doctest::Approx(script[t].first / std::sqrt(var + 1e-8)).epsilon(1e-14));
  }
  // reset() keeps G (as Gymnasium), set_discounted_return restores it.
  env.reset(0);
  CHECK(env.discounted_return() == 8.0);
  env.set_discounted_return(0.25);
  CHECK(env.discounted_return() == 0.25);
  // Frozen statistics: var no longer moves.
  env.set_update_running_mean(false);
  const double frozen = env.statistics().var().item<double>();
  const StepResult r = env.step(f32({0, 0}));  // the script's 1.0 again
  CHECK(env.statistics().var().item<double>() == frozen);
  CHECK(r.reward == doctest::Approx(1.0 / std::sqrt(frozen + 1e-8)).epsilon(1e-14));

  CHECK_THROWS_WITH_AS(ctrax::NormalizeReward(ctrax::make_env("CartPole-v1"), 1.5), doctest::Contains("gamma must be in [0, 1]"),
                       Error);
  CHECK_THROWS_WITH_AS(ctrax::NormalizeReward(ctrax::make_env("CartPole-v1"), -0.1), doctest::Contains("gamma"), Error);
  CHECK_THROWS_WITH_AS(ctrax::NormalizeReward(ctrax::make_env("CartPole-v1"), 0.9, -1.0),
                       doctest::Contains("epsilon must be > 0"), Error);
  CHECK_THROWS_WITH_AS(env.set_discounted_return(kInf), doctest::Contains("expected a finite number"), Error);
}

TEST_CASE("ClipAction clips to the inner Box and accepts any value but NaN") {
  auto owned = std::make_unique<ScriptedEnv>(std::vector<double>{0.0}, std::vector<ScriptedStep>{{{0.0}}});
  ScriptedEnv* inner = owned.get();
  ctrax::ClipAction env(std::move(owned));
  CHECK(env.action_space() == Space::box(Shape{2}, -kInf, kInf, DType::float32));
  env.reset(0);
  env.step(f32({-5.0f, 10.0f}));
  env.step(f32({0.5f, 2.0f}));
  env.step(ctrax::tensor<double>({-kInf, kInf}));
  env.step(ctrax::tensor<double>({-1.0, 3.0}));
  CHECK(inner->actions == std::vector<std::vector<double>>{{-1.0, 3.0}, {0.5, 2.0}, {-1.0, 3.0}, {-1.0, 3.0}});
  // Passed on in the space's dtype whatever the agent's.
  CHECK(inner->action_dtypes.back() == DType::float32);

  CHECK_THROWS_WITH_AS(env.step(f32({std::nanf(""), 0.0f})), doctest::Contains("not NaN"), Error);
  CHECK_THROWS_WITH_AS(env.step(f32({0.0f})), doctest::Contains("expected [2]"), Error);
  CHECK_THROWS_WITH_AS(env.step(ctrax::zeros(Shape{2}, DType::int64)), doctest::Contains("dtype int64"), Error);
  CHECK_THROWS_WITH_AS(env.step(Tensor()), doctest::Contains("undefined"), Error);
  CHECK(inner->actions.size() == 4);
  CHECK_THROWS_WITH_AS(ctrax::ClipAction(ctrax::make_env("CartPole-v1")), doctest::Contains("expected a Box"), Error);
}

TEST_CASE("RescaleAction maps min_action..max_action affinely onto the inner bounds") {
  auto owned = std::make_unique<ScriptedEnv>(std::vector<double>{0.0}, std::vector<ScriptedStep>{{{0.0}}});
  ScriptedEnv* inner = owned.get();
  // Inner [-1, 3]: a -> -1 + 4 (a + 1) / 2 = 2a + 1.
  ctrax::RescaleAction env(std::move(owned), -1.0, 1.0);
  CHECK(env.action_space() == Space::box(Shape{2}, -1.0, 1.0, DType::float32));
  env.reset(0);
  env.step(f32({-1.0f, 1.0f}));
  env.step(f32({0.0f, 0.5f}));
  env.step(ctrax::tensor<double>({2.0, -3.0}));  // outside [min, max]: mapped, not clipped
  CHECK(inner->actions == std::vector<std::vector<double>>{{-1.0, 3.0}, {1.0, 2.0}, {5.0, -5.0}});
  CHECK(inner->action_dtypes.back() == DType::float32);

  // Per-dimension bounds: [0, 10] -> [-1, 3] and [1, 2] -> [-1, 3].
  auto owned2 = std::make_unique<ScriptedEnv>(std::vector<double>{0.0}, std::vector<ScriptedStep>{{{0.0}}});
  ScriptedEnv* inner2 = owned2.get();
  ctrax::RescaleAction per_dim(std::move(owned2), ctrax::tensor<double>({0.0, 1.0}), ctrax::tensor<double>({10.0, 2.0}));
  per_dim.reset(0);
  per_dim.step(ctrax::tensor<double>({2.5, 1.75}));
  CHECK(inner2->actions.back() == std::vector<double>{0.0, 2.0});

  CHECK_THROWS_WITH_AS(env.step(f32({std::nanf(""), 0.0f})), doctest::Contains("expected a finite number"), Error);
  CHECK_THROWS_WITH_AS(env.step(f32({0.0f, 0.0f, 0.0f})), doctest::Contains("expected [2]"), Error);
  auto make_scripted = [] {
    return std::make_unique<ScriptedEnv>(std::vector<double>{0.0}, std::vector<ScriptedStep>{{{0.0}}});
  };
  CHECK_THROWS_WITH_AS(ctrax::RescaleAction(make_scripted(), 1.0, 1.0), doctest::Contains("min_action < max_action"),
                       Error);
  CHECK_THROWS_WITH_AS(ctrax::RescaleAction(make_scripted(), 2.0, -2.0), doctest::Contains("min_action < max_action"),
                       Error);
  CHECK_THROWS_WITH_AS(ctrax::RescaleAction(make_scripted(), -kInf, 1.0), doctest::Contains("expected finite"), Error);
  CHECK_THROWS_WITH_AS(ctrax::RescaleAction(make_scripted(), ctrax::zeros(Shape{3}), ctrax::ones(Shape{3})),
                       doctest::Contains("min_action must be a real scalar or a tensor of shape [2]"), Error);
  // Rounded to float32, 1 and 1 + 1e-12 are one value: no interval left.
  CHECK_THROWS_WITH_AS(ctrax::RescaleAction(make_scripted(), 1.0, 1.0 + 1e-12), doctest::Contains("once rounded"), Error);
  auto unbounded = std::make_unique<ScriptedEnv>(std::vector<double>{0.0}, std::vector<ScriptedStep>{{{0.0}}},
                                                 Space::box(Shape{2}, -kInf, kInf, DType::float32));
  CHECK_THROWS_WITH_AS(ctrax::RescaleAction(std::move(unbounded), -1.0, 1.0), doctest::Contains("bounded Box"), Error);
  CHECK_THROWS_WITH_AS(ctrax::RescaleAction(ctrax::make_env("CartPole-v1"), -1.0, 1.0), doctest::Contains("expected a Box"),
                       Error);
}

TEST_CASE("RescaleAction on Pendulum gives the dynamics of the mapped action") {
  // Pendulum's torque is in [-2, 2]; in [-1, 1] action 0.5 is torque 1.
  ctrax::RescaleAction rescaled(ctrax::make_env("Pendulum-v1"), -1.0, 1.0);
  EnvPtr raw = ctrax::make_env("Pendulum-v1");
  CHECK(rescaled.reset(3).to_vector<float>() == raw->reset(3).to_vector<float>());
  for (int t = 0; t < 5; ++t) {
    const StepResult a = rescaled.step(f32({0.5f}));
    const StepResult b = raw->step(f32({1.0f}));
    CHECK(a.observation.to_vector<float>() == b.observation.to_vector<float>());
    CHECK(a.reward == b.reward);
  }
}

TEST_CASE("RecordEpisodeStatistics keeps the episode in progress, the last one and a count") {
  auto owned = std::make_unique<ScriptedEnv>(
      std::vector<double>{0.0}, std::vector<ScriptedStep>{{{0.0}, 1.5, false, false},
                                                          {{0.0}, 2.0, true, false},
                                                          {{0.0}, -1.0, false, false},
                                                          {{0.0}, 4.0, false, true}});
  ctrax::RecordEpisodeStatistics env(std::move(owned));
  env.reset(0);
  CHECK(env.episode_count() == 0);
  CHECK_FALSE(env.last_episode_return().has_value());
  CHECK_FALSE(env.last_episode_length().has_value());
  env.step(f32({0, 0}));
  CHECK(env.episode_return() == 1.5);
  CHECK(env.episode_length() == 1);
  env.step(f32({0, 0}));  // terminated
  CHECK(env.episode_count() == 1);
  CHECK(env.last_episode_return() == 3.5);
  CHECK(env.last_episode_length() == 2);
  CHECK(env.episode_return() == 3.5);  // still the finished one until reset
  env.reset();
  CHECK(env.episode_return() == 0.0);
  CHECK(env.episode_length() == 0);
  env.step(f32({0, 0}));
  env.step(f32({0, 0}));  // truncated
  CHECK(env.episode_count() == 2);
  CHECK(env.last_episode_return() == 3.0);
  CHECK(env.last_episode_length() == 2);
  // An episode abandoned by reset or set_state is not counted.
  env.reset();
  env.step(f32({0, 0}));
  env.set_state({0.0});
  CHECK(env.episode_length() == 0);
  env.reset();
  CHECK(env.episode_count() == 2);
}

TEST_CASE("RecordEpisodeStatistics under NormalizeReward records the raw returns") {
  auto stats = std::make_unique<ctrax::RecordEpisodeStatistics>(ctrax::make_env("CartPole-v1"));
  ctrax::RecordEpisodeStatistics* recorder = stats.get();
  ctrax::NormalizeReward env(std::move(stats));
  env.reset(0);
  int64_t steps = 0;
  StepResult r;
  do {
    r = env.step(ctrax::scalar_tensor(1.0, DType::int64));
    ++steps;
  } while (!r.terminated && !r.truncated);
  CHECK(recorder->last_episode_length() == steps);
  CHECK(recorder->last_episode_return() == static_cast<double>(steps));  // CartPole: reward 1 per step
  CHECK(r.reward != 1.0);                                                // the agent saw scaled rewards
}
