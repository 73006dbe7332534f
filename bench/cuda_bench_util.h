// What the standalone GPU benchmarks (bench_cuda_*.cpp) share: device buffers from ctrax's
// caching allocator, timing with CUDA events on ctrax's stream with L2 flushed before each
// run, the device's description for the results' header, and generic input data.
//
// What it is for: making every GPU number in bench/results/ come from the same method, so
// tables can be compared. What it is not for: the library or the tests (benchmarks only).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <ctrax/kernels/cuda/runtime.h>

namespace ctrax::bench_cuda {

namespace kc = ctrax::kernels::cuda;

// A failing CUDA call in a benchmark's own code ends the program with the call's name.
inline void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "benchmark: %s failed: %s\n", what, cudaGetErrorString(status));
    std::exit(1);
  }
}

// "1,2,3" -> {1, 2, 3}.
inline std::vector<int64_t> parse_list(const std::string& text) {
  std::vector<int64_t> values;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) values.push_back(std::stoll(item));
  return values;
}

// `count` floats on the current device, from ctrax's allocator; freed on destruction.
class DeviceFloats {
 public:
  explicit DeviceFloats(size_t count) : bytes_(count * sizeof(float)), device_(kc::current_device()) {
    data_ = static_cast<float*>(kc::allocate(bytes_, device_));
  }
  DeviceFloats(const DeviceFloats&) = delete;
  DeviceFloats& operator=(const DeviceFloats&) = delete;
  ~DeviceFloats() { kc::deallocate(data_, bytes_, device_); }
  float* get() const { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  size_t bytes_;
  int device_;
  float* data_ = nullptr;
};

// Uniform values in [-1, 1) from a 64-bit LCG: fast enough for 8192^2 operands, and the
// values only need to be generic (no structure a kernel could get right by accident).
inline std::vector<float> random_floats(size_t count, uint64_t seed) {
  std::vector<float> v(count);
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  for (float& x : v) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    x = static_cast<float>(static_cast<double>(state >> 11) * (2.0 / 9007199254740992.0) - 1.0);
  }
  return v;
}

// "Device: NAME (sm_XY, N SMs, L2 M MiB, HBM B GB/s peak). Driver D, runtime R." for a results header.
inline std::string describe_device(int device) {
  cudaDeviceProp props{};
  check(cudaGetDeviceProperties(&props, device), "cudaGetDeviceProperties");
  int driver = 0, runtime = 0;
  check(cudaDriverGetVersion(&driver), "cudaDriverGetVersion");
  check(cudaRuntimeGetVersion(&runtime), "cudaRuntimeGetVersion");
  std::ostringstream out;
  out << "Device: " << props.name << " (sm_" << props.major << props.minor << ", " << props.multiProcessorCount
      << " SMs, L2 " << (props.l2CacheSize >> 20) << " MiB). Driver " << driver / 1000 << "." << (driver % 1000) / 10
      << ", runtime " << runtime / 1000 << "." << (runtime % 1000) / 10 << ".";
  return out.str();
}

// Times GPU work enqueued on ctrax's current stream with a pair of CUDA events. Before each
// timed run a buffer of three times the L2 cache is overwritten, so no run finds the previous
// run's operands in L2: the numbers are for operands coming from device memory, as in a
// training step whose inputs were just produced by other kernels.
class EventTimer {
 public:
  EventTimer() : stream_(static_cast<cudaStream_t>(kc::current_stream())), flush_(flush_floats()) {
    check(cudaEventCreate(&start_), "cudaEventCreate");
    check(cudaEventCreate(&stop_), "cudaEventCreate");
  }
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  ~EventTimer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }

  size_t flush_bytes() const { return flush_.bytes(); }

  // Milliseconds of one run of `work` (which enqueues on the current stream), L2 flushed first.
  float time_once(const std::function<void()>& work) {
    check(cudaMemsetAsync(flush_.get(), 0, flush_.bytes(), stream_), "cudaMemsetAsync (L2 flush)");
    check(cudaEventRecord(start_, stream_), "cudaEventRecord");
    work();
    check(cudaEventRecord(stop_, stream_), "cudaEventRecord");
    check(cudaEventSynchronize(stop_), "cudaEventSynchronize");
    float ms = 0.0f;
    check(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
    return ms;
  }

  // Seconds: the median of up to `repeats` runs after one warm-up, fewer when a run is slow
  // (about 3 s per measurement at most, but never fewer than 3 runs).
  double median_seconds(const std::function<void()>& work, int repeats) {
    const float warm_ms = time_once(work);
    const int runs = std::max(3, std::min(repeats, static_cast<int>(3000.0 / std::max(warm_ms, 1e-3f))));
    std::vector<float> ms;
    for (int r = 0; r < runs; ++r) ms.push_back(time_once(work));
    std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
    return ms[ms.size() / 2] * 1e-3;
  }

 private:
  static size_t flush_floats() {
    cudaDeviceProp props{};
    check(cudaGetDeviceProperties(&props, kc::current_device()), "cudaGetDeviceProperties");
    const size_t l2 = static_cast<size_t>(std::max(props.l2CacheSize, 1 << 20));
    return 3 * l2 / sizeof(float);
  }

  cudaStream_t stream_;
  cudaEvent_t start_{}, stop_{};
  DeviceFloats flush_;
};

inline std::string format(const char* fmt, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), fmt, value);
  return buffer;
}

}  // namespace ctrax::bench_cuda
