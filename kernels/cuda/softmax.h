// softmax and log_softmax of contiguous rows on the GPU (the CUDA side of tensor/ops/softmax.cpp).
//
// What it is for: y[r, :] = softmax(x[r, :]) (or log_softmax) for `rows` contiguous rows of
// `len` float32 or float64 elements, with the CPU's numerics: m = max (a NaN wins), e_i =
// exp(x_i - m) in the element type, s = sum e_i in double, then y_i = e_i * T(1 / s) or
// y_i = T(double(x_i - m) - log s). A row of all -inf or one with +inf or NaN becomes NaN, as
// on the CPU. The caller moves the softmax axis innermost and converts integer inputs to
// float32 first.
// What it is not for: strided rows or another axis (the tensor layer makes the rows
// contiguous first), or cuDNN's softmax (kernels/cuda/cudnn.h, chosen in backend.h).
#pragma once

#include <cstdint>

#include "strided.h"

namespace ctrax::kernels::cuda {

// type is float32 or float64; x and y may not overlap. Asynchronous on current_stream().
void softmax_rows(const void* x, void* y, ElementType type, int64_t rows, int64_t len, bool log);

}  // namespace ctrax::kernels::cuda
