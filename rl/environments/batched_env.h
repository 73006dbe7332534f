// BatchedEnv<Physics>: N copies of a built-in classic-control environment stepped together over
// flat arrays, the batched implementation behind make_vector_env for the environments that have
// one (CartPole: CartPoleVectorEnv, Pendulum: PendulumVectorEnv). Physics supplies one copy's
// maths, the same functions the single environment calls (cartpole_step, pendulum_step), so copy
// i follows exactly the trajectory of that environment under a TimeLimit seeded alike (episode e
// of copy i from fold_in(Key(seed + i), e)), whatever N and the thread count. Large batches are
// split across the thread pool (kernels/parallel.h); a step allocates nothing. Other
// environments go through SyncVectorEnv. Design: docs/rl.md, "Vector environments".
//
// What a Physics provides (see CartPolePhysics and PendulumPhysics): Params, State (an array of
// doubles, the single environment's state() layout), Action (the per-copy value the maths takes),
// kKind (the checkpoint kind), kClassName, kDefaultName, kObservationSize, and the static
// functions observation_space, action_space, initial_state(params, key) (drawn as the single
// environment's reset draws it, bit for bit), read_actions (checks every row of a batch and
// converts it before any copy moves), step(params, state, cache, action) -> {reward,
// terminated} and write_observation(params, state, cache, float* row). Cache is per-copy scratch
// that write_observation may fill with values the next step needs again (Pendulum's sin th); a
// step must check that it still describes the state (set_state, a restore and the initial
// state do not refresh it), so it never changes a result. It is not part of the state.
//
// checkpoint_state() (rl/environments/vector_env.h): the kind, N, max_episode_steps, whether
// reset() was ever called (0 or 1), then per copy its state, the elapsed steps, the key's two
// words and the episodes drawn from it, then the last VectorStep (append_vector_step). Restoring
// requires the same kind, N and max_episode_steps.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "vector_env.h"

namespace ctrax {

template <class Physics>
class BatchedEnv final : public VectorEnv {
 public:
  using Params = typename Physics::Params;
  using State = typename Physics::State;
  using Action = typename Physics::Action;

  // num_envs >= 1; max_episode_steps >= 0 (0: no time limit). name as the single environment's.
  BatchedEnv(int64_t num_envs, int64_t max_episode_steps, Params params = {}, std::string name = Physics::kDefaultName);

  std::string name() const override { return name_; }
  int64_t num_envs() const override { return num_envs_; }
  const Space& single_observation_space() const override { return observation_space_; }
  const Space& single_action_space() const override { return action_space_; }
  Tensor reset(std::optional<uint64_t> seed = std::nullopt) override;
  // actions: one row per copy, as Physics::read_actions documents; every row is checked before
  // any copy moves, so a bad batch leaves every copy as it was.
  const VectorStep& step(const Tensor& actions) override;
  std::vector<double> checkpoint_state() const override;
  void restore_checkpoint_state(const std::vector<double>& state) override;

  const Params& params() const { return params_; }
  int64_t max_episode_steps() const { return max_episode_steps_; }

  // Copy i's internal state (the single environment's state() layout) and the steps taken in
  // its current episode (TimeLimit::elapsed_steps).
  std::vector<double> state(int64_t i) const;
  int64_t elapsed_steps(int64_t i) const;
  // Puts copy i into `state` as the single environment's set_state under a TimeLimit does:
  // finite values, the step count restarts at 0, and observations row i becomes its
  // observation. The copy's random stream is untouched (its next episode is drawn as it would
  // have been).
  void set_state(int64_t i, const std::vector<double>& state);

 private:
  void step_range(int64_t begin, int64_t end);
  void check_index(int64_t i, const char* what) const;
  const std::string& who() const { return who_; }

  std::string name_;
  std::string who_;  // "<name> (vector of N)", for the messages (built once: a step builds no string)
  int64_t num_envs_;
  int64_t max_episode_steps_;
  Params params_;
  Space observation_space_, action_space_;

  std::vector<State> states_;
  std::vector<typename Physics::Cache> caches_;  // per copy (see the file comment)
  std::vector<int64_t> elapsed_;    // steps in the current episode, per copy
  std::vector<Key> keys_;           // Key(seed + i)
  std::vector<uint64_t> episodes_;  // episodes drawn from keys_[i] so far
  bool ever_reset_ = false;

  VectorStep out_;
  std::vector<Action> actions_;  // the batch in progress, checked and converted (read by step_range)
  // The chunk function handed to parallel_for, made once so that a step builds no std::function.
  std::function<void(int64_t, int64_t)> step_chunk_;
};

namespace batched_env_detail {

// uniform(key, Shape{out.size()}, float64, lo, hi) exactly as tensor/random.cpp draws it,
// without the tensor (so an auto-reset allocates nothing): 64-bit draw j is words 2 (j % 2)
// (high) and 2 (j % 2) + 1 (low) of the Philox block j / 2 at counter {j / 2, 0, 0, 0}
// (purpose 0: samples); u = (top 53 bits) 2^-53; x = lo + u (hi - lo), kept in [lo, hi). The
// tests check every initial state against the single environment's bit for bit, so a change of
// the sampler's layout cannot slip by.
void uniform_f64(Key key, double lo, double hi, std::span<double> out);

}  // namespace batched_env_detail

}  // namespace ctrax
