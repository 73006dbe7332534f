// ctrax rollout ENV (--seed N | --state "a,b,c,d") (--actions "0,1,1" | --actions-file FILE)
//                   [--max-episode-steps N]
//
// Plays an action sequence in a built-in environment and prints every step as CSV (rl/environments/rollout.h:
// step, observation, reward, terminated, truncated): for comparing ctrax's environments with
// Gymnasium's step by step. The episode starts from reset(seed) (seed 0 by default) or, with
// --state, from that internal state (each environment documents its layout, e.g. CartPole: x,
// x_dot, theta, theta_dot). Actions are numbers separated by commas or whitespace: one integer
// per step for discrete action spaces, prod(shape) numbers per step for Box ones. Output stops
// where the episode ends, with a note on stderr when actions were left over.
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>

#include <ctrax/base/error.h>
#include <ctrax/rl/environments/env.h>
#include <ctrax/rl/environments/env_registry.h>
#include <ctrax/rl/environments/rollout.h>

#include "commands.h"

namespace ctrax::tools {

namespace {

struct RolloutArgs {
  std::string env, state, actions, actions_file;
  std::optional<uint64_t> seed;
  std::optional<int64_t> max_episode_steps;
};

int rollout(const RolloutArgs& args) {
  CTRAX_REQUIRE(!args.actions.empty() || !args.actions_file.empty(), "give --actions or --actions-file");
  std::string actions_text = args.actions;
  if (!args.actions_file.empty()) {
    std::ifstream in(args.actions_file);
    CTRAX_REQUIRE(in.good(), "cannot read the actions file ", args.actions_file);
    std::ostringstream text;
    text << in.rdbuf();
    actions_text = text.str();
  }
  EnvPtr env = make_env(args.env, args.max_episode_steps);
  RolloutStart start;
  start.seed = args.seed.value_or(0);
  if (!args.state.empty()) start.state = parse_numbers(args.state, "--state");
  const std::vector<Tensor> actions = actions_from_numbers(env->action_space(), parse_numbers(actions_text, "--actions"));
  const RolloutSummary summary = write_rollout_csv(*env, start, actions, std::cout);
  std::cout.flush();
  if (summary.steps < static_cast<int64_t>(actions.size()))
    std::cerr << "ctrax rollout: the episode was " << (summary.terminated ? "terminated" : "truncated") << " after "
              << summary.steps << " of " << actions.size() << " actions\n";
  return 0;
}

}  // namespace

void add_rollout_command(CLI::App& app, int& status) {
  auto args = std::make_shared<RolloutArgs>();
  std::string known;
  for (const std::string& name : env_names()) known += (known.empty() ? "" : ", ") + name;
  CLI::App* cmd = app.add_subcommand("rollout", "play an action sequence in an environment and print each step as CSV");
  cmd->add_option("env", args->env, "environment id (" + known + ")")->required();
  auto* seed = cmd->add_option("--seed", args->seed, "reset(seed) before playing (default 0)");
  auto* state = cmd->add_option("--state", args->state, "start from this internal state (comma-separated numbers)");
  seed->excludes(state);
  auto* actions = cmd->add_option("--actions", args->actions, "actions, comma or space separated");
  auto* file = cmd->add_option("--actions-file", args->actions_file, "read the actions from this file");
  actions->excludes(file);
  cmd->add_option("--max-episode-steps", args->max_episode_steps, "time limit (default: the registered one; 0: none)");
  cmd->callback([args, &status] { status = rollout(*args); });
}

}  // namespace ctrax::tools
