// Tensor: an n-dimensional view of typed memory on a device.
//
// What it is for: the value type every layer of ctrax passes around. A Tensor is a small
// handle: a shared, reference-counted Storage plus its own shape, strides (in elements),
// offset, dtype and device. Copying a Tensor copies the handle, not the data (like a
// shared_ptr); views (reshape, permute, slice, expand, ...) make new handles onto the same
// storage without copying. Shapes and strides are held inline (rank <= 8), so making a
// view never allocates.
//
// What it is not for: the maths. Ops are free functions in ops.h; random numbers are in
// random.h; autodiff lives one layer up in autograd/.
//
// Rank-0 tensors hold one element and have an empty shape. Zero-sized dimensions are
// allowed everywhere. Views with negative strides are not produced (flip copies).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "../base/error.h"
#include "device.h"
#include "dtype.h"
#include "plan.h"
#include "shape.h"
#include "storage.h"

namespace ctrax {

class Tensor {
 public:
  // An undefined tensor (no storage). Most operations on it throw ctrax::Error.
  Tensor() = default;
  // A fresh, contiguous, uninitialised tensor.
  Tensor(const Shape& shape, DType dtype, Device device = Device::cpu());
  // A view: used by view ops and by code that builds tensors over existing storage.
  Tensor(std::shared_ptr<Storage> storage, const Shape& shape, const Shape& strides, int64_t offset,
         DType dtype);

  // ---- Properties ------------------------------------------------------------------------
  bool defined() const { return storage_ != nullptr; }
  DType dtype() const { return dtype_; }
  Device device() const { return storage_ ? storage_->device() : Device::cpu(); }
  int rank() const { return shape_.rank(); }
  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }
  int64_t offset() const { return offset_; }
  int64_t numel() const { return shape_.numel(); }
  // Size of one axis; negative axes count from the end.
  int64_t size(int axis) const;
  size_t element_size() const { return dtype_size(dtype_); }
  // True when the elements are laid out row-major without gaps (size-1 and empty
  // dimensions may have any stride).
  bool is_contiguous() const;
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  // True when both tensors view the same storage.
  bool shares_storage_with(const Tensor& other) const { return storage_ && storage_ == other.storage_; }

  // Host pointer to the first element (offset applied), for code that reads or writes the
  // values on the CPU. data<T>() checks that T matches the dtype. Both throw ctrax::Error for a
  // tensor on another device: host code must never dereference device memory (copy it with
  // .to(Device::cpu()) first).
  void* raw_data() const {
    require_host("Tensor::data");
    return device_data();
  }
  template <typename T>
  T* data() const {
    require_dtype<T>("Tensor::data");
    return static_cast<T*>(raw_data());
  }
  // Pointer to the first element on the tensor's own device (a device pointer for a GPU tensor),
  // to hand to a kernel of that device. Host code never dereferences it.
  void* device_data() const {
    require_defined("Tensor::data");
    if (detail::t_capture_state.recorder != nullptr) [[unlikely]] detail::note_raw_access(storage_);
    return static_cast<char*>(storage_->data()) + offset_ * static_cast<int64_t>(element_size());
  }
  template <typename T>
  T* device_data() const {
    require_dtype<T>("Tensor::device_data");
    return static_cast<T*>(device_data());
  }

  // The single element of a one-element tensor, converted to T.
  template <typename T>
  T item() const;
  // All elements in row-major order, converted to T.
  template <typename T>
  std::vector<T> to_vector() const;

  // ---- Views (no copy) --------------------------------------------------------------------
  // Reshape: a view when the strides allow it, else a contiguous copy. One dimension may be
  // -1 (inferred). view() is the same but throws instead of copying.
  Tensor reshape(const Shape& shape) const;
  Tensor view(const Shape& shape) const;
  Tensor permute(const std::vector<int>& axes) const;
  Tensor transpose(int axis0, int axis1) const;
  // Swaps the last two axes (the matrix transpose of a batch of matrices).
  Tensor mT() const;
  // Elements start, start+step, ... < stop along `axis` (Python slice semantics: negative
  // start/stop count from the end and are clamped; step >= 1).
  Tensor slice(int axis, int64_t start, int64_t stop, int64_t step = 1) const;
  // Drops `axis`, keeping index `index` (negative counts from the end).
  Tensor select(int axis, int64_t index) const;
  // Broadcast to `shape` (NumPy rules) with zero strides; size-1 dims may grow.
  Tensor expand(const Shape& shape) const;
  Tensor broadcast_to(const Shape& shape) const { return expand(shape); }
  Tensor squeeze() const;          // all size-1 axes
  Tensor squeeze(int axis) const;  // the axis must have size 1
  Tensor unsqueeze(int axis) const;
  // Collapses axes [start, end] into one.
  Tensor flatten(int start_axis = 0, int end_axis = -1) const;

  // ---- Copies -----------------------------------------------------------------------------
  // This tensor if already contiguous, else a contiguous copy.
  Tensor contiguous() const;
  // Always a fresh contiguous copy.
  Tensor clone() const;
  // Converted to `dtype` (a copy unless already that dtype). float -> int truncates toward
  // zero and saturates at the integer's range, NaN -> 0; anything -> bool is (x != 0).
  Tensor to(DType dtype) const;
  // Copied to `device` (this tensor if already there).
  Tensor to(Device device) const;
  // Writes src (broadcast to this shape, converted to this dtype) into this tensor's memory.
  void copy_(const Tensor& src);
  // Sets every element to value.
  void fill_(double value);

  // Prints like NumPy: dtype, shape and values, abbreviated when large.
  std::string to_string() const;

  // Makes this handle undefined, dropping its reference to the storage (the memory is freed
  // when no other handle views it).
  void reset() {
    storage_.reset();
    trace_tape_ = 0;
    trace_value_ = 0;
  }

  // ---- Autodiff bookkeeping (tensor/trace.h) ---------------------------------------------
  // Which traced value this handle holds: the id of the recording tape and the value's index
  // on it, or zeros (untraced). Copied with the handle; every fresh tensor and every view
  // starts untraced. Set only by autograd/; users never need these.
  uint32_t trace_tape() const { return trace_tape_; }
  uint32_t trace_value() const { return trace_value_; }
  void set_trace(uint32_t tape, uint32_t value) {
    trace_tape_ = tape;
    trace_value_ = value;
  }

 private:
  void require_defined(const char* op) const {
    CTRAX_REQUIRE(defined(), op, ": the tensor is undefined (default-constructed)");
  }
  void require_host(const char* op) const {
    require_defined(op);
    if (!storage_->device().is_cpu()) [[unlikely]] throw_not_on_host(op);
  }
  template <typename T>
  void require_dtype(const char* op) const {
    CTRAX_REQUIRE(dtype_of<T>() == dtype_, op, ": the tensor has dtype ", dtype_, ", not the requested ", dtype_of<T>());
  }
  [[noreturn]] void throw_not_on_host(const char* op) const;

  std::shared_ptr<Storage> storage_;
  Shape shape_;
  Shape strides_;
  int64_t offset_ = 0;
  DType dtype_ = DType::float32;
  uint32_t trace_tape_ = 0;
  uint32_t trace_value_ = 0;
};

std::ostream& operator<<(std::ostream& out, const Tensor& t);

// ---- Creation --------------------------------------------------------------------------------
Tensor empty(const Shape& shape, DType dtype = DType::float32, Device device = Device::cpu());
Tensor zeros(const Shape& shape, DType dtype = DType::float32, Device device = Device::cpu());
Tensor ones(const Shape& shape, DType dtype = DType::float32, Device device = Device::cpu());
Tensor full(const Shape& shape, double value, DType dtype = DType::float32, Device device = Device::cpu());
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
Tensor full_like(const Tensor& t, double value);
// A rank-0 tensor.
Tensor scalar_tensor(double value, DType dtype = DType::float32);
// [start, stop) with `step` (NumPy arange; the count is ceil((stop - start) / step)).
Tensor arange(double start, double stop, double step = 1.0, DType dtype = DType::float32);
Tensor arange(int64_t stop, DType dtype = DType::int64);
// `count` evenly spaced values from start to stop inclusive.
Tensor linspace(double start, double stop, int64_t count, DType dtype = DType::float32);
// n x m identity (m = n when negative).
Tensor eye(int64_t n, int64_t m = -1, DType dtype = DType::float32);
// Copies a C++ buffer of numel(shape) elements.
template <typename T>
Tensor from_buffer(const T* data, const Shape& shape);
template <typename T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape);
template <typename T>
Tensor from_vector(const std::vector<T>& values) {
  return from_vector(values, Shape{static_cast<int64_t>(values.size())});
}
// tensor({1.f, 2.f, 3.f}) or tensor({1.0, 2.0}, {2, 1}).
template <typename T>
Tensor tensor(std::initializer_list<T> values, const Shape& shape);
template <typename T>
Tensor tensor(std::initializer_list<T> values) {
  return from_vector(std::vector<T>(values));
}
template <typename T>
Tensor tensor(std::initializer_list<T> values, const Shape& shape) {
  return from_vector(std::vector<T>(values), shape);
}

}  // namespace ctrax
