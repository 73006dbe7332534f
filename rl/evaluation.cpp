// Episode statistics: see evaluation.h.
#include "evaluation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "../kernels/check.h"

namespace ctrax {

namespace {

// The median of a sorted, non-empty list: the middle value, or the mean of the two middle ones.
double median_of_sorted(const std::vector<double>& v) {
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

EpisodeSummary summarize_episodes(const std::vector<double>& returns, const std::vector<int64_t>& lengths) {
  CTRAX_REQUIRE(!returns.empty(), "summarize_episodes: no episodes");
  CTRAX_REQUIRE(returns.size() == lengths.size(), "summarize_episodes: ", returns.size(), " returns but ",
                lengths.size(), " lengths");
  EpisodeSummary s;
  const auto n = static_cast<double>(returns.size());
  s.episodes = static_cast<int64_t>(returns.size());
  double sum = 0;
  for (double r : returns) sum += r;
  s.return_mean = sum / n;
  double square = 0;
  for (double r : returns) square += (r - s.return_mean) * (r - s.return_mean);
  s.return_std = returns.size() > 1 ? std::sqrt(square / (n - 1)) : 0.0;
  std::vector<double> sorted = returns;
  std::sort(sorted.begin(), sorted.end());
  s.return_min = sorted.front();
  s.return_max = sorted.back();
  s.return_median = median_of_sorted(sorted);
  const double half = 1.96 * s.return_std / std::sqrt(n);
  s.return_ci95_low = s.return_mean - half;
  s.return_ci95_high = s.return_mean + half;
  double length_sum = 0;
  s.length_min = static_cast<double>(lengths.front());
  s.length_max = s.length_min;
  for (int64_t l : lengths) {
    length_sum += static_cast<double>(l);
    s.length_min = std::min(s.length_min, static_cast<double>(l));
    s.length_max = std::max(s.length_max, static_cast<double>(l));
  }
  s.length_mean = length_sum / n;
  return s;
}

std::string describe(const EpisodeSummary& s) {
  char buffer[160];
  std::snprintf(buffer, sizeof buffer, "mean %.1f +- %.1f over %lld episodes (95%% CI %.1f to %.1f)", s.return_mean,
                s.return_std, static_cast<long long>(s.episodes), s.return_ci95_low, s.return_ci95_high);
  return buffer;
}

}  // namespace ctrax
