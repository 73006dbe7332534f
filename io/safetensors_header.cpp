// The safetensors header parser and the dtype names (see safetensors.h).
//
// Kept apart from the rest of safetensors.cpp so that it depends only on base/error.h,
// tensor/dtype.h (inline parts) and the JSON parser: the fuzz target (tests/fuzz/) compiles this
// file alone. It therefore never calls anything defined in another ctrax .cpp file.
//
// The JSON is read with a SAX handler rather than into a DOM: the handler checks the structure
// as the events arrive and stops at the first thing out of place, so a hostile header (nesting a
// million arrays deep, a shape of fifty million numbers) is refused after a few bytes instead of
// being built into a tree first. Memory stays proportional to what a valid header holds.
#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "../base/error.h"
#include "../tensor/dtype.h"
#include "safetensors.h"

namespace ctrax::io {

namespace {

using json = nlohmann::json;

// A name or token as it appears in a message: quoted, and cut short when long (a header may
// hold a 100 MB string).
std::string shown(const std::string& text) {
  constexpr size_t kMax = 64;
  if (text.size() <= kMax) return "'" + text + "'";
  return "'" + text.substr(0, kMax) + "...' (" + std::to_string(text.size()) + " bytes)";
}

std::optional<DType> dtype_from_name(const std::string& name) {
  if (name == "F32") return DType::float32;
  if (name == "F64") return DType::float64;
  if (name == "I32") return DType::int32;
  if (name == "I64") return DType::int64;
  if (name == "BOOL") return DType::boolean;
  return std::nullopt;
}

constexpr const char* kSupportedNames = "F32, F64, I32, I64, BOOL";

// One "name": {...} entry as read, before the cross-entry checks.
struct RawEntry {
  std::string name;
  std::optional<std::string> dtype;
  std::optional<std::vector<int64_t>> shape;
  std::optional<std::vector<uint64_t>> offsets;
};

// Validates the structure of the header while nlohmann's parser reads it. Each callback returns
// false (which stops the parser) after recording the reason in `error`.
//
// Depth 0 is outside everything, 1 inside the top-level object, 2 inside an entry or
// "__metadata__", 3 inside a "shape" or "data_offsets" array. Nothing valid goes deeper.
class HeaderHandler {
 public:
  std::vector<RawEntry> entries;
  std::map<std::string, std::string> metadata;
  std::string error;
  bool finished = false;

  bool null() { return scalar("null"); }
  bool boolean(bool) { return scalar("a boolean"); }
  bool number_integer(json::number_integer_t value) {
    if (depth_ == 3) {
      if (value < 0) return fail(array_holds() + " the negative number " + std::to_string(value));
      return array_element(static_cast<uint64_t>(value));
    }
    return scalar("a number");
  }
  bool number_unsigned(json::number_unsigned_t value) {
    if (depth_ == 3) return array_element(value);
    return scalar("a number");
  }
  bool number_float(json::number_float_t, const std::string& text) {
    if (depth_ == 3) return fail(array_holds() + " " + shown(text) + ", not a non-negative integer");
    return scalar("a number");
  }
  bool string(std::string& value) {
    if (depth_ == 2 && pending_ == Pending::metadata_value) {
      metadata[key_] = std::move(value);
      pending_ = Pending::none;
      return true;
    }
    if (depth_ == 2 && pending_ == Pending::dtype) {
      entries.back().dtype = std::move(value);
      pending_ = Pending::none;
      return true;
    }
    return scalar("a string");
  }
  bool binary(json::binary_t&) { return scalar("binary data"); }

  bool start_object(std::size_t) {
    if (depth_ == 0) {
      depth_ = 1;
      return true;
    }
    if (depth_ == 1 && pending_ == Pending::entry) {
      depth_ = 2;
      mode_ = Mode::entry;
      pending_ = Pending::none;
      entries.push_back(RawEntry{key_, {}, {}, {}});
      return true;
    }
    if (depth_ == 1 && pending_ == Pending::metadata) {
      depth_ = 2;
      mode_ = Mode::metadata;
      pending_ = Pending::none;
      return true;
    }
    return scalar("an object");
  }
  bool end_object() {
    --depth_;
    if (depth_ == 0) finished = true;
    return true;
  }
  bool start_array(std::size_t) {
    if (depth_ == 2 && (pending_ == Pending::shape || pending_ == Pending::offsets)) {
      depth_ = 3;
      array_ = pending_;
      pending_ = Pending::none;
      values_.clear();
      return true;
    }
    return scalar("an array");
  }
  bool end_array() {
    RawEntry& entry = entries.back();
    if (array_ == Pending::shape) {
      entry.shape = values_as_dims();
    } else {
      if (values_.size() != 2)
        return fail("tensor " + shown(entry.name) + " has " + std::to_string(values_.size()) +
                    " data_offsets; expected two, [begin, end]");
      entry.offsets = values_;
    }
    depth_ = 2;
    return true;
  }
  bool key(std::string& name) {
    if (depth_ == 1) {
      if (!top_keys_.insert(name).second) return fail("the header names " + shown(name) + " twice");
      pending_ = name == "__metadata__" ? Pending::metadata : Pending::entry;
      key_ = std::move(name);
      return true;
    }
    if (mode_ == Mode::metadata) {
      // The top-level duplicate check does not see inside "__metadata__"; a repeated key there
      // would otherwise silently keep one of the two values.
      if (metadata.count(name)) return fail("__metadata__ names " + shown(name) + " twice");
      pending_ = Pending::metadata_value;
      key_ = std::move(name);
      return true;
    }
    RawEntry& entry = entries.back();
    const bool repeated = (name == "dtype" && entry.dtype) || (name == "shape" && entry.shape) ||
                          (name == "data_offsets" && entry.offsets);
    if (repeated) return fail("tensor " + shown(entry.name) + " has the key " + shown(name) + " twice");
    if (name == "dtype") pending_ = Pending::dtype;
    else if (name == "shape") pending_ = Pending::shape;
    else if (name == "data_offsets") pending_ = Pending::offsets;
    else
      return fail("tensor " + shown(entry.name) + " has the unknown key " + shown(name) +
                  " (expected exactly dtype, shape, data_offsets)");
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const json::exception& e) {
    // nlohmann's message quotes the last token read, which may be huge: keep the start.
    std::string what = e.what();
    if (what.size() > 200) what = what.substr(0, 200) + "...";
    return fail("the header is not valid JSON (at byte " + std::to_string(position) + " of the header): " + what);
  }

 private:
  enum class Mode { entry, metadata };
  // What the next value must be (set by the key before it).
  enum class Pending { none, entry, metadata, metadata_value, dtype, shape, offsets };

  bool fail(std::string reason) {
    if (error.empty()) error = std::move(reason);
    return false;
  }

  // "the shape of tensor 'a' holds" / "the data_offsets of tensor 'a' hold"
  std::string array_holds() const {
    if (array_ == Pending::shape) return "the shape of tensor " + shown(entries.back().name) + " holds";
    return "the data_offsets of tensor " + shown(entries.back().name) + " hold";
  }

  // A value of a type that has no place where it appeared.
  bool scalar(const char* what) {
    if (depth_ == 0) return fail(std::string("the header is ") + what + ", not a JSON object");
    if (depth_ == 1) {
      if (pending_ == Pending::metadata)
        return fail(std::string("__metadata__ is ") + what + ", not an object of strings");
      return fail("the entry of " + shown(key_) + " is " + what + ", not an object");
    }
    if (depth_ == 2 && mode_ == Mode::metadata)
      return fail("__metadata__ maps " + shown(key_) + " to " + what + ", not a string");
    if (depth_ == 2) {
      const std::string& name = entries.back().name;
      if (pending_ == Pending::dtype) return fail("tensor " + shown(name) + " has a dtype that is " + what + ", not a string");
      if (pending_ == Pending::shape) return fail("tensor " + shown(name) + " has a shape that is " + what + ", not an array");
      return fail("tensor " + shown(name) + " has data_offsets that are " + what + ", not an array");
    }
    return fail(array_holds() + " " + what + ", not a non-negative integer");
  }

  bool array_element(uint64_t value) {
    if (array_ == Pending::shape && values_.size() == static_cast<size_t>(kMaxRank))
      return fail("tensor " + shown(entries.back().name) + " has a shape of more than " + std::to_string(kMaxRank) +
                  " dimensions (ctrax supports ranks 0 to " + std::to_string(kMaxRank) + ")");
    if (array_ == Pending::offsets && values_.size() == 2)
      return fail("tensor " + shown(entries.back().name) + " has more than two data_offsets; expected [begin, end]");
    if (array_ == Pending::shape && value > static_cast<uint64_t>(INT64_MAX))
      return fail("tensor " + shown(entries.back().name) + " has the dimension " + std::to_string(value) +
                  ", larger than 2^63 - 1");
    values_.push_back(value);
    return true;
  }

  std::vector<int64_t> values_as_dims() const {
    std::vector<int64_t> dims;
    for (uint64_t v : values_) dims.push_back(static_cast<int64_t>(v));
    return dims;
  }

  int depth_ = 0;
  Mode mode_ = Mode::entry;
  Pending pending_ = Pending::none;
  Pending array_ = Pending::none;
  std::string key_;
  std::set<std::string> top_keys_;
  std::vector<uint64_t> values_;
};

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string range_text(const SafetensorsEntry& e) {
  return "[" + std::to_string(e.begin) + ", " + std::to_string(e.end) + ")";
}

}  // namespace

const char* safetensors_dtype_name(DType dtype) {
  switch (dtype) {
    case DType::float32: return "F32";
    case DType::float64: return "F64";
    case DType::int32: return "I32";
    case DType::int64: return "I64";
    case DType::boolean: return "BOOL";
  }
  CTRAX_THROW("safetensors_dtype_name: invalid dtype value ", static_cast<int>(dtype));
}

DType dtype_from_safetensors_name(const std::string& name, const std::string& source) {
  const std::optional<DType> dtype = dtype_from_name(name);
  if (!dtype) CTRAX_THROW(source, ": the dtype ", shown(name), " is not supported (ctrax reads ", kSupportedNames, ")");
  return *dtype;
}

namespace {

[[noreturn]] void fail_at(const std::string& source, const std::string& reason) { throw Error(source + ": " + reason); }

// The little-endian header size of the first 8 bytes, checked against the limit and the file.
uint64_t read_header_size(std::span<const uint8_t> file_prefix, uint64_t file_size, const std::string& source) {
  if (file_size < 8)
    fail_at(source, "the file is " + std::to_string(file_size) +
                        " bytes, too short for a safetensors file (it starts with an 8-byte header size)");
  if (file_prefix.size() < 8)
    fail_at(source, "parse_safetensors_header was given fewer than the first 8 bytes of the file");
  uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) header_size = (header_size << 8) | file_prefix[static_cast<size_t>(i)];
  if (header_size > kMaxSafetensorsHeaderBytes)
    fail_at(source, "the header size " + std::to_string(header_size) + " exceeds the limit of " +
                        std::to_string(kMaxSafetensorsHeaderBytes) + " bytes (a corrupted or hostile file?)");
  if (header_size > file_size - 8)
    fail_at(source, "the header size " + std::to_string(header_size) + " runs past the end of the file (" +
                        std::to_string(file_size) + " bytes; the file is truncated or corrupted)");
  if (file_prefix.size() < 8 + header_size)
    fail_at(source, "parse_safetensors_header was given " + std::to_string(file_prefix.size()) +
                        " bytes, fewer than the " + std::to_string(8 + header_size) + " the header occupies");
  return header_size;
}

// Bytes = product of the dimensions * element size, in checked 64-bit arithmetic (nullopt on
// overflow). A zero dimension makes the tensor empty whatever the others are.
std::optional<uint64_t> byte_size(const std::vector<int64_t>& shape, DType dtype) {
  uint64_t numel = 1;
  bool overflow = false;
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) {
    numel = 0;
  } else {
    for (int64_t d : shape) overflow = overflow || __builtin_mul_overflow(numel, static_cast<uint64_t>(d), &numel);
  }
  uint64_t nbytes = 0;
  overflow = overflow || numel > static_cast<uint64_t>(INT64_MAX) ||
             __builtin_mul_overflow(numel, static_cast<uint64_t>(dtype_size(dtype)), &nbytes);
  if (overflow) return std::nullopt;
  return nbytes;
}

// One header entry, complete and consistent with its bytes within the data buffer.
SafetensorsEntry checked_entry(RawEntry& raw, uint64_t data_size, const std::string& source) {
  const std::string name = shown(raw.name);
  if (raw.name.empty()) fail_at(source, "a tensor has an empty name");
  if (!raw.dtype) fail_at(source, "tensor " + name + " has no dtype");
  if (!raw.shape) fail_at(source, "tensor " + name + " has no shape");
  if (!raw.offsets) fail_at(source, "tensor " + name + " has no data_offsets");
  const std::optional<DType> dtype = dtype_from_name(*raw.dtype);
  if (!dtype)
    fail_at(source, "tensor " + name + " has the dtype " + shown(*raw.dtype) +
                        ", which ctrax does not support (it reads " + kSupportedNames + ")");
  SafetensorsEntry entry;
  entry.name = std::move(raw.name);
  entry.dtype = *dtype;
  entry.shape = std::move(*raw.shape);
  entry.begin = (*raw.offsets)[0];
  entry.end = (*raw.offsets)[1];
  const std::optional<uint64_t> nbytes = byte_size(entry.shape, entry.dtype);
  if (!nbytes)
    fail_at(source, "tensor " + name + " has the shape " + shape_text(entry.shape) + " whose size in bytes (dtype " +
                        *raw.dtype + ") overflows 64 bits");
  if (entry.begin > entry.end)
    fail_at(source, "tensor " + name + " has data_offsets [" + std::to_string(entry.begin) + ", " +
                        std::to_string(entry.end) + "] with begin > end");
  if (entry.end - entry.begin != *nbytes)
    fail_at(source, "tensor " + name + " of dtype " + *raw.dtype + " and shape " + shape_text(entry.shape) +
                        " needs " + std::to_string(*nbytes) + " bytes, but its data_offsets " + range_text(entry) +
                        " span " + std::to_string(entry.end - entry.begin));
  if (entry.end > data_size)
    fail_at(source, "tensor " + name + " has data_offsets " + range_text(entry) +
                        " past the end of the file (the data buffer holds " + std::to_string(data_size) +
                        " bytes; the file is truncated or corrupted)");
  return entry;
}

// The tensors, in offset order, must tile [0, data_size) exactly. Ties (empty tensors at the
// same offset) are ordered by name so the order never depends on the header's key order.
void sort_and_check_tiling(std::vector<SafetensorsEntry>& entries, uint64_t data_size, const std::string& source) {
  std::sort(entries.begin(), entries.end(), [](const SafetensorsEntry& a, const SafetensorsEntry& b) {
    if (a.begin != b.begin) return a.begin < b.begin;
    if (a.end != b.end) return a.end < b.end;
    return a.name < b.name;
  });
  uint64_t covered = 0;
  const SafetensorsEntry* previous = nullptr;
  for (const SafetensorsEntry& e : entries) {
    if (e.begin > covered) {
      if (previous == nullptr)
        fail_at(source, "the first tensor, " + shown(e.name) + ", starts at data offset " + std::to_string(e.begin) +
                            ", not 0 (a gap of unused bytes)");
      fail_at(source, "a gap of " + std::to_string(e.begin - covered) + " unused bytes lies between tensor " +
                          shown(previous->name) + " " + range_text(*previous) + " and tensor " + shown(e.name) + " " +
                          range_text(e));
    }
    if (e.begin < covered)
      fail_at(source, "tensor " + shown(e.name) + " " + range_text(e) + " overlaps tensor " + shown(previous->name) +
                          " " + range_text(*previous));
    covered = e.end;
    previous = &e;
  }
  if (covered != data_size)
    fail_at(source, "the tensors end at data offset " + std::to_string(covered) + " but the data buffer holds " +
                        std::to_string(data_size) + " bytes (" + std::to_string(data_size - covered) +
                        " trailing bytes belong to no tensor)");
}

}  // namespace

SafetensorsIndex parse_safetensors_header(std::span<const uint8_t> file_prefix, uint64_t file_size,
                                          const std::string& source) {
  const uint64_t header_size = read_header_size(file_prefix, file_size, source);
  HeaderHandler handler;
  const char* text = reinterpret_cast<const char*>(file_prefix.data()) + 8;
  bool ok = false;
  try {
    ok = json::sax_parse(text, text + header_size, &handler);
  } catch (const json::exception& e) {
    handler.error = std::string("the header is not valid JSON: ") + e.what();
  }
  if (!handler.error.empty()) fail_at(source, handler.error);
  CTRAX_CHECK(ok && handler.finished, "the JSON parser stopped without a reason");

  SafetensorsIndex index;
  index.data_start = 8 + header_size;
  index.metadata = std::move(handler.metadata);
  const uint64_t data_size = file_size - index.data_start;
  for (RawEntry& raw : handler.entries) index.entries.push_back(checked_entry(raw, data_size, source));
  sort_and_check_tiling(index.entries, data_size, source);
  return index;
}

}  // namespace ctrax::io
