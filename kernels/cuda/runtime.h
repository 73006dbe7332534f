// The CUDA runtime as ctrax uses it: devices, one stream per device, a caching allocator and
// host <-> device copies.
//
// What it is for: everything above kernels/ that touches GPU memory goes through these plain
// C++ functions, so no header outside kernels/cuda needs <cuda_runtime.h> and the core is the
// same in every build. The CUDA code itself is a module, libctrax_cuda.so (kernels/cuda/module.h),
// loaded the first time one of these functions needs it: a program that never asks for a GPU
// loads no CUDA library. When there is no module (a build without CUDA, or the file cannot be
// found) available() is false, device_count() is 0, unavailable_reason() says why and every
// other function throws ctrax::Error with that reason.
//
// Ordering model (the same as PyTorch's default): all of ctrax's work on a device runs on one
// stream, current_stream(). Kernels and device-to-device copies are asynchronous; a copy to
// the host waits for the stream, so the host sees every earlier result. Because everything is
// ordered on that one stream, the allocator may hand a freed block to the next allocation at
// once: any kernel that still reads the old tensor was queued before the kernel that will
// write the new one.
//
// What it is not for: kernels (kernels/cuda/*.cu) or tensors (tensor/).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "../../base/error.h"


namespace ctrax::kernels::cuda {

// True when the CUDA module loads and the driver reports at least one device. Loads the module
// on first call. Never throws; the reason when false is unavailable_reason().
bool available();
std::string unavailable_reason();
int device_count();
// Whether the CUDA module is in this process (loaded by an earlier call, or linked into the
// program through ctrax::cuda); never loads it. module_path(): the file the loader took it from
// (empty until a call has needed it). The module is searched for in $CTRAX_CUDA_MODULE, beside
// libctrax (or the program, for a static libctrax) and its ../lib, by the dynamic loader's own
// search, then in this build's install and build folders.
bool module_loaded();
std::string module_path();
// The device later calls use (cudaSetDevice). Throws ctrax::Error for an index out of range.
void set_device(int index);
int current_device();
// Name, compute capability and memory of a device, and the driver and runtime versions.
struct DeviceInfo {
  std::string name;
  int compute_major = 0, compute_minor = 0;
  size_t total_memory = 0;
  int multiprocessors = 0;
  size_t l2_cache_bytes = 0;
  int driver_version = 0, runtime_version = 0;  // e.g. 13000 for 13.0
};
DeviceInfo device_info(int index);

// The stream of the current device (a cudaStream_t, created on first use, non-blocking with
// respect to the legacy default stream).
void* current_stream();
// Waits until everything queued on the current device's stream has finished; a kernel's
// asynchronous error surfaces here as ctrax::Error.
void synchronize();

// ---- Caching allocator ----------------------------------------------------------------------
// Blocks come from cudaMalloc and are rounded up: to a power of two up to 1 MiB (at least 512
// bytes, so every block is aligned for float4 and double2 loads), then to a multiple of 2 MiB.
// A freed block goes onto a free list of its size and device and serves the next request of
// that size. When cudaMalloc runs out of memory, the cache is released and the call retried
// once; a second failure throws ctrax::Error with the sizes involved.
void* allocate(size_t nbytes, int device);
void deallocate(void* pointer, size_t nbytes, int device);
// Returns every cached (free) block to the driver (nothing to do, and nothing loaded, when the
// module is not loaded).
void release_cached_memory();
struct AllocatorStats {
  size_t allocated_bytes = 0;       // in live blocks (rounded sizes)
  size_t cached_bytes = 0;          // in free blocks kept for reuse
  size_t peak_allocated_bytes = 0;
  uint64_t cuda_malloc_calls = 0;   // misses: allocations the cache could not serve
  uint64_t cache_hits = 0;
};
AllocatorStats allocator_stats(int device);

// ---- Copies ---------------------------------------------------------------------------------
// All on current_stream() of the device involved.
// Host to device: asynchronous when `host` is pinned memory (allocate_pinned); from pageable
// memory the driver stages the bytes, and the call returns once `host` may be reused.
void copy_host_to_device(void* device_dst, const void* host_src, size_t nbytes, int device);
// Device to host: waits for the stream, so the bytes are in `host_dst` on return.
void copy_device_to_host(void* host_dst, const void* device_src, size_t nbytes, int device);
// Device to device (peer copies across devices are allowed); asynchronous.
void copy_device_to_device(void* dst, int dst_device, const void* src, int src_device, size_t nbytes);
// Page-locked host memory, for copies that overlap with computation.
void* allocate_pinned(size_t nbytes);
void free_pinned(void* pointer);

}  // namespace ctrax::kernels::cuda
