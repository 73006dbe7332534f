// one_hot, gather and scatter_add kernels (gather_scatter.h).
#include "gather_scatter.h"

#include <cstdint>
#include <limits>
#include <type_traits>

#include "cuda_check.h"
#include "indexing.cuh"
#include "runtime.h"

namespace ctrax::kernels::cuda {

namespace {

constexpr int kThreads = 256;
constexpr unsigned long long kNoBadIndex = std::numeric_limits<unsigned long long>::max();

// Calls f(I{}) with the stored type of an index dtype (int32 or int64; the tensor layer has
// already refused the others).
template <typename F>
void dispatch_index_type(ElementType type, F&& f) {
  CTRAX_CHECK(type == ElementType::int32 || type == ElementType::int64, "index kernels: non-integer index type ",
              static_cast<int>(type));
  if (type == ElementType::int32) f(int32_t{});
  else f(int64_t{});
}

// i in [-n, n) -> [0, n) in `resolved`; false for anything else (the CPU's resolve_index).
template <typename I>
__device__ __forceinline__ bool resolve_index(I raw, int64_t n, int64_t& resolved) {
  resolved = raw < 0 ? static_cast<int64_t>(raw) + n : static_cast<int64_t>(raw);
  return resolved >= 0 && resolved < n;
}

// Linear position -> element offset, on the host (device::strided_offset's twin), to read back
// the offending index.
int64_t host_strided_offset(const StridedArg& arg, int64_t linear) {
  int64_t offset = 0;
  for (int d = arg.rank - 1; d >= 0; --d) {
    offset += (linear % arg.shape[d]) * arg.strides[d];
    linear /= arg.shape[d];
  }
  return offset;
}

// One device word holding the smallest linear position of an out-of-range index, all ones
// (kNoBadIndex) while none was met. Ordered on the stream like the kernels, so it may be
// returned to the caching allocator as soon as it has been read back.
class BadIndexWord {
 public:
  explicit BadIndexWord(cudaStream_t stream) : device_(current_device()) {
    word_ = static_cast<unsigned long long*>(allocate(sizeof(unsigned long long), device_));
    try {
      CTRAX_CUDA_CHECK(cudaMemsetAsync(word_, 0xFF, sizeof(unsigned long long), stream));
    } catch (...) {
      deallocate(word_, sizeof(unsigned long long), device_);
      throw;
    }
  }
  ~BadIndexWord() { deallocate(word_, sizeof(unsigned long long), device_); }
  BadIndexWord(const BadIndexWord&) = delete;
  BadIndexWord& operator=(const BadIndexWord&) = delete;

  unsigned long long* get() const { return word_; }

  // Waits for the stream. When a position was recorded, reads the index stored there.
  template <typename I>
  BadIndex read(const StridedArg& index) const {
    unsigned long long position = kNoBadIndex;
    copy_device_to_host(&position, word_, sizeof(position), device_);
    if (position == kNoBadIndex) return {};
    I value{};
    const I* at = static_cast<const I*>(index.data) + host_strided_offset(index, static_cast<int64_t>(position));
    copy_device_to_host(&value, at, sizeof(I), device_);
    return {true, static_cast<int64_t>(value)};
  }

 private:
  int device_;
  unsigned long long* word_ = nullptr;
};

__device__ __forceinline__ void report_bad_index(unsigned long long* first_bad, int64_t position) {
  atomicMin(first_bad, static_cast<unsigned long long>(position));
}

template <typename T, typename I>
__global__ void one_hot_kernel(T* out, StridedArg indices, int64_t n, int64_t depth) {
  const I* index = static_cast<const I*>(indices.data);
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t j = static_cast<int64_t>(index[device::strided_offset(indices, i)]);
    if (j >= 0 && j < depth) out[i * depth + j] = T(1);
  }
}

template <typename T, typename I>
__global__ void gather_kernel(StridedArg out, StridedArg x, StridedArg index, int64_t n, int64_t axis_size,
                              int64_t axis_stride, unsigned long long* first_bad) {
  T* o = static_cast<T*>(out.data);
  const T* source = static_cast<const T*>(x.data);
  const I* idx = static_cast<const I*>(index.data);
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    int64_t j = 0;
    if (!resolve_index(idx[device::strided_offset(index, i)], axis_size, j)) {
      report_bad_index(first_bad, i);
      continue;
    }
    o[device::strided_offset(out, i)] = source[device::strided_offset(x, i) + j * axis_stride];
  }
}

// *p += v from many threads at once; int64 goes through the unsigned 64-bit atomicAdd (the
// same bits as two's complement addition, wrapping like the CPU's wrapping_add).
template <typename T>
__device__ __forceinline__ void atomic_add(T* p, T v) {
  if constexpr (std::is_same_v<T, int64_t>) {
    static_assert(sizeof(unsigned long long) == sizeof(int64_t));
    atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
  } else {
    atomicAdd(p, v);  // float, double (sm_60+), int
  }
}

template <typename T, typename I>
__global__ void scatter_add_kernel(StridedArg target, StridedArg src, StridedArg index, int64_t n, int64_t axis_size,
                                   int64_t axis_stride, unsigned long long* first_bad) {
  T* t = static_cast<T*>(target.data);
  const T* s = static_cast<const T*>(src.data);
  const I* idx = static_cast<const I*>(index.data);
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    int64_t j = 0;
    if (!resolve_index(idx[device::strided_offset(index, i)], axis_size, j)) {
      report_bad_index(first_bad, i);
      continue;
    }
    atomic_add(t + device::strided_offset(target, i) + j * axis_stride, s[device::strided_offset(src, i)]);
  }
}

}  // namespace

void one_hot(void* out, ElementType out_type, const StridedArg& indices, ElementType index_type, int64_t depth) {
  const int64_t n = device::numel(indices);
  if (n == 0 || depth == 0) return;
  const auto stream = static_cast<cudaStream_t>(current_stream());
  device::dispatch_element_type(out_type, [&](auto value_tag) {
    using T = decltype(value_tag);
    dispatch_index_type(index_type, [&](auto index_tag) {
      using I = decltype(index_tag);
      one_hot_kernel<T, I><<<device::blocks_for(n, kThreads), kThreads, 0, stream>>>(static_cast<T*>(out), indices, n,
                                                                                     depth);
      CTRAX_CUDA_CHECK_LAUNCH("one_hot_kernel");
    });
  });
}

BadIndex gather(const StridedArg& out, const StridedArg& x, ElementType value_type, const StridedArg& index,
                ElementType index_type, int64_t axis_size, int64_t axis_stride) {
  CTRAX_CHECK(out.rank == x.rank && out.rank == index.rank, "gather: ranks ", out.rank, ", ", x.rank, ", ", index.rank);
  const int64_t n = device::numel(out);
  if (n == 0) return {};
  const auto stream = static_cast<cudaStream_t>(current_stream());
  BadIndexWord first_bad(stream);
  BadIndex result;
  device::dispatch_element_type(value_type, [&](auto value_tag) {
    using T = decltype(value_tag);
    dispatch_index_type(index_type, [&](auto index_tag) {
      using I = decltype(index_tag);
      gather_kernel<T, I><<<device::blocks_for(n, kThreads), kThreads, 0, stream>>>(out, x, index, n, axis_size,
                                                                                    axis_stride, first_bad.get());
      CTRAX_CUDA_CHECK_LAUNCH("gather_kernel");
      result = first_bad.read<I>(index);
    });
  });
  return result;
}

BadIndex scatter_add(const StridedArg& target, const StridedArg& src, ElementType value_type, const StridedArg& index,
                     ElementType index_type, int64_t axis_size, int64_t axis_stride) {
  CTRAX_CHECK(target.rank == src.rank && target.rank == index.rank, "scatter_add: ranks ", target.rank, ", ",
              src.rank, ", ", index.rank);
  const int64_t n = device::numel(index);
  if (n == 0) return {};
  const auto stream = static_cast<cudaStream_t>(current_stream());
  BadIndexWord first_bad(stream);
  BadIndex result;
  device::dispatch_element_type(value_type, [&](auto value_tag) {
    using T = decltype(value_tag);
    if constexpr (std::is_same_v<T, uint8_t>) {
      CTRAX_CHECK(false, "scatter_add: bool has no addition");
    } else {
      dispatch_index_type(index_type, [&](auto index_tag) {
        using I = decltype(index_tag);
        scatter_add_kernel<T, I><<<device::blocks_for(n, kThreads), kThreads, 0, stream>>>(
            target, src, index, n, axis_size, axis_stride, first_bad.get());
        CTRAX_CUDA_CHECK_LAUNCH("scatter_add_kernel");
        result = first_bad.read<I>(index);
      });
    }
  });
  return result;
}

}  // namespace ctrax::kernels::cuda
