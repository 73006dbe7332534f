// Pendulum (see pendulum.h).
#include "pendulum.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "../../kernels/check.h"

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

PendulumStepOutcome pendulum_step(const PendulumParams& p, std::array<double, 2>& state, float action) {
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
  double newthdot = thdot + (3 * p.g / (2 * p.l) * std::sin(th) + static_cast<double>(torque_term)) * p.dt;
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
