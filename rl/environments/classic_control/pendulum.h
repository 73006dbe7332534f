// Pendulum exactly as Gymnasium's Pendulum-v1.
//
// What it is for: the classic continuous-control swing-up. With u = clip(a, -2, 2) (float32):
//   cost        = angle_normalize(th)^2 + 0.1 thdot^2 + 0.001 u^2,   reward = -cost
//   newthdot    = thdot + (3 g / (2 l) sin(th) + 3 / (m l^2) u) dt     (g = 10, m = l = 1, dt = 0.05)
//   newthdot    = clip(newthdot, -8, 8);  newth = th + newthdot dt
// where angle_normalize(x) = ((x + pi) mod 2 pi) - pi with a floored modulo (NumPy's %). The
// cost uses the state before the step. Never terminates; truncated by the time limit (make_env:
// 200 steps). The float32 terms (u^2 and 0.001 u^2, 3 u) are rounded to float32 as NumPy 2
// computes them. What it is not for: rendering.
//
// State (set_state/state layout): th, thdot (th = 0 upright). Observation: cos th, sin th,
// thdot in float32. Reset: th uniform in [-pi, pi), thdot uniform in [-1, 1).
#pragma once

#include <array>

#include "../render.h"
#include "classic_control.h"

namespace ctrax {

struct PendulumParams {
  double max_speed = 8.0;
  double max_torque = 2.0;
  double dt = 0.05;
  double g = 10.0;
  double m = 1.0;
  double l = 1.0;
};

struct PendulumStepOutcome {
  double reward;
  bool terminated;  // always false
};

// NumPy's ((x + pi) % (2 pi)) - pi: the angle in [-pi, pi).
double pendulum_angle_normalize(double x);

// One step from `state` = {th, thdot} (updated in place) under the float32 torque.
// sin_th, when given, is std::sin(state[0]) computed already (the batched environment keeps the
// last observation's).
PendulumStepOutcome pendulum_step(const PendulumParams& p, std::array<double, 2>& state, float action,
                                  const double* sin_th = nullptr);

class PendulumEnv final : public ClassicControlEnv {
 public:
  explicit PendulumEnv(PendulumParams params = {});
  Tensor observation() const override;
  const PendulumParams& params() const { return params_; }

 protected:
  void reset_state(Key key) override;
  StepResult step_state(const Tensor& action) override;
  std::vector<double> state_values() const override { return {state_[0], state_[1]}; }
  void assign_state(const std::vector<double>& state) override { state_ = {state[0], state[1]}; }

 private:
  PendulumParams params_;
  std::array<double, 2> state_{};
};

}  // namespace ctrax

namespace ctrax::render {
// The picture of a state in state() layout (rl/environments/render.h), as Gymnasium draws it.
Frame draw_pendulum(const PendulumParams& p, const std::vector<double>& s);
}  // namespace ctrax::render
