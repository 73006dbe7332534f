// CartPoleVectorEnv: N CartPoles stepped together, the batched implementation behind
// make_vector_env("CartPole-v1", N) (and -v0), for collecting at tens of millions of steps per
// second. One loop over flat arrays calls cartpole_step, the function CartPoleEnv calls, so copy
// i follows exactly the trajectory of a CartPoleEnv under a TimeLimit seeded alike (episode e of
// copy i from fold_in(Key(seed + i), e)), whatever N and the thread count. Large batches are split
// across the thread pool (kernels/parallel.h); a step allocates nothing. Other environments go
// through SyncVectorEnv. Design: docs/rl.md, "Vector environments".
//
// checkpoint_state() (rl/environments/vector_env.h): 2 (the kind), N, max_episode_steps, whether
// reset() was ever called (0 or 1), then per copy x, x_dot, theta, theta_dot, the elapsed steps,
// the key's two words and the episodes drawn from it, then the last VectorStep
// (append_vector_step). Restoring requires the same N and max_episode_steps.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "classic_control/cartpole.h"
#include "vector_env.h"

namespace ctrax {

class CartPoleVectorEnv final : public VectorEnv {
 public:
  // num_envs >= 1; max_episode_steps >= 0 (0: no time limit). name as CartPoleEnv's.
  CartPoleVectorEnv(int64_t num_envs, int64_t max_episode_steps = 500, CartPoleParams params = {},
                    std::string name = "CartPole-v1");

  std::string name() const override { return name_; }
  int64_t num_envs() const override { return num_envs_; }
  const Space& single_observation_space() const override { return observation_space_; }
  const Space& single_action_space() const override { return action_space_; }
  Tensor reset(std::optional<uint64_t> seed = std::nullopt) override;
  // actions: shape [N], int32 or int64, every value 0 or 1 (checked before any copy moves,
  // so a bad batch leaves every copy as it was).
  const VectorStep& step(const Tensor& actions) override;
  std::vector<double> checkpoint_state() const override;
  void restore_checkpoint_state(const std::vector<double>& state) override;

  const CartPoleParams& params() const { return params_; }
  int64_t max_episode_steps() const { return max_episode_steps_; }

  // Copy i's internal state (x, x_dot, theta, theta_dot, as CartPoleEnv::state) and the steps
  // taken in its current episode (TimeLimit::elapsed_steps).
  std::vector<double> state(int64_t i) const;
  int64_t elapsed_steps(int64_t i) const;
  // Puts copy i into `state` as CartPoleEnv::set_state under a TimeLimit does: four finite
  // values, the step count restarts at 0, and observations row i becomes its observation.
  // The copy's random stream is untouched (its next episode is drawn as it would have been).
  void set_state(int64_t i, const std::vector<double>& state);

 private:
  void step_range(int64_t begin, int64_t end);
  void check_index(int64_t i, const char* what) const;

  std::string name_;
  int64_t num_envs_;
  int64_t max_episode_steps_;
  CartPoleParams params_;
  Space observation_space_, action_space_;

  std::vector<std::array<double, 4>> states_;
  std::vector<int64_t> elapsed_;    // steps in the current episode, per copy
  std::vector<Key> keys_;           // Key(seed + i)
  std::vector<uint64_t> episodes_;  // episodes drawn from keys_[i] so far
  bool ever_reset_ = false;

  VectorStep out_;
  // The action batch of the step in progress (read by step_range) and the chunk function
  // handed to parallel_for, made once so that a step builds no std::function.
  const void* actions_ = nullptr;
  int64_t action_stride_ = 1;
  bool actions_int32_ = false;
  std::function<void(int64_t, int64_t)> step_chunk_;
};

}  // namespace ctrax
