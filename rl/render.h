// Rendering environments as geometry: what Gymnasium's render() draws, as a list of shapes.
//
// What it is for: `ctrax eval --render` and anything else that wants a picture of an episode.
// render_frame gives a Frame drawn by the environment's registered draw function
// (rl/env_registry.h). The built-in classic-control environments draw the shapes Gymnasium's
// pygame renderer draws (cart and pole; the two acrobot links; the mountain, car and flag; the
// pendulum rod), with its sizes and colours, in the environment's own world coordinates (metres
// for CartPole, the position axis for the mountain cars, link lengths for Acrobot and Pendulum)
// and a view box that is Gymnasium's screen in those units; a user's environment draws whatever
// its registration says. Turning frames into images is someone else's job (tools/gnuplot.h
// writes PNGs and animated GIFs).
//
// What it is not for: pixels (there is no rasteriser here) or windows. Gymnasium's Pendulum also
// draws an arrow scaled by the last torque; the state does not hold it, so that arrow is not
// drawn.
//
// Types (namespace ctrax::render): Frame, its ViewBox and Shapes (Line, Polygon, Circle, Text),
// Point, Rgb.
//
// Conventions: y points up, as in Gymnasium's drawing code (which draws on a y-down pygame
// surface and flips it vertically at the end). Widths and radii are in world units; a Line of
// Gymnasium's one-pixel kind has width = one screen pixel in world units, and a renderer should
// draw it at least one pixel wide. Shapes are drawn in order, later ones on top. Each has a name
// so that callers and tests can find a part:
//   CartPole       cart, pole (Polygons), axle (Circle), track (Line)
//   Acrobot        goal (Line), link1, link2 (Polygons), joint1, joint2 (Circles)
//   MountainCar*   mountain (Line), car (Polygon), wheel_front, wheel_back (Circles),
//                  flagpole (Line), flag (Polygon)
//   Pendulum       rod (Polygon), rod_base, rod_end, axle (Circles)
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
// unwrapped()'s registration (rl/env_registry.h) gets the unwrapped environment (for its
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
