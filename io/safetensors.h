// safetensors: named tensors in one file that Python's safetensors library (and PyTorch, JAX,
// Hugging Face tooling) reads and writes; the tensor payload of checkpoints (io/checkpoint.h)
// and the way to exchange weights with Python. No memory-mapping (the loader copies each tensor
// into ctrax storage); dtypes ctrax has no tensor for (F16, BF16, U8, ...) are refused.
//
// The format (https://github.com/huggingface/safetensors, "Format"): an unsigned 64-bit
// little-endian header size N; N bytes of UTF-8 JSON, for each tensor
// "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, optionally
// "__metadata__": {string: string}; then the data, row-major and little-endian, [begin, end)
// being byte offsets into it. ctrax pads the header with spaces to a multiple of 8 bytes and
// writes the tensors in name order, contiguous from offset 0.
// Loading trusts nothing: parse_safetensors_header checks every size, offset, dtype and shape
// against the real file before any tensor is allocated (the checks: docs/tour.md,
// "Checkpoints"); any failure throws ctrax::Error "<file>: <reason>".
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "../tensor/dtype.h"
#include "../tensor/tensor.h"

namespace ctrax::io {

// Larger headers are refused (the Python library uses the same limit).
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;

// One tensor as the header describes it.
struct SafetensorsEntry {
  std::string name;
  DType dtype = DType::float32;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // byte offsets into the data buffer (relative to its start)
  uint64_t end = 0;
};

// A validated header.
struct SafetensorsIndex {
  uint64_t data_start = 0;                      // 8 + header size: where the data buffer begins
  std::vector<SafetensorsEntry> entries;        // sorted by begin offset
  std::map<std::string, std::string> metadata;  // "__metadata__", if any
};

// Parses and validates the header of a safetensors file of `file_size` bytes whose first bytes
// are `file_prefix` (at least the first 8 + N bytes, or the whole file when shorter). `source`
// names the file in error messages. Depends on nothing but the JSON parser, so the fuzz target
// (tests/fuzz/) drives it directly.
SafetensorsIndex parse_safetensors_header(std::span<const uint8_t> file_prefix, uint64_t file_size,
                                          const std::string& source);

// safetensors dtype names ("F32", "F64", "I32", "I64", "BOOL") and back; the second throws
// ctrax::Error listing the supported names.
const char* safetensors_dtype_name(DType dtype);
DType dtype_from_safetensors_name(const std::string& name, const std::string& source);

struct SafetensorsContents {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> metadata;
};

// What a save wrote: the file's size and its io::xxh3_64.
struct SavedFile {
  uint64_t bytes = 0;
  uint64_t checksum = 0;
};

// Writes `tensors` (any strides; written row-major) and `metadata` to `path` atomically
// (io/atomic_file.h): a reader sees the old file or the new one, never a mix. Throws
// ctrax::Error for an empty name, a name "__metadata__", a non-CPU tensor, or I/O failure.
SavedFile save_safetensors(const std::filesystem::path& path, const std::map<std::string, Tensor>& tensors,
                           const std::map<std::string, std::string>& metadata = {});

// The bytes save_safetensors writes (for tests and for in-memory use).
std::string encode_safetensors(const std::map<std::string, Tensor>& tensors,
                               const std::map<std::string, std::string>& metadata = {});

// Reads and validates a whole file (see above); each tensor is a new contiguous CPU tensor.
SafetensorsContents load_safetensors(const std::filesystem::path& path);
// The same from bytes in memory; `source` names them in error messages.
SafetensorsContents decode_safetensors(std::span<const uint8_t> bytes, const std::string& source);

}  // namespace ctrax::io
