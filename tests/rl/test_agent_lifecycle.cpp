// An agent's construction is finished by restore() (rl/agent.h): build_agent<A> does it for any
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
  RandomAgent(RLTask& task, AgentOptions options, bool finish) : Agent(task, std::move(options)) {
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
    RLTask task("CartPole-v1", task_options());
    std::unique_ptr<RandomAgent> agent = build_agent<RandomAgent>(task, agent_options(dir.path), false);
    agent->run(2);
    CHECK(agent->epoch() == 2);
  }
  for (bool constructor_restores : {false, true}) {
    CAPTURE(constructor_restores);
    RLTask task("CartPole-v1", task_options());
    std::unique_ptr<RandomAgent> resumed = build_agent<RandomAgent>(task, agent_options(dir.path), constructor_restores);
    CHECK(resumed->epoch() == 2);
    CHECK(resumed->avg_returns().size() == 2);
  }
}

TEST_CASE("An agent whose construction was not finished refuses to run or save") {
  TempDir dir;
  RLTask task("CartPole-v1", task_options());
  RandomAgent unfinished(task, agent_options(dir.path), false);
  CHECK_THROWS_WITH_AS(unfinished.run(1), doctest::Contains("RandomAgent: run: the agent's construction was not finished"),
                       Error);
  CHECK_THROWS_WITH_AS(unfinished.save(), doctest::Contains("build_agent<RandomAgent>"), Error);
}
