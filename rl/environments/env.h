// Environments: the Gymnasium interface in C++. reset(seed) gives the first observation;
// step(action) the next observation, the reward and two flags to keep apart (Gymnasium >= 0.26):
// terminated (a terminal state: never bootstrap from it) and truncated (cut from outside, e.g. a
// time limit: the state still has a value). Both may be set at once. After either, reset()
// before stepping again: stepping a finished episode throws ctrax::Error. No info dictionaries.
//
// The built-ins (rl/environments/classic_control/, make_env) have Gymnasium's dynamics exactly,
// with ctrax keys for random numbers (same distributions, other draws). state()/set_state() are
// the physical state; checkpoint_state() is everything needed to continue bit for bit (optional:
// the defaults throw CheckpointNotSupported). To write your own, derive from Env
// (examples/custom_env.cpp). Design, checkpoints and wrappers: docs/rl.md, "Environments".
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "../../base/error.h"
#include "../../tensor/random.h"
#include "../../tensor/tensor.h"
#include "space.h"

namespace ctrax {

// What checkpoint_state() and restore_checkpoint_state() throw when an environment (or a
// vector environment, or a wrapper) cannot be checkpointed. A ctrax::Error like any other; its
// own type lets a caller that can do without the environment's state (RLTask::export_state)
// tell "not supported" apart from a real failure.
class CheckpointNotSupported : public Error {
 public:
  explicit CheckpointNotSupported(const std::string& message) : Error(message) {}
};

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
  // (Pendulum, MountainCarContinuous); ClipAction (rl/environments/wrappers.h) does it for any Env.
  virtual StepResult step(const Tensor& action) = 0;

  // The internal state as numbers (each environment documents its layout; CartPole:
  // x, x_dot, theta, theta_dot). set_state puts the environment into that state, as if an
  // episode had reached it, and throws ctrax::Error for a wrong length or a non-finite value.
  virtual std::vector<double> state() const = 0;
  virtual void set_state(const std::vector<double>& state) = 0;
  // The observation of the current state.
  virtual Tensor observation() const = 0;

  // The complete, resumable state: the physical state, key words, episode and step counters and
  // every wrapper's own state, as doubles (exact: key words are uint32, counters below 2^53).
  // restore_checkpoint_state is its exact inverse for an environment constructed the same way;
  // it checks the length and every value (finite numbers, whole counters, key words in
  // [0, 2^32), flags 0 or 1) and throws ctrax::Error naming the entry, changing nothing.
  // The defaults throw CheckpointNotSupported: "<name>: this environment does not support
  // checkpoints; implement checkpoint_state and restore_checkpoint_state (rl/environments/env.h)".
  virtual std::vector<double> checkpoint_state() const;
  virtual void restore_checkpoint_state(const std::vector<double>& state);
};

using EnvPtr = std::unique_ptr<Env>;

// ---- Helpers for checkpoint_state implementations -----------------------------------------
// A key as two numbers (its words) at the end of `state`.
void append_key(std::vector<double>& state, Key key);

// Reads a checkpoint_state() vector front to back with the checks restore_checkpoint_state
// owes its caller. Every failure throws ctrax::Error "<who>: restore_checkpoint_state: ..."
// naming the entry, what it holds and what was expected; read everything (and finish())
// before changing anything, so that a bad state changes nothing.
class CheckpointStateReader {
 public:
  // `state` must outlive the reader (it is read in place).
  CheckpointStateReader(const std::vector<double>& state, std::string who);
  CheckpointStateReader(std::vector<double>&& state, std::string who) = delete;

  // A finite number.
  double number(const std::string& what);
  // Any double, NaN and infinities included (e.g. an observation row held as it is).
  double value(const std::string& what);
  // A whole number in [0, max] (max <= 2^53: doubles hold every integer up to there).
  uint64_t count(const std::string& what, uint64_t max = uint64_t{1} << 53);
  // 0 or 1.
  bool flag(const std::string& what);
  // Two whole numbers in [0, 2^32): a key's words (append_key).
  Key key(const std::string& what);
  // The next n values, each finite (or, with finite = false, anything).
  std::vector<double> numbers(size_t n, const std::string& what, bool finite = true);
  // Everything not read yet, unchecked (for a wrapper to hand its inner environment).
  std::vector<double> rest();
  size_t remaining() const { return state_.size() - next_; }
  // Throws unless every value has been read.
  void finish() const;
  const std::string& who() const { return who_; }

 private:
  void need(size_t n, const std::string& what) const;

  const std::vector<double>& state_;
  std::string who_;
  size_t next_ = 0;
};

}  // namespace ctrax
