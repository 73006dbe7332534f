// The subcommands of the `ctrax` command (tools/ctrax.cpp), one file each.
//
// Each add_*_command registers its subcommand, options and --help text on `app`; its callback
// runs the command and stores the process's exit status in `status`. Bad input throws
// ctrax::Error (ctrax.cpp prints it as one line on stderr and exits with 2).
// run_cli(argc, argv) is the whole command line: tools/ctrax.cpp's main calls it, and so can a
// program that registers environments of its own first (rl/environments/env_registry.h), which then work in
// configs, `list`, `rollout` and `eval --render` like the built-ins.
// What it is not for: library code; programs embedding ctrax call rl/ and tools/run_config.h.
#pragma once

#include <CLI/CLI.hpp>

namespace ctrax::tools {

inline constexpr int kExitBadInput = 2;
inline constexpr int kExitInterrupted = 130;  // 128 + SIGINT, as shells report it

// Parses argv and runs the command; returns the exit status (0, kExitBadInput, kExitInterrupted).
int run_cli(int argc, char** argv);

void add_train_commands(CLI::App& app, int& status);  // train, resume
void add_eval_command(CLI::App& app, int& status);
void add_plot_command(CLI::App& app, int& status);
void add_rollout_command(CLI::App& app, int& status);
void add_list_command(CLI::App& app, int& status);
void add_bench_command(CLI::App& app, int& status);
void add_report_commands(CLI::App& app, int& status);  // report, sweep

}  // namespace ctrax::tools
