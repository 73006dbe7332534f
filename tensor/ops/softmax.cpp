// softmax and log_softmax along one axis.
//
// What it is for: the numerically stable forms
//     softmax(x)_i     = exp(x_i - m) / sum_j exp(x_j - m)
//     log_softmax(x)_i = (x_i - m) - log(sum_j exp(x_j - m)),    m = max_j x_j
// Subtracting the maximum makes every exponent <= 0, so nothing overflows (x = 1e30 is fine)
// and the largest term is exactly 1, so the sum never underflows to 0. log_softmax subtracts m
// before the log term (not m + log(sum) at once), which keeps -log 2 when m = 1e30 in float32.
// What it is not for: logsumexp as a reduction (reduce.cpp) or gradients.
//
// Edge cases: a row that is all -inf has m = -inf and x - m = NaN, so the row is NaN, as in
// NumPy and JAX (no "probabilities" exist for it); a +inf entry likewise gives a NaN row; a NaN
// entry makes its row NaN. An empty axis gives an empty result. Integer and bool inputs give
// float32. The row sums accumulate in double (pairwise, see reduce_util.h).
//
// Layout: the input is made contiguous in the result dtype (a no-op for the usual contiguous
// float input) and viewed as (outer, n, inner) with n the softmax axis. inner == 1 (the last
// axis) walks each row in memory; inner > 1 keeps one running max and sum per inner position
// and sweeps whole rows, so the inner loops still run along memory.
//
// On a GPU (kernels/cuda/softmax.h) the axis is permuted innermost and the rows made
// contiguous, one kernel computes every row with the same numerics, and the result is
// permuted back into x's shape (contiguous). With backend(CudaOp::softmax) == cudnn
// (kernels/cuda/backend.h) cudnnSoftmaxForward computes the rows instead of ctrax's kernel; the
// permutes around it are the same, so a benchmark compares the two row kernels on one call.
// cuDNN sums in the element type, so its float32 rows may differ from the CPU's in the last bits.
#include <climits>
#include <cmath>
#include <limits>
#include <vector>

#include "../trace.h"
#include "../../kernels/cuda/backend.h"
#include "../../kernels/cuda/softmax.h"
#include "../../kernels/cuda/cudnn.h"
#include "../../kernels/parallel.h"
#include "../cuda_arg.h"
#include "../ops.h"
#include "../plan.h"
#include "reduce_util.h"

namespace ctrax {

namespace {

struct AxisView {
  int64_t outer = 1, n = 1, inner = 1;
};

AxisView axis_view(const Shape& shape, int axis) {
  AxisView v;
  for (int d = 0; d < axis; ++d) v.outer *= shape[d];
  v.n = shape[axis];
  for (int d = axis + 1; d < shape.rank(); ++d) v.inner *= shape[d];
  return v;
}

// out[i] = exp(x[i] - shift[i * shift_step]). (std::exp is scalar; kernels::unary_kernel's
// vectorised exp can replace this loop once kernels/elementwise is part of the build.)
template <typename T>
void exp_shifted(const T* x, const T* shift, int64_t shift_step, T* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = std::exp(x[i] - shift[i * shift_step]);
}

// One contiguous row of length n: the max, the exponentials (written into y), their sum.
template <typename T, bool kLog>
void softmax_row(const T* x, T* y, int64_t n) {
  T m = -std::numeric_limits<T>::infinity();
  for (int64_t i = 0; i < n; ++i) m = (x[i] > m || x[i] != x[i]) ? x[i] : m;
  exp_shifted(x, &m, 0, y, n);
  const double s = detail::pairwise_sum(y, n);
  if constexpr (kLog) {
    const double log_s = std::log(s);
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<T>(static_cast<double>(x[i] - m) - log_s);
  } else {
    const T scale = static_cast<T>(1.0 / s);
    for (int64_t i = 0; i < n; ++i) y[i] *= scale;
  }
}

// A block (n, inner) with the softmax axis strided by `inner`: one running max and sum per
// inner position, each pass sweeping whole rows.
template <typename T, bool kLog>
void softmax_block(const T* x, T* y, int64_t n, int64_t inner, std::vector<T>& m, std::vector<double>& s) {
  m.assign(static_cast<size_t>(inner), -std::numeric_limits<T>::infinity());
  s.assign(static_cast<size_t>(inner), 0.0);
  for (int64_t t = 0; t < n; ++t) {
    const T* row = x + t * inner;
    for (int64_t j = 0; j < inner; ++j) m[j] = (row[j] > m[j] || row[j] != row[j]) ? row[j] : m[j];
  }
  for (int64_t t = 0; t < n; ++t) {
    T* out = y + t * inner;
    exp_shifted(x + t * inner, m.data(), 1, out, inner);
    for (int64_t j = 0; j < inner; ++j) s[j] += static_cast<double>(out[j]);
  }
  for (int64_t t = 0; t < n; ++t) {
    const T* row = x + t * inner;
    T* out = y + t * inner;
    for (int64_t j = 0; j < inner; ++j) {
      if constexpr (kLog) out[j] = static_cast<T>(static_cast<double>(row[j] - m[j]) - std::log(s[j]));
      else out[j] *= static_cast<T>(1.0 / s[j]);
    }
  }
}

// The GPU path, after softmax_impl's checks. Without the CUDA backend no tensor lives on a
// GPU, so it is never reached.
Tensor cuda_softmax(const Tensor& x, int axis, DType dtype, bool log) {
  cuda_detail::use_device_of(x);
  std::vector<int> perm, inverse(static_cast<size_t>(x.rank()));
  for (int d = 0; d < x.rank(); ++d)
    if (d != axis) perm.push_back(d);
  perm.push_back(axis);
  for (int i = 0; i < x.rank(); ++i) inverse[static_cast<size_t>(perm[static_cast<size_t>(i)])] = i;
  const Tensor src = x.to(dtype).permute(perm).contiguous();
  Tensor y(src.shape(), dtype, x.device());
  const int64_t n = x.shape()[axis];
  if (y.numel() > 0) {
    // cuDNN describes the rows with int sizes; beyond them the hand-written kernel runs.
    if (kernels::cuda::backend(kernels::cuda::CudaOp::softmax) == kernels::cuda::CudaBackend::cudnn &&
        y.numel() <= INT_MAX) {
      kernels::cuda::cudnn_softmax_rows(src.device_data(), y.device_data(), cuda_detail::element_type(dtype),
                                        y.numel() / n, n, log);
      return y.permute(inverse).contiguous();
    }
    kernels::cuda::softmax_rows(src.device_data(), y.device_data(), cuda_detail::element_type(dtype), y.numel() / n, n, log);
  }
  return y.permute(inverse).contiguous();
}

template <bool kLog>
Tensor softmax_impl(const Tensor& x, int axis_in, const char* op) {
  CTRAX_REQUIRE(x.defined(), op, ": the input tensor is undefined (default-constructed)");
  CTRAX_REQUIRE(x.rank() >= 1, op, ": needs a tensor of rank >= 1 to pick an axis, got shape ", x.shape());
  const int axis = normalize_axis(axis_in, x.rank(), op);
  const DType dtype = is_floating(x.dtype()) ? x.dtype() : DType::float32;
  if (x.device().is_cuda()) return cuda_softmax(x, axis, dtype, kLog);
  const Tensor src = x.to(dtype).contiguous();
  Tensor out = empty(x.shape(), dtype);
  if (out.numel() == 0) return out;
  const AxisView v = axis_view(x.shape(), axis);
  dispatch_floating(dtype, [&](auto tag) {
    using T = decltype(tag);
    detail::KernelScope scope;
    const T* in = static_cast<const T*>(src.raw_data());
    T* y = static_cast<T*>(out.raw_data());
    detail::run_kernel([in, y, v] {
      const int64_t block = v.n * v.inner;  // elements per outer index
      auto blocks = [&](int64_t begin, int64_t end) {
        std::vector<T> m;
        std::vector<double> s;
        for (int64_t o = begin; o < end; ++o) {
          if (v.inner == 1) softmax_row<T, kLog>(in + o * block, y + o * block, v.n);
          else softmax_block<T, kLog>(in + o * block, y + o * block, v.n, v.inner, m, s);
        }
      };
      if (v.outer * block <= detail::kReduceGrain) blocks(0, v.outer);
      else kernels::parallel_for(v.outer, std::max<int64_t>(1, detail::kReduceGrain / block), blocks);
    });
  });
  return out;
}

}  // namespace

Tensor softmax(const Tensor& x, int axis) { return traced_op(OpId::softmax, {&x}, [&] { return softmax_impl<false>(x, axis, "softmax"); }, [&] { return OpAttrs{AxisAttrs{axis, false}}; }); }

Tensor log_softmax(const Tensor& x, int axis) { return traced_op(OpId::log_softmax, {&x}, [&] { return softmax_impl<true>(x, axis, "log_softmax"); }, [&] { return OpAttrs{AxisAttrs{axis, false}}; }); }

}  // namespace ctrax
