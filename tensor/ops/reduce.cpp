// Reductions: sum, mean, var, std, max, min, prod, logsumexp, any, all, argmax, argmin.
//
// What it is for: the arithmetic of each reduction, written as a small policy (init / step /
// finish, see reduce_util.h) that the shared loop machinery runs over any strided input.
// What it is not for: scans (scan.cpp) or softmax (softmax.cpp), which keep every element.
//
// Accuracy of floating sums (sum, mean, var, logsumexp). Every floating sum accumulates in
// double. Contiguous runs are summed pairwise: blocks of up to 128 elements are added with 8
// independent accumulators (a vectorisable loop), and the block sums are combined by
// recursive halving. With u = 2^-53 the error of the double sum is at most about
// (16 + log2(n / 128)) * u * sum|x| (Higham, "Accuracy and Stability of Numerical
// Algorithms", 4.2); strided runs and row-mode accumulation add sequentially in double, bound
// n * u * sum|x|. For float32 results that is far below the final rounding to float32
// (2^-24 relative), so a float32 sum is within about one float32 ulp of the exact sum for any
// n up to 10^9. Integer and bool sums and products wrap modulo 2^64 (as NumPy's int64 does),
// computed in unsigned arithmetic so that overflow is defined.
//
// On a GPU (kernels/cuda/reduce.h) the same checks and result dtypes apply; the input is
// permuted so that the reduced axes come last and made contiguous, and one kernel reduces the
// resulting rows. Sums still accumulate in double, only in a tree order across threads.
//
// var is two-pass: the mean first, then the mean of squared deviations from it, which avoids
// the cancellation of E[x^2] - E[x]^2. When n - correction <= 0 the result is NaN (as NumPy
// and PyTorch, which also warn).
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "../../kernels/cuda/reduce.h"
#include "../../kernels/elementwise/elementwise.h"
#include "../cuda_arg.h"
#include "../ops.h"
#include "../plan.h"
#include "../trace.h"
#include "op_kinds.h"
#include "reduce_util.h"

namespace ctrax {

namespace {

using detail::ReducePlan;

// ---------------------------------------------------------------------------------------------
// Floating summation
// ---------------------------------------------------------------------------------------------

// Sum (divisor 1) or mean (divisor n) of any element type, accumulated in double.
template <typename T, typename O>
struct SumInDouble {
  using In = T;
  using Acc = double;
  using Out = O;
  double divisor = 1.0;
  Acc init(int64_t) const { return 0.0; }
  Acc step(Acc a, In x, int64_t) const { return a + static_cast<double>(x); }
  Acc run(Acc a, const In* x, int64_t n, int64_t stride, int64_t) const {
    if (stride == 1) return a + detail::pairwise_sum(x, n);
    for (int64_t i = 0; i < n; ++i) a += static_cast<double>(x[i * stride]);
    return a;
  }
  // The same additions as step(), column by column in row order, on the widest ISA.
  void add_rows(Acc* acc, const In* x, int64_t rows, int64_t row_stride, int64_t w) const
    requires std::is_floating_point_v<T>
  {
    kernels::accumulate_rows(x, rows, row_stride, acc, w);
  }
  Out finish(Acc a) const { return static_cast<Out>(a / divisor); }
};

// Integer and bool sums: int64 result, wrapping (unsigned arithmetic has no overflow UB).
template <typename T>
struct SumInteger {
  using In = T;
  using Acc = uint64_t;
  using Out = int64_t;
  Acc init(int64_t) const { return 0; }
  Acc step(Acc a, In x, int64_t) const { return a + static_cast<uint64_t>(static_cast<int64_t>(x)); }
  Out finish(Acc a) const { return static_cast<int64_t>(a); }
};

template <typename T>
struct ProdFloating {
  using In = T;
  using Acc = double;
  using Out = T;
  Acc init(int64_t) const { return 1.0; }
  Acc step(Acc a, In x, int64_t) const { return a * static_cast<double>(x); }
  Out finish(Acc a) const { return static_cast<Out>(a); }
};

template <typename T>
struct ProdInteger {
  using In = T;
  using Acc = uint64_t;
  using Out = int64_t;
  Acc init(int64_t) const { return 1; }
  Acc step(Acc a, In x, int64_t) const { return a * static_cast<uint64_t>(static_cast<int64_t>(x)); }
  Out finish(Acc a) const { return static_cast<int64_t>(a); }
};

// Second pass of var/std: squared deviations from a per-output centre (the mean).
template <typename T, typename O>
struct SquaredDeviation {
  struct Acc {
    double sum_sq = 0.0;
    double centre = 0.0;
  };
  using In = T;
  using Out = O;
  const double* means;
  double dof;  // n - correction; <= 0 gives NaN
  bool take_sqrt;
  Acc init(int64_t o) const { return {0.0, means[o]}; }
  Acc step(Acc a, In x, int64_t) const {
    const double d = static_cast<double>(x) - a.centre;
    a.sum_sq += d * d;
    return a;
  }
  Out finish(Acc a) const {
    const double v = dof > 0 ? a.sum_sq / dof : std::numeric_limits<double>::quiet_NaN();
    return static_cast<Out>(take_sqrt ? std::sqrt(v) : v);
  }
};

// ---------------------------------------------------------------------------------------------
// Extrema, logsumexp, any/all, arg-extrema
// ---------------------------------------------------------------------------------------------

template <typename T>
constexpr T lowest_value() {
  if constexpr (std::is_floating_point_v<T>) return -std::numeric_limits<T>::infinity();
  else return std::numeric_limits<T>::lowest();
}
template <typename T>
constexpr T highest_value() {
  if constexpr (std::is_floating_point_v<T>) return std::numeric_limits<T>::infinity();
  else return std::numeric_limits<T>::max();
}

// max (kMax) or min. A NaN element wins and then stays: `x != x` is true only for NaN, and no
// comparison with a NaN accumulator is true, so it is never replaced.
template <typename T, bool kMax, typename O = T>
struct Extremum {
  using In = T;
  using Acc = T;
  using Out = O;
  Acc init(int64_t) const { return kMax ? lowest_value<T>() : highest_value<T>(); }
  Acc step(Acc a, In x, int64_t) const {
    const bool better = kMax ? x > a : x < a;
    return (better || x != x) ? x : a;
  }
  Out finish(Acc a) const { return static_cast<Out>(a); }
};

// Second pass of logsumexp: sum of exp(x - m) with m the per-output maximum, so no term
// exceeds 1 and nothing overflows. m = -inf (all -inf) gives -inf, m = +inf gives +inf and
// m = NaN gives NaN, all without evaluating inf - inf.
template <typename T, typename O>
struct ShiftedExpSum {
  struct Acc {
    double sum = 0.0;
    double shift = 0.0;
  };
  using In = T;
  using Out = O;
  const double* maxima;
  Acc init(int64_t o) const { return {0.0, maxima[o]}; }
  Acc step(Acc a, In x, int64_t) const {
    if (std::isfinite(a.shift)) a.sum += std::exp(static_cast<double>(x) - a.shift);
    return a;
  }
  Out finish(Acc a) const {
    if (!std::isfinite(a.shift)) return static_cast<Out>(a.shift);
    return static_cast<Out>(a.shift + std::log(a.sum));
  }
};

template <typename T, bool kAny>
struct AnyAll {
  using In = T;
  using Acc = bool;
  using Out = uint8_t;
  Acc init(int64_t) const { return !kAny; }
  Acc step(Acc a, In x, int64_t) const { return kAny ? (a || x != In(0)) : (a && x != In(0)); }
  // A whole run at once: a count of nonzero entries instead of a branch per element, which the
  // compiler vectorises (a loss's mask check over [256, 1] went from about 0.2 to 0.05 us).
  Acc run(Acc a, const In* x, int64_t n, int64_t stride, int64_t) const {
    if (kAny ? a : !a) return a;  // decided already
    int64_t nonzero = 0;
    if (stride == 1) {
      for (int64_t i = 0; i < n; ++i) nonzero += x[i] != In(0) ? 1 : 0;
    } else {
      for (int64_t i = 0; i < n; ++i) nonzero += x[i * stride] != In(0) ? 1 : 0;
    }
    return kAny ? nonzero > 0 : nonzero == n;
  }
  Out finish(Acc a) const { return a ? 1 : 0; }
};

// Position of the first maximum (kMax) or minimum; the first NaN beats everything.
template <typename T, bool kMax>
struct ArgExtremum {
  struct Acc {
    T best{};
    int64_t index = -1;
  };
  using In = T;
  using Out = int64_t;
  Acc init(int64_t) const { return {}; }
  Acc step(Acc a, In x, int64_t pos) const {
    const bool best_is_nan = a.best != a.best;
    const bool better = kMax ? x > a.best : x < a.best;
    if (a.index < 0 || (!best_is_nan && (better || x != x))) {
      a.best = x;
      a.index = pos;
    }
    return a;
  }
  Out finish(Acc a) const { return a.index; }
};

// ---------------------------------------------------------------------------------------------
// Running a policy
// ---------------------------------------------------------------------------------------------

template <typename P>
Tensor reduce_into(const Tensor& x, const ReducePlan& plan, DType out_dtype, const P& p) {
  Tensor out = empty(plan.out_shape, out_dtype);
  detail::KernelScope scope;
  const auto* in = static_cast<const typename P::In*>(x.raw_data());
  auto* o = static_cast<typename P::Out*>(out.raw_data());
  detail::run_kernel([layout = plan.layout, in, o, p] { detail::run_reduction(layout, in, o, p); });
  return out;
}

// The GPU path of every reduction, after the op's own checks: the reduced axes are moved last
// (in their order, so a row position is the row-major position argmax reports) and the rows
// are reduced by one kernel. Without the CUDA backend no tensor lives on a GPU, so it is
// never reached.
Tensor cuda_reduce(const Tensor& x, const ReducePlan& plan, OpId op, DType out_dtype, int64_t correction = 0) {
  cuda_detail::use_device_of(x);
  Tensor out(plan.out_shape, out_dtype, x.device());
  if (plan.layout.n_out == 0) return out;
  const Tensor rows = x.permute(plan.kept_then_reduced).contiguous();
  kernels::cuda::reduce_rows(ops_detail::cuda_reduce_op(op), rows.device_data(), cuda_detail::element_type(x.dtype()), out.device_data(),
                             cuda_detail::element_type(out_dtype), plan.layout.n_out, plan.layout.n_red, correction);
  return out;
}

// mean/var/max/min/argmax/logsumexp have no value on an empty set.
void require_elements(const Tensor& x, const ReducePlan& plan, const std::vector<int>& axes, const char* op) {
  CTRAX_REQUIRE(plan.layout.n_red > 0 || plan.layout.n_out == 0, op,
                ": cannot reduce over zero elements (input shape ", x.shape(), ", axes ",
                detail::axes_to_string(axes), "); ", op, " of an empty set is undefined");
}

DType real_result_dtype(DType d) { return is_floating(d) ? d : DType::float32; }

// A host buffer of per-output doubles between the two passes of var/std and logsumexp, filled
// by a kernel (so a recorded plan refills it on every replay). Shared with the kernels that
// read it, which keeps it alive as long as a plan holds them.
using HostScratch = std::shared_ptr<std::vector<double>>;

// Per-output means in double (pass one of var/std).
template <typename T>
HostScratch means_of(const Tensor& x, const ReducePlan& plan) {
  auto means = std::make_shared<std::vector<double>>(static_cast<size_t>(plan.layout.n_out));
  SumInDouble<T, double> p;
  p.divisor = static_cast<double>(plan.layout.n_red);
  detail::KernelScope scope;
  detail::run_kernel([layout = plan.layout, in = static_cast<const T*>(x.raw_data()), means, p] {
    detail::run_reduction(layout, in, means->data(), p);
  });
  return means;
}

// reduce_into with a policy that reads `scratch`, which the kernel keeps alive.
template <typename P>
Tensor reduce_into_reading(const Tensor& x, const ReducePlan& plan, DType out_dtype, const P& p, HostScratch scratch) {
  Tensor out = empty(plan.out_shape, out_dtype);
  detail::KernelScope scope;
  const auto* in = static_cast<const typename P::In*>(x.raw_data());
  auto* o = static_cast<typename P::Out*>(out.raw_data());
  detail::run_kernel([layout = plan.layout, in, o, p, scratch] { detail::run_reduction(layout, in, o, p); });
  return out;
}

Tensor variance(const Tensor& x, const std::vector<int>& axes, bool keepdims, int64_t correction, bool take_sqrt,
                const char* op) {
  const ReducePlan plan = detail::plan_reduce(x, axes, keepdims, op);
  CTRAX_REQUIRE(correction >= 0, op, ": correction must be >= 0, got ", correction);
  require_elements(x, plan, axes, op);
  const DType out_dtype = real_result_dtype(x.dtype());
  if (x.device().is_cuda()) return cuda_reduce(x, plan, take_sqrt ? OpId::std : OpId::var, out_dtype, correction);
  return dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const HostScratch means = means_of<T>(x, plan);
    return dispatch_floating(out_dtype, [&](auto out_tag) {
      using O = decltype(out_tag);
      SquaredDeviation<T, O> p{means->data(), static_cast<double>(plan.layout.n_red - correction), take_sqrt};
      return reduce_into_reading(x, plan, out_dtype, p, means);
    });
  });
}

template <bool kMax>
Tensor extremum(const Tensor& x, const std::vector<int>& axes, bool keepdims, const char* op) {
  const ReducePlan plan = detail::plan_reduce(x, axes, keepdims, op);
  require_elements(x, plan, axes, op);
  if (x.device().is_cuda()) return cuda_reduce(x, plan, kMax ? OpId::max : OpId::min, x.dtype());
  return dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    return reduce_into(x, plan, x.dtype(), Extremum<T, kMax>{});
  });
}

template <bool kAny>
Tensor any_all(const Tensor& x, const std::vector<int>& axes, bool keepdims, const char* op) {
  const ReducePlan plan = detail::plan_reduce(x, axes, keepdims, op);
  if (x.device().is_cuda()) return cuda_reduce(x, plan, kAny ? OpId::any : OpId::all, DType::boolean);
  return dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    return reduce_into(x, plan, DType::boolean, AnyAll<T, kAny>{});
  });
}

template <bool kMax>
Tensor arg_extremum(const Tensor& x, const std::vector<int>& axes, bool keepdims, const char* op) {
  const ReducePlan plan = detail::plan_reduce(x, axes, keepdims, op);
  require_elements(x, plan, axes, op);
  if (x.device().is_cuda()) return cuda_reduce(x, plan, kMax ? OpId::argmax : OpId::argmin, DType::int64);
  return dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    return reduce_into(x, plan, DType::int64, ArgExtremum<T, kMax>{});
  });
}

std::vector<int> all_axes(const Tensor& x) {
  std::vector<int> axes(static_cast<size_t>(x.rank()));
  for (int d = 0; d < x.rank(); ++d) axes[static_cast<size_t>(d)] = d;
  return axes;
}

// What a reduction's backward needs (tensor/trace.h).
OpAttrs reduce_attrs(const std::vector<int>& axes, bool keepdims, int64_t correction = 0) {
  ReduceAttrs a;
  for (int axis : axes) a.axes.push_back(axis);
  a.keepdims = keepdims;
  a.correction = correction;
  return a;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Public ops
// ---------------------------------------------------------------------------------------------

Tensor sum(const Tensor& x, const std::vector<int>& axes, bool keepdims) {
  return traced_op(OpId::sum, {&x}, [&] {
    const ReducePlan plan = detail::plan_reduce(x, axes, keepdims, "sum");
    if (x.device().is_cuda())
      return cuda_reduce(x, plan, OpId::sum, is_floating(x.dtype()) ? x.dtype() : DType::int64);
    return dispatch_dtype(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_floating_point_v<T>) return reduce_into(x, plan, x.dtype(), SumInDouble<T, T>{});
      else return reduce_into(x, plan, DType::int64, SumInteger<T>{});
    });
  }, [&] { return reduce_attrs(axes, keepdims); });
}

Tensor mean(const Tensor& x, const std::vector<int>& axes, bool keepdims) {
  return traced_op(OpId::mean, {&x}, [&] {
    const ReducePlan plan = detail::plan_reduce(x, axes, keepdims, "mean");
    require_elements(x, plan, axes, "mean");
    const DType out_dtype = real_result_dtype(x.dtype());
    if (x.device().is_cuda()) return cuda_reduce(x, plan, OpId::mean, out_dtype);
    return dispatch_dtype(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      return dispatch_floating(out_dtype, [&](auto out_tag) {
        using O = decltype(out_tag);
        SumInDouble<T, O> p;
        p.divisor = static_cast<double>(plan.layout.n_red);
        return reduce_into(x, plan, out_dtype, p);
      });
    });
  }, [&] { return reduce_attrs(axes, keepdims); });
}

Tensor var(const Tensor& x, const std::vector<int>& axes, bool keepdims, int64_t correction) {
  return traced_op(OpId::var, {&x}, [&] {
    return variance(x, axes, keepdims, correction, false, "var");
  }, [&] { return reduce_attrs(axes, keepdims, correction); });
}

Tensor std(const Tensor& x, const std::vector<int>& axes, bool keepdims, int64_t correction) {
  return traced_op(OpId::std, {&x}, [&] {
    return variance(x, axes, keepdims, correction, true, "std");
  }, [&] { return reduce_attrs(axes, keepdims, correction); });
}

Tensor max(const Tensor& x, const std::vector<int>& axes, bool keepdims) {
  return traced_op(OpId::max, {&x}, [&] {
    return extremum<true>(x, axes, keepdims, "max");
  }, [&] { return reduce_attrs(axes, keepdims); });
}

Tensor min(const Tensor& x, const std::vector<int>& axes, bool keepdims) {
  return traced_op(OpId::min, {&x}, [&] {
    return extremum<false>(x, axes, keepdims, "min");
  }, [&] { return reduce_attrs(axes, keepdims); });
}

Tensor prod(const Tensor& x, const std::vector<int>& axes, bool keepdims) {
  return traced_op(OpId::prod, {&x}, [&] {
    const ReducePlan plan = detail::plan_reduce(x, axes, keepdims, "prod");
    if (x.device().is_cuda())
      return cuda_reduce(x, plan, OpId::prod, is_floating(x.dtype()) ? x.dtype() : DType::int64);
    return dispatch_dtype(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_floating_point_v<T>) return reduce_into(x, plan, x.dtype(), ProdFloating<T>{});
      else return reduce_into(x, plan, DType::int64, ProdInteger<T>{});
    });
  }, [&] { return reduce_attrs(axes, keepdims); });
}

Tensor logsumexp(const Tensor& x, const std::vector<int>& axes, bool keepdims) {
  return traced_op(OpId::logsumexp, {&x}, [&] {
    const ReducePlan plan = detail::plan_reduce(x, axes, keepdims, "logsumexp");
    require_elements(x, plan, axes, "logsumexp");
    const DType out_dtype = real_result_dtype(x.dtype());
    if (x.device().is_cuda()) return cuda_reduce(x, plan, OpId::logsumexp, out_dtype);
    return dispatch_dtype(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      auto maxima = std::make_shared<std::vector<double>>(static_cast<size_t>(plan.layout.n_out));
      {
        detail::KernelScope scope;
        detail::run_kernel([layout = plan.layout, in = static_cast<const T*>(x.raw_data()), maxima] {
          detail::run_reduction(layout, in, maxima->data(), Extremum<T, true, double>{});
        });
      }
      return dispatch_floating(out_dtype, [&](auto out_tag) {
        using O = decltype(out_tag);
        return reduce_into_reading(x, plan, out_dtype, ShiftedExpSum<T, O>{maxima->data()}, maxima);
      });
    });
  }, [&] { return reduce_attrs(axes, keepdims); });
}

Tensor any(const Tensor& x, const std::vector<int>& axes, bool keepdims) {
  return any_all<true>(x, axes, keepdims, "any");
}

Tensor all(const Tensor& x, const std::vector<int>& axes, bool keepdims) {
  return any_all<false>(x, axes, keepdims, "all");
}

Tensor argmax(const Tensor& x, int axis, bool keepdims) {
  return arg_extremum<true>(x, {axis}, keepdims, "argmax");
}

Tensor argmin(const Tensor& x, int axis, bool keepdims) {
  return arg_extremum<false>(x, {axis}, keepdims, "argmin");
}

// Over the flattened tensor: reducing every axis visits elements in row-major order, so the
// position the policy records is the flat index.
Tensor argmax(const Tensor& x) {
  CTRAX_REQUIRE(x.defined(), "argmax: the input tensor is undefined (default-constructed)");
  return arg_extremum<true>(x, all_axes(x), false, "argmax");
}

Tensor argmin(const Tensor& x) {
  CTRAX_REQUIRE(x.defined(), "argmin: the input tensor is undefined (default-constructed)");
  return arg_extremum<false>(x, all_axes(x), false, "argmin");
}

}  // namespace ctrax
