// Metrics sinks: where trainers write their per-step numbers.
//
// What it is for: the train and eval metrics of optim/trainer.h and the RL trainers, as rows of
// (step, phase, name -> value). Sinks write files a person or a plotting tool reads while the
// run goes on; each row is flushed when written. What it is not for: checkpoints (these files
// are appended to, not written atomically: losing the last row in a crash is acceptable, the
// checkpoint says which step a resumed run continues from, and truncate_after() drops the rows
// of steps after it). The file sinks cut off a torn last line (one without its newline) when
// they open an existing file, so the next row is not glued onto it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ctrax {

using Metrics = std::map<std::string, double>;

class MetricsSink {
 public:
  virtual ~MetricsSink() = default;
  // One row: the step (>= 0), the phase ("train", "eval", ...; not empty) and the values.
  virtual void write(int64_t step, std::string_view phase, const Metrics& metrics) = 0;
  // Drops every row whose step is greater than `step` (when a run resumes from a checkpoint of
  // that step). Rewrites the file atomically.
  virtual void truncate_after(int64_t step) = 0;
};

// A CSV file with the header "step,phase,<columns...>"; a metric absent from a row leaves its
// cell empty; NaN and infinities are written as nan, inf, -inf. Numbers are written in the
// shortest form that reads back exactly (at most 17 significant digits). An existing file with
// the same header is appended to; one with another header throws ctrax::Error (naming both
// headers) rather than mixing formats. A metric that is not a column throws ctrax::Error naming
// it and the columns. Cells are never quoted, so column names and phases must be non-empty and
// hold no comma, double quote or line break ("step" and "phase" are not column names either).
class CsvMetricsSink final : public MetricsSink {
 public:
  CsvMetricsSink(std::filesystem::path path, std::vector<std::string> columns);
  ~CsvMetricsSink() override;
  void write(int64_t step, std::string_view phase, const Metrics& metrics) override;
  void truncate_after(int64_t step) override;
  const std::filesystem::path& path() const { return path_; }

 private:
  struct File;
  std::filesystem::path path_;
  std::vector<std::string> columns_;
  std::unique_ptr<File> file_;
};

// JSON lines: one object per row, {"step": 12, "phase": "train", "loss": 0.25, ...}, metrics in
// name order; NaN and infinities are written as null. Appends to an existing file. Metric names
// must be non-empty and not "step" or "phase".
class JsonLinesMetricsSink final : public MetricsSink {
 public:
  explicit JsonLinesMetricsSink(std::filesystem::path path);
  ~JsonLinesMetricsSink() override;
  void write(int64_t step, std::string_view phase, const Metrics& metrics) override;
  void truncate_after(int64_t step) override;
  const std::filesystem::path& path() const { return path_; }

 private:
  struct File;
  std::filesystem::path path_;
  std::unique_ptr<File> file_;
};

// Keeps every row in memory (tests, and programs that read their metrics back).
class MemoryMetricsSink final : public MetricsSink {
 public:
  struct Row {
    int64_t step;
    std::string phase;
    Metrics metrics;
  };
  void write(int64_t step, std::string_view phase, const Metrics& metrics) override;
  void truncate_after(int64_t step) override;
  const std::vector<Row>& rows() const { return rows_; }

 private:
  std::vector<Row> rows_;
};

}  // namespace ctrax
