// Frames and the drawing helpers (see render.h); render_frame and render_state find the
// environment's picture through its registration (rl/environments/env_registry.h). The pictures of the
// built-in environments are drawn next to their dynamics (rl/environments/classic_control/*.cpp).
#include "render.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>
#include <sstream>

#include "../../base/error.h"
#include "env_registry.h"
#include "env_wrapper.h"

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

}  // namespace ctrax::render

namespace ctrax {

using render::Frame;

namespace {

// The registration of an environment that can be drawn, or a ctrax::Error from `who`.
const EnvSpec& drawable_spec(const std::string& id, const char* who) {
  const EnvSpec* spec = find_env_spec(id);
  if (spec == nullptr || !spec->draw) {
    std::string known;
    for (const std::string& name : renderable_env_names()) known += (known.empty() ? "" : ", ") + name;
    CTRAX_THROW(who, ": cannot draw ", id, ": only registered environments with a draw function (register_env, ",
                "rl/environments/env_registry.h) can be drawn; these can: ", known);
  }
  return *spec;
}

}  // namespace

Frame render_frame(const Env& env) {
  const Env* inner = &env;
  if (const auto* wrapper = dynamic_cast<const EnvWrapper*>(inner)) inner = &wrapper->unwrapped();
  return drawable_spec(inner->name(), "render_frame").draw(*inner, inner->state());
}

Frame render_state(const std::string& env_id, const std::vector<double>& state) {
  const EnvSpec& spec = drawable_spec(env_id, "render_state");
  const EnvPtr env = spec.make();  // the registered parameters
  return spec.draw(*env, state);
}

std::vector<std::string> renderable_env_names() {
  std::vector<std::string> names;
  for (const std::string& id : env_names())
    if (find_env_spec(id)->draw) names.push_back(id);
  return names;
}

double render_fps(const std::string& env_id) {
  const EnvSpec* spec = find_env_spec(env_id);
  CTRAX_REQUIRE(spec != nullptr && spec->draw, "render_fps: no frame rate for ", env_id,
                ": it is not a registered environment with a draw function");
  return spec->render_fps;
}

}  // namespace ctrax
