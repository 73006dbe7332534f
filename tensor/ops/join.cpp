// Joining and rearranging ops: concatenate, stack, split, pad, flip.
//
// What it is for: building tensors out of pieces of others. All results are fresh contiguous
// tensors (split included: its parts do not alias x). concatenate/stack are hot in RL code
// (batching observations), so when every input is contiguous and already has the result's
// dtype they are a sequence of memcpy calls, one per input and per outer index; anything else
// (strided views, dtype promotion) goes through Tensor::copy_ into a slice of the result.
//
// What it is not for: views. Slicing and reshaping without a copy are Tensor methods.
//
// Dtypes: concatenate and stack promote all inputs with promote_types (dtype.h), so
// concatenate({int32, float32}) is float32; pad's value is converted to x's dtype as
// Tensor::fill_ does (truncated for integers, value != 0 for bool).
//
// On a GPU (every input on one device) the same ops are built from what already runs there:
// the result is allocated on that device and filled through Tensor::slice views with
// Tensor::copy_ and fill_ (kernels/cuda/copy.h); flip is one strided copy from a view with
// negative strides on the flipped axes. The memcpy fast path is the CPU's alone.
#include <algorithm>
#include <cstring>
#include <string>

#include "../../kernels/cuda/copy.h"
#include "../cuda_arg.h"
#include "../trace.h"
#include "../ops.h"
#include "../plan.h"

namespace ctrax {

namespace {

void require_defined_input(const Tensor& t, const char* op, const char* what) {
  CTRAX_REQUIRE(t.defined(), op, ": ", what, " is undefined (default-constructed)");
}

// Checks each input of a list op (defined, all on tensor 0's device) and returns their
// promoted dtype.
DType check_list(const std::vector<Tensor>& xs, const char* op) {
  CTRAX_REQUIRE(!xs.empty(), op, ": expected at least one tensor, got an empty list");
  DType dtype = DType::boolean;
  for (size_t i = 0; i < xs.size(); ++i) {
    CTRAX_REQUIRE(xs[i].defined(), op, ": tensor ", i, " is undefined (default-constructed)");
    if (xs[i].device() != xs[0].device())
      cuda_detail::require_same_device(op, xs[0].device(), xs[i], ("tensor " + std::to_string(i)).c_str());
    dtype = i == 0 ? xs[i].dtype() : promote_types(dtype, xs[i].dtype());
  }
  return dtype;
}

// a + b for sizes, refusing int64 overflow (possible with huge expanded dims of stride 0).
int64_t add_sizes(int64_t a, int64_t b, const char* op) {
  int64_t sum = 0;
  CTRAX_REQUIRE(!__builtin_add_overflow(a, b, &sum), op, ": the result size ", a, " + ", b, " overflows int64");
  return sum;
}

// Joins xs (already checked: same rank, equal non-axis dims) along axis a into a fresh
// tensor of out_shape and `dtype`.
Tensor join_along(const std::vector<Tensor>& xs, int a, const Shape& out_shape, DType dtype) {
  Tensor out(out_shape, dtype, xs[0].device());
  if (out.numel() == 0) return out;
  const bool all_plain = xs[0].device().is_cpu() && std::all_of(xs.begin(), xs.end(), [&](const Tensor& x) {
    return x.dtype() == dtype && x.is_contiguous();
  });
  if (all_plain) {
    // Row-major: out is `outer` repetitions of [x0's block, x1's block, ...], where each
    // block is x_i's slab for one outer index: shape[a] * (product of the later dims).
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < a; ++d) outer *= out_shape[d];
    for (int d = a + 1; d < out_shape.rank(); ++d) inner *= out_shape[d];
    const size_t element = dtype_size(dtype);
    detail::KernelScope scope;
    std::vector<std::pair<const char*, size_t>> sources;  // each input's data and block bytes
    for (const Tensor& x : xs)
      sources.emplace_back(static_cast<const char*>(x.raw_data()), static_cast<size_t>(x.shape()[a] * inner) * element);
    detail::run_kernel([dst0 = static_cast<char*>(out.raw_data()), outer, sources] {
      char* dst = dst0;
      for (int64_t o = 0; o < outer; ++o) {
        for (const auto& [src, block] : sources) {
          if (block == 0) continue;
          std::memcpy(dst, src + static_cast<size_t>(o) * block, block);
          dst += block;
        }
      }
    });
    return out;
  }
  int64_t start = 0;
  for (const Tensor& x : xs) {
    const int64_t n = x.shape()[a];
    out.slice(a, start, start + n).copy_(x);
    start += n;
  }
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// concatenate and stack
// ---------------------------------------------------------------------------------------------

Tensor concatenate(const std::vector<Tensor>& xs, int axis) {
  return traced_list_op(OpId::concatenate, xs, [&] {
    const char* op = "concatenate";
    const DType dtype = check_list(xs, op);
    const Shape& first = xs[0].shape();
    const int a = normalize_axis(axis, first.rank(), op);
    Shape out_shape = first;
    for (size_t i = 1; i < xs.size(); ++i) {
      const Shape& s = xs[i].shape();
      CTRAX_REQUIRE(s.rank() == first.rank(), op, ": tensor ", i, " has shape ", s, " of rank ", s.rank(),
                    " but tensor 0 has shape ", first, " of rank ", first.rank(), " (expected equal ranks)");
      for (int d = 0; d < first.rank(); ++d)
        CTRAX_REQUIRE(d == a || s[d] == first[d], op, ": tensor ", i, " has shape ", s, " but tensor 0 has shape ",
                      first, " (they must match on every axis but the concatenation axis ", a, ")");
      out_shape[a] = add_sizes(out_shape[a], s[a], op);
    }
    return join_along(xs, a, out_shape, dtype);
  }, [&] { return OpAttrs{AxisAttrs{axis, false}}; });
}

Tensor stack(const std::vector<Tensor>& xs, int axis) {
  return traced_list_op(OpId::stack, xs, [&] {
    const char* op = "stack";
    const DType dtype = check_list(xs, op);
    const Shape& first = xs[0].shape();
    CTRAX_REQUIRE(first.rank() < kMaxRank, op, ": stacking tensors of shape ", first, " would give rank ",
                  first.rank() + 1, " (the maximum rank is ", kMaxRank, ")");
    const int a = normalize_axis(axis, first.rank() + 1, op);
    for (size_t i = 1; i < xs.size(); ++i)
      CTRAX_REQUIRE(xs[i].shape() == first, op, ": tensor ", i, " has shape ", xs[i].shape(), " but tensor 0 has shape ",
                    first, " (expected all shapes equal)");
    CTRAX_REQUIRE(static_cast<int64_t>(xs.size()) <= (int64_t{1} << 46), op, ": too many tensors (", xs.size(), ")");
    // Stacking is concatenating along a new size-1 axis; unsqueeze is a view, so contiguous
    // inputs stay contiguous and take the memcpy path.
    std::vector<Tensor> expanded;
    expanded.reserve(xs.size());
    for (const Tensor& x : xs) expanded.push_back(x.unsqueeze(a));
    Shape out_shape = first;
    out_shape.insert(a, static_cast<int64_t>(xs.size()));
    return join_along(expanded, a, out_shape, dtype);
  }, [&] { return OpAttrs{AxisAttrs{axis, false}}; });
}

// ---------------------------------------------------------------------------------------------
// split
// ---------------------------------------------------------------------------------------------

namespace {
std::vector<Tensor> split_parts(const Tensor& x, const std::vector<int64_t>& sizes, int axis) {
  const char* op = "split";
  require_defined_input(x, op, "x");
  const int a = normalize_axis(axis, x.rank(), op);
  const int64_t n = x.shape()[a];
  int64_t total = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    CTRAX_REQUIRE(sizes[i] >= 0, op, ": size ", i, " is ", sizes[i], " (expected sizes >= 0)");
    CTRAX_REQUIRE(sizes[i] <= n - total, op, ": the sizes sum past ", n, ", the size of axis ", a,
                  " of shape ", x.shape(), " (expected sizes summing to ", n, ")");
    total += sizes[i];
  }
  CTRAX_REQUIRE(total == n, op, ": the sizes sum to ", total, " but axis ", a, " of shape ", x.shape(), " has size ",
                n, " (expected sizes summing to ", n, ")");
  std::vector<Tensor> parts;
  parts.reserve(sizes.size());
  int64_t start = 0;
  for (int64_t size : sizes) {
    parts.push_back(x.slice(a, start, start + size).clone());
    start += size;
  }
  return parts;
}

}  // namespace

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int axis) {
  const Tensor* in[] = {&x};
  if (!detail::any_traced(in)) return split_parts(x, sizes, axis);
  std::vector<Tensor> parts;
  {
    detail::RecordingPause pause;
    parts = split_parts(x, sizes, axis);
  }
  record_op(OpId::split, in, parts, SplitAttrs{axis, sizes});
  return parts;
}

std::vector<Tensor> split(const Tensor& x, int64_t sections, int axis) {
  const char* op = "split";
  require_defined_input(x, op, "x");
  const int a = normalize_axis(axis, x.rank(), op);
  const int64_t n = x.shape()[a];
  CTRAX_REQUIRE(sections >= 1, op, ": sections must be >= 1, got ", sections);
  CTRAX_REQUIRE(n % sections == 0, op, ": ", sections, " sections do not divide axis ", a, " of size ", n,
                " (shape ", x.shape(), ")");
  // With n > 0 divisibility already bounds sections by n; an empty axis splits into any
  // number of empty parts, within reason.
  CTRAX_REQUIRE(n > 0 || sections <= (int64_t{1} << 16), op, ": ", sections,
                " sections of an empty axis is too many (expected at most 65536)");
  return split(x, std::vector<int64_t>(static_cast<size_t>(sections), n / sections), axis);
}

// ---------------------------------------------------------------------------------------------
// pad and flip
// ---------------------------------------------------------------------------------------------

Tensor pad(const Tensor& x, const std::vector<std::pair<int64_t, int64_t>>& widths, double value) {
  return traced_op(OpId::pad, {&x}, [&] {
    const char* op = "pad";
    require_defined_input(x, op, "x");
    CTRAX_REQUIRE(static_cast<int>(widths.size()) == x.rank(), op, ": got ", widths.size(),
                  " (before, after) pairs for x of shape ", x.shape(), " (expected one pair per axis: ", x.rank(), ")");
    Shape out_shape = x.shape();
    for (int d = 0; d < x.rank(); ++d) {
      const auto [before, after] = widths[d];
      CTRAX_REQUIRE(before >= 0 && after >= 0, op, ": widths (", before, ", ", after, ") of axis ", d,
                    " are negative (expected widths >= 0)");
      out_shape[d] = add_sizes(add_sizes(x.shape()[d], before, op), after, op);
    }
    Tensor out = full(out_shape, value, x.dtype(), x.device());
    Tensor interior = out;
    for (int d = 0; d < x.rank(); ++d) interior = interior.slice(d, widths[d].first, widths[d].first + x.shape()[d]);
    interior.copy_(x);
    return out;
  }, [&] {
    PadAttrs p;
    for (const auto& [before, after] : widths) {
      p.before.push_back(before);
      p.after.push_back(after);
    }
    return OpAttrs{p};
  });
}

// Choice (ops.h leaves it open): an empty `axes` flips nothing and returns a copy, as
// torch.flip(x, []); it does not mean "every axis".
Tensor flip(const Tensor& x, const std::vector<int>& axes) {
  return traced_op(OpId::flip, {&x}, [&] {
    const char* op = "flip";
    require_defined_input(x, op, "x");
    bool flipped[kMaxRank] = {};
    for (int axis : axes) {
      const int a = normalize_axis(axis, x.rank(), op);
      CTRAX_REQUIRE(!flipped[a], op, ": axis ", axis, " appears twice (expected distinct axes)");
      flipped[a] = true;
    }
    Tensor out(x.shape(), x.dtype(), x.device());
    if (out.numel() == 0) return out;
    if (x.device().is_cuda()) {
      // x read backwards: start at the last element of each flipped axis and step by -stride
      // (strided_offset is plain signed arithmetic, so negative strides index correctly).
      kernels::cuda::StridedArg source = cuda_detail::strided_arg(x);
      int64_t start = 0;
      for (int d = 0; d < x.rank(); ++d) {
        if (!flipped[d]) continue;
        start += (x.shape()[d] - 1) * x.strides()[d];
        source.strides[d] = -x.strides()[d];
      }
      source.data = static_cast<char*>(x.device_data()) + start * static_cast<int64_t>(x.element_size());
      cuda_detail::use_device_of(x);
      kernels::cuda::strided_copy(cuda_detail::strided_arg(out), cuda_detail::element_type(out.dtype()), source,
                                  cuda_detail::element_type(x.dtype()));
      return out;
    }
    // Walk the output in row-major order. The source offset (in elements) of output index i
    // along a flipped axis of size n is (n - 1 - i) * stride, so the walk steps by -stride
    // there. Offsets stay int64 and are only turned into addresses at each read, which keeps
    // every pointer inside the storage.
    const int rank = x.rank();
    int64_t step[kMaxRank] = {}, index[kMaxRank] = {};
    int64_t offset = 0;
    for (int d = 0; d < rank; ++d) {
      step[d] = flipped[d] ? -x.strides()[d] : x.strides()[d];
      if (flipped[d]) offset += (x.shape()[d] - 1) * x.strides()[d];
    }
    const int64_t row = rank > 0 ? x.shape()[rank - 1] : 1;
    const int64_t row_step = rank > 0 ? step[rank - 1] : 0;
    const int64_t rows = out.numel() / row;
    dispatch_dtype(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* src = static_cast<const T*>(x.raw_data());
      T* dst = static_cast<T*>(out.raw_data());
      for (int64_t r = 0; r < rows; ++r, dst += row) {
        for (int64_t i = 0; i < row; ++i) dst[i] = src[offset + i * row_step];
        // odometer over the outer axes
        for (int d = rank - 2; d >= 0; --d) {
          offset += step[d];
          if (++index[d] < x.shape()[d]) break;
          offset -= step[d] * x.shape()[d];
          index[d] = 0;
        }
      }
    });
    return out;
  }, [&] {
    AxesAttrs f;
    for (int axis : axes) f.axes.push_back(axis);
    return OpAttrs{f};
  });
}

}  // namespace ctrax
