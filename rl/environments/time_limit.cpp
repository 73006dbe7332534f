// TimeLimit (see time_limit.h).
#include "time_limit.h"

#include "../../base/error.h"

namespace ctrax {

TimeLimit::TimeLimit(EnvPtr env, int64_t max_episode_steps)
    : EnvWrapper(std::move(env)), max_episode_steps_(max_episode_steps) {
  CTRAX_REQUIRE(max_episode_steps >= 1, "TimeLimit: max_episode_steps must be >= 1, got ", max_episode_steps);
}

Tensor TimeLimit::reset(std::optional<uint64_t> seed) {
  Tensor observation = EnvWrapper::reset(seed);
  elapsed_steps_ = 0;
  truncated_ = false;
  return observation;
}

StepResult TimeLimit::step(const Tensor& action) {
  CTRAX_REQUIRE(!truncated_, name(), ": step called after the episode was truncated at the time limit of ",
                max_episode_steps_, " steps; call reset() (or set_state) first");
  StepResult result = EnvWrapper::step(action);
  ++elapsed_steps_;
  if (elapsed_steps_ >= max_episode_steps_) {
    result.truncated = true;
    truncated_ = true;
  }
  return result;
}

void TimeLimit::set_state(const std::vector<double>& state) {
  EnvWrapper::set_state(state);
  elapsed_steps_ = 0;
  truncated_ = false;
}

std::vector<double> TimeLimit::checkpoint_state() const {
  std::vector<double> out{static_cast<double>(max_episode_steps_), static_cast<double>(elapsed_steps_),
                          truncated_ ? 1.0 : 0.0};
  const std::vector<double> inner_state = inner().checkpoint_state();
  out.insert(out.end(), inner_state.begin(), inner_state.end());
  return out;
}

void TimeLimit::restore_checkpoint_state(const std::vector<double>& state) {
  const std::string who = name() + " (TimeLimit)";
  CheckpointStateReader in(state, who);
  const uint64_t limit = in.count("max_episode_steps");
  CTRAX_REQUIRE(limit == static_cast<uint64_t>(max_episode_steps_), who,
                ": restore_checkpoint_state: the state is of a time limit of ", limit,
                " steps, this TimeLimit has max_episode_steps ", max_episode_steps_);
  const auto elapsed = static_cast<int64_t>(in.count("the elapsed steps", limit));
  const bool truncated = in.flag("the truncated flag");
  // Truncation is exactly reaching the limit (reset and set_state clear both).
  CTRAX_REQUIRE(truncated == (elapsed >= max_episode_steps_), who, ": restore_checkpoint_state: ", elapsed,
                " elapsed steps of ", max_episode_steps_, " with the truncated flag ", truncated ? 1 : 0,
                " (truncated is set exactly when the limit is reached)");
  inner().restore_checkpoint_state(in.rest());  // all or nothing; nothing of ours has changed yet
  elapsed_steps_ = elapsed;
  truncated_ = truncated;
}

}  // namespace ctrax
