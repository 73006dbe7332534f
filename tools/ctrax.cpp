// ctrax: the command line.
//
//   ctrax train CONFIG [--set key=value ...] [--output-dir DIR] [--seed N] [--epochs N]
//
// train: reads a run configuration (tools/run_config.h; configs/ holds one per algorithm and
// environment), overrides keys with --set (and the shortcuts --seed and --epochs), writes the
// resolved configuration to DIR/config.toml, and trains: one line per epoch, then a summary.
// With target_eval_return in the config it stops once the evaluation return reaches it.
// Metrics and checkpoints go to DIR (default runs/<config name>); a DIR that holds a
// checkpoint of the same run continues from it.
//
// Exit status: 0 on success, 2 for bad input (the message on stderr says what and where).
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <ctrax/io/atomic_file.h>
#include <ctrax/kernels/check.h>

#include "config.h"
#include "run_config.h"

namespace {

namespace fs = std::filesystem;
using namespace ctrax;
using namespace ctrax::tools;

int train(const std::string& config_path, std::vector<std::string> overrides, std::string output_dir,
          std::optional<int64_t> seed, std::optional<int64_t> epochs) {
  toml::table table = parse_config_file(config_path);
  if (seed) overrides.push_back("seed=" + std::to_string(*seed));
  if (epochs) overrides.push_back("epochs=" + std::to_string(*epochs));
  apply_overrides(table, overrides);
  const RunConfig config = read_run_config(std::move(table), config_path);
  if (output_dir.empty()) output_dir = (fs::path("runs") / fs::path(config_path).stem()).string();
  std::error_code error;
  fs::create_directories(output_dir, error);
  CTRAX_REQUIRE(!error, "cannot create the output directory ", output_dir, ": ", error.message());
  std::ostringstream resolved;
  resolved << config.resolved << "\n";
  io::write_file_atomically(fs::path(output_dir) / "config.toml", resolved.str());

  std::unique_ptr<RLTask> task = make_task(config);
  std::unique_ptr<Agent> agent = make_agent(config, *task, output_dir);
  if (agent->epoch() > 0) std::printf("resuming %s at epoch %lld\n", output_dir.c_str(), static_cast<long long>(agent->epoch()));
  const std::string eval_key =
      config.agent.eval_temperatures.empty() || config.agent.n_eval_episodes == 0
          ? std::string()
          : "eval_return_T" + [&] {
              std::ostringstream s;
              s.precision(6);
              s << config.agent.eval_temperatures.front();
              return s.str();
            }();
  const auto start = std::chrono::steady_clock::now();
  Metrics row;
  bool reached = false;
  while (agent->epoch() < config.epochs && !reached) {
    row = agent->run(1);
    const double eval = eval_key.empty() ? 0.0 : row.at(eval_key);
    std::printf("epoch %lld  steps %.0f  return %.1f", static_cast<long long>(agent->epoch()), row.at("n_interactions"),
                row.at("return"));
    if (!eval_key.empty()) std::printf("  eval %.1f", eval);
    std::printf("  %.0f steps/s\n", row.at("env_steps_per_second"));
    std::fflush(stdout);
    reached = config.target_eval_return && !eval_key.empty() && eval >= *config.target_eval_return;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%s %s on %s: %lld epochs, %lld environment steps, %.1f s%s; outputs in %s\n", config.algorithm.c_str(),
              reached ? "reached the target" : "finished", config.env.c_str(), static_cast<long long>(agent->epoch()),
              static_cast<long long>(task->n_interactions()), seconds,
              eval_key.empty() ? "" : (", evaluation return " + std::to_string(row.count(eval_key) ? row.at(eval_key) : 0.0)).c_str(),
              output_dir.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ctrax: train and run RL agents"};
  app.require_subcommand(1);
  CLI::App* train_cmd = app.add_subcommand("train", "train an agent from a run configuration (configs/*.toml)");
  std::string config_path, output_dir;
  std::vector<std::string> overrides;
  std::optional<int64_t> seed, epochs;
  train_cmd->add_option("config", config_path, "the run configuration (TOML)")->required();
  train_cmd->add_option("--set", overrides, "override a key: --set policy.batch_size=32 (repeatable)");
  train_cmd->add_option("--output-dir", output_dir, "where metrics and checkpoints go (default runs/<config>)");
  train_cmd->add_option("--seed", seed, "the run's seed (same as --set seed=N)");
  train_cmd->add_option("--epochs", epochs, "the number of epochs (same as --set epochs=N)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    if (train_cmd->parsed()) return train(config_path, overrides, output_dir, seed, epochs);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ctrax: %s\n", e.what());
    return 2;
  }
  return 0;
}
