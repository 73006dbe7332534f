// CartPole (see cartpole.h).
#include "cartpole.h"

#include <limits>

#include "../../../base/error.h"

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

// The picture of the state (rl/environments/render.h), as Gymnasium draws it.
namespace ctrax::render {

// ---- CartPole -----------------------------------------------------------------------------
// Screen 600 x 400 px showing x in [-x_threshold, x_threshold], so scale = 600 / (2 x_threshold)
// px per metre. The cart (50 x 30 px) is centred on the track line, which Gymnasium puts
// 100 px above the bottom edge: y = 0 here, the view spanning [-100, 300] px / scale. The pole
// (10 px wide, 2 length long, the half-length being `length`) hangs from the axle 30/4 px above
// the cart's centre and is rotated by -theta in pygame's frame, which after the flip puts its
// tip at axle + 2 length (sin theta, cos theta): theta > 0 leans right.
// Shapes: "track" (Line), "cart" (Polygon), "pole" (Polygon), "axle" (Circle).
Frame draw_cartpole(const CartPoleParams& p, const std::vector<double>& s) {
  const double screen_width = 600, screen_height = 400;
  const double scale = screen_width / (2 * p.x_threshold);
  const double px = 1 / scale;  // one pixel in metres
  const double polewidth = 10 * px, polelen = 2 * p.length;
  const double cartwidth = 50 * px, cartheight = 30 * px;
  const double x = s[0], theta = s[2];
  const double axleoffset = cartheight / 4;

  Frame f;
  f.view = {-p.x_threshold, p.x_threshold, -100 * px, (screen_height - 100) * px};
  f.background = kWhite;
  f.shapes.push_back(Polygon{"cart", box(-cartwidth / 2, cartwidth / 2, cartheight / 2, -cartheight / 2, 0, {x, 0}),
                             kBlack});
  f.shapes.push_back(Polygon{"pole",
                             box(-polewidth / 2, polewidth / 2, polelen - polewidth / 2, -polewidth / 2, -theta,
                                 {x, axleoffset}),
                             Rgb{202, 152, 101}});
  f.shapes.push_back(Circle{"axle", {x, axleoffset}, polewidth / 2, Rgb{129, 132, 203}});
  f.shapes.push_back(Line{"track", {{f.view.x_min, 0}, {f.view.x_max, 0}}, px, kBlack});
  return f;
}

}  // namespace ctrax::render
