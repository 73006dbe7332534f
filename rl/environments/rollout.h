// Rollouts: play a fixed action sequence in an environment and write every step as CSV.
//
// What it is for: inspecting and cross-checking environments (the `ctrax rollout` subcommand
// wraps it): start from a seed or a given internal state, play the actions, print what each step
// gave. Not for collecting training data (rl/learning/task.h) or running a policy.
//
// CSV layout: a header line
//   step,obs_0,...,obs_{k-1},reward,terminated,truncated
// then row 0 with the observation after reset (or set_state) and empty reward and flags, then
// one row per step: its number (1, 2, ...), the observation it returned, the reward, and the
// flags as 0/1. Observations print with 9 significant digits (exact for float32), rewards with
// 17 (exact for double). The rollout stops early when an episode ends (terminated or
// truncated); RolloutSummary says how many actions were played.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "env.h"

namespace ctrax {

// Where a rollout starts: reset(seed) (reset() without one), then, when given, set_state(state).
struct RolloutStart {
  std::optional<uint64_t> seed;
  std::optional<std::vector<double>> state;
};

struct RolloutSummary {
  int64_t steps = 0;  // actions played
  bool terminated = false;
  bool truncated = false;
};

// Numbers separated by commas and/or whitespace ("0,1, 1\n0"); an empty text gives none.
// A token that is not a number throws ctrax::Error naming `what` and the token.
std::vector<double> parse_numbers(const std::string& text, const std::string& what);

// Splits a flat list of numbers into actions of `space`: Discrete takes one integer per action
// (an int64 scalar), MultiDiscrete and Box prod(shape) numbers each (int64 or the Box's dtype,
// in the space's shape). Throws ctrax::Error for a count that does not divide, a fractional
// number where an integer is needed, or a discrete action outside the space.
std::vector<Tensor> actions_from_numbers(const Space& space, const std::vector<double>& numbers);

// Plays `actions` from `start` and writes the CSV above to `out`.
RolloutSummary write_rollout_csv(Env& env, const RolloutStart& start, const std::vector<Tensor>& actions,
                                 std::ostream& out);

}  // namespace ctrax
