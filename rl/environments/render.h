// Rendering environments as geometry: what Gymnasium's render() draws, as a list of named shapes
// (namespace ctrax::render: Frame, ViewBox, Line, Polygon, Circle, Text, Point, Rgb), for
// `ctrax eval --render` and anything else that wants a picture. Not pixels or windows: turning
// frames into images is tools/gnuplot.h's job.
//
// render_frame calls the environment's registered draw function (rl/environments/env_registry.h).
// The built-ins draw Gymnasium's pygame shapes, sizes and colours in the environment's own world
// coordinates, with Gymnasium's screen as the view box. y points up; widths and radii are in world
// units (a one-pixel Gymnasium line is one screen pixel wide: draw it at least one pixel wide);
// later shapes are drawn on top. Shape names per environment, and what is not drawn: docs/rl.md,
// "Rendering".
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "env.h"

namespace ctrax {

// The geometry types have their own namespace: names as plain as Point, Line, Text and Shape
// (ctrax::Shape is a tensor's shape) would collide in ctrax's.
namespace render {

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
  bool operator==(const Rgb&) const = default;
};

struct Point {
  double x = 0, y = 0;
};

// An open polyline of at least two points.
struct Line {
  std::string name;
  std::vector<Point> points;
  double width = 0;  // world units
  Rgb color;
};

// A filled polygon (at least three points; closed implicitly, the last point joins the first).
struct Polygon {
  std::string name;
  std::vector<Point> points;
  Rgb fill;
};

struct Circle {
  std::string name;
  Point centre;
  double radius = 0;  // world units
  Rgb fill;
};

// Text centred at a point, in the renderer's default font at `size` points.
struct Text {
  std::string name;
  Point at;
  std::string text;
  Rgb color;
  double size = 10;
};

using Shape = std::variant<Line, Polygon, Circle, Text>;

// The rectangle of the world that a picture shows: Gymnasium's screen, in world units.
struct ViewBox {
  double x_min = 0, x_max = 1, y_min = 0, y_max = 1;
  double width() const { return x_max - x_min; }
  double height() const { return y_max - y_min; }
};

struct Frame {
  ViewBox view;
  Rgb background{255, 255, 255};
  std::vector<Shape> shapes;

  // The first shape with this name, or nullptr.
  const Shape* find(const std::string& name) const;
  // The first shape with this name, of type T; throws ctrax::Error when there is none (naming
  // the frame's shapes).
  template <typename T>
  const T& get(const std::string& name) const {
    const Shape* shape = find(name);
    const T* typed = shape != nullptr ? std::get_if<T>(shape) : nullptr;
    if (typed == nullptr) throw_missing(name);
    return *typed;
  }

 private:
  [[noreturn]] void throw_missing(const std::string& name) const;
};

// Helpers for draw functions: colours; p rotated by `angle` radians counterclockwise and moved
// by `offset` (pygame's Vector2.rotate_rad and the translation Gymnasium's renderers apply);
// the rectangle [l, r] x [b, t] with its corners in Gymnasium's order ((l,b), (l,t), (r,t),
// (r,b)), rotated and moved the same way; and the check that a state has n finite values
// (ctrax::Error "render: <id> has a state of n values (<layout>), got m").
inline constexpr Rgb kBlack{0, 0, 0};
inline constexpr Rgb kWhite{255, 255, 255};
Point place(Point p, double angle, Point offset);
std::vector<Point> box(double l, double r, double t, double b, double angle, Point offset);
void require_state(const std::string& id, const std::vector<double>& state, size_t n, const char* layout);

}  // namespace render

// The picture of an environment's current state, through any wrappers: the draw function of
// unwrapped()'s registration (rl/environments/env_registry.h) gets the unwrapped environment (for its
// parameters, e.g. CartPole's pole length) and its state(). Throws ctrax::Error naming the
// environment when its id has no registered draw function.
render::Frame render_frame(const Env& env);

// The same from a registered id and a state vector in that environment's state() layout, with
// the parameters of a freshly made one. Throws ctrax::Error for an id without a draw function
// (listing those with one), a state of the wrong length, or a non-finite value.
render::Frame render_state(const std::string& env_id, const std::vector<double>& state);

// The registered ids with a draw function, sorted.
std::vector<std::string> renderable_env_names();

// The registered frame rate (Gymnasium's metadata["render_fps"] for the built-ins: CartPole 50,
// Acrobot 15, MountainCar and Pendulum 30): the speed at which an animation plays in real time.
// Throws for ids without a draw function.
double render_fps(const std::string& env_id);

}  // namespace ctrax
