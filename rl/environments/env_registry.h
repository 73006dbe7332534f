// The environment registry: ids that configs, `ctrax list`, `ctrax rollout` and
// `ctrax eval --render` can name (Gymnasium's register and make).
//
// What it is for: one registration per environment, the built-ins' included: how to make it, its
// registered time limit, optionally a batched version stepped as one (CartPole's
// CartPoleVectorEnv) and a draw function (rl/environments/render.h). A program registers its own
// environment once, before reading a config that names it:
//
//   register_env({.id = "Target-v0", .make = [] { return std::make_unique<TargetEnv>(); },
//                 .max_episode_steps = 50, .draw = draw_target});
//
// Thread-safe. The built-ins (CartPole-v0, CartPole-v1, Acrobot-v1, MountainCar-v0,
// MountainCarContinuous-v0, Pendulum-v1, with Gymnasium's limits) are registered at first use.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "env.h"
#include "render.h"
#include "vector_env.h"

namespace ctrax {

struct EnvSpec {
  std::string id;                  // required, unique; make()->name() should return it
  std::function<EnvPtr()> make;    // required: the environment without its time limit
  int64_t max_episode_steps = 0;   // the registered time limit (0: none), applied by make_env
  // Optional: num_envs copies stepped as one, with the given time limit (0: none); otherwise
  // make_vector_env steps make_env copies one by one (SyncVectorEnv).
  std::function<VectorEnvPtr(int64_t num_envs, int64_t max_episode_steps)> make_vector;
  // Optional: the picture of `env` (the unwrapped environment, made by make()) in the state
  // `state` (state() layout); render_frame and render_state call it.
  std::function<render::Frame(const Env& env, const std::vector<double>& state)> draw;
  double render_fps = 30;          // > 0: frames per second of an animation in real time
};

// Adds an environment. Throws ctrax::Error for an empty id, a missing make, a negative limit,
// a non-positive frame rate, or an id that is registered already.
void register_env(EnvSpec spec);
// The registration of `id`, or nullptr.
const EnvSpec* find_env_spec(const std::string& id);
// The registered ids, sorted.
std::vector<std::string> env_names();

// A registered environment with its time limit applied (TimeLimit wrapper); max_episode_steps
// overrides the limit (0: none). An unknown id throws ctrax::Error listing the known ones.
EnvPtr make_env(const std::string& id, std::optional<int64_t> max_episode_steps = std::nullopt);

// num_envs (>= 1) copies of a registered environment with its time limit, or max_episode_steps
// (0: none): the registration's batched version where it has one (CartPole: CartPoleVectorEnv,
// Pendulum: PendulumVectorEnv; rl/environments/batched_env.h), else SyncVectorEnv over make_env
// copies. An unknown id or a
// negative limit throws ctrax::Error as make_env does.
VectorEnvPtr make_vector_env(const std::string& id, int64_t num_envs,
                             std::optional<int64_t> max_episode_steps = std::nullopt);

}  // namespace ctrax
