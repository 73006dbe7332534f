// op_list.h: every op of the tensor engine, in one table.
//
// What it is for: keeping the per-op tables of the rest of the project in step with the
// engine. The reference tests iterate over this list and fail if an op has no test; autodiff
// (autograd/) and the CUDA backend use it to check that they cover every op.
// X(name, differentiable): differentiable ops take and give floating tensors and have a
// backward (autograd/); the others give integer or bool results, or have no useful gradient.
// What it is not for: the ops' signatures or semantics (tensor/ops.h documents each op).
#pragma once

#define CTRAX_FOR_EACH_OP(X)                                                                     \
  X(neg, true) X(abs, true) X(sign, false) X(exp, true) X(log, true) X(log1p, true)              \
  X(expm1, true) X(sqrt, true) X(rsqrt, true) X(square, true) X(reciprocal, true) X(tanh, true)  \
  X(sigmoid, true) X(softplus, true) X(relu, true) X(gelu, true) X(sin, true) X(cos, true)       \
  X(floor, false) X(ceil, false) X(round, false) X(clip, true) X(isnan, false)                   \
  X(isfinite, false) X(logical_not, false)                                                       \
  X(add, true) X(sub, true) X(mul, true) X(div, true) X(pow, true) X(maximum, true)              \
  X(minimum, true) X(eq, false) X(ne, false) X(lt, false) X(le, false) X(gt, false)              \
  X(ge, false) X(logical_and, false) X(logical_or, false) X(where, true)                         \
  X(sum, true) X(mean, true) X(var, true) X(std, true) X(max, true) X(min, true)                 \
  X(prod, true) X(logsumexp, true) X(any, false) X(all, false) X(argmax, false)                  \
  X(argmin, false)                                                                               \
  X(matmul, true) X(softmax, true) X(log_softmax, true)                                          \
  X(one_hot, false) X(take_along_axis, true) X(index_select, true) X(scatter_add, true)          \
  X(concatenate, true) X(stack, true) X(split, true) X(pad, true) X(flip, true)                  \
  X(cumsum, true) X(discounted_cumsum, true)                                                     \
  X(sort, true) X(argsort, false) X(topk, true)                                                  \
  X(reshape, true) X(permute, true) X(slice, true) X(expand, true) X(squeeze, true)              \
  X(unsqueeze, true) X(contiguous, true) X(cast, true)

namespace ctrax {
// The names of all ops, in table order.
inline constexpr const char* kOpNames[] = {
#define CTRAX_OP_NAME(name, differentiable) #name,
    CTRAX_FOR_EACH_OP(CTRAX_OP_NAME)
#undef CTRAX_OP_NAME
};
inline constexpr int kOpCount = sizeof(kOpNames) / sizeof(kOpNames[0]);
}  // namespace ctrax
