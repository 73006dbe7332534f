// Internal: describing tensors to the CUDA kernels (kernels/cuda/strided.h).
//
// What it is for: the one place that turns a Tensor into a kernels::cuda::StridedArg (its
// first element, shape and element strides, zero on broadcast axes) and a DType into the
// kernels' ElementType, and that makes a tensor's device current before a launch. Used by
// tensor.cpp and the ops' CUDA paths.
//
// What it is not for: users (not part of the public API).
#pragma once

#include "../kernels/cuda/runtime.h"
#include "../kernels/cuda/strided.h"
#include "tensor.h"

namespace ctrax::cuda_detail {

static_assert(static_cast<int>(DType::float32) == static_cast<int>(kernels::cuda::ElementType::float32) &&
                  static_cast<int>(DType::float64) == static_cast<int>(kernels::cuda::ElementType::float64) &&
                  static_cast<int>(DType::int32) == static_cast<int>(kernels::cuda::ElementType::int32) &&
                  static_cast<int>(DType::int64) == static_cast<int>(kernels::cuda::ElementType::int64) &&
                  static_cast<int>(DType::boolean) == static_cast<int>(kernels::cuda::ElementType::boolean),
              "kernels::cuda::ElementType must list the dtypes in DType's order");

inline kernels::cuda::ElementType element_type(DType dtype) {
  return static_cast<kernels::cuda::ElementType>(dtype);
}

// `t` viewed at `shape` (which t broadcasts to): strides in elements, 0 on broadcast axes.
inline kernels::cuda::StridedArg strided_arg(const Tensor& t, const Shape& shape) {
  CTRAX_CHECK(shape.rank() <= kernels::cuda::kMaxRank, "rank ", shape.rank(), " exceeds the CUDA kernels' limit");
  CTRAX_CHECK(t.rank() <= shape.rank());
  kernels::cuda::StridedArg arg;
  arg.data = t.device_data();
  arg.rank = shape.rank();
  const int shift = shape.rank() - t.rank();
  for (int d = 0; d < shape.rank(); ++d) {
    arg.shape[d] = shape[d];
    if (d < shift) {
      arg.strides[d] = 0;
    } else {
      const int64_t dim = t.shape()[d - shift];
      arg.strides[d] = (dim == 1 && shape[d] != 1) ? 0 : t.strides()[d - shift];
    }
  }
  return arg;
}
inline kernels::cuda::StridedArg strided_arg(const Tensor& t) { return strided_arg(t, t.shape()); }

// Makes t's device current for the launches that follow.
inline void use_device_of(const Tensor& t) { kernels::cuda::set_device(t.device().index); }

// Throws unless every operand is on `device`; `op` names the op in the message.
inline void require_same_device(const char* op, Device device, const Tensor& t, const char* role) {
  CTRAX_REQUIRE(t.device() == device, op, ": operand ", role, " is on ", t.device(), " but the others are on ",
                device, "; move it first with .to(", device, ")");
}

}  // namespace ctrax::cuda_detail
