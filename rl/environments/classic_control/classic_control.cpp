// Shared episode bookkeeping of the built-in environments (see classic_control.h).
#include "classic_control.h"

#include <cmath>
#include <limits>

#include "../../../base/error.h"

namespace ctrax {

ClassicControlEnv::ClassicControlEnv(std::string name, Space observation_space, Space action_space,
                                     size_t state_size)
    : name_(std::move(name)),
      observation_space_(std::move(observation_space)),
      action_space_(std::move(action_space)),
      state_size_(state_size) {}

Tensor ClassicControlEnv::reset(std::optional<uint64_t> seed) {
  if (seed) {
    key_ = Key(*seed);
    episodes_ = 0;
  }
  episode_key_ = fold_in(key_, episodes_++);
  steps_in_episode_ = 0;
  reset_state(episode_key_);
  running_ = true;
  ever_reset_ = true;
  return observation();
}

StepResult ClassicControlEnv::step(const Tensor& action) {
  CTRAX_REQUIRE(running_, name_, ": step called ",
                ever_reset_ ? "after the episode terminated; call reset() (or set_state) first"
                            : "before reset(); call reset() (or set_state) first");
  StepResult result = step_state(action);
  ++steps_in_episode_;
  if (result.terminated) running_ = false;
  return result;
}

void ClassicControlEnv::set_state(const std::vector<double>& state) {
  CTRAX_REQUIRE(state.size() == state_size_, name_, ": set_state expects ", state_size_, " values, got ",
                state.size());
  for (size_t i = 0; i < state.size(); ++i)
    CTRAX_REQUIRE(std::isfinite(state[i]), name_, ": set_state: value ", i, " is ", state[i],
                  " (expected a finite number)");
  assign_state(state);
  running_ = true;
  ever_reset_ = true;
}

std::vector<double> ClassicControlEnv::checkpoint_state() const {
  std::vector<double> out;
  append_key(out, key_);
  out.push_back(static_cast<double>(episodes_));
  append_key(out, episode_key_);
  out.push_back(static_cast<double>(steps_in_episode_));
  out.push_back(running_ ? 1.0 : 0.0);
  out.push_back(ever_reset_ ? 1.0 : 0.0);
  const std::vector<double> own = checkpoint_values();
  out.insert(out.end(), own.begin(), own.end());
  return out;
}

void ClassicControlEnv::restore_checkpoint_state(const std::vector<double>& state) {
  CheckpointStateReader in(state, name_);
  const Key key = in.key("the key");
  const uint64_t episodes = in.count("the episode count");
  const Key episode_key = in.key("the episode key");
  const uint64_t steps = in.count("the steps in the episode");
  const bool running = in.flag("the running flag");
  const bool ever_reset = in.flag("the ever-reset flag");
  CTRAX_REQUIRE(ever_reset || !running, name_,
                ": restore_checkpoint_state: the state says an episode is running but none was ever started");
  const size_t own = checkpoint_values().size();
  const std::vector<double> values = in.numbers(own, "the environment's state");
  in.finish();
  restore_checkpoint_values(values);  // checks its values first; throws before any change
  key_ = key;
  episodes_ = episodes;
  episode_key_ = episode_key;
  steps_in_episode_ = steps;
  running_ = running;
  ever_reset_ = ever_reset;
}

int64_t ClassicControlEnv::discrete_action(const Tensor& action) const {
  const int64_t n = action_space_.n();
  CTRAX_REQUIRE(action.defined(), name_, ": the action is an undefined tensor (expected an integer in [0, ", n, "))");
  CTRAX_REQUIRE(is_integer(action.dtype()), name_, ": the action has dtype ", action.dtype(),
                " (expected int32 or int64 for the action space ", action_space_, ")");
  CTRAX_REQUIRE(action.numel() == 1, name_, ": the action has shape ", action.shape(),
                " (expected one integer, shape [] or [1])");
  const int64_t a = action.item<int64_t>();
  CTRAX_REQUIRE(a >= 0 && a < n, name_, ": action ", a, " is out of range (expected 0 <= action < ", n, ")");
  return a;
}

float ClassicControlEnv::box_action(const Tensor& action) const {
  CTRAX_REQUIRE(action.defined(), name_, ": the action is an undefined tensor (expected ", action_space_, ")");
  CTRAX_REQUIRE(is_floating(action.dtype()), name_, ": the action has dtype ", action.dtype(),
                " (expected float32 or float64 for the action space ", action_space_, ")");
  CTRAX_REQUIRE(action.shape() == action_space_.shape(), name_, ": the action has shape ", action.shape(),
                " (expected ", action_space_.shape(), ")");
  const double value = action.item<double>();
  CTRAX_REQUIRE(std::isfinite(value), name_, ": the action is ", value, " (expected a finite number)");
  return finite_to_float32(value);
}

Tensor float32_observation(std::initializer_list<double> values) {
  Tensor out(Shape{static_cast<int64_t>(values.size())}, DType::float32);
  float* data = out.data<float>();
  for (double v : values) *data++ = float32_of(v);
  return out;
}

Space float32_box(std::initializer_list<double> low, std::initializer_list<double> high) {
  return Space::box(tensor<double>(low).to(DType::float32), tensor<double>(high).to(DType::float32));
}

Space symmetric_float32_box(std::initializer_list<double> high) {
  std::vector<double> low;
  for (double h : high) low.push_back(-h);
  return Space::box(from_vector(low).to(DType::float32), tensor<double>(high).to(DType::float32));
}

}  // namespace ctrax
