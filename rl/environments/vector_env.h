// Vector environments: N copies of an environment stepped together, so that collection
// (rl/learning/task.h) runs the policy once per step over all of them: observations come as one
// [N, ...] tensor and actions go as one. Synchronous only. Design: docs/rl.md, "Vector
// environments".
//
// Auto-reset (Gymnasium's "same-step" mode): a copy that terminates or is truncated is reset in
// the same step; observations[i] is then the new episode's first observation, final_observations[i]
// the one it ended in, and the reward and flags are the ending step's. Seeds: reset(seed) seeds
// copy i with seed + i; the first reset without a seed counts as seed 0, later ones continue each
// copy's stream. A VectorStep's tensors are owned by the VectorEnv and overwritten by the next
// step (clone what you keep). Stepping before the first reset() throws ctrax::Error.
// Checkpoints: a state begins with its kind (1: SyncVectorEnv, 2: CartPoleVectorEnv, 3:
// PendulumVectorEnv) and N, then
// what each class documents; restoring checks everything and changes nothing when it throws. The
// defaults throw CheckpointNotSupported (rl/environments/env.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "env.h"

namespace ctrax {

struct VectorStep {
  Tensor observations;        // [N, ...observation shape], observation dtype
  Tensor rewards;             // [N] float64
  Tensor terminated;          // [N] bool
  Tensor truncated;           // [N] bool
  Tensor final_observations;  // [N, ...]; rows i with terminated[i] or truncated[i] are meaningful
  // After a reset: no rewards, no episode ended, no final observations.
  void clear_results() {
    rewards.fill_(0.0);
    terminated.fill_(0.0);
    truncated.fill_(0.0);
    final_observations.fill_(0.0);
  }
};

class VectorEnv {
 public:
  virtual ~VectorEnv() = default;
  virtual std::string name() const = 0;
  virtual int64_t num_envs() const = 0;
  // The spaces of one copy.
  virtual const Space& single_observation_space() const = 0;
  virtual const Space& single_action_space() const = 0;
  // Resets every copy; returns the [N, ...] observations.
  virtual Tensor reset(std::optional<uint64_t> seed = std::nullopt) = 0;
  // actions: [N, ...action shape]; each row must be in the action space.
  virtual const VectorStep& step(const Tensor& actions) = 0;

  // The complete, resumable state (see the top of this file). The defaults throw
  // CheckpointNotSupported: "<name>: this vector environment does not support checkpoints;
  // implement checkpoint_state and restore_checkpoint_state (rl/environments/vector_env.h)".
  virtual std::vector<double> checkpoint_state() const;
  virtual void restore_checkpoint_state(const std::vector<double>& state);
};

using VectorEnvPtr = std::unique_ptr<VectorEnv>;

// Any environment, N copies made by `make`, stepped one after the other in this thread.
// All copies must have the same spaces (ctrax::Error otherwise). Discrete and MultiDiscrete
// action rows are checked against the space before any copy steps; Box rows go to each copy
// as they are (environments differ in what they accept outside the bounds), so a row that
// copy k rejects throws after copies 0..k-1 have stepped: reset() before stepping again.
//
// checkpoint_state(): 1 (the kind), N, whether reset() was ever called (0 or 1), E = elements
// of one observation, then the last VectorStep: observations (N * E values), final_observations
// (N * E), rewards (N), terminated (N, 0 or 1), truncated (N), then for each copy the length of
// its checkpoint_state and that state (Env::checkpoint_state: every wrapper and the environment
// must support checkpoints). Observation values must be exact in the observation dtype.
class SyncVectorEnv final : public VectorEnv {
 public:
  SyncVectorEnv(const std::function<EnvPtr()>& make, int64_t num_envs);
  std::string name() const override;
  int64_t num_envs() const override { return static_cast<int64_t>(envs_.size()); }
  const Space& single_observation_space() const override { return envs_.front()->observation_space(); }
  const Space& single_action_space() const override { return envs_.front()->action_space(); }
  Tensor reset(std::optional<uint64_t> seed = std::nullopt) override;
  const VectorStep& step(const Tensor& actions) override;
  std::vector<double> checkpoint_state() const override;
  void restore_checkpoint_state(const std::vector<double>& state) override;

 private:
  std::vector<EnvPtr> envs_;
  VectorStep out_;
  bool ever_reset_ = false;
};

// ---- Helpers for checkpoint_state implementations ------------------------------------------
// The tensors of `step` as numbers, in the order observations, final_observations, rewards,
// terminated, truncated (each row-major; flags 0 or 1).
void append_vector_step(std::vector<double>& state, const VectorStep& step);
// Reads what append_vector_step wrote into new tensors of the shapes and dtypes of `like`,
// checking every value (flags 0 or 1; observations exactly representable in their dtype).
VectorStep read_vector_step(CheckpointStateReader& in, const VectorStep& like);
// " (a SyncVectorEnv)" and so on for a known checkpoint kind, "" otherwise: for the messages
// that refuse a state of another kind.
std::string vector_env_kind_name(uint64_t kind);
// Copies `from` into the tensors of `to` (same shapes and dtypes), keeping `to`'s storage.
void assign_vector_step(VectorStep& to, const VectorStep& from);

}  // namespace ctrax
