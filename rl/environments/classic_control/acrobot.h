// Acrobot (Sutton 1996; Sutton and Barto's book) exactly as Gymnasium's Acrobot-v1.
//
// What it is for: a two-link under-actuated swing-up task with Gymnasium's dynamics: the
// "book" equations of motion, integrated by one classic Runge-Kutta (RK4) step of dt = 0.2
// over the state augmented with the torque, with the operations in Gymnasium's order. What it
// is not for: the "nips" variant's observation or rendering.
//
// State (set_state/state layout): theta1, theta2, dtheta1, dtheta2 (theta1 = 0 hanging down,
// theta2 relative to link 1). Action: Discrete(3), torque -1, 0, +1 on the second joint
// (plus uniform noise in [-torque_noise_max, torque_noise_max], 0 by default, as Gymnasium).
// After the RK4 step, theta1 and theta2 are wrapped into [-pi, pi] (by repeated +-2 pi) and the
// velocities clipped to [-4 pi, 4 pi] and [-9 pi, 9 pi].
// Terminated when -cos(theta1) - cos(theta2 + theta1) > 1 (the tip above the bar); reward -1
// per step, 0 on the terminating one.
// Observation: cos theta1, sin theta1, cos theta2, sin theta2, dtheta1, dtheta2 in float32.
// Reset: each state value uniform in [-0.1, 0.1), rounded to float32 (Gymnasium keeps the reset
// state as float32). Time limit (make_env): 500 steps.
// The one place ctrax is not bit-identical: on that float32 reset state Gymnasium's cos and
// sin run in NumPy's own float32 kernels, while ctrax computes them in double and rounds; the
// first observation can differ in the last float32 bit (~1e-7). Every later step computes in
// float64 in both (the recorded episodes, tests/fixtures/gymnasium_envs.json, agree bit for bit).
#pragma once

#include <array>
#include <cstdint>
#include <numbers>
#include <string>

#include "../render.h"
#include "classic_control.h"

namespace ctrax {

struct AcrobotParams {
  double dt = 0.2;
  double link_length_1 = 1.0;
  double link_mass_1 = 1.0;
  double link_mass_2 = 1.0;
  double link_com_pos_1 = 0.5;
  double link_com_pos_2 = 0.5;
  double link_moi = 1.0;  // both links
  double max_vel_1 = 4 * std::numbers::pi;
  double max_vel_2 = 9 * std::numbers::pi;
  double torque_noise_max = 0.0;
  bool book = true;  // false: the NIPS paper's equation for ddtheta2 (Gymnasium's book_or_nips)
};

struct AcrobotStepOutcome {
  double reward;
  bool terminated;
};

// One step from `state` (updated in place) with the given torque (noise already added).
AcrobotStepOutcome acrobot_step(const AcrobotParams& p, std::array<double, 4>& state, double torque);

// The torque of action 0, 1 or 2.
inline double acrobot_torque(int64_t action) { return static_cast<double>(action - 1); }

class AcrobotEnv final : public ClassicControlEnv {
 public:
  explicit AcrobotEnv(AcrobotParams params = {});
  Tensor observation() const override;
  const AcrobotParams& params() const { return params_; }

 protected:
  void reset_state(Key key) override;
  StepResult step_state(const Tensor& action) override;
  std::vector<double> state_values() const override { return {state_.begin(), state_.end()}; }
  void assign_state(const std::vector<double>& state) override;

 private:
  AcrobotParams params_;
  std::array<double, 4> state_{};
};

}  // namespace ctrax

namespace ctrax::render {
// The picture of a state in state() layout (rl/environments/render.h), as Gymnasium draws it.
Frame draw_acrobot(const AcrobotParams& p, const std::vector<double>& s);
}  // namespace ctrax::render
