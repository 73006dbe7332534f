// Gymnasium's classic-control pictures as shapes (see render.h). Each draw_* function follows
// the render() method of the Gymnasium environment of the same name: the same screen size,
// scale, part sizes (given there in pixels; here divided by the scale to get world units) and
// colours, in the same drawing order.
#include "render.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>
#include <sstream>

#include "../kernels/check.h"
#include "env_wrapper.h"
#include "envs/acrobot.h"
#include "envs/cartpole.h"
#include "envs/mountain_car.h"
#include "envs/mountain_car_continuous.h"
#include "envs/pendulum.h"

namespace ctrax::render {

const Shape* Frame::find(const std::string& name) const {
  for (const Shape& shape : shapes) {
    const std::string& n = std::visit([](const auto& s) -> const std::string& { return s.name; }, shape);
    if (n == name) return &shape;
  }
  return nullptr;
}

void Frame::throw_missing(const std::string& name) const {
  std::ostringstream names;
  for (size_t i = 0; i < shapes.size(); ++i)
    names << (i ? ", " : "") << std::visit([](const auto& s) { return s.name; }, shapes[i]);
  CTRAX_THROW("Frame: no shape named '", name, "' of the requested type; the frame has: ", names.str());
}

namespace {

constexpr Rgb kBlack{0, 0, 0};
constexpr Rgb kWhite{255, 255, 255};

// Rotates p by `angle` radians counterclockwise (y up) and moves it by `offset`: pygame's
// Vector2.rotate_rad followed by the translation every Gymnasium renderer applies.
Point place(Point p, double angle, Point offset) {
  const double c = std::cos(angle), s = std::sin(angle);
  return {p.x * c - p.y * s + offset.x, p.x * s + p.y * c + offset.y};
}

// The rectangle [l, r] x [b, t] as Gymnasium lists its corners ((l,b), (l,t), (r,t), (r,b)),
// rotated by `angle` and moved by `offset`.
std::vector<Point> box(double l, double r, double t, double b, double angle, Point offset) {
  return {place({l, b}, angle, offset), place({l, t}, angle, offset), place({r, t}, angle, offset),
          place({r, b}, angle, offset)};
}

void require_state(const std::string& id, const std::vector<double>& state, size_t n, const char* layout) {
  CTRAX_REQUIRE(state.size() == n, "render: ", id, " has a state of ", n, " values (", layout, "), got ",
                state.size());
  for (size_t i = 0; i < n; ++i)
    CTRAX_REQUIRE(std::isfinite(state[i]), "render: ", id, ": state value ", i, " is ", state[i],
                  ", not a finite number");
}

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

const std::vector<std::string>& known_ids() {
  static const std::vector<std::string> ids = {"Acrobot-v1",  "CartPole-v0",   "CartPole-v1",
                                               "MountainCar-v0", "MountainCarContinuous-v0", "Pendulum-v1"};
  return ids;
}

std::string known_ids_text() {
  std::string text;
  for (const std::string& id : known_ids()) {
    if (!text.empty()) text += ", ";
    text += id;
  }
  return text;
}

}  // namespace
}  // namespace ctrax::render

namespace ctrax {

using render::Frame;

Frame render_frame(const Env& env) {
  const Env* inner = &env;
  if (const auto* wrapper = dynamic_cast<const EnvWrapper*>(inner)) inner = &wrapper->unwrapped();
  const std::vector<double> s = inner->state();
  const std::string id = inner->name();
  if (const auto* e = dynamic_cast<const CartPoleEnv*>(inner)) {
    render::require_state(id, s, 4, "x, x_dot, theta, theta_dot");
    return render::draw_cartpole(e->params(), s);
  }
  if (const auto* e = dynamic_cast<const AcrobotEnv*>(inner)) {
    render::require_state(id, s, 4, "theta1, theta2, dtheta1, dtheta2");
    return render::draw_acrobot(e->params(), s);
  }
  if (const auto* e = dynamic_cast<const MountainCarEnv*>(inner)) {
    render::require_state(id, s, 2, "position, velocity");
    return render::draw_mountain_car(e->params().min_position, e->params().max_position, e->params().goal_position, s);
  }
  if (const auto* e = dynamic_cast<const MountainCarContinuousEnv*>(inner)) {
    render::require_state(id, s, 2, "position, velocity");
    return render::draw_mountain_car(e->params().min_position, e->params().max_position, e->params().goal_position, s);
  }
  if (const auto* e = dynamic_cast<const PendulumEnv*>(inner)) {
    render::require_state(id, s, 2, "th, thdot");
    return render::draw_pendulum(e->params(), s);
  }
  CTRAX_THROW("render_frame: cannot draw ", id, ": only the built-in environments can be drawn (",
              render::known_ids_text(), ")");
}

Frame render_state(const std::string& env_id, const std::vector<double>& state) {
  if (env_id == "CartPole-v0" || env_id == "CartPole-v1") {
    render::require_state(env_id, state, 4, "x, x_dot, theta, theta_dot");
    return render::draw_cartpole(CartPoleParams{}, state);
  }
  if (env_id == "Acrobot-v1") {
    render::require_state(env_id, state, 4, "theta1, theta2, dtheta1, dtheta2");
    return render::draw_acrobot(AcrobotParams{}, state);
  }
  if (env_id == "MountainCar-v0") {
    render::require_state(env_id, state, 2, "position, velocity");
    const MountainCarParams p;
    return render::draw_mountain_car(p.min_position, p.max_position, p.goal_position, state);
  }
  if (env_id == "MountainCarContinuous-v0") {
    render::require_state(env_id, state, 2, "position, velocity");
    const MountainCarContinuousParams p;
    return render::draw_mountain_car(p.min_position, p.max_position, p.goal_position, state);
  }
  if (env_id == "Pendulum-v1") {
    render::require_state(env_id, state, 2, "th, thdot");
    return render::draw_pendulum(PendulumParams{}, state);
  }
  CTRAX_THROW("render_state: cannot draw ", env_id, ": the environments that can be drawn are ", render::known_ids_text());
}

std::vector<std::string> renderable_env_names() { return render::known_ids(); }

double render_fps(const std::string& env_id) {
  if (env_id == "CartPole-v0" || env_id == "CartPole-v1") return 50;
  if (env_id == "Acrobot-v1") return 15;
  if (env_id == "MountainCar-v0" || env_id == "MountainCarContinuous-v0" || env_id == "Pendulum-v1") return 30;
  CTRAX_THROW("render_fps: no frame rate for ", env_id, ": the environments that can be drawn are ", render::known_ids_text());
}

}  // namespace ctrax
