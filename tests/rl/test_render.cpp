// Rendering geometry (rl/environments/render.h): each built-in environment's picture puts its parts where
// the state says (the pole at angle theta, the car at its position, the acrobot's tip and the
// pendulum's end where the kinematics put them), inside Gymnasium's view box, through wrappers;
// and the errors for environments and states it cannot draw.
#include <doctest/doctest.h>

#include <algorithm>

#include <cmath>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

#include <ctrax/base/error.h>
#include <ctrax/rl/environments/env.h>
#include <ctrax/rl/environments/env_registry.h>
#include <ctrax/rl/environments/classic_control/cartpole.h>
#include <ctrax/rl/environments/render.h>
#include <ctrax/rl/environments/time_limit.h>

using ctrax::render::Circle;
using ctrax::Env;
using ctrax::Error;
using ctrax::render::Frame;
using ctrax::render::Line;
using ctrax::render::Point;
using ctrax::render::Polygon;
using ctrax::render::Shape;

namespace {

Point mid(Point a, Point b) { return {(a.x + b.x) / 2, (a.y + b.y) / 2}; }
double distance(Point a, Point b) { return std::hypot(a.x - b.x, a.y - b.y); }

Frame render_at(const std::string& id, const std::vector<double>& state) {
  ctrax::EnvPtr env = ctrax::make_env(id);  // wrapped in TimeLimit: render_frame unwraps it
  env->reset(0);
  env->set_state(state);
  return ctrax::render_frame(*env);
}

// Every point of every shape, circles by their bounding boxes.
std::vector<Point> all_points(const Frame& f) {
  std::vector<Point> out;
  for (const Shape& shape : f.shapes) {
    if (const auto* l = std::get_if<Line>(&shape)) out.insert(out.end(), l->points.begin(), l->points.end());
    if (const auto* g = std::get_if<Polygon>(&shape)) out.insert(out.end(), g->points.begin(), g->points.end());
    if (const auto* c = std::get_if<Circle>(&shape)) {
      out.push_back({c->centre.x - c->radius, c->centre.y - c->radius});
      out.push_back({c->centre.x + c->radius, c->centre.y + c->radius});
    }
  }
  return out;
}

// A user environment: nothing to draw it with.
class Blob final : public Env {
 public:
  Blob() : obs_(ctrax::Space::box(ctrax::Shape{1}, 0.0, 1.0)), act_(ctrax::Space::discrete(2)) {}
  std::string name() const override { return "Blob-v3"; }
  const ctrax::Space& observation_space() const override { return obs_; }
  const ctrax::Space& action_space() const override { return act_; }
  ctrax::Tensor reset(std::optional<uint64_t>) override { return observation(); }
  ctrax::StepResult step(const ctrax::Tensor&) override { return {observation(), 0.0, false, false}; }
  std::vector<double> state() const override { return {0.0}; }
  void set_state(const std::vector<double>&) override {}
  ctrax::Tensor observation() const override { return ctrax::zeros(ctrax::Shape{1}); }

 private:
  ctrax::Space obs_, act_;
};

}  // namespace

TEST_CASE("Render CartPole: the cart at x, the pole at angle theta from the axle") {
  for (double theta : {0.0, 0.15, -0.2}) {
    const double x = 0.7;
    const Frame f = render_at("CartPole-v1", {x, 0.3, theta, -0.5});
    CHECK(f.view.x_min == doctest::Approx(-2.4));
    CHECK(f.view.x_max == doctest::Approx(2.4));
    // Gymnasium's 600 x 400 screen: the view's aspect ratio is 2/3.
    CHECK(f.view.height() / f.view.width() == doctest::Approx(400.0 / 600.0));
    const Polygon& cart = f.get<Polygon>("cart");
    REQUIRE(cart.points.size() == 4);
    const Point cart_centre = mid(cart.points[0], cart.points[2]);
    CHECK(cart_centre.x == doctest::Approx(x));
    CHECK(cart_centre.y == doctest::Approx(0.0));
    CHECK(distance(cart.points[1], cart.points[2]) == doctest::Approx(0.4));  // 50 px at 125 px per metre
    const Circle& axle = f.get<Circle>("axle");
    CHECK(axle.centre.x == doctest::Approx(x));
    CHECK(axle.centre.y == doctest::Approx(0.06));  // a quarter of the cart's 30 px above its centre
    // The pole's axis runs from the middle of its bottom edge to the middle of its top edge.
    const Polygon& pole = f.get<Polygon>("pole");
    REQUIRE(pole.points.size() == 4);
    const Point bottom = mid(pole.points[0], pole.points[3]), top = mid(pole.points[1], pole.points[2]);
    // Leaning right for theta > 0: the angle from the vertical, clockwise, is theta.
    CHECK(std::atan2(top.x - bottom.x, top.y - bottom.y) == doctest::Approx(theta).epsilon(1e-12));
    CHECK(distance(top, bottom) == doctest::Approx(1.0));  // 2 * length
    CHECK(distance(pole.points[0], pole.points[3]) == doctest::Approx(0.08));  // 10 px wide
    // The pole's bottom edge is half its width below the axle.
    CHECK(distance(bottom, axle.centre) == doctest::Approx(0.04));
    const Line& track = f.get<Line>("track");
    CHECK(track.points.front().y == 0.0);
    CHECK(track.width > 0);
  }
}

TEST_CASE("Render CartPole: the parameters of the environment are used") {
  ctrax::CartPoleParams p;
  p.length = 1.0;
  p.x_threshold = 3.0;
  auto env = std::make_unique<ctrax::TimeLimit>(std::make_unique<ctrax::CartPoleEnv>(p), 10);
  env->reset(0);
  env->set_state({0, 0, 0, 0});
  const Frame f = ctrax::render_frame(*env);
  CHECK(f.view.x_max == doctest::Approx(3.0));
  const Polygon& pole = f.get<Polygon>("pole");
  CHECK(distance(mid(pole.points[0], pole.points[3]), mid(pole.points[1], pole.points[2])) == doctest::Approx(2.0));
}

TEST_CASE("Render Acrobot: the links follow the joint angles") {
  const double t1 = 0.4, t2 = -1.1;
  const Frame f = render_at("Acrobot-v1", {t1, t2, 0.0, 0.0});
  CHECK(f.view.x_min == doctest::Approx(-2.2));
  CHECK(f.view.y_max == doctest::Approx(2.2));
  // theta1 = 0 hangs down; theta2 is relative to link 1.
  const Point p1{std::sin(t1), -std::cos(t1)};
  const Point tip{p1.x + std::sin(t1 + t2), p1.y - std::cos(t1 + t2)};
  const Polygon& link1 = f.get<Polygon>("link1");
  const Polygon& link2 = f.get<Polygon>("link2");
  REQUIRE(link1.points.size() == 4);
  REQUIRE(link2.points.size() == 4);
  // A link's corners: (0, b), (0, t), (L, t), (L, b) along the link.
  const Point start1 = mid(link1.points[0], link1.points[1]), end1 = mid(link1.points[2], link1.points[3]);
  const Point start2 = mid(link2.points[0], link2.points[1]), end2 = mid(link2.points[2], link2.points[3]);
  CHECK(start1.x == doctest::Approx(0.0));
  CHECK(start1.y == doctest::Approx(0.0));
  CHECK(end1.x == doctest::Approx(p1.x));
  CHECK(end1.y == doctest::Approx(p1.y));
  CHECK(start2.x == doctest::Approx(p1.x));
  CHECK(start2.y == doctest::Approx(p1.y));
  CHECK(end2.x == doctest::Approx(tip.x));
  CHECK(end2.y == doctest::Approx(tip.y));
  CHECK(distance(link1.points[0], link1.points[1]) == doctest::Approx(0.2));
  CHECK(f.get<Circle>("joint2").centre.x == doctest::Approx(p1.x));
  // The goal line is where the task terminates: tip height -cos t1 - cos(t1 + t2) > 1.
  CHECK(f.get<Line>("goal").points.front().y == 1.0);
}

TEST_CASE("Render MountainCar: the car on the hill at its position, the flag at the goal") {
  for (const auto& env : {std::pair<std::string, double>{"MountainCar-v0", 0.5},
                           std::pair<std::string, double>{"MountainCarContinuous-v0", 0.45}}) {
    const std::string& id = env.first;
    const double goal = env.second;
    CAPTURE(id);
    const double pos = -0.3;
    const Frame f = render_at(id, {pos, 0.01});
    CHECK(f.view.x_min == doctest::Approx(-1.2));
    CHECK(f.view.x_max == doctest::Approx(0.6));
    CHECK(f.view.height() / f.view.width() == doctest::Approx(400.0 / 600.0));
    const auto hill = [](double x) { return 0.45 * std::sin(3 * x) + 0.55; };
    const Line& mountain = f.get<Line>("mountain");
    REQUIRE(mountain.points.size() == 100);
    for (const Point& p : mountain.points) CHECK(p.y == doctest::Approx(hill(p.x)));
    // The car's bottom edge is centred 10 px (0.03) above the hill at its position.
    const Polygon& car = f.get<Polygon>("car");
    REQUIRE(car.points.size() == 4);
    const Point base = mid(car.points[0], car.points[3]);
    CHECK(base.x == doctest::Approx(pos));
    CHECK(base.y == doctest::Approx(hill(pos) + 0.03));
    // Tilted by Gymnasium's angle cos(3 pos).
    CHECK(std::atan2(car.points[3].y - car.points[0].y, car.points[3].x - car.points[0].x) ==
          doctest::Approx(std::cos(3 * pos)));
    const Line& pole = f.get<Line>("flagpole");
    CHECK(pole.points[0].x == doctest::Approx(goal));
    CHECK(pole.points[0].y == doctest::Approx(hill(goal)));
    CHECK(f.get<Polygon>("flag").points[0].x == doctest::Approx(goal));
    CHECK(f.get<Circle>("wheel_front").radius == doctest::Approx(0.06 / 2.5));
  }
}

TEST_CASE("Render Pendulum: the rod points at th from the vertical, counterclockwise") {
  for (double th : {0.0, 1.0, -2.5}) {
    const Frame f = render_at("Pendulum-v1", {th, 0.5});
    const Circle& end = f.get<Circle>("rod_end");
    CHECK(end.centre.x == doctest::Approx(-std::sin(th)));
    CHECK(end.centre.y == doctest::Approx(std::cos(th)));
    const Polygon& rod = f.get<Polygon>("rod");
    REQUIRE(rod.points.size() == 4);
    const Point far = mid(rod.points[2], rod.points[3]);
    CHECK(far.x == doctest::Approx(-std::sin(th)));
    CHECK(far.y == doctest::Approx(std::cos(th)));
    CHECK(f.get<Circle>("axle").radius == doctest::Approx(0.05));
  }
}

TEST_CASE("Render every built-in environment: reset states lie inside the view, render_state agrees") {
  // (Other tests may register environments of their own in this process.)
  const std::vector<std::string> builtins = {"Acrobot-v1",     "CartPole-v0",              "CartPole-v1",
                                             "MountainCar-v0", "MountainCarContinuous-v0", "Pendulum-v1"};
  const std::vector<std::string> drawable = ctrax::renderable_env_names();
  for (const std::string& id : builtins) {
    CAPTURE(id);
    CHECK(std::find(drawable.begin(), drawable.end(), id) != drawable.end());
    ctrax::EnvPtr env = ctrax::make_env(id);
    env->reset(3);
    const Frame f = ctrax::render_frame(*env);
    CHECK(f.shapes.size() >= 4);
    for (const Point& p : all_points(f)) {
      CHECK(p.x >= f.view.x_min - 1e-9);
      CHECK(p.x <= f.view.x_max + 1e-9);
      CHECK(p.y >= f.view.y_min - 1e-9);
      CHECK(p.y <= f.view.y_max + 1e-9);
    }
    const Frame g = ctrax::render_state(id, env->state());
    const std::vector<Point> a = all_points(f), b = all_points(g);
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      CHECK(a[i].x == b[i].x);
      CHECK(a[i].y == b[i].y);
    }
    CHECK(ctrax::render_fps(id) > 0);
  }
  CHECK(ctrax::render_fps("CartPole-v1") == 50);
  CHECK(ctrax::render_fps("Acrobot-v1") == 15);
  CHECK(ctrax::render_fps("Pendulum-v1") == 30);
}

TEST_CASE("Render errors: user environments, unknown ids, bad states, missing shapes") {
  Blob blob;
  CHECK_THROWS_WITH_AS(ctrax::render_frame(blob), doctest::Contains("cannot draw Blob-v3"), Error);
  CHECK_THROWS_WITH_AS(ctrax::render_frame(ctrax::TimeLimit(std::make_unique<Blob>(), 5)),
                       doctest::Contains("cannot draw Blob-v3"), Error);
  CHECK_THROWS_WITH_AS(ctrax::render_state("Blob-v3", {0.0}), doctest::Contains("CartPole-v1"), Error);
  CHECK_THROWS_WITH_AS(ctrax::render_state("CartPole-v1", {0.0, 1.0}),
                       doctest::Contains("CartPole-v1 has a state of 4 values"), Error);
  CHECK_THROWS_WITH_AS(ctrax::render_state("Pendulum-v1", {std::numeric_limits<double>::quiet_NaN(), 0.0}),
                       doctest::Contains("not a finite number"), Error);
  CHECK_THROWS_WITH_AS(ctrax::render_fps("Blob-v3"), doctest::Contains("no frame rate for Blob-v3"), Error);
  const Frame f = ctrax::render_state("Pendulum-v1", {0.0, 0.0});
  CHECK(f.find("rod") != nullptr);
  CHECK(f.find("wheel") == nullptr);
  CHECK_THROWS_WITH_AS(f.get<Polygon>("wheel"), doctest::Contains("no shape named 'wheel'"), Error);
  // The right name but the wrong type.
  CHECK_THROWS_WITH_AS(f.get<Circle>("rod"), doctest::Contains("rod_base"), Error);
}
