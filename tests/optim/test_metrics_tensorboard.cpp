// TensorBoardMetricsSink: byte-exact files against TensorBoard's own writer (the fixture of
// tests/fixtures/tensorboard_events.py), a reader of our own that checks the TFRecord framing,
// both CRCs and every Event field, CRC-32C check values, file naming without clobbering,
// the truncate_after marker, float rounding, write failures and every refusal.
#include <doctest/doctest.h>

#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <limits>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <sys/resource.h>
#include <unistd.h>

#include <ctrax/base/error.h>
#include <ctrax/optim/metrics_tensorboard.h>

#include "io/temp_dir.h"

using namespace ctrax;
using test::read_bytes;
using test::TempDir;
using test::write_bytes;
namespace fs = std::filesystem;

namespace {

const fs::path kFixtures = fs::path(CTRAX_FIXTURES_DIR) / "tensorboard";
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// What one Event holds, as far as the sink writes Events.
struct Event {
  double wall_time = 0;
  int64_t step = 0;
  std::string file_version;
  std::vector<std::pair<std::string, float>> values;  // Summary.value, in file order
  int64_t session_status = -1;                        // SessionLog.status, -1 when absent
};

// A protobuf wire-format reader just big enough for Events; anything unexpected fails the test.
class Wire {
 public:
  explicit Wire(std::string_view bytes) : bytes_(bytes) {}
  bool done() const { return pos_ == bytes_.size(); }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
      REQUIRE(pos_ < bytes_.size());
      REQUIRE(shift < 64);
      const auto c = static_cast<unsigned char>(bytes_[pos_++]);
      v |= static_cast<uint64_t>(c & 0x7f) << shift;
      if ((c & 0x80) == 0) return v;
    }
  }
  uint64_t fixed(size_t n) {  // little-endian
    REQUIRE(bytes_.size() - pos_ >= n);
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(bytes_[pos_ + i])) << (8 * i);
    pos_ += n;
    return v;
  }
  std::string_view bytes() {
    const uint64_t n = varint();
    REQUIRE(n <= bytes_.size() - pos_);
    const std::string_view out = bytes_.substr(pos_, n);
    pos_ += n;
    return out;
  }

 private:
  std::string_view bytes_;
  size_t pos_ = 0;
};

constexpr uint64_t key(int field, int wire_type) {
  return static_cast<uint64_t>(field) << 3 | static_cast<uint64_t>(wire_type);
}

Event parse_event(std::string_view data) {
  Event e;
  for (Wire w(data); !w.done();) {
    const uint64_t k = w.varint();
    if (k == key(1, 1)) {
      const uint64_t bits = w.fixed(8);
      std::memcpy(&e.wall_time, &bits, sizeof(bits));
    } else if (k == key(2, 0)) {
      e.step = static_cast<int64_t>(w.varint());
    } else if (k == key(3, 2)) {
      e.file_version = w.bytes();
    } else if (k == key(5, 2)) {
      for (Wire summary(w.bytes()); !summary.done();) {
        REQUIRE(summary.varint() == key(1, 2));
        Wire value(summary.bytes());
        REQUIRE(value.varint() == key(1, 2));
        const std::string tag(value.bytes());
        REQUIRE(value.varint() == key(2, 5));
        const auto bits = static_cast<uint32_t>(value.fixed(4));
        REQUIRE(value.done());
        float f = 0;
        std::memcpy(&f, &bits, sizeof(f));
        e.values.emplace_back(tag, f);
      }
    } else if (k == key(7, 2)) {
      Wire log(w.bytes());
      REQUIRE(log.varint() == key(1, 0));
      e.session_status = static_cast<int64_t>(log.varint());
      REQUIRE(log.done());
    } else {
      FAIL("unexpected Event field key " << k);
    }
  }
  return e;
}

uint32_t masked(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

// Splits an event file into its TFRecords, checking the length CRC and the data CRC of each.
std::vector<Event> read_events(const std::string& file) {
  std::vector<Event> events;
  for (size_t pos = 0; pos < file.size();) {
    REQUIRE(file.size() - pos >= 16);
    Wire header(std::string_view(file).substr(pos, 12));
    const uint64_t length = header.fixed(8);
    CHECK(header.fixed(4) == masked(detail::crc32c(std::string_view(file).substr(pos, 8))));
    REQUIRE(file.size() - pos - 16 >= length);
    const std::string_view data = std::string_view(file).substr(pos + 12, length);
    Wire footer(std::string_view(file).substr(pos + 12 + length, 4));
    CHECK(footer.fixed(4) == masked(detail::crc32c(data)));
    events.push_back(parse_event(data));
    pos += 16 + length;
  }
  return events;
}

bool same_float(float a, float b) { return std::signbit(a) == std::signbit(b) && (a == b || (a != a && b != b)); }

std::string host_name() {
  char buf[256] = {};
  return ::gethostname(buf, sizeof(buf) - 1) == 0 && buf[0] != '\0' ? std::string(buf) : std::string("localhost");
}

// A clock that returns `t` every time.
TensorBoardMetricsSink::Clock fixed_clock(double t) {
  return [t] { return t; };
}

}  // namespace

TEST_CASE("TensorBoard: crc32c gives the standard check values") {
  CHECK(detail::crc32c("123456789") == 0xE3069283u);
  CHECK(detail::crc32c("") == 0u);
  // RFC 3720 (iSCSI), appendix B.4.
  CHECK(detail::crc32c(std::string(32, '\0')) == 0x8A9136AAu);
  CHECK(detail::crc32c(std::string(32, '\xff')) == 0x62A8AB43u);
  std::string ascending(32, '\0');
  for (size_t i = 0; i < ascending.size(); ++i) ascending[i] = static_cast<char>(i);
  CHECK(detail::crc32c(ascending) == 0x46DD794Eu);
}

TEST_CASE("TensorBoard: event files are byte for byte those of TensorBoard's own writer") {
  // tests/fixtures/tensorboard_events.py wrote python_written/ with TensorBoard's RecordWriter
  // and protobuf classes, and loads ctrax_written/ with TensorBoard's EventAccumulator.
  // CTRAX_REGENERATE_FIXTURES=1 rewrites ctrax_written/ (then run the script again).
  const nlohmann::json expected = nlohmann::json::parse(read_bytes(kFixtures / "expected.json"));
  const char* regenerate = std::getenv("CTRAX_REGENERATE_FIXTURES");
  TempDir dir;
  for (const nlohmann::json& entry : expected.at("files")) {
    const std::string name = entry.at("name").get<std::string>();
    INFO("file ", name);
    const auto readings = entry.at("clock").get<std::vector<double>>();
    size_t next = 0;
    fs::path written;
    {
      TensorBoardMetricsSink sink(dir.path(), [&] {
        REQUIRE(next < readings.size());
        return readings[next++];
      });
      for (const nlohmann::json& op : entry.at("ops")) {
        if (op.contains("truncate_after")) {
          sink.truncate_after(op.at("truncate_after").get<int64_t>());
          continue;
        }
        Metrics metrics;
        for (const auto& [metric, v] : op.at("metrics").items())
          metrics[metric] = v.is_string() ? std::stod(v.get<std::string>()) : v.get<double>();  // "nan", "inf", "-inf"
        sink.write(op.at("step").get<int64_t>(), op.at("phase").get<std::string>(), metrics);
      }
      written = sink.path();
    }
    CHECK(next == readings.size());  // the clock is read once per event
    if (regenerate != nullptr && std::string(regenerate) == "1") {
      fs::create_directories(kFixtures / "ctrax_written");
      fs::copy_file(written, kFixtures / "ctrax_written" / name, fs::copy_options::overwrite_existing);
      MESSAGE("rewrote ctrax_written/", name, "; run tests/fixtures/tensorboard_events.py to check it");
    }
    const std::string bytes = read_bytes(written);
    CHECK(bytes == read_bytes(kFixtures / "python_written" / name));
    CHECK(bytes == read_bytes(kFixtures / "ctrax_written" / name));
    CHECK(read_events(bytes).front().file_version == "brain.Event:2");
  }
}

TEST_CASE("TensorBoard: file name, file_version first, one event per row, flushed as written") {
  TempDir dir;
  const double before = static_cast<double>(std::time(nullptr));
  TensorBoardMetricsSink sink(dir.path());  // the system clock
  const std::string name = sink.path().filename().string();
  CHECK(sink.path().parent_path() == dir.path());
  // events.out.tfevents.<10-digit unix seconds>.<hostname>.<pid>
  const std::string prefix = "events.out.tfevents.";
  const std::string suffix = "." + host_name() + "." + std::to_string(::getpid());
  REQUIRE(name.size() == prefix.size() + 10 + suffix.size());
  CHECK(name.starts_with(prefix));
  CHECK(name.ends_with(suffix));
  const double seconds = std::stod(name.substr(prefix.size(), 10));
  CHECK(seconds >= before);
  CHECK(seconds <= before + 60);

  const float fmax = std::numeric_limits<float>::max();
  const double below_halfway = std::nextafter(0x1.ffffffp127, 0.0);  // rounds down to FLT_MAX
  sink.write(0, "train", {{"loss", 0.1}, {"accuracy", -0.0}, {"nan", kNan}});
  sink.write(7, "rl", {{"return", 1e300}, {"low", -kInf}, {"max", below_halfway}, {"over", 0x1.ffffffp127}});
  sink.write(8, "rl", {});  // nothing to write
  // Every row is in the file while the sink is still open.
  const std::vector<Event> events = read_events(read_bytes(sink.path()));
  REQUIRE(events.size() == 3);
  CHECK(events[0].file_version == "brain.Event:2");
  CHECK(events[0].values.empty());
  CHECK(events[0].wall_time >= before);
  CHECK(static_cast<int64_t>(events[0].wall_time) == static_cast<int64_t>(seconds));
  const std::vector<std::pair<std::string, float>> row0 = {
      {"train/accuracy", -0.0f}, {"train/loss", 0.1f}, {"train/nan", std::numeric_limits<float>::quiet_NaN()}};
  const std::vector<std::pair<std::string, float>> row1 = {
      {"rl/low", -std::numeric_limits<float>::infinity()},
      {"rl/max", fmax},
      {"rl/over", std::numeric_limits<float>::infinity()},
      {"rl/return", std::numeric_limits<float>::infinity()}};
  for (const auto& [event, row, step] : {std::tuple{events[1], row0, 0}, std::tuple{events[2], row1, 7}}) {
    CHECK(event.step == step);
    CHECK(event.file_version.empty());
    CHECK(event.session_status == -1);
    CHECK(event.wall_time >= events[0].wall_time);
    REQUIRE(event.values.size() == row.size());
    for (size_t i = 0; i < row.size(); ++i) {
      CHECK(event.values[i].first == row[i].first);
      CHECK(same_float(event.values[i].second, row[i].second));
    }
  }
}

TEST_CASE("TensorBoard: a new sink never writes into an existing file") {
  TempDir dir;
  const std::string base = "events.out.tfevents.0000001234." + host_name() + "." + std::to_string(::getpid());
  write_bytes(dir / base, "keep");
  write_bytes(dir / (base + ".1"), "keep too");
  TensorBoardMetricsSink first(dir.path(), fixed_clock(1234.5));
  CHECK(first.path() == dir / (base + ".2"));
  TensorBoardMetricsSink second(dir.path(), fixed_clock(1234.75));  // the same second
  CHECK(second.path() == dir / (base + ".3"));
  first.write(1, "train", {{"loss", 1.0}});
  CHECK(read_bytes(dir / base) == "keep");
  CHECK(read_bytes(dir / (base + ".1")) == "keep too");
  CHECK(read_events(read_bytes(first.path())).size() == 2);
  CHECK(read_events(read_bytes(second.path())).size() == 1);
}

TEST_CASE("TensorBoard: truncate_after appends two SessionLog STARTs at step + 1") {
  TempDir dir;
  TensorBoardMetricsSink sink(dir.path(), fixed_clock(1700000000.5));
  for (int64_t step = 0; step < 4; ++step) sink.write(step, "train", {{"loss", static_cast<double>(step)}});
  sink.truncate_after(1);
  sink.write(2, "train", {{"loss", 20.0}});
  sink.truncate_after(0);
  const std::vector<Event> events = read_events(read_bytes(sink.path()));
  REQUIRE(events.size() == 10);  // append-only: the rows of steps 2 and 3 are still in the file
  // Two markers each (TensorBoard's server takes a run's first START for its beginning).
  for (const size_t i : {size_t{5}, size_t{6}, size_t{8}, size_t{9}}) {
    CHECK(events[i].session_status == 1);  // START
    CHECK(events[i].values.empty());
    CHECK(events[i].wall_time == 1700000000.5);
    CHECK(events[i].step == (i < 8 ? 2 : 1));
  }
  CHECK(events[7].step == 2);
  CHECK(events[7].values == std::vector<std::pair<std::string, float>>{{"train/loss", 20.0f}});
}

TEST_CASE("TensorBoard: bad inputs throw ctrax::Error naming what is wrong") {
  TempDir dir;
  const std::string missing = (dir / "missing").string();
  CHECK_THROWS_WITH_AS(TensorBoardMetricsSink(dir / "missing"), doctest::Contains(missing.c_str()), ctrax::Error);
  write_bytes(dir / "plain", "x");
  CHECK_THROWS_WITH_AS(TensorBoardMetricsSink(dir / "plain"), doctest::Contains("is not an existing directory"),
                       ctrax::Error);
  // A directory nobody may create files in, not even root.
  if (fs::is_directory("/proc"))
    CHECK_THROWS_WITH_AS(TensorBoardMetricsSink("/proc"),
                         doctest::Contains("cannot create \"/proc/events.out.tfevents."), ctrax::Error);
  if (::geteuid() != 0) {  // root ignores permission bits
    fs::create_directory(dir / "read_only");
    fs::permissions(dir / "read_only", fs::perms::owner_read | fs::perms::owner_exec);
    CHECK_THROWS_WITH_AS(TensorBoardMetricsSink(dir / "read_only"), doctest::Contains((dir / "read_only").c_str()),
                         ctrax::Error);
  }
  for (const double bad : {kNan, -1.0, kInf, 1e18})
    CHECK_THROWS_WITH_AS(TensorBoardMetricsSink(dir.path(), fixed_clock(bad)),
                         doctest::Contains("the clock must give seconds since the Unix epoch"), ctrax::Error);
  CHECK(test::list_dir(dir.path()) == std::vector<std::string>{"plain"});  // none left a file behind

  double now = 100.0;
  TensorBoardMetricsSink sink(dir.path(), [&] { return now; });
  const std::string before = read_bytes(sink.path());
  CHECK_THROWS_WITH_AS(sink.write(0, "", {{"loss", 1.0}}), doctest::Contains("the phase must not be empty"),
                       ctrax::Error);
  CHECK_THROWS_WITH_AS(sink.write(-1, "train", {{"loss", 1.0}}), doctest::Contains("the step must be >= 0"),
                       ctrax::Error);
  CHECK_THROWS_WITH_AS(sink.write(0, "train", {{"loss", 1.0}, {"", 2.0}}),
                       doctest::Contains("a metric name must not be empty"), ctrax::Error);
  // Not UTF-8: a lone continuation byte, an overlong '/', a surrogate, past U+10FFFF, cut short.
  for (const std::string bad : {"\x80", "\xC0\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xE2\x82", "ok\xFF"}) {
    CHECK_THROWS_WITH_AS(sink.write(0, bad, {{"loss", 1.0}}), doctest::Contains("is not valid UTF-8"), ctrax::Error);
    CHECK_THROWS_WITH_AS(sink.write(0, "train", {{bad, 1.0}}), doctest::Contains("is not valid UTF-8"), ctrax::Error);
  }
  CHECK_THROWS_WITH_AS(sink.truncate_after(-1), doctest::Contains("got -1"), ctrax::Error);
  CHECK_THROWS_WITH_AS(sink.truncate_after(std::numeric_limits<int64_t>::max()),
                       doctest::Contains("below the largest int64"), ctrax::Error);
  now = -5.0;
  CHECK_THROWS_WITH_AS(sink.write(0, "train", {{"loss", 1.0}}), doctest::Contains("got -5"), ctrax::Error);
  CHECK(read_bytes(sink.path()) == before);  // no refused row wrote anything
  now = 101.0;
  sink.write(0, "\xC3\xA9tat", {{"\xF0\x9F\x98\x80", 1.0}});  // é and an emoji are fine
  CHECK(read_events(read_bytes(sink.path())).back().values.front().first == "\xC3\xA9tat/\xF0\x9F\x98\x80");
}

namespace {
// Lowers the soft file-size limit for one scope, so that writing past `bytes` into any file fails
// with EFBIG (SIGXFSZ, which would kill the process, is ignored meanwhile).
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &old_);
    old_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    rlimit lower = old_;
    lower.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &lower);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &old_);
    std::signal(SIGXFSZ, old_handler_);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

 private:
  rlimit old_{};
  void (*old_handler_)(int) = nullptr;
};
}  // namespace

TEST_CASE("TensorBoard: a failed write throws naming the file, and later writes refuse") {
  TempDir dir;
  TensorBoardMetricsSink sink(dir.path(), fixed_clock(1.0));
  const auto size = static_cast<rlim_t>(fs::file_size(sink.path()));
  std::string message;
  {
    FileSizeLimit limit(size + 8);  // the next record is longer than 8 bytes
    try {
      sink.write(1, "train", {{"loss", 1.0}});
    } catch (const ctrax::Error& e) {
      message = e.what();
    }
  }
  CHECK(message.find("cannot write to \"" + sink.path().string() + "\"") != std::string::npos);
  CHECK(message.find(std::strerror(EFBIG)) != std::string::npos);
  CHECK_THROWS_WITH_AS(sink.write(2, "train", {{"loss", 1.0}}), doctest::Contains("an earlier write to"), ctrax::Error);
  CHECK_THROWS_WITH_AS(sink.truncate_after(0), doctest::Contains(sink.path().c_str()), ctrax::Error);
}
