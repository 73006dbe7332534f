// Checks for CUDA runtime calls and kernel launches (CUDA builds only; include from .cu files
// and from the few .cpp files that call the CUDA runtime).
//
// What it is for: turning every CUDA failure into a ctrax::Error that names the call, the file
// and the line, so "an illegal memory access" points at the code that caused it instead of at
// whichever later call happened to notice. Kernel launches return nothing, so each <<<>>> is
// followed by CTRAX_CUDA_CHECK_LAUNCH, which reads the launch error (bad configuration, no
// kernel image for this GPU) at once. Errors inside a running kernel surface at the next
// synchronising call, which is checked too.
//
// What it is not for: the core library (only the CUDA module, libctrax_cuda.so, includes it).
#pragma once

#include <cuda_runtime.h>

#include "../../base/error.h"

namespace ctrax::kernels::cuda::detail {
[[noreturn]] inline void cuda_call_failed(cudaError_t status, const char* call, const char* file, int line) {
  CTRAX_THROW("CUDA error ", cudaGetErrorName(status), " (", cudaGetErrorString(status), ") from ", call,
              " at ", file, ":", line);
}
}  // namespace ctrax::kernels::cuda::detail

#define CTRAX_CUDA_CHECK(call)                                                                 \
  do {                                                                                         \
    const cudaError_t ctrax_cuda_status_ = (call);                                             \
    if (ctrax_cuda_status_ != cudaSuccess) [[unlikely]]                                        \
      ::ctrax::kernels::cuda::detail::cuda_call_failed(ctrax_cuda_status_, #call, __FILE__, __LINE__); \
  } while (0)

// After a launch: cudaGetLastError reports (and clears) a launch that failed to start.
#define CTRAX_CUDA_CHECK_LAUNCH(kernel_name)                                                   \
  do {                                                                                         \
    const cudaError_t ctrax_cuda_status_ = cudaGetLastError();                                 \
    if (ctrax_cuda_status_ != cudaSuccess) [[unlikely]]                                        \
      ::ctrax::kernels::cuda::detail::cuda_call_failed(ctrax_cuda_status_, "launch of " kernel_name, \
                                                       __FILE__, __LINE__);                   \
  } while (0)
