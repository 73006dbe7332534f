// ClassicControlEnv: what every built-in (Gymnasium classic-control) environment shares: episode
// bookkeeping, seeding, and the checks on actions and states. CartPole, Acrobot, MountainCar,
// MountainCarContinuous and Pendulum supply only their dynamics (a free function over doubles,
// shared with the batched implementations) and reset distribution. User environments derive
// from Env directly; time limits are TimeLimit's. Design: docs/rl.md, "Environments".
//
// Seeding: reset(seed) sets the key to Key(seed); every reset draws from fold_in(key, episode),
// episode = 0, 1, ...; never seeded behaves as seeded with 0. Stepping before the first reset or
// after a terminated step throws ctrax::Error naming the environment.
// checkpoint_state(), in order:
//   [0, 1]  the key's words (Key(seed) of the last seeded reset; Key(0) before any)
//   [2]     episodes drawn from that key so far
//   [3, 4]  the current episode's key (fold_in(key, episode); Acrobot's torque noise uses it)
//   [5]     steps taken in the current episode
//   [6]     running: whether step() may be called (0 after a terminated step)
//   [7]     ever reset: whether an episode was ever started (only the error message uses it)
//   [8...]  state(), then anything else the dynamics keep (MountainCarContinuous: 1 when the
//           state holds float32 values, else 0)
#pragma once

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "../env.h"

namespace ctrax {

class ClassicControlEnv : public Env {
 public:
  std::string name() const override { return name_; }
  const Space& observation_space() const override { return observation_space_; }
  const Space& action_space() const override { return action_space_; }

  Tensor reset(std::optional<uint64_t> seed = std::nullopt) final;
  StepResult step(const Tensor& action) final;
  std::vector<double> state() const final { return state_values(); }
  void set_state(const std::vector<double>& state) final;
  std::vector<double> checkpoint_state() const final;
  void restore_checkpoint_state(const std::vector<double>& state) final;

 protected:
  ClassicControlEnv(std::string name, Space observation_space, Space action_space, size_t state_size);

  // Draw the initial state of an episode from `key`.
  virtual void reset_state(Key key) = 0;
  // One step from the current state; the action is already validated as far as the base can
  // (see discrete_action and box_action below, which the implementations call).
  virtual StepResult step_state(const Tensor& action) = 0;
  virtual std::vector<double> state_values() const = 0;
  // Called with a state of the right length and finite values.
  virtual void assign_state(const std::vector<double>& state) = 0;
  // The environment's own part of a checkpoint (entries 8... above): by default state_values(),
  // restored by assign_state. An environment whose dynamics keep more overrides both;
  // restore_checkpoint_values gets as many finite values as checkpoint_values() returns and
  // must check them before changing anything.
  virtual std::vector<double> checkpoint_values() const { return state_values(); }
  virtual void restore_checkpoint_values(const std::vector<double>& values) { assign_state(values); }

  // The index of a Discrete(n) action: an int32 or int64 tensor with one element (rank 0 or
  // one element of any rank), in [0, n). Anything else throws ctrax::Error naming the env.
  int64_t discrete_action(const Tensor& action) const;
  // The value of a Box action of shape [1]: a float32 or float64 tensor of that shape, finite.
  // Rounded to float32, the action space's dtype, which is what Gymnasium computes with.
  // Values outside the bounds are allowed: the dynamics clip them as Gymnasium's do.
  float box_action(const Tensor& action) const;

  // The key for randomness within a step (e.g. Acrobot's torque noise): fold_in(episode key,
  // step number), independent of the reset draws, which sample from the episode key itself.
  Key step_key() const { return fold_in(episode_key_, steps_in_episode_); }

 private:
  std::string name_;
  Space observation_space_, action_space_;
  size_t state_size_;
  Key key_;
  uint64_t episodes_ = 0;
  Key episode_key_;
  uint64_t steps_in_episode_ = 0;
  // Whether step() may be called: after reset or set_state, until a terminated step.
  bool running_ = false;
  bool ever_reset_ = false;  // whether an episode was ever started (for the error message)
};

// NumPy's float64 -> float32 cast: round to nearest, and beyond float32's range (plus half an
// ulp) infinity, where a plain static_cast would be undefined behaviour.
inline float float32_of(double v) {
  constexpr double kOverflow = 3.4028235677973366e38;
  constexpr float kInf = std::numeric_limits<float>::infinity();
  return !(std::abs(v) >= kOverflow) ? static_cast<float>(v) : (v > 0 ? kInf : -kInf);
}
// A finite action as the float32 the dynamics take. Rounding a finite double beyond float32's
// range would be undefined behaviour; such an action is far outside any bound and is clipped by
// the dynamics anyway, so it is clamped to the largest float first.
inline float finite_to_float32(double value) {
  constexpr double kMax = 3.4028234663852886e38;
  return static_cast<float>(value > kMax ? kMax : value < -kMax ? -kMax : value);
}
// A float32 observation tensor of shape [values.size()] (float32_of of each value).
Tensor float32_observation(std::initializer_list<double> values);
// Box(low, high) of float32 bounds (rounded from the doubles given, as Gymnasium's
// np.array(..., dtype=np.float32)); the symmetric one has low = -high.
Space float32_box(std::initializer_list<double> low, std::initializer_list<double> high);
Space symmetric_float32_box(std::initializer_list<double> high);

}  // namespace ctrax
