// An agent's construction is finished by restore() (rl/agents/agent.h): build_agent<A> does it for any
// subclass, and an agent whose construction was never finished refuses to run or save rather
// than silently start over on a directory with a checkpoint.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>

#include <ctrax/ctrax.h>

using namespace ctrax;
namespace fs = std::filesystem;

namespace {

// A user's agent: random actions, nothing to train. `finish` says whether its constructor ends
// with restore(), as the built-in agents' constructors do.
class RandomAgent final : public Agent {
 public:
  RandomAgent(TaskPtr task, AgentOptions options, bool finish) : Agent(std::move(task), std::move(options)) {
    if (finish) restore();
  }
  std::string name() const override { return "RandomAgent"; }

 protected:
  PolicyOutput act(const Tensor& observations, Key key, double) override {
    const int64_t n = observations.shape()[0];
    return {randint(key, {n}, 0, task().action_space().n()), zeros({n, 0})};
  }
  Metrics train_epoch() override { return {{"random/trained", 1.0}}; }
  void export_state(std::map<std::string, Tensor>&, io::ManifestFields&) const override {}
  void import_state(const io::Checkpoint&) override {}
};

RLTaskOptions task_options() { return {.n_envs = 2, .initial_trajectories = 0, .key = Key(3)}; }

AgentOptions agent_options(const fs::path& dir) {
  AgentOptions o;
  o.n_interactions_per_epoch = 40;
  o.n_eval_episodes = 1;
  o.output_dir = dir;
  return o;
}

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("ctrax_test_lifecycle_" + std::to_string(getpid()));
  TempDir() { fs::remove_all(path); }
  ~TempDir() { fs::remove_all(path); }
};

}  // namespace

TEST_CASE("An agent built with build_agent resumes from its checkpoint, whether or not its constructor restored") {
  TempDir dir;
  {
    auto task = std::make_shared<RLTask>("CartPole-v1", task_options());
    std::unique_ptr<RandomAgent> agent = build_agent<RandomAgent>(task, agent_options(dir.path), false);
    agent->run(2);
    CHECK(agent->epoch() == 2);
  }
  for (bool constructor_restores : {false, true}) {
    CAPTURE(constructor_restores);
    auto task = std::make_shared<RLTask>("CartPole-v1", task_options());
    std::unique_ptr<RandomAgent> resumed = build_agent<RandomAgent>(task, agent_options(dir.path), constructor_restores);
    CHECK(resumed->epoch() == 2);
    CHECK(resumed->avg_returns().size() == 2);
  }
}

TEST_CASE("An agent whose construction was not finished refuses to run or save") {
  TempDir dir;
  auto task = std::make_shared<RLTask>("CartPole-v1", task_options());
  RandomAgent unfinished(task, agent_options(dir.path), false);
  CHECK_THROWS_WITH_AS(unfinished.run(1), doctest::Contains("RandomAgent: run: the agent's construction was not finished"),
                       Error);
  CHECK_THROWS_WITH_AS(unfinished.save(), doctest::Contains("build_agent<RandomAgent>"), Error);
}

TEST_CASE("An agent shares ownership of its task: the task outlives the caller's pointer") {
  std::weak_ptr<RLTask> watch;
  std::unique_ptr<RandomAgent> agent;
  {
    auto task = std::make_shared<RLTask>("CartPole-v1", task_options());
    watch = task;
    agent = build_agent<RandomAgent>(task, agent_options(""), false);
  }  // the caller's pointer is gone; the agent's keeps the task alive
  CHECK_FALSE(watch.expired());
  agent->run(1);
  CHECK(agent->task().n_interactions() >= 40);
  CHECK(agent->task_ptr() == watch.lock());
  agent.reset();
  CHECK(watch.expired());
  // A null task is refused before anything uses it.
  CHECK_THROWS_WITH_AS(RandomAgent(nullptr, agent_options(""), false), doctest::Contains("the task is null"), Error);
  PolicyAgentOptions policy{.policy_model = Policy(Space::discrete(2), nullptr)};
  ActorCriticOptions value{.value_model = Value()};
  CHECK_THROWS_WITH_AS(PPO(nullptr, agent_options(""), policy, value), doctest::Contains("the task is null"), Error);
}

TEST_CASE("The named setups build the same agent as the positional constructors") {
  auto body = [] { return MLP({8}, Tanh, {.out_activation = true}); };
  auto make_policy = [&] {
    return PolicyAgentOptions{.policy_model = Policy(Space::discrete(2), body), .policy_batch_size = 4,
                              .policy_train_steps_per_epoch = 2, .seed = 5};
  };
  auto make_value = [&] {
    return ActorCriticOptions{.value_model = Value(body), .value_batch_size = 4, .value_train_steps_per_epoch = 2};
  };
  const AgentOptions agent{.n_interactions_per_epoch = 40};
  PPO positional(std::make_shared<RLTask>("CartPole-v1", task_options()), agent, make_policy(), make_value(),
                 PPOOptions{.epsilon = 0.1});
  PPO named(std::make_shared<RLTask>("CartPole-v1", task_options()),
            {.agent = agent, .policy = make_policy(), .value = make_value(), .algorithm = {.epsilon = 0.1}});
  CHECK(named.epsilon() == 0.1);
  const Metrics a = positional.run(1), b = named.run(1);
  CHECK(a.at("policy/loss") == b.at("policy/loss"));
  PolicyGradient pg(std::make_shared<RLTask>("CartPole-v1", task_options()), {.agent = agent, .policy = make_policy()});
  CHECK(pg.run(1).count("policy/loss") == 1);
}
