// Acrobot (see acrobot.h).
#include "acrobot.h"

#include <algorithm>
#include <cmath>

#include "../../../base/error.h"

namespace ctrax {

namespace {

constexpr double kPi = std::numbers::pi;

// d/dt of (theta1, theta2, dtheta1, dtheta2) under torque a: the book's equations of motion
// (Sutton and Barto's book), written in Gymnasium's order of operations:
//   d1 = m1 lc1^2 + m2 (l1^2 + lc2^2 + 2 l1 lc2 cos th2) + I1 + I2
//   d2 = m2 (lc2^2 + l1 lc2 cos th2) + I2
//   phi2 = m2 lc2 g cos(th1 + th2 - pi/2)
//   phi1 = -m2 l1 lc2 dth2^2 sin th2 - 2 m2 l1 lc2 dth2 dth1 sin th2 + (m1 lc1 + m2 l1) g cos(th1 - pi/2) + phi2
//   ddth2 = (a + d2/d1 phi1 - m2 l1 lc2 dth1^2 sin th2 - phi2) / (m2 lc2^2 + I2 - d2^2/d1)   (book)
//   ddth1 = -(d2 ddth2 + phi1) / d1
std::array<double, 4> derivatives(const AcrobotParams& p, const std::array<double, 4>& s, double a) {
  const double m1 = p.link_mass_1, m2 = p.link_mass_2, l1 = p.link_length_1;
  const double lc1 = p.link_com_pos_1, lc2 = p.link_com_pos_2, I1 = p.link_moi, I2 = p.link_moi;
  const double g = 9.8;
  const double theta1 = s[0], theta2 = s[1], dtheta1 = s[2], dtheta2 = s[3];
  const double d1 = m1 * (lc1 * lc1) + m2 * (l1 * l1 + lc2 * lc2 + 2 * l1 * lc2 * std::cos(theta2)) + I1 + I2;
  const double d2 = m2 * (lc2 * lc2 + l1 * lc2 * std::cos(theta2)) + I2;
  const double phi2 = m2 * lc2 * g * std::cos(theta1 + theta2 - kPi / 2.0);
  const double phi1 = -m2 * l1 * lc2 * (dtheta2 * dtheta2) * std::sin(theta2) -
                      2 * m2 * l1 * lc2 * dtheta2 * dtheta1 * std::sin(theta2) +
                      (m1 * lc1 + m2 * l1) * g * std::cos(theta1 - kPi / 2) + phi2;
  double ddtheta2;
  if (p.book) {
    ddtheta2 = (a + d2 / d1 * phi1 - m2 * l1 * lc2 * (dtheta1 * dtheta1) * std::sin(theta2) - phi2) /
               (m2 * (lc2 * lc2) + I2 - (d2 * d2) / d1);
  } else {
    ddtheta2 = (a + d2 / d1 * phi1 - phi2) / (m2 * (lc2 * lc2) + I2 - (d2 * d2) / d1);
  }
  const double ddtheta1 = -(d2 * ddtheta2 + phi1) / d1;
  return {dtheta1, dtheta2, ddtheta1, ddtheta2};
}

// Gymnasium's wrap: shift by whole periods of (M - m) into [m, M]. Its loop would never end
// for an angle so large that subtracting a period leaves it unchanged (only reachable through
// set_state); such angles are first reduced with std::remainder.
double wrap(double x, double m, double M) {
  const double diff = M - m;
  if (std::abs(x) > 1e6) x = std::remainder(x, diff);
  while (x > M) x = x - diff;
  while (x < m) x = x + diff;
  return x;
}

double bound(double x, double m, double M) { return std::min(std::max(x, m), M); }

}  // namespace

AcrobotStepOutcome acrobot_step(const AcrobotParams& p, std::array<double, 4>& state, double torque) {
  // One classic RK4 step over [0, dt] (Gymnasium's rk4 with t = [0, dt]); the torque is the
  // fifth, constant component of the augmented state.
  const double dt = p.dt, dt2 = dt / 2.0;
  const std::array<double, 4>& y0 = state;
  std::array<double, 4> y;
  const std::array<double, 4> k1 = derivatives(p, y0, torque);
  for (int i = 0; i < 4; ++i) y[i] = y0[i] + dt2 * k1[i];
  const std::array<double, 4> k2 = derivatives(p, y, torque);
  for (int i = 0; i < 4; ++i) y[i] = y0[i] + dt2 * k2[i];
  const std::array<double, 4> k3 = derivatives(p, y, torque);
  for (int i = 0; i < 4; ++i) y[i] = y0[i] + dt * k3[i];
  const std::array<double, 4> k4 = derivatives(p, y, torque);
  std::array<double, 4> ns;
  for (int i = 0; i < 4; ++i) ns[i] = y0[i] + dt / 6.0 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i]);
  ns[0] = wrap(ns[0], -kPi, kPi);
  ns[1] = wrap(ns[1], -kPi, kPi);
  ns[2] = bound(ns[2], -p.max_vel_1, p.max_vel_1);
  ns[3] = bound(ns[3], -p.max_vel_2, p.max_vel_2);
  state = ns;
  const bool terminated = -std::cos(state[0]) - std::cos(state[1] + state[0]) > 1.0;
  return {terminated ? 0.0 : -1.0, terminated};
}

AcrobotEnv::AcrobotEnv(AcrobotParams params)
    : ClassicControlEnv("Acrobot-v1",
                        symmetric_float32_box({1.0, 1.0, 1.0, 1.0, params.max_vel_1, params.max_vel_2}),
                        Space::discrete(3), 4),
      params_(params) {
  CTRAX_REQUIRE(std::isfinite(params.torque_noise_max) && params.torque_noise_max >= 0,
                "Acrobot: torque_noise_max must be finite and >= 0, got ", params.torque_noise_max);
}

void AcrobotEnv::reset_state(Key key) {
  // Gymnasium draws float64 uniforms and keeps them as float32 (.astype(np.float32)).
  const std::vector<double> u = uniform(key, Shape{4}, DType::float64, -0.1, 0.1).to_vector<double>();
  for (size_t i = 0; i < 4; ++i) state_[i] = static_cast<float>(u[i]);
}

Tensor AcrobotEnv::observation() const {
  const std::array<double, 4>& s = state_;
  return float32_observation({std::cos(s[0]), std::sin(s[0]), std::cos(s[1]), std::sin(s[1]), s[2], s[3]});
}

StepResult AcrobotEnv::step_state(const Tensor& action) {
  double torque = acrobot_torque(discrete_action(action));
  if (params_.torque_noise_max > 0) {
    torque += uniform(step_key(), Shape{}, DType::float64, -params_.torque_noise_max, params_.torque_noise_max)
                  .item<double>();
  }
  const AcrobotStepOutcome outcome = acrobot_step(params_, state_, torque);
  return {observation(), outcome.reward, outcome.terminated, false};
}

void AcrobotEnv::assign_state(const std::vector<double>& state) {
  for (size_t i = 0; i < 4; ++i) state_[i] = state[i];
}

}  // namespace ctrax

// The picture of the state (rl/environments/render.h), as Gymnasium draws it.
namespace ctrax::render {

// ---- Acrobot ------------------------------------------------------------------------------
// Screen 500 x 500 px over [-bound, bound]^2, bound = L1 + L2 + 0.2 (Gymnasium's LINK_LENGTH_2
// is 1; ctrax's AcrobotParams have no second length either). With theta1 = 0 hanging down and
// theta2 relative to link 1:
//   p1 = L1 (sin theta1, -cos theta1),  p2 = p1 + L2 (sin(theta1 + theta2), -cos(theta1 + theta2)).
// Each link is a 0.2-wide rectangle from its joint; a circle of radius 0.1 marks the two
// joints (the fixed one and p1). The goal line is y = 1 (the tip must rise above it).
// Shapes: "goal" (Line), "link1" (Polygon), "joint1" (Circle), "link2" (Polygon), "joint2".
Frame draw_acrobot(const AcrobotParams& p, const std::vector<double>& s) {
  const double l1 = p.link_length_1, l2 = 1.0;
  const double bound = l1 + l2 + 0.2;
  const double scale = 500 / (2 * bound);
  const double a1 = s[0], a2 = s[0] + s[1];
  const Point p1{l1 * std::sin(a1), -l1 * std::cos(a1)};

  Frame f;
  f.view = {-bound, bound, -bound, bound};
  f.background = kWhite;
  f.shapes.push_back(Line{"goal", {{-2.2, 1.0}, {2.2, 1.0}}, 1 / scale, kBlack});
  const Rgb link{0, 204, 204}, joint{204, 204, 0};
  // Gymnasium rotates the link (x along its length) by theta - pi/2.
  f.shapes.push_back(Polygon{"link1", box(0, l1, 0.1, -0.1, a1 - std::numbers::pi / 2, {0, 0}), link});
  f.shapes.push_back(Circle{"joint1", {0, 0}, 0.1, joint});
  f.shapes.push_back(Polygon{"link2", box(0, l2, 0.1, -0.1, a2 - std::numbers::pi / 2, p1), link});
  f.shapes.push_back(Circle{"joint2", p1, 0.1, joint});
  return f;
}

}  // namespace ctrax::render
