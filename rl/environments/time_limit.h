// TimeLimit: ends episodes after a fixed number of steps by truncation (Gymnasium's TimeLimit).
//
// What it is for: every built-in environment made by make_env has one with Gymnasium's
// registered limit. The step that brings the count to max_episode_steps returns truncated =
// true (and terminated as the environment says: both can be set). A truncated episode is not
// over for the task, only for the agent: trainers bootstrap from its last observation.
// Stepping again before reset() throws ctrax::Error, as after termination.
//
// Counting: reset() sets the count to 0; so does set_state() (the given state starts the
// count afresh: the wrapper cannot know how many steps led there). What it is not for:
// limits in wall-clock time.
//
// Checkpoints (rl/environments/env.h): max_episode_steps, the elapsed steps, whether the episode was
// truncated (0 or 1), then the inner environment's checkpoint_state. Restoring requires the
// same max_episode_steps (a run resumed under another limit would not continue the same way).
#pragma once

#include <cstdint>

#include "env_wrapper.h"

namespace ctrax {

class TimeLimit final : public EnvWrapper {
 public:
  // max_episode_steps >= 1.
  TimeLimit(EnvPtr env, int64_t max_episode_steps);

  Tensor reset(std::optional<uint64_t> seed = std::nullopt) override;
  StepResult step(const Tensor& action) override;
  void set_state(const std::vector<double>& state) override;
  std::vector<double> checkpoint_state() const override;
  void restore_checkpoint_state(const std::vector<double>& state) override;

  int64_t max_episode_steps() const { return max_episode_steps_; }
  // Steps taken since the last reset or set_state.
  int64_t elapsed_steps() const { return elapsed_steps_; }

 private:
  int64_t max_episode_steps_;
  int64_t elapsed_steps_ = 0;
  bool truncated_ = false;
};

}  // namespace ctrax
