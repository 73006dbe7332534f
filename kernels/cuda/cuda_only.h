// CTRAX_CUDA_ONLY: internal to ctrax's sources (not installed; CTRAX_USE_CUDA is a private
// definition of the library target, so no public header may depend on it).
#pragma once

#include "../check.h"

// CTRAX_CUDA_ONLY(expr): expr in a CUDA build; in a CPU-only build an expression of the same
// type that throws ctrax::Error. For the GPU branch of code that picks CPU or GPU at run time,
// so that the CPU-only build compiles it without the CUDA kernels' symbols (the branch cannot
// run there: no tensor can live on a GPU).
#ifdef CTRAX_USE_CUDA
#define CTRAX_CUDA_ONLY(expr) (expr)
#else
#define CTRAX_CUDA_ONLY(expr) \
  (throw ::ctrax::Error("this build of ctrax has no CUDA backend"), decltype(expr)())
#endif
