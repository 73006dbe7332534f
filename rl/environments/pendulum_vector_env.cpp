// Pendulum's part of the batched environment (see pendulum_vector_env.h).
#include "pendulum_vector_env.h"

#include <cmath>
#include <numbers>

#include "../../base/error.h"
#include "classic_control/classic_control.h"

namespace ctrax {

Space PendulumPhysics::observation_space(const Params& params) {
  return PendulumEnv(params).observation_space();  // a single PendulumEnv is the one definition
}

Space PendulumPhysics::action_space(const Params& params) { return PendulumEnv(params).action_space(); }

PendulumPhysics::State PendulumPhysics::initial_state(const Params&, Key key) {
  const auto [k_th, k_thdot] = split(key);
  State state{};
  batched_env_detail::uniform_f64(k_th, -std::numbers::pi, std::numbers::pi, std::span(state).first(1));
  batched_env_detail::uniform_f64(k_thdot, -1.0, 1.0, std::span(state).last(1));
  return state;
}

std::string PendulumPhysics::expected_actions(int64_t n, const Space&) {
  return detail::cat("float32 of shape [", n, ", 1]");
}

void PendulumPhysics::read_actions(const Tensor& actions, int64_t n, const Space& space, const std::string& who,
                                   Action* out) {
  CTRAX_REQUIRE(is_floating(actions.dtype()), who, ": the actions have dtype ", actions.dtype(),
                " (expected float32 or float64 for the action space ", space, ")");
  CTRAX_REQUIRE((actions.shape() == Shape{n, 1}), who, ": the actions have shape ", actions.shape(), " (expected [", n,
                ", 1], one row per copy)");
  // float16 and the like are rare enough to pay for a conversion.
  const Tensor values = actions.dtype() == DType::float32 || actions.dtype() == DType::float64
                            ? actions
                            : actions.to(DType::float64);
  const int64_t stride = values.strides()[0];
  auto read = [&](const auto* a) {
    for (int64_t i = 0; i < n; ++i) {
      const double v = static_cast<double>(a[i * stride]);
      CTRAX_REQUIRE(std::isfinite(v), who, ": actions[", i, "] is ", v, " (expected a finite number)");
      out[i] = finite_to_float32(v);
    }
  };
  if (values.dtype() == DType::float32) {
    read(static_cast<const float*>(values.raw_data()));
  } else {
    read(static_cast<const double*>(values.raw_data()));
  }
}

void PendulumPhysics::write_observation(const Params&, const State& state, Cache& cache, float* row) {
  const double sin_th = std::sin(state[0]);
  row[0] = float32_of(std::cos(state[0]));
  row[1] = float32_of(sin_th);
  row[2] = float32_of(state[1]);
  cache = {state[0], sin_th};
}

}  // namespace ctrax
