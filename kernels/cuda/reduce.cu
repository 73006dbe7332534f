// Row reductions (reduce.h).
//
// Layout of the work: a "group" of G threads reduces one row (G = 32, a warp, for rows of up
// to 256 elements, so short rows do not leave 224 threads of a block idle; G = 256, a block,
// otherwise). Thread t of a group folds elements t, t + G, t + 2G, ... sequentially, then the
// G partial results are combined by a shuffle tree within each warp and, for G = 256, through
// shared memory across the 8 warps. Every combine is associative for the exact arithmetic it
// stands for (integer sums and products mod 2^64, max/min, and/or, arg-extrema with an
// explicit index tie-break), so only floating sums depend on the order, and those accumulate
// in double.
#include "reduce.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "cuda_check.h"
#include "group_reduce.cuh"
#include "indexing.cuh"
#include "runtime.h"

namespace ctrax::kernels::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kWarp = device::kWarpSize;
using device::group_reduce;

template <typename T>
__device__ __forceinline__ bool is_nan(T v) {
  return v != v;  // false for every integer
}

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

// ---- Single-pass policies: init, step (fold one element at its row position), combine, finish.

// Floating sum or mean (divisor n) of any input, in double.
template <typename T, typename O>
struct SumDouble {
  using In = T;
  using Acc = double;
  using Out = O;
  double divisor;
  __device__ Acc init() const { return 0.0; }
  __device__ Acc step(Acc a, In x, int64_t) const { return a + static_cast<double>(x); }
  __device__ Acc combine(Acc a, Acc b) const { return a + b; }
  __device__ Out finish(Acc a) const { return static_cast<Out>(a / divisor); }
};

// Integer/bool sums wrap modulo 2^64 like the CPU's.
template <typename T>
struct SumInteger {
  using In = T;
  using Acc = unsigned long long;
  using Out = int64_t;
  __device__ Acc init() const { return 0; }
  __device__ Acc step(Acc a, In x, int64_t) const {
    return a + static_cast<Acc>(static_cast<int64_t>(x));
  }
  __device__ Acc combine(Acc a, Acc b) const { return a + b; }
  __device__ Out finish(Acc a) const { return static_cast<Out>(a); }
};

template <typename T>
struct ProdFloating {
  using In = T;
  using Acc = double;
  using Out = T;
  __device__ Acc init() const { return 1.0; }
  __device__ Acc step(Acc a, In x, int64_t) const { return a * static_cast<double>(x); }
  __device__ Acc combine(Acc a, Acc b) const { return a * b; }
  __device__ Out finish(Acc a) const { return static_cast<Out>(a); }
};

template <typename T>
struct ProdInteger {
  using In = T;
  using Acc = unsigned long long;
  using Out = int64_t;
  __device__ Acc init() const { return 1; }
  __device__ Acc step(Acc a, In x, int64_t) const {
    return a * static_cast<Acc>(static_cast<int64_t>(x));
  }
  __device__ Acc combine(Acc a, Acc b) const { return a * b; }
  __device__ Out finish(Acc a) const { return static_cast<Out>(a); }
};

// max/min: a NaN wins and then stays (no comparison with a NaN accumulator is true).
template <typename T, bool kMax>
struct Extremum {
  using In = T;
  using Acc = T;
  using Out = T;
  __device__ Acc init() const { return kMax ? lowest_value<T>() : highest_value<T>(); }
  __device__ Acc step(Acc a, In x, int64_t) const {
    const bool better = kMax ? x > a : x < a;
    return (better || is_nan(x)) ? x : a;
  }
  __device__ Acc combine(Acc a, Acc b) const { return step(a, b, 0); }
  __device__ Out finish(Acc a) const { return a; }
};

template <typename T, bool kAny>
struct AnyAll {
  using In = T;
  using Acc = int;
  using Out = uint8_t;
  __device__ Acc init() const { return kAny ? 0 : 1; }
  __device__ Acc step(Acc a, In x, int64_t) const { return kAny ? (a | (x != In(0))) : (a & (x != In(0))); }
  __device__ Acc combine(Acc a, Acc b) const { return kAny ? (a | b) : (a & b); }
  __device__ Out finish(Acc a) const { return a ? 1 : 0; }
};

// First position of the maximum (kMax) or minimum; the first NaN beats everything. A thread
// sees its positions in increasing order, so step keeps the CPU's rule; combine picks by
// value and breaks ties (equal values, or two NaNs) by the smaller position.
template <typename T, bool kMax>
struct ArgExtremum {
  struct Acc {
    T best;
    long long index;  // -1: nothing seen yet
  };
  using In = T;
  using Out = int64_t;
  __device__ Acc init() const { return Acc{T{}, -1}; }
  __device__ Acc step(Acc a, In x, int64_t pos) const {
    const bool better = kMax ? x > a.best : x < a.best;
    if (a.index < 0 || (!is_nan(a.best) && (better || is_nan(x)))) return Acc{x, pos};
    return a;
  }
  __device__ Acc combine(Acc a, Acc b) const {
    if (b.index < 0) return a;
    if (a.index < 0) return b;
    const bool a_nan = is_nan(a.best), b_nan = is_nan(b.best);
    if (a_nan || b_nan) {
      if (a_nan && b_nan) return a.index < b.index ? a : b;
      return a_nan ? a : b;
    }
    if (kMax ? b.best > a.best : b.best < a.best) return b;
    if (kMax ? a.best > b.best : a.best < b.best) return a;
    return a.index < b.index ? a : b;
  }
  __device__ Out finish(Acc a) const { return a.index; }
};

template <int G, typename P>
__global__ void reduce_rows_kernel(P p, const typename P::In* x, typename P::Out* out, int64_t rows, int64_t len) {
  using Acc = typename P::Acc;
  __shared__ alignas(16) unsigned char shared_bytes[(kThreads / kWarp) * sizeof(Acc)];
  Acc* shared = reinterpret_cast<Acc*>(shared_bytes);
  constexpr int kGroups = kThreads / G;
  const int t = threadIdx.x % G;
  for (int64_t r = blockIdx.x * int64_t{kGroups} + threadIdx.x / G; r < rows; r += int64_t{gridDim.x} * kGroups) {
    const typename P::In* row = x + r * len;
    Acc a = p.init();
    for (int64_t i = t; i < len; i += G) a = p.step(a, row[i], i);
    a = group_reduce<G>(a, [&](Acc u, Acc v) { return p.combine(u, v); }, shared);
    if (t == 0) out[r] = p.finish(a);
  }
}

// Few long rows (a full reduction of a large tensor): one block per row would leave most of
// the GPU idle, so each row is cut into `chunks` pieces of `chunk_len` elements, one block per
// piece writes its partial accumulator, and reduce_partials_kernel combines each row's
// partials. Positions stay global (argmax) and every combine is the one used within a block.
template <typename P>
__global__ void reduce_chunks_kernel(P p, const typename P::In* x, typename P::Acc* partial, int64_t rows,
                                     int64_t len, int64_t chunks, int64_t chunk_len) {
  using Acc = typename P::Acc;
  __shared__ alignas(16) unsigned char shared_bytes[(kThreads / kWarp) * sizeof(Acc)];
  Acc* shared = reinterpret_cast<Acc*>(shared_bytes);
  for (int64_t b = blockIdx.x; b < rows * chunks; b += gridDim.x) {
    const int64_t r = b / chunks, c = b % chunks;
    const typename P::In* row = x + r * len;
    const int64_t end = min(len, (c + 1) * chunk_len);
    Acc a = p.init();
    for (int64_t i = c * chunk_len + threadIdx.x; i < end; i += kThreads) a = p.step(a, row[i], i);
    a = group_reduce<kThreads>(a, [&](Acc u, Acc v) { return p.combine(u, v); }, shared);
    if (threadIdx.x == 0) partial[b] = a;
  }
}

// One warp per row folds the row's `chunks` partial accumulators.
template <typename P>
__global__ void reduce_partials_kernel(P p, const typename P::Acc* partial, typename P::Out* out, int64_t rows,
                                       int64_t chunks) {
  using Acc = typename P::Acc;
  constexpr int kGroups = kThreads / kWarp;
  const int t = threadIdx.x % kWarp;
  for (int64_t r = blockIdx.x * int64_t{kGroups} + threadIdx.x / kWarp; r < rows; r += int64_t{gridDim.x} * kGroups) {
    Acc a = p.init();
    for (int64_t k = t; k < chunks; k += kWarp) a = p.combine(a, partial[r * chunks + k]);
    a = group_reduce<kWarp>(a, [&](Acc u, Acc v) { return p.combine(u, v); }, static_cast<Acc*>(nullptr));
    if (t == 0) out[r] = p.finish(a);
  }
}

// Scratch memory from the caching allocator, returned when the launches are queued: the next
// user of the block is queued on the same stream after them (runtime.h).
struct Scratch {
  void* data = nullptr;
  size_t bytes = 0;
  int device = 0;
  explicit Scratch(size_t n) : bytes(n), device(current_device()) { data = allocate(n, device); }
  ~Scratch() { deallocate(data, bytes, device); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
};

// ---- Two-pass reductions: var/std (centre = mean) and logsumexp (centre = max).

template <int G, typename T, typename O, bool kLogSumExp>
__global__ void two_pass_kernel(const T* x, O* out, int64_t rows, int64_t len, double dof, bool take_sqrt) {
  __shared__ double shared_d[kThreads / kWarp];
  __shared__ T shared_t[kThreads / kWarp];
  constexpr int kGroups = kThreads / G;
  const int t = threadIdx.x % G;
  for (int64_t r = blockIdx.x * int64_t{kGroups} + threadIdx.x / G; r < rows; r += int64_t{gridDim.x} * kGroups) {
    const T* row = x + r * len;
    double centre;
    if constexpr (kLogSumExp) {
      const Extremum<T, true> mx{};
      T m = mx.init();
      for (int64_t i = t; i < len; i += G) m = mx.step(m, row[i], i);
      m = group_reduce<G>(m, [&](T u, T v) { return mx.combine(u, v); }, shared_t);
      centre = static_cast<double>(m);
    } else {
      double s = 0.0;
      for (int64_t i = t; i < len; i += G) s += static_cast<double>(row[i]);
      s = group_reduce<G>(s, [](double u, double v) { return u + v; }, shared_d);
      centre = s / static_cast<double>(len);
    }
    // Second pass: sum of exp(x - m) (every term <= 1; skipped when m is +-inf or NaN, which
    // is then the result) or of squared deviations from the mean (no E[x^2] - E[x]^2
    // cancellation).
    double s2 = 0.0;
    const bool finite = isfinite(centre);
    for (int64_t i = t; i < len; i += G) {
      const double d = static_cast<double>(row[i]) - centre;
      if constexpr (kLogSumExp) {
        if (finite) s2 += exp(d);
      } else {
        s2 += d * d;
      }
    }
    s2 = group_reduce<G>(s2, [](double u, double v) { return u + v; }, shared_d);
    if (t == 0) {
      double result;
      if constexpr (kLogSumExp) {
        result = finite ? centre + log(s2) : centre;
      } else {
        const double v = dof > 0 ? s2 / dof : std::numeric_limits<double>::quiet_NaN();
        result = take_sqrt ? sqrt(v) : v;
      }
      out[r] = static_cast<O>(result);
    }
  }
}

// Grid: enough groups for every row, capped (the kernels loop over the rest).
unsigned grid_for(int64_t rows, int group) {
  return device::blocks_for(rows, kThreads / group);
}

// Rows at most this many use the chunked path when long enough: fewer blocks than about two
// waves' worth of SMs on current GPUs (132 SMs on an H100/H200).
constexpr int64_t kFewRows = 256;
constexpr int64_t kChunkLen = 16384;  // elements per block in the chunked path

template <typename P>
void launch_single(const P& p, const void* x, void* out, int64_t rows, int64_t len) {
  const auto stream = static_cast<cudaStream_t>(current_stream());
  const auto* in = static_cast<const typename P::In*>(x);
  auto* o = static_cast<typename P::Out*>(out);
  if (rows <= kFewRows && len >= 4 * kChunkLen) {
    using Acc = typename P::Acc;
    const int64_t chunks = (len + kChunkLen - 1) / kChunkLen;
    Scratch partial(static_cast<size_t>(rows * chunks) * sizeof(Acc));
    auto* acc = static_cast<Acc*>(partial.data);
    reduce_chunks_kernel<P><<<device::blocks_for(rows * chunks, 1), kThreads, 0, stream>>>(p, in, acc, rows, len,
                                                                                          chunks, kChunkLen);
    CTRAX_CUDA_CHECK_LAUNCH("reduce_chunks_kernel");
    reduce_partials_kernel<P><<<grid_for(rows, kWarp), kThreads, 0, stream>>>(p, acc, o, rows, chunks);
    CTRAX_CUDA_CHECK_LAUNCH("reduce_partials_kernel");
    return;
  }
  if (len <= 8 * kWarp) {
    reduce_rows_kernel<kWarp, P><<<grid_for(rows, kWarp), kThreads, 0, stream>>>(p, in, o, rows, len);
    CTRAX_CUDA_CHECK_LAUNCH("reduce_rows_kernel<warp>");
  } else {
    reduce_rows_kernel<kThreads, P><<<grid_for(rows, kThreads), kThreads, 0, stream>>>(p, in, o, rows, len);
    CTRAX_CUDA_CHECK_LAUNCH("reduce_rows_kernel<block>");
  }
}

template <typename T, typename O, bool kLogSumExp>
void launch_two_pass(const void* x, void* out, int64_t rows, int64_t len, double dof, bool take_sqrt) {
  const auto stream = static_cast<cudaStream_t>(current_stream());
  const auto* in = static_cast<const T*>(x);
  auto* o = static_cast<O*>(out);
  if (len <= 8 * kWarp) {
    two_pass_kernel<kWarp, T, O, kLogSumExp><<<grid_for(rows, kWarp), kThreads, 0, stream>>>(in, o, rows, len, dof,
                                                                                           take_sqrt);
    CTRAX_CUDA_CHECK_LAUNCH("two_pass_kernel<warp>");
  } else {
    two_pass_kernel<kThreads, T, O, kLogSumExp><<<grid_for(rows, kThreads), kThreads, 0, stream>>>(
        in, o, rows, len, dof, take_sqrt);
    CTRAX_CUDA_CHECK_LAUNCH("two_pass_kernel<block>");
  }
}

// Calls f(O{}) for a floating out_type.
template <typename F>
void dispatch_floating_out(ElementType type, F&& f) {
  CTRAX_CHECK(type == ElementType::float32 || type == ElementType::float64, "reduce_rows: floating result expected");
  if (type == ElementType::float32) f(float{});
  else f(double{});
}

}  // namespace

void reduce_rows(ReduceOp op, const void* x, ElementType in_type, void* out, ElementType out_type, int64_t rows,
                 int64_t len, int64_t correction) {
  if (rows == 0) return;
  device::dispatch_element_type(in_type, [&](auto tag) {
    using T = decltype(tag);
    constexpr bool kFloat = std::is_floating_point_v<T>;
    switch (op) {
      case ReduceOp::sum:
        if constexpr (kFloat) launch_single(SumDouble<T, T>{1.0}, x, out, rows, len);
        else launch_single(SumInteger<T>{}, x, out, rows, len);
        break;
      case ReduceOp::prod:
        if constexpr (kFloat) launch_single(ProdFloating<T>{}, x, out, rows, len);
        else launch_single(ProdInteger<T>{}, x, out, rows, len);
        break;
      case ReduceOp::mean:
        dispatch_floating_out(out_type, [&](auto out_tag) {
          using O = decltype(out_tag);
          launch_single(SumDouble<T, O>{static_cast<double>(len)}, x, out, rows, len);
        });
        break;
      case ReduceOp::max: launch_single(Extremum<T, true>{}, x, out, rows, len); break;
      case ReduceOp::min: launch_single(Extremum<T, false>{}, x, out, rows, len); break;
      case ReduceOp::any: launch_single(AnyAll<T, true>{}, x, out, rows, len); break;
      case ReduceOp::all: launch_single(AnyAll<T, false>{}, x, out, rows, len); break;
      case ReduceOp::argmax: launch_single(ArgExtremum<T, true>{}, x, out, rows, len); break;
      case ReduceOp::argmin: launch_single(ArgExtremum<T, false>{}, x, out, rows, len); break;
      case ReduceOp::var:
      case ReduceOp::std:
        dispatch_floating_out(out_type, [&](auto out_tag) {
          using O = decltype(out_tag);
          launch_two_pass<T, O, false>(x, out, rows, len, static_cast<double>(len - correction), op == ReduceOp::std);
        });
        break;
      case ReduceOp::logsumexp:
        dispatch_floating_out(out_type, [&](auto out_tag) {
          using O = decltype(out_tag);
          launch_two_pass<T, O, true>(x, out, rows, len, 0.0, false);
        });
        break;
    }
  });
}

}  // namespace ctrax::kernels::cuda
