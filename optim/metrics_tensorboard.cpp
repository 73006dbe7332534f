// TensorBoard event files (see metrics_tensorboard.h).
//
// An event file is a sequence of TFRecords, each holding one serialized Event protobuf:
//
//   uint64 length                      little-endian, the number of data bytes
//   uint32 masked_crc32c(length bytes) little-endian, over the 8 bytes just written
//   byte   data[length]
//   uint32 masked_crc32c(data)
//
// where masked(c) = ((c >> 15) | (c << 17)) + 0xa282ead8 (mod 2^32): TFRecord rotates and
// offsets the CRC because the CRC of bytes that themselves end in a CRC is degenerate.
//
// The messages (tensorboard/compat/proto/event.proto and summary.proto), only the fields written:
//
//   Event      { double wall_time = 1;  int64 step = 2;
//                oneof what { string file_version = 3;  Summary summary = 5;
//                             SessionLog session_log = 7; } }     // 6 is the deprecated log_message
//   Summary    { repeated Value value = 1; }
//   Value      { string tag = 1;  oneof value { float simple_value = 2; } }
//   SessionLog { SessionStatus status = 1; }                    // START = 1
//
// Protobuf wire format: a field is a varint key (field_number << 3 | wire_type) then its value.
// Wire type 0: a varint (7 bits a byte, low group first, high bit set when more follow);
// 1: 8 little-endian bytes (double); 2: a varint length, then the bytes (strings, nested
// messages); 5: 4 little-endian bytes (float). The official serializers write fields in field
// number order and, proto3 style, leave out a wall_time or step equal to 0 (a oneof member such
// as simple_value is written even when 0); doing the same makes our bytes equal theirs.
#include "metrics_tensorboard.h"

#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <system_error>

#include <unistd.h>

#include "../base/error.h"

namespace ctrax {

namespace fs = std::filesystem;

namespace {

constexpr const char* kWho = "TensorBoardMetricsSink";

// CRC-32C one byte at a time: table[i] is the CRC register after shifting byte i through the
// reflected (LSB-first) polynomial 0x82F63B78.
constexpr std::array<uint32_t, 256> make_crc_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1u) != 0 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    table[i] = c;
  }
  return table;
}
constexpr std::array<uint32_t, 256> kCrcTable = make_crc_table();

uint32_t masked_crc(std::string_view bytes) {
  const uint32_t c = detail::crc32c(bytes);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

void put_varint(std::string& out, uint64_t v) {
  for (; v >= 0x80; v >>= 7) out += static_cast<char>((v & 0x7f) | 0x80);
  out += static_cast<char>(v);
}

void put_le(std::string& out, uint64_t v, int n_bytes) {
  for (int i = 0; i < n_bytes; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

void put_key(std::string& out, int field, int wire_type) {
  put_varint(out, static_cast<uint64_t>(field) << 3 | static_cast<uint64_t>(wire_type));
}

void put_bytes(std::string& out, int field, std::string_view bytes) {
  put_key(out, field, 2);
  put_varint(out, bytes.size());
  out += bytes;
}

// Round to nearest float. A double at or past FLT_MAX + half an ulp (2^128 - 2^103) rounds to
// infinity; converting it with a cast would be undefined behaviour, so it is done here.
float to_float(double v) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  if (std::isfinite(v) && std::fabs(v) >= 0x1.ffffffp127) return v > 0 ? inf : -inf;
  return static_cast<float>(v);
}

// Strict UTF-8 (no overlong forms, surrogates or code points past U+10FFFF), which is what
// protobuf parsers require of string fields.
bool valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    // Continuation bytes after the lead byte c; 4 marks a byte that cannot lead.
    const size_t n = c < 0x80                 ? 0
                     : c >= 0xC2 && c <= 0xDF ? 1
                     : c >= 0xE0 && c <= 0xEF ? 2
                     : c >= 0xF0 && c <= 0xF4 ? 3
                                              : 4;
    if (n == 4 || s.size() - i <= n) return false;
    for (size_t k = 1; k <= n; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      // The second byte's range is narrower after E0, ED, F0 and F4 (Unicode table 3-7).
      const unsigned lo = k == 1 && c == 0xE0 ? 0xA0 : k == 1 && c == 0xF0 ? 0x90 : 0x80;
      const unsigned hi = k == 1 && c == 0xED ? 0x9F : k == 1 && c == 0xF4 ? 0x8F : 0xBF;
      if (b < lo || b > hi) return false;
    }
    i += n + 1;
  }
  return true;
}

void require_name(const char* what, std::string_view name) {
  CTRAX_REQUIRE(!name.empty(), kWho, ": ", what, " must not be empty");
  CTRAX_REQUIRE(valid_utf8(name), kWho, ": ", what, " \"", name, "\" is not valid UTF-8 (protobuf strings must be)");
}

double system_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

double read_clock(const TensorBoardMetricsSink::Clock& clock) {
  const double t = clock();
  CTRAX_REQUIRE(std::isfinite(t) && t >= 0 && t < 1e18, kWho,
                ": the clock must give seconds since the Unix epoch, finite and in [0, 1e18), got ", t);
  return t;
}

// One Event (wall_time, step, then `payload` as field `what` of the oneof), framed as a TFRecord.
std::string event_record(double wall_time, int64_t step, int what, std::string_view payload) {
  std::string event;
  uint64_t wall_bits = 0;
  std::memcpy(&wall_bits, &wall_time, sizeof(wall_bits));
  if (wall_bits != 0) {  // +0.0 is proto3's default, left out
    put_key(event, 1, 1);
    put_le(event, wall_bits, 8);
  }
  if (step != 0) {
    put_key(event, 2, 0);
    put_varint(event, static_cast<uint64_t>(step));
  }
  put_bytes(event, what, payload);

  std::string record;
  put_le(record, event.size(), 8);
  put_le(record, masked_crc(record), 4);
  record += event;
  put_le(record, masked_crc(event), 4);
  return record;
}

std::string host_name() {
  std::array<char, 256> buf{};
  if (::gethostname(buf.data(), buf.size() - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf.data();
}

}  // namespace

uint32_t detail::crc32c(std::string_view bytes) {
  uint32_t c = 0xFFFFFFFFu;
  for (const char b : bytes) c = kCrcTable[(c ^ static_cast<unsigned char>(b)) & 0xFFu] ^ (c >> 8);
  return ~c;
}

struct TensorBoardMetricsSink::File {
  std::FILE* file = nullptr;
  bool failed = false;  // a write failed: the file may end in a partial record
  ~File() {
    if (file != nullptr) std::fclose(file);
  }
};

TensorBoardMetricsSink::TensorBoardMetricsSink(fs::path directory, Clock clock)
    : clock_(clock ? std::move(clock) : Clock(system_seconds)), file_(std::make_unique<File>()) {
  std::error_code ec;
  CTRAX_REQUIRE(fs::is_directory(directory, ec), kWho, ": ", directory, " is not an existing directory");
  const double wall_time = read_clock(clock_);
  std::array<char, 32> seconds{};
  std::snprintf(seconds.data(), seconds.size(), "%010lld", static_cast<long long>(wall_time));
  const std::string base = "events.out.tfevents." + std::string(seconds.data()) + "." + host_name() + "." +
                           std::to_string(::getpid());
  // "x" is O_EXCL: the file is created here or not at all, so neither an existing file nor one
  // another process creates at the same moment is ever written into.
  for (int n = 0; file_->file == nullptr; ++n) {
    path_ = directory / (n == 0 ? base : base + "." + std::to_string(n));
    file_->file = std::fopen(path_.c_str(), "wbx");
    if (file_->file == nullptr && errno != EEXIST)
      CTRAX_THROW(kWho, ": cannot create ", path_, ": ", std::strerror(errno));
  }
  // Unbuffered: each event goes out in one write, and a failed one leaves nothing behind in a
  // buffer for a later flush to append.
  std::setvbuf(file_->file, nullptr, _IONBF, 0);
  append(event_record(wall_time, 0, 3, "brain.Event:2"));
}

TensorBoardMetricsSink::~TensorBoardMetricsSink() = default;

void TensorBoardMetricsSink::write(int64_t step, std::string_view phase, const Metrics& metrics) {
  CTRAX_REQUIRE(step >= 0, kWho, ": the step must be >= 0 (steps count from 0), got ", step);
  require_name("the phase", phase);
  std::string summary;
  for (const auto& [name, value] : metrics) {
    require_name("a metric name", name);
    std::string entry;
    put_bytes(entry, 1, std::string(phase) + "/" + name);  // Value.tag
    const float f = to_float(value);
    uint32_t bits = 0;
    std::memcpy(&bits, &f, sizeof(bits));
    put_key(entry, 2, 5);  // Value.simple_value
    put_le(entry, bits, 4);
    put_bytes(summary, 1, entry);  // Summary.value
  }
  if (!metrics.empty()) append(event_record(read_clock(clock_), step, 5, summary));
}

void TensorBoardMetricsSink::truncate_after(int64_t step) {
  CTRAX_REQUIRE(step >= 0 && step < std::numeric_limits<int64_t>::max(), kWho,
                "::truncate_after: the step must be >= 0 and below the largest int64 (the marker goes at",
                " step + 1), got ", step);
  std::string start;
  put_key(start, 1, 0);  // SessionLog.status
  put_varint(start, 1);  // START
  // Twice: the TensorBoard server's loader takes the first START of a run for the session's
  // beginning and purges only from the second on; the standalone EventAccumulator purges on
  // every START, where the repeat is a no-op. See metrics_tensorboard.h.
  const std::string record = event_record(read_clock(clock_), step + 1, 7, start);
  append(record + record);
}

void TensorBoardMetricsSink::append(const std::string& records) {
  CTRAX_REQUIRE(!file_->failed, kWho, ": an earlier write to ", path_,
                " failed and may have left a partial record; write to a new sink");
  // One unbuffered write, so that a TensorBoard reading the file live sees the row now.
  if (std::fwrite(records.data(), 1, records.size(), file_->file) != records.size() || std::fflush(file_->file) != 0) {
    const int error = errno;
    file_->failed = true;
    CTRAX_THROW(kWho, ": cannot write to ", path_, ": ", std::strerror(error));
  }
}

}  // namespace ctrax
