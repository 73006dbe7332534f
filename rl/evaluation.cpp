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
  std::vector<double> lengths_sorted(lengths.begin(), lengths.end());
  std::sort(lengths_sorted.begin(), lengths_sorted.end());
  double length_sum = 0;
  for (double l : lengths_sorted) length_sum += l;
  s.length_mean = length_sum / n;
  double length_square = 0;
  for (double l : lengths_sorted) length_square += (l - s.length_mean) * (l - s.length_mean);
  s.length_std = lengths.size() > 1 ? std::sqrt(length_square / (n - 1)) : 0.0;
  s.length_min = lengths_sorted.front();
  s.length_max = lengths_sorted.back();
  s.length_median = median_of_sorted(lengths_sorted);
  return s;
}

std::string describe(const EpisodeSummary& s) {
  char buffer[160];
  std::snprintf(buffer, sizeof buffer, "mean %.1f +- %.1f over %lld episodes (95%% CI %.1f to %.1f)", s.return_mean,
                s.return_std, static_cast<long long>(s.episodes), s.return_ci95_low, s.return_ci95_high);
  return buffer;
}

}  // namespace ctrax
