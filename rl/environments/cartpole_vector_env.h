// CartPoleVectorEnv: N CartPoles stepped together (BatchedEnv, rl/environments/batched_env.h), the
// batched implementation behind make_vector_env("CartPole-v1", N) (and -v0), for collecting at
// tens of millions of steps per second. Each copy runs cartpole_step, the function CartPoleEnv
// calls.
//
// Actions: shape [N], int32 or int64 (strided views too), every value 0 or 1. Checkpoint kind 2;
// a copy's state is x, x_dot, theta, theta_dot.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "batched_env.h"
#include "classic_control/cartpole.h"

namespace ctrax {

// One CartPole's part of BatchedEnv (the contract is in batched_env.h).
struct CartPolePhysics {
  using Params = CartPoleParams;
  using State = std::array<double, 4>;
  using Action = int64_t;
  static constexpr uint64_t kKind = 2;
  static constexpr const char* kClassName = "CartPoleVectorEnv";
  static constexpr const char* kDefaultName = "CartPole-v1";
  static constexpr int64_t kObservationSize = 4;

  static Space observation_space(const Params& params);
  static Space action_space(const Params& params);
  // cartpole_initial_state(key) without the tensor it builds, bit for bit.
  static State initial_state(const Params& params, Key key);
  // What a batch must be, for error messages: "int64 of shape [N]".
  static std::string expected_actions(int64_t n, const Space& space);
  static void read_actions(const Tensor& actions, int64_t n, const Space& space, const std::string& who, Action* out);
  struct Cache {};  // nothing to keep between steps
  static CartPoleStepOutcome step(const Params& params, State& state, Cache&, Action action) {
    return cartpole_step(params, state, action);
  }
  static void write_observation(const Params& params, const State& state, Cache&, float* row);
};

using CartPoleVectorEnv = BatchedEnv<CartPolePhysics>;

}  // namespace ctrax
