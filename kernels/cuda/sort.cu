// Row sorts (sort.h).
//
// Algorithm: a bottom-up merge sort of (value, position) pairs, all rows at once. Pass p
// merges neighbouring sorted runs of width w = 2^p into runs of 2w, ping-ponging between two
// buffers; ceil(log2 len) passes sort a row. Within a pass every element finds its own output
// place independently (one thread per element, no synchronisation):
//     place = start of the merged run + rank in its own run + #(partner-run elements before it)
// where the count is a binary search (lower bound) in the partner run, which is sorted. Since
// the order compares positions last, no two elements are equal, so the places of the two runs
// interleave without collisions and the merge is stable by construction. Cost
// O(len log^2 len) work per row, any row length, no shared-memory limits; a block-local first
// pass (or CUB's radix sort) is the faster next version.
//
// topk takes the first k of the full sort: the order is total, so that is exactly the CPU's
// partial_sort result.
#include "sort.h"

#include <cstddef>
#include <type_traits>
#include <utility>

#include "cuda_check.h"
#include "indexing.cuh"
#include "runtime.h"

namespace ctrax::kernels::cuda {

namespace {

constexpr int kThreads = 256;

template <typename T>
__device__ __forceinline__ bool is_nan(T v) {
  return v != v;  // false for every integer
}

// True when (a, pa) comes strictly before (b, pb): tensor/ops/sort.cpp's LineOrder.
template <typename T>
__device__ __forceinline__ bool before(T a, int64_t pa, T b, int64_t pb, bool descending) {
  const bool a_nan = is_nan(a), b_nan = is_nan(b);
  if (a_nan != b_nan) return descending ? a_nan : b_nan;  // NaN last ascending, first descending
  if (!a_nan && a != b) return descending ? a > b : a < b;
  return pa < pb;
}

template <typename T>
__global__ void init_pairs_kernel(const T* x, T* values, int64_t* positions, int64_t total, int64_t len) {
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < total; e += int64_t{gridDim.x} * blockDim.x) {
    values[e] = x[e];
    positions[e] = e % len;
  }
}

// One merge pass: runs of `width` become runs of 2 * width in every row.
template <typename T>
__global__ void merge_pass_kernel(const T* in_values, const int64_t* in_positions, T* out_values,
                                  int64_t* out_positions, int64_t total, int64_t len, int64_t width, bool descending) {
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < total; e += int64_t{gridDim.x} * blockDim.x) {
    const int64_t row_start = e - e % len;
    const int64_t p = e - row_start;  // place within the row
    const int64_t run = p / width;
    const int64_t merged_start = (run / 2) * 2 * width;
    const int64_t partner_start = (run ^ 1) * width;
    const int64_t partner_end = partner_start + width < len ? partner_start + width : len;
    const T v = in_values[e];
    const int64_t pos = in_positions[e];
    // Lower bound: partner elements strictly before (v, pos).
    int64_t lo = 0, hi = partner_end > partner_start ? partner_end - partner_start : 0;
    const T* pv = in_values + row_start + partner_start;
    const int64_t* pp = in_positions + row_start + partner_start;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (before(pv[mid], pp[mid], v, pos, descending)) lo = mid + 1;
      else hi = mid;
    }
    const int64_t place = row_start + merged_start + (p - run * width) + lo;
    out_values[place] = v;
    out_positions[place] = pos;
  }
}

// The first k of each sorted row into the outputs.
template <typename T>
__global__ void take_first_kernel(const T* sorted_values, const int64_t* sorted_positions, T* values,
                                  int64_t* indices, int64_t rows, int64_t len, int64_t k) {
  const int64_t total = rows * k;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < total; e += int64_t{gridDim.x} * blockDim.x) {
    const int64_t src = (e / k) * len + e % k;
    if (values) values[e] = sorted_values[src];
    if (indices) indices[e] = sorted_positions[src];
  }
}

// A block from the caching allocator, returned when the scope ends. Safe right after the
// launches are queued: later work on the same stream cannot overtake them (runtime.h).
class DeviceBuffer {
 public:
  DeviceBuffer(size_t nbytes, int device) : nbytes_(nbytes), device_(device), data_(allocate(nbytes, device)) {}
  ~DeviceBuffer() { deallocate(data_, nbytes_, device_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }

 private:
  size_t nbytes_;
  int device_;
  void* data_;
};

}  // namespace

void sort_rows(const void* x, ElementType type, int64_t rows, int64_t len, int64_t k, bool descending, void* values,
               int64_t* indices) {
  if (rows == 0 || k == 0 || (values == nullptr && indices == nullptr)) return;
  const auto stream = static_cast<cudaStream_t>(current_stream());
  const int device_index = current_device();
  const int64_t total = rows * len;
  device::dispatch_element_type(type, [&](auto tag) {
    using T = decltype(tag);
    const size_t n = static_cast<size_t>(total);
    DeviceBuffer values_a(n * sizeof(T), device_index), values_b(n * sizeof(T), device_index);
    DeviceBuffer positions_a(n * sizeof(int64_t), device_index), positions_b(n * sizeof(int64_t), device_index);
    T* in_v = values_a.as<T>();
    T* out_v = values_b.as<T>();
    int64_t* in_p = positions_a.as<int64_t>();
    int64_t* out_p = positions_b.as<int64_t>();
    const unsigned blocks = device::blocks_for(total, kThreads);
    init_pairs_kernel<T><<<blocks, kThreads, 0, stream>>>(static_cast<const T*>(x), in_v, in_p, total, len);
    CTRAX_CUDA_CHECK_LAUNCH("init_pairs_kernel");
    for (int64_t width = 1; width < len; width *= 2) {
      merge_pass_kernel<T><<<blocks, kThreads, 0, stream>>>(in_v, in_p, out_v, out_p, total, len, width, descending);
      CTRAX_CUDA_CHECK_LAUNCH("merge_pass_kernel");
      std::swap(in_v, out_v);
      std::swap(in_p, out_p);
    }
    take_first_kernel<T><<<device::blocks_for(rows * k, kThreads), kThreads, 0, stream>>>(
        in_v, in_p, static_cast<T*>(values), indices, rows, len, k);
    CTRAX_CUDA_CHECK_LAUNCH("take_first_kernel");
  });
}

}  // namespace ctrax::kernels::cuda
