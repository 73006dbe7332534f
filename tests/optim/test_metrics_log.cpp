// Metrics sinks: the exact text of CSV and JSON-lines files, values reading back bit for bit,
// appending across sink objects, truncate_after, torn last rows, NaN and infinities, and every
// refusal (header mismatch, unknown metric, names CSV cannot hold, unopenable paths).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <ctrax/optim/metrics_log.h>

#include "../test_util.h"
#include "io/temp_dir.h"

using namespace ctrax;
using test::check_error;
using test::read_bytes;
using test::TempDir;
using test::write_bytes;

namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Doubles whose decimal form needs care: 17 significant digits, extremes, a subnormal, -0.
const std::vector<double> kAwkward = {0.1, 1.0 / 3.0, -2.5, 123456789.125, 1e-300, 1.7976931348623157e308,
                                      5e-324, -0.0, 2.0 / 3.0 * 1e10, 0.30000000000000004};

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<std::string> cells_of(const std::string& line) {
  std::vector<std::string> cells;
  size_t start = 0;
  for (size_t comma; (comma = line.find(',', start)) != std::string::npos; start = comma + 1)
    cells.push_back(line.substr(start, comma - start));
  cells.push_back(line.substr(start));
  return cells;
}

bool same_bits(double a, double b) { return std::signbit(a) == std::signbit(b) && (a == b || (a != a && b != b)); }

}  // namespace

TEST_CASE("CsvMetricsSink: header, rows in column order, empty cells, nan and infinities") {
  TempDir dir;
  const auto path = dir / "metrics.csv";
  {
    CsvMetricsSink sink(path, {"loss", "accuracy", "learning_rate"});
    CHECK(sink.path() == path);
    CHECK(read_bytes(path) == "step,phase,loss,accuracy,learning_rate\n");  // the header is there at once
    sink.write(0, "train", {{"loss", 0.25}, {"learning_rate", 1.0}, {"accuracy", 0.5}});
    sink.write(10, "eval", {{"accuracy", 0.75}});
    sink.write(20, "train", {});
    sink.write(30, "train", {{"loss", kNan}, {"accuracy", kInf}, {"learning_rate", -kInf}});
    // Flushed per row: the file is complete while the sink is still open.
    CHECK(read_bytes(path) ==
          "step,phase,loss,accuracy,learning_rate\n"
          "0,train,0.25,0.5,1\n"
          "10,eval,,0.75,\n"
          "20,train,,,\n"
          "30,train,nan,inf,-inf\n");
  }
  // A sink with no columns writes only step and phase.
  CsvMetricsSink bare(dir / "bare.csv", {});
  bare.write(3, "eval", {});
  CHECK(read_bytes(dir / "bare.csv") == "step,phase\n3,eval\n");
  check_error([&] { bare.write(4, "eval", {{"loss", 1.0}}); }, {"metric \"loss\"", "the columns are (none)"});
}

TEST_CASE("CsvMetricsSink: numbers read back exactly") {
  TempDir dir;
  const auto path = dir / "exact.csv";
  {
    CsvMetricsSink sink(path, {"x"});
    for (size_t i = 0; i < kAwkward.size(); ++i) sink.write(static_cast<int64_t>(i), "train", {{"x", kAwkward[i]}});
  }
  const std::vector<std::string> lines = lines_of(read_bytes(path));
  REQUIRE(lines.size() == kAwkward.size() + 1);
  CHECK(lines[1] == "0,train,0.1");  // shortest form, not 0.10000000000000001
  CHECK(lines[2] == "1,train,0.3333333333333333");
  for (size_t i = 0; i < kAwkward.size(); ++i) {
    const std::vector<std::string> cells = cells_of(lines[i + 1]);
    REQUIRE(cells.size() == 3);
    CHECK(cells[0] == std::to_string(i));
    const double back = std::strtod(cells[2].c_str(), nullptr);
    INFO("wrote " << kAwkward[i] << " as " << cells[2]);
    CHECK(same_bits(back, kAwkward[i]));
    CHECK(cells[2].size() <= 24);  // at most 17 significant digits plus sign, point and exponent
  }
  // nan, inf and -inf read back with strtod too.
  CHECK(std::isnan(std::strtod("nan", nullptr)));
  CHECK(std::strtod("-inf", nullptr) == -kInf);
}

TEST_CASE("CsvMetricsSink: a second sink appends to a file with the same header") {
  TempDir dir;
  const auto path = dir / "m.csv";
  {
    CsvMetricsSink first(path, {"loss"});
    first.write(0, "train", {{"loss", 2.0}});
    first.write(1, "train", {{"loss", 1.5}});
  }
  {
    CsvMetricsSink second(path, {"loss"});
    second.write(2, "train", {{"loss", 1.25}});
  }
  CHECK(read_bytes(path) == "step,phase,loss\n0,train,2\n1,train,1.5\n2,train,1.25\n");
  // An existing empty file gets the header.
  write_bytes(dir / "empty.csv", "");
  CsvMetricsSink empty(dir / "empty.csv", {"loss"});
  CHECK(read_bytes(dir / "empty.csv") == "step,phase,loss\n");
}

TEST_CASE("CsvMetricsSink: an existing file with another header is refused, naming both") {
  TempDir dir;
  const auto path = dir / "m.csv";
  { CsvMetricsSink sink(path, {"loss", "accuracy"}); }
  check_error([&] { CsvMetricsSink sink(path, {"loss"}); },
              {"m.csv", "has the header \"step,phase,loss,accuracy\"", "this sink writes \"step,phase,loss\""});
  check_error([&] { CsvMetricsSink sink(path, {"accuracy", "loss"}); }, {"step,phase,accuracy,loss"});
  write_bytes(dir / "other.csv", "a,b\n1,2\n");
  check_error([&] { CsvMetricsSink sink(dir / "other.csv", {"loss"}); }, {"has the header \"a,b\""});
  // A file of another format is not mistaken for a torn one: nothing is cut from it.
  write_bytes(dir / "torn_other.csv", "a,b\n1,");
  check_error([&] { CsvMetricsSink sink(dir / "torn_other.csv", {"loss"}); }, {"has the header \"a,b\""});
  write_bytes(dir / "one_line.csv", "step,phase,acc");  // no newline, and not a prefix of ours
  check_error([&] { CsvMetricsSink sink(dir / "one_line.csv", {"loss"}); }, {"has the header \"step,phase,acc\""});
  // The refused files are untouched.
  CHECK(read_bytes(path) == "step,phase,loss,accuracy\n");
  CHECK(read_bytes(dir / "other.csv") == "a,b\n1,2\n");
  CHECK(read_bytes(dir / "torn_other.csv") == "a,b\n1,");
  CHECK(read_bytes(dir / "one_line.csv") == "step,phase,acc");
}

TEST_CASE("CsvMetricsSink: a metric that is not a column is refused and nothing is written") {
  TempDir dir;
  const auto path = dir / "m.csv";
  CsvMetricsSink sink(path, {"loss", "accuracy"});
  check_error([&] { sink.write(0, "train", {{"loss", 1.0}, {"los", 2.0}}); },
              {"metric \"los\" is not a column", "m.csv", "the columns are loss,accuracy"});
  CHECK(read_bytes(path) == "step,phase,loss,accuracy\n");
}

TEST_CASE("CsvMetricsSink: names and phases CSV cannot hold unquoted, and negative steps, are refused") {
  TempDir dir;
  const auto path = dir / "m.csv";
  check_error([&] { CsvMetricsSink s(path, {"loss", ""}); }, {"a column name must not be empty"});
  for (const char* bad : {"a,b", "say \"hi\"", "two\nlines", "cr\r"})
    check_error([&] { CsvMetricsSink s(path, {bad}); }, {"a column name", "comma, a double quote or a line break"});
  check_error([&] { CsvMetricsSink s(path, {"step"}); }, {"column \"step\" clashes"});
  check_error([&] { CsvMetricsSink s(path, {"phase"}); }, {"column \"phase\" clashes"});
  check_error([&] { CsvMetricsSink s(path, {"loss", "acc", "loss"}); }, {"column \"loss\" is listed twice"});
  CHECK_FALSE(std::filesystem::exists(path));  // refused before the file was created

  CsvMetricsSink sink(path, {"loss"});
  check_error([&] { sink.write(0, "", {}); }, {"the phase must not be empty"});
  for (const char* bad : {"tr,ain", "\"train\"", "train\n"})
    check_error([&] { sink.write(0, bad, {}); }, {"the phase", "comma, a double quote or a line break"});
  check_error([&] { sink.write(-1, "train", {}); }, {"step must be >= 0", "got -1"});
  CHECK(read_bytes(path) == "step,phase,loss\n");
}

TEST_CASE("CsvMetricsSink: truncate_after keeps the header and rows up to the step, then appends") {
  TempDir dir;
  const auto path = dir / "m.csv";
  CsvMetricsSink sink(path, {"loss"});
  for (int64_t s : {0, 10, 20, 30}) {
    sink.write(s, "train", {{"loss", 1.0 / static_cast<double>(s + 1)}});
    sink.write(s, "eval", {});
  }
  sink.truncate_after(10);
  CHECK(read_bytes(path) == "step,phase,loss\n0,train,1\n0,eval,\n10,train,0.09090909090909091\n10,eval,\n");
  // The sink goes on writing into the rewritten file, not the replaced one.
  sink.write(11, "train", {{"loss", 0.5}});
  CHECK(read_bytes(path) == "step,phase,loss\n0,train,1\n0,eval,\n10,train,0.09090909090909091\n10,eval,\n11,train,0.5\n");
  sink.truncate_after(100);  // nothing after 100: unchanged
  CHECK(lines_of(read_bytes(path)).size() == 6);
  sink.truncate_after(0);
  CHECK(read_bytes(path) == "step,phase,loss\n0,train,1\n0,eval,\n");
  sink.truncate_after(-1);
  CHECK(read_bytes(path) == "step,phase,loss\n");
  sink.write(1, "train", {{"loss", 2.0}});
  CHECK(read_bytes(path) == "step,phase,loss\n1,train,2\n");
  CHECK(test::list_dir(dir.path()) == std::vector<std::string>{"m.csv"});  // no temporaries left
}

TEST_CASE("CsvMetricsSink: truncate_after refuses malformed rows naming the file and line") {
  TempDir dir;
  const auto path = dir / "m.csv";
  write_bytes(path, "step,phase,loss\n0,train,1\nx,train,2\n");
  CsvMetricsSink sink(path, {"loss"});
  check_error([&] { sink.truncate_after(5); }, {path.string() + ":3: malformed row \"x,train,2\"", "integer step"});
  write_bytes(path, "step,phase,loss\n0,train,1,7\n");
  check_error([&] { sink.truncate_after(5); }, {":2: malformed row \"0,train,1,7\"", "expected 3 cells"});
  write_bytes(path, "step,phase,loss\n\n");
  check_error([&] { sink.truncate_after(5); }, {":2: malformed row \"\""});
  write_bytes(path, "step,phase,loss\n 4,train,1\n");
  check_error([&] { sink.truncate_after(5); }, {":2: malformed row"});
  // The file is left as it was; the sink still writes.
  sink.write(6, "train", {});
  CHECK(read_bytes(path) == "step,phase,loss\n 4,train,1\n6,train,\n");
  write_bytes(path, "step,phase,other\n");
  check_error([&] { sink.truncate_after(5); }, {"no longer starts with the header \"step,phase,loss\""});
}

TEST_CASE("CsvMetricsSink: a torn last row from a crash is cut off when the file is reopened") {
  TempDir dir;
  const auto path = dir / "m.csv";
  write_bytes(path, "step,phase,loss\n0,train,1\n1,tra");
  {
    CsvMetricsSink sink(path, {"loss"});
    CHECK(read_bytes(path) == "step,phase,loss\n0,train,1\n");
    sink.write(1, "train", {{"loss", 0.5}});
  }
  CHECK(read_bytes(path) == "step,phase,loss\n0,train,1\n1,train,0.5\n");
  // A torn header alone: the file is started afresh.
  write_bytes(path, "step,pha");
  CsvMetricsSink again(path, {"loss"});
  CHECK(read_bytes(path) == "step,phase,loss\n");
}

TEST_CASE("CsvMetricsSink and JsonLinesMetricsSink: paths that cannot be opened name the path and the reason") {
  TempDir dir;
  write_bytes(dir / "plain", "a regular file");
  // A path under a regular file fails even for root.
  const auto under_file = dir / "plain" / "metrics.csv";
  check_error([&] { CsvMetricsSink s(under_file, {"loss"}); },
              {"CsvMetricsSink: cannot open", under_file.string(), "Not a directory"});
  check_error([&] { JsonLinesMetricsSink s(under_file); },
              {"JsonLinesMetricsSink: cannot open", under_file.string(), "Not a directory"});
  const auto missing_dir = dir / "no" / "such" / "m.jsonl";
  check_error([&] { JsonLinesMetricsSink s(missing_dir); }, {missing_dir.string(), "No such file or directory"});
  check_error([&] { CsvMetricsSink s(dir.path(), {"loss"}); }, {"cannot open", "Is a directory"});
}

TEST_CASE("JsonLinesMetricsSink: step and phase first, metrics by name, NaN and infinities as null") {
  TempDir dir;
  const auto path = dir / "m.jsonl";
  JsonLinesMetricsSink sink(path);
  CHECK(sink.path() == path);
  CHECK(read_bytes(path).empty());
  sink.write(12, "train", {{"loss", 0.25}, {"accuracy", 1.0}});
  sink.write(13, "eval", {});
  sink.write(14, "train", {{"a", kNan}, {"b", kInf}, {"c", -kInf}, {"d", -0.5}});
  CHECK(read_bytes(path) ==
        "{\"step\": 12, \"phase\": \"train\", \"accuracy\": 1.0, \"loss\": 0.25}\n"
        "{\"step\": 13, \"phase\": \"eval\"}\n"
        "{\"step\": 14, \"phase\": \"train\", \"a\": null, \"b\": null, \"c\": null, \"d\": -0.5}\n");
  // Names and phases that need escaping are escaped, not refused.
  sink.write(15, "say \"hi\"", {{"a,b\n", 1.0}});
  const std::vector<std::string> lines = lines_of(read_bytes(path));
  REQUIRE(lines.size() == 4);
  const nlohmann::json row = nlohmann::json::parse(lines[3]);
  CHECK(row["phase"] == "say \"hi\"");
  CHECK(row["a,b\n"] == 1.0);
}

TEST_CASE("JsonLinesMetricsSink: numbers read back exactly, and a second sink appends") {
  TempDir dir;
  const auto path = dir / "m.jsonl";
  {
    JsonLinesMetricsSink sink(path);
    for (size_t i = 0; i < kAwkward.size(); ++i) sink.write(static_cast<int64_t>(i), "train", {{"x", kAwkward[i]}});
  }
  {
    JsonLinesMetricsSink sink(path);
    sink.write(100, "eval", {{"x", 0.125}});
  }
  const std::vector<std::string> lines = lines_of(read_bytes(path));
  REQUIRE(lines.size() == kAwkward.size() + 1);
  for (size_t i = 0; i < kAwkward.size(); ++i) {
    const nlohmann::json row = nlohmann::json::parse(lines[i]);
    CHECK(row["step"] == static_cast<int64_t>(i));
    CHECK(row["phase"] == "train");
    INFO("line " << lines[i]);
    CHECK(same_bits(row["x"].get<double>(), kAwkward[i]));
  }
  CHECK(lines.back() == "{\"step\": 100, \"phase\": \"eval\", \"x\": 0.125}");
}

TEST_CASE("JsonLinesMetricsSink: truncate_after, torn last rows, malformed rows and bad names") {
  TempDir dir;
  const auto path = dir / "m.jsonl";
  write_bytes(path, "{\"step\": 0, \"phase\": \"train\"}\n{\"step\": 5, \"ph");  // torn by a crash
  JsonLinesMetricsSink sink(path);
  CHECK(read_bytes(path) == "{\"step\": 0, \"phase\": \"train\"}\n");
  for (int64_t s : {5, 10, 15}) sink.write(s, "train", {{"loss", 1.0}});
  sink.truncate_after(10);
  CHECK(read_bytes(path) ==
        "{\"step\": 0, \"phase\": \"train\"}\n"
        "{\"step\": 5, \"phase\": \"train\", \"loss\": 1.0}\n"
        "{\"step\": 10, \"phase\": \"train\", \"loss\": 1.0}\n");
  sink.write(11, "eval", {});
  CHECK(lines_of(read_bytes(path)).back() == "{\"step\": 11, \"phase\": \"eval\"}");
  sink.truncate_after(-1);
  CHECK(read_bytes(path).empty());
  CHECK(test::list_dir(dir.path()) == std::vector<std::string>{"m.jsonl"});

  write_bytes(path, "{\"step\": 0, \"phase\": \"train\"}\nnot json\n");
  check_error([&] { sink.truncate_after(3); }, {path.string() + ":2: malformed row \"not json\"", "integer \"step\""});
  write_bytes(path, "{\"step\": 1.5}\n");
  check_error([&] { sink.truncate_after(3); }, {":1: malformed row"});
  write_bytes(path, "[1, 2]\n");
  check_error([&] { sink.truncate_after(3); }, {":1: malformed row"});
  write_bytes(path, "{\"phase\": \"train\"}\n");
  check_error([&] { sink.truncate_after(3); }, {":1: malformed row"});
  CHECK(read_bytes(path) == "{\"phase\": \"train\"}\n");

  check_error([&] { sink.write(0, "", {}); }, {"the phase must not be empty"});
  check_error([&] { sink.write(-2, "train", {}); }, {"step must be >= 0", "got -2"});
  check_error([&] { sink.write(0, "train", {{"step", 1.0}}); }, {"metric name \"step\"", "clashes"});
  check_error([&] { sink.write(0, "train", {{"phase", 1.0}}); }, {"metric name \"phase\""});
  check_error([&] { sink.write(0, "train", {{"", 1.0}}); }, {"metric name \"\" is empty"});
  check_error([&] { sink.write(0, "bad \xff utf-8", {}); }, {"cannot write", "as a JSON string"});
  CHECK(read_bytes(path) == "{\"phase\": \"train\"}\n");  // nothing written by the refused rows
}

TEST_CASE("MemoryMetricsSink: keeps rows in order, truncate_after drops later steps") {
  MemoryMetricsSink memory;
  MetricsSink& sink = memory;
  sink.write(0, "train", {{"loss", 2.0}});
  sink.write(5, "eval", {{"accuracy", kNan}});
  sink.write(10, "train", {{"loss", 1.0}, {"learning_rate", 0.1}});
  REQUIRE(memory.rows().size() == 3);
  CHECK(memory.rows()[1].step == 5);
  CHECK(memory.rows()[1].phase == "eval");
  CHECK(std::isnan(memory.rows()[1].metrics.at("accuracy")));
  CHECK(memory.rows()[2].metrics == Metrics{{"learning_rate", 0.1}, {"loss", 1.0}});
  sink.truncate_after(5);
  REQUIRE(memory.rows().size() == 2);
  CHECK(memory.rows()[1].step == 5);
  sink.write(6, "train", {});
  CHECK(memory.rows().back().step == 6);
  sink.truncate_after(-1);
  CHECK(memory.rows().empty());
  check_error([&] { sink.write(-1, "train", {}); }, {"MemoryMetricsSink", "step must be >= 0"});
  check_error([&] { sink.write(0, "", {}); }, {"MemoryMetricsSink", "phase must not be empty"});
  CHECK(memory.rows().empty());
}
