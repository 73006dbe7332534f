// The environment registry (see env_registry.h) and the built-ins' registrations.
#include "env_registry.h"

#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <utility>

#include "../../base/error.h"
#include "cartpole_vector_env.h"
#include "pendulum_vector_env.h"
#include "classic_control/acrobot.h"
#include "classic_control/cartpole.h"
#include "classic_control/mountain_car.h"
#include "classic_control/mountain_car_continuous.h"
#include "classic_control/pendulum.h"
#include "time_limit.h"

namespace ctrax {

namespace {

// `env` as the built-in type T, or a ctrax::Error (a user environment registered under another
// id but reporting a built-in's name).
template <typename T>
const T& as_builtin(const Env& env) {
  const auto* typed = dynamic_cast<const T*>(&env);
  CTRAX_REQUIRE(typed != nullptr, "render: ", env.name(), " is not the built-in environment of that name");
  return *typed;
}

EnvSpec cartpole(const std::string& id, int64_t limit) {
  return {.id = id,
          .make = [id] { return std::make_unique<CartPoleEnv>(CartPoleParams{}, id); },
          .max_episode_steps = limit,
          .make_vector = [id](int64_t n, int64_t steps) -> VectorEnvPtr {
            return std::make_unique<CartPoleVectorEnv>(n, steps, CartPoleParams{}, id);
          },
          .draw = [](const Env& env, const std::vector<double>& s) {
            render::require_state(env.name(), s, 4, "x, x_dot, theta, theta_dot");
            return render::draw_cartpole(as_builtin<CartPoleEnv>(env).params(), s);
          },
          .render_fps = 50};
}

struct Registry {
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<const EnvSpec>> specs;  // entries are never removed
};

Registry& storage() {
  static Registry r;
  return r;
}

void add(EnvSpec spec) {
  CTRAX_REQUIRE(!spec.id.empty(), "register_env: the id is empty");
  CTRAX_REQUIRE(spec.make != nullptr, "register_env(\"", spec.id, "\"): make is required");
  CTRAX_REQUIRE(spec.max_episode_steps >= 0, "register_env(\"", spec.id,
                "\"): max_episode_steps must be >= 0 (0: no limit), got ", spec.max_episode_steps);
  CTRAX_REQUIRE(spec.render_fps > 0, "register_env(\"", spec.id, "\"): render_fps must be > 0, got ",
                spec.render_fps);
  Registry& reg = storage();
  std::lock_guard<std::mutex> lock(reg.mutex);
  const std::string id = spec.id;
  const bool added = reg.specs.emplace(id, std::make_shared<const EnvSpec>(std::move(spec))).second;
  CTRAX_REQUIRE(added, "register_env: \"", id, "\" is registered already");
}

// Both mountain cars draw the same picture from their own parameters.
template <typename MountainCar>
EnvSpec mountain_car(const std::string& id, int64_t limit) {
  return {.id = id,
          .make = [] { return std::make_unique<MountainCar>(); },
          .max_episode_steps = limit,
          .make_vector = nullptr,
          .draw = [](const Env& env, const std::vector<double>& s) {
            render::require_state(env.name(), s, 2, "position, velocity");
            const auto& p = as_builtin<MountainCar>(env).params();
            return render::draw_mountain_car(p.min_position, p.max_position, p.goal_position, s);
          },
          .render_fps = 30};
}

// Gymnasium's ids, registered time limits (gymnasium/envs/__init__.py) and frame rates.
void register_builtins() {
  add(cartpole("CartPole-v0", 200));
  add(cartpole("CartPole-v1", 500));
  add({.id = "Acrobot-v1",
       .make = [] { return std::make_unique<AcrobotEnv>(); },
       .max_episode_steps = 500,
       .make_vector = nullptr,
       .draw = [](const Env& env, const std::vector<double>& s) {
         render::require_state(env.name(), s, 4, "theta1, theta2, dtheta1, dtheta2");
         return render::draw_acrobot(as_builtin<AcrobotEnv>(env).params(), s);
       },
       .render_fps = 15});
  add(mountain_car<MountainCarEnv>("MountainCar-v0", 200));
  add(mountain_car<MountainCarContinuousEnv>("MountainCarContinuous-v0", 999));
  add({.id = "Pendulum-v1",
       .make = [] { return std::make_unique<PendulumEnv>(); },
       .max_episode_steps = 200,
       .make_vector = [](int64_t n, int64_t steps) -> VectorEnvPtr {
         return std::make_unique<PendulumVectorEnv>(n, steps);
       },
       .draw = [](const Env& env, const std::vector<double>& s) {
         render::require_state(env.name(), s, 2, "th, thdot");
         return render::draw_pendulum(as_builtin<PendulumEnv>(env).params(), s);
       },
       .render_fps = 30});
}

// The registry, with the built-ins added at first use.
Registry& registry() {
  static std::once_flag builtins;
  std::call_once(builtins, register_builtins);
  return storage();
}

}  // namespace

void register_env(EnvSpec spec) {
  registry();  // the built-ins first, so a user's id cannot take one of theirs
  add(std::move(spec));
}

const EnvSpec* find_env_spec(const std::string& id) {
  Registry& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mutex);
  const auto it = reg.specs.find(id);
  return it == reg.specs.end() ? nullptr : it->second.get();
}

std::vector<std::string> env_names() {
  Registry& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mutex);
  std::vector<std::string> names;
  for (const auto& [id, spec] : reg.specs) names.push_back(id);
  return names;  // std::map keeps them sorted
}

EnvPtr make_env(const std::string& id, std::optional<int64_t> max_episode_steps) {
  const EnvSpec* spec = find_env_spec(id);
  if (spec == nullptr) {
    std::ostringstream known;
    for (const std::string& n : env_names()) known << (known.tellp() > 0 ? ", " : "") << n;
    CTRAX_THROW("make_env: unknown environment \"", id, "\" (known: ", known.str(),
                "; a program adds its own with register_env)");
  }
  const int64_t limit = max_episode_steps.value_or(spec->max_episode_steps);
  CTRAX_REQUIRE(limit >= 0, "make_env: max_episode_steps must be >= 0 (0: no limit), got ", limit);
  EnvPtr env = spec->make();
  CTRAX_REQUIRE(env != nullptr, "make_env(\"", id, "\"): the registered make() returned null");
  if (limit == 0) return env;
  return std::make_unique<TimeLimit>(std::move(env), limit);
}

VectorEnvPtr make_vector_env(const std::string& id, int64_t num_envs, std::optional<int64_t> max_episode_steps) {
  CTRAX_REQUIRE(num_envs >= 1, "make_vector_env(\"", id, "\"): num_envs must be >= 1, got ", num_envs);
  // make_env checks the id and the limit, and its TimeLimit says which limit applies (none when
  // it added no wrapper).
  const EnvPtr probe = make_env(id, max_episode_steps);
  int64_t limit = 0;
  if (const auto* time_limit = dynamic_cast<const TimeLimit*>(probe.get())) limit = time_limit->max_episode_steps();
  const EnvSpec* spec = find_env_spec(id);
  if (spec->make_vector) return spec->make_vector(num_envs, limit);
  return std::make_unique<SyncVectorEnv>([id, max_episode_steps] { return make_env(id, max_episode_steps); },
                                         num_envs);
}

}  // namespace ctrax
