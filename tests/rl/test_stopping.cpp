// Honest stopping (rl/agents/agent.h): a routine evaluation only proposes a stop, a confirmation of
// n_confirm_episodes episodes on seeds of its own decides it; the run ends with exactly the
// confirmed policy, saved as the latest and the best checkpoint; budgets, checkpoint cadence and
// learning-rate and clip-range annealing.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <memory>

#include <ctrax/ctrax.h>
#include <ctrax/io/checkpoint.h>

#include "agent_test_helpers.h"

using namespace ctrax;
using namespace ctrax::test_rl;
namespace fs = std::filesystem;

namespace {

// One-step episodes with reward 1 with probability p (from the environment's seeded key), else
// 0, whatever the action: a routine evaluation of one episode "reaches" a target of 0.9 with
// probability p, while the mean over 100 episodes stays near p.
class Coin final : public Env {
 public:
  explicit Coin(double p) : p_(p), obs_space_(Space::box(Shape{1}, 0.0, 1.0)), act_space_(Space::discrete(2)) {}
  std::string name() const override { return "Coin"; }
  const Space& observation_space() const override { return obs_space_; }
  const Space& action_space() const override { return act_space_; }
  Tensor reset(std::optional<uint64_t> seed) override {
    if (seed) key_ = Key(*seed);
    return observation();
  }
  StepResult step(const Tensor&) override {
    auto [next, draw] = split(key_);
    key_ = next;
    const double u = uniform(draw, Shape{}, DType::float64).item<double>();
    return StepResult{observation(), u < p_ ? 1.0 : 0.0, true, false};
  }
  std::vector<double> state() const override { return {}; }
  void set_state(const std::vector<double>&) override {}
  Tensor observation() const override { return zeros(Shape{1}); }

 private:
  double p_;
  Key key_;
  Space obs_space_, act_space_;
};

// A task of Coin(p) episodes with n_eval_envs eval copies, keyed by `key`.
std::shared_ptr<RLTask> coin_task(int64_t n_eval_envs, uint64_t key, double p) {
  RLTaskOptions t;
  t.n_eval_envs = n_eval_envs;
  t.initial_trajectories = 0;
  t.key = Key(key);
  return std::make_shared<RLTask>([p] { return std::make_unique<Coin>(p); }, t);
}

PolicyAgentOptions coin_policy() {
  PolicyAgentOptions p = small_policy();
  p.policy_model = Policy(2, tanh_mlp(4));
  p.max_slice_length = 1;
  p.policy_batch_size = 2;
  p.policy_train_steps_per_epoch = 1;
  p.policy_evals_per_epoch = 0;
  return p;
}

// Every row the agent wrote, in order.
std::shared_ptr<MemoryMetricsSink> memory_sink(AgentOptions& a) {
  auto sink = std::make_shared<MemoryMetricsSink>();
  a.sinks.push_back(sink);
  return sink;
}

// A PPO on CartPole-v1 with rollout passes that solves it within a few thousand steps (seed 3).
struct Solver {
  RLTaskOptions task;
  AgentOptions agent;
  PolicyAgentOptions policy;
  ActorCriticOptions value;
  PPOOptions ppo;
};

Solver cartpole_solver(const fs::path& dir) {
  Solver s;
  s.task.n_envs = 8;
  s.task.n_eval_envs = 10;
  s.task.gamma = 0.98;
  s.task.initial_trajectories = 0;
  s.task.key = Key(3);
  s.agent.n_interactions_per_epoch = 256;
  s.agent.n_eval_episodes = 10;
  s.agent.target_return = 475.0;
  s.agent.total_env_steps = 60000;
  s.agent.anneal_learning_rate = true;
  s.agent.output_dir = dir;
  const MLPOptions orthogonal_body{.out_activation = true, .kernel_init = orthogonal(std::sqrt(2.0)),
                                   .bias_init = constant_init(0.0)};
  const LayerFactory body = [orthogonal_body] { return MLP({64, 64}, Tanh, orthogonal_body); };
  s.policy.policy_model = Policy(2, body, nullptr, orthogonal(0.01));
  s.policy.policy_optimizer = std::make_shared<Adam>(AdamOptions{.learning_rate = 1e-3, .clip_grad_norm = 0.5});
  s.policy.seed = 3;
  s.value.value_model = Value(body, nullptr, orthogonal(1.0));
  s.value.value_optimizer = std::make_shared<Adam>(AdamOptions{.learning_rate = 1e-3, .clip_grad_norm = 0.5});
  s.value.advantage_estimator = gae(0.8);
  s.value.rollout_passes = 20;
  s.value.minibatch_size = 256;
  s.value.seed = 4;
  s.ppo.entropy_coeff = 0.0;
  s.ppo.anneal_epsilon = true;
  return s;
}

}  // namespace

TEST_CASE("Stopping: a routine evaluation that spikes does not stop the run, the confirmation decides") {
  RLTaskOptions t;
  t.n_eval_envs = 1;
  t.initial_trajectories = 0;
  t.key = Key(11);
  auto task = std::make_shared<RLTask>([] { return std::make_unique<Coin>(0.5); }, t);
  AgentOptions a = collect_trajectories(2);
  a.n_eval_episodes = 1;  // one episode: reaches 1.0 half the time
  a.target_return = 0.9;
  a.n_confirm_episodes = 100;
  const auto rows = memory_sink(a);
  PolicyGradient agent(task, a, coin_policy());
  agent.run(12);
  CHECK(agent.epoch() == 12);
  CHECK_FALSE(agent.solved());
  CHECK_FALSE(agent.done());
  int proposed = 0, confirmed = 0;
  double best = -1;
  for (const MemoryMetricsSink::Row& row : rows->rows()) {
    const bool spiked = row.metrics.at("eval/return_mean") >= 0.9;
    proposed += spiked ? 1 : 0;
    // Exactly the epochs whose routine evaluation reached the target were confirmed.
    CHECK(row.metrics.count("confirm/return_mean") == (spiked ? 1u : 0u));
    if (!spiked) continue;
    ++confirmed;
    const double mean = row.metrics.at("confirm/return_mean");
    CHECK(mean > 0.3);
    CHECK(mean < 0.7);
    CHECK(row.metrics.at("confirm/episodes") == 100);
    CHECK(row.metrics.at("confirm/solved") == 0);
    best = std::max(best, mean);
  }
  REQUIRE(proposed >= 2);  // seed 11's spikes: the run went on past each of them
  CHECK(confirmed == proposed);
  REQUIRE(agent.best_confirmation().has_value());
  CHECK(agent.best_confirmation()->summary.return_mean == best);
}

TEST_CASE("Stopping: a confirmation depends on the epoch's seeds only and leaves the task's counters alone") {
  auto task = coin_task(4, 5, 0.3);
  AgentOptions a = collect_trajectories(2);
  a.n_confirm_episodes = 40;
  PolicyGradient agent(task, a, coin_policy());
  const int64_t collections = task->n_collections();
  const Confirmation first = agent.confirm();
  const Confirmation again = agent.confirm();
  CHECK(task->n_collections() == collections);
  CHECK(first.summary.episodes == 40);
  CHECK(first.summary.return_mean == again.summary.return_mean);
  CHECK_FALSE(first.solved);  // no target
  // The routine evaluation's seeds differ: its episodes are not the confirmation's.
  const CollectStats routine = agent.evaluate(40, 0.0);
  CHECK(routine.returns != std::vector<double>(first.summary.episodes, 0.0));
  CHECK(task->n_collections() == collections + 1);
}

TEST_CASE("Stopping: n_confirm_envs plays the confirmation in that many copies at once, as evaluate() would") {
  auto task = coin_task(4, 5, 0.3);
  AgentOptions a = collect_trajectories(2);
  a.n_confirm_episodes = 40;
  a.n_confirm_envs = 1000;  // more than the episodes: 40 copies are made
  PolicyGradient agent(task, a, coin_policy());
  const int64_t collections = task->n_collections();
  const Confirmation wide = agent.confirm();
  CHECK(task->n_collections() == collections);
  CHECK(wide.summary.episodes == 40);
  // The same episodes as the seeded evaluation in 40 copies; other ones than in the 4 eval copies.
  const uint64_t seed = task->evaluation_seed(1, static_cast<uint64_t>(agent.epoch()));
  const CollectStats in_40 = agent.evaluate(40, 0.0, std::nullopt, seed, 40);
  const CollectStats in_4 = agent.evaluate(40, 0.0, std::nullopt, seed);
  CHECK(wide.summary.return_mean == summarize_episodes(in_40.returns, in_40.lengths).return_mean);
  CHECK(wide.summary.return_std == summarize_episodes(in_40.returns, in_40.lengths).return_std);
  CHECK(in_40.returns != in_4.returns);
  // (At this seed the two sets of episodes differ in their means too, so the check above could
  // not pass with the confirmation played in the eval copies.)
  CHECK(in_40.mean_return != doctest::Approx(in_4.mean_return));
  CHECK(task->n_collections() == collections);
  // Bad values are refused with what was expected.
  AgentOptions zero = a;
  zero.n_confirm_envs = 0;
  CHECK_THROWS_WITH_AS(PolicyGradient(task, zero, coin_policy()), doctest::Contains("n_confirm_envs must be >= 1, got 0"),
                       Error);
  CHECK_THROWS_WITH_AS(agent.evaluate(4, 0.0, std::nullopt, std::nullopt, 4),
                       doctest::Contains("n_envs applies to a seeded evaluation only"), Error);
  CHECK_THROWS_WITH_AS(agent.evaluate(4, 0.0, std::nullopt, seed, 0), doctest::Contains("n_envs must be >= 1, got 0"),
                       Error);
}

TEST_CASE("Stopping: the run ends with the confirmed policy, saved bit for bit as the latest and the best") {
  const fs::path dir = fresh_directory("ctrax_stop_", "solved");
  Solver s = cartpole_solver(dir);
  auto task = std::make_shared<RLTask>("CartPole-v1", s.task);
  const auto rows = memory_sink(s.agent);
  PPO agent(task, s.agent, s.policy, s.value, s.ppo);
  agent.run(1000);
  REQUIRE(agent.solved());
  CHECK(agent.done());
  REQUIRE(agent.last_confirmation().has_value());
  const Confirmation confirmed = *agent.last_confirmation();
  CHECK(confirmed.epoch == agent.epoch());
  CHECK(confirmed.summary.return_mean >= 475.0);
  CHECK(confirmed.summary.episodes == 100);
  CHECK(task->n_interactions() < 60000);
  MESSAGE("solved at epoch ", agent.epoch(), " after ", task->n_interactions(), " steps: ", describe(confirmed.summary));
  // The last row is the confirming epoch's.
  CHECK(rows->rows().back().metrics.at("confirm/solved") == 1);
  CHECK(rows->rows().back().metrics.at("confirm/return_mean") == confirmed.summary.return_mean);
  const Tree weights = agent.policy_trainer().weights();

  // The latest and the best checkpoint are both that epoch's, and hold exactly those weights.
  const io::CheckpointDirectory latest(dir / "checkpoints", 2, io::CheckpointDirectory::Access::read_only);
  const io::CheckpointDirectory best(dir / "checkpoints" / "best", 1, io::CheckpointDirectory::Access::read_only);
  CHECK(latest.latest_step() == agent.epoch());
  CHECK(best.latest_step() == agent.epoch());
  for (const char* which : {"latest", "best"}) {
    CAPTURE(which);
    Solver r = cartpole_solver(dir);
    r.agent.read_only = true;
    r.agent.restore_from = CheckpointChoice::parse(which);
    auto again = std::make_shared<RLTask>("CartPole-v1", r.task);
    PPO restored(again, r.agent, r.policy, r.value, r.ppo);
    CHECK(restored.epoch() == agent.epoch());
    CHECK(restored.solved());
    CHECK(bitwise_equal(restored.policy_trainer().weights(), weights));
    // The same policy on the same seeds: the confirmation repeats exactly.
    CHECK(restored.confirm().summary.return_mean == confirmed.summary.return_mean);
  }
  fs::remove_all(dir);
}

TEST_CASE("Stopping: the final epoch of a budget is confirmed, best is the best confirmation, latest the last") {
  const fs::path dir = fresh_directory("ctrax_stop_", "budget");
  RLTaskOptions t;
  t.n_eval_envs = 1;
  t.initial_trajectories = 0;
  t.key = Key(11);
  AgentOptions a = collect_trajectories(2);
  a.n_eval_episodes = 1;
  a.target_return = 0.9;
  a.n_confirm_episodes = 50;
  a.max_epochs = 9;
  a.checkpoint_every = 4;
  a.output_dir = dir;
  const auto rows = memory_sink(a);
  {
    auto task = std::make_shared<RLTask>([] { return std::make_unique<Coin>(0.5); }, t);
    PolicyGradient agent(task, a, coin_policy());
    agent.run(100);  // stops at max_epochs
    CHECK(agent.epoch() == 9);
    CHECK(agent.done());
    CHECK_FALSE(agent.solved());
    REQUIRE(agent.last_confirmation().has_value());
    CHECK(agent.last_confirmation()->epoch == 9);  // the final epoch is always confirmed
    double best = -1;
    int64_t best_epoch = -1;
    for (const MemoryMetricsSink::Row& row : rows->rows())
      if (row.metrics.count("confirm/return_mean") && row.metrics.at("confirm/return_mean") > best) {
        best = row.metrics.at("confirm/return_mean");
        best_epoch = row.step;
      }
    REQUIRE(agent.best_confirmation().has_value());
    CHECK(agent.best_confirmation()->epoch == best_epoch);
    CHECK(agent.best_confirmation()->summary.return_mean == best);
    // Checkpoints every 4 epochs, at every new best confirmation and at the final epoch.
    const io::CheckpointDirectory latest(dir / "checkpoints", 2, io::CheckpointDirectory::Access::read_only);
    CHECK(latest.latest_step() == 9);
    const io::CheckpointDirectory best_dir(dir / "checkpoints" / "best", 1, io::CheckpointDirectory::Access::read_only);
    CHECK(best_dir.latest_step() == best_epoch);
    CHECK(best_dir.load(best_epoch).double_field("agent/best_confirmation/return_mean") == best);
  }
  {
    // Resuming from the best checkpoint drops the later checkpoints and rows.
    AgentOptions r = a;
    r.sinks.clear();
    r.restore_from = CheckpointChoice::parse("best");
    auto task = std::make_shared<RLTask>([] { return std::make_unique<Coin>(0.5); }, t);
    PolicyGradient agent(task, r, coin_policy());
    const int64_t best_epoch = agent.epoch();
    const io::CheckpointDirectory latest(dir / "checkpoints", 2, io::CheckpointDirectory::Access::read_only);
    for (int64_t step : latest.steps()) CHECK(step <= best_epoch);
    std::ifstream csv(dir / "metrics.csv");
    std::string line, last;
    while (std::getline(csv, line)) last = line;
    CHECK(last.substr(0, last.find(',')) == std::to_string(best_epoch));
  }
  fs::remove_all(dir);
}

TEST_CASE("Stopping: a step budget ends the run at the epoch that reaches it, and options are checked") {
  RLTaskOptions t = cartpole_task(2, 2);
  t.initial_trajectories = 0;
  auto task = std::make_shared<RLTask>("CartPole-v1", t);
  AgentOptions a;
  a.n_interactions_per_epoch = 100;
  a.total_env_steps = 250;
  a.n_confirm_episodes = 3;
  PPO agent(task, a, small_policy(), [] {
    ActorCriticOptions v;
    v.value_model = Value(tanh_mlp(8));
    v.value_train_steps_per_epoch = 1;
    return v;
  }());
  agent.run(50);
  CHECK(agent.epoch() == 3);  // 100, 200, 300 >= 250
  CHECK(task->n_interactions() == 300);
  CHECK(agent.done());
  CHECK(agent.last_confirmation()->summary.episodes == 3);
  CHECK(agent.run(5).empty());  // done: nothing more runs

  auto refused = [&](AgentOptions o, const char* message) {
    auto other = std::make_shared<RLTask>("CartPole-v1", t);
    CHECK_THROWS_WITH_AS(PolicyGradient(other, o, small_policy()), doctest::Contains(message), Error);
  };
  AgentOptions o = collect_trajectories(1);
  o.target_return = 10.0;
  refused(o, "target_return needs n_eval_episodes >= 1");
  o = collect_trajectories(1);
  o.anneal_learning_rate = true;
  refused(o, "anneal_learning_rate needs max_epochs or total_env_steps");
  o = collect_trajectories(1);
  o.checkpoint_every = 0;
  refused(o, "checkpoint_every must be >= 1, got 0");
  o = collect_trajectories(1);
  o.n_confirm_episodes = 0;
  refused(o, "n_confirm_episodes must be >= 1, got 0");
  o = collect_trajectories(1);
  o.total_env_steps = 0;
  refused(o, "total_env_steps must be >= 1, got 0");
  o = collect_trajectories(1);
  o.n_eval_episodes = 1;
  o.target_return = std::numeric_limits<double>::infinity();
  refused(o, "target_return must be finite");
}

TEST_CASE("Stopping: the ci95_low statistic needs the interval's lower end to reach the target") {
  RLTaskOptions t;
  t.n_eval_envs = 1;
  t.initial_trajectories = 0;
  t.key = Key(5);
  auto task = std::make_shared<RLTask>([] { return std::make_unique<Coin>(0.5); }, t);
  AgentOptions a = collect_trajectories(2);
  a.n_confirm_episodes = 100;
  const Confirmation plain = PolicyGradient(task, a, coin_policy()).confirm();
  const double mean = plain.summary.return_mean, low = plain.summary.return_ci95_low;
  REQUIRE(low < mean);
  a.n_eval_episodes = 1;
  a.target_return = (mean + low) / 2;  // between the two
  CHECK(PolicyGradient(task, a, coin_policy()).confirm().solved);
  a.confirm_statistic = AgentOptions::ConfirmStatistic::ci95_low;
  CHECK_FALSE(PolicyGradient(task, a, coin_policy()).confirm().solved);
}

TEST_CASE("Annealing: learning rates and PPO's clip range fall linearly with the run's progress") {
  RLTaskOptions t = cartpole_task(4, 2);
  t.initial_trajectories = 0;
  auto task = std::make_shared<RLTask>("CartPole-v1", t);
  AgentOptions a;
  a.n_interactions_per_epoch = 100;
  a.total_env_steps = 400;
  a.n_confirm_episodes = 1;
  a.anneal_learning_rate = true;
  const auto rows = memory_sink(a);
  ActorCriticOptions v;
  v.value_model = Value(tanh_mlp(8));
  v.value_optimizer = std::make_shared<Adam>(AdamOptions{.learning_rate = 2e-3});
  v.value_train_steps_per_epoch = 1;
  v.value_evals_per_epoch = 1;
  PPOOptions ppo;
  ppo.epsilon = 0.3;
  ppo.anneal_epsilon = true;
  PPO agent(task, a, small_policy(), v, ppo);
  agent.run(4);
  REQUIRE(rows->rows().size() == 4);
  for (size_t e = 0; e < 4; ++e) {
    // Before epoch e + 1's collection, e * 100 of the 400 steps are done.
    const double factor = 1.0 - static_cast<double>(e) * 100.0 / 400.0;
    const Metrics& m = rows->rows()[e].metrics;
    CAPTURE(e);
    CHECK(m.at("policy/learning_rate") == doctest::Approx(1e-3 * factor).epsilon(1e-12));
    CHECK(m.at("value/learning_rate") == doctest::Approx(2e-3 * factor).epsilon(1e-12));
    CHECK(m.at("policy/epsilon") == doctest::Approx(0.3 * factor).epsilon(1e-12));
  }
  CHECK(agent.progress() == 1.0);
}

TEST_CASE("Checkpoints: an agent history tensor relabelled to another dtype, its checksum recomputed, is refused") {
  const fs::path dir = fresh_directory("ctrax_stop_", "relabel");
  RLTaskOptions t = cartpole_task(1);
  AgentOptions a = collect_trajectories(1);
  a.output_dir = dir;
  {
    auto task = std::make_shared<RLTask>("CartPole-v1", t);
    PolicyGradient agent(task, a, small_policy());
    agent.run(2);
  }
  io::CheckpointDirectory checkpoints(dir / "checkpoints", 2);
  io::Checkpoint c = *checkpoints.load_latest();
  const std::vector<double> returns = c.tensors.at("agent/avg_returns").to_vector<double>();
  std::vector<int64_t> relabelled(returns.size());
  for (size_t i = 0; i < returns.size(); ++i) relabelled[i] = static_cast<int64_t>(returns[i]);
  c.tensors.at("agent/avg_returns") = from_vector(relabelled, Shape{static_cast<int64_t>(relabelled.size())});
  checkpoints.save(c.step, c.tensors, c.fields);  // a valid file: the checksum is the new contents'
  auto task = std::make_shared<RLTask>("CartPole-v1", t);
  CHECK_THROWS_WITH_AS(PolicyGradient(task, a, small_policy()),
                       doctest::Contains("tensor 'agent/avg_returns' is int64 [2], expected float64 [N]"), Error);
  fs::remove_all(dir);
}

TEST_CASE("summarize_episodes: mean, sample std, median, extremes and the normal 95% interval") {
  const EpisodeSummary s = summarize_episodes({1, 2, 3, 10}, {5, 6, 7, 8});
  CHECK(s.episodes == 4);
  CHECK(s.return_mean == doctest::Approx(4.0));
  CHECK(s.return_std == doctest::Approx(std::sqrt(50.0 / 3)));  // (9 + 4 + 1 + 36) / (4 - 1)
  CHECK(s.return_median == doctest::Approx(2.5));
  CHECK(s.return_min == 1.0);
  CHECK(s.return_max == 10.0);
  CHECK(s.return_ci95_low == doctest::Approx(4.0 - 1.96 * std::sqrt(50.0 / 3) / 2));
  CHECK(s.return_ci95_high == doctest::Approx(4.0 + 1.96 * std::sqrt(50.0 / 3) / 2));
  CHECK(s.length_mean == doctest::Approx(6.5));
  CHECK(s.length_std == doctest::Approx(std::sqrt(5.0 / 3)));
  CHECK(s.length_median == doctest::Approx(6.5));
  CHECK(s.length_min == 5.0);
  CHECK(s.length_max == 8.0);
  const EpisodeSummary one = summarize_episodes({7}, {3});
  CHECK(one.return_std == 0.0);
  CHECK(one.return_ci95_low == 7.0);
  CHECK(describe(s) == "mean 4.0 +- 4.1 over 4 episodes (95% CI -0.0 to 8.0)");
  CHECK_THROWS_WITH_AS(summarize_episodes({}, {}), doctest::Contains("no episodes"), Error);
  CHECK_THROWS_WITH_AS(summarize_episodes({1, 2}, {3}), doctest::Contains("2 returns but 1 lengths"), Error);
}

TEST_CASE("Stopping: routine evaluations leave training alone, whatever their number and temperatures") {
  // Routine evaluations are seeded by the epoch (RLTask::evaluation_seed), as confirmations are:
  // they leave the task's collection counter alone, so training draws the same policy keys and
  // ends with the same weights with no evaluation, two episodes per epoch, or three at two
  // temperatures. (They used to advance the counter: each of these was another run.)
  struct Run {
    Tree weights;
    int64_t collections;
    std::vector<double> eval_returns;
    double replayed;
  };
  const auto run = [](int64_t n_eval_episodes, std::vector<double> temperatures) {
    RLTaskOptions t = cartpole_task(5, 2);
    t.n_eval_envs = 2;
    auto task = std::make_shared<RLTask>("CartPole-v1", t);
    AgentOptions a;
    a.n_interactions_per_epoch = 24;
    a.n_eval_episodes = n_eval_episodes;
    a.eval_temperatures = std::move(temperatures);
    a.eval_max_steps = 30;
    PolicyGradient agent(task, a, small_policy(1));
    agent.run(3);
    const auto found = agent.eval_returns().find(0.0);
    Run r{agent.policy_trainer().weights().map([](const Tensor& w) { return w.clone(); }), task->n_collections(),
          found == agent.eval_returns().end() ? std::vector<double>{} : found->second, 0.0};
    // The last epoch's evaluation at T = 0, played again by hand on stream 3's seed of epoch 3.
    if (n_eval_episodes > 0)
      r.replayed = agent.evaluate(n_eval_episodes, 0.0, std::nullopt, task->evaluation_seed(3, 3)).mean_return;
    return r;
  };
  const Run none = run(0, {0.0});
  const Run two = run(2, {0.0});
  const Run three = run(3, {1.0, 0.0});
  CHECK(none.collections == 4);  // the training collections only: the initial random one and three epochs
  CHECK(two.collections == 4);
  CHECK(three.collections == 4);
  CHECK(bitwise_equal(none.weights, two.weights));
  CHECK(bitwise_equal(none.weights, three.weights));
  // The evaluations themselves are a pure function of the epoch (stream 3 of the task's
  // evaluation seeds, the same for every temperature): again the same, and replayed by hand.
  CHECK(two.eval_returns.size() == 3);
  CHECK(run(2, {0.0}).eval_returns == two.eval_returns);
  CHECK(two.replayed == two.eval_returns.back());
  CHECK(three.replayed == three.eval_returns.back());
  CHECK(three.collections == 4);
}
