// PendulumVectorEnv: N Pendulums stepped together (BatchedEnv, rl/environments/batched_env.h),
// the batched implementation behind make_vector_env("Pendulum-v1", N). Each copy runs
// pendulum_step, the function PendulumEnv calls, so copy i follows a PendulumEnv under a
// TimeLimit seeded alike step for step, observations and rewards bit for bit.
//
// Actions: shape [N, 1], float32 or float64 (any strides), every value finite; the torque is
// clipped to [-max_torque, max_torque] by the dynamics, as PendulumEnv does. Checkpoint kind 3; a
// copy's state is th, thdot.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <string>

#include "batched_env.h"
#include "classic_control/pendulum.h"

namespace ctrax {

// One Pendulum's part of BatchedEnv (the contract is in batched_env.h).
struct PendulumPhysics {
  using Params = PendulumParams;
  using State = std::array<double, 2>;
  using Action = float;
  static constexpr uint64_t kKind = 3;
  static constexpr const char* kClassName = "PendulumVectorEnv";
  static constexpr const char* kDefaultName = "Pendulum-v1";
  static constexpr int64_t kObservationSize = 3;

  static Space observation_space(const Params& params);
  static Space action_space(const Params& params);
  // PendulumEnv's reset draw without the tensors: th uniform in [-pi, pi) from split(key).first,
  // thdot uniform in [-1, 1) from split(key).second, bit for bit.
  static State initial_state(const Params& params, Key key);
  static std::string expected_actions(int64_t n, const Space& space);
  static void read_actions(const Tensor& actions, int64_t n, const Space& space, const std::string& who, Action* out);
  // sin th of the last observation: the observation's sine and cosine come from one sincos
  // call, and the next step's dynamics need sin th again (std::sin gives the same bits; tested).
  // th is kept with it, so a state set any other way is never read with a stale sine.
  struct Cache {
    double th = std::numeric_limits<double>::quiet_NaN();
    double sin_th = 0.0;
  };
  static PendulumStepOutcome step(const Params& params, State& state, Cache& cache, Action action) {
    return pendulum_step(params, state, action, cache.th == state[0] ? &cache.sin_th : nullptr);
  }
  static void write_observation(const Params& params, const State& state, Cache& cache, float* row);
};

using PendulumVectorEnv = BatchedEnv<PendulumPhysics>;

}  // namespace ctrax
