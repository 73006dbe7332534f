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
                   double plain_interval_seconds)
    : out_(out),
      terminal_(terminal),
      first_epoch_(first_epoch),
      total_epochs_(total_epochs),
      eval_key_(std::move(eval_key)),
      plain_interval_(plain_interval_seconds),
      start_(std::chrono::steady_clock::now()),
      last_print_(start_) {}

std::string Progress::line(int64_t epoch, const Metrics& row) const {
  char buffer[256];
  int n = std::snprintf(buffer, sizeof buffer, "epoch %lld/%lld  steps %.0f  return %.1f", static_cast<long long>(epoch),
                        static_cast<long long>(total_epochs_), value_or_nan(row, "n_interactions"),
                        value_or_nan(row, "return"));
  if (!eval_key_.empty())
    n += std::snprintf(buffer + n, sizeof buffer - n, "  eval %.1f", value_or_nan(row, eval_key_));
  n += std::snprintf(buffer + n, sizeof buffer - n, "  %.0f steps/s", value_or_nan(row, "env_steps_per_second"));
  // ETA from this session's mean epoch time (a resumed run's earlier epochs do not count).
  const double elapsed = seconds_between(start_, std::chrono::steady_clock::now());
  const int64_t done = epoch - first_epoch_;
  if (done > 0 && epoch < total_epochs_)
    std::snprintf(buffer + n, sizeof buffer - n, "  ETA %s",
                  duration_text(elapsed / static_cast<double>(done) * static_cast<double>(total_epochs_ - epoch)).c_str());
  return buffer;
}

void Progress::epoch(int64_t epoch, const Metrics& row, bool last) {
  const auto now = std::chrono::steady_clock::now();
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
