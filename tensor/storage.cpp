#include "storage.h"

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <vector>

#include "../base/error.h"
#include "../kernels/cuda/runtime.h"
#include "plan.h"

namespace ctrax {

// ---------------------------------------------------------------------------------------------
// A per-thread cache of small CPU blocks.
//
// Why: RL steps make thousands of tiny tensors, and an aligned malloc/free pair costs several
// hundred instructions (glibc's memalign path, then chunk consolidation on free), which was the
// largest part of an op's overhead on a one-element tensor. Blocks up to kMaxCachedBytes are
// rounded up to a power of two and, when freed, kept on a free list of their size class
// for the next allocation on the same thread. A block freed on another thread simply joins
// that thread's lists: blocks are plain memory, so that is safe.
//
// Bounds: each thread keeps at most kMaxCachedBytesPerThread; beyond that blocks go back to
// the system. The lists are returned to the system when the thread exits.
// ---------------------------------------------------------------------------------------------
namespace {

constexpr int kMinClassLog2 = 6;   // 64 bytes, one cache line
constexpr int kMaxClassLog2 = 20;  // 1 MiB
constexpr size_t kMaxCachedBytes = size_t{1} << kMaxClassLog2;
constexpr size_t kMaxCachedBytesPerThread = size_t{64} << 20;

int size_class(size_t nbytes) {
  int log2 = kMinClassLog2;
  while ((size_t{1} << log2) < nbytes) ++log2;
  return log2;
}

class BlockCache {
 public:
  ~BlockCache() {
    alive_ = false;
    for (auto& list : free_lists_)
      for (void* block : list) std::free(block);
  }
  void* take(int cls) {
    auto& list = free_lists_[cls - kMinClassLog2];
    if (list.empty()) return nullptr;
    void* block = list.back();
    list.pop_back();
    cached_bytes_ -= size_t{1} << cls;
    return block;
  }
  // Returns false when the block should go back to the system instead.
  bool give(int cls, void* block) {
    const size_t bytes = size_t{1} << cls;
    if (!alive_ || cached_bytes_ + bytes > kMaxCachedBytesPerThread) return false;
    free_lists_[cls - kMinClassLog2].push_back(block);
    cached_bytes_ += bytes;
    return true;
  }
  static bool alive() { return alive_; }

 private:
  std::vector<void*> free_lists_[kMaxClassLog2 - kMinClassLog2 + 1];
  size_t cached_bytes_ = 0;
  static thread_local bool alive_;
};
thread_local bool BlockCache::alive_ = true;

BlockCache& block_cache() {
  static thread_local BlockCache cache;
  return cache;
}

// The counters of allocation_stats().
std::atomic<int64_t> g_storages_allocated{0}, g_bytes_allocated{0}, g_live_storages{0}, g_live_bytes{0},
    g_peak_live_bytes{0};

void count_allocation(size_t nbytes) {
  const auto bytes = static_cast<int64_t>(nbytes);
  g_storages_allocated.fetch_add(1, std::memory_order_relaxed);
  g_bytes_allocated.fetch_add(bytes, std::memory_order_relaxed);
  g_live_storages.fetch_add(1, std::memory_order_relaxed);
  const int64_t live = g_live_bytes.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  int64_t peak = g_peak_live_bytes.load(std::memory_order_relaxed);
  while (live > peak && !g_peak_live_bytes.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
  }
}

void count_release(size_t nbytes) {
  g_live_storages.fetch_sub(1, std::memory_order_relaxed);
  g_live_bytes.fetch_sub(static_cast<int64_t>(nbytes), std::memory_order_relaxed);
}

}  // namespace

AllocationStats allocation_stats() {
  AllocationStats s;
  s.storages_allocated = g_storages_allocated.load(std::memory_order_relaxed);
  s.bytes_allocated = g_bytes_allocated.load(std::memory_order_relaxed);
  s.live_storages = g_live_storages.load(std::memory_order_relaxed);
  s.live_bytes = g_live_bytes.load(std::memory_order_relaxed);
  s.peak_live_bytes = g_peak_live_bytes.load(std::memory_order_relaxed);
  return s;
}

void reset_allocation_peak() { g_peak_live_bytes.store(g_live_bytes.load(std::memory_order_relaxed), std::memory_order_relaxed); }

Storage::Storage(size_t nbytes, Device device) : nbytes_(nbytes), device_(device) {
  CTRAX_REQUIRE(nbytes <= (size_t{1} << 46), "Storage: refusing to allocate ", nbytes,
                " bytes (more than 64 TiB; is a shape wrong?)");
  if (device.is_cuda()) {
    CTRAX_REQUIRE(kernels::cuda::available(), "Storage: cannot allocate on ", device, ": ",
                  kernels::cuda::unavailable_reason());
    // The caching allocator (kernels/cuda/runtime.h) checks the index and throws on failure.
    data_ = kernels::cuda::allocate(nbytes, device.index);
    count_allocation(nbytes);
    return;
  }
  if (detail::t_capture_state.recorder != nullptr) {
    // While a plan is recorded its buffers come from its arena (tensor/plan.h).
    arena_ = detail::recording_arena();
    data_ = arena_->take(nbytes, arena_token_);
    count_allocation(nbytes);
    return;
  }
  if (nbytes <= kMaxCachedBytes) {
    // Zero-sized tensors still get a valid (unused) block so data pointers are never null.
    const int cls = size_class(nbytes == 0 ? 1 : nbytes);
    data_ = BlockCache::alive() ? block_cache().take(cls) : nullptr;
    if (data_ == nullptr) data_ = std::aligned_alloc(kStorageAlignment, size_t{1} << cls);
  } else {
    // aligned_alloc wants a size that is a multiple of the alignment.
    const size_t rounded = ((nbytes + kStorageAlignment - 1) / kStorageAlignment) * kStorageAlignment;
    data_ = std::aligned_alloc(kStorageAlignment, rounded);
  }
  CTRAX_REQUIRE(data_ != nullptr, "Storage: out of memory allocating ", nbytes, " bytes on ", device);
  count_allocation(nbytes);
}

std::shared_ptr<Storage> Storage::wrap(void* data, size_t nbytes, Device device, std::function<void(void*)> release) {
  CTRAX_REQUIRE(data != nullptr || nbytes == 0, "Storage::wrap: null data for ", nbytes, " bytes");
  std::shared_ptr<Storage> s(new Storage());
  s->data_ = data;
  s->nbytes_ = nbytes;
  s->device_ = device;
  s->release_ = release ? std::move(release) : [](void*) {};
  return s;
}

Storage::~Storage() {
  if (release_) {  // wrapped: not ours, not counted
    release_(data_);
    return;
  }
  count_release(nbytes_);
  if (device_.is_cuda()) {
    kernels::cuda::deallocate(data_, nbytes_, device_.index);
    return;
  }
  if (arena_ != nullptr) {
    arena_->give(data_, arena_token_);
    return;
  }
  if (nbytes_ <= kMaxCachedBytes && BlockCache::alive()) {
    if (block_cache().give(size_class(nbytes_ == 0 ? 1 : nbytes_), data_)) return;
  }
  std::free(data_);
}

}  // namespace ctrax
