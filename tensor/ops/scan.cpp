// Scans along one axis: cumsum (forward or reverse) and discounted_cumsum.
//
// What it is for: running sums, and the discounted return of RL,
//     G[t] = r[t] + discount * G[t + 1]     (G[T-1] = r[T-1]),
// computed by one backward sweep along the time axis.
// What it is not for: reductions that keep one value per row (reduce.cpp).
//
// Dtypes: cumsum keeps floating dtypes and gives int64 for integer and bool inputs (like sum;
// integer sums wrap modulo 2^64, computed unsigned so overflow is defined). discounted_cumsum
// gives a floating result (integer and bool inputs give float32). Floating running values are
// carried in double and rounded once per output element, so a float32 cumsum of n terms is
// accurate to about one float32 ulp plus n * 2^-53 relative to the sum of |x|.
//
// Layout: the input is made contiguous in the result dtype (free when it already is) and viewed
// as (outer, n, inner), n being the scanned axis. With inner == 1 each line is a walk through
// memory; with inner > 1 a row of `inner` running values is carried from one step of the axis
// to the next, so the inner loop runs along memory (e.g. rewards stored (time, batch)).
//
// On a GPU (kernels/cuda/scan.h) the same checks, dtypes and layout apply, and one thread per
// (outer, inner) line performs the CPU's operations in the CPU's order, so results match.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "../trace.h"
#include "../../kernels/cuda/scan.h"
#include "../../kernels/parallel.h"
#include "../cuda_arg.h"
#include "../ops.h"
#include "../plan.h"
#include "reduce_util.h"

namespace ctrax {

namespace {

// The running value's type: double for floating data, uint64 (wrapping) for int64 results.
template <typename T>
using Carry = std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>;

template <typename T>
Carry<T> to_carry(T v) {
  if constexpr (std::is_floating_point_v<T>) return static_cast<double>(v);
  else return static_cast<uint64_t>(v);
}

// Scans `outer` blocks of (n, inner) from `x` into `y`. The recurrence is
//     carry = x[t] + decay * carry       over t in scan order,
// with decay 1 for cumsum (the multiply is skipped) and the discount for discounted_cumsum.
template <typename T, bool kDiscounted>
void scan_blocks(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, bool reverse, double discount) {
  const int64_t block = n * inner;
  auto blocks = [&](int64_t begin, int64_t end) {
    std::vector<Carry<T>> carry(static_cast<size_t>(inner));
    for (int64_t o = begin; o < end; ++o) {
      const T* xb = x + o * block;
      T* yb = y + o * block;
      std::fill(carry.begin(), carry.end(), Carry<T>(0));
      for (int64_t s = 0; s < n; ++s) {
        const int64_t t = reverse ? n - 1 - s : s;
        const T* xr = xb + t * inner;
        T* yr = yb + t * inner;
        for (int64_t j = 0; j < inner; ++j) {
          if constexpr (kDiscounted) carry[j] = to_carry(xr[j]) + discount * carry[j];
          else carry[j] += to_carry(xr[j]);
          yr[j] = static_cast<T>(carry[j]);
        }
      }
    }
  };
  if (outer * block <= detail::kReduceGrain) blocks(0, outer);
  else kernels::parallel_for(outer, std::max<int64_t>(1, detail::kReduceGrain / block), blocks);
}

// Scans run on the input's device (cpu, or cuda in a CUDA build).
void require_defined(const Tensor& x, const char* op) {
  CTRAX_REQUIRE(x.defined(), op, ": the input tensor is undefined (default-constructed)");
}

template <bool kDiscounted>
Tensor scan(const Tensor& x, int axis_in, bool reverse, double discount, DType dtype, const char* op) {
  CTRAX_REQUIRE(x.rank() >= 1, op, ": needs a tensor of rank >= 1 to pick an axis, got shape ", x.shape());
  const int axis = normalize_axis(axis_in, x.rank(), op);
  const Tensor src = x.to(dtype).contiguous();
  Tensor out = empty(x.shape(), dtype, x.device());
  if (out.numel() == 0) return out;
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= x.shape()[d];
  for (int d = axis + 1; d < x.rank(); ++d) inner *= x.shape()[d];
  if (x.device().is_cuda()) {
    cuda_detail::use_device_of(x);
    kernels::cuda::scan_lines(src.device_data(), out.device_data(), cuda_detail::element_type(dtype), outer,
                              x.shape()[axis], inner, reverse, kDiscounted, discount);
    return out;
  }
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T> || (!kDiscounted && std::is_same_v<T, int64_t>)) {
      detail::KernelScope scope;
      detail::run_kernel([in = static_cast<const T*>(src.raw_data()), o = static_cast<T*>(out.raw_data()), outer,
                          n = x.shape()[axis], inner, reverse, discount] {
        scan_blocks<T, kDiscounted>(in, o, outer, n, inner, reverse, discount);
      });
    } else {
      CTRAX_CHECK(false, op, ": unexpected result dtype ", dtype);
    }
  });
  return out;
}

}  // namespace

Tensor cumsum(const Tensor& x, int axis, bool reverse) {
  return traced_op(OpId::cumsum, {&x}, [&] {
    require_defined(x, "cumsum");
    const DType dtype = is_floating(x.dtype()) ? x.dtype() : DType::int64;
    return scan<false>(x, axis, reverse, 1.0, dtype, "cumsum");
  }, [&] { return OpAttrs{AxisAttrs{axis, reverse}}; });
}

Tensor discounted_cumsum(const Tensor& x, int axis, double discount) {
  return traced_op(OpId::discounted_cumsum, {&x}, [&] {
    require_defined(x, "discounted_cumsum");
    CTRAX_REQUIRE(std::isfinite(discount), "discounted_cumsum: discount must be finite, got ", discount);
    const DType dtype = is_floating(x.dtype()) ? x.dtype() : DType::float32;
    return scan<true>(x, axis, true, discount, dtype, "discounted_cumsum");
  }, [&] { return OpAttrs{ScalarAttrs{discount, 0.0, axis}}; });
}

}  // namespace ctrax
