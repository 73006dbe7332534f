// Honest reporting across runs: what `ctrax report` and `ctrax sweep` print and draw.
//
// What it is for: judging a configuration by many seeds, with the statistics of Agarwal et al.,
// "Deep RL at the Edge of the Statistical Precipice" (NeurIPS 2021; the rliable library): the
// interquartile mean of the runs' scores and stratified bootstrap confidence intervals, the
// fraction of runs solved, and steps and seconds to the target (median and interquartile range).
// What it is not for: one run's episodes (rl/learning/evaluation.h) or training (rl/agents/agent.h).
//
// A run's score is its final confirmation's 100-episode mean return (rl/agents/agent.h): the one that
// solved it, or the final policy's. Runs are read from their directories' metrics.csv and
// config.toml alone, so a report never loads a network.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "gnuplot.h"

namespace ctrax::tools {

// ---- Statistics ---------------------------------------------------------------------------

// The q-quantile (q in [0, 1]) with linear interpolation between order statistics (numpy's
// default): position q (n - 1) in the sorted values. Throws ctrax::Error for no values.
double quantile(std::vector<double> values, double q);
double median(const std::vector<double>& values);
// The mean of the values left after cutting floor(n / 4) from each end of the sorted values
// (scipy.stats.trim_mean(x, 0.25), which rliable's IQM uses). Throws for no values.
double interquartile_mean(std::vector<double> values);

struct Interval {
  double low = 0, high = 0;
};
// The percentile bootstrap interval of `statistic` (applied to all strata's resampled values
// together) at `confidence`: each of `repetitions` resamples draws, within every stratum (a
// task), as many values as it has, uniformly with replacement (rliable's StratifiedBootstrap).
// Deterministic for a seed. Throws for an empty stratum, no strata, repetitions < 1 or a
// confidence outside (0, 1).
Interval stratified_bootstrap(const std::vector<std::vector<double>>& strata,
                              const std::function<double(const std::vector<double>&)>& statistic,
                              int64_t repetitions = 2000, uint64_t seed = 0, double confidence = 0.95);

// ---- Runs ---------------------------------------------------------------------------------

struct RunSummary {
  std::filesystem::path dir;
  std::string group;  // the directory's parent's name (`ctrax sweep` puts a config's seeds together)
  std::string algorithm, env;
  int64_t seed = 0;
  std::optional<double> target;
  int64_t epochs = 0;           // epochs run
  int64_t env_steps = 0;        // environment steps, the initial random ones included
  double seconds = 0;           // the sum of time/epoch_seconds
  bool solved = false;
  std::optional<int64_t> steps_to_target;   // solved runs: the steps when it was confirmed
  std::optional<double> seconds_to_target;  // and the seconds
  std::optional<double> score;              // the final confirmation's mean return
  std::optional<double> score_ci95_low, score_ci95_high;
  MetricsTable metrics;
};

// Reads a run directory (tools/run_dir.h). Throws ctrax::Error naming the file for a directory
// that is not a run or a metrics.csv that cannot be read.
RunSummary read_run_summary(const std::filesystem::path& dir);

struct GroupReport {
  std::string group, algorithm, env;
  std::optional<double> target;
  int64_t runs = 0, solved = 0;
  std::optional<double> steps_median, steps_q25, steps_q75;      // over solved runs
  std::optional<double> seconds_median, seconds_q25, seconds_q75;
  std::optional<double> score_iqm, score_mean, score_min;         // over runs with a score
  std::optional<Interval> score_iqm_ci;
};

// One report per group, in the order groups first appear; the bootstrap uses `seed`.
std::vector<GroupReport> report_groups(const std::vector<RunSummary>& runs, uint64_t seed = 0);

// A Markdown table of the groups (and, with several groups, the fraction solved over all runs
// with its stratified bootstrap interval, the groups being the strata).
std::string markdown_report(const std::vector<GroupReport>& groups, const std::vector<RunSummary>& runs,
                            uint64_t seed = 0);

// The mean learning curve of each group (y_column against n_interactions; a run's value at x is
// its last row's at or before x, and a run that ended keeps its last value), with a 95%
// bootstrap band of the mean, drawn by gnuplot to `output` (.png or .svg).
void plot_group_curves(const std::vector<RunSummary>& runs, const std::filesystem::path& output,
                       const std::string& y_column = "eval/return_mean", const GnuplotOptions& options = {});

}  // namespace ctrax::tools
