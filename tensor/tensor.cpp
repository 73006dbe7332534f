// Tensor: construction, views, copies and creation functions. See tensor.h.
#include "tensor.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "convert.h"
#include "cuda_arg.h"
#include "../kernels/cuda/copy.h"
#include "plan.h"
#include "strided_loop.h"
#include "trace.h"

namespace ctrax {

namespace detail {
// A constant written on the host inside a recorded function is replayed as a copy of its bytes.
// Called inside a KernelScope.
static void record_constant(const Tensor& t) {
  if (t_capture_state.recorder != nullptr) record_constant_bytes(t.raw_data(), static_cast<size_t>(t.numel()) * t.element_size());
}
}  // namespace detail


using detail::convert;

// ---------------------------------------------------------------------------------------------
// Construction and properties
// ---------------------------------------------------------------------------------------------

namespace {
void require_valid_shape(const Shape& shape, const char* op) {
  for (int i = 0; i < shape.rank(); ++i)
    CTRAX_REQUIRE(shape[i] >= 0, op, ": shape ", shape, " has a negative dimension ", shape[i],
                  " (expected sizes >= 0)");
}
}  // namespace

void Tensor::throw_not_on_host(const char* op) const {
  CTRAX_THROW(op, ": the tensor (", dtype_, shape_, ") is on ", device(),
              "; host code cannot read device memory. Copy it first: t.to(Device::cpu())");
}

Tensor::Tensor(const Shape& shape, DType dtype, Device device)
    : shape_(shape), strides_(contiguous_strides(shape)), offset_(0), dtype_(dtype) {
  require_valid_shape(shape, "Tensor");
  // Guard against overflow of numel * element size before allocating.
  int64_t n = 1;
  for (int i = 0; i < shape.rank(); ++i) {
    CTRAX_REQUIRE(shape[i] == 0 || n <= (int64_t{1} << 46) / shape[i], "Tensor: shape ", shape,
                  " has too many elements");
    n *= shape[i];
  }
  storage_ = std::make_shared<Storage>(static_cast<size_t>(n) * dtype_size(dtype), device);
}

Tensor::Tensor(std::shared_ptr<Storage> storage, const Shape& shape, const Shape& strides, int64_t offset,
               DType dtype)
    : storage_(std::move(storage)), shape_(shape), strides_(strides), offset_(offset), dtype_(dtype) {
  CTRAX_CHECK(shape.rank() == strides.rank(), "shape ", shape, " and strides ", strides, " differ in rank");
  CTRAX_CHECK(storage_ != nullptr);
}

int64_t Tensor::size(int axis) const { return shape_[normalize_axis(axis, rank(), "Tensor::size")]; }

bool Tensor::is_contiguous() const {
  for (int i = 0; i < rank(); ++i)
    if (shape_[i] == 0) return true;  // no elements: any strides describe the same (empty) layout
  int64_t expected = 1;
  for (int i = rank() - 1; i >= 0; --i) {
    if (shape_[i] != 1 && strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

template <typename T>
T Tensor::item() const {
  require_defined("Tensor::item");
  CTRAX_REQUIRE(numel() == 1, "Tensor::item: expected a tensor with one element, got shape ", shape_);
  if (device().is_cuda()) return to(Device::cpu()).item<T>();
  using Stored = typename dtype_traits<dtype_of<T>()>::type;
  return dispatch_dtype(dtype_, [&](auto tag) -> T {
    using S = decltype(tag);
    return static_cast<T>(convert<Stored>(*static_cast<const S*>(raw_data())));
  });
}

template <typename T>
std::vector<T> Tensor::to_vector() const {
  require_defined("Tensor::to_vector");
  if (device().is_cuda()) return to(Device::cpu()).to_vector<T>();
  using Stored = typename dtype_traits<dtype_of<T>()>::type;
  if (is_contiguous() && dtype_ != dtype_of<T>()) {
    // Converted element by element as to() would (convert<>), without its intermediate tensor.
    std::vector<T> out(static_cast<size_t>(numel()));
    dispatch_dtype(dtype_, [&](auto tag) {
      using S = decltype(tag);
      const S* p = static_cast<const S*>(raw_data());
      for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<T>(convert<Stored>(p[i]));
    });
    return out;
  }
  const Tensor c = to(dtype_of<T>()).contiguous();
  std::vector<T> out(static_cast<size_t>(c.numel()));
  const Stored* p = static_cast<const Stored*>(c.raw_data());
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<T>(p[i]);
  return out;
}

#define CTRAX_INSTANTIATE(T)                      \
  template T Tensor::item<T>() const;             \
  template std::vector<T> Tensor::to_vector<T>() const;
CTRAX_INSTANTIATE(float)
CTRAX_INSTANTIATE(double)
CTRAX_INSTANTIATE(int32_t)
CTRAX_INSTANTIATE(int64_t)
CTRAX_INSTANTIATE(uint8_t)
#undef CTRAX_INSTANTIATE
template bool Tensor::item<bool>() const;

// ---------------------------------------------------------------------------------------------
// Views
// ---------------------------------------------------------------------------------------------

namespace {
// Resolves a -1 in `shape` so that it has `numel` elements; throws on mismatch.
Shape infer_shape(const Shape& requested, int64_t numel, const Shape& from, const char* op) {
  Shape shape = requested;
  int inferred = -1;
  int64_t known = 1;
  for (int i = 0; i < shape.rank(); ++i) {
    if (shape[i] == -1) {
      CTRAX_REQUIRE(inferred < 0, op, ": only one dimension can be -1, got ", requested);
      inferred = i;
    } else {
      CTRAX_REQUIRE(shape[i] >= 0, op, ": invalid dimension ", shape[i], " in ", requested);
      CTRAX_REQUIRE(!__builtin_mul_overflow(known, shape[i], &known), op, ": the dimensions of ", requested,
                    " overflow int64");
    }
  }
  if (inferred >= 0) {
    CTRAX_REQUIRE(known != 0 && numel % known == 0, op, ": cannot reshape ", from, " (", numel,
                  " elements) into ", requested);
    shape[inferred] = numel / known;
  }
  const int64_t count = inferred >= 0 ? known * shape[inferred] : known;
  CTRAX_REQUIRE(count == numel, op, ": cannot reshape ", from, " (", numel, " elements) into ", requested, " (",
                count, " elements)");
  return shape;
}

// Strides for viewing a tensor of shape `old_shape`/`old_strides` as `new_shape` without a
// copy, or false when the memory layout does not allow it. Works group by group: each run
// of old dims that is contiguous in memory may be re-split arbitrarily.
bool view_strides(const Shape& old_shape, const Shape& old_strides, const Shape& new_shape, Shape& out) {
  out = Shape::filled(new_shape.rank(), 0);
  if (old_shape.numel() == 0) {
    out = contiguous_strides(new_shape);
    return true;
  }
  int oi = 0, ni = 0;
  const int orank = old_shape.rank(), nrank = new_shape.rank();
  while (oi < orank || ni < nrank) {
    // skip size-1 dims on both sides (their strides are arbitrary)
    if (ni < nrank && new_shape[ni] == 1) {
      out[ni] = 1;
      ++ni;
      continue;
    }
    if (oi < orank && old_shape[oi] == 1) {
      ++oi;
      continue;
    }
    if (oi >= orank || ni >= nrank) return false;
    // gather a contiguous group of old dims whose product matches a group of new dims
    int64_t old_size = old_shape[oi], new_size = new_shape[ni];
    int og_end = oi + 1, ng_end = ni + 1;
    while (old_size != new_size) {
      if (old_size < new_size) {
        while (og_end < orank && old_shape[og_end] == 1) ++og_end;
        if (og_end >= orank) return false;
        // old dims og_end-1 and og_end must be one run of memory
        int prev = og_end - 1;
        while (old_shape[prev] == 1) --prev;
        if (old_strides[prev] != old_strides[og_end] * old_shape[og_end]) return false;
        old_size *= old_shape[og_end++];
      } else {
        if (ng_end >= nrank) return false;
        new_size *= new_shape[ng_end++];
      }
    }
    // also the group itself must be contiguous internally when it has several old dims
    // (checked incrementally above); assign new strides from the innermost old stride
    int last_old = og_end - 1;
    while (old_shape[last_old] == 1 && last_old > oi) --last_old;
    int64_t stride = old_strides[last_old];
    for (int j = ng_end - 1; j >= ni; --j) {
      out[j] = stride;
      stride *= new_shape[j];
    }
    oi = og_end;
    ni = ng_end;
  }
  return true;
}
}  // namespace

namespace {
// Reports a view to autodiff (trace.h) when `input` is traced. A view calls no other op, so
// nothing needs pausing; make_attrs runs only when recording.
template <typename MakeAttrs>
Tensor traced_view(OpId op, const Tensor& input, Tensor out, MakeAttrs&& make_attrs) {
  if (detail::any_traced(std::span<const Tensor* const>(std::array<const Tensor*, 1>{&input}))) {
    const Tensor* in[] = {&input};
    record_op(op, in, std::span<Tensor>(&out, 1), make_attrs());
  }
  return out;
}
Tensor traced_view(OpId op, const Tensor& input, Tensor out) {
  return traced_view(op, input, std::move(out), [] { return OpAttrs{}; });
}
}  // namespace

Tensor Tensor::view(const Shape& requested) const {
  require_defined("view");
  const Shape shape = infer_shape(requested, numel(), shape_, "view");
  Shape strides;
  CTRAX_REQUIRE(view_strides(shape_, strides_, shape, strides), "view: a tensor of shape ", shape_,
                " with strides ", strides_, " cannot be viewed as ", shape,
                " without a copy (use reshape, which copies when needed)");
  return traced_view(OpId::reshape, *this, Tensor(storage_, shape, strides, offset_, dtype_));
}

Tensor Tensor::reshape(const Shape& requested) const {
  require_defined("reshape");
  const Shape shape = infer_shape(requested, numel(), shape_, "reshape");
  Shape strides;
  if (view_strides(shape_, strides_, shape, strides))
    return traced_view(OpId::reshape, *this, Tensor(storage_, shape, strides, offset_, dtype_));
  return traced_op(OpId::reshape, {this}, [&] { return contiguous().view(shape); });
}

Tensor Tensor::permute(const std::vector<int>& axes) const {
  require_defined("permute");
  CTRAX_REQUIRE(static_cast<int>(axes.size()) == rank(), "permute: got ", axes.size(),
                " axes for a tensor of rank ", rank(), " (expected a permutation of all axes)");
  Shape shape = shape_, strides = strides_;
  bool seen[kMaxRank] = {};
  for (int i = 0; i < rank(); ++i) {
    const int a = normalize_axis(axes[i], rank(), "permute");
    CTRAX_REQUIRE(!seen[a], "permute: axis ", axes[i], " appears twice (expected a permutation)");
    seen[a] = true;
    shape[i] = shape_[a];
    strides[i] = strides_[a];
  }
  return traced_view(OpId::permute, *this, Tensor(storage_, shape, strides, offset_, dtype_), [&] {
    Shape perm;
    for (int ax : axes) perm.push_back(normalize_axis(ax, rank(), "permute"));
    return OpAttrs{AxesAttrs{perm}};
  });
}

Tensor Tensor::transpose(int axis0, int axis1) const {
  require_defined("transpose");
  const int a = normalize_axis(axis0, rank(), "transpose"), b = normalize_axis(axis1, rank(), "transpose");
  Shape shape = shape_, strides = strides_;
  std::swap(shape[a], shape[b]);
  std::swap(strides[a], strides[b]);
  return traced_view(OpId::permute, *this, Tensor(storage_, shape, strides, offset_, dtype_), [&] {
    Shape perm = Shape::filled(rank(), 0);
    for (int i = 0; i < rank(); ++i) perm[i] = i;
    std::swap(perm[a], perm[b]);
    return OpAttrs{AxesAttrs{perm}};
  });
}

Tensor Tensor::mT() const {
  require_defined("mT");
  CTRAX_REQUIRE(rank() >= 2, "mT: expected a tensor of rank >= 2, got shape ", shape_);
  return transpose(-2, -1);
}

Tensor Tensor::slice(int axis, int64_t start, int64_t stop, int64_t step) const {
  require_defined("slice");
  const int a = normalize_axis(axis, rank(), "slice");
  CTRAX_REQUIRE(step >= 1, "slice: step must be >= 1, got ", step);
  const int64_t n = shape_[a];
  auto clamp = [n](int64_t i) {
    if (i < 0) i += n;
    return i < 0 ? 0 : (i > n ? n : i);
  };
  const int64_t b = clamp(start), e = clamp(stop);
  const int64_t count = e > b ? (e - b - 1) / step + 1 : 0;  // ceil without overflow
  Shape shape = shape_, strides = strides_;
  shape[a] = count;
  strides[a] = count > 1 ? strides_[a] * step : strides_[a];  // a huge step with one element must not overflow
  return traced_view(OpId::slice, *this, Tensor(storage_, shape, strides, offset_ + (count > 0 ? b * strides_[a] : 0), dtype_),
                     [&] { return OpAttrs{SliceAttrs{a, b, step, false}}; });
}

Tensor Tensor::select(int axis, int64_t index) const {
  require_defined("select");
  const int a = normalize_axis(axis, rank(), "select");
  const int64_t n = shape_[a];
  CTRAX_REQUIRE(index >= -n && index < n, "select: index ", index, " is out of range for axis ", axis,
                " of size ", n, " (expected an index in [", -n, ", ", n - 1, "])");
  if (index < 0) index += n;
  Shape shape = shape_, strides = strides_;
  shape.erase(a);
  strides.erase(a);
  return traced_view(OpId::slice, *this, Tensor(storage_, shape, strides, offset_ + index * strides_[a], dtype_),
                     [&] { return OpAttrs{SliceAttrs{a, index, 1, true}}; });
}

Tensor Tensor::expand(const Shape& target) const {
  require_defined("expand");
  CTRAX_REQUIRE(target.rank() >= rank(), "expand: cannot expand shape ", shape_, " to ", target,
                " of lower rank");
  Shape strides = Shape::filled(target.rank(), 0);
  const int shift = target.rank() - rank();
  for (int i = 0; i < target.rank(); ++i) {
    CTRAX_REQUIRE(target[i] >= 0, "expand: invalid target shape ", target);
    if (i < shift) continue;
    const int64_t d = shape_[i - shift];
    CTRAX_REQUIRE(d == target[i] || d == 1, "expand: cannot broadcast shape ", shape_, " to ", target,
                  " (dimension ", i, " is ", d, "; expected ", target[i], " or 1)");
    strides[i] = (d == target[i]) ? strides_[i - shift] : 0;
  }
  return traced_view(OpId::expand, *this, Tensor(storage_, target, strides, offset_, dtype_));
}

Tensor Tensor::squeeze() const {
  require_defined("squeeze");
  Shape shape, strides;
  for (int i = 0; i < rank(); ++i)
    if (shape_[i] != 1) {
      shape.push_back(shape_[i]);
      strides.push_back(strides_[i]);
    }
  return traced_view(OpId::squeeze, *this, Tensor(storage_, shape, strides, offset_, dtype_));
}

Tensor Tensor::squeeze(int axis) const {
  require_defined("squeeze");
  const int a = normalize_axis(axis, rank(), "squeeze");
  CTRAX_REQUIRE(shape_[a] == 1, "squeeze: axis ", axis, " of shape ", shape_, " has size ", shape_[a],
                " (expected 1)");
  Shape shape = shape_, strides = strides_;
  shape.erase(a);
  strides.erase(a);
  return traced_view(OpId::squeeze, *this, Tensor(storage_, shape, strides, offset_, dtype_));
}

Tensor Tensor::unsqueeze(int axis) const {
  require_defined("unsqueeze");
  const int a = normalize_axis(axis, rank() + 1, "unsqueeze");
  CTRAX_REQUIRE(rank() < kMaxRank, "unsqueeze: a tensor of rank ", rank(), " cannot grow beyond rank ",
                kMaxRank);
  Shape shape = shape_, strides = strides_;
  const int64_t stride = a < rank() ? strides_[a] * shape_[a] : 1;
  shape.insert(a, 1);
  strides.insert(a, stride);
  return traced_view(OpId::unsqueeze, *this, Tensor(storage_, shape, strides, offset_, dtype_));
}

Tensor Tensor::flatten(int start_axis, int end_axis) const {
  require_defined("flatten");
  if (rank() == 0) return reshape(Shape{1});
  const int s = normalize_axis(start_axis, rank(), "flatten"), e = normalize_axis(end_axis, rank(), "flatten");
  CTRAX_REQUIRE(s <= e, "flatten: start axis ", start_axis, " comes after end axis ", end_axis);
  Shape shape;
  for (int i = 0; i < s; ++i) shape.push_back(shape_[i]);
  int64_t n = 1;
  for (int i = s; i <= e; ++i) n *= shape_[i];
  shape.push_back(n);
  for (int i = e + 1; i < rank(); ++i) shape.push_back(shape_[i]);
  return reshape(shape);
}

// ---------------------------------------------------------------------------------------------
// Copies and conversions
// ---------------------------------------------------------------------------------------------

namespace {
template <typename To, typename From>
void convert_run(char* out, const char* in, int64_t so, int64_t si, int64_t n) {
  if (so == sizeof(To) && si == sizeof(From)) {
    To* o = reinterpret_cast<To*>(out);
    const From* x = reinterpret_cast<const From*>(in);
    if constexpr (std::is_same_v<To, From>) {
      std::memcpy(o, x, static_cast<size_t>(n) * sizeof(To));
    } else {
      for (int64_t i = 0; i < n; ++i) o[i] = convert<To>(x[i]);
    }
    return;
  }
  for (int64_t i = 0; i < n; ++i)
    *reinterpret_cast<To*>(out + i * so) = convert<To>(*reinterpret_cast<const From*>(in + i * si));
}
}  // namespace

void Tensor::copy_(const Tensor& src) {
  require_defined("copy_");
  CTRAX_REQUIRE(!detail::is_traced(*this), "copy_: the destination (", dtype_, shape_,
                ") is traced by autodiff; an in-place write would make its gradient wrong. Compute a new "
                "tensor instead (e.g. where, concatenate), or write to stop_gradient(x) if you mean it");
  src.require_defined("copy_");
  // Between devices: move src to this tensor's device first, then copy there.
  if (src.device() != device()) {
    copy_(src.to(device()));
    return;
  }
  // Source and destination in one storage may overlap: copy through a temporary so the
  // result is as if src were read completely before anything is written (NumPy semantics).
  if (src.shares_storage_with(*this)) {
    copy_(src.clone());
    return;
  }
  // The common case on the CPU (clone, a plan binding its inputs): the same shape and dtype, both
  // contiguous, is one memcpy, without the broadcast and the strided loop's set-up.
  if (device().is_cpu() && src.dtype() == dtype_ && src.shape() == shape_ && is_contiguous() && src.is_contiguous()) {
    const size_t nbytes = static_cast<size_t>(numel()) * element_size();
    if (nbytes == 0) return;
    detail::KernelScope scope;
    char* to = static_cast<char*>(raw_data());
    const char* from = static_cast<const char*>(src.raw_data());
    detail::run_kernel([to, from, nbytes] { std::memcpy(to, from, nbytes); });
    return;
  }
  // Broadcast src to our shape (throws with both shapes when impossible).
  const Tensor s = src.expand(shape_);
  if (device().is_cuda()) {
    cuda_detail::use_device_of(*this);
    kernels::cuda::strided_copy(cuda_detail::strided_arg(*this), cuda_detail::element_type(dtype_),
                                cuda_detail::strided_arg(s, shape_), cuda_detail::element_type(s.dtype()));
    return;
  }
  detail::KernelScope scope;
  std::array<char*, 2> base{static_cast<char*>(raw_data()), static_cast<char*>(s.raw_data())};
  std::array<Shape, 2> strides{detail::broadcast_byte_strides(*this, shape_),
                               detail::broadcast_byte_strides(s, shape_)};
  dispatch_dtype(dtype_, [&](auto to_tag) {
    using To = decltype(to_tag);
    dispatch_dtype(s.dtype(), [&](auto from_tag) {
      using From = decltype(from_tag);
      detail::run_kernel([shape = shape_, base, strides] {
        detail::strided_loop<2>(shape, base, strides, [](std::array<char*, 2> p, std::array<int64_t, 2> st, int64_t n) {
          convert_run<To, From>(p[0], p[1], st[0], st[1], n);
        });
      });
    });
  });
}

void Tensor::fill_(double value) {
  require_defined("fill_");
  CTRAX_REQUIRE(!detail::is_traced(*this), "fill_: the tensor (", dtype_, shape_,
                ") is traced by autodiff; an in-place write would make its gradient wrong. Use full_like(x, v) instead");
  if (device().is_cuda()) {
    cuda_detail::use_device_of(*this);
    kernels::cuda::fill(cuda_detail::strided_arg(*this), cuda_detail::element_type(dtype_), value);
    return;
  }
  dispatch_dtype(dtype_, [&](auto tag) {
    using T = decltype(tag);
    const T v = convert<T>(value);
    detail::KernelScope scope;
    std::array<char*, 1> base{static_cast<char*>(raw_data())};
    std::array<Shape, 1> strides{detail::broadcast_byte_strides(*this, shape_)};
    detail::run_kernel([shape = shape_, base, strides, v] {
      detail::strided_loop<1>(shape, base, strides, [v](std::array<char*, 1> p, std::array<int64_t, 1> st, int64_t n) {
        if (st[0] == sizeof(T)) {
          T* o = reinterpret_cast<T*>(p[0]);
          for (int64_t i = 0; i < n; ++i) o[i] = v;
        } else {
          for (int64_t i = 0; i < n; ++i) *reinterpret_cast<T*>(p[0] + i * st[0]) = v;
        }
      });
    });
  });
}

Tensor Tensor::contiguous() const {
  require_defined("contiguous");
  if (is_contiguous()) return *this;
  return traced_op(OpId::contiguous, {this}, [&] { return clone(); });
}

Tensor Tensor::clone() const {
  require_defined("clone");
  return traced_op(OpId::contiguous, {this}, [&] {
    Tensor out(shape_, dtype_, device());
    out.copy_(*this);
    return out;
  });
}

Tensor Tensor::to(DType dtype) const {
  require_defined("to");
  if (dtype == dtype_) return *this;
  return traced_op(OpId::cast, {this}, [&] {
    Tensor out(shape_, dtype, device());
    out.copy_(*this);
    return out;
  });
}

Tensor Tensor::to(Device device) const {
  require_defined("to");
  if (device == this->device()) return *this;
  CTRAX_REQUIRE(device.is_cpu() || kernels::cuda::available(), "to: cannot move a tensor from ", this->device(),
                " to ", device, ": ", kernels::cuda::unavailable_reason());
  // Both ends contiguous: one transfer of the bytes. A strided source is first made
  // contiguous where it lives (on the GPU by a kernel, on the CPU by the strided loop).
  const Tensor src = contiguous();
  Tensor out(shape_, dtype_, device);  // throws when the device is unavailable
  const size_t nbytes = static_cast<size_t>(numel()) * element_size();
  if (device.is_cuda() && src.device().is_cpu()) {
    kernels::cuda::copy_host_to_device(out.device_data(), src.device_data(), nbytes, device.index);
  } else if (device.is_cpu() && src.device().is_cuda()) {
    kernels::cuda::copy_device_to_host(out.device_data(), src.device_data(), nbytes, src.device().index);
  } else {
    kernels::cuda::copy_device_to_device(out.device_data(), device.index, src.device_data(), src.device().index, nbytes);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Creation
// ---------------------------------------------------------------------------------------------

Tensor empty(const Shape& shape, DType dtype, Device device) { return Tensor(shape, dtype, device); }

Tensor full(const Shape& shape, double value, DType dtype, Device device) {
  Tensor t(shape, dtype, device);
  t.fill_(value);
  return t;
}
Tensor zeros(const Shape& shape, DType dtype, Device device) { return full(shape, 0.0, dtype, device); }
Tensor ones(const Shape& shape, DType dtype, Device device) { return full(shape, 1.0, dtype, device); }
Tensor zeros_like(const Tensor& t) { return zeros(t.shape(), t.dtype(), t.device()); }
Tensor ones_like(const Tensor& t) { return ones(t.shape(), t.dtype(), t.device()); }
Tensor full_like(const Tensor& t, double value) { return full(t.shape(), value, t.dtype(), t.device()); }
Tensor scalar_tensor(double value, DType dtype) { return full(Shape{}, value, dtype); }

Tensor arange(double start, double stop, double step, DType dtype) {
  CTRAX_REQUIRE(step != 0 && std::isfinite(step) && std::isfinite(start) && std::isfinite(stop),
                "arange: expected finite start, stop and a nonzero step, got start=", start, " stop=", stop,
                " step=", step);
  const double count_d = std::ceil((stop - start) / step);
  CTRAX_REQUIRE(count_d <= static_cast<double>(int64_t{1} << 46), "arange: ", count_d, " elements (start=", start,
                " stop=", stop, " step=", step, ") is too many");
  const int64_t count = count_d > 0 ? static_cast<int64_t>(count_d) : 0;
  Tensor t(Shape{count}, dtype);
  detail::KernelScope scope;
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* p = static_cast<T*>(t.raw_data());
    for (int64_t i = 0; i < count; ++i) p[i] = convert<T>(start + static_cast<double>(i) * step);
  });
  detail::record_constant(t);
  return t;
}

Tensor arange(int64_t stop, DType dtype) { return arange(0.0, static_cast<double>(stop), 1.0, dtype); }

Tensor linspace(double start, double stop, int64_t count, DType dtype) {
  CTRAX_REQUIRE(count >= 0, "linspace: count must be >= 0, got ", count);
  Tensor t(Shape{count}, dtype);
  detail::KernelScope scope;
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* p = static_cast<T*>(t.raw_data());
    const double step = count > 1 ? (stop - start) / static_cast<double>(count - 1) : 0.0;
    for (int64_t i = 0; i < count; ++i)
      p[i] = convert<T>(i == count - 1 && count > 1 ? stop : start + static_cast<double>(i) * step);
  });
  detail::record_constant(t);
  return t;
}

Tensor eye(int64_t n, int64_t m, DType dtype) {
  if (m < 0) m = n;
  CTRAX_REQUIRE(n >= 0, "eye: n must be >= 0, got ", n);
  Tensor t = zeros(Shape{n, m}, dtype);
  detail::KernelScope scope;
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* p = static_cast<T*>(t.raw_data());
    for (int64_t i = 0; i < std::min(n, m); ++i) p[i * m + i] = T(1);
  });
  detail::record_constant(t);
  return t;
}

template <typename T>
Tensor from_buffer(const T* data, const Shape& shape) {
  require_valid_shape(shape, "from_buffer");
  using Stored = typename dtype_traits<dtype_of<T>()>::type;
  Tensor t(shape, dtype_of<T>());
  detail::KernelScope scope;
  Stored* p = static_cast<Stored*>(t.raw_data());
  const int64_t n = shape.numel();
  CTRAX_REQUIRE(n == 0 || data != nullptr, "from_buffer: null data pointer for shape ", shape);
  for (int64_t i = 0; i < n; ++i) p[i] = convert<Stored>(data[i]);
  detail::record_constant(t);
  return t;
}

template <typename T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape) {
  require_valid_shape(shape, "from_vector");
  CTRAX_REQUIRE(static_cast<int64_t>(values.size()) == shape.numel(), "from_vector: ", values.size(),
                " values do not fill shape ", shape, " (expected ", shape.numel(), ")");
  if constexpr (std::is_same_v<T, bool>) {
    Tensor t(shape, DType::boolean);
    detail::KernelScope scope;
    uint8_t* p = static_cast<uint8_t*>(t.raw_data());
    for (size_t i = 0; i < values.size(); ++i) p[i] = values[i] ? 1 : 0;
    detail::record_constant(t);
    return t;
  } else {
    return from_buffer(values.data(), shape);
  }
}

#define CTRAX_INSTANTIATE(T)                                   \
  template Tensor from_buffer<T>(const T*, const Shape&);      \
  template Tensor from_vector<T>(const std::vector<T>&, const Shape&);
CTRAX_INSTANTIATE(float)
CTRAX_INSTANTIATE(double)
CTRAX_INSTANTIATE(int32_t)
CTRAX_INSTANTIATE(int64_t)
CTRAX_INSTANTIATE(uint8_t)
#undef CTRAX_INSTANTIATE
template Tensor from_vector<bool>(const std::vector<bool>&, const Shape&);

}  // namespace ctrax
