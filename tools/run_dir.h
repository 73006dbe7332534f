// The run directory: what `ctrax train` writes and `ctrax resume`, `eval` and `plot` read.
//
//   run.toml            format = "ctrax-run", version (kRunFormatVersion), algorithm, env:
//                       written last when a run is created, so a directory without it is not a
//                       run (a creation that failed half-way is never taken for one)
//   config.toml         the resolved configuration (every default filled in)
//   metrics.csv, metrics.jsonl, events.out.tfevents.*   one row per epoch (rl/agents/agent.h,
//                       optim/metrics_tensorboard.h)
//   checkpoints/        the agent's checkpoints (io/checkpoint.h)
//   learning_curve.png  drawn at the end of train and resume when gnuplot is installed
//
// What it is for: creating, recognising and reopening run directories, with a clear error for
// anything else. What it is not for: the files' contents (the agent and the sinks own them).
#pragma once

#include <filesystem>
#include <string>

#include "run_config.h"

namespace ctrax::tools {

inline constexpr int kRunFormatVersion = 1;

// Throws ctrax::Error unless `dir` can be created or written: it exists and is a writable
// directory that holds no run (run.toml), or it does not exist and its nearest existing
// ancestor is a writable directory. Nothing is created.
void check_new_run_directory(const std::filesystem::path& dir);

// Creates the directory, writes config.toml and then run.toml (each atomically).
void create_run_directory(const std::filesystem::path& dir, const RunConfig& config);

// Reopens a run: checks run.toml (present, the format and a version this build reads) and reads
// config.toml. Throws ctrax::Error naming the directory and what is wrong.
RunConfig open_run_directory(const std::filesystem::path& dir);

}  // namespace ctrax::tools
