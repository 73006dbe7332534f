// ctrax sweep CONFIG --seeds N and ctrax report RUN...: many seeds of one configuration, and the
// honest summary of many runs (tools/report.h).
//
// sweep: trains CONFIG once per seed (first_seed, first_seed + 1, ...), each run in
// OUTPUT/<config name>/seed_<s> with its output in seed_<s>.log beside it, --jobs at a time
// (each run a `ctrax train` process of its own with --threads threads), then reports them as
// `report` does and writes OUTPUT/<config name>/report.md (and curves.png with gnuplot).
// report: reads run directories (or directories holding them, such as a sweep's) and prints, per
// configuration, the fraction solved, steps and seconds to the target (median and IQR) and the
// confirmed returns' interquartile mean with its stratified bootstrap 95% interval.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <ctrax/io/atomic_file.h>
#include <ctrax/base/error.h>

#include "../gnuplot.h"
#include "../config.h"
#include "../report.h"
#include "../run_config.h"
#include "../run_dir.h"
#include "commands.h"

extern char** environ;

namespace ctrax::tools {

namespace fs = std::filesystem;

namespace {

// The runs named: a run directory (run.toml), or a directory whose subdirectories (one or two
// levels down) are runs, in name order.
std::vector<fs::path> expand_runs(const std::vector<std::string>& names) {
  std::vector<fs::path> out;
  for (const std::string& name : names) {
    const fs::path p(name);
    CTRAX_REQUIRE(fs::is_directory(p), name, ": not a directory (give run directories or a sweep's directory)");
    if (fs::exists(p / "run.toml")) {
      out.push_back(p);
      continue;
    }
    std::vector<fs::path> found;
    for (const auto& entry : fs::directory_iterator(p)) {
      if (!entry.is_directory()) continue;
      if (fs::exists(entry.path() / "run.toml")) {
        found.push_back(entry.path());
        continue;
      }
      for (const auto& inner : fs::directory_iterator(entry.path()))
        if (inner.is_directory() && fs::exists(inner.path() / "run.toml")) found.push_back(inner.path());
    }
    CTRAX_REQUIRE(!found.empty(), name, " holds no run directory (no run.toml in it or one or two levels down)");
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

struct ReportArgs {
  std::vector<std::string> runs;
  std::string output, plot, column = "eval/return_mean";
  uint64_t seed = 0;
};

int print_report(const std::vector<fs::path>& dirs, const std::string& output, const std::string& plot,
                 const std::string& column, uint64_t seed) {
  std::vector<RunSummary> runs;
  for (const fs::path& d : dirs) runs.push_back(read_run_summary(d));
  const std::vector<GroupReport> groups = report_groups(runs, seed);
  const std::string table = markdown_report(groups, runs, seed);
  std::printf("%s", table.c_str());
  if (!output.empty()) {
    io::write_file_atomically(output, table);
    std::printf("wrote %s\n", output.c_str());
  }
  if (!plot.empty()) {
    plot_group_curves(runs, plot, column);
    std::printf("drew %s\n", plot.c_str());
  }
  return 0;
}

struct SweepArgs {
  std::string config, output_dir;
  std::vector<std::string> overrides, unsets;
  int64_t seeds = 10, first_seed = 0, jobs = 1;
  int threads = 1;
};

std::string self_executable() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  CTRAX_REQUIRE(!ec, "ctrax sweep: cannot find its own executable (/proc/self/exe): ", ec.message());
  return p.string();
}

// Starts `ctrax train` for one seed with its output in `log`; returns the child's pid.
pid_t start_run(const std::string& exe, const SweepArgs& a, int64_t seed, const fs::path& dir, const fs::path& log) {
  std::vector<std::string> argv{exe, "train", a.config, "--seed", std::to_string(seed), "--output-dir", dir.string(),
                                "--threads", std::to_string(a.threads)};
  for (const std::string& k : a.unsets) {
    argv.push_back("--unset");
    argv.push_back(k);
  }
  for (const std::string& o : a.overrides) {
    argv.push_back("--set");
    argv.push_back(o);
  }
  std::vector<char*> raw;
  for (std::string& s : argv) raw.push_back(s.data());
  raw.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  pid_t pid = 0;
  const int error = posix_spawn(&pid, exe.c_str(), &actions, nullptr, raw.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  CTRAX_REQUIRE(error == 0, "ctrax sweep: cannot start ", exe, ": ", std::strerror(error));
  return pid;
}

int sweep(const SweepArgs& a) {
  CTRAX_REQUIRE(a.seeds >= 1, "--seeds must be >= 1, got ", a.seeds);
  CTRAX_REQUIRE(a.first_seed >= 0, "--first-seed must be >= 0, got ", a.first_seed);
  CTRAX_REQUIRE(a.jobs >= 1, "--jobs must be >= 1, got ", a.jobs);
  CTRAX_REQUIRE(a.threads >= 1, "--threads must be >= 1, got ", a.threads);
  // The configuration is read (and refused) here once, before any run starts.
  toml::table table = parse_config_file(a.config);
  remove_keys(table, a.unsets);
  apply_overrides(table, a.overrides);
  read_run_config(std::move(table), a.config);
  const std::string name = fs::path(a.config).stem().string();
  const fs::path root = fs::path(a.output_dir.empty() ? "runs/sweep" : a.output_dir) / name;
  std::vector<int64_t> seeds;
  for (int64_t s = a.first_seed; s < a.first_seed + a.seeds; ++s) {
    seeds.push_back(s);
    check_new_run_directory(root / ("seed_" + std::to_string(s)));
  }
  fs::create_directories(root);
  const std::string exe = self_executable();
  std::map<pid_t, int64_t> running;
  std::vector<int64_t> failed;
  size_t next = 0;
  while (next < seeds.size() || !running.empty()) {
    while (next < seeds.size() && static_cast<int64_t>(running.size()) < a.jobs) {
      const int64_t s = seeds[next++];
      const std::string run = "seed_" + std::to_string(s);
      running[start_run(exe, a, s, root / run, root / (run + ".log"))] = s;
    }
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      CTRAX_THROW("ctrax sweep: waitpid failed: ", std::strerror(errno));
    }
    const auto it = running.find(pid);
    if (it == running.end()) continue;
    const int64_t s = it->second;
    running.erase(it);
    const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    std::printf("seed %lld: %s\n", static_cast<long long>(s), ok ? "done" : "FAILED (see its .log)");
    std::fflush(stdout);
    if (!ok) failed.push_back(s);
  }
  std::vector<fs::path> dirs;
  for (int64_t s : seeds)
    if (std::find(failed.begin(), failed.end(), s) == failed.end()) dirs.push_back(root / ("seed_" + std::to_string(s)));
  if (!dirs.empty())
    print_report(dirs, (root / "report.md").string(), gnuplot_available() ? (root / "curves.png").string() : "",
                 "eval/return_mean", 0);
  if (!failed.empty()) {
    std::fprintf(stderr, "ctrax sweep: %zu of %zu runs failed; their logs are in %s\n", failed.size(), seeds.size(),
                 root.c_str());
    return kExitBadInput;
  }
  return 0;
}

}  // namespace

void add_report_commands(CLI::App& app, int& status) {
  auto r = std::make_shared<ReportArgs>();
  CLI::App* report = app.add_subcommand(
      "report", "summarise runs: fraction solved, steps and seconds to target, IQM with bootstrap CIs");
  report->add_option("runs", r->runs, "run directories, or directories holding them (a sweep's)")->required();
  report->add_option("--output", r->output, "also write the Markdown table to FILE");
  report->add_option("--plot", r->plot, "draw the mean learning curves with 95% bands to FILE.png|.svg (gnuplot)");
  report->add_option("--column", r->column, "the curves' metric (default eval/return_mean)");
  report->add_option("--seed", r->seed, "the bootstrap's seed (default 0)");
  report->callback([r, &status] { status = print_report(expand_runs(r->runs), r->output, r->plot, r->column, r->seed); });

  auto s = std::make_shared<SweepArgs>();
  CLI::App* sweep_cmd = app.add_subcommand("sweep", "train a configuration on many seeds, then report them");
  sweep_cmd->add_option("config", s->config, "the run configuration (TOML)")->required();
  sweep_cmd->add_option("--seeds", s->seeds, "how many seeds (default 10)");
  sweep_cmd->add_option("--first-seed", s->first_seed, "the first seed (default 0); the others follow");
  sweep_cmd->add_option("--jobs", s->jobs, "runs at a time (default 1)");
  sweep_cmd->add_option("--threads", s->threads, "CPU threads per run (default 1)");
  sweep_cmd->add_option("--output-dir", s->output_dir, "where the runs go (default runs/sweep): DIR/<config name>/seed_<s>");
  sweep_cmd->add_option("--set", s->overrides, "override a key in every run (repeatable)");
  sweep_cmd->add_option("--unset", s->unsets, "remove a key in every run, before --set (repeatable)");
  sweep_cmd->callback([s, &status] { status = sweep(*s); });
}

}  // namespace ctrax::tools
