// The CUDA runtime layer (runtime.h): devices, streams, the caching allocator and copies.
// Part of the CUDA module (libctrax_cuda.so); the core reaches it through kernels/cuda/loader.cpp.
#include "runtime.h"

#include "../../base/error.h"

#include <array>
#include <map>
#include <mutex>
#include <vector>

#include "cuda_check.h"

namespace ctrax::kernels::cuda {

namespace {

constexpr int kMaxDevices = 16;

// cudaGetDeviceCount fails (cudaErrorNoDevice, cudaErrorInsufficientDriver) on machines
// without a GPU; that is an answer, not an error, so it is remembered with its reason.
struct Probe {
  int count = 0;
  std::string reason;
};

const Probe& probe() {
  static const Probe result = [] {
    Probe p;
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess) {
      cudaGetLastError();  // clear the sticky-free error so later calls start clean
      p.reason = ::ctrax::detail::cat("the CUDA driver reports ", cudaGetErrorName(status), " (",
                             cudaGetErrorString(status), ")");
    } else if (count == 0) {
      p.reason = "the CUDA driver finds no device";
    } else {
      p.count = count < kMaxDevices ? count : kMaxDevices;
    }
    return p;
  }();
  return result;
}

void require_device(int index, const char* what) {
  const Probe& p = probe();
  CTRAX_REQUIRE(p.count > 0, what, ": no CUDA device is available (", p.reason, ")");
  CTRAX_REQUIRE(index >= 0 && index < p.count, what, ": CUDA device cuda:", index, " does not exist (this machine has ",
                p.count, ": cuda:0 to cuda:", p.count - 1, ")");
}

// Makes `index` current for the duration of a scope and restores the previous device.
class DeviceGuard {
 public:
  explicit DeviceGuard(int index) {
    CTRAX_CUDA_CHECK(cudaGetDevice(&previous_));
    if (previous_ != index) CTRAX_CUDA_CHECK(cudaSetDevice(index));
    changed_ = previous_ != index;
  }
  ~DeviceGuard() {
    if (changed_) cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
  bool changed_ = false;
};

std::mutex& streams_mutex() {
  static std::mutex m;
  return m;
}
std::array<cudaStream_t, kMaxDevices>& streams() {
  static std::array<cudaStream_t, kMaxDevices> s{};
  return s;
}

cudaStream_t stream_of(int device) {
  std::lock_guard<std::mutex> lock(streams_mutex());
  cudaStream_t& s = streams()[device];
  if (s == nullptr) {
    DeviceGuard guard(device);
    CTRAX_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  }
  return s;
}

// ---- The caching allocator --------------------------------------------------------------
constexpr size_t kMinBlock = 512;
constexpr size_t kSmallLimit = size_t{1} << 20;
constexpr size_t kLargeGranule = size_t{2} << 20;

size_t rounded_size(size_t nbytes) {
  if (nbytes <= kSmallLimit) {
    size_t size = kMinBlock;
    while (size < nbytes) size <<= 1;
    return size;
  }
  return (nbytes + kLargeGranule - 1) / kLargeGranule * kLargeGranule;
}

struct DevicePool {
  std::map<size_t, std::vector<void*>> free_blocks;  // rounded size -> blocks
  AllocatorStats stats;
};

std::mutex& pool_mutex() {
  static std::mutex m;
  return m;
}
// Never destroyed: tensors in static objects may be freed after main returns, when a
// destroyed pool would be used after its lifetime. The driver reclaims device memory at exit.
std::array<DevicePool, kMaxDevices>& pools() {
  static auto* p = new std::array<DevicePool, kMaxDevices>();
  return *p;
}

// Frees every cached block of every device; the caller holds pool_mutex().
void release_cache_locked() {
  for (int d = 0; d < probe().count; ++d) {
    DevicePool& pool = pools()[d];
    if (pool.free_blocks.empty()) continue;
    DeviceGuard guard(d);
    for (auto& [size, blocks] : pool.free_blocks)
      for (void* block : blocks) CTRAX_CUDA_CHECK(cudaFree(block));
    pool.free_blocks.clear();
    pool.stats.cached_bytes = 0;
  }
}

}  // namespace

bool available() { return probe().count > 0; }
std::string unavailable_reason() { return available() ? std::string() : probe().reason; }
int device_count() { return probe().count; }

void set_device(int index) {
  require_device(index, "cuda::set_device");
  CTRAX_CUDA_CHECK(cudaSetDevice(index));
}

int current_device() {
  require_device(0, "cuda::current_device");
  int index = 0;
  CTRAX_CUDA_CHECK(cudaGetDevice(&index));
  return index;
}

DeviceInfo device_info(int index) {
  require_device(index, "cuda::device_info");
  cudaDeviceProp prop{};
  CTRAX_CUDA_CHECK(cudaGetDeviceProperties(&prop, index));
  DeviceInfo info;
  info.name = prop.name;
  info.compute_major = prop.major;
  info.compute_minor = prop.minor;
  info.total_memory = prop.totalGlobalMem;
  info.multiprocessors = prop.multiProcessorCount;
  info.l2_cache_bytes = static_cast<size_t>(prop.l2CacheSize);
  CTRAX_CUDA_CHECK(cudaDriverGetVersion(&info.driver_version));
  CTRAX_CUDA_CHECK(cudaRuntimeGetVersion(&info.runtime_version));
  return info;
}

void* current_stream() { return stream_of(current_device()); }

void synchronize() { CTRAX_CUDA_CHECK(cudaStreamSynchronize(stream_of(current_device()))); }

void* allocate(size_t nbytes, int device) {
  require_device(device, "cuda::allocate");
  const size_t size = rounded_size(nbytes == 0 ? 1 : nbytes);
  std::lock_guard<std::mutex> lock(pool_mutex());
  DevicePool& pool = pools()[device];
  auto it = pool.free_blocks.find(size);
  void* block = nullptr;
  if (it != pool.free_blocks.end() && !it->second.empty()) {
    block = it->second.back();
    it->second.pop_back();
    pool.stats.cached_bytes -= size;
    ++pool.stats.cache_hits;
  } else {
    DeviceGuard guard(device);
    cudaError_t status = cudaMalloc(&block, size);
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      release_cache_locked();
      status = cudaMalloc(&block, size);
    }
    if (status != cudaSuccess) {
      cudaGetLastError();
      CTRAX_THROW("cuda::allocate: out of memory on cuda:", device, " allocating ", nbytes, " bytes (",
                  pool.stats.allocated_bytes, " bytes in live tensors; the cache was released and the "
                  "allocation retried): ", cudaGetErrorString(status));
    }
    ++pool.stats.cuda_malloc_calls;
  }
  pool.stats.allocated_bytes += size;
  if (pool.stats.allocated_bytes > pool.stats.peak_allocated_bytes)
    pool.stats.peak_allocated_bytes = pool.stats.allocated_bytes;
  return block;
}

void deallocate(void* pointer, size_t nbytes, int device) {
  if (pointer == nullptr) return;
  const size_t size = rounded_size(nbytes == 0 ? 1 : nbytes);
  std::lock_guard<std::mutex> lock(pool_mutex());
  DevicePool& pool = pools()[device];
  pool.free_blocks[size].push_back(pointer);
  pool.stats.allocated_bytes -= size;
  pool.stats.cached_bytes += size;
}

void release_cached_memory() {
  if (!available()) return;
  std::lock_guard<std::mutex> lock(pool_mutex());
  release_cache_locked();
}

AllocatorStats allocator_stats(int device) {
  require_device(device, "cuda::allocator_stats");
  std::lock_guard<std::mutex> lock(pool_mutex());
  return pools()[device].stats;
}

void copy_host_to_device(void* device_dst, const void* host_src, size_t nbytes, int device) {
  require_device(device, "cuda::copy_host_to_device");
  if (nbytes == 0) return;
  CTRAX_CUDA_CHECK(cudaMemcpyAsync(device_dst, host_src, nbytes, cudaMemcpyHostToDevice, stream_of(device)));
}

void copy_device_to_host(void* host_dst, const void* device_src, size_t nbytes, int device) {
  require_device(device, "cuda::copy_device_to_host");
  if (nbytes == 0) return;
  const cudaStream_t s = stream_of(device);
  CTRAX_CUDA_CHECK(cudaMemcpyAsync(host_dst, device_src, nbytes, cudaMemcpyDeviceToHost, s));
  CTRAX_CUDA_CHECK(cudaStreamSynchronize(s));
}

void copy_device_to_device(void* dst, int dst_device, const void* src, int src_device, size_t nbytes) {
  require_device(dst_device, "cuda::copy_device_to_device");
  require_device(src_device, "cuda::copy_device_to_device");
  if (nbytes == 0) return;
  if (dst_device == src_device) {
    CTRAX_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToDevice, stream_of(dst_device)));
    return;
  }
  // Across devices the copy must follow the source's queued work: wait for it first, then
  // queue the peer copy on the destination's stream.
  CTRAX_CUDA_CHECK(cudaStreamSynchronize(stream_of(src_device)));
  CTRAX_CUDA_CHECK(cudaMemcpyPeerAsync(dst, dst_device, src, src_device, nbytes, stream_of(dst_device)));
}

void* allocate_pinned(size_t nbytes) {
  require_device(0, "cuda::allocate_pinned");
  void* p = nullptr;
  CTRAX_CUDA_CHECK(cudaMallocHost(&p, nbytes == 0 ? 1 : nbytes));
  return p;
}

void free_pinned(void* pointer) {
  if (pointer != nullptr) CTRAX_CUDA_CHECK(cudaFreeHost(pointer));
}

}  // namespace ctrax::kernels::cuda
