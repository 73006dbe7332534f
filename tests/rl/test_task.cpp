// Trajectories (rl/learning/trajectory.h) and RLTask (rl/learning/task.h): returns and layouts computed by hand,
// slicing and padding, collection in CartPole with fixed policies (checked by replaying every
// stored piece in a fresh CartPoleEnv) and in a countdown environment whose episode lengths are
// known exactly (quotas per copy, max_steps continuation, time-limit truncation, eval), replay
// eviction, initial random trajectories, batches (shapes, masks, alignment, sampling
// proportions), reproducibility, and bad inputs.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <numbers>
#include <optional>
#include <set>
#include <vector>

#include <ctrax/rl/environments/env.h>
#include <ctrax/rl/environments/env_registry.h>
#include <ctrax/rl/learning/task.h>
#include <ctrax/rl/learning/trajectory.h>
#include <ctrax/tensor/ops.h>
#include <ctrax/tensor/tensor.h>

namespace {

using ctrax::CollectOptions;
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
using ctrax::TrajectoryBatchOptions;
using ctrax::TrajectoryData;

std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }

// A trajectory with observations [T + 1, 2] (row i = (i, 10 i)), actions i + 1, rewards 1..T.
Trajectory make_trajectory(int64_t steps, bool terminated, double gamma = 0.5, int64_t d = 0) {
  std::vector<float> obs;
  for (int64_t i = 0; i <= steps; ++i) {
    obs.push_back(static_cast<float>(i));
    obs.push_back(static_cast<float>(10 * i));
  }
  std::vector<int64_t> actions;
  std::vector<double> rewards;
  std::vector<float> dist;
  for (int64_t i = 0; i < steps; ++i) {
    actions.push_back(i + 1);
    rewards.push_back(static_cast<double>(i + 1));
    for (int64_t j = 0; j < d; ++j) dist.push_back(static_cast<float>(100 * i + j));
  }
  TrajectoryData data;
  data.observations = ctrax::from_vector(obs, Shape{steps + 1, 2});
  data.actions = ctrax::from_vector(actions);
  data.rewards = ctrax::from_vector(rewards);
  if (d > 0) data.dist_inputs = ctrax::from_vector(dist, Shape{steps, d});
  data.terminated = terminated;
  data.truncated = !terminated;
  return Trajectory(data, gamma);
}

// An environment whose episodes last exactly `length` steps: the observation is the number of
// steps left, every step gives reward 1, and the episode terminates when none are left.
class Countdown final : public Env {
 public:
  explicit Countdown(int64_t length)
      : length_(length), obs_space_(Space::box(Shape{1}, 0.0, 1e6)), act_space_(Space::discrete(2)) {}
  std::string name() const override { return "Countdown"; }
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
  Tensor observation() const override {
    return ctrax::full(Shape{1}, static_cast<double>(left_), DType::float32);
  }

 private:
  int64_t length_;
  int64_t left_ = 0;
  Space obs_space_, act_space_;
};

// Records how it was called; answers a fixed action for every copy and D dist_inputs per copy
// (the first min(D, observation size) observation entries, then zeros), so batches can be
// checked for alignment.
struct Recorder {
  int64_t calls = 0;
  std::vector<int64_t> batch_sizes;
  std::vector<std::vector<double>> observations;
};

ctrax::CollectPolicy fixed_policy(int64_t action, std::shared_ptr<Recorder> rec, int64_t d = 2) {
  return [action, rec, d](const Tensor& obs, Key, double) {
    const int64_t n = obs.shape()[0];
    rec->calls += 1;
    rec->batch_sizes.push_back(n);
    rec->observations.push_back(values(obs));
    const Tensor flat = obs.reshape(Shape{n, -1}).to(DType::float32);
    Tensor dist = ctrax::zeros(Shape{n, d}, DType::float32);
    const int64_t k = std::min(d, flat.shape()[1]);
    if (k > 0) dist.slice(1, 0, k).copy_(flat.slice(1, 0, k));
    return PolicyOutput{ctrax::full(Shape{n}, static_cast<double>(action), DType::int64), dist};
  };
}

CollectOptions trajectories(int64_t n, int64_t epoch = 1) {
  CollectOptions o;
  o.n_trajectories = n;
  o.epoch = epoch;
  return o;
}

RLTaskOptions options(int64_t n_envs = 1, uint64_t seed = 1) {
  RLTaskOptions o;
  o.n_envs = n_envs;
  o.initial_trajectories = 0;
  o.key = Key(seed);
  return o;
}

std::function<EnvPtr()> countdown(int64_t length) {
  return [length] { return std::make_unique<Countdown>(length); };
}

// Replays `t` in a fresh CartPoleEnv put into its first observation, playing `action`: every
// observation must match and the episode must end as recorded.
void check_cartpole_replay(const Trajectory& t, int64_t action) {
  EnvPtr env = ctrax::make_env("CartPole-v1", 0);
  env->reset(0);
  env->set_state(values(t.observations().select(0, 0)));
  for (int64_t i = 0; i < t.length(); ++i) {
    const StepResult s = env->step(ctrax::scalar_tensor(static_cast<double>(action), DType::int64));
    const std::vector<double> got = values(s.observation);
    const std::vector<double> want = values(t.observations().select(0, i + 1));
    for (size_t j = 0; j < got.size(); ++j) CHECK(got[j] == doctest::Approx(want[j]).epsilon(1e-4));
    if (i + 1 < t.length()) CHECK_FALSE(s.terminated);
    else CHECK(s.terminated == t.terminated());
  }
}

}  // namespace

TEST_CASE("Trajectory: returns, total return and the layout with a margin") {
  const Trajectory t = make_trajectory(3, true);
  CHECK(t.length() == 3);
  CHECK(t.total_return() == 6.0);
  CHECK(t.terminated());
  CHECK(t.episode_ended());
  // R_2 = 3, R_1 = 2 + .5 * 3 = 3.5, R_0 = 1 + .5 * 3.5 = 2.75.
  CHECK(values(t.returns()) == std::vector<double>{2.75, 3.5, 3.0});
  CHECK(values(t.last_observation()) == std::vector<double>{3, 30});

  const TimeStepBatch b = t.to_batch(2);
  CHECK(b.observation.shape() == Shape{1, 5, 2});
  CHECK(values(b.observation) == std::vector<double>{0, 0, 1, 10, 2, 20, 3, 30, 0, 0});
  CHECK(values(b.action) == std::vector<double>{1, 2, 3, 0, 0});
  CHECK(values(b.reward) == std::vector<double>{1, 2, 3, 0, 0});
  CHECK(values(b.mask) == std::vector<double>{1, 1, 1, 0, 0});
  CHECK(values(b.done) == std::vector<double>{0, 0, 1, 1, 1});
  CHECK(values(b.discount_mask) == std::vector<double>{1, 1, 1, 0, 0});
  CHECK(values(b.return_) == std::vector<double>{2.75, 3.5, 3, 0, 0});
  CHECK(b.dist_inputs.shape() == Shape{1, 5, 0});
  CHECK(b.done.dtype() == DType::boolean);
  CHECK(b.mask.dtype() == DType::float32);

  // A truncated piece: its last step is not done, so it bootstraps from entry T.
  const TimeStepBatch truncated = make_trajectory(3, false).to_batch(1);
  CHECK(values(truncated.done) == std::vector<double>{0, 0, 0, 1});
  CHECK(values(truncated.mask) == std::vector<double>{1, 1, 1, 0});
  // Margin 0: the steps only.
  CHECK(t.to_batch(0).observation.shape() == Shape{1, 3, 2});

  // The discount mask: R_2 = 3, R_1 = 2 + 3 (unset), R_0 = 1 + .5 * 5.
  TrajectoryData data;
  data.observations = ctrax::zeros(Shape{4, 2});
  data.actions = ctrax::zeros(Shape{3}, DType::int64);
  data.rewards = ctrax::from_vector(std::vector<double>{1, 2, 3});
  data.discount_mask = ctrax::from_vector(std::vector<double>{1, 0, 1});
  CHECK(values(Trajectory(data, 0.5).returns()) == std::vector<double>{3.5, 5, 3});
}

TEST_CASE("Trajectory: bad inputs") {
  TrajectoryData data;
  data.observations = ctrax::zeros(Shape{4, 2});
  data.actions = ctrax::zeros(Shape{3}, DType::int64);
  data.rewards = ctrax::zeros(Shape{3});
  CHECK_NOTHROW(Trajectory(data, 0.9));
  CHECK_THROWS_WITH_AS(Trajectory(data, 1.5), doctest::Contains("gamma must be in [0, 1]"), Error);
  CHECK_THROWS_WITH_AS(Trajectory(data, -0.1), doctest::Contains("gamma must be in [0, 1]"), Error);
  TrajectoryData one = data;
  one.observations = ctrax::zeros(Shape{1, 2});
  CHECK_THROWS_WITH_AS(Trajectory(one, 0.9), doctest::Contains("T >= 1 steps"), Error);
  TrajectoryData actions = data;
  actions.actions = ctrax::zeros(Shape{4}, DType::int64);
  CHECK_THROWS_WITH_AS(Trajectory(actions, 0.9), doctest::Contains("actions must be [T, ...] with T = 3"), Error);
  TrajectoryData rewards = data;
  rewards.rewards = ctrax::zeros(Shape{3}, DType::int64);
  CHECK_THROWS_WITH_AS(Trajectory(rewards, 0.9), doctest::Contains("rewards must be floating [T]"), Error);
  TrajectoryData dist = data;
  dist.dist_inputs = ctrax::zeros(Shape{2, 4});
  CHECK_THROWS_WITH_AS(Trajectory(dist, 0.9), doctest::Contains("dist_inputs must be floating [T, D]"), Error);
  TrajectoryData discount = data;
  discount.discount_mask = ctrax::ones(Shape{2});
  CHECK_THROWS_WITH_AS(Trajectory(discount, 0.9), doctest::Contains("discount_mask must be [T]"), Error);
}

TEST_CASE("n_slices and stack_slices: slice counts, power-of-two padding, missing dist_inputs") {
  const Trajectory t3 = make_trajectory(3, true, 0.5, 2);
  const Trajectory t5 = make_trajectory(5, false, 0.5, 0);
  // [o0, o1, o2, o3]: 2 slices of 2 without margin, 3 with margin 1; one if too short or unlimited.
  CHECK(ctrax::n_slices(t3, 2, 0) == 2);
  CHECK(ctrax::n_slices(t3, 2, 1) == 3);
  CHECK(ctrax::n_slices(t3, 10, 1) == 1);
  CHECK(ctrax::n_slices(t3, std::nullopt, 0) == 1);
  CHECK_THROWS_WITH_AS(ctrax::n_slices(t3, 0, 0), doctest::Contains("max_slice_length must be >= 1"), Error);

  // Equal lengths: no padding.
  TimeStepBatch same = ctrax::stack_slices({{&t3, 0, 3, 1}, {&t5, 2, 3, 1}});
  CHECK(same.observation.shape() == Shape{2, 3, 2});
  CHECK(values(same.action) == std::vector<double>{1, 2, 3, 3, 4, 5});
  // Different lengths (3 and 5): both padded to 8 with mask 0 and done true.
  TimeStepBatch padded = ctrax::stack_slices({{&t3, 0, 4, 1}, {&t5, 1, 5, 1}});
  CHECK(padded.observation.shape() == Shape{2, 8, 2});
  CHECK(values(padded.mask) == std::vector<double>{1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0});
  CHECK(values(padded.done) == std::vector<double>{0, 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1});
  // Row 1 starts at step 1 of t5 and ends with its final observation o5 = (5, 50).
  CHECK(values(padded.observation.select(0, 1).select(0, 4)) == std::vector<double>{5, 50});
  CHECK(values(padded.observation.select(0, 1).select(0, 5)) == std::vector<double>{0, 0});
  // D: t3 has 2 dist_inputs per step, t5 none (zeros).
  CHECK(padded.dist_inputs.shape() == Shape{2, 8, 2});
  CHECK(values(padded.dist_inputs.select(0, 0).select(0, 1)) == std::vector<double>{100, 101});
  CHECK(values(padded.dist_inputs.select(0, 1).select(0, 1)) == std::vector<double>{0, 0});
  // min_length pads equal lengths too, to a power of two.
  CHECK(ctrax::stack_slices({{&t3, 0, 3, 0}}, 4).mask.shape() == Shape{1, 4});
  CHECK(ctrax::stack_slices({{&t3, 0, 3, 0}}, 5).mask.shape() == Shape{1, 8});

  CHECK_THROWS_WITH_AS(ctrax::stack_slices({}), doctest::Contains("no slices"), Error);
  CHECK_THROWS_WITH_AS(ctrax::stack_slices({{&t3, 2, 3, 1}}), doctest::Contains("outside the 4 entries"), Error);
  CHECK_THROWS_WITH_AS(ctrax::stack_slices({{nullptr, 0, 1, 0}}), doctest::Contains("has no trajectory"), Error);
  const Trajectory d3 = make_trajectory(3, true, 0.5, 3);
  CHECK_THROWS_WITH_AS(ctrax::stack_slices({{&t3, 0, 1, 0}, {&d3, 0, 1, 0}}),
                       doctest::Contains("has 3 dist_inputs per step, an earlier one 2"), Error);
  TrajectoryData wide;
  wide.observations = ctrax::zeros(Shape{2, 3});
  wide.actions = ctrax::zeros(Shape{1}, DType::int64);
  wide.rewards = ctrax::zeros(Shape{1});
  const Trajectory w(wide, 0.5);
  CHECK_THROWS_WITH_AS(ctrax::stack_slices({{&t3, 0, 1, 0}, {&w, 0, 1, 0}}), doctest::Contains("has observations"),
                       Error);
}

TEST_CASE("RLTask collects CartPole episodes with a fixed policy, one policy call per step for all copies") {
  auto rec = std::make_shared<Recorder>();
  RLTask task("CartPole-v1", options(1));
  CHECK(task.env_name() == "CartPole-v1");
  CHECK(task.trajectories().empty());
  const ctrax::CollectStats stats = task.collect_trajectories(fixed_policy(1, rec), trajectories(3));
  REQUIRE(task.trajectories().count(1) == 1);
  const std::vector<Trajectory>& pieces = task.trajectories().at(1);
  REQUIRE(pieces.size() == 3);  // one copy: exactly the pieces asked for, as Trax
  double sum = 0.0;
  int64_t steps = 0;
  for (const Trajectory& t : pieces) {
    CHECK(t.terminated());
    CHECK_FALSE(t.truncated());
    CHECK(t.length() >= 5);  // pushing right topples the pole within a few dozen steps, not at once
    CHECK(t.length() < 60);
    CHECK(t.total_return() == static_cast<double>(t.length()));
    double expected = 0.0;
    for (int64_t i = 0; i < t.length(); ++i) expected += std::pow(0.99, static_cast<double>(i));
    CHECK(values(t.returns())[0] == doctest::Approx(expected).epsilon(1e-5));
    CHECK(values(t.actions()) == std::vector<double>(static_cast<size_t>(t.length()), 1.0));
    CHECK(t.n_dist_inputs() == 2);
    check_cartpole_replay(t, 1);
    sum += t.total_return();
    steps += t.length();
  }
  // Each piece starts a new episode: reset states are within +-0.05.
  for (const Trajectory& t : pieces)
    for (double x : values(t.observations().select(0, 0))) CHECK(std::abs(x) <= 0.0501);
  CHECK(stats.mean_return == doctest::Approx(sum / 3));
  CHECK(stats.mean_length == doctest::Approx(static_cast<double>(steps) / 3));
  CHECK(stats.n_trajectories == 3);
  CHECK(stats.n_interactions == steps);
  CHECK(rec->calls == steps);
  CHECK(task.n_trajectories() == 3);
  CHECK(task.n_interactions() == steps);

  // Four copies: the policy sees all four observations at once, once per step.
  auto rec4 = std::make_shared<Recorder>();
  RLTask task4("CartPole-v1", options(4));
  const ctrax::CollectStats s4 = task4.collect_trajectories(fixed_policy(1, rec4), trajectories(6));
  CHECK(s4.n_trajectories == 6);
  CHECK(std::set<int64_t>(rec4->batch_sizes.begin(), rec4->batch_sizes.end()) == std::set<int64_t>{4});
  CHECK(s4.n_interactions == 4 * rec4->calls);
  int64_t stored_steps = 0;
  int64_t cut = 0;
  for (const Trajectory& t : task4.trajectories().at(1)) {
    stored_steps += t.length();
    if (!t.episode_ended()) ++cut;
    check_cartpole_replay(t, 1);
  }
  CHECK(stored_steps == s4.n_interactions);  // every step taken is stored
  CHECK(cut <= 4);                           // at most one open piece per copy
  CHECK(task4.trajectories().at(1).size() >= 6);
}

TEST_CASE("RLTask counts the first pieces of every copy, not the first to finish") {
  // Copy 0's episodes last 1 step, copy 1's 10. Taking the first 4 episodes to finish would
  // give four of length 1; quotas of 2 per copy give two of each.
  auto made = std::make_shared<int64_t>(0);
  auto make = [made]() -> EnvPtr { return std::make_unique<Countdown>((*made)++ % 2 == 0 ? 1 : 10); };
  RLTaskOptions o = options(2);
  o.n_eval_envs = 2;
  RLTask task(make, o);
  auto rec = std::make_shared<Recorder>();
  const ctrax::CollectStats stats = task.collect_trajectories(fixed_policy(0, rec), trajectories(4));
  CHECK(stats.mean_return == doctest::Approx(5.5));
  CHECK(stats.mean_length == doctest::Approx(5.5));
  CHECK(stats.n_trajectories == 4);
  CHECK(rec->calls == 20);
  CHECK(stats.n_interactions == 40);
  // Copy 0 finished 20 one-step episodes on the way; all of them are stored.
  const std::vector<Trajectory>& pieces = task.trajectories().at(1);
  CHECK(pieces.size() == 22);
  int64_t total = 0;
  for (const Trajectory& t : pieces) total += t.length();
  CHECK(total == 40);

  // n_interactions: ceil(7 / 2) = 4 steps of both copies; every piece closed on the way counts.
  auto rec2 = std::make_shared<Recorder>();
  CollectOptions by_steps;
  by_steps.n_interactions = 7;
  by_steps.epoch = 2;
  const ctrax::CollectStats s2 = task.collect_trajectories(fixed_policy(0, rec2), by_steps);
  CHECK(rec2->calls == 4);
  CHECK(s2.n_interactions == 8);
  CHECK(s2.n_trajectories == 4);  // copy 0's four one-step episodes; copy 1 is mid-episode
  CHECK(s2.mean_return == doctest::Approx(1.0));
  CHECK(task.trajectories().at(2).size() == 5);  // plus copy 1's open piece, cut
}

TEST_CASE("RLTask continues episodes across collections with max_steps and truncates at time_limit") {
  RLTaskOptions o = options(1);
  o.max_steps = 10;
  o.time_limit = 22;
  RLTask task(countdown(25), o);
  CHECK(task.time_limit() == 22);
  auto rec = std::make_shared<Recorder>();
  std::vector<const Trajectory*> got;
  for (int64_t epoch = 1; epoch <= 4; ++epoch) {
    task.set_n_replay_epochs(10);
    task.collect_trajectories(fixed_policy(0, rec), trajectories(1, epoch));
    REQUIRE(task.trajectories().at(epoch).size() == 1);
    got.push_back(&task.trajectories().at(epoch).front());
  }
  // 10 + 10 steps cut by max_steps, 2 more to the time limit (truncated), then a new episode.
  CHECK(got[0]->length() == 10);
  CHECK_FALSE(got[0]->episode_ended());
  CHECK(got[1]->length() == 10);
  CHECK_FALSE(got[1]->episode_ended());
  CHECK(values(got[1]->observations().select(0, 0)) == values(got[0]->last_observation()));
  CHECK(got[2]->length() == 2);
  CHECK(got[2]->truncated());
  CHECK_FALSE(got[2]->terminated());
  CHECK(values(got[2]->last_observation()) == std::vector<double>{3});
  CHECK(values(got[3]->observations().select(0, 0)) == std::vector<double>{25});
  // A truncated or cut piece is not done: its last step bootstraps from the final observation.
  CHECK(values(got[2]->to_batch(1).done) == std::vector<double>{0, 0, 1});
  CHECK(values(got[0]->to_batch(1).observation.select(0, 0).select(0, 10)) == std::vector<double>{15});

  // Without time_limit it defaults to max_steps (Trax): every piece is a whole, truncated episode.
  RLTaskOptions d = options(1);
  d.max_steps = 4;
  RLTask short_task(countdown(25), d);
  CHECK(short_task.time_limit() == 4);
  short_task.collect_trajectories(fixed_policy(0, rec), trajectories(2));
  for (const Trajectory& t : short_task.trajectories().at(1)) {
    CHECK(t.length() == 4);
    CHECK(t.truncated());
    CHECK(values(t.observations().select(0, 0)) == std::vector<double>{25});
  }

  // CartPole by name truncates at the time limit too (pushing right survives 5 steps).
  RLTaskOptions c = options(2);
  c.time_limit = 5;
  RLTask cartpole("CartPole-v1", c);
  cartpole.collect_trajectories(fixed_policy(1, rec), trajectories(4));
  for (const Trajectory& t : cartpole.trajectories().at(1)) {
    CHECK(t.length() == 5);
    CHECK(t.truncated());
    CHECK_FALSE(t.terminated());
    check_cartpole_replay(t, 1);
  }
}

TEST_CASE("RLTask eval collection: fresh resets, max_steps cuts, nothing stored") {
  RLTaskOptions o = options(1);
  o.n_eval_envs = 1;
  RLTask task(countdown(8), o);
  auto rec = std::make_shared<Recorder>();
  CollectOptions eval;
  eval.only_eval = true;
  eval.n_trajectories = 2;
  eval.max_steps = 3;
  const ctrax::CollectStats stats = task.collect_trajectories(fixed_policy(0, rec), eval);
  CHECK(stats.mean_return == 3.0);
  CHECK(stats.n_trajectories == 2);
  // 3 counted steps, 5 uncounted to the end of that episode, 3 counted in the next.
  CHECK(rec->calls == 11);
  CHECK(task.trajectories().empty());
  CHECK(task.n_interactions() == 0);
  // The next eval starts from a reset, although the last episode was left with 5 steps to go.
  eval.n_trajectories = 1;
  rec->observations.clear();
  task.collect_trajectories(fixed_policy(0, rec), eval);
  CHECK(rec->observations.front() == std::vector<double>{8});
  // Without a cap, eval episodes are whole.
  eval.max_steps.reset();
  CHECK(task.collect_trajectories(fixed_policy(0, rec), eval).mean_return == 8.0);
}

TEST_CASE("RLTask: initial random trajectories in epoch 0 and replay eviction") {
  RLTaskOptions o = options(1);
  o.initial_trajectories = 5;
  o.n_replay_epochs = 1;
  RLTask task("CartPole-v1", o);
  REQUIRE(task.trajectories().size() == 1);
  const std::vector<Trajectory>& initial = task.trajectories().at(0);
  CHECK(initial.size() == 5);
  std::set<double> actions;
  for (const Trajectory& t : initial) {
    CHECK(t.n_dist_inputs() == 0);
    CHECK(t.terminated());  // random play topples the pole long before 500 steps
    for (double a : values(t.actions())) actions.insert(a);
  }
  CHECK(actions == std::set<double>{0, 1});
  CHECK(task.n_trajectories() == 5);

  auto rec = std::make_shared<Recorder>();
  auto epochs = [&task] {
    std::set<int64_t> out;
    for (const auto& [e, pieces] : task.trajectories()) out.insert(e);
    return out;
  };
  task.collect_trajectories(fixed_policy(1, rec), trajectories(1, 1));
  CHECK(epochs() == std::set<int64_t>{0, 1});  // Trax keeps epochs >= epoch - n_replay_epochs
  task.collect_trajectories(fixed_policy(1, rec), trajectories(1, 2));
  CHECK(epochs() == std::set<int64_t>{1, 2});
  task.set_n_replay_epochs(0);
  task.collect_trajectories(fixed_policy(1, rec), trajectories(1, 3));
  CHECK(epochs() == std::set<int64_t>{3});
  task.remove_epoch(3);
  CHECK(task.trajectories().empty());
}

TEST_CASE("RLTask batches: shapes, masks, alignment and power-of-two padding") {
  RLTaskOptions o = options(3);
  o.initial_trajectories = 4;
  RLTask task("CartPole-v1", o);
  auto rec = std::make_shared<Recorder>();
  task.collect_trajectories(fixed_policy(1, rec), trajectories(6));

  TrajectoryBatchOptions b;
  b.batch_size = 16;
  b.max_slice_length = 4;
  b.margin = 1;
  b.epochs = {-1};
  const TimeStepBatch batch = task.trajectory_batch(b, 0);
  CHECK(batch.observation.shape() == Shape{16, 4, 4});
  CHECK(batch.observation.dtype() == DType::float32);
  CHECK(batch.action.shape() == Shape{16, 4});
  CHECK(batch.action.dtype() == DType::int64);
  CHECK(batch.reward.shape() == Shape{16, 4});
  CHECK(batch.dist_inputs.shape() == Shape{16, 4, 2});
  CHECK(batch.return_.shape() == Shape{16, 4});
  const std::vector<double> obs = values(batch.observation), dist = values(batch.dist_inputs);
  const std::vector<double> mask = values(batch.mask), reward = values(batch.reward), ret = values(batch.return_);
  const std::vector<double> done = values(batch.done), action = values(batch.action);
  for (size_t i = 0; i < 16 * 4; ++i) {
    if (mask[i] == 1.0) {
      // Epoch -1 holds the fixed policy's pieces: dist_inputs = the first two observation entries.
      CHECK(dist[2 * i] == obs[4 * i]);
      CHECK(dist[2 * i + 1] == obs[4 * i + 1]);
      CHECK(reward[i] == 1.0);
      CHECK(action[i] == 1.0);
      if (i % 4 != 3 && mask[i + 1] == 1.0) CHECK(ret[i] == doctest::Approx(1.0 + 0.99 * ret[i + 1]));
    } else {
      CHECK(done[i] == 1.0);
      CHECK(reward[i] == 0.0);
      CHECK(ret[i] == 0.0);
    }
  }
  // The same index gives the same batch; the stream is the same function.
  CHECK(values(task.trajectory_batch(b, 0).observation) == obs);
  CHECK(values(task.trajectory_batch_stream(b)(0).observation) == obs);
  CHECK(values(task.trajectory_batch(b, 1).observation) != obs);
  // Epoch 0 alone: random pieces, no dist_inputs.
  b.epochs = {0};
  CHECK(task.trajectory_batch(b, 0).dist_inputs.shape() == Shape{16, 4, 0});
  // Both epochs: rows of random pieces (some action 0) get zeros next to the policy's.
  b.epochs = {};
  b.batch_size = 64;
  const TimeStepBatch mixed = task.trajectory_batch(b, 0);
  CHECK(mixed.dist_inputs.shape() == Shape{64, 4, 2});
  const std::vector<double> ma = values(mixed.action), mm = values(mixed.mask), md = values(mixed.dist_inputs);
  int64_t random_rows = 0;
  for (size_t r = 0; r < 64; ++r) {
    bool random = false;
    for (size_t t = 0; t < 4; ++t) random = random || (mm[4 * r + t] == 1.0 && ma[4 * r + t] == 0.0);
    if (!random) continue;
    ++random_rows;
    for (size_t j = 0; j < 8; ++j) CHECK(md[8 * r + j] == 0.0);
  }
  CHECK(random_rows > 0);

  // Whole trajectories: each row is one piece plus its final observation, padded to a power
  // of two; a terminated row ends with done at its last step and the terminal state after it.
  TrajectoryBatchOptions whole;
  whole.batch_size = 32;
  whole.margin = 1;
  const TimeStepBatch w = task.trajectory_batch(whole, 3);
  const int64_t l = w.mask.shape()[1];
  CHECK((l & (l - 1)) == 0);
  const std::vector<double> wm = values(w.mask), wd = values(w.done), wo = values(w.observation);
  std::set<int64_t> lengths;
  for (int64_t r = 0; r < 32; ++r) {
    int64_t k = 0;
    while (k < l && wm[static_cast<size_t>(r * l + k)] == 1.0) ++k;
    for (int64_t j = k; j < l; ++j) CHECK(wm[static_cast<size_t>(r * l + j)] == 0.0);
    lengths.insert(k);
    CHECK(k + 1 <= l);
    if (wd[static_cast<size_t>(r * l + k - 1)] == 1.0) {
      const size_t f = static_cast<size_t>((r * l + k) * 4);
      CHECK((std::abs(wo[f]) > 2.4 || std::abs(wo[f + 2]) > 12 * 2 * std::numbers::pi / 360));
    }
  }
  CHECK(lengths.size() > 1);  // the pieces differ in length, so padding was needed
  CHECK(l >= *lengths.rbegin() + 1);
  CHECK(l < 2 * (*lengths.rbegin() + 1));
}

TEST_CASE("RLTask batches sample epochs and trajectories in proportion to their slices") {
  RLTask task(countdown(5), options(1));
  auto piece = [](int64_t steps, float value) {
    TrajectoryData data;
    std::vector<float> obs;
    for (int64_t i = 0; i <= steps; ++i) obs.push_back(value + static_cast<float>(i));
    data.observations = ctrax::from_vector(obs, Shape{steps + 1, 1});
    data.actions = ctrax::zeros(Shape{steps}, DType::int64);
    data.rewards = ctrax::ones(Shape{steps});
    return Trajectory(data, 0.9);
  };
  std::vector<Trajectory> e0, e1;
  e0.push_back(piece(1, 100));  // 1 slice of length 1
  e1.push_back(piece(9, 200));  // 9 slices
  e1.push_back(piece(1, 300));  // 1 slice
  task.add_trajectories(0, std::move(e0));
  task.add_trajectories(1, std::move(e1));
  TrajectoryBatchOptions b;
  b.batch_size = 4000;
  b.max_slice_length = 1;
  std::map<int64_t, int64_t> counts;  // by hundreds: which piece
  std::map<int64_t, int64_t> starts;  // piece 200's slice starts
  for (double x : values(task.trajectory_batch(b, 0).observation)) {
    counts[static_cast<int64_t>(x) / 100] += 1;
    if (x >= 200 && x < 300) starts[static_cast<int64_t>(x) - 200] += 1;
  }
  // 11 slices in all: 1, 9 and 1 of them (4000 draws: sd of a fraction <= 0.008).
  CHECK(counts[1] / 4000.0 == doctest::Approx(1.0 / 11).epsilon(0.25));
  CHECK(counts[2] / 4000.0 == doctest::Approx(9.0 / 11).epsilon(0.05));
  CHECK(counts[3] / 4000.0 == doctest::Approx(1.0 / 11).epsilon(0.25));
  CHECK(starts.size() == 9);
  for (const auto& [s, n] : starts) CHECK(n / static_cast<double>(counts[2]) == doctest::Approx(1.0 / 9).epsilon(0.25));
  // Uniform trajectories: epoch 1 still by slices (10 of 11), then either piece alike.
  b.sample_trajectories_uniformly = true;
  counts.clear();
  for (double x : values(task.trajectory_batch(b, 0).observation)) counts[static_cast<int64_t>(x) / 100] += 1;
  CHECK(counts[2] / 4000.0 == doctest::Approx(5.0 / 11).epsilon(0.05));
  CHECK(counts[3] / 4000.0 == doctest::Approx(5.0 / 11).epsilon(0.05));
}

TEST_CASE("RLTask is reproducible with a fixed key") {
  auto run = [](uint64_t seed) {
    RLTaskOptions o = options(2, seed);
    o.initial_trajectories = 2;
    auto task = std::make_unique<RLTask>("CartPole-v1", o);
    // A policy that uses its key: random actions.
    task->collect_trajectories(ctrax::random_policy(Space::discrete(2)), trajectories(3));
    return task;
  };
  const auto a = run(5), b = run(5), c = run(6);
  REQUIRE(a->trajectories().at(1).size() == b->trajectories().at(1).size());
  for (size_t i = 0; i < a->trajectories().at(1).size(); ++i) {
    CHECK(values(a->trajectories().at(1)[i].observations()) == values(b->trajectories().at(1)[i].observations()));
    CHECK(values(a->trajectories().at(1)[i].actions()) == values(b->trajectories().at(1)[i].actions()));
  }
  CHECK(values(a->trajectories().at(0)[0].observations()) != values(c->trajectories().at(0)[0].observations()));
  TrajectoryBatchOptions o;
  o.batch_size = 8;
  o.max_slice_length = 3;
  CHECK(values(a->trajectory_batch(o, 7).observation) == values(b->trajectory_batch(o, 7).observation));
  CHECK(values(a->trajectory_batch(o, 7).action) == values(b->trajectory_batch(o, 7).action));

  // The batched CartPole and a SyncVectorEnv over CartPoleEnv + TimeLimit give the same data.
  RLTaskOptions o1 = options(3, 9);
  o1.time_limit = 20;
  RLTask by_name("CartPole-v1", o1);
  RLTask by_factory([] { return ctrax::make_env("CartPole-v1", 0); }, o1);
  auto rec = std::make_shared<Recorder>();
  by_name.collect_trajectories(fixed_policy(1, rec), trajectories(5));
  by_factory.collect_trajectories(fixed_policy(1, rec), trajectories(5));
  REQUIRE(by_name.trajectories().at(1).size() == by_factory.trajectories().at(1).size());
  for (size_t i = 0; i < by_name.trajectories().at(1).size(); ++i)
    CHECK(values(by_name.trajectories().at(1)[i].observations()) ==
          values(by_factory.trajectories().at(1)[i].observations()));
}

namespace {

// The same steps as `inner`, with every field of each step in another form than the built-in
// environments give them: float32 rewards, int64 flags, observations stored transposed (not
// contiguous). The collection converts what is not in its form and must store the same data.
class OtherLayouts final : public ctrax::VectorEnv {
 public:
  explicit OtherLayouts(ctrax::VectorEnvPtr inner) : inner_(std::move(inner)) {}
  std::string name() const override { return inner_->name(); }
  int64_t num_envs() const override { return inner_->num_envs(); }
  const Space& single_observation_space() const override { return inner_->single_observation_space(); }
  const Space& single_action_space() const override { return inner_->single_action_space(); }
  Tensor reset(std::optional<uint64_t> seed) override { return inner_->reset(seed); }
  const ctrax::VectorStep& step(const Tensor& actions) override {
    const ctrax::VectorStep& st = inner_->step(actions);
    const auto transposed = [](const Tensor& t) { return t.transpose(0, 1).contiguous().transpose(0, 1); };
    out_.observations = transposed(st.observations);
    out_.final_observations = transposed(st.final_observations);
    out_.rewards = st.rewards.to(DType::float32);
    out_.terminated = st.terminated.to(DType::int64);
    out_.truncated = st.truncated.to(DType::int64);
    return out_;
  }

 private:
  ctrax::VectorEnvPtr inner_;
  ctrax::VectorStep out_;
};

}  // namespace

TEST_CASE("RLTask stores the same pieces when a vector environment's step fields need converting") {
  RLTaskOptions o = options(3, 4);
  o.time_limit = 9;  // truncations as well as terminations
  RLTask plain("CartPole-v1", o);
  RLTask other([](int64_t n, std::optional<int64_t> limit) -> ctrax::VectorEnvPtr {
    return std::make_unique<OtherLayouts>(ctrax::make_vector_env("CartPole-v1", n, limit));
  }, o);
  auto rec = std::make_shared<Recorder>();
  const ctrax::CollectStats a = plain.collect_trajectories(fixed_policy(1, rec), trajectories(7));
  const ctrax::CollectStats b = other.collect_trajectories(fixed_policy(1, rec), trajectories(7));
  CHECK(a.returns == b.returns);
  CHECK(a.episode_returns == b.episode_returns);
  const auto& pa = plain.trajectories().at(1);
  const auto& pb = other.trajectories().at(1);
  REQUIRE(pa.size() == pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    CAPTURE(i);
    CHECK(values(pa[i].observations()) == values(pb[i].observations()));
    CHECK(values(pa[i].actions()) == values(pb[i].actions()));
    CHECK(values(pa[i].rewards()) == values(pb[i].rewards()));
    CHECK(pa[i].terminated() == pb[i].terminated());
    CHECK(pa[i].truncated() == pb[i].truncated());
  }
}

TEST_CASE("RLTask: bad inputs") {
  auto make = [](auto edit) {
    RLTaskOptions o = options(1);
    edit(o);
    return RLTask(countdown(5), o);
  };
  CHECK_THROWS_WITH_AS(make([](RLTaskOptions& o) { o.gamma = 1.5; }), doctest::Contains("gamma must be in [0, 1]"),
                       Error);
  CHECK_THROWS_WITH_AS(make([](RLTaskOptions& o) { o.gamma = -0.1; }), doctest::Contains("gamma must be in [0, 1]"),
                       Error);
  CHECK_THROWS_WITH_AS(make([](RLTaskOptions& o) { o.n_envs = 0; }), doctest::Contains("n_envs must be >= 1"), Error);
  CHECK_THROWS_WITH_AS(make([](RLTaskOptions& o) { o.max_steps = 0; }), doctest::Contains("max_steps must be >= 1"),
                       Error);
  CHECK_THROWS_WITH_AS(make([](RLTaskOptions& o) { o.time_limit = 0; }), doctest::Contains("time_limit must be >= 1"),
                       Error);
  CHECK_THROWS_WITH_AS(make([](RLTaskOptions& o) { o.initial_trajectories = -1; }),
                       doctest::Contains("initial_trajectories must be >= 0"), Error);
  CHECK_THROWS_WITH_AS(make([](RLTaskOptions& o) { o.n_replay_epochs = -1; }),
                       doctest::Contains("n_replay_epochs must be >= 0"), Error);
  CHECK_THROWS_AS(RLTask("NoSuchEnv-v0", options(1)), Error);

  RLTask task(countdown(5), options(2));
  auto rec = std::make_shared<Recorder>();
  const ctrax::CollectPolicy policy = fixed_policy(0, rec, 3);
  CollectOptions both = trajectories(1);
  both.n_interactions = 5;
  CHECK_THROWS_WITH_AS(task.collect_trajectories(policy, both),
                       doctest::Contains("exactly one of n_trajectories and n_interactions, got both"), Error);
  CollectOptions neither;
  CHECK_THROWS_WITH_AS(task.collect_trajectories(policy, neither), doctest::Contains("got neither"), Error);
  CHECK_THROWS_WITH_AS(task.collect_trajectories(policy, trajectories(0)),
                       doctest::Contains("n_trajectories must be >= 1"), Error);
  CHECK_THROWS_WITH_AS(task.collect_trajectories(policy, trajectories(1, -1)), doctest::Contains("epoch must be >= 0"),
                       Error);
  CollectOptions cold = trajectories(1);
  cold.temperature = -1;
  CHECK_THROWS_WITH_AS(task.collect_trajectories(policy, cold), doctest::Contains("temperature must be >= 0"), Error);
  CHECK_THROWS_WITH_AS(task.collect_trajectories(ctrax::CollectPolicy(), trajectories(1)),
                       doctest::Contains("the policy is empty"), Error);

  // Policies answering wrongly.
  auto answer = [](Tensor actions, Tensor dist) {
    return [actions, dist](const Tensor&, Key, double) { return PolicyOutput{actions, dist}; };
  };
  const Tensor good_actions = ctrax::zeros(Shape{2}, DType::int64);
  const Tensor good_dist = ctrax::zeros(Shape{2, 3});
  CHECK_THROWS_WITH_AS(task.collect_trajectories(answer(ctrax::zeros(Shape{2, 1}, DType::int64), good_dist),
                                                 trajectories(1)),
                       doctest::Contains("actions of shape [2, 1], expected [N, ...action shape] = [2]"), Error);
  CHECK_THROWS_WITH_AS(task.collect_trajectories(answer(ctrax::zeros(Shape{3}, DType::int64), good_dist),
                                                 trajectories(1)),
                       doctest::Contains("actions of shape [3]"), Error);
  CHECK_THROWS_WITH_AS(task.collect_trajectories(answer(ctrax::zeros(Shape{2}), good_dist), trajectories(1)),
                       doctest::Contains("expected an integer dtype"), Error);
  CHECK_THROWS_WITH_AS(task.collect_trajectories(answer(Tensor(), good_dist), trajectories(1)),
                       doctest::Contains("undefined actions"), Error);
  CHECK_THROWS_WITH_AS(task.collect_trajectories(answer(good_actions, Tensor()), trajectories(1)),
                       doctest::Contains("undefined dist_inputs"), Error);
  CHECK_THROWS_WITH_AS(task.collect_trajectories(answer(good_actions, ctrax::zeros(Shape{3, 3})), trajectories(1)),
                       doctest::Contains("dist_inputs of shape [3, 3]"), Error);
  CHECK_THROWS_WITH_AS(task.collect_trajectories(answer(good_actions, ctrax::zeros(Shape{2, 3}, DType::int64)),
                                                 trajectories(1)),
                       doctest::Contains("expected floating [N, D]"), Error);
  // D is fixed by the first policy that gives some; D = 0 stays allowed.
  task.collect_trajectories(answer(good_actions, good_dist), trajectories(1));
  CHECK_THROWS_WITH_AS(task.collect_trajectories(answer(good_actions, ctrax::zeros(Shape{2, 4})), trajectories(1)),
                       doctest::Contains("returned 4 dist_inputs per copy, earlier policies of this task 3"), Error);
  CHECK_NOTHROW(task.collect_trajectories(answer(good_actions, ctrax::zeros(Shape{2, 0})), trajectories(1)));

  // Batches.
  RLTask empty(countdown(5), options(1));
  TrajectoryBatchOptions b;
  b.batch_size = 2;
  CHECK_THROWS_WITH_AS(empty.trajectory_batch(b, 0), doctest::Contains("the replay buffer is empty"), Error);
  b.max_slice_length = 0;
  CHECK_THROWS_WITH_AS(task.trajectory_batch(b, 0), doctest::Contains("max_slice_length must be >= 1"), Error);
  CHECK_THROWS_WITH_AS(task.trajectory_batch_stream(b), doctest::Contains("max_slice_length must be >= 1"), Error);
  b.max_slice_length = 2;
  b.batch_size = 0;
  CHECK_THROWS_WITH_AS(task.trajectory_batch(b, 0), doctest::Contains("batch_size must be >= 1"), Error);
  b.batch_size = 2;
  b.margin = -1;
  CHECK_THROWS_WITH_AS(task.trajectory_batch(b, 0), doctest::Contains("margin must be >= 0"), Error);
  b.margin = 0;
  CHECK_THROWS_WITH_AS(task.trajectory_batch(b, -1), doctest::Contains("index must be >= 0"), Error);
  task.set_n_replay_epochs(10);
  task.collect_trajectories(policy, trajectories(1, 3));
  task.remove_epoch(1);
  b.epochs = {1};  // 1 mod 4: not stored
  CHECK_THROWS_WITH_AS(task.trajectory_batch(b, 0), doctest::Contains("the selected epochs hold no trajectories"),
                       Error);
  CHECK_THROWS_WITH_AS(task.set_n_replay_epochs(-1), doctest::Contains("n_replay_epochs must be >= 0"), Error);

  // Adding pieces that do not fit the environment.
  std::vector<Trajectory> wrong;
  wrong.push_back(make_trajectory(3, true));  // observations [4, 2], the space has [1]
  CHECK_THROWS_WITH_AS(task.add_trajectories(1, std::move(wrong)), doctest::Contains("has observations"), Error);
}

TEST_CASE("RLTask: episode returns are whole across collection boundaries, and survive a checkpoint") {
  // Countdown(5): every episode is 5 steps of reward 1; collections of 3 steps cut them.
  RLTaskOptions o;
  o.initial_trajectories = 0;
  RLTask task([] { return std::make_unique<Countdown>(5); }, o);
  auto rec = std::make_shared<Recorder>();
  ctrax::CollectOptions three;
  three.n_interactions = 3;
  const ctrax::CollectStats first = task.collect_trajectories(fixed_policy(0, rec), three);
  CHECK(first.episode_returns.empty());  // 3 of 5 steps: no episode ended
  CHECK(first.returns.empty());  // the piece cut at the boundary closes after collection: not counted
  // The episode's state in progress goes into a checkpoint and comes back.
  std::map<std::string, Tensor> tensors;
  ctrax::io::ManifestFields fields;
  task.export_state(tensors, fields, "task/");
  CHECK(tensors.at("task/episode_returns").to_vector<double>() == std::vector<double>{3.0});
  CHECK(tensors.at("task/episode_lengths").to_vector<int64_t>() == std::vector<int64_t>{3});
  const ctrax::CollectStats second = task.collect_trajectories(fixed_policy(0, rec), three);
  // Steps 4 and 5 end the episode: its whole return is 5, although this collection's piece has 2.
  CHECK(second.episode_returns == std::vector<double>{5.0});
  CHECK(second.episode_lengths == std::vector<int64_t>{5});
  CHECK(second.returns.front() == 2.0);
  // Evaluation reports whole episodes in returns and none in episode_returns.
  ctrax::CollectOptions eval;
  eval.n_trajectories = 2;
  eval.only_eval = true;
  const ctrax::CollectStats e = task.collect_trajectories(fixed_policy(0, rec), eval);
  CHECK(e.returns == std::vector<double>{5.0, 5.0});
  CHECK(e.lengths == std::vector<int64_t>{5, 5});
  CHECK(e.episode_returns.empty());
  // An explicit eval seed leaves the collection counter alone; eval_seed without only_eval is refused.
  const int64_t before = task.n_collections();
  eval.eval_seed = task.evaluation_seed(1, 0);
  task.collect_trajectories(fixed_policy(0, rec), eval);
  CHECK(task.n_collections() == before);
  CHECK(task.evaluation_seed(1, 0) != task.evaluation_seed(2, 0));
  CHECK(task.evaluation_seed(1, 0) != task.evaluation_seed(1, 1));
  CHECK_THROWS_AS(task.evaluation_seed(0, 0), ctrax::Error);
  three.eval_seed = 1;
  CHECK_THROWS_WITH_AS(task.collect_trajectories(fixed_policy(0, rec), three),
                       doctest::Contains("eval_seed applies to evaluation"), ctrax::Error);
}

namespace {
// CartPole pushed toward the side the pole leans to (observation 2: its angle): episodes of
// lengths that depend on the initial state.
ctrax::CollectPolicy lean_policy() {
  return [](const Tensor& obs, Key, double) {
    const std::vector<double> o = obs.to_vector<double>();
    const int64_t n = obs.shape()[0];
    std::vector<int64_t> actions;
    for (int64_t i = 0; i < n; ++i) actions.push_back(o[static_cast<size_t>(i * 4 + 2)] > 0 ? 1 : 0);
    return PolicyOutput{ctrax::from_vector<int64_t>(actions, {n}), ctrax::zeros({n, 0}, DType::float32)};
  };
}

CollectOptions seeded_evaluation(int64_t episodes, uint64_t seed, std::optional<int64_t> eval_envs) {
  CollectOptions o;
  o.only_eval = true;
  o.n_trajectories = episodes;
  o.eval_seed = seed;
  o.eval_envs = eval_envs;
  return o;
}
}  // namespace

TEST_CASE("RLTask seeded evaluation in eval_envs copies: the episodes of that many eval copies, nothing else moves") {
  RLTaskOptions o = options(2);
  o.n_eval_envs = 3;
  o.time_limit = 60;
  RLTask task("CartPole-v1", o);
  RLTaskOptions wide_options = o;
  wide_options.n_eval_envs = 12;
  RLTask wide_task("CartPole-v1", wide_options);
  const uint64_t seed = task.evaluation_seed(1, 7);

  // 12 episodes in 12 copies at once: what a task whose eval copies are 12 plays.
  const ctrax::CollectStats wide = task.collect_trajectories(lean_policy(), seeded_evaluation(12, seed, 12));
  const ctrax::CollectStats reference = wide_task.collect_trajectories(lean_policy(), seeded_evaluation(12, seed, {}));
  REQUIRE(wide.returns.size() == 12);
  CHECK(wide.returns == reference.returns);
  CHECK(wide.lengths == reference.lengths);
  CHECK(std::set<int64_t>(wide.lengths.begin(), wide.lengths.end()).size() > 1);  // the states differ
  CHECK(wide.n_interactions == reference.n_interactions);
  // Again: the kept copies are reset, the episodes the same.
  CHECK(task.collect_trajectories(lean_policy(), seeded_evaluation(12, seed, 12)).returns == wide.returns);
  // The eval copies' own width is the eval copies; another width, other episodes.
  const ctrax::CollectStats three = task.collect_trajectories(lean_policy(), seeded_evaluation(12, seed, 3));
  CHECK(three.returns == task.collect_trajectories(lean_policy(), seeded_evaluation(12, seed, {})).returns);
  CHECK(three.lengths != wide.lengths);
  // Nothing else moved: the counters, and the next routine evaluation equals that of a task that
  // never played the wide one.
  CHECK(task.n_collections() == 0);
  CHECK(task.n_interactions() == 0);
  RLTask untouched("CartPole-v1", o);
  CollectOptions routine;
  routine.only_eval = true;
  routine.n_trajectories = 6;
  CHECK(task.collect_trajectories(lean_policy(), routine).returns ==
        untouched.collect_trajectories(lean_policy(), routine).returns);
}

TEST_CASE("RLTask seeded evaluation in eval_envs copies: bad options and a factory that makes the wrong copies") {
  RLTaskOptions o = options(1);
  RLTask task("CartPole-v1", o);
  CollectOptions unseeded = seeded_evaluation(4, 1, 4);
  unseeded.eval_seed.reset();
  CHECK_THROWS_WITH_AS(task.collect_trajectories(lean_policy(), unseeded),
                       doctest::Contains("eval_envs applies to a seeded evaluation"), Error);
  CHECK_THROWS_WITH_AS(task.collect_trajectories(lean_policy(), seeded_evaluation(4, 1, 0)),
                       doctest::Contains("eval_envs must be >= 1, got 0"), Error);
  // A factory that honours only the widths the task was built with.
  const ctrax::VectorEnvFactory at_most_two_copies = [](int64_t n, std::optional<int64_t> limit) -> ctrax::VectorEnvPtr {
    return ctrax::make_vector_env("CartPole-v1", std::min<int64_t>(n, 2), limit);
  };
  RLTask two_copies_task(at_most_two_copies, options(1));
  CHECK_THROWS_WITH_AS(two_copies_task.collect_trajectories(lean_policy(), seeded_evaluation(8, 1, 8)),
                       doctest::Contains("made 2 copies when asked for eval_envs = 8"), Error);
  // The task still works after the refusal.
  CHECK(two_copies_task.collect_trajectories(lean_policy(), seeded_evaluation(2, 1, 2)).returns.size() == 2);
  // A factory that makes another environment for another width.
  const ctrax::VectorEnvFactory mixed = [](int64_t n, std::optional<int64_t> limit) -> ctrax::VectorEnvPtr {
    return ctrax::make_vector_env(n == 1 ? "CartPole-v1" : "Acrobot-v1", n, limit);
  };
  RLTask mixed_task(mixed, options(1));
  CHECK_THROWS_WITH_AS(mixed_task.collect_trajectories(lean_policy(), seeded_evaluation(4, 1, 4)),
                       doctest::Contains("whose spaces differ from the task's CartPole-v1"), Error);
}
