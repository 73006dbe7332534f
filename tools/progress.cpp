// Progress lines: see progress.h.
#include "progress.h"

#include <cmath>

namespace ctrax::tools {

namespace {

double seconds_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

std::string duration_text(double seconds) {
  char buffer[32];
  const auto s = static_cast<long long>(std::llround(seconds));
  if (s >= 3600) std::snprintf(buffer, sizeof buffer, "%lldh%02lldm", s / 3600, (s / 60) % 60);
  else if (s >= 60) std::snprintf(buffer, sizeof buffer, "%lldm%02llds", s / 60, s % 60);
  else std::snprintf(buffer, sizeof buffer, "%llds", s);
  return buffer;
}

double value_or_nan(const Metrics& row, const std::string& key) {
  const auto it = row.find(key);
  return it == row.end() ? std::nan("") : it->second;
}

}  // namespace

Progress::Progress(std::FILE* out, bool terminal, int64_t first_epoch, int64_t total_epochs, std::string eval_key,
                   double plain_interval_seconds, std::optional<int64_t> total_steps)
    : out_(out),
      terminal_(terminal),
      first_epoch_(first_epoch),
      total_epochs_(total_epochs),
      eval_key_(std::move(eval_key)),
      total_steps_(total_steps),
      plain_interval_(plain_interval_seconds),
      start_(std::chrono::steady_clock::now()),
      last_print_(start_) {}

std::string Progress::line(int64_t epoch, const Metrics& row) const {
  char buffer[320];
  const double steps = value_or_nan(row, "n_interactions");
  int n = total_steps_ ? std::snprintf(buffer, sizeof buffer, "epoch %lld  steps %.0f/%lld", static_cast<long long>(epoch),
                                       steps, static_cast<long long>(*total_steps_))
                       : std::snprintf(buffer, sizeof buffer, "epoch %lld/%lld  steps %.0f", static_cast<long long>(epoch),
                                       static_cast<long long>(total_epochs_), steps);
  n += std::snprintf(buffer + n, sizeof buffer - n, "  return %.1f", value_or_nan(row, "train/episode_return_mean"));
  if (!eval_key_.empty())
    n += std::snprintf(buffer + n, sizeof buffer - n, "  eval %.1f", value_or_nan(row, eval_key_));
  if (row.count("confirm/return_mean"))
    n += std::snprintf(buffer + n, sizeof buffer - n, "  confirmed %.1f over %.0f", row.at("confirm/return_mean"),
                       value_or_nan(row, "confirm/episodes"));
  n += std::snprintf(buffer + n, sizeof buffer - n, "  %.0f steps/s", value_or_nan(row, "time/env_steps_per_second"));
  // ETA from this session's mean rate (a resumed run's earlier epochs do not count): by steps
  // with a step budget, else by epochs.
  const double elapsed = seconds_between(start_, std::chrono::steady_clock::now());
  const int64_t done = epoch - first_epoch_;
  double eta = -1;
  if (total_steps_ && std::isfinite(steps) && first_steps_ >= 0 && steps > first_steps_ && steps < *total_steps_)
    eta = elapsed / (steps - first_steps_) * (static_cast<double>(*total_steps_) - steps);
  else if (!total_steps_ && done > 0 && epoch < total_epochs_)
    eta = elapsed / static_cast<double>(done) * static_cast<double>(total_epochs_ - epoch);
  if (eta >= 0 && n < static_cast<int>(sizeof buffer))
    std::snprintf(buffer + n, sizeof buffer - n, "  ETA %s", duration_text(eta).c_str());
  return buffer;
}

void Progress::epoch(int64_t epoch, const Metrics& row, bool last) {
  const auto now = std::chrono::steady_clock::now();
  if (total_steps_ && first_steps_ < 0 && row.count("n_interactions")) {
    // The ETA by steps measures the rate from the first row on (the steps before it include a
    // resumed run's and the initial random ones).
    first_steps_ = row.at("n_interactions");
    start_ = now;
  }
  if (terminal_) {
    // \r returns to the line's start; ESC[K clears what a longer earlier line left.
    std::fprintf(out_, "\r\033[K%s", line(epoch, row).c_str());
    live_ = true;
    if (last) end_line();
  } else if (!printed_ || last || seconds_between(last_print_, now) >= plain_interval_) {
    std::fprintf(out_, "%s\n", line(epoch, row).c_str());
    last_print_ = now;
    printed_ = true;
  }
  std::fflush(out_);
}

void Progress::end_line() {
  if (live_) std::fputc('\n', out_);
  live_ = false;
  std::fflush(out_);
}

}  // namespace ctrax::tools
