// StridedArg: how a tensor view is handed to a CUDA kernel.
//
// What it is for: kernels below the tensor layer cannot see ctrax::Tensor (kernels/ is the
// bottom layer), so the tensor code describes an operand by its first element, its shape and
// its strides in elements (0 on broadcast axes), at most kMaxRank axes. The struct is plain
// data and is passed to kernels by value, so it lands in constant parameter space at no cost.
// ElementType mirrors ctrax::DType's order (tensor/dtype.h checks the two stay in step).
//
// What it is not for: ownership (the tensor keeps the memory alive) or views with negative
// strides (ctrax does not make them).
#pragma once

#include <cstdint>

namespace ctrax::kernels::cuda {

inline constexpr int kMaxRank = 8;

enum class ElementType : uint8_t { float32, float64, int32, int64, boolean };

struct StridedArg {
  void* data = nullptr;
  int rank = 0;
  int64_t shape[kMaxRank] = {};
  int64_t strides[kMaxRank] = {};  // in elements
};

}  // namespace ctrax::kernels::cuda
