// Writing files so that a crash never leaves a torn one.
//
// What it is for: every file ctrax writes that a later run reads back (checkpoints, manifests,
// resolved configs). What it is not for: append-only logs (metrics files are appended to and
// flushed, which is the right trade-off for them).
//
// The protocol: write into a temporary file in the same directory (same file system, so the
// rename below is atomic), fsync it, rename it over the destination, then fsync the directory
// so the rename itself is durable. At every instant the destination holds either the complete
// old contents or the complete new contents. A writer killed half-way leaves only a temporary
// file named ".<name>.tmp.<pid>.<n>", which readers never open; remove_stale_temporaries()
// deletes such leftovers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "../base/hash.h"

namespace ctrax::io {

// xxh3_64 of bytes given in pieces (below).
class Xxh3Stream {
 public:
  Xxh3Stream();
  ~Xxh3Stream();
  Xxh3Stream(const Xxh3Stream&) = delete;
  Xxh3Stream& operator=(const Xxh3Stream&) = delete;
  void update(const void* data, size_t size);
  uint64_t digest() const;

 private:
  struct State;  // libxxhash's XXH3 state (atomic_file.cpp)
  std::unique_ptr<State> state_;
};

// Streams bytes into a temporary file and commits them to `path` on commit(). Destroying it
// without commit() removes the temporary file and leaves `path` untouched. Errors (cannot create,
// disk full, ...) throw ctrax::Error naming the path and the system's reason.
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(std::filesystem::path path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  // Buffered: bytes reach the file in large writes (a checkpoint of 66 tensors is a few write
  // calls, not 66); commit() writes the rest.
  void write(const void* data, size_t size);
  void write(std::string_view bytes) { write(bytes.data(), bytes.size()); }
  uint64_t bytes_written() const { return written_; }
  // xxh3_64 of every byte written so far (a checkpoint's manifest records it without reading
  // the file back).
  uint64_t checksum() const { return checksum_.digest(); }
  // Flush, fsync, close, rename over the destination, fsync the directory.
  void commit();

  const std::filesystem::path& path() const { return path_; }
  const std::filesystem::path& temporary_path() const { return temporary_path_; }

 private:
  std::filesystem::path path_;
  std::filesystem::path temporary_path_;
  void flush();
  void write_all(const char* data, size_t size);

  int fd_ = -1;
  uint64_t written_ = 0;  // bytes given to write()
  uint64_t in_file_ = 0;  // bytes the file holds so far
  Xxh3Stream checksum_;
  std::vector<char> buffer_;
  bool committed_ = false;
};

// The checksums of checkpoint manifests (io/checkpoint.h). They detect torn or corrupted files;
// neither is a defence against deliberate tampering.
// XXH3 (64-bit, seed 0; libxxhash's XXH3_64bits) over a byte range: format version 2.
uint64_t xxh3_64(const void* data, size_t size);
// FNV-1a (64-bit) over a byte range, chained through `seed` (format version 1): base/hash.h.
using ctrax::fnv1a64;

// Writes `contents` to `path` atomically (AtomicFileWriter in one call).
void write_file_atomically(const std::filesystem::path& path, std::string_view contents);

// Reads a whole file; throws ctrax::Error naming the path and the reason when it cannot.
// Refuses files larger than max_bytes (a guard for files that should be small, like manifests).
std::string read_file(const std::filesystem::path& path, uint64_t max_bytes = UINT64_MAX);

// Removes the temporaries AtomicFileWriter leaves behind when killed (".<name>.tmp.*") in
// `directory`, except those of live writers in this process. Returns how many it removed.
int remove_stale_temporaries(const std::filesystem::path& directory);

// fsync a directory (after creating or renaming entries in it).
void sync_directory(const std::filesystem::path& directory);

}  // namespace ctrax::io
