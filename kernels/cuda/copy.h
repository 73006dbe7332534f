// Copies, conversions and fills of strided device tensors (the CUDA side of Tensor::copy_,
// contiguous, clone, to(dtype) and fill_).
//
// What it is for: moving elements between any two strided layouts of the same shape on one
// device, converting between element types on the way with the rule of tensor/convert.h
// (floating to integer truncates toward zero and saturates, NaN gives 0; anything to bool is
// x != 0), and writing one value to every element of a view.
//
// What it is not for: host <-> device transfers (runtime.h) or broadcasting rules (the caller
// passes zero strides for broadcast axes).
#pragma once

#include "strided.h"

namespace ctrax::kernels::cuda {

// dst[i] = convert(src[i]) for every index of dst's shape; src has dst's rank, shape and its
// own strides. Asynchronous on current_stream().
void strided_copy(const StridedArg& dst, ElementType dst_type, const StridedArg& src, ElementType src_type);

// Every element of dst = value converted to dst_type. Asynchronous on current_stream().
void fill(const StridedArg& dst, ElementType dst_type, double value);

}  // namespace ctrax::kernels::cuda
