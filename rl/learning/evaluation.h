// Statistics of evaluation episodes: what a confirmation, `ctrax eval` and `ctrax report` show.
//
// What it is for: turning the returns and lengths of N whole episodes into the numbers a user
// judges a policy by (mean, std, min, median, max, a 95% confidence interval of the mean). What it
// is not for: playing the episodes (Agent::evaluate, Agent::confirm) or statistics across runs
// (tools/report.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ctrax {

struct EpisodeSummary {
  int64_t episodes = 0;
  double return_mean = 0, return_std = 0, return_min = 0, return_median = 0, return_max = 0;
  // mean -+ 1.96 std / sqrt(N): the normal approximation of the mean's 95% interval (std with
  // N - 1; the interval is the mean itself for N = 1).
  double return_ci95_low = 0, return_ci95_high = 0;
  double length_mean = 0, length_std = 0, length_min = 0, length_median = 0, length_max = 0;
};

// Throws ctrax::Error for no episodes or returns and lengths of different counts.
EpisodeSummary summarize_episodes(const std::vector<double>& returns, const std::vector<int64_t>& lengths);

// "mean 496.3 +- 8.1 over 100 episodes (95% CI 494.7 to 497.9)": mean +- std.
std::string describe(const EpisodeSummary& summary);

}  // namespace ctrax
