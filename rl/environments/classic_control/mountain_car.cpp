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

// The picture of the state (rl/environments/render.h), as Gymnasium draws it.
namespace ctrax::render {

// ---- MountainCar (both variants) ----------------------------------------------------------
// Screen 600 x 400 px over positions [min_position, max_position], scale = 600 / 1.8 px per
// unit; the hill is y = 0.45 sin(3 x) + 0.55, drawn through 100 evenly spaced points. The car
// (40 x 20 px, wheels of radius 20/2.5 px at +-10 px) sits 10 px above the curve, tilted by
// Gymnasium's angle cos(3 x) (sic: the slope's direction, not its arctangent). The flag is a
// 50 px pole at the goal with a 25 x 10 px yellow pennant at its top.
// Shapes: "mountain" (Line), "car" (Polygon), "wheel_front", "wheel_back" (Circle),
// "flagpole" (Line), "flag" (Polygon).
double hill(double x) { return std::sin(3 * x) * 0.45 + 0.55; }

Frame draw_mountain_car(double min_position, double max_position, double goal_position, const std::vector<double>& s) {
  const double screen_width = 600, screen_height = 400;
  const double scale = screen_width / (max_position - min_position);
  const double px = 1 / scale;
  const double carwidth = 40 * px, carheight = 20 * px, clearance = 10 * px;
  const double pos = s[0];

  Frame f;
  f.view = {min_position, max_position, 0, screen_height * px};
  f.background = kWhite;
  Line mountain{"mountain", {}, px, kBlack};
  for (int i = 0; i < 100; ++i) {
    const double x = min_position + (max_position - min_position) * i / 99.0;  // np.linspace(min, max, 100)
    mountain.points.push_back({x, hill(x)});
  }
  f.shapes.push_back(std::move(mountain));

  const double angle = std::cos(3 * pos);
  const Point at{pos, clearance + hill(pos)};
  f.shapes.push_back(Polygon{"car", box(-carwidth / 2, carwidth / 2, carheight, 0, angle, at), kBlack});
  const Rgb grey{128, 128, 128};
  f.shapes.push_back(Circle{"wheel_front", place({carwidth / 4, 0}, angle, at), carheight / 2.5, grey});
  f.shapes.push_back(Circle{"wheel_back", place({-carwidth / 4, 0}, angle, at), carheight / 2.5, grey});

  const double flagy1 = hill(goal_position), flagy2 = flagy1 + 50 * px;
  f.shapes.push_back(Line{"flagpole", {{goal_position, flagy1}, {goal_position, flagy2}}, px, kBlack});
  f.shapes.push_back(Polygon{"flag",
                             {{goal_position, flagy2},
                              {goal_position, flagy2 - 10 * px},
                              {goal_position + 25 * px, flagy2 - 5 * px}},
                             Rgb{204, 204, 0}});
  return f;
}

}  // namespace ctrax::render
