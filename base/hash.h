// FNV-1a (64-bit): the one byte hash of the library.
//
// What it is for: fingerprints that must be the same on every machine and every run: checkpoint
// manifests of format version 1 (io/checkpoint.h), the ranks' drift check of replicated state
// (dist/communicator.h), a host's identity among ranks (optim/nccl_allreduce.cpp). Chained
// through `seed`, so a hash of a + b is fnv1a64(b, fnv1a64(a)).
//
// What it is not for: protection against tampering (it is not a cryptographic hash) or hash
// tables' speed. It lives in base/, below every other folder.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ctrax {

inline constexpr uint64_t kFnv1a64Offset = 0xcbf29ce484222325ULL;

inline uint64_t fnv1a64(const void* data, size_t size, uint64_t seed = kFnv1a64Offset) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  uint64_t hash = seed;
  for (size_t i = 0; i < size; ++i) {
    hash ^= bytes[i];
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

}  // namespace ctrax
