// ctrax eval RUN_DIR: plays episodes with one of a run's checkpoints (--checkpoint latest, best
// or an epoch) and prints the statistics of their returns and lengths (mean, std, min, median,
// max, the 95% interval of the mean); --output FILE.csv|.jsonl writes one row per episode;
// --render FILE also draws one episode (an animated .gif or a .png strip of frames, through
// gnuplot). The episodes' seeds come from --seed under a tag that training, the routine
// evaluations and the confirmations never use (RLTask::evaluation_seed), so they are disjoint
// from every seed the run trained or was judged on. Nothing in the run directory changes (the
// agent is opened read-only).
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string>

#include <ctrax/io/atomic_file.h>
#include <ctrax/base/error.h>
#include <ctrax/rl/agents/data_parallel.h>
#include <ctrax/rl/learning/evaluation.h>
#include <ctrax/rl/environments/env.h>
#include <ctrax/rl/environments/env_registry.h>
#include <ctrax/rl/environments/render.h>

#include "../gnuplot.h"
#include "../run_config.h"
#include "../run_dir.h"
#include "commands.h"

namespace ctrax::tools {

namespace fs = std::filesystem;

namespace {

struct EvalArgs {
  std::string run_dir;
  int64_t episodes = 100;
  double temperature = 0.0;
  uint64_t seed = 0;
  std::string render;
  std::string checkpoint = "latest";
  std::string output;
};

// RLTask::evaluation_seed's stream of `ctrax eval` (the agents' confirmations use 1).
constexpr uint64_t kEvalCommandSeeds = 2;

// One row per episode: episode (0-based, in the order they ended), return, length.
void write_episodes(const fs::path& path, const CollectStats& stats) {
  std::ostringstream text;
  text.precision(17);
  const bool csv = path.extension() == ".csv";
  if (csv) text << "episode,return,length\n";
  for (size_t i = 0; i < stats.returns.size(); ++i) {
    if (csv)
      text << i << "," << stats.returns[i] << "," << stats.lengths[i] << "\n";
    else
      text << "{\"episode\": " << i << ", \"return\": " << stats.returns[i] << ", \"length\": " << stats.lengths[i]
           << "}\n";
  }
  io::write_file_atomically(path, text.str());
}

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
  const CheckpointChoice choice = CheckpointChoice::parse(args.checkpoint);
  if (!args.output.empty()) {
    const fs::path out(args.output);
    CTRAX_REQUIRE(out.extension() == ".csv" || out.extension() == ".jsonl", "--output ", args.output,
                  ": give a .csv or .jsonl file");
  }
  const fs::path dir(args.run_dir);
  RunConfig config = open_run_directory(dir);
  if (!args.render.empty()) {
    const fs::path out(args.render);
    CTRAX_REQUIRE(out.extension() == ".gif" || out.extension() == ".png", "--render ", args.render,
                  ": give a .gif (animation) or .png (strip of frames) file");
    CTRAX_REQUIRE(gnuplot_available(), "--render needs gnuplot (Debian: apt-get install gnuplot-nox)");
  }
  // A data-parallel run's checkpoint holds rank 0's task as "task/": evaluate with that task.
  config.task = rank_task_options(config.task, 0, checkpoint_rank_count(dir));
  const FloatingPointModeScope mode(config);  // the run's, so its policy acts as it did in training
  TaskPtr task = make_task(config);
  config.agent.read_only = true;
  config.agent.restore_from = choice;
  std::unique_ptr<Agent> agent = make_agent(config, task, dir);
  CTRAX_REQUIRE(agent->epoch() > 0, args.run_dir, " holds no checkpoint to evaluate");
  const CollectStats stats = agent->evaluate(args.episodes, args.temperature, std::nullopt,
                                             task->evaluation_seed(kEvalCommandSeeds, args.seed));
  const EpisodeSummary s = summarize_episodes(stats.returns, stats.lengths);
  std::printf("%s on %s, epoch %lld (%s checkpoint), temperature %g, seed %llu:\n"
              "  return  %s; min %.2f, median %.2f, max %.2f\n"
              "  length  mean %.1f +- %.1f; min %.0f, median %.1f, max %.0f\n",
              agent->name().c_str(), config.env.c_str(), static_cast<long long>(agent->epoch()),
              choice.to_string().c_str(), args.temperature, static_cast<unsigned long long>(args.seed),
              describe(s).c_str(), s.return_min, s.return_median, s.return_max, s.length_mean, s.length_std,
              s.length_min, s.length_median, s.length_max);
  if (config.target_eval_return)
    std::printf("  target %g: %s\n", *config.target_eval_return,
                s.return_mean >= *config.target_eval_return ? "met" : "not met");
  if (!args.output.empty()) {
    write_episodes(args.output, stats);
    std::printf("wrote %lld episodes to %s\n", static_cast<long long>(s.episodes), args.output.c_str());
  }
  if (!args.render.empty()) {
    double episode_return = 0;
    const std::vector<render::Frame> frames = render_episode(*agent, config, task->evaluation_seed(kEvalCommandSeeds, args.seed), args.temperature,
                                                             episode_return);
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
  cmd->add_option("--episodes", args->episodes, "episodes to play (default 100)");
  cmd->add_option("--checkpoint", args->checkpoint, "latest (default), best (the best confirmed policy) or an epoch");
  cmd->add_option("--output", args->output, "also write one row per episode to FILE.csv or FILE.jsonl");
  cmd->add_option("--temperature", args->temperature, "sampling temperature (default 0: the greedy action)");
  cmd->add_option("--seed", args->seed, "the seed of the episodes (default 0; derived under a tag that "
                                       "training never uses) and of the rendered episode");
  cmd->add_option("--render", args->render, "also draw one episode to FILE: .gif (animation) or .png (strip)");
  cmd->callback([args, &status] { status = eval(*args); });
}

}  // namespace ctrax::tools
