// Rollouts as CSV (see rollout.h).
#include "rollout.h"

#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>

#include "../../base/error.h"

namespace ctrax {

namespace {

std::string format_number(double value, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*g", digits, value);
  return buffer;
}

void write_observation(std::ostream& out, const Tensor& observation) {
  for (double v : observation.to_vector<double>()) out << ',' << format_number(v, 9);
}

}  // namespace

std::vector<double> parse_numbers(const std::string& text, const std::string& what) {
  std::vector<double> numbers;
  size_t i = 0;
  const auto is_separator = [](char c) { return c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (i < text.size()) {
    while (i < text.size() && is_separator(text[i])) ++i;
    if (i == text.size()) break;
    size_t end = i;
    while (end < text.size() && !is_separator(text[end])) ++end;
    const std::string token = text.substr(i, end - i);
    char* parsed_end = nullptr;
    errno = 0;
    const double value = std::strtod(token.c_str(), &parsed_end);
    CTRAX_REQUIRE(parsed_end == token.c_str() + token.size() && errno != ERANGE && std::isfinite(value), what,
                  ": \"", token, "\" (item ", numbers.size(), ") is not a finite number");
    numbers.push_back(value);
    i = end;
  }
  return numbers;
}

std::vector<Tensor> actions_from_numbers(const Space& space, const std::vector<double>& numbers) {
  const int64_t per_action = space.shape().numel();
  CTRAX_REQUIRE(per_action >= 1, "actions: the action space ", space, " has no elements");
  CTRAX_REQUIRE(static_cast<int64_t>(numbers.size()) % per_action == 0, "actions: got ", numbers.size(),
                " numbers, which is not a multiple of ", per_action, " (the size of one action of ", space, ")");
  const bool discrete = space.kind() != Space::Kind::box;
  std::vector<Tensor> actions;
  for (size_t start = 0; start < numbers.size(); start += static_cast<size_t>(per_action)) {
    const size_t index = actions.size();
    std::vector<double> values(numbers.begin() + static_cast<std::ptrdiff_t>(start),
                               numbers.begin() + static_cast<std::ptrdiff_t>(start) + per_action);
    if (discrete) {
      for (double v : values)
        CTRAX_REQUIRE(v == std::floor(v) && std::abs(v) < 9.0e15, "actions: action ", index, " has ", v,
                      " where the space ", space, " needs an integer");
    }
    Tensor action = from_vector(values, space.shape()).to(space.dtype());
    if (discrete)
      CTRAX_REQUIRE(space.contains(action), "actions: action ", index, " (", format_number(values.front(), 17),
                    values.size() > 1 ? ", ..." : "", ") is not in the space ", space);
    actions.push_back(action);
  }
  return actions;
}

RolloutSummary write_rollout_csv(Env& env, const RolloutStart& start, const std::vector<Tensor>& actions,
                                 std::ostream& out) {
  Tensor observation = env.reset(start.seed);
  if (start.state) {
    env.set_state(*start.state);
    observation = env.observation();
  }
  out << "step";
  for (int64_t i = 0; i < observation.numel(); ++i) out << ",obs_" << i;
  out << ",reward,terminated,truncated\n";
  out << 0;
  write_observation(out, observation);
  out << ",,,\n";

  RolloutSummary summary;
  for (const Tensor& action : actions) {
    const StepResult r = env.step(action);
    ++summary.steps;
    out << summary.steps;
    write_observation(out, r.observation);
    out << ',' << format_number(r.reward, 17) << ',' << (r.terminated ? 1 : 0) << ',' << (r.truncated ? 1 : 0)
        << '\n';
    summary.terminated = r.terminated;
    summary.truncated = r.truncated;
    if (r.terminated || r.truncated) break;
  }
  return summary;
}

}  // namespace ctrax
