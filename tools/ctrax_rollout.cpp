// ctrax_rollout: plays an action sequence in a built-in environment and prints every step as CSV.
//
//   ctrax_rollout ENV (--seed N | --state "a,b,c,d") (--actions "0,1,1" | --actions-file FILE)
//                 [--max-episode-steps N]
//
// The episode starts from reset(seed) (seed 0 when none is given) or, with --state, from that
// internal state (each environment documents its layout, e.g. CartPole: x, x_dot, theta,
// theta_dot). Actions are numbers separated by commas or whitespace: one integer per step for
// discrete action spaces, prod(shape) numbers per step for Box ones. The output is the CSV of
// rl/rollout.h (step, observation, reward, terminated, truncated) on standard output; it stops
// where the episode ends, with a note on standard error when actions were left over.
// --max-episode-steps overrides the registered time limit (0: none).
//
// Exit status: 0 on success, 1 for a bad argument or environment error (message on stderr).
#include <cstdint>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include <ctrax/kernels/check.h>
#include <ctrax/rl/env.h>
#include <ctrax/rl/rollout.h>

int main(int argc, char** argv) {
  CLI::App app{"Plays an action sequence in a ctrax environment and prints each step as CSV."};
  std::string env_name, state_text, actions_text, actions_file;
  std::optional<uint64_t> seed;
  std::optional<int64_t> max_episode_steps;
  std::string known;
  for (const std::string& name : ctrax::env_names()) {
    if (!known.empty()) known += ", ";
    known += name;
  }
  app.add_option("ENV", env_name, "environment id (" + known + ")")->required();
  app.add_option("--seed", seed, "reset(seed) before playing (default 0)");
  app.add_option("--state", state_text, "start from this internal state (comma-separated numbers)");
  auto* actions_option = app.add_option("--actions", actions_text, "actions, comma or space separated");
  auto* file_option = app.add_option("--actions-file", actions_file, "read the actions from this file")
                          ->check(CLI::ExistingFile);
  actions_option->excludes(file_option);
  app.add_option("--max-episode-steps", max_episode_steps, "time limit (default: the registered one; 0: none)");
  CLI11_PARSE(app, argc, argv);

  try {
    CTRAX_REQUIRE(!actions_option->empty() || !file_option->empty(), "give --actions or --actions-file");
    if (!file_option->empty()) {
      std::ifstream in(actions_file);
      CTRAX_REQUIRE(in.good(), "cannot read the actions file ", actions_file);
      std::ostringstream text;
      text << in.rdbuf();
      actions_text = text.str();
    }
    ctrax::EnvPtr env = ctrax::make_env(env_name, max_episode_steps);
    ctrax::RolloutStart start;
    start.seed = seed.value_or(0);
    if (!state_text.empty()) start.state = ctrax::parse_numbers(state_text, "--state");
    const std::vector<ctrax::Tensor> actions =
        ctrax::actions_from_numbers(env->action_space(), ctrax::parse_numbers(actions_text, "--actions"));
    const ctrax::RolloutSummary summary = ctrax::write_rollout_csv(*env, start, actions, std::cout);
    std::cout.flush();
    if (summary.steps < static_cast<int64_t>(actions.size())) {
      std::cerr << "ctrax_rollout: the episode was " << (summary.terminated ? "terminated" : "truncated")
                << " after " << summary.steps << " of " << actions.size() << " actions\n";
    }
  } catch (const ctrax::Error& e) {
    std::cerr << "ctrax_rollout: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
