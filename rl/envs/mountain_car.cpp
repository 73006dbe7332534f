// MountainCar (see mountain_car.h).
#include "mountain_car.h"

#include <algorithm>
#include <cmath>

namespace ctrax {

MountainCarStepOutcome mountain_car_step(const MountainCarParams& p, std::array<double, 2>& state, int64_t action) {
  double position = state[0], velocity = state[1];
  velocity += static_cast<double>(action - 1) * p.force + std::cos(3 * position) * (-p.gravity);
  velocity = std::min(std::max(velocity, -p.max_speed), p.max_speed);
  position += velocity;
  position = std::min(std::max(position, p.min_position), p.max_position);
  if (position == p.min_position && velocity < 0) velocity = 0;
  state = {position, velocity};
  const bool terminated = position >= p.goal_position && velocity >= p.goal_velocity;
  return {-1.0, terminated};
}

MountainCarEnv::MountainCarEnv(MountainCarParams params)
    : ClassicControlEnv("MountainCar-v0",
                        float32_box({params.min_position, -params.max_speed}, {params.max_position, params.max_speed}),
                        Space::discrete(3), 2),
      params_(params) {}

void MountainCarEnv::reset_state(Key key) {
  state_ = {uniform(key, Shape{}, DType::float64, -0.6, -0.4).item<double>(), 0.0};
}

Tensor MountainCarEnv::observation() const { return float32_observation({state_[0], state_[1]}); }

StepResult MountainCarEnv::step_state(const Tensor& action) {
  const MountainCarStepOutcome outcome = mountain_car_step(params_, state_, discrete_action(action));
  return {observation(), outcome.reward, outcome.terminated, false};
}

}  // namespace ctrax
