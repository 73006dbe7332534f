// Learning rates: one value, or a schedule (a function of the training step).
//
// What it is for: an optimizer's learning rate (optim/optimizer.h), the one place a rate is
// set: `AdamOptions{.learning_rate = 1e-2}` or `AdamOptions{.learning_rate =
// multifactor_schedule()}`; the trainers read each step's rate from their optimizer. A
// schedule is a plain std::function<double(int64_t step)>, so any callable works; these are the
// ones Trax ships (supervised/lr_schedules.py) and the linear annealing PPO configurations use.
// Steps count from 0, as Trax's Trainer counts them: with a linear warm-up the first step's
// learning rate is 0.
// What it is not for: rates that react to the loss (no reduce-on-plateau): a schedule sees
// only the step.
//
// Every factory validates its arguments and throws ctrax::Error naming the argument, the rule
// and the value.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>

namespace ctrax {

using Schedule = std::function<double(int64_t step)>;

// The same value at every step (>= 0).
Schedule constant_schedule(double value);

// Trax's multifactor: the product of the factors named in `factors`, joined by '*':
//   constant                value of `constant`
//   linear_warmup           min(1, step / warmup_steps)
//   rsqrt_decay             1 / sqrt(max(step, warmup_steps))
//   rsqrt_normalized_decay  sqrt(warmup_steps) / sqrt(max(step, warmup_steps))
//   decay_every             decay_factor ^ floor(step / steps_per_decay)
//   cosine_decay            max(0, (1 + cos(pi * (p mod 1))) / 2),
//                           p = max(0, (step - warmup_steps) / steps_per_cycle)
//   two_constants           constant before second_constant_step, second_constant from it on
// and then max(result, minimum). Unknown factor names throw, listing the known ones.
struct MultifactorOptions {
  std::string factors = "constant * linear_warmup * rsqrt_decay";
  double constant = 0.1;
  int64_t warmup_steps = 400;
  double decay_factor = 0.5;
  int64_t steps_per_decay = 20000;
  int64_t steps_per_cycle = 100000;
  double second_constant = 0.01;
  int64_t second_constant_step = 1000;
  double minimum = 0.0;
};
Schedule multifactor_schedule(const MultifactorOptions& options = {});

// initial * max(0, 1 - step / total_steps): linear annealing to zero over total_steps (> 0),
// then zero.
Schedule linear_annealing_schedule(double initial, int64_t total_steps);

// A learning rate: a constant (finite, >= 0; else ctrax::Error) or a schedule. Converts
// implicitly from both, so options read `.learning_rate = 1e-3` or `.learning_rate = schedule`.
class LearningRate {
 public:
  LearningRate(double value);      // NOLINT(google-explicit-constructor)
  LearningRate(Schedule schedule);  // NOLINT(google-explicit-constructor); not empty
  template <typename F>
    requires(std::is_invocable_r_v<double, const F&, int64_t> && !std::is_arithmetic_v<F> &&
             !std::is_same_v<std::decay_t<F>, Schedule>)
  LearningRate(F f) : LearningRate(Schedule(std::move(f))) {}  // NOLINT(google-explicit-constructor)

  // The rate of step `step` (>= 0); throws ctrax::Error when a schedule gives a value that is
  // not finite and >= 0, naming the step.
  double at(int64_t step) const;
  // Whether it is one value for every step, and that value (0 for a schedule).
  bool is_constant() const { return !schedule_; }
  double constant() const { return value_; }

 private:
  Schedule schedule_;
  double value_ = 0;
};

}  // namespace ctrax
