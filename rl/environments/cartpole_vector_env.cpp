// CartPole's part of the batched environment (see cartpole_vector_env.h).
#include "cartpole_vector_env.h"

#include "../../base/error.h"
#include "classic_control/classic_control.h"

namespace ctrax {

Space CartPolePhysics::observation_space(const Params& params) {
  return CartPoleEnv(params).observation_space();  // a single CartPoleEnv is the one definition
}

Space CartPolePhysics::action_space(const Params&) { return Space::discrete(2); }

CartPolePhysics::State CartPolePhysics::initial_state(const Params&, Key key) {
  // cartpole_initial_state draws uniform(key, {4}, float64, -0.05, 0.05).
  State state{};
  batched_env_detail::uniform_f64(key, -0.05, 0.05, state);
  return state;
}

std::string CartPolePhysics::expected_actions(int64_t n, const Space&) {
  return detail::cat("int64 of shape [", n, "]");
}

void CartPolePhysics::read_actions(const Tensor& actions, int64_t n, const Space& space, const std::string& who,
                                   Action* out) {
  CTRAX_REQUIRE(actions.dtype() == DType::int32 || actions.dtype() == DType::int64, who, ": the actions have dtype ", actions.dtype(),
                " (expected int32 or int64 for the action space ", space, ")");
  CTRAX_REQUIRE(actions.shape() == Shape{n}, who, ": the actions have shape ", actions.shape(), " (expected [", n,
                "], one per copy)");
  const int64_t stride = actions.strides()[0];
  auto read = [&](const auto* a) {
    for (int64_t i = 0; i < n; ++i) {
      const auto v = a[i * stride];
      CTRAX_REQUIRE(v == 0 || v == 1, who, ": actions[", i, "] is ", static_cast<int64_t>(v), " (expected 0 or 1)");
      out[i] = static_cast<int64_t>(v);
    }
  };
  if (actions.dtype() == DType::int32) {
    read(static_cast<const int32_t*>(actions.raw_data()));
  } else {
    read(static_cast<const int64_t*>(actions.raw_data()));
  }
}

void CartPolePhysics::write_observation(const Params&, const State& state, Cache&, float* row) {
  for (int k = 0; k < 4; ++k) row[k] = float32_of(state[k]);
}

}  // namespace ctrax
