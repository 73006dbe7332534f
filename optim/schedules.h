// Learning-rate schedules: functions of the training step.
//
// What it is for: the learning rate the trainers pass to Optimizer::update each step. A
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

}  // namespace ctrax
