// Episode statistics: see evaluation.h.
#include "evaluation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "../../base/error.h"

namespace ctrax {

namespace {

// The median of a sorted, non-empty list: the middle value, or the mean of the two middle ones.
double median_of_sorted(const std::vector<double>& v) {
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

namespace {

// Mean, sample std (N - 1; 0 for one value), min, median and max, the sums in the given order.
struct Spread {
  double mean = 0, std = 0, min = 0, median = 0, max = 0;
};

Spread spread_of(std::vector<double> v) {
  Spread s;
  const auto n = static_cast<double>(v.size());
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / n;
  double square = 0;
  for (double x : v) square += (x - s.mean) * (x - s.mean);
  s.std = v.size() > 1 ? std::sqrt(square / (n - 1)) : 0.0;
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.max = v.back();
  s.median = median_of_sorted(v);
  return s;
}

}  // namespace

EpisodeSummary summarize_episodes(const std::vector<double>& returns, const std::vector<int64_t>& lengths) {
  CTRAX_REQUIRE(!returns.empty(), "summarize_episodes: no episodes");
  CTRAX_REQUIRE(returns.size() == lengths.size(), "summarize_episodes: ", returns.size(), " returns but ",
                lengths.size(), " lengths");
  EpisodeSummary s;
  s.episodes = static_cast<int64_t>(returns.size());
  const Spread r = spread_of(returns);
  s.return_mean = r.mean;
  s.return_std = r.std;
  s.return_min = r.min;
  s.return_median = r.median;
  s.return_max = r.max;
  const double half = 1.96 * r.std / std::sqrt(static_cast<double>(returns.size()));
  s.return_ci95_low = r.mean - half;
  s.return_ci95_high = r.mean + half;
  const Spread l = spread_of(std::vector<double>(lengths.begin(), lengths.end()));
  s.length_mean = l.mean;
  s.length_std = l.std;
  s.length_min = l.min;
  s.length_median = l.median;
  s.length_max = l.max;
  return s;
}

std::string describe(const EpisodeSummary& s) {
  char buffer[160];
  std::snprintf(buffer, sizeof buffer, "mean %.1f +- %.1f over %lld episodes (95%% CI %.1f to %.1f)", s.return_mean,
                s.return_std, static_cast<long long>(s.episodes), s.return_ci95_low, s.return_ci95_high);
  return buffer;
}

}  // namespace ctrax
