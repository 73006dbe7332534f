// ctrax eval RUN_DIR: plays episodes with a run's newest checkpoint and prints their returns;
// --render FILE also draws one episode (an animated .gif or a .png strip of frames, through
// gnuplot). Nothing in the run directory changes (the agent is opened read-only).
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>

#include <ctrax/kernels/check.h>
#include <ctrax/rl/env.h>
#include <ctrax/rl/render.h>

#include "../gnuplot.h"
#include "../run_config.h"
#include "../run_dir.h"
#include "commands.h"

namespace ctrax::tools {

namespace fs = std::filesystem;

namespace {

struct EvalArgs {
  std::string run_dir;
  int64_t episodes = 10;
  double temperature = 0.0;
  uint64_t seed = 0;
  std::string render;
};

// One episode in a fresh environment seeded with `seed`, a frame before every step and one
// after the last.
std::vector<render::Frame> render_episode(Agent& agent, const RunConfig& config, uint64_t seed, double temperature,
                                          double& episode_return) {
  EnvPtr env = make_env(config.env, config.task.time_limit);
  Tensor observation = env->reset(seed);
  std::vector<render::Frame> frames{render_frame(*env)};
  Key key(seed);
  episode_return = 0.0;
  for (;;) {
    auto [next_key, step_key] = split(key);
    key = next_key;
    const PolicyOutput out = agent.evaluation_act(observation.unsqueeze(0), step_key, temperature);
    const StepResult step = env->step(out.actions.select(0, 0).contiguous());
    episode_return += step.reward;
    frames.push_back(render_frame(*env));
    if (step.terminated || step.truncated) break;
    observation = step.observation;
  }
  return frames;
}

int eval(const EvalArgs& args) {
  CTRAX_REQUIRE(args.episodes >= 1, "--episodes must be >= 1, got ", args.episodes);
  CTRAX_REQUIRE(std::isfinite(args.temperature) && args.temperature >= 0, "--temperature must be >= 0, got ",
                args.temperature);
  const fs::path dir(args.run_dir);
  RunConfig config = open_run_directory(dir);
  if (!args.render.empty()) {
    const fs::path out(args.render);
    CTRAX_REQUIRE(out.extension() == ".gif" || out.extension() == ".png", "--render ", args.render,
                  ": give a .gif (animation) or .png (strip of frames) file");
    CTRAX_REQUIRE(gnuplot_available(), "--render needs gnuplot (Debian: apt-get install gnuplot-nox)");
  }
  std::unique_ptr<RLTask> task = make_task(config);
  config.agent.read_only = true;
  std::unique_ptr<Agent> agent = make_agent(config, *task, dir);
  CTRAX_REQUIRE(agent->epoch() > 0, args.run_dir, " holds no checkpoint to evaluate");
  const CollectStats stats = agent->evaluate(args.episodes, args.temperature);
  std::printf("%s on %s, epoch %lld: %lld episodes at temperature %g: mean return %.2f, mean length %.1f\n",
              agent->name().c_str(), config.env.c_str(), static_cast<long long>(agent->epoch()),
              static_cast<long long>(stats.n_trajectories), args.temperature, stats.mean_return, stats.mean_length);
  if (!args.render.empty()) {
    double episode_return = 0;
    const std::vector<render::Frame> frames = render_episode(*agent, config, args.seed, args.temperature, episode_return);
    write_animation(frames, args.render, render_fps(config.env));
    std::printf("rendered one episode (%zu frames, return %.2f) to %s\n", frames.size(), episode_return,
                args.render.c_str());
  }
  return 0;
}

}  // namespace

void add_eval_command(CLI::App& app, int& status) {
  auto args = std::make_shared<EvalArgs>();
  CLI::App* cmd = app.add_subcommand("eval", "play episodes with a run's newest checkpoint (read-only)");
  cmd->add_option("run_dir", args->run_dir, "the run directory")->required();
  cmd->add_option("--episodes", args->episodes, "episodes to play (default 10)");
  cmd->add_option("--temperature", args->temperature, "sampling temperature (default 0: the greedy action)");
  cmd->add_option("--seed", args->seed, "the rendered episode's seed (default 0); the evaluation episodes "
                                       "continue the run's own evaluation environments");
  cmd->add_option("--render", args->render, "also draw one episode to FILE: .gif (animation) or .png (strip)");
  cmd->callback([args, &status] { status = eval(*args); });
}

}  // namespace ctrax::tools
