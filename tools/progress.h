// What `ctrax train` and `ctrax resume` print while they train.
//
// On a terminal: one live line, rewritten after every epoch (epoch, environment steps, return,
// evaluation return, steps per second, ETA). Elsewhere (a log file, CI): plain lines, one for
// the first epoch, then at most one every `plain_interval_seconds`, and one for the last.
// What it is not for: the metrics files (the agent writes those) or errors (stderr).
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include <ctrax/optim/metrics_log.h>

namespace ctrax::tools {

class Progress {
 public:
  // total_epochs: the epoch the run stops at; first_epoch: the epoch it starts from (resume).
  // eval_key: the row's evaluation-return metric ("eval/return_mean"), empty for none.
  // total_steps: the run's step budget, if any (then the line shows steps of it, and the ETA
  // follows the steps).
  Progress(std::FILE* out, bool terminal, int64_t first_epoch, int64_t total_epochs, std::string eval_key,
           double plain_interval_seconds = 2.0, std::optional<int64_t> total_steps = std::nullopt);
  // After each epoch, with its row (rl/agents/agent.h) and the epoch number (1-based).
  void epoch(int64_t epoch, const Metrics& row, bool last);
  // Ends the live line (on a terminal) before something else is printed.
  void end_line();

 private:
  std::string line(int64_t epoch, const Metrics& row) const;

  std::FILE* out_;
  bool terminal_;
  int64_t first_epoch_, total_epochs_;
  std::string eval_key_;
  std::optional<int64_t> total_steps_;
  double first_steps_ = -1;  // the steps when the first row came (for the ETA by steps)
  double plain_interval_;
  std::chrono::steady_clock::time_point start_, last_print_;
  bool printed_ = false, live_ = false;
};

}  // namespace ctrax::tools
