// Indexing ops: one_hot, take_along_axis (gather), index_select, scatter_add.
//
// What it is for: reading and writing elements at positions given by an integer tensor.
// Every gather here is one pass of the broadcasting strided loop (strided_loop.h) over the
// output with three operands: the output, the index tensor, and x viewed with stride 0 on
// the gathered axis. The kernel then adds index * (x's real stride on that axis) to the x
// pointer, so x and index broadcast against each other without being copied.
//
// What it is not for: boolean masks (use where) or slicing by ranges (Tensor::slice).
//
// Index rules shared by the ops below: indices are int32 or int64 tensors (anything else is
// an error naming the dtype); take_along_axis, index_select and scatter_add accept
// i in [-n, n) for an axis of size n, a negative i counting from the end; anything else
// throws naming the op, the index, the axis and its size. one_hot instead maps
// out-of-range indices to an all-zero row (jax.nn.one_hot).
//
// On a GPU the same checks run on the host and kernels/cuda/gather_scatter.h does the loops;
// every operand must be on one device. A kernel cannot throw, so it records the first
// (row-major) out-of-range index in a device word; reading that back waits for the stream,
// and resolve_index then throws the CPU's message for the same index.
#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "../../kernels/cuda/gather_scatter.h"
#include "../cuda_arg.h"
#include "../trace.h"
#include "../ops.h"
#include "../plan.h"
#include "../strided_loop.h"

namespace ctrax {

namespace {

void require_defined_input(const Tensor& t, const char* op, const char* what) {
  CTRAX_REQUIRE(t.defined(), op, ": ", what, " is undefined (default-constructed)");
}

void require_index_dtype(const Tensor& index, const char* op) {
  CTRAX_REQUIRE(is_integer(index.dtype()), op, ": indices must be int32 or int64, got ", index.dtype());
}

// Calls f with an int32_t or int64_t tag matching the index dtype.
template <typename F>
void dispatch_index(DType dtype, F&& f) {
  if (dtype == DType::int32) f(int32_t{});
  else f(int64_t{});
}

[[noreturn, gnu::cold, gnu::noinline]] void throw_index_out_of_range(int64_t i, int64_t n, int axis, const char* op) {
  CTRAX_THROW(op, ": index ", i, " is out of range for axis ", axis, " of size ", n, " (expected an index in [", -n,
              ", ", n - 1, "])");
}

// Maps index i in [-n, n) to [0, n); anything else throws naming the op, i, the axis and n.
// The message is built out of line, so this inlines into the loops over every index (a call
// per index was most of picking a PPO minibatch's rows).
inline int64_t resolve_index(int64_t i, int64_t n, int axis, const char* op) {
  const int64_t resolved = i < 0 ? i + n : i;
  if (resolved < 0 || resolved >= n) [[unlikely]] throw_index_out_of_range(i, n, axis, op);
  return resolved;
}

// dst[j] = src[picks[j]] for j < m, blocks of `block` bytes. Minibatch rows are often one to
// four numbers: a memcpy call per 4-byte block costs several times the copy, so the common
// small sizes get a loop whose copy size is a constant (compiled to plain moves).
template <size_t Block>
void copy_fixed_picks(const char* src, const int64_t* picks, int64_t m, char* dst) {
  for (int64_t j = 0; j < m; ++j, dst += Block) std::memcpy(dst, src + static_cast<size_t>(picks[j]) * Block, Block);
}
void copy_picks(const char* src, const int64_t* picks, int64_t m, size_t block, char* dst) {
  switch (block) {
    case 1: return copy_fixed_picks<1>(src, picks, m, dst);
    case 2: return copy_fixed_picks<2>(src, picks, m, dst);
    case 4: return copy_fixed_picks<4>(src, picks, m, dst);
    case 8: return copy_fixed_picks<8>(src, picks, m, dst);
    case 12: return copy_fixed_picks<12>(src, picks, m, dst);
    case 16: return copy_fixed_picks<16>(src, picks, m, dst);
    default:
      for (int64_t j = 0; j < m; ++j, dst += block) std::memcpy(dst, src + static_cast<size_t>(picks[j]) * block, block);
  }
}

// Byte strides of x seen through out_shape (broadcast dims read stride 0), with the gathered
// axis also at stride 0: the kernel supplies that axis' offset from the index.
Shape gather_source_strides(const Tensor& x, const Shape& out_shape, int axis) {
  Shape strides = detail::broadcast_byte_strides(x, out_shape);
  strides[axis] = 0;
  return strides;
}

// Throws resolve_index's message for an index a kernel reported out of range.
void throw_if_bad(const kernels::cuda::BadIndex& bad, int64_t n, int axis, const char* op) {
  if (!bad.found) return;
  resolve_index(bad.value, n, axis, op);
  CTRAX_CHECK(false, op, ": the GPU reported index ", bad.value, " out of range for size ", n, " but it is not");
}

// gather_core on the GPU (x and index on one device): the same loop as one kernel, x viewed
// at out_shape with stride 0 on `axis`, the kernel adding index * (x's real stride) there.
Tensor gather_core_cuda(const Tensor& x, const Tensor& index, int axis, const Shape& out_shape, const char* op) {
  cuda_detail::use_device_of(x);
  Tensor out(out_shape, x.dtype(), x.device());
  kernels::cuda::StridedArg source = cuda_detail::strided_arg(x, out_shape);
  source.strides[axis] = 0;
  const int64_t n = x.shape()[axis];
  const kernels::cuda::BadIndex bad = kernels::cuda::gather(
      cuda_detail::strided_arg(out), source, cuda_detail::element_type(x.dtype()),
      cuda_detail::strided_arg(index, out_shape), cuda_detail::element_type(index.dtype()), n, x.strides()[axis]);
  throw_if_bad(bad, n, axis, op);
  return out;
}

// out[p] = x[p with its `axis` coordinate replaced by index[p]], where x (except on `axis`)
// and index broadcast to out_shape. The shared core of take_along_axis and index_select.
Tensor gather_core(const Tensor& x, const Tensor& index, int axis, const Shape& out_shape, const char* op) {
  if (x.device().is_cuda()) return gather_core_cuda(x, index, axis, out_shape, op);
  Tensor out(out_shape, x.dtype());
  const int64_t n = x.shape()[axis];
  const int64_t axis_stride = x.strides()[axis] * static_cast<int64_t>(x.element_size());
  detail::KernelScope scope;
  std::array<char*, 3> base{static_cast<char*>(out.raw_data()), static_cast<char*>(index.raw_data()),
                            static_cast<char*>(x.raw_data())};
  std::array<Shape, 3> strides{detail::broadcast_byte_strides(out, out_shape),
                               detail::broadcast_byte_strides(index, out_shape),
                               gather_source_strides(x, out_shape, axis)};
  dispatch_dtype(x.dtype(), [&](auto value_tag) {
    using T = decltype(value_tag);
    dispatch_index(index.dtype(), [&](auto index_tag) {
      using I = decltype(index_tag);
      detail::run_kernel([out_shape, base, strides, n, axis, op, axis_stride] {
        detail::strided_loop<3>(out_shape, base, strides, [&](std::array<char*, 3> p, std::array<int64_t, 3> s, int64_t count) {
          for (int64_t k = 0; k < count; ++k) {
            const int64_t j = resolve_index(*reinterpret_cast<const I*>(p[1] + k * s[1]), n, axis, op);
            *reinterpret_cast<T*>(p[0] + k * s[0]) = *reinterpret_cast<const T*>(p[2] + k * s[2] + j * axis_stride);
          }
        });
      });
    });
  });
  return out;
}

// a + b; integers wrap around on overflow (two's complement, as NumPy) instead of the
// undefined behaviour of signed overflow.
template <typename T>
inline T wrapping_add(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return a + b;
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// one_hot
// ---------------------------------------------------------------------------------------------

Tensor one_hot(const Tensor& indices, int64_t depth, DType dtype) {
  require_defined_input(indices, "one_hot", "indices");
  require_index_dtype(indices, "one_hot");
  CTRAX_REQUIRE(depth >= 0, "one_hot: depth must be >= 0, got ", depth);
  CTRAX_REQUIRE(indices.rank() < kMaxRank, "one_hot: indices of shape ", indices.shape(),
                " would give a result of rank ", indices.rank() + 1, " (the maximum rank is ", kMaxRank, ")");
  Shape out_shape = indices.shape();
  out_shape.push_back(depth);
  Tensor out = zeros(out_shape, dtype, indices.device());
  if (depth == 0) return out;
  if (indices.device().is_cuda()) {
    cuda_detail::use_device_of(indices);
    kernels::cuda::one_hot(out.device_data(), cuda_detail::element_type(dtype), cuda_detail::strided_arg(indices),
                           cuda_detail::element_type(indices.dtype()), depth);
    return out;
  }
  // One pass over the indices; the output operand steps one row (depth elements) per index
  // and the kernel writes the single 1 of that row.
  const int64_t element = static_cast<int64_t>(dtype_size(dtype));
  Shape out_strides = contiguous_strides(indices.shape());
  for (int d = 0; d < out_strides.rank(); ++d) out_strides[d] *= depth * element;
  std::array<char*, 2> base{static_cast<char*>(out.raw_data()), static_cast<char*>(indices.raw_data())};
  std::array<Shape, 2> strides{out_strides, detail::broadcast_byte_strides(indices, indices.shape())};
  dispatch_dtype(dtype, [&](auto value_tag) {
    using T = decltype(value_tag);
    dispatch_index(indices.dtype(), [&](auto index_tag) {
      using I = decltype(index_tag);
      detail::strided_loop<2>(indices.shape(), base, strides, [&](std::array<char*, 2> p, std::array<int64_t, 2> s, int64_t count) {
        for (int64_t k = 0; k < count; ++k) {
          const int64_t j = *reinterpret_cast<const I*>(p[1] + k * s[1]);
          if (j >= 0 && j < depth) *reinterpret_cast<T*>(p[0] + k * s[0] + j * element) = T(1);
        }
      });
    });
  });
  return out;
}

// ---------------------------------------------------------------------------------------------
// take_along_axis and index_select
// ---------------------------------------------------------------------------------------------

Tensor take_along_axis(const Tensor& x, const Tensor& index, int axis) {
  return traced_op(OpId::take_along_axis, {&x, &index}, [&] {
    const char* op = "take_along_axis";
    require_defined_input(x, op, "x");
    require_defined_input(index, op, "index");
    cuda_detail::require_same_device(op, x.device(), index, "index");
    require_index_dtype(index, op);
    CTRAX_REQUIRE(index.rank() == x.rank(), op, ": index of shape ", index.shape(), " must have the rank of x ",
                  x.shape(), " (got rank ", index.rank(), ", expected ", x.rank(), ")");
    const int a = normalize_axis(axis, x.rank(), op);
    // NumPy: the result takes index's length on `axis`; elsewhere x and index broadcast.
    Shape out_shape = index.shape();
    for (int d = 0; d < x.rank(); ++d) {
      if (d == a) continue;
      const int64_t dx = x.shape()[d], di = index.shape()[d];
      CTRAX_REQUIRE(dx == di || dx == 1 || di == 1, op, ": x of shape ", x.shape(), " and index of shape ",
                    index.shape(), " do not broadcast on axis ", d, " (", dx, " vs ", di, "; expected equal sizes or 1)");
      out_shape[d] = dx == 1 ? di : dx;
    }
    return gather_core(x, index, a, out_shape, op);
  }, [&] { return OpAttrs{AxisAttrs{axis, false}}; });
}

Tensor index_select(const Tensor& x, int axis, const Tensor& indices) {
  return traced_op(OpId::index_select, {&x, &indices}, [&] {
    const char* op = "index_select";
    require_defined_input(x, op, "x");
    require_defined_input(indices, op, "indices");
    cuda_detail::require_same_device(op, x.device(), indices, "indices");
    require_index_dtype(indices, op);
    CTRAX_REQUIRE(indices.rank() == 1, op, ": indices must be 1-D, got shape ", indices.shape());
    const int a = normalize_axis(axis, x.rank(), op);
    const int64_t n = x.shape()[a], m = indices.shape()[0];
    Shape out_shape = x.shape();
    out_shape[a] = m;
    // Every index is checked (even when the result is empty) before anything is written.
    auto resolve_all = [&](const Tensor& cpu_indices) {
      std::vector<int64_t> picks(static_cast<size_t>(m));
      dispatch_index(cpu_indices.dtype(), [&](auto index_tag) {
        using I = decltype(index_tag);
        const I* p = static_cast<const I*>(cpu_indices.raw_data());
        const int64_t s = cpu_indices.strides()[0];
        // Indices already in [0, n) (minibatch rows) need no resolving: a min / max pass and a
        // plain copy, both vectorised, instead of two branches per index. Anything else takes
        // resolve_index one by one, which throws for the first bad index.
        I lo = m > 0 ? p[0] : I(0), hi = lo;
        for (int64_t j = 0; j < m; ++j) {
          lo = std::min(lo, p[j * s]);
          hi = std::max(hi, p[j * s]);
        }
        if (lo >= 0 && static_cast<int64_t>(hi) < n) {
          for (int64_t j = 0; j < m; ++j) picks[j] = static_cast<int64_t>(p[j * s]);
        } else {
          for (int64_t j = 0; j < m; ++j) picks[j] = resolve_index(p[j * s], n, a, op);
        }
      });
      return picks;
    };
    if (x.device().is_cuda()) {
      // The gather kernel checks every index it reads, first one first (the smallest bad j
      // has the smallest position); an empty result reads none, so check those on the host.
      if (out_shape.numel() == 0 && m > 0) resolve_all(indices.to(Device::cpu()));
      Shape index_shape = Shape::filled(x.rank(), 1);
      index_shape[a] = m;
      return gather_core(x, indices.reshape(index_shape), a, out_shape, op);
    }
    const std::vector<int64_t> picks = resolve_all(indices);

    if (!x.is_contiguous()) {
      // General case: the take_along_axis core with the indices laid along `axis`, i.e. shape
      // [1, .., m, .., 1], broadcasting over every other axis of x.
      Shape index_shape = Shape::filled(x.rank(), 1);
      index_shape[a] = m;
      return gather_core(x, indices.reshape(index_shape), a, out_shape, op);
    }
    // Contiguous x (picking minibatch rows, embedding lookups): each pick is one block of
    // `block` bytes, copied with memcpy.
    Tensor out(out_shape, x.dtype());
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < a; ++d) outer *= x.shape()[d];
    for (int d = a + 1; d < x.rank(); ++d) inner *= x.shape()[d];
    const size_t block = static_cast<size_t>(inner) * x.element_size();
    if (block == 0 || m == 0) return out;
    const char* src = static_cast<const char*>(x.raw_data());
    char* dst = static_cast<char*>(out.raw_data());
    for (int64_t o = 0; o < outer; ++o, dst += static_cast<size_t>(m) * block)
      copy_picks(src + static_cast<size_t>(o * n) * block, picks.data(), m, block, dst);
    return out;
  }, [&] { return OpAttrs{AxisAttrs{axis, false}}; });
}

// ---------------------------------------------------------------------------------------------
// scatter_add
// ---------------------------------------------------------------------------------------------

// Choices (ops.h leaves them open): src's dtype must promote to x's (int32 into float32 is
// fine, float64 into float32 is not: that would silently lose precision); bool x is an error
// (no arithmetic on bool). Off `axis`, index may be shorter than x (as torch.scatter_add):
// positions of x beyond index's extent are left unchanged. The loop runs serially in
// row-major order of src, so duplicate targets accumulate in increasing position of src and
// the result is the same on every run and thread count. On a GPU the additions are atomic
// and land in no fixed order, so float sums into one target may differ from the CPU's by
// rounding (integer sums are exact and identical).
Tensor scatter_add(const Tensor& x, int axis, const Tensor& index, const Tensor& src) {
  return traced_op(OpId::scatter_add, {&x, &index, &src}, [&] {
    const char* op = "scatter_add";
    require_defined_input(x, op, "x");
    require_defined_input(index, op, "index");
    require_defined_input(src, op, "src");
    cuda_detail::require_same_device(op, x.device(), index, "index");
    cuda_detail::require_same_device(op, x.device(), src, "src");
    require_index_dtype(index, op);
    CTRAX_REQUIRE(!is_bool(x.dtype()), op, ": x has dtype bool, which has no addition (cast it first)");
    CTRAX_REQUIRE(promote_types(x.dtype(), src.dtype()) == x.dtype(), op, ": src of dtype ", src.dtype(),
                  " cannot be added into x of dtype ", x.dtype(), " without losing precision (expected a dtype that promotes to ",
                  x.dtype(), ")");
    CTRAX_REQUIRE(index.shape() == src.shape(), op, ": index of shape ", index.shape(), " and src of shape ",
                  src.shape(), " must have the same shape");
    CTRAX_REQUIRE(index.rank() == x.rank(), op, ": index of shape ", index.shape(), " must have the rank of x ",
                  x.shape(), " (got rank ", index.rank(), ", expected ", x.rank(), ")");
    const int a = normalize_axis(axis, x.rank(), op);
    for (int d = 0; d < x.rank(); ++d)
      CTRAX_REQUIRE(d == a || index.shape()[d] <= x.shape()[d], op, ": index of shape ", index.shape(),
                    " is larger than x of shape ", x.shape(), " on axis ", d, " (expected at most ", x.shape()[d], ")");

    Tensor out = x.clone();
    const Tensor addend = src.to(x.dtype());
    const int64_t n = x.shape()[a];
    const int64_t axis_stride = out.strides()[a] * static_cast<int64_t>(out.element_size());
    const Shape& loop_shape = index.shape();
    if (x.device().is_cuda()) {
      // out viewed at index's shape, stride 0 on the axis (the kernel adds index * axis stride).
      cuda_detail::use_device_of(out);
      kernels::cuda::StridedArg target;
      target.data = out.device_data();
      target.rank = out.rank();
      for (int d = 0; d < out.rank(); ++d) {
        target.shape[d] = loop_shape[d];
        target.strides[d] = d == a ? 0 : out.strides()[d];
      }
      const kernels::cuda::BadIndex bad = kernels::cuda::scatter_add(
          target, cuda_detail::strided_arg(addend, loop_shape), cuda_detail::element_type(out.dtype()),
          cuda_detail::strided_arg(index, loop_shape), cuda_detail::element_type(index.dtype()), n, out.strides()[a]);
      throw_if_bad(bad, n, a, op);
      return out;
    }
    detail::KernelScope scope;
    std::array<char*, 3> base{static_cast<char*>(out.raw_data()), static_cast<char*>(index.raw_data()),
                              static_cast<char*>(addend.raw_data())};
    Shape out_strides = Shape::filled(x.rank(), 0);
    for (int d = 0; d < x.rank(); ++d) out_strides[d] = d == a ? 0 : out.strides()[d] * static_cast<int64_t>(out.element_size());
    std::array<Shape, 3> strides{out_strides, detail::broadcast_byte_strides(index, loop_shape),
                                 detail::broadcast_byte_strides(addend, loop_shape)};
    dispatch_dtype(x.dtype(), [&](auto value_tag) {
      using T = decltype(value_tag);
      dispatch_index(index.dtype(), [&](auto index_tag) {
        using I = decltype(index_tag);
        detail::run_kernel([loop_shape = Shape(loop_shape), base, strides, n, a, op, axis_stride] {
          // grain = max: never split across threads, which keeps the accumulation order fixed and
          // avoids two threads adding into the same element.
          constexpr int64_t kSerial = std::numeric_limits<int64_t>::max();
          detail::strided_loop<3>(loop_shape, base, strides, [&](std::array<char*, 3> p, std::array<int64_t, 3> s, int64_t count) {
            for (int64_t k = 0; k < count; ++k) {
              const int64_t j = resolve_index(*reinterpret_cast<const I*>(p[1] + k * s[1]), n, a, op);
              T& target = *reinterpret_cast<T*>(p[0] + k * s[0] + j * axis_stride);
              target = wrapping_add(target, *reinterpret_cast<const T*>(p[2] + k * s[2]));
            }
          }, kSerial);
        });
      });
    });
    return out;
  }, [&] { return OpAttrs{AxisAttrs{axis, false}}; });
}

}  // namespace ctrax
