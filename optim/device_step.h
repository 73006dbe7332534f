// Internal: running one optimizer step on the weight's device.
//
// What it is for: the optimizers' update_weight picks the CPU loop (kernels/optimizer_steps.h)
// or the CUDA kernel (kernels/cuda/optimizer_steps.h) by where the weight lives, and float or
// double by its dtype. run_step makes the weight's GPU current and calls
// step(T{}, on_gpu) with T the weight's element type; the step writes both calls (the GPU one
// reaches the CUDA module through kernels/cuda/loader.cpp, in every build).
//
// What it is not for: users (not installed as API) or checks (Optimizer::update did them).
#pragma once

#include "../kernels/cuda/runtime.h"
#include "../tensor/tensor.h"

namespace ctrax::optim_detail {

template <typename Step>
double run_step(const Tensor& weight, Step&& step) {
  const bool on_gpu = weight.device().is_cuda();
  if (on_gpu) kernels::cuda::set_device(weight.device().index);
  if (weight.dtype() == DType::float32) return step(float{}, on_gpu);
  return step(double{}, on_gpu);
}

}  // namespace ctrax::optim_detail
