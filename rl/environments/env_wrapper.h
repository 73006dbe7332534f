// EnvWrapper: an Env that holds another and forwards every call to it.
//
// What it is for: the base of wrappers (TimeLimit in rl/environments/time_limit.h, and those in
// rl/environments/wrappers.h): derive, override the calls the wrapper changes, and leave the rest
// forwarded. inner() is the wrapped environment, unwrapped() the innermost one (Gymnasium's
// env.unwrapped), e.g. to reach a built-in environment's params through its wrappers.
// What it is not for: vector environments (rl/environments/vector_env.h).
//
// Checkpoints (rl/environments/env.h): forwarding checkpoint_state to the inner environment is right only
// for a wrapper that keeps nothing of its own between calls (ClipAction, RescaleAction: their
// members are fixed at construction). Such a wrapper says so by constructing the base with
// EnvWrapper::Stateless{}. Every other wrapper must override checkpoint_state and
// restore_checkpoint_state (its own values first, then the inner environment's; TimeLimit and
// rl/environments/wrappers.h show how); if it does not, both throw CheckpointNotSupported rather than
// silently drop its state.
#pragma once

#include <utility>

#include "../../base/error.h"
#include "env.h"

namespace ctrax {

class EnvWrapper : public Env {
 public:
  // The tag of wrappers without state of their own (see the top of this file).
  struct Stateless {};

  explicit EnvWrapper(EnvPtr env) : env_(std::move(env)) {
    CTRAX_REQUIRE(env_ != nullptr, "EnvWrapper: the wrapped environment is null");
  }
  EnvWrapper(EnvPtr env, Stateless) : EnvWrapper(std::move(env)) { stateless_ = true; }

  std::string name() const override { return env_->name(); }
  const Space& observation_space() const override { return env_->observation_space(); }
  const Space& action_space() const override { return env_->action_space(); }
  Tensor reset(std::optional<uint64_t> seed = std::nullopt) override { return env_->reset(seed); }
  StepResult step(const Tensor& action) override { return env_->step(action); }
  std::vector<double> state() const override { return env_->state(); }
  void set_state(const std::vector<double>& state) override { env_->set_state(state); }
  Tensor observation() const override { return env_->observation(); }
  // The inner environment's for a Stateless wrapper; else CheckpointNotSupported.
  std::vector<double> checkpoint_state() const override {
    if (!stateless_) unsupported();
    return env_->checkpoint_state();
  }
  void restore_checkpoint_state(const std::vector<double>& state) override {
    if (!stateless_) unsupported();
    env_->restore_checkpoint_state(state);
  }

  Env& inner() { return *env_; }
  const Env& inner() const { return *env_; }
  Env& unwrapped() {
    Env* env = env_.get();
    while (auto* wrapper = dynamic_cast<EnvWrapper*>(env)) env = wrapper->env_.get();
    return *env;
  }
  const Env& unwrapped() const { return const_cast<EnvWrapper*>(this)->unwrapped(); }

 private:
  [[noreturn]] void unsupported() const {
    throw CheckpointNotSupported(detail::cat(
        name(), ": a wrapper around this environment does not support checkpoints: it may keep state of its own; "
                "override checkpoint_state and restore_checkpoint_state, or construct its EnvWrapper base with "
                "EnvWrapper::Stateless{} if it keeps none (rl/environments/env_wrapper.h)"));
  }

  EnvPtr env_;
  bool stateless_ = false;
};

}  // namespace ctrax
