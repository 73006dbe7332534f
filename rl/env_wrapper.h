// EnvWrapper: an Env that holds another and forwards every call to it.
//
// What it is for: the base of wrappers (TimeLimit in rl/time_limit.h, and those in
// rl/wrappers.h): derive, override the calls the wrapper changes, and leave the rest
// forwarded. inner() is the wrapped environment, unwrapped() the innermost one (Gymnasium's
// env.unwrapped), e.g. to reach a built-in environment's params through its wrappers.
// What it is not for: vector environments (rl/vector_env.h).
#pragma once

#include <utility>

#include "../kernels/check.h"
#include "env.h"

namespace ctrax {

class EnvWrapper : public Env {
 public:
  explicit EnvWrapper(EnvPtr env) : env_(std::move(env)) {
    CTRAX_REQUIRE(env_ != nullptr, "EnvWrapper: the wrapped environment is null");
  }

  std::string name() const override { return env_->name(); }
  const Space& observation_space() const override { return env_->observation_space(); }
  const Space& action_space() const override { return env_->action_space(); }
  Tensor reset(std::optional<uint64_t> seed = std::nullopt) override { return env_->reset(seed); }
  StepResult step(const Tensor& action) override { return env_->step(action); }
  std::vector<double> state() const override { return env_->state(); }
  void set_state(const std::vector<double>& state) override { env_->set_state(state); }
  Tensor observation() const override { return env_->observation(); }

  Env& inner() { return *env_; }
  const Env& inner() const { return *env_; }
  Env& unwrapped() {
    Env* env = env_.get();
    while (auto* wrapper = dynamic_cast<EnvWrapper*>(env)) env = wrapper->env_.get();
    return *env;
  }
  const Env& unwrapped() const { return const_cast<EnvWrapper*>(this)->unwrapped(); }

 private:
  EnvPtr env_;
};

}  // namespace ctrax
