// CartPole (see cartpole.h).
#include "cartpole.h"

#include <limits>

#include "../../kernels/check.h"

namespace ctrax {

std::array<double, 4> cartpole_initial_state(Key key) {
  const std::vector<double> u = uniform(key, Shape{4}, DType::float64, -0.05, 0.05).to_vector<double>();
  return {u[0], u[1], u[2], u[3]};
}

namespace {

Space cartpole_observation_space(const CartPoleParams& p) {
  // Gymnasium: high = [2 x_threshold, inf, 2 theta_threshold, inf] as float32, low = -high.
  const double inf = std::numeric_limits<double>::infinity();
  return symmetric_float32_box({p.x_threshold * 2, inf, p.theta_threshold_radians * 2, inf});
}

}  // namespace

CartPoleEnv::CartPoleEnv(CartPoleParams params, std::string name)
    : ClassicControlEnv(std::move(name), cartpole_observation_space(params), Space::discrete(2), 4),
      params_(params) {}

Tensor CartPoleEnv::observation() const { return float32_observation({state_[0], state_[1], state_[2], state_[3]}); }

StepResult CartPoleEnv::step_state(const Tensor& action) {
  const CartPoleStepOutcome outcome = cartpole_step(params_, state_, discrete_action(action));
  return {observation(), outcome.reward, outcome.terminated, false};
}

void CartPoleEnv::assign_state(const std::vector<double>& state) {
  for (size_t i = 0; i < 4; ++i) state_[i] = state[i];
}

}  // namespace ctrax
