// MountainCar (Moore 1990) exactly as Gymnasium's MountainCar-v0.
//
// What it is for: the sparse-reward benchmark with discrete actions: an underpowered car must
// rock back and forth to climb the right hill. Dynamics in double, in Gymnasium's order:
//   velocity += (action - 1) * force + cos(3 position) * (-gravity)   (force 0.001, gravity 0.0025)
//   velocity  = clip(velocity, -0.07, 0.07)
//   position += velocity;  position = clip(position, -1.2, 0.6)
//   if position == -1.2 and velocity < 0: velocity = 0               (the inelastic left wall)
// Terminated when position >= 0.5 and velocity >= goal_velocity (0); reward -1 every step.
// What it is not for: the continuous-action variant (mountain_car_continuous.h) or rendering.
//
// State (set_state/state layout): position, velocity. Action: Discrete(3): push left, none,
// push right. Observation: the state as float32. Reset: position uniform in [-0.6, -0.4),
// velocity 0. Time limit (make_env): 200 steps.
#pragma once

#include <array>
#include <cstdint>

#include "../render.h"
#include "classic_control.h"

namespace ctrax {

struct MountainCarParams {
  double min_position = -1.2;
  double max_position = 0.6;
  double max_speed = 0.07;
  double goal_position = 0.5;
  double goal_velocity = 0.0;
  double force = 0.001;
  double gravity = 0.0025;
};

struct MountainCarStepOutcome {
  double reward;
  bool terminated;
};

// One step from `state` = {position, velocity} (updated in place) under action 0, 1 or 2.
MountainCarStepOutcome mountain_car_step(const MountainCarParams& p, std::array<double, 2>& state, int64_t action);

class MountainCarEnv final : public ClassicControlEnv {
 public:
  explicit MountainCarEnv(MountainCarParams params = {});
  Tensor observation() const override;
  const MountainCarParams& params() const { return params_; }

 protected:
  void reset_state(Key key) override;
  StepResult step_state(const Tensor& action) override;
  std::vector<double> state_values() const override { return {state_[0], state_[1]}; }
  void assign_state(const std::vector<double>& state) override { state_ = {state[0], state[1]}; }

 private:
  MountainCarParams params_;
  std::array<double, 2> state_{};
};

}  // namespace ctrax

namespace ctrax::render {
// The picture of a state in state() layout (rl/environments/render.h), as Gymnasium draws it.
Frame draw_mountain_car(double min_position, double max_position, double goal_position, const std::vector<double>& s);
}  // namespace ctrax::render
