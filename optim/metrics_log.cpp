// Metrics sinks (see metrics_log.h).
#include "metrics_log.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <system_error>

#include <nlohmann/json.hpp>

#include "../io/atomic_file.h"
#include "../io/posix_file.h"
#include "../base/error.h"

namespace ctrax {

namespace fs = std::filesystem;

namespace {

// An append-mode FILE* that flushes after each row. Files are opened in binary mode so that what
// is written is byte-for-byte what truncate_after later parses.
struct AppendFile {
  std::FILE* file = nullptr;
  fs::path path;
  const char* who = "";

  AppendFile(fs::path p, const char* owner) : path(std::move(p)), who(owner) { open(); }
  ~AppendFile() { close(); }
  AppendFile(const AppendFile&) = delete;
  AppendFile& operator=(const AppendFile&) = delete;

  void open() {
    // Opening a FIFO for writing would block until something reads it: anything but a regular
    // file (or none yet) in the metrics file's place is refused first.
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
      CTRAX_THROW(who, ": cannot open ", path, " for appending: ",
                  S_ISDIR(st.st_mode) ? std::strerror(EISDIR)
                                      : (std::string("not a regular file (it is ") + io::detail::file_kind(st.st_mode) + ")"));
    file = std::fopen(path.c_str(), "ab");
    if (file == nullptr) CTRAX_THROW(who, ": cannot open ", path, " for appending: ", std::strerror(errno));
  }
  // After the file was replaced by a rename, the handle still points at the old one.
  void reopen() {
    close();
    open();
  }
  void close() {
    if (file != nullptr) std::fclose(file);
    file = nullptr;
  }
  void append(std::string_view bytes) {
    CTRAX_REQUIRE(file != nullptr, who, ": ", path, " is not open (a previous truncate_after failed to reopen it)");
    if (std::fwrite(bytes.data(), 1, bytes.size(), file) != bytes.size() || std::fflush(file) != 0)
      CTRAX_THROW(who, ": cannot write to ", path, ": ", std::strerror(errno));
  }
};

// The contents of the file at `path`, or "" when there is none yet (or it cannot be reached, or
// is not a regular file: opening it for appending then reports why).
std::string existing_contents(const fs::path& path) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec || !fs::is_regular_file(status)) return {};
  return io::read_file(path);
}

// A crash mid-row can leave a last line without its newline. That torn row is cut off before
// appending (the header comment of metrics_log.h accepts losing it) so that the next row is not
// glued onto it. Returns the contents that remain.
std::string cut_torn_tail(const char* who, const fs::path& path, std::string contents) {
  const size_t end = contents.rfind('\n');
  const size_t keep = end == std::string::npos ? 0 : end + 1;
  if (keep != contents.size()) {
    std::error_code ec;
    fs::resize_file(path, keep, ec);
    if (ec) CTRAX_THROW(who, ": cannot cut the torn last line of ", path, ": ", ec.message());
    contents.resize(keep);
  }
  return contents;
}

// Splits `contents` into lines (without their newlines); a last line without a newline is a
// torn row and is dropped, as in cut_torn_tail.
std::vector<std::string_view> split_lines(std::string_view contents) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  for (size_t nl; (nl = contents.find('\n', start)) != std::string_view::npos; start = nl + 1)
    lines.push_back(contents.substr(start, nl - start));
  return lines;
}

bool parse_int64(std::string_view text, int64_t& out) {
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc() && ptr == end && !text.empty();
}

void require_step(const char* who, int64_t step) {
  CTRAX_REQUIRE(step >= 0, who, ": the step must be >= 0 (steps count from 0), got ", step);
}

// CSV cells are never quoted, so a name that could break a row is refused instead.
void require_csv_name(const char* who, const char* what, std::string_view name) {
  CTRAX_REQUIRE(!name.empty(), who, ": ", what, " must not be empty");
  CTRAX_REQUIRE(name.find_first_of(",\"\n\r") == std::string_view::npos, who, ": ", what, " \"", name,
                "\" contains a comma, a double quote or a line break, which CSV cells cannot hold unquoted");
}

// Shortest decimal text that reads back to the same double (at most 17 significant digits).
std::string format_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  const auto [ptr, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  CTRAX_CHECK(ec == std::errc(), "to_chars of a double failed");
  return std::string(buf, ptr);
}

std::string json_string(std::string_view s, const char* who) {
  try {
    return nlohmann::json(std::string(s)).dump();
  } catch (const nlohmann::json::exception& e) {
    CTRAX_THROW(who, ": cannot write \"", s, "\" as a JSON string: ", e.what());
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// CSV

struct CsvMetricsSink::File : AppendFile {
  using AppendFile::AppendFile;
};

namespace {
std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) {
    if (!out.empty()) out += ',';
    out += n;
  }
  return out;
}

std::string csv_header(const std::vector<std::string>& columns) {
  return columns.empty() ? std::string("step,phase") : "step,phase," + join(columns);
}
}  // namespace

CsvMetricsSink::CsvMetricsSink(fs::path path, std::vector<std::string> columns)
    : path_(std::move(path)), columns_(std::move(columns)) {
  const char* who = "CsvMetricsSink";
  for (size_t i = 0; i < columns_.size(); ++i) {
    require_csv_name(who, "a column name", columns_[i]);
    CTRAX_REQUIRE(columns_[i] != "step" && columns_[i] != "phase", who, ": column \"", columns_[i],
                  "\" clashes with the fixed step and phase columns");
    for (size_t j = 0; j < i; ++j)
      CTRAX_REQUIRE(columns_[j] != columns_[i], who, ": column \"", columns_[i], "\" is listed twice");
  }
  const std::string header = csv_header(columns_);
  std::string existing = existing_contents(path_);
  // The header is checked before anything is cut, so a file of another format is left as it
  // is. A first line without its newline is a torn header when it is a prefix of ours.
  const size_t header_end = existing.find('\n');
  const std::string_view found = std::string_view(existing).substr(0, header_end);
  const bool ours = header_end == std::string::npos ? header.starts_with(found) : found == header;
  CTRAX_REQUIRE(ours, who, ": ", path_, " has the header \"", found, "\" but this sink writes \"", header,
                "\"; write to another file rather than mix formats");
  existing = cut_torn_tail(who, path_, std::move(existing));
  file_ = std::make_unique<File>(path_, who);
  if (existing.empty()) file_->append(header + "\n");
}

CsvMetricsSink::~CsvMetricsSink() = default;

void CsvMetricsSink::write(int64_t step, std::string_view phase, const Metrics& metrics) {
  const char* who = "CsvMetricsSink";
  require_step(who, step);
  require_csv_name(who, "the phase", phase);
  for (const auto& [name, value] : metrics) {
    if (std::find(columns_.begin(), columns_.end(), name) == columns_.end())
      CTRAX_THROW(who, ": metric \"", name, "\" is not a column of ", path_, "; the columns are ",
                  columns_.empty() ? std::string("(none)") : join(columns_));
  }
  std::string row = std::to_string(step);
  row += ',';
  row += phase;
  for (const std::string& c : columns_) {
    row += ',';
    const auto it = metrics.find(c);
    if (it != metrics.end()) row += format_number(it->second);
  }
  row += '\n';
  file_->append(row);
}

void CsvMetricsSink::truncate_after(int64_t step) {
  const char* who = "CsvMetricsSink::truncate_after";
  const std::string contents = io::read_file(path_);
  const std::vector<std::string_view> lines = split_lines(contents);
  const std::string header = csv_header(columns_);
  CTRAX_REQUIRE(!lines.empty() && lines[0] == header, who, ": ", path_, " no longer starts with the header \"",
                header, "\"");
  const auto cells = static_cast<size_t>(std::ranges::count(header, ',')) + 1;
  std::string kept = header + "\n";
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::string_view line = lines[i];
    int64_t row_step = 0;
    const auto n_cells = static_cast<size_t>(std::ranges::count(line, ',')) + 1;
    if (n_cells != cells || !parse_int64(line.substr(0, line.find(',')), row_step))
      CTRAX_THROW(who, ": ", path_.string(), ":", i + 1, ": malformed row \"", line, "\" (expected ", cells,
                  " cells starting with an integer step)");
    if (row_step <= step) {
      kept += line;
      kept += '\n';
    }
  }
  io::write_file_atomically(path_, kept);
  file_->reopen();
}

// ---------------------------------------------------------------------------------------------
// JSON lines

struct JsonLinesMetricsSink::File : AppendFile {
  using AppendFile::AppendFile;
};

JsonLinesMetricsSink::JsonLinesMetricsSink(fs::path path) : path_(std::move(path)) {
  cut_torn_tail("JsonLinesMetricsSink", path_, existing_contents(path_));
  file_ = std::make_unique<File>(path_, "JsonLinesMetricsSink");
}

JsonLinesMetricsSink::~JsonLinesMetricsSink() = default;

void JsonLinesMetricsSink::write(int64_t step, std::string_view phase, const Metrics& metrics) {
  const char* who = "JsonLinesMetricsSink";
  require_step(who, step);
  CTRAX_REQUIRE(!phase.empty(), who, ": the phase must not be empty");
  // Written by hand so that step and phase come first, then the metrics in name order.
  std::string line = "{\"step\": " + std::to_string(step) + ", \"phase\": " + json_string(phase, who);
  for (const auto& [name, value] : metrics) {
    CTRAX_REQUIRE(!name.empty() && name != "step" && name != "phase", who, ": metric name \"", name,
                  "\" is empty or clashes with the step and phase keys");
    line += ", " + json_string(name, who) + ": ";
    // JSON has no NaN or infinities.
    line += std::isfinite(value) ? nlohmann::json(value).dump() : std::string("null");
  }
  line += "}\n";
  file_->append(line);
}

void JsonLinesMetricsSink::truncate_after(int64_t step) {
  const char* who = "JsonLinesMetricsSink::truncate_after";
  const std::string contents = io::read_file(path_);
  const std::vector<std::string_view> lines = split_lines(contents);
  std::string kept;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string_view line = lines[i];
    const nlohmann::json row = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    const auto it = row.is_object() ? row.find("step") : row.end();
    if (!row.is_object() || it == row.end() || !it->is_number_integer())
      CTRAX_THROW(who, ": ", path_.string(), ":", i + 1, ": malformed row \"", line,
                  "\" (expected a JSON object with an integer \"step\")");
    if (it->get<int64_t>() <= step) {
      kept += line;
      kept += '\n';
    }
  }
  io::write_file_atomically(path_, kept);
  file_->reopen();
}

// ---------------------------------------------------------------------------------------------
// Memory

void MemoryMetricsSink::write(int64_t step, std::string_view phase, const Metrics& metrics) {
  require_step("MemoryMetricsSink", step);
  CTRAX_REQUIRE(!phase.empty(), "MemoryMetricsSink: the phase must not be empty");
  rows_.push_back(Row{step, std::string(phase), metrics});
}

void MemoryMetricsSink::truncate_after(int64_t step) {
  std::erase_if(rows_, [step](const Row& row) { return row.step > step; });
}

}  // namespace ctrax
