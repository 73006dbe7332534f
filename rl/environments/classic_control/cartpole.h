// CartPole (Barto, Sutton and Anderson 1983) exactly as Gymnasium's CartPole-v0 and -v1.
//
// What it is for: the standard first RL benchmark, with Gymnasium's dynamics to the bit where
// the arithmetic allows (same constants, the same explicit Euler step in the same order of
// operations, in double). cartpole_step is the one definition of the dynamics: CartPoleEnv and
// the batched CartPole vector environment (rl/environments/cartpole_vector_env.cpp) both call it, so it is inline and
// small. What it is not for: the semi-implicit Euler variant or rendering.
//
// State (set_state/state layout): x, x_dot, theta, theta_dot (theta = 0 upright, radians).
// Action: Discrete(2); 0 pushes the cart left, 1 right, with force_mag.
// Step (tau = 0.02, total_mass = masspole + masscart, polemass_length = masspole * length):
//   temp      = (F + polemass_length * theta_dot^2 * sin(theta)) / total_mass
//   theta_acc = (g sin(theta) - cos(theta) temp) / (length (4/3 - masspole cos^2(theta) / total_mass))
//   x_acc     = temp - polemass_length * theta_acc * cos(theta) / total_mass
//   x += tau x_dot; x_dot += tau x_acc; theta += tau theta_dot; theta_dot += tau theta_acc.
// Terminated when |x| > 2.4 or |theta| > 12 degrees (strictly); reward 1 on every step,
// including the terminating one (sutton_barto_reward: 0, and -1 on termination).
// Observation: the state rounded to float32. Reset: each state value uniform in [-0.05, 0.05).
// Time limits (make_env): CartPole-v0 200 steps, CartPole-v1 500.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <string>

#include "../render.h"
#include "classic_control.h"

namespace ctrax {

struct CartPoleParams {
  double gravity = 9.8;
  double masscart = 1.0;
  double masspole = 0.1;
  double length = 0.5;  // half the pole's length
  double force_mag = 10.0;
  double tau = 0.02;  // seconds per step
  double theta_threshold_radians = 12 * 2 * std::numbers::pi / 360;
  double x_threshold = 2.4;
  bool sutton_barto_reward = false;
};

struct CartPoleStepOutcome {
  double reward;
  bool terminated;
};

// One step of the dynamics from `state` (updated in place) under action 0 or 1 (any other
// value pushes left, as in Gymnasium's `force_mag if action == 1 else -force_mag`; callers
// validate). The operations are Gymnasium's, in its order, so the float64 results agree with
// NumPy's up to the last bits of sin and cos.
inline CartPoleStepOutcome cartpole_step(const CartPoleParams& p, std::array<double, 4>& state, int64_t action) {
  const double x = state[0], x_dot = state[1], theta = state[2], theta_dot = state[3];
  const double force = action == 1 ? p.force_mag : -p.force_mag;
  const double costheta = std::cos(theta);
  const double sintheta = std::sin(theta);
  const double total_mass = p.masspole + p.masscart;
  const double polemass_length = p.masspole * p.length;
  const double temp = (force + polemass_length * (theta_dot * theta_dot) * sintheta) / total_mass;
  const double thetaacc = (p.gravity * sintheta - costheta * temp) /
                          (p.length * (4.0 / 3.0 - p.masspole * (costheta * costheta) / total_mass));
  const double xacc = temp - polemass_length * thetaacc * costheta / total_mass;
  state[0] = x + p.tau * x_dot;
  state[1] = x_dot + p.tau * xacc;
  state[2] = theta + p.tau * theta_dot;
  state[3] = theta_dot + p.tau * thetaacc;
  const bool terminated = state[0] < -p.x_threshold || state[0] > p.x_threshold ||
                          state[2] < -p.theta_threshold_radians || state[2] > p.theta_threshold_radians;
  if (p.sutton_barto_reward) return {terminated ? -1.0 : 0.0, terminated};
  return {1.0, terminated};
}

// The initial state of an episode: four values uniform in [-0.05, 0.05), drawn from `key`.
std::array<double, 4> cartpole_initial_state(Key key);

class CartPoleEnv final : public ClassicControlEnv {
 public:
  // name: "CartPole-v1" or "CartPole-v0" (the same dynamics; they differ in make_env's limit).
  explicit CartPoleEnv(CartPoleParams params = {}, std::string name = "CartPole-v1");
  Tensor observation() const override;
  const CartPoleParams& params() const { return params_; }

 protected:
  void reset_state(Key key) override { state_ = cartpole_initial_state(key); }
  StepResult step_state(const Tensor& action) override;
  std::vector<double> state_values() const override { return {state_.begin(), state_.end()}; }
  void assign_state(const std::vector<double>& state) override;

 private:
  CartPoleParams params_;
  std::array<double, 4> state_{};
};

}  // namespace ctrax

namespace ctrax::render {
// The picture of a state in state() layout (rl/environments/render.h), as Gymnasium draws it.
Frame draw_cartpole(const CartPoleParams& p, const std::vector<double>& s);
}  // namespace ctrax::render
