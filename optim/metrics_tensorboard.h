// TensorBoard event files: a MetricsSink whose rows TensorBoard plots as scalar charts.
//
// What it is for: watching a run live with `tensorboard --logdir DIR`. Each row becomes one
// Event holding a simple_value scalar per metric, tagged "<phase>/<name>" ("train/loss",
// "rl/return"), so TensorBoard groups the charts by phase. The file is flushed after every
// event, so a running TensorBoard picks rows up as they are written.
// What it is not for: reading metrics back (the CSV, JSON-lines and memory sinks of
// metrics_log.h are for that; this format is a log of protobuf records), histograms, images or
// graphs (only scalars are written), or exact values: TensorBoard's scalars are float32, so each
// double is rounded to the nearest float (beyond float's range to an infinity; NaN stays NaN).
//
// The format is written by hand (no protobuf dependency); metrics_tensorboard.cpp spells it out.
// It is the file TensorFlow's and TensorBoard's own writers produce, byte for byte
// (tests/fixtures/tensorboard_events.py checks this, and that TensorBoard reads ours back).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "metrics_log.h"

namespace ctrax {

class TensorBoardMetricsSink final : public MetricsSink {
 public:
  // Seconds since the Unix epoch (finite, in [0, 1e18)): each event's wall_time. The default reads the
  // system clock; a test injects a fixed sequence to get a byte-exact file.
  using Clock = std::function<double()>;

  // Creates a new event file in `directory`, which must exist and be writable (it is not
  // created: a typo should fail loudly rather than log somewhere unexpected). The name follows
  // TensorFlow's convention, events.out.tfevents.<unix seconds, 10 digits>.<hostname>.<pid>,
  // with ".1", ".2", ... appended when that name is taken: an existing file is never
  // overwritten or appended to. The first event holds file_version "brain.Event:2".
  // The clock is read here, once per row with metrics, and once per truncate_after.
  explicit TensorBoardMetricsSink(std::filesystem::path directory, Clock clock = nullptr);
  ~TensorBoardMetricsSink() override;

  // One event at `step` (>= 0) with a scalar per metric, in name order. Phase and names must
  // be non-empty valid UTF-8 (protobuf strings; TensorBoard refuses a file with invalid ones).
  // A row without metrics writes nothing. After a failed write the file may end in a partial
  // record, so every later write throws too.
  void write(int64_t step, std::string_view phase, const Metrics& metrics) override;

  // Event files are append-only, so no row is removed from the file. Instead this appends
  // TensorBoard's restart marker, an Event with session_log {status: START} at step + 1, which
  // makes TensorBoard drop every point it has read so far (from this file and the ones before it
  // in name order) whose step is >= step + 1; PyTorch's SummaryWriter(purge_step) uses the same
  // marker. The marker is written twice: TensorBoard's own server (its Python loader,
  // plugin_event_accumulator) takes the first START of a run for the start of the session and
  // purges only on later ones, while the standalone EventAccumulator purges on every START.
  // TensorBoard's fast loader (the Rust data server, used when installed) ignores the marker; it
  // drops, per tag, the points whose step is >= that of a newly read point, so a tag the
  // resumed run writes again is right from its first new row, and one it no longer writes keeps
  // its stale points there.
  void truncate_after(int64_t step) override;

  // The event file this sink writes.
  const std::filesystem::path& path() const { return path_; }

 private:
  struct File;
  // Appends framed records in one write; after a failed write, refuses (the file may end in a
  // partial record).
  void append(const std::string& records);
  std::filesystem::path path_;
  Clock clock_;
  std::unique_ptr<File> file_;
};

namespace detail {
// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as TFRecord framing uses it;
// crc32c("123456789") = 0xE3069283.
uint32_t crc32c(std::string_view bytes);
}  // namespace detail

}  // namespace ctrax
