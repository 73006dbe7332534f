// Pendulum (see pendulum.h).
#include "pendulum.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "../../../base/error.h"

namespace ctrax {

double pendulum_angle_normalize(double x) {
  // NumPy's float64 remainder: fmod, moved into the divisor's sign; a zero takes its sign.
  const double a = x + std::numbers::pi, b = 2 * std::numbers::pi;
  double mod = std::fmod(a, b);
  if (mod != 0) {
    if ((b < 0) != (mod < 0)) mod += b;
  } else {
    mod = std::copysign(0.0, b);
  }
  return mod - std::numbers::pi;
}

PendulumStepOutcome pendulum_step(const PendulumParams& p, std::array<double, 2>& state, float action,
                                  const double* sin_th) {
  const double th = state[0], thdot = state[1];
  // np.clip of the float32 action array against Python floats stays float32.
  const float max_torque = static_cast<float>(p.max_torque);
  const float u = std::min(std::max(action, -max_torque), max_torque);
  // u**2 and 0.001 * (u**2) are float32 scalars under NumPy 2; added to a float64 they widen.
  const float u_sq = u * u;
  const float u_cost = static_cast<float>(0.001f * u_sq);
  const double an = pendulum_angle_normalize(th);
  const double costs = an * an + 0.1 * (thdot * thdot) + static_cast<double>(u_cost);
  // 3.0 / (m l^2) * u is a Python float times a float32: float32.
  const float torque_term = static_cast<float>(static_cast<float>(3.0 / (p.m * (p.l * p.l))) * u);
  const double sine = sin_th != nullptr ? *sin_th : std::sin(th);
  double newthdot = thdot + (3 * p.g / (2 * p.l) * sine + static_cast<double>(torque_term)) * p.dt;
  newthdot = std::min(std::max(newthdot, -p.max_speed), p.max_speed);
  const double newth = th + newthdot * p.dt;
  state = {newth, newthdot};
  return {-costs, false};
}

PendulumEnv::PendulumEnv(PendulumParams params)
    : ClassicControlEnv("Pendulum-v1", symmetric_float32_box({1.0, 1.0, params.max_speed}),
                        Space::box(Shape{1}, -params.max_torque, params.max_torque, DType::float32), 2),
      params_(params) {
  CTRAX_REQUIRE(params.max_torque > 0 && std::isfinite(params.max_torque),
                "Pendulum: max_torque must be finite and > 0, got ", params.max_torque);
}

void PendulumEnv::reset_state(Key key) {
  const auto [k_th, k_thdot] = split(key);
  state_ = {uniform(k_th, Shape{}, DType::float64, -std::numbers::pi, std::numbers::pi).item<double>(),
            uniform(k_thdot, Shape{}, DType::float64, -1.0, 1.0).item<double>()};
}

Tensor PendulumEnv::observation() const {
  return float32_observation({std::cos(state_[0]), std::sin(state_[0]), state_[1]});
}

StepResult PendulumEnv::step_state(const Tensor& action) {
  const PendulumStepOutcome outcome = pendulum_step(params_, state_, box_action(action));
  return {observation(), outcome.reward, outcome.terminated, false};
}

}  // namespace ctrax

// The picture of the state (rl/environments/render.h), as Gymnasium draws it.
namespace ctrax::render {

// ---- Pendulum -----------------------------------------------------------------------------
// Screen 500 x 500 px over [-2.2, 2.2]^2. The rod (0.2 wide, length l) is rotated by
// th + pi/2, so its end is l (-sin th, cos th): th = 0 points up and th > 0 turns it
// counterclockwise. Round ends (radius 0.1) at both ends, a black axle of radius 0.05.
// Shapes: "rod" (Polygon), "rod_base", "rod_end", "axle" (Circle).
Frame draw_pendulum(const PendulumParams& p, const std::vector<double>& s) {
  const double bound = 2.2, rod_width = 0.2, th = s[0];
  const Rgb rod{204, 77, 77};
  const Point end = place({p.l, 0}, th + std::numbers::pi / 2, {0, 0});

  Frame f;
  f.view = {-bound, bound, -bound, bound};
  f.background = kWhite;
  f.shapes.push_back(
      Polygon{"rod", box(0, p.l, rod_width / 2, -rod_width / 2, th + std::numbers::pi / 2, {0, 0}), rod});
  f.shapes.push_back(Circle{"rod_base", {0, 0}, rod_width / 2, rod});
  f.shapes.push_back(Circle{"rod_end", end, rod_width / 2, rod});
  f.shapes.push_back(Circle{"axle", {0, 0}, 0.05, kBlack});
  return f;
}

}  // namespace ctrax::render
