// Storage: a reference-counted block of device memory that tensors view.
//
// What it is for: owning the bytes. Tensors hold a shared_ptr<Storage> plus their own
// shape, strides and offset, so views share one Storage and the memory is freed when the
// last view goes. CPU blocks are 64-byte aligned (one cache line, one AVX-512 register),
// which the vectorised kernels rely on for the start of a fresh tensor.
//
// What it is not for: element types or shapes (the Tensor owns those).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "device.h"

namespace ctrax {

class PlanArena;

class Storage {
 public:
  // Allocates nbytes (uninitialised) on `device`. Throws ctrax::Error if the allocation
  // fails or the device is unavailable.
  Storage(size_t nbytes, Device device);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  // Memory someone else owns, viewed without a copy: release(data) runs when the last tensor
  // viewing it goes. `device` says where the memory lives (ctrax cannot check it): host code
  // refuses to read a non-CPU storage (Tensor::data). For zero-copy interop, and for testing
  // the device checks without a device.
  static std::shared_ptr<Storage> wrap(void* data, size_t nbytes, Device device, std::function<void(void*)> release);

  void* data() { return data_; }
  const void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }
  // The arena of the plan being recorded when this storage was made (tensor/plan.h), or null.
  const PlanArena* arena() const { return arena_.get(); }

 private:
  Storage() = default;

  std::shared_ptr<PlanArena> arena_;
  uint64_t arena_token_ = 0;  // which hand-out of arena_'s block this is
  std::function<void(void*)> release_;  // set for wrapped memory
  void* data_ = nullptr;
  size_t nbytes_ = 0;
  Device device_ = Device::cpu();
};

inline constexpr size_t kStorageAlignment = 64;

// Counts of Storage allocations since the process started, on every device: how many and how
// many bytes were allocated, how many are alive now and the most bytes alive at once (since
// the last reset_allocation_peak). For tests and benchmarks that check what a step allocates
// ("zero allocations per replayed step"); the counters are atomic, so they are exact with
// several threads, and cost a few relaxed atomic additions per allocation.
struct AllocationStats {
  int64_t storages_allocated = 0;
  int64_t bytes_allocated = 0;
  int64_t live_storages = 0;
  int64_t live_bytes = 0;
  int64_t peak_live_bytes = 0;
};
AllocationStats allocation_stats();
// Sets the peak to what is alive now, to measure the peak of what follows.
void reset_allocation_peak();

}  // namespace ctrax
