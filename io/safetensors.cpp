// Writing and reading safetensors files (see safetensors.h). The header parser and the dtype
// names are in safetensors_header.cpp.
//
// Both directions stream: saving writes the header and then each tensor's bytes straight from
// its storage (a strided tensor is made contiguous one at a time), loading reads each tensor's
// bytes straight into its new storage. Neither builds a second copy of the whole file.
#include "safetensors.h"

#include <bit>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "../base/error.h"
#include "atomic_file.h"
#include "posix_file.h"

namespace ctrax::io {

// The format is little-endian; ctrax copies tensor memory as is, which is right only on a
// little-endian machine (every platform ctrax targets).
static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes a little-endian machine");

namespace {

using json = nlohmann::json;

// The validated header bytes (size prefix + padded JSON) and the tensors in the order and at the
// offsets the header gives.
struct Layout {
  std::string header;
  std::vector<const Tensor*> tensors;
};

Layout layout(const std::map<std::string, Tensor>& tensors, const std::map<std::string, std::string>& metadata,
              const std::string& context) {
  Layout out;
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  // std::map iterates in name order: the tensors are laid out in name order, from offset 0.
  for (const auto& [name, t] : tensors) {
    CTRAX_REQUIRE(!name.empty(), context, ": a tensor has an empty name");
    CTRAX_REQUIRE(name != "__metadata__", context, ": a tensor may not be named __metadata__ (the format reserves it)");
    CTRAX_REQUIRE(t.defined(), context, ": tensor '", name, "' is undefined");
    CTRAX_REQUIRE(t.device().is_cpu(), context, ": tensor '", name, "' is on ", t.device(),
                  "; only CPU tensors can be saved (copy it with .to(Device::cpu()))");
    const uint64_t nbytes = static_cast<uint64_t>(t.numel()) * t.element_size();
    json entry = json::object();
    entry["dtype"] = safetensors_dtype_name(t.dtype());
    entry["shape"] = t.shape().vec();
    entry["data_offsets"] = json::array({offset, offset + nbytes});
    header[name] = std::move(entry);
    offset += nbytes;
    out.tensors.push_back(&t);
  }
  std::string text;
  try {
    text = header.dump();  // throws on strings that are not valid UTF-8
  } catch (const json::exception& e) {
    CTRAX_THROW(context, ": a tensor name or metadata string is not valid UTF-8 (", e.what(), ")");
  }
  // Spaces pad the JSON so the data buffer starts at a multiple of 8 bytes.
  text.append((8 - text.size() % 8) % 8, ' ');
  const uint64_t n = text.size();
  out.header.resize(8);
  for (int i = 0; i < 8; ++i) out.header[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  out.header += text;
  return out;
}

// Passes the header and then each tensor's bytes, in file order, to `sink`.
void write_layout(const Layout& l, const std::function<void(const void*, size_t)>& sink) {
  sink(l.header.data(), l.header.size());
  for (const Tensor* t : l.tensors) {
    const size_t nbytes = static_cast<size_t>(t->numel()) * t->element_size();
    if (nbytes == 0) continue;
    const Tensor c = t->contiguous();
    sink(c.raw_data(), nbytes);
  }
}

// Builds the tensors of a validated index; `read(dst, offset, size)` fills dst with `size`
// bytes from file offset `offset`.
SafetensorsContents read_tensors(const SafetensorsIndex& index, const std::string& source,
                                 const std::function<void(void*, uint64_t, size_t)>& read) {
  SafetensorsContents contents;
  contents.metadata = index.metadata;
  for (const SafetensorsEntry& e : index.entries) {
    Tensor t;
    try {
      t = Tensor(Shape(e.shape), e.dtype);
    } catch (const Error& error) {
      CTRAX_THROW(source, ": tensor '", e.name, "' cannot be created: ", error.what());
    }
    const size_t nbytes = static_cast<size_t>(e.end - e.begin);
    if (nbytes > 0) read(t.raw_data(), index.data_start + e.begin, nbytes);
    // ctrax bools are the bytes 0 and 1 (tensor/dtype.h); anything else would be a value no
    // op expects, so it is refused rather than passed on.
    if (e.dtype == DType::boolean) {
      const auto* bytes = static_cast<const uint8_t*>(t.raw_data());
      for (size_t i = 0; i < nbytes; ++i)
        if (bytes[i] > 1)
          CTRAX_THROW(source, ": BOOL tensor '", e.name, "' holds the byte ", static_cast<int>(bytes[i]),
                      " at element ", i, "; a bool must be 0 or 1");
    }
    contents.tensors.emplace(e.name, std::move(t));
  }
  return contents;
}

}  // namespace

std::string encode_safetensors(const std::map<std::string, Tensor>& tensors,
                               const std::map<std::string, std::string>& metadata) {
  const Layout l = layout(tensors, metadata, "encode_safetensors");
  std::string bytes;
  write_layout(l, [&](const void* data, size_t size) { bytes.append(static_cast<const char*>(data), size); });
  return bytes;
}

SavedFile save_safetensors(const std::filesystem::path& path, const std::map<std::string, Tensor>& tensors,
                           const std::map<std::string, std::string>& metadata) {
  const Layout l = layout(tensors, metadata, "save_safetensors(" + path.string() + ")");
  AtomicFileWriter writer(path);
  write_layout(l, [&](const void* data, size_t size) { writer.write(data, size); });
  writer.commit();
  return SavedFile{writer.bytes_written(), writer.checksum()};
}

SafetensorsContents decode_safetensors(std::span<const uint8_t> bytes, const std::string& source) {
  const SafetensorsIndex index = parse_safetensors_header(bytes, bytes.size(), source);
  return read_tensors(index, source, [&](void* dst, uint64_t offset, size_t size) {
    std::memcpy(dst, bytes.data() + offset, size);  // offset + size <= bytes.size(): validated
  });
}

SafetensorsContents load_safetensors(const std::filesystem::path& path) {
  const std::string source = path.string();
  uint64_t file_size = 0;
  const detail::UniqueFd fd = detail::open_for_reading(path, file_size);

  // Read the size prefix, then the header only when its size is plausible; otherwise the
  // parser refuses the prefix alone. Either way nothing larger than the file (and the header
  // limit) is allocated here.
  std::vector<uint8_t> prefix(static_cast<size_t>(std::min<uint64_t>(file_size, 8)));
  detail::pread_exact(fd.get(), prefix.data(), prefix.size(), 0, path);
  if (file_size >= 8) {
    uint64_t header_size = 0;
    for (int i = 7; i >= 0; --i) header_size = (header_size << 8) | prefix[static_cast<size_t>(i)];
    if (header_size <= kMaxSafetensorsHeaderBytes && header_size <= file_size - 8) {
      prefix.resize(static_cast<size_t>(8 + header_size));
      detail::pread_exact(fd.get(), prefix.data() + 8, static_cast<size_t>(header_size), 8, path);
    }
  }
  const SafetensorsIndex index = parse_safetensors_header(prefix, file_size, source);
  prefix = {};
  return read_tensors(index, source, [&](void* dst, uint64_t offset, size_t size) {
    detail::pread_exact(fd.get(), dst, size, offset, path);
  });
}

}  // namespace ctrax::io
