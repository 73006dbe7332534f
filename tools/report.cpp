// Reporting across runs: see report.h.
#include "report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <sstream>

#include <ctrax/base/error.h>

#include "run_dir.h"

namespace ctrax::tools {

namespace fs = std::filesystem;

double quantile(std::vector<double> values, double q) {
  CTRAX_REQUIRE(!values.empty(), "quantile: no values");
  CTRAX_REQUIRE(q >= 0.0 && q <= 1.0, "quantile: q must be in [0, 1], got ", q);
  std::sort(values.begin(), values.end());
  const double position = q * static_cast<double>(values.size() - 1);
  const auto below = static_cast<size_t>(std::floor(position));
  const size_t above = std::min(below + 1, values.size() - 1);
  const double fraction = position - static_cast<double>(below);
  return values[below] + fraction * (values[above] - values[below]);
}

double median(const std::vector<double>& values) { return quantile(values, 0.5); }

double interquartile_mean(std::vector<double> values) {
  CTRAX_REQUIRE(!values.empty(), "interquartile_mean: no values");
  std::sort(values.begin(), values.end());
  const size_t cut = values.size() / 4;
  double sum = 0;
  for (size_t i = cut; i < values.size() - cut; ++i) sum += values[i];
  return sum / static_cast<double>(values.size() - 2 * cut);
}

Interval stratified_bootstrap(const std::vector<std::vector<double>>& strata,
                              const std::function<double(const std::vector<double>&)>& statistic,
                              int64_t repetitions, uint64_t seed, double confidence) {
  CTRAX_REQUIRE(!strata.empty(), "stratified_bootstrap: no strata");
  for (size_t i = 0; i < strata.size(); ++i)
    CTRAX_REQUIRE(!strata[i].empty(), "stratified_bootstrap: stratum ", i, " is empty");
  CTRAX_REQUIRE(repetitions >= 1, "stratified_bootstrap: repetitions must be >= 1, got ", repetitions);
  CTRAX_REQUIRE(confidence > 0.0 && confidence < 1.0, "stratified_bootstrap: confidence must be in (0, 1), got ",
                confidence);
  // mt19937_64's output is fixed by the standard; the index is taken from it directly (the
  // standard distributions differ between libraries), so the interval is the same everywhere.
  std::mt19937_64 rng(seed);
  std::vector<double> estimates;
  estimates.reserve(static_cast<size_t>(repetitions));
  std::vector<double> sample;
  for (int64_t r = 0; r < repetitions; ++r) {
    sample.clear();
    for (const std::vector<double>& stratum : strata)
      for (size_t i = 0; i < stratum.size(); ++i) sample.push_back(stratum[rng() % stratum.size()]);
    estimates.push_back(statistic(sample));
  }
  const double tail = (1.0 - confidence) / 2.0;
  return Interval{quantile(estimates, tail), quantile(estimates, 1.0 - tail)};
}

namespace {

// The column's value in a row, NaN when the file has no such column.
double cell(const MetricsTable& t, const MetricsTable::Row& row, const std::string& column) {
  const int64_t c = t.column_index(column);
  return c < 0 ? std::nan("") : row.values[static_cast<size_t>(c)];
}

}  // namespace

RunSummary read_run_summary(const fs::path& dir) {
  const RunConfig config = open_run_directory(dir);
  RunSummary r;
  r.dir = dir;
  fs::path absolute = fs::absolute(dir).lexically_normal();
  if (absolute.filename().empty()) absolute = absolute.parent_path();
  r.group = absolute.parent_path().filename().string();
  r.algorithm = config.algorithm;
  r.env = config.env;
  r.seed = static_cast<int64_t>(config.seed);
  r.target = config.target_eval_return;
  r.metrics = read_metrics_csv(dir / "metrics.csv");
  const MetricsTable& t = r.metrics;
  for (const MetricsTable::Row& row : t.rows) {
    if (row.phase != "rl") continue;
    r.epochs = row.step;
    const double steps = cell(t, row, "n_interactions");
    if (std::isfinite(steps)) r.env_steps = static_cast<int64_t>(steps);
    const double seconds = cell(t, row, "time/epoch_seconds");
    if (std::isfinite(seconds)) r.seconds += seconds;
    const double confirmed = cell(t, row, "confirm/return_mean");
    if (!std::isfinite(confirmed)) continue;
    r.score = confirmed;
    r.score_ci95_low = cell(t, row, "confirm/return_ci95_low");
    r.score_ci95_high = cell(t, row, "confirm/return_ci95_high");
    r.solved = cell(t, row, "confirm/solved") == 1.0;
    if (r.solved && !r.steps_to_target) {
      r.steps_to_target = r.env_steps;
      r.seconds_to_target = r.seconds;
    }
  }
  return r;
}

std::vector<GroupReport> report_groups(const std::vector<RunSummary>& runs, uint64_t seed) {
  std::vector<GroupReport> out;
  std::map<std::string, size_t> index;
  std::vector<std::vector<const RunSummary*>> members;
  for (const RunSummary& r : runs) {
    auto [it, added] = index.emplace(r.group, out.size());
    if (added) {
      GroupReport g;
      g.group = r.group;
      g.algorithm = r.algorithm;
      g.env = r.env;
      g.target = r.target;
      out.push_back(g);
      members.emplace_back();
    }
    members[it->second].push_back(&r);
  }
  for (size_t i = 0; i < out.size(); ++i) {
    GroupReport& g = out[i];
    std::vector<double> steps, seconds, scores;
    for (const RunSummary* r : members[i]) {
      ++g.runs;
      if (r->solved) {
        ++g.solved;
        steps.push_back(static_cast<double>(*r->steps_to_target));
        seconds.push_back(*r->seconds_to_target);
      }
      if (r->score) scores.push_back(*r->score);
    }
    if (!steps.empty()) {
      g.steps_median = median(steps);
      g.steps_q25 = quantile(steps, 0.25);
      g.steps_q75 = quantile(steps, 0.75);
      g.seconds_median = median(seconds);
      g.seconds_q25 = quantile(seconds, 0.25);
      g.seconds_q75 = quantile(seconds, 0.75);
    }
    if (!scores.empty()) {
      g.score_iqm = interquartile_mean(scores);
      double sum = 0;
      for (double s : scores) sum += s;
      g.score_mean = sum / static_cast<double>(scores.size());
      g.score_min = *std::min_element(scores.begin(), scores.end());
      g.score_iqm_ci = stratified_bootstrap({scores}, interquartile_mean, 2000, seed);
    }
  }
  return out;
}

namespace {

std::string fixed(std::optional<double> v, int digits = 1) {
  if (!v) return "-";
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", digits, *v);
  return buffer;
}

}  // namespace

std::string markdown_report(const std::vector<GroupReport>& groups, const std::vector<RunSummary>& runs,
                            uint64_t seed) {
  std::ostringstream s;
  s << "| configuration | algorithm | env | target | solved | steps to target: median [IQR] | seconds to target: "
       "median [IQR] | confirmed return: IQM [95% CI] | mean | min |\n";
  s << "|---|---|---|---|---|---|---|---|---|---|\n";
  for (const GroupReport& g : groups) {
    s << "| " << g.group << " | " << g.algorithm << " | " << g.env << " | " << fixed(g.target) << " | " << g.solved
      << "/" << g.runs << " | " << fixed(g.steps_median, 0) << " [" << fixed(g.steps_q25, 0) << ", "
      << fixed(g.steps_q75, 0) << "] | " << fixed(g.seconds_median, 2) << " [" << fixed(g.seconds_q25, 2) << ", "
      << fixed(g.seconds_q75, 2) << "] | " << fixed(g.score_iqm) << " ["
      << (g.score_iqm_ci ? fixed(g.score_iqm_ci->low) : "-") << ", "
      << (g.score_iqm_ci ? fixed(g.score_iqm_ci->high) : "-") << "] | " << fixed(g.score_mean) << " | "
      << fixed(g.score_min) << " |\n";
  }
  if (groups.size() > 1) {
    std::map<std::string, std::vector<double>> strata;
    int64_t solved = 0;
    for (const RunSummary& r : runs) {
      strata[r.group].push_back(r.solved ? 1.0 : 0.0);
      solved += r.solved ? 1 : 0;
    }
    std::vector<std::vector<double>> s_list;
    for (auto& [name, values] : strata) s_list.push_back(values);
    const auto mean = [](const std::vector<double>& v) {
      double sum = 0;
      for (double x : v) sum += x;
      return sum / static_cast<double>(v.size());
    };
    const Interval ci = stratified_bootstrap(s_list, mean, 2000, seed);
    char buffer[200];
    std::snprintf(buffer, sizeof buffer,
                  "\nAll configurations: %lld of %zu runs solved (%.1f%%; stratified bootstrap 95%% CI %.1f%% to "
                  "%.1f%%).\n",
                  static_cast<long long>(solved), runs.size(), 100.0 * static_cast<double>(solved) /
                  static_cast<double>(runs.size()), 100.0 * ci.low, 100.0 * ci.high);
    s << buffer;
  }
  return s.str();
}

namespace {

using Curve = std::vector<std::pair<double, double>>;  // (environment steps, value), in step order

// The group's runs as curves of their finite cells of y_column; x_max: the furthest step.
std::vector<Curve> group_curves(const std::vector<const RunSummary*>& members, const std::string& y_column,
                                double& x_max) {
  std::vector<Curve> curves;
  x_max = 0;
  for (const RunSummary* r : members) {
    const MetricsTable& t = r->metrics;
    Curve points;
    for (const MetricsTable::Row& row : t.rows) {
      const double x = cell(t, row, "n_interactions"), y = cell(t, row, y_column);
      if (row.phase == "rl" && std::isfinite(x) && std::isfinite(y)) points.emplace_back(x, y);
    }
    if (points.empty()) continue;
    x_max = std::max(x_max, points.back().first);
    curves.push_back(std::move(points));
  }
  return curves;
}

double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double y : v) s += y;
  return s / static_cast<double>(v.size());
}

// kPoints rows "x mean low high" over [0, x_max]: at each x, the curves' last value at or before
// x (a run that ended keeps its last value), their mean and its 95% bootstrap band.
std::string band_rows(const std::vector<Curve>& curves, double x_max) {
  constexpr int kPoints = 60;
  std::ostringstream rows;
  rows.precision(10);
  for (int p = 1; p <= kPoints; ++p) {
    const double x = x_max * p / kPoints;
    std::vector<double> ys;
    for (const Curve& c : curves) {
      if (c.front().first > x) continue;
      auto it = std::upper_bound(c.begin(), c.end(), x,
                                 [](double v, const std::pair<double, double>& q) { return v < q.first; });
      ys.push_back(std::prev(it)->second);
    }
    if (ys.empty()) continue;
    const Interval band = stratified_bootstrap({ys}, mean_of, 500, static_cast<uint64_t>(p));
    rows << x << " " << mean_of(ys) << " " << band.low << " " << band.high << "\n";
  }
  return rows.str();
}

}  // namespace

void plot_group_curves(const std::vector<RunSummary>& runs, const fs::path& output, const std::string& y_column,
                       const GnuplotOptions& options) {
  CTRAX_REQUIRE(!runs.empty(), "plot_group_curves: no runs");
  const std::string ext = output.extension().string();
  CTRAX_REQUIRE(ext == ".png" || ext == ".svg", "plot_group_curves: ", output.string(),
                ": give a .png or .svg file");
  std::vector<std::string> order;
  std::map<std::string, std::vector<const RunSummary*>> groups;
  for (const RunSummary& r : runs) {
    if (!groups.count(r.group)) order.push_back(r.group);
    groups[r.group].push_back(&r);
  }
  const char* palette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                           "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  std::map<std::string, std::string> data;
  std::vector<std::string> plots;
  for (size_t gi = 0; gi < order.size(); ++gi) {
    const std::vector<const RunSummary*>& members = groups[order[gi]];
    double x_max = 0;
    const std::vector<Curve> curves = group_curves(members, y_column, x_max);
    if (curves.empty()) continue;
    const std::string file = "group" + std::to_string(gi) + ".dat";
    data[file] = band_rows(curves, x_max);
    const std::string colour = palette[gi % std::size(palette)];
    plots.push_back("'" + file + "' using 1:3:4 with filledcurves fs transparent solid 0.2 noborder lc rgb '" + colour +
                    "' notitle");
    plots.push_back("'" + file + "' using 1:2 with lines lw 2 lc rgb '" + colour + "' title '" + order[gi] + " (" +
                    std::to_string(members.size()) + " runs)'");
  }
  CTRAX_REQUIRE(!plots.empty(), "plot_group_curves: no run has a finite ", y_column, " in its metrics.csv");
  std::ostringstream s;
  s << "set terminal " << (ext == ".png" ? "pngcairo" : "svg")
    << " size 960,600 noenhanced font ',10' background rgb '#ffffff'\n";
  s << "set output OUTPUT\nset xlabel 'environment steps'\nset ylabel '" << y_column
    << " (mean, 95% bootstrap band)'\nset grid lc rgb '#d0d0d0'\nset key inside bottom right opaque box\n"
    << "set autoscale fix\nset offsets 0, 0, graph 0.05, graph 0.05\nplot ";
  for (size_t i = 0; i < plots.size(); ++i) s << (i ? ", \\\n     " : "") << plots[i];
  s << "\n";
  run_gnuplot(s.str(), data, output, options);
}

}  // namespace ctrax::tools
