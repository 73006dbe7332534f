// tools/report.h: the statistics of `ctrax report` against hand-computed values, and run
// summaries read from metrics files.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>

#include <ctrax/ctrax.h>

#include "config.h"
#include "report.h"
#include "run_config.h"
#include "run_dir.h"

namespace fs = std::filesystem;
using namespace ctrax::tools;

TEST_CASE("report: quantiles interpolate between order statistics as numpy does") {
  const std::vector<double> v{4, 1, 3, 2};  // sorted 1 2 3 4
  CHECK(quantile(v, 0.0) == 1.0);
  CHECK(quantile(v, 1.0) == 4.0);
  CHECK(quantile(v, 0.25) == doctest::Approx(1.75));  // position 0.75
  CHECK(median(v) == doctest::Approx(2.5));
  CHECK(median({7}) == 7.0);
  CHECK_THROWS_AS(quantile({}, 0.5), ctrax::Error);
  CHECK_THROWS_AS(quantile(v, 1.5), ctrax::Error);
}

TEST_CASE("report: the interquartile mean cuts floor(n / 4) values from each end (scipy's trim_mean)") {
  // n = 10: cut 2 from each end of 1..10 -> mean of 3..8 = 5.5; an outlier changes nothing.
  CHECK(interquartile_mean({10, 9, 8, 7, 6, 5, 4, 3, 2, 1}) == doctest::Approx(5.5));
  CHECK(interquartile_mean({1000, 9, 8, 7, 6, 5, 4, 3, 2, -1000}) == doctest::Approx(5.5));
  // n = 5: cut 1 -> mean of the middle three.
  CHECK(interquartile_mean({1, 2, 3, 4, 100}) == doctest::Approx(3.0));
  // n < 4: nothing is cut.
  CHECK(interquartile_mean({1, 2, 6}) == doctest::Approx(3.0));
  CHECK_THROWS_AS(interquartile_mean({}), ctrax::Error);
}

TEST_CASE("report: the stratified bootstrap resamples within strata, reproducibly") {
  const auto mean = [](const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return s / static_cast<double>(v.size());
  };
  // Each stratum constant: every resample has the same mean, so the interval is that mean.
  const Interval exact = stratified_bootstrap({{0, 0}, {1, 1}}, mean, 500, 3);
  CHECK(exact.low == 0.5);
  CHECK(exact.high == 0.5);
  // The same values as one stratum vary between resamples: a wide interval.
  const Interval pooled = stratified_bootstrap({{0, 0, 1, 1}}, mean, 500, 3);
  CHECK(pooled.low < 0.3);
  CHECK(pooled.high > 0.7);
  // A fixed seed gives the same interval; it holds the statistic of the data.
  const std::vector<double> scores{3, 9, 4, 8, 5, 7, 6, 1};
  const Interval a = stratified_bootstrap({scores}, interquartile_mean, 1000, 7);
  const Interval b = stratified_bootstrap({scores}, interquartile_mean, 1000, 7);
  CHECK(a.low == b.low);
  CHECK(a.high == b.high);
  CHECK(a.low <= interquartile_mean(scores));
  CHECK(a.high >= interquartile_mean(scores));
  CHECK(a.low >= 1.0);
  CHECK(a.high <= 9.0);
  CHECK_THROWS_AS(stratified_bootstrap({}, mean), ctrax::Error);
  CHECK_THROWS_AS(stratified_bootstrap({{1.0}, {}}, mean), ctrax::Error);
  CHECK_THROWS_AS(stratified_bootstrap({{1.0}}, mean, 0), ctrax::Error);
  CHECK_THROWS_AS(stratified_bootstrap({{1.0}}, mean, 10, 0, 1.0), ctrax::Error);
}

TEST_CASE("report: a run's score, solved flag and steps and seconds to the target come from its rows") {
  const fs::path root = fs::temp_directory_path() / ("ctrax_report_test_" + std::to_string(::getpid()));
  fs::remove_all(root);
  toml::table table = parse_config_text(
      "algorithm = \"PolicyGradient\"\ntarget_eval_return = 100.0\n[task]\nenv = \"CartPole-v1\"\n"
      "[agent]\nn_trajectories_per_epoch = 1\nn_eval_episodes = 1\n",
      "test");
  const RunConfig config = read_run_config(std::move(table), "test");
  std::vector<RunSummary> runs;
  for (int r = 0; r < 2; ++r) {
    const fs::path dir = root / "cfg" / ("seed_" + std::to_string(r));
    create_run_directory(dir, config);
    ctrax::CsvMetricsSink sink(dir / "metrics.csv", {"confirm/return_ci95_high", "confirm/return_ci95_low",
                                                     "confirm/return_mean", "confirm/solved", "eval/return_mean",
                                                     "n_interactions", "time/epoch_seconds"});
    sink.write(1, "rl", {{"n_interactions", 100}, {"time/epoch_seconds", 0.5}, {"eval/return_mean", 20}});
    sink.write(2, "rl", {{"n_interactions", 200}, {"time/epoch_seconds", 0.25}, {"eval/return_mean", 120},
                         {"confirm/return_mean", r == 0 ? 110.0 : 90.0}, {"confirm/solved", r == 0 ? 1.0 : 0.0},
                         {"confirm/return_ci95_low", 80}, {"confirm/return_ci95_high", 130}});
    if (r == 1)
      sink.write(3, "rl", {{"n_interactions", 300}, {"time/epoch_seconds", 0.25}, {"eval/return_mean", 60},
                           {"confirm/return_mean", 70.0}, {"confirm/solved", 0.0}});
    runs.push_back(read_run_summary(dir));
  }
  CHECK(runs[0].group == "cfg");
  CHECK(runs[0].solved);
  CHECK(runs[0].steps_to_target == 200);
  CHECK(runs[0].seconds_to_target == doctest::Approx(0.75));
  CHECK(runs[0].score == 110.0);
  CHECK_FALSE(runs[1].solved);
  CHECK(runs[1].score == 70.0);  // the last confirmation
  CHECK(runs[1].env_steps == 300);
  CHECK(runs[1].seconds == doctest::Approx(1.0));
  const std::vector<GroupReport> groups = report_groups(runs);
  REQUIRE(groups.size() == 1);
  CHECK(groups[0].runs == 2);
  CHECK(groups[0].solved == 1);
  CHECK(groups[0].steps_median == 200.0);
  CHECK(groups[0].score_iqm == doctest::Approx(90.0));
  CHECK(groups[0].score_min == 70.0);
  const std::string md = markdown_report(groups, runs);
  CHECK(md.find("| cfg | PolicyGradient | CartPole-v1 | 100.0 | 1/2 | 200 [200, 200] | 0.75 [0.75, 0.75] | 90.0 [") !=
        std::string::npos);
  if (gnuplot_available()) {
    plot_group_curves(runs, root / "curves.png");
    CHECK(fs::file_size(root / "curves.png") > 1000);
  }
  CHECK_THROWS_WITH_AS(plot_group_curves(runs, root / "curves.jpg"), doctest::Contains("give a .png or .svg"),
                       ctrax::Error);
  CHECK_THROWS_WITH_AS(plot_group_curves(runs, root / "c.png", "no/such"), doctest::Contains("no run has a finite"),
                       ctrax::Error);
  fs::remove_all(root);
}
