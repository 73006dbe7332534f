// Environments: the Gymnasium interface in C++.
//
// What it is for: anything an agent acts in. reset(seed) gives the first observation;
// step(action) gives the next observation, the reward, and two flags that downstream code
// must keep apart (Gymnasium's convention since 0.26):
//   terminated  the episode reached a terminal state of the task (the pole fell, the car
//               reached the flag); the value of what follows is 0: never bootstrap from it;
//   truncated   the episode was cut short from outside (a time limit); the state still has a
//               value, so returns and advantages bootstrap from it.
// Both may be set at once (a terminal state reached on the last allowed step counts as
// terminated). After either, the caller must reset() before stepping again; stepping
// a finished episode throws ctrax::Error.
//
// Built-in environments (rl/envs/, make_env below) have the dynamics of Gymnasium's exactly:
// the same constants, integrator, observation, reward, termination, truncation and reset
// distribution, checked step by step against recordings of Gymnasium (tests/fixtures/). Their
// random numbers come from ctrax keys, so a seed gives other (equally distributed) initial
// states than in Gymnasium. Each can be put into a given internal state (set_state), which is
// how the tests replay Gymnasium's recordings.
//
// Writing your own: derive from Env, give the two spaces, and implement reset, step, state,
// set_state and observation (examples/custom_env.cpp). TimeLimit (rl/time_limit.h) truncates
// episodes; the wrappers of rl/wrappers.h add normalisation, action clipping and rescaling and
// episode statistics to any Env. For many copies stepped at once see rl/vector_env.h.
//
// What it is not for: rendering to a window (issue-tracked separately), or Gymnasium's info
// dictionaries (the few facts ctrax needs have fields instead).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "../tensor/random.h"
#include "../tensor/tensor.h"
#include "space.h"

namespace ctrax {

struct StepResult {
  Tensor observation;
  double reward = 0.0;
  bool terminated = false;
  bool truncated = false;
};

class Env {
 public:
  virtual ~Env() = default;

  // The registered name, e.g. "CartPole-v1", or a user environment's own.
  virtual std::string name() const = 0;
  virtual const Space& observation_space() const = 0;
  virtual const Space& action_space() const = 0;

  // Starts an episode. With a seed, the environment's generator is reseeded first (Gymnasium:
  // reset(seed=...)); without, it continues, so successive episodes differ.
  virtual Tensor reset(std::optional<uint64_t> seed = std::nullopt) = 0;
  // One step. A discrete action must be in action_space(). Box actions of the right shape
  // outside the bounds are clipped by the continuous built-ins exactly as Gymnasium's do
  // (Pendulum, MountainCarContinuous); ClipAction (rl/wrappers.h) does it for any Env.
  virtual StepResult step(const Tensor& action) = 0;

  // The internal state as numbers (each environment documents its layout; CartPole:
  // x, x_dot, theta, theta_dot). set_state puts the environment into that state, as if an
  // episode had reached it, and throws ctrax::Error for a wrong length or a non-finite value.
  virtual std::vector<double> state() const = 0;
  virtual void set_state(const std::vector<double>& state) = 0;
  // The observation of the current state.
  virtual Tensor observation() const = 0;
};

using EnvPtr = std::unique_ptr<Env>;

// A built-in environment by Gymnasium id, with Gymnasium's registered time limit applied
// (TimeLimit wrapper): CartPole-v0 (200 steps), CartPole-v1 (500), Acrobot-v1 (500),
// MountainCar-v0 (200), MountainCarContinuous-v0 (999), Pendulum-v1 (200). An unknown name
// throws ctrax::Error listing the known ones. max_episode_steps overrides the limit (0: none).
EnvPtr make_env(const std::string& name, std::optional<int64_t> max_episode_steps = std::nullopt);
// The ids make_env knows, sorted.
std::vector<std::string> env_names();

}  // namespace ctrax
