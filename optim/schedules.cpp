// Learning-rate schedules (see schedules.h).
#include "schedules.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string_view>
#include <vector>

#include "../base/error.h"

namespace ctrax {

namespace {

enum class Factor { constant, linear_warmup, rsqrt_decay, rsqrt_normalized_decay, decay_every, cosine_decay, two_constants };

struct FactorName {
  std::string_view name;
  Factor factor;
};

// In the order Trax's lr_schedules.py documents them; the error for an unknown name lists these.
constexpr FactorName kFactors[] = {
    {"constant", Factor::constant},
    {"linear_warmup", Factor::linear_warmup},
    {"rsqrt_decay", Factor::rsqrt_decay},
    {"rsqrt_normalized_decay", Factor::rsqrt_normalized_decay},
    {"decay_every", Factor::decay_every},
    {"cosine_decay", Factor::cosine_decay},
    {"two_constants", Factor::two_constants},
};

std::string known_factors() {
  std::string out;
  for (const FactorName& f : kFactors) {
    if (!out.empty()) out += ", ";
    out += f.name;
  }
  return out;
}

std::string_view trim(std::string_view s) {
  const auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; };
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// Trax: factors = [n.strip() for n in factors.split('*')]. An empty piece ("a * * b", a trailing
// '*') is a typo Trax would report as the unknown factor ''; here it gets its own message.
std::vector<Factor> parse_factors(const std::string& factors) {
  CTRAX_REQUIRE(!trim(factors).empty(),
                "multifactor_schedule: factors must name at least one factor joined by '*' (known: ", known_factors(),
                "), got an empty string");
  std::vector<Factor> out;
  std::string_view rest(factors);
  for (;;) {
    const size_t star = rest.find('*');
    const std::string_view piece = trim(rest.substr(0, star));
    CTRAX_REQUIRE(!piece.empty(), "multifactor_schedule: factors \"", factors,
                  "\" has an empty factor between '*' separators (or at either end)");
    const auto* it = std::find_if(std::begin(kFactors), std::end(kFactors),
                                  [&](const FactorName& f) { return f.name == piece; });
    CTRAX_REQUIRE(it != std::end(kFactors), "multifactor_schedule: unknown factor \"", piece, "\" in factors \"",
                  factors, "\"; known factors: ", known_factors());
    out.push_back(it->factor);
    if (star == std::string_view::npos) break;
    rest.remove_prefix(star + 1);
  }
  return out;
}

void require_rate(const char* function, const char* argument, double value) {
  CTRAX_REQUIRE(std::isfinite(value) && value >= 0.0, function, ": ", argument,
                " must be a finite number >= 0, got ", value);
}

void require_step(const char* function, int64_t step) {
  CTRAX_REQUIRE(step >= 0, function, ": the step must be >= 0 (steps count from 0), got ", step);
}

bool uses(const std::vector<Factor>& factors, Factor f) {
  return std::find(factors.begin(), factors.end(), f) != factors.end();
}

}  // namespace

Schedule constant_schedule(double value) {
  require_rate("constant_schedule", "value", value);
  return [value](int64_t step) {
    require_step("constant_schedule", step);
    return value;
  };
}

Schedule multifactor_schedule(const MultifactorOptions& options) {
  const std::vector<Factor> factors = parse_factors(options.factors);
  const char* fn = "multifactor_schedule";
  // The float options are validated whatever the factors: a negative or non-finite one is a
  // mistake even where unused, and the defaults all pass.
  require_rate(fn, "constant", options.constant);
  require_rate(fn, "decay_factor", options.decay_factor);
  require_rate(fn, "second_constant", options.second_constant);
  require_rate(fn, "minimum", options.minimum);
  // The integer options only matter to the factors that read them.
  if (uses(factors, Factor::linear_warmup))
    CTRAX_REQUIRE(options.warmup_steps >= 1, fn, ": linear_warmup divides by warmup_steps, which must be >= 1, got ",
                  options.warmup_steps, " (drop linear_warmup from the factors for no warm-up)");
  if (uses(factors, Factor::rsqrt_decay))
    CTRAX_REQUIRE(options.warmup_steps >= 1, fn,
                  ": rsqrt_decay is 1/sqrt(max(step, warmup_steps)), infinite at step 0 unless warmup_steps >= 1; got ",
                  options.warmup_steps);
  if (uses(factors, Factor::rsqrt_normalized_decay))
    CTRAX_REQUIRE(options.warmup_steps >= 1, fn,
                  ": rsqrt_normalized_decay is sqrt(warmup_steps)/sqrt(max(step, warmup_steps)), 0/0 at step 0 unless "
                  "warmup_steps >= 1; got ",
                  options.warmup_steps);
  if (uses(factors, Factor::cosine_decay)) {
    CTRAX_REQUIRE(options.warmup_steps >= 0, fn, ": cosine_decay starts its cycle after warmup_steps, which must be >= 0, got ",
                  options.warmup_steps);
    CTRAX_REQUIRE(options.steps_per_cycle >= 1, fn, ": cosine_decay needs steps_per_cycle >= 1, got ",
                  options.steps_per_cycle);
  }
  if (uses(factors, Factor::decay_every))
    CTRAX_REQUIRE(options.steps_per_decay >= 1, fn, ": decay_every needs steps_per_decay >= 1, got ",
                  options.steps_per_decay);
  if (uses(factors, Factor::two_constants))
    CTRAX_REQUIRE(options.second_constant_step >= 0, fn, ": two_constants needs second_constant_step >= 0, got ",
                  options.second_constant_step);

  return [factors, o = options](int64_t step) {
    require_step("multifactor_schedule", step);
    const auto s = static_cast<double>(step);
    const auto warmup = static_cast<double>(o.warmup_steps);
    double ret = 1.0;
    for (const Factor f : factors) {
      switch (f) {
        case Factor::constant: ret *= o.constant; break;
        case Factor::linear_warmup: ret *= std::min(1.0, s / warmup); break;
        case Factor::rsqrt_decay: ret /= std::sqrt(std::max(s, warmup)); break;
        case Factor::rsqrt_normalized_decay: ret *= std::sqrt(warmup) / std::sqrt(std::max(s, warmup)); break;
        // Trax: decay_factor ** (step // steps_per_decay), an integer exponent.
        case Factor::decay_every:
          ret *= std::pow(o.decay_factor, static_cast<double>(step / o.steps_per_decay));
          break;
        // Half a cosine period per cycle, restarting at 1 each cycle (progress mod 1); flat at 1
        // during the warm-up (progress clamped at 0).
        case Factor::cosine_decay: {
          const double progress = std::max(0.0, (s - warmup) / static_cast<double>(o.steps_per_cycle));
          ret *= std::max(0.0, 0.5 * (1.0 + std::cos(std::numbers::pi * std::fmod(progress, 1.0))));
          break;
        }
        case Factor::two_constants: ret *= step < o.second_constant_step ? o.constant : o.second_constant; break;
      }
    }
    return std::max(ret, o.minimum);
  };
}

Schedule linear_annealing_schedule(double initial, int64_t total_steps) {
  require_rate("linear_annealing_schedule", "initial", initial);
  CTRAX_REQUIRE(total_steps >= 1, "linear_annealing_schedule: total_steps must be >= 1, got ", total_steps);
  return [initial, total_steps](int64_t step) {
    require_step("linear_annealing_schedule", step);
    return initial * std::max(0.0, 1.0 - static_cast<double>(step) / static_cast<double>(total_steps));
  };
}

LearningRate::LearningRate(double value) : value_(value) {
  CTRAX_REQUIRE(std::isfinite(value) && value >= 0, "learning_rate must be >= 0 and finite, got ", value);
}

LearningRate::LearningRate(Schedule schedule) : schedule_(std::move(schedule)) {
  CTRAX_REQUIRE(schedule_ != nullptr, "learning_rate: the schedule is empty");
}

double LearningRate::at(int64_t step) const {
  if (!schedule_) return value_;
  const double rate = schedule_(step);
  CTRAX_REQUIRE(std::isfinite(rate) && rate >= 0, "learning_rate: the schedule gave ", rate, " at step ", step,
                "; it must be finite and >= 0");
  return rate;
}

}  // namespace ctrax
