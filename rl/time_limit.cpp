// TimeLimit (see time_limit.h).
#include "time_limit.h"

#include "../kernels/check.h"

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

}  // namespace ctrax
