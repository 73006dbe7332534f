// Environments: the Gymnasium interface in C++.
//
// What it is for: anything an agent acts in. reset(seed) gives the first observation;
// step(action) gives the next observation, the reward, and two flags that downstream code
// must keep apart (Gymnasium's convention since 0.26):
//   terminated  the episode reached a terminal state of the task (the pole fell, the car
//               reached the flag); the value of what follows is 0: never bootstrap from it;
//   truncated   the episode was cut short from outside (a time limit); the state still has a
//               value, so returns and advantages bootstrap from it.
// Both may be set at once (a terminal state reached on the last allowed step counts as
// terminated). After either, the caller must reset() before stepping again; stepping
// a finished episode throws ctrax::Error.
//
// What it is not for: rendering to a window (issue-tracked separately), or Gymnasium's info
// dictionaries (the few facts ctrax needs have fields instead).
//
// Built-in environments (rl/envs/, make_env below) have the dynamics of Gymnasium's exactly:
// the same constants, integrator, observation, reward, termination, truncation and reset
// distribution, checked step by step against recordings of Gymnasium (tests/fixtures/). Their
// random numbers come from ctrax keys, so a seed gives other (equally distributed) initial
// states than in Gymnasium. Each can be put into a given internal state (set_state), which is
// how the tests replay Gymnasium's recordings.
//
// Checkpoints: state()/set_state() are the physical state only (set_state starts stepping from
// it as if an episode had reached it). checkpoint_state() is everything a run needs to go on
// exactly as if it had never stopped: the physical state, the generator's key words, the
// episode and step counters, whether an episode is running, and each wrapper's own state
// (time-limit counts, running statistics). restore_checkpoint_state() puts a freshly made
// environment of the same construction into that state; from there, the same calls give the
// same observations, rewards and flags bit for bit, episode boundaries and resets included.
// The numbers are doubles: key words (uint32) and counters (below 2^53) are exact in them.
// Each implementation documents its layout. The two are optional: the defaults throw
// CheckpointNotSupported, which RLTask (rl/task.h) answers by starting fresh episodes.
//
// Writing your own: derive from Env, give the two spaces, and implement reset, step, state,
// set_state and observation, and for resumable runs checkpoint_state and
// restore_checkpoint_state (examples/custom_env.cpp). TimeLimit (rl/time_limit.h) truncates
// episodes; the wrappers of rl/wrappers.h add normalisation, action clipping and rescaling and
// episode statistics to any Env. For many copies stepped at once see rl/vector_env.h.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "../base/error.h"
#include "../tensor/random.h"
#include "../tensor/tensor.h"
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
  // (Pendulum, MountainCarContinuous); ClipAction (rl/wrappers.h) does it for any Env.
  virtual StepResult step(const Tensor& action) = 0;

  // The internal state as numbers (each environment documents its layout; CartPole:
  // x, x_dot, theta, theta_dot). set_state puts the environment into that state, as if an
  // episode had reached it, and throws ctrax::Error for a wrong length or a non-finite value.
  virtual std::vector<double> state() const = 0;
  virtual void set_state(const std::vector<double>& state) = 0;
  // The observation of the current state.
  virtual Tensor observation() const = 0;

  // The complete, resumable state (see the top of this file). restore_checkpoint_state is its
  // exact inverse for an environment constructed the same way; it checks the length and every
  // value (finite numbers, whole counters, key words in [0, 2^32), flags 0 or 1) and throws
  // ctrax::Error naming the environment and the entry, changing nothing, when one is wrong.
  // The defaults throw CheckpointNotSupported: "<name>: this environment does not support
  // checkpoints; implement checkpoint_state and restore_checkpoint_state (rl/env.h)".
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
