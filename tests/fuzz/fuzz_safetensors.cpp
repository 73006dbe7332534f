// libFuzzer target: parse_safetensors_header on arbitrary bytes taken as a whole file.
//
// Every input must either be refused with ctrax::Error or give an index that honours what the
// header documents (io/safetensors.h): tensors sorted by offset, tiling the data buffer exactly,
// byte lengths that match dtype and shape, ranks of at most 8. Anything else (another exception,
// a crash, a sanitizer report, a broken invariant) is a finding.
#include <cstddef>
#include <cstdint>
#include <span>

#include "../../io/safetensors.h"
#include "../../base/error.h"

namespace {

void require(bool condition) {
  if (!condition) __builtin_trap();
}

void check_index(const ctrax::io::SafetensorsIndex& index, uint64_t file_size) {
  require(index.data_start >= 8 && index.data_start <= file_size);
  uint64_t covered = 0;
  for (const ctrax::io::SafetensorsEntry& e : index.entries) {
    require(!e.name.empty());
    require(e.shape.size() <= 8);
    require(e.begin == covered && e.begin <= e.end);
    unsigned __int128 bytes = ctrax::dtype_size(e.dtype);
    for (int64_t d : e.shape) {
      require(d >= 0);
      bytes *= static_cast<uint64_t>(d);
      if (bytes > (static_cast<unsigned __int128>(1) << 64)) bytes = static_cast<unsigned __int128>(1) << 64;
    }
    require(bytes == e.end - e.begin);
    covered = e.end;
  }
  require(index.data_start + covered == file_size);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> bytes(data, size);
  try {
    check_index(ctrax::io::parse_safetensors_header(bytes, size, "fuzz"), size);
  } catch (const ctrax::Error&) {
    // A refusal is the expected outcome for almost every input.
  }
  return 0;
}
