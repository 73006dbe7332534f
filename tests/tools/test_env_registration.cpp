// The environment registry (rl/environments/env_registry.h): a user's environment registered once works
// where the built-ins do (make_env, make_vector_env, a TOML config, render_frame), and bad
// registrations are refused.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include <unistd.h>

#include <config.h>
#include <ctrax/ctrax.h>
#include <commands.h>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <run_config.h>

using namespace ctrax;

namespace {

constexpr const char* kId = "ctrax-test/Reach-v0";

// A point on [-1, 1] that must reach 0.5: actions move it by -0.1, 0 or +0.1.
class Reach final : public Env {
 public:
  std::string name() const override { return kId; }
  const Space& observation_space() const override { return observation_space_; }
  const Space& action_space() const override { return action_space_; }
  Tensor reset(std::optional<uint64_t> seed = std::nullopt) override {
    if (seed) key_ = Key(*seed);
    key_ = split(key_).first;
    position_ = uniform(key_, Shape{}, DType::float64, -1.0, 1.0).item<double>();
    return observation();
  }
  StepResult step(const Tensor& action) override {
    CTRAX_REQUIRE(action_space_.contains(action), "Reach: action ", action.to_string(), " is not in ", action_space_);
    position_ = std::clamp(position_ + 0.1 * static_cast<double>(action.item<int64_t>() - 1), -1.0, 1.0);
    const bool reached = std::abs(position_ - 0.5) < 0.05;
    return {observation(), reached ? 1.0 : -0.01, reached, false};
  }
  std::vector<double> state() const override { return {position_}; }
  void set_state(const std::vector<double>& state) override {
    CTRAX_REQUIRE(state.size() == 1, "Reach: set_state expects 1 value, got ", state.size());
    position_ = state[0];
  }
  Tensor observation() const override { return from_vector(std::vector<float>{static_cast<float>(position_)}); }

 private:
  Space observation_space_ = Space::box(Shape{1}, -1.0, 1.0);
  Space action_space_ = Space::discrete(3);
  Key key_;
  double position_ = 0.0;
};

// Registered once per process (the registry keeps entries for the program's lifetime).
void register_reach() {
  static const bool registered = [] {
    register_env({.id = kId,
                  .make = [] { return std::make_unique<Reach>(); },
                  .max_episode_steps = 30,
                  .draw = [](const Env& env, const std::vector<double>& state) {
                    render::require_state(env.name(), state, 1, "position");
                    render::Frame f;
                    f.view = {-1.2, 1.2, -0.5, 0.5};
                    f.shapes.push_back(render::Line{"track", {{-1, 0}, {1, 0}}, 0.01, render::kBlack});
                    f.shapes.push_back(render::Circle{"point", {state[0], 0}, 0.05, render::Rgb{200, 0, 0}});
                    return f;
                  },
                  .render_fps = 20});
    return true;
  }();
  (void)registered;
}

}  // namespace

TEST_CASE("A registered environment is made, batched and drawn like a built-in") {
  register_reach();
  const std::vector<std::string> names = env_names();
  CHECK(std::find(names.begin(), names.end(), kId) != names.end());
  const std::vector<std::string> drawable = renderable_env_names();
  CHECK(std::find(drawable.begin(), drawable.end(), kId) != drawable.end());

  EnvPtr env = make_env(kId);
  REQUIRE(dynamic_cast<TimeLimit*>(env.get()) != nullptr);
  CHECK(dynamic_cast<TimeLimit*>(env.get())->max_episode_steps() == 30);
  CHECK(dynamic_cast<TimeLimit*>(make_env(kId, 0).get()) == nullptr);  // 0: no limit
  env->reset(1);
  env->set_state({0.25});
  const render::Frame frame = render_frame(*env);  // through the TimeLimit
  CHECK(frame.get<render::Circle>("point").centre.x == 0.25);
  CHECK(render_state(kId, {-0.5}).get<render::Circle>("point").centre.x == -0.5);
  CHECK_THROWS_WITH_AS(render_state(kId, {0.0, 1.0}), doctest::Contains("has a state of 1 values (position), got 2"),
                       Error);
  CHECK(render_fps(kId) == 20);

  VectorEnvPtr vec = make_vector_env(kId, 3);
  CHECK(dynamic_cast<SyncVectorEnv*>(vec.get()) != nullptr);
  CHECK(vec->num_envs() == 3);
  // A built-in with a batched version gets it.
  CHECK(dynamic_cast<CartPoleVectorEnv*>(make_vector_env("CartPole-v1", 2).get()) != nullptr);
}

TEST_CASE("A registered environment trains from a TOML config") {
  register_reach();
  const toml::table table = tools::parse_config_text(
      "algorithm = \"PPO\"\n[task]\nenv = \"ctrax-test/Reach-v0\"\nn_envs = 2\n"
      "[agent]\nn_interactions_per_epoch = 64\nn_eval_episodes = 1\n"
      "[policy]\nmodel = { widths = [8] }\ntrain_steps_per_epoch = 2\nbatch_size = 4\n"
      "[value]\nmodel = { widths = [8] }\ntrain_steps_per_epoch = 2\nbatch_size = 4\n",
      "reach.toml");
  const tools::RunConfig config = tools::read_run_config(table, "reach.toml");
  CHECK(config.env == kId);
  TaskPtr task = tools::make_task(config);
  CHECK(task->action_space().n() == 3);
  std::unique_ptr<Agent> agent = tools::make_agent(config, task, "");
  const Metrics row = agent->run(2);
  CHECK(agent->epoch() == 2);
  CHECK(std::isfinite(row.at("eval/return_mean")));
}

TEST_CASE("register_env refuses an empty id, no make, a bad limit or frame rate, and a taken id") {
  register_reach();
  auto make = [] { return std::make_unique<Reach>(); };
  CHECK_THROWS_WITH_AS(register_env({.id = "", .make = make}), doctest::Contains("the id is empty"), Error);
  CHECK_THROWS_WITH_AS(register_env({.id = "ctrax-test/NoMake-v0"}), doctest::Contains("make is required"), Error);
  CHECK_THROWS_WITH_AS(register_env({.id = "ctrax-test/Bad-v0", .make = make, .max_episode_steps = -1}),
                       doctest::Contains("max_episode_steps must be >= 0"), Error);
  CHECK_THROWS_WITH_AS(register_env({.id = "ctrax-test/Bad-v0", .make = make, .render_fps = 0}),
                       doctest::Contains("render_fps must be > 0"), Error);
  CHECK_THROWS_WITH_AS(register_env({.id = kId, .make = make}), doctest::Contains("is registered already"), Error);
  CHECK_THROWS_WITH_AS(register_env({.id = "CartPole-v1", .make = make}), doctest::Contains("is registered already"),
                       Error);
  CHECK_THROWS_WITH_AS(make_env("ctrax-test/Missing-v0"), doctest::Contains("a program adds its own with register_env"),
                       Error);
}

namespace {

// What run_cli(args) prints on standard output, and its exit status.
std::pair<std::string, int> run_cli_capturing(std::vector<std::string> args) {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("ctrax_test_cli_" + std::to_string(getpid()) + ".txt");
  std::fflush(stdout);
  const int saved = dup(1);
  FILE* out = std::fopen(path.c_str(), "w");
  REQUIRE(out != nullptr);
  dup2(fileno(out), 1);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  const int status = tools::run_cli(static_cast<int>(argv.size()), argv.data());
  std::fflush(stdout);
  dup2(saved, 1);
  close(saved);
  std::fclose(out);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::filesystem::remove(path);
  return {text.str(), status};
}

}  // namespace

TEST_CASE("A program that registers an environment and calls run_cli lists it and rolls it out") {
  register_reach();
  const auto [listing, list_status] = run_cli_capturing({"ctrax", "list", "environments"});
  CHECK(list_status == 0);
  CHECK(listing.find(kId) != std::string::npos);
  const auto [rows, rollout_status] = run_cli_capturing({"ctrax", "rollout", kId, "--state", "0.3", "--actions", "2,2"});
  CHECK(rollout_status == 0);
  CHECK(rows.find("step,obs_0,reward,terminated,truncated") != std::string::npos);
  CHECK(rows.find("2,0.5") != std::string::npos);  // 0.3 + 0.1 + 0.1 reaches the target
}
