// The RL agents with a policy network (rl/agents/policy_agent.h) and with separate policy and value
// networks (rl/agents/actor_critic.h): batch wiring checked against hand computations, shared-layer
// copying, replay epochs, checkpoints, bad options, and fixed-seed convergence on CartPole
// (REINFORCE on CartPole-v0 as Trax's own test; PPO on CartPole-v1).
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <vector>

#include <ctrax/ctrax.h>

#include "rl/agent_test_helpers.h"
#include <ctrax/rl/agents/actor_critic.h>
#include <ctrax/rl/agents/actor_critic_joint.h>
#include <ctrax/rl/agents/agent.h>
#include <ctrax/rl/agents/policy_agent.h>

using namespace ctrax;
using namespace ctrax::test_rl;
namespace fs = std::filesystem;

namespace {

fs::path fresh_directory(const std::string& name) { return test_rl::fresh_directory("ctrax_test_agents_", name); }

ActorCriticOptions small_value() {
  ActorCriticOptions v;
  v.value_model = Value(tanh_mlp(16));
  v.value_optimizer = std::make_shared<Adam>(AdamOptions{.learning_rate = 1e-3});
  v.value_batch_size = 4;
  v.value_train_steps_per_epoch = 2;
  v.advantage_estimator = gae(0.9);
  return v;
}


}  // namespace

TEST_CASE("PolicyGradient weights each step by its normalised return, padding excluded") {
  RLTaskOptions t = cartpole_task(3);
  t.initial_trajectories = 0;
  auto task = std::make_shared<RLTask>("CartPole-v1", t);
  task->add_trajectories(1, {hand_trajectory(3, true, false, 0.99)});
  PolicyAgentOptions p = small_policy();
  p.policy_batch_size = 2;
  p.max_slice_length = std::nullopt;  // whole trajectories: [2, 4] after padding 3 -> 4
  PolicyGradient agent(task, collect_trajectories(1), p);
  // The stream's batch 0 (the trainer's train_stream): (observations, actions, weights).
  const Batch b = agent.policy_trainer().options().train_stream(0);
  REQUIRE(b.size() == 3);
  CHECK(b[0].shape() == Shape{2, 3, 4});
  // Returns of rewards 1, 1, 1 with gamma 0.99: 2.9701, 1.99, 1; twice (both rows are the
  // only trajectory). Mean and population std over the 6 steps, then / 6 steps.
  const std::vector<double> r{2.9701, 1.99, 1.0};
  const double mean = (r[0] + r[1] + r[2]) / 3;
  const double std =
      std::sqrt(((r[0] - mean) * (r[0] - mean) + (r[1] - mean) * (r[1] - mean) + (r[2] - mean) * (r[2] - mean)) / 3);
  const std::vector<double> w = b[2].to_vector<double>();
  REQUIRE(w.size() == 6);
  for (size_t i = 0; i < 6; ++i) CHECK(w[i] == doctest::Approx((r[i % 3] - mean) / (std + 1e-5) / 6).epsilon(1e-5));
}

TEST_CASE("Actor-critic policy batches: advantages from the value network, normalised over the steps") {
  RLTaskOptions t = cartpole_task(4);
  t.initial_trajectories = 0;
  auto task = std::make_shared<RLTask>("CartPole-v1", t);
  // A truncated piece of 5 steps: its last step bootstraps from the final observation.
  task->add_trajectories(1, {hand_trajectory(5, false, true, 0.99)});
  PolicyAgentOptions p = small_policy();
  p.policy_batch_size = 1;
  p.max_slice_length = std::nullopt;
  ActorCriticOptions v = small_value();
  v.advantage_normalization = false;
  PPO agent(task, collect_trajectories(1), p, v);
  const Batch b = agent.policy_batch(0);
  REQUIRE(b.size() == 5);
  // Whole trajectory with margin 1: 5 steps + the final observation (one slice: no padding);
  // the batch keeps the first 6 - 1 = 5 entries.
  CHECK(b[0].shape() == Shape{1, 5, 4});
  const Trajectory& traj = task->trajectories().at(1).front();
  const Tensor layout = traj.observations().reshape(Shape{1, 6, 4});
  const std::vector<double> values = agent.values(layout).to_vector<double>();
  // GAE(0.9) by hand over steps 0..4, bootstrapping from V(o_5).
  std::vector<double> adv(5);
  double next = 0;
  for (int64_t i = 4; i >= 0; --i) {
    const double delta = 1.0 + 0.99 * values[static_cast<size_t>(i + 1)] - values[static_cast<size_t>(i)];
    next = delta + 0.99 * 0.9 * (i == 4 ? 0.0 : next);
    adv[static_cast<size_t>(i)] = next;
  }
  const std::vector<double> got = b[2].to_vector<double>();
  for (size_t i = 0; i < 5; ++i) CHECK(got[i] == doctest::Approx(adv[i]).epsilon(1e-4));
  CHECK(b[4].to_vector<double>() == std::vector<double>{1, 1, 1, 1, 1});
  CHECK(b[1].to_vector<double>()[3] == 1.0);                      // actions alternate
  CHECK(b[3].to_vector<double>()[2 * 4] == doctest::Approx(0.4));  // dist_inputs of step 4

  // With normalisation: mean 0 and std 1 over the 5 steps; 0 on padding.
  ActorCriticOptions vn = small_value();
  PPO normalised(task, collect_trajectories(1), p, vn);
  const std::vector<double> a = normalised.policy_batch(0)[2].to_vector<double>();
  double sum = 0, square = 0;
  for (size_t i = 0; i < 5; ++i) sum += a[i];
  for (size_t i = 0; i < 5; ++i) square += (a[i] - sum / 5) * (a[i] - sum / 5);
  CHECK(sum / 5 == doctest::Approx(0.0).epsilon(1e-5));
  CHECK(std::sqrt(square / 5) == doctest::Approx(1.0).epsilon(1e-4));
}

TEST_CASE("Actor-critic value batches: targets V_target + A, scaled by 1 - gamma with scale_value_targets") {
  RLTaskOptions t = cartpole_task(5);
  t.initial_trajectories = 0;
  t.gamma = 0.9;
  auto task = std::make_shared<RLTask>("CartPole-v1", t);
  task->add_trajectories(1, {hand_trajectory(3, true, false, 0.9)});
  PolicyAgentOptions p = small_policy();
  p.max_slice_length = std::nullopt;
  ActorCriticOptions v = small_value();
  v.value_batch_size = 1;
  v.advantage_estimator = td_lambda(0.0);  // G_t = r_t + gamma V(o_{t+1}), 0 after termination
  v.scale_value_targets = true;
  A2C agent(task, collect_trajectories(1), p, v);
  const Batch b = agent.value_batch(0);
  REQUIRE(b.size() == 3);
  const Tensor layout = task->trajectories().at(1).front().observations().reshape(Shape{1, 4, 4});
  const std::vector<double> values = agent.values(layout).to_vector<double>();  // already times 10
  const std::vector<double> targets = b[1].to_vector<double>();
  CHECK(targets[0] == doctest::Approx((1.0 + 0.9 * values[1]) / 10).epsilon(1e-4));
  CHECK(targets[1] == doctest::Approx((1.0 + 0.9 * values[2]) / 10).epsilon(1e-4));
  CHECK(targets[2] == doctest::Approx(1.0 / 10).epsilon(1e-4));  // terminated: no bootstrap
  CHECK(b[2].to_vector<double>()[0] == 1.0);
}

TEST_CASE("Actor-critic copies the shared layers both ways around value training") {
  auto task = std::make_shared<RLTask>("CartPole-v1", cartpole_task(6));
  PolicyAgentOptions p = small_policy();
  p.policy_model = Serial({Dense(16), Tanh(), Dense(2)});
  ActorCriticOptions v = small_value();
  v.value_model = Serial({Dense(16), Tanh(), Dense(1), Fn("Squeeze", [](const Tensor& x) { return x.squeeze(-1); })});
  v.n_shared_layers = 1;
  A2C agent(task, collect_trajectories(2), p, v);
  // At construction the value network starts from the policy's first layer.
  CHECK(bitwise_equal(agent.policy_trainer().weights()[0], agent.value_trainer().weights()[0]));
  agent.run(1);
  // After an epoch the value-trained layer went back to the policy, which then trained it
  // further: the value's copy is the one from before policy training, the others differ.
  CHECK(!bitwise_equal(agent.policy_trainer().weights()[2], agent.value_trainer().weights()[2]));
  CHECK(agent.value_trainer().step() == 2);
  CHECK(agent.policy_trainer().step() == 2);

  ActorCriticOptions bad = v;
  bad.n_shared_layers = 5;
  CHECK_THROWS_WITH_AS(A2C(task, collect_trajectories(2), p, bad),
                       doctest::Contains("n_shared_layers = 5 needs policy and value models"), Error);
  bad.n_shared_layers = 2;  // layer 1 (Tanh) has no weights on both sides, fine; 3 would not fit
  CHECK_NOTHROW(A2C(task, collect_trajectories(2), p, bad));
  bad.n_shared_layers = 3;
  CHECK_THROWS_AS(A2C(task, collect_trajectories(2), p, bad), Error);
}

TEST_CASE("Actor-critic shares layers with a policy whose std is a state-independent vector") {
  // Policy(distribution) appends the log std as the last item of its own Serial, so the
  // normaliser, body and head keep their positions and n_shared_layers copies the body.
  auto task = std::make_shared<RLTask>("Pendulum-v1", cartpole_task(8));
  PolicyAgentOptions p = small_policy();
  const auto gaussian = std::make_shared<Gaussian>(Shape{1}, 2.0, LearnStd::state_independent);
  p.distribution = gaussian;
  const LayerFactory body = [] { return MLP({16}, Tanh, {.out_activation = true}); };
  p.policy_model = Policy(*gaussian, body, [] { return Normalize(); });
  ActorCriticOptions v = small_value();
  v.value_model = Value(body, [] { return Normalize(); });
  v.n_shared_layers = 2;  // the Normalize (no weights) and the body
  A2C agent(task, collect_trajectories(2), p, v);
  const Tree& policy_weights = agent.policy_trainer().weights();
  REQUIRE(policy_weights.size() == 4);  // Normalize, body, head, log std
  CHECK(bitwise_equal(policy_weights[1], agent.value_trainer().weights()[1]));
  CHECK(policy_weights[3]["columns"].leaf().shape() == Shape{1});
  agent.run(1);
}

TEST_CASE("Actor-critic replay: on_policy batches come from the last epoch, off-policy from every stored one") {
  RLTaskOptions t = cartpole_task(7);
  t.initial_trajectories = 0;
  auto task = std::make_shared<RLTask>("CartPole-v1", t);
  task->add_trajectories(1, {hand_trajectory(3, true, false, 0.99)});
  task->add_trajectories(2, {hand_trajectory(6, true, false, 0.99)});
  PolicyAgentOptions p = small_policy();
  p.policy_batch_size = 16;
  p.max_slice_length = std::nullopt;
  ActorCriticOptions v = small_value();
  v.n_replay_epochs = 3;
  PPO on(task, collect_trajectories(1), p, v);
  CHECK(task->n_replay_epochs() == 3);
  // Only the 6-step trajectory: every row has 6 steps.
  const std::vector<double> mask = on.policy_batch(0)[4].to_vector<double>();
  double steps = 0;
  for (double m : mask) steps += m;
  CHECK(steps == 16 * 6);
  v.on_policy = false;
  PPO off(task, collect_trajectories(1), p, v);
  const std::vector<double> mask_off = off.policy_batch(0)[4].to_vector<double>();
  double steps_off = 0;
  for (double m : mask_off) steps_off += m;
  CHECK(steps_off < 16 * 6);  // some rows hold the 3-step one
  CHECK(steps_off > 16 * 3);
}

TEST_CASE("Agents reject bad options with clear messages") {
  auto task = std::make_shared<RLTask>("CartPole-v1", cartpole_task(8));
  PolicyAgentOptions p = small_policy();
  AgentOptions both = collect_trajectories(1);
  both.n_interactions_per_epoch = 10;
  CHECK_THROWS_WITH_AS(PolicyGradient(task, both, p), doctest::Contains("exactly one of n_trajectories_per_epoch"),
                       Error);
  CHECK_THROWS_WITH_AS(PolicyGradient(task, AgentOptions{}, p), doctest::Contains("exactly one of"), Error);
  AgentOptions neg = collect_trajectories(1);
  neg.n_eval_episodes = -1;
  CHECK_THROWS_WITH_AS(PolicyGradient(task, neg, p), doctest::Contains("n_eval_episodes must be >= 0, got -1"), Error);
  PolicyAgentOptions no_model = p;
  no_model.policy_model = nullptr;
  CHECK_THROWS_WITH_AS(PolicyGradient(task, collect_trajectories(1), no_model),
                       doctest::Contains("policy_model is required"), Error);
  PolicyAgentOptions wrong_d = p;
  wrong_d.policy_model = Policy(3, tanh_mlp(8));
  CHECK_THROWS_WITH_AS(PolicyGradient(task, collect_trajectories(1), wrong_d),
                       doctest::Contains("needs [1, 1, 2]"), Error);
  PolicyAgentOptions gaussian = p;
  gaussian.distribution = std::make_shared<Gaussian>(Shape{1});
  CHECK_THROWS_WITH_AS(PolicyGradient(task, collect_trajectories(1), gaussian),
                       doctest::Contains("the distribution Gaussian"), Error);
  PolicyAgentOptions joint = p;
  joint.policy_model = PolicyAndValue(2, tanh_mlp(8));
  CHECK_THROWS_WITH_AS(PolicyGradient(task, collect_trajectories(1), joint),
                       doctest::Contains("must take 1 input and give 1 output"), Error);
  PolicyAgentOptions batch = p;
  batch.policy_batch_size = 0;
  CHECK_THROWS_WITH_AS(PolicyGradient(task, collect_trajectories(1), batch),
                       doctest::Contains("policy_batch_size must be >= 1, got 0"), Error);
  ActorCriticOptions v = small_value();
  v.value_model = nullptr;
  CHECK_THROWS_WITH_AS(PPO(task, collect_trajectories(1), p, v), doctest::Contains("value_model is required"), Error);
  v = small_value();
  v.value_evals_per_epoch = 0;
  CHECK_THROWS_WITH_AS(PPO(task, collect_trajectories(1), p, v),
                       doctest::Contains("value_evals_per_epoch must be >= 1, got 0"), Error);
  v = small_value();
  CHECK_THROWS_WITH_AS(PPO(task, collect_trajectories(1), p, v, {.epsilon = 1.5}), doctest::Contains("epsilon"),
                       Error);
  CHECK_THROWS_WITH_AS(AWR(task, collect_trajectories(1), p, v, {.beta = 0}), doctest::Contains("beta"), Error);
  RLTaskOptions undiscounted = cartpole_task(9);
  undiscounted.gamma = 1.0;
  auto task1 = std::make_shared<RLTask>("CartPole-v1", undiscounted);
  v.scale_value_targets = true;
  CHECK_THROWS_WITH_AS(PPO(task1, collect_trajectories(1), p, v), doctest::Contains("needs gamma < 1"), Error);
  CHECK_THROWS_WITH_AS(PolicyGradient(task, collect_trajectories(1), p).run(0),
                       doctest::Contains("n_epochs must be >= 1, got 0"), Error);
}

TEST_CASE("Agent checkpoints: a new agent on the same directory continues from the saved epoch") {
  const fs::path dir = fresh_directory("resume");
  AgentOptions a = collect_trajectories(2);
  a.output_dir = dir;
  a.n_eval_episodes = 1;
  auto task = std::make_shared<RLTask>("CartPole-v1", cartpole_task(10));
  PPO first(task, a, small_policy(), small_value());
  first.run(2);
  CHECK(first.epoch() == 2);
  CHECK(fs::exists(dir / "metrics.csv"));
  CHECK(fs::exists(dir / "metrics.jsonl"));

  auto task2 = std::make_shared<RLTask>("CartPole-v1", cartpole_task(10));
  PPO second(task2, a, small_policy(), small_value());
  CHECK(second.epoch() == 2);
  CHECK(second.avg_returns() == first.avg_returns());
  CHECK(second.eval_returns() == first.eval_returns());
  CHECK(bitwise_equal(second.policy_trainer().weights(), first.policy_trainer().weights()));
  CHECK(bitwise_equal(second.policy_trainer().slots(), first.policy_trainer().slots()));
  CHECK(bitwise_equal(second.value_trainer().weights(), first.value_trainer().weights()));
  CHECK(second.value_trainer().step() == first.value_trainer().step());
  second.run(1);
  CHECK(second.epoch() == 3);

  // A checkpoint of another algorithm is refused, naming both.
  auto task3 = std::make_shared<RLTask>("CartPole-v1", cartpole_task(10));
  CHECK_THROWS_WITH_AS(PolicyGradient(task3, a, small_policy()),
                       doctest::Contains("holds a PPO agent, this is a PolicyGradient"), Error);
  // So is one of the same algorithm with another network.
  PolicyAgentOptions wider = small_policy();
  wider.policy_model = Policy(2, tanh_mlp(32));
  CHECK_THROWS_WITH_AS(PPO(task3, a, wider, small_value()), doctest::Contains("policy/weights/"), Error);
  fs::remove_all(dir);
}

TEST_CASE("PolicyGradient reaches 200 on CartPole-v0 (Trax's test) with a fixed seed") {
  // Trax's test_policy_gradient_cartpole: Dense64-Relu-Dense64-Relu policy, Adam at a constant
  // 1e-2, batch 128, 2 trajectories per epoch, max_steps 200; it must collect a mean return
  // of 200 within 200 epochs.
  RLTaskOptions t = cartpole_task(1);
  t.max_steps = 200;
  auto task = std::make_shared<RLTask>("CartPole-v0", t);
  PolicyAgentOptions p;
  p.policy_model = Policy(2, [] { return MLP({64, 64}, Relu, {.out_activation = true}); });
  p.policy_optimizer = std::make_shared<Adam>(AdamOptions{.learning_rate = 1e-2});
  p.policy_batch_size = 128;
  p.policy_train_steps_per_epoch = 1;
  p.policy_evals_per_epoch = 0;
  PolicyGradient agent(task, collect_trajectories(2), p);
  int64_t epochs = 0;
  while (epochs < 200 && (agent.avg_returns().empty() || agent.avg_returns().back() < 200.0)) {
    agent.run(1);
    ++epochs;
  }
  MESSAGE("REINFORCE reached ", agent.avg_returns().back(), " after ", epochs, " epochs");
  CHECK(agent.avg_returns().back() == 200.0);
}

TEST_CASE("PPO reaches an evaluation return of 195 on CartPole-v1 with a fixed seed") {
  RLTaskOptions t = cartpole_task(2, 8);
  auto task = std::make_shared<RLTask>("CartPole-v1", t);
  AgentOptions a;
  a.n_interactions_per_epoch = 2048;
  a.n_eval_episodes = 4;
  PolicyAgentOptions p;
  p.policy_model = Policy(2, tanh_mlp(64), nullptr, 0.01);
  p.policy_optimizer = std::make_shared<Adam>(AdamOptions{.learning_rate = 1e-3});
  p.policy_batch_size = 16;
  p.policy_train_steps_per_epoch = 40;
  p.policy_evals_per_epoch = 0;
  p.max_slice_length = 64;
  p.seed = 2;
  ActorCriticOptions v;
  v.value_model = Value(tanh_mlp(64));
  v.value_optimizer = std::make_shared<Adam>(AdamOptions{.learning_rate = 1e-3});
  v.value_batch_size = 16;
  v.value_train_steps_per_epoch = 40;
  v.advantage_estimator = gae(0.95);
  v.scale_value_targets = true;
  PPO agent(task, a, p, v, {.epsilon = 0.2, .entropy_coeff = 0.0});
  int64_t epochs = 0;
  while (epochs < 40 && (agent.eval_returns().empty() || agent.eval_returns().at(0.0).back() < 195.0)) {
    agent.run(1);
    ++epochs;
  }
  MESSAGE("PPO reached ", agent.eval_returns().at(0.0).back(), " after ", epochs, " epochs, ", task->n_interactions(),
          " environment steps");
  CHECK(agent.eval_returns().at(0.0).back() >= 195.0);
}

namespace {

// Runs `first` epochs of a fresh agent in a child process that saves to `dir` and exits, then
// resumes in this process with a fresh task and agent and runs `second` more; returns the
// resumed agent's task and agent (the caller compares them with an uninterrupted run).
template <typename MakeAgent>
std::pair<TaskPtr, std::unique_ptr<Agent>> resume_in_new_process(const MakeAgent& make,
                                                                                  const fs::path& dir, int64_t first,
                                                                                  int64_t second) {
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    int status = 0;
    try {
      auto [task, agent] = make(dir);
      agent->run(first);
    } catch (...) {
      status = 1;
    }
    _exit(status);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  auto resumed = make(dir);
  CHECK(resumed.second->epoch() == first);
  resumed.second->run(second);
  return resumed;
}

// PPO with an observation normaliser (collect-mode statistics) on 4 CartPoles, collecting by
// interactions so that episodes run across epochs.
std::pair<TaskPtr, std::unique_ptr<Agent>> make_ppo(const fs::path& dir) {
  auto task = std::make_shared<RLTask>("CartPole-v1", cartpole_task(21, 4));
  AgentOptions a;
  a.n_interactions_per_epoch = 150;
  a.n_eval_episodes = 2;
  a.output_dir = dir;
  PolicyAgentOptions p = small_policy(3);
  p.policy_model = Policy(2, tanh_mlp(16), [] { return Normalize(); });
  ActorCriticOptions v = small_value();
  v.value_model = Value(tanh_mlp(16), [] { return Normalize(); });
  auto agent = std::make_unique<PPO>(task, a, p, v);
  return {std::move(task), std::move(agent)};
}

std::pair<TaskPtr, std::unique_ptr<Agent>> make_ppo_joint(const fs::path& dir) {
  auto task = std::make_shared<RLTask>("Pendulum-v1", cartpole_task(22, 2));
  AgentOptions a;
  a.n_interactions_per_epoch = 120;
  a.n_eval_episodes = 1;
  a.eval_max_steps = 50;
  a.output_dir = dir;
  ActorCriticJointOptions j;
  j.joint_model = PolicyAndValue(2, tanh_mlp(16));
  j.distribution = std::make_shared<Gaussian>(Shape{1}, 1.0, LearnStd::separate);
  j.batch_size = 4;
  j.train_steps_per_epoch = 3;
  j.max_slice_length = 8;
  j.seed = 4;
  auto agent = std::make_unique<PPOJoint>(task, a, j);
  return {std::move(task), std::move(agent)};
}

// Everything an agent saves, as the checkpoint would hold it.
std::map<std::string, Tensor> saved_tensors(const fs::path& dir) {
  return io::CheckpointDirectory(dir / "checkpoints", 2).load_latest()->tensors;
}

}  // namespace

TEST_CASE("Agents resumed in a new process continue exactly as the uninterrupted run") {
  for (const auto& agent :
       std::vector<std::pair<std::string, std::function<std::pair<TaskPtr, std::unique_ptr<Agent>>(
                                             const fs::path&)>>>{{"ppo", make_ppo}, {"ppo_joint", make_ppo_joint}}) {
    const std::string& name = agent.first;
    const auto& make = agent.second;
    CAPTURE(name);
    const fs::path straight_dir = fresh_directory("straight_" + name);
    const fs::path resumed_dir = fresh_directory("resumed_" + name);
    auto straight = make(straight_dir);
    straight.second->run(4);
    auto resumed = resume_in_new_process(make, resumed_dir, 2, 2);
    CHECK(resumed.second->epoch() == 4);
    CHECK(resumed.second->avg_returns() == straight.second->avg_returns());
    CHECK(resumed.second->eval_returns() == straight.second->eval_returns());
    CHECK(resumed.first->n_interactions() == straight.first->n_interactions());
    // Every tensor of the final checkpoints (networks, slots, statistics, replay buffer,
    // environment states) is bit-identical.
    const std::map<std::string, Tensor> a = saved_tensors(straight_dir), b = saved_tensors(resumed_dir);
    REQUIRE(a.size() == b.size());
    for (const auto& entry : a) {
      const std::string& key = entry.first;
      const Tensor& tensor = entry.second;
      CAPTURE(key);
      REQUIRE(b.count(key) == 1);
      CHECK(bitwise_equal(Tree(tensor), Tree(b.at(key))));
    }
    // The metrics files hold one row per epoch, the first two written by the child.
    std::ifstream csv(resumed_dir / "metrics.csv");
    int lines = 0;
    for (std::string line; std::getline(csv, line);) ++lines;
    CHECK(lines == 5);
    fs::remove_all(straight_dir);
    fs::remove_all(resumed_dir);
  }
}

TEST_CASE("Agents with only_eval collect for evaluation, store nothing and train nothing") {
  RLTaskOptions t = cartpole_task(30, 2);
  t.initial_trajectories = 0;
  auto task = std::make_shared<RLTask>("CartPole-v1", t);
  AgentOptions a = collect_trajectories(3);
  a.only_eval = true;
  a.n_eval_episodes = 1;
  PPO agent(task, a, small_policy(), small_value());
  const Tree before = agent.policy_trainer().weights();
  const Metrics row = agent.run(2);
  CHECK(agent.epoch() == 2);
  CHECK(task->trajectories().empty());
  CHECK(agent.policy_trainer().step() == 0);
  CHECK(agent.value_trainer().step() == 0);
  CHECK(bitwise_equal(before, agent.policy_trainer().weights()));
  CHECK(row.count("train/episodes") == 1);
  CHECK(row.count("eval/return_mean") == 1);
  CHECK(row.count("policy/loss") == 0);
  CHECK(agent.avg_returns().size() == 2);
  CHECK(agent.avg_returns()[0] > 0);
}

TEST_CASE("Agents: a value model's Normalize follows the collected observations as the policy's does") {
  // Both networks see the same observations while collecting (Mode::collect) and none while
  // evaluating, so after training their statistics are equal, and not the initial ones.
  auto task = std::make_shared<RLTask>("CartPole-v1", cartpole_task(31, 4));
  AgentOptions a;
  a.n_interactions_per_epoch = 100;
  a.n_eval_episodes = 2;
  PolicyAgentOptions p = small_policy(3);
  p.policy_model = Policy(2, tanh_mlp(16), [] { return Normalize(); });
  ActorCriticOptions v = small_value();
  v.value_model = Value(tanh_mlp(16), [] { return Normalize(); });
  PPO agent(task, a, p, v);
  const std::vector<Tensor> initial = agent.value_trainer().state().leaves();
  agent.run(2);
  const std::vector<Tensor> policy = agent.policy_trainer().state().leaves();
  const std::vector<Tensor> value = agent.value_trainer().state().leaves();
  REQUIRE(policy.size() == value.size());
  REQUIRE(value.size() == initial.size());
  bool changed = false;
  for (size_t i = 0; i < value.size(); ++i) {
    CHECK(value[i].to_vector<double>() == policy[i].to_vector<double>());
    changed = changed || value[i].to_vector<double>() != initial[i].to_vector<double>();
  }
  CHECK(changed);
}
