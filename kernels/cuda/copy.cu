// Strided copy with conversion, and fill (copy.h).
#include "copy.h"

#include "cuda_check.h"
#include "indexing.cuh"
#include "runtime.h"

namespace ctrax::kernels::cuda {

namespace {

constexpr int kThreads = 256;

// Both operands contiguous: the common case (to(dtype), moving a fresh tensor), with no
// index arithmetic.
template <typename To, typename From>
__global__ void contiguous_copy_kernel(To* dst, const From* src, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    dst[i] = device::convert<To>(src[i]);
}

template <typename To, typename From>
__global__ void strided_copy_kernel(StridedArg dst, StridedArg src, int64_t n) {
  To* out = static_cast<To*>(dst.data);
  const From* in = static_cast<const From*>(src.data);
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    out[device::strided_offset(dst, i)] = device::convert<To>(in[device::strided_offset(src, i)]);
}

template <typename T>
__global__ void fill_kernel(StridedArg dst, T value, int64_t n, bool contiguous) {
  T* out = static_cast<T*>(dst.data);
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    out[contiguous ? i : device::strided_offset(dst, i)] = value;
}

}  // namespace

void strided_copy(const StridedArg& dst, ElementType dst_type, const StridedArg& src, ElementType src_type) {
  CTRAX_CHECK(dst.rank == src.rank, "strided_copy: ranks ", dst.rank, " and ", src.rank);
  const int64_t n = device::numel(dst);
  if (n == 0) return;
  const auto stream = static_cast<cudaStream_t>(current_stream());
  const bool contiguous = device::is_contiguous(dst) && device::is_contiguous(src);
  device::dispatch_element_type(dst_type, [&](auto to_tag) {
    using To = decltype(to_tag);
    device::dispatch_element_type(src_type, [&](auto from_tag) {
      using From = decltype(from_tag);
      const unsigned blocks = device::blocks_for(n, kThreads);
      if (contiguous) {
        if constexpr (std::is_same_v<To, From>) {
          CTRAX_CUDA_CHECK(cudaMemcpyAsync(dst.data, src.data, static_cast<size_t>(n) * sizeof(To),
                                           cudaMemcpyDeviceToDevice, stream));
        } else {
          contiguous_copy_kernel<To, From><<<blocks, kThreads, 0, stream>>>(
              static_cast<To*>(dst.data), static_cast<const From*>(src.data), n);
          CTRAX_CUDA_CHECK_LAUNCH("contiguous_copy_kernel");
        }
      } else {
        strided_copy_kernel<To, From><<<blocks, kThreads, 0, stream>>>(dst, src, n);
        CTRAX_CUDA_CHECK_LAUNCH("strided_copy_kernel");
      }
    });
  });
}

void fill(const StridedArg& dst, ElementType dst_type, double value) {
  const int64_t n = device::numel(dst);
  if (n == 0) return;
  const auto stream = static_cast<cudaStream_t>(current_stream());
  device::dispatch_element_type(dst_type, [&](auto tag) {
    using T = decltype(tag);
    // The conversion runs on the host with the same rule as the device's.
    T v;
    if constexpr (std::is_same_v<T, uint8_t>) {
      v = value != 0.0 ? 1 : 0;
    } else if constexpr (std::is_integral_v<T>) {
      v = value != value ? T(0)
          : value <= static_cast<double>(std::numeric_limits<T>::min()) ? std::numeric_limits<T>::min()
          : value >= static_cast<double>(std::numeric_limits<T>::max()) ? std::numeric_limits<T>::max()
                                                                         : static_cast<T>(value);
    } else {
      v = static_cast<T>(value);
    }
    fill_kernel<T><<<device::blocks_for(n, kThreads), kThreads, 0, stream>>>(dst, v, n, device::is_contiguous(dst));
    CTRAX_CUDA_CHECK_LAUNCH("fill_kernel");
  });
}

}  // namespace ctrax::kernels::cuda
