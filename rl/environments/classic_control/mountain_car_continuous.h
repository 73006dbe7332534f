// MountainCarContinuous exactly as Gymnasium's MountainCarContinuous-v0: action a in
// Box(-1, 1, [1]), float32.
//   force = min(max(a, -1), 1)
//   velocity += force * power - 0.0025 cos(3 position)                (power 0.0015)
//   velocity  = clip(velocity, -0.07, 0.07)
//   position  = clip(position + velocity, -1.2, 0.6)
//   if position == -1.2 and velocity < 0: velocity = 0
//   terminated = position >= 0.45 and velocity >= goal_velocity (0)
//   reward = (terminated ? 100 : 0) - 0.1 a^2                      (the unclipped action)
// Precision: Gymnasium keeps this state as float32 after every step (float64 after reset) and,
// under NumPy 2's promotion rules (NEP 50), computes in float32; mountain_car_continuous_step
// tracks which and rounds each operation as NumPy would, matching Gymnasium bit for bit (cos
// aside). set_state puts in float64 values, like a reset.
// State (set_state/state layout): position, velocity. Observation: the state as float32.
// Checkpoints (classic_control.h) add after the state whether it holds float32 values (1) or
// float64 ones (0, after a reset or set_state). Reset: position uniform in [-0.6, -0.4),
// velocity 0. Time limit (make_env): 999 steps.
#pragma once

#include <array>

#include "classic_control.h"

namespace ctrax {

struct MountainCarContinuousParams {
  double min_action = -1.0;
  double max_action = 1.0;
  double min_position = -1.2;
  double max_position = 0.6;
  double max_speed = 0.07;
  double goal_position = 0.45;
  double goal_velocity = 0.0;
  double power = 0.0015;
};

struct MountainCarContinuousStepOutcome {
  double reward;
  bool terminated;
};

// One step from `state` = {position, velocity} (updated in place; float32_state says whether
// it holds float32 values, and is true afterwards) under the float32 action.
MountainCarContinuousStepOutcome mountain_car_continuous_step(const MountainCarContinuousParams& p,
                                                              std::array<double, 2>& state, bool& float32_state,
                                                              float action);

class MountainCarContinuousEnv final : public ClassicControlEnv {
 public:
  explicit MountainCarContinuousEnv(MountainCarContinuousParams params = {});
  Tensor observation() const override;
  const MountainCarContinuousParams& params() const { return params_; }

 protected:
  void reset_state(Key key) override;
  StepResult step_state(const Tensor& action) override;
  std::vector<double> state_values() const override { return {state_[0], state_[1]}; }
  void assign_state(const std::vector<double>& state) override;
  std::vector<double> checkpoint_values() const override;
  void restore_checkpoint_values(const std::vector<double>& values) override;

 private:
  MountainCarContinuousParams params_;
  std::array<double, 2> state_{};
  bool float32_state_ = false;
};

}  // namespace ctrax
