// ctrax.h: the umbrella header. Including it gives the whole public API built so far:
// tensors and their ops, weight trees, random numbers, autodiff, layers, and the kernel
// backends' controls.
//
// What it is not for: inside the library itself, which includes the specific headers it
// needs (so that the dependency direction kernels <- tensor <- autograd <- ... stays visible).
#pragma once

#include "autograd/custom.h"
#include "autograd/grad.h"
#include "autograd/gradcheck.h"
#include "autograd/tape.h"
#include "kernels/check.h"
#include "kernels/gemm.h"
#include "kernels/parallel.h"
#include "layers/combinators.h"
#include "layers/conv.h"
#include "layers/core.h"
#include "layers/custom_backward.h"
#include "layers/embedding_dropout.h"
#include "layers/initializers.h"
#include "layers/layer.h"
#include "layers/metrics.h"
#include "layers/models.h"
#include "layers/normalization.h"
#include "layers/summary.h"
#include "tensor/device.h"
#include "tensor/dtype.h"
#include "tensor/ops.h"
#include "tensor/random.h"
#include "tensor/shape.h"
#include "tensor/tensor.h"
#include "tensor/tree.h"
