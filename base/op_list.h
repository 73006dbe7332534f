// op_list.h: every op of the tensor engine, in one table, by family.
//
// What it is for: the one place an op is named. OpId (tensor/trace.h) is generated from the
// whole table; the CUDA kernels' UnaryOp, BinaryOp and ReduceOp (kernels/cuda/) are generated
// from their families, so an op is converted between them by position (tensor/ops/op_kinds.h),
// never spelled again; the reference tests, autodiff (autograd/) and the CUDA backend check that
// they cover every op. It lives in base/ because kernels/ and tensor/ both read it.
// X(name, differentiable, result): differentiable ops take and give floating tensors and have a
// backward; result says what an elementwise or reduction op writes: `same` (the computation
// type), `boolean`, or `index` (int64 positions).
// What it is not for: the ops' signatures or semantics (tensor/ops.h documents each op).
#pragma once

// Elementwise ops of one tensor; the boolean ones come last.
#define CTRAX_FOR_EACH_UNARY_OP(X)                                                                            \
  X(neg, true, same) X(abs, true, same) X(sign, false, same) X(exp, true, same) X(log, true, same)            \
  X(log1p, true, same) X(expm1, true, same) X(sqrt, true, same) X(rsqrt, true, same) X(square, true, same)    \
  X(reciprocal, true, same) X(tanh, true, same) X(sigmoid, true, same) X(softplus, true, same)                \
  X(relu, true, same) X(gelu, true, same) X(sin, true, same) X(cos, true, same) X(floor, false, same)        \
  X(ceil, false, same) X(round, false, same) X(clip, true, same) X(isnan, false, boolean)                     \
  X(isfinite, false, boolean) X(logical_not, false, boolean)

// Elementwise ops of two broadcast tensors; the comparisons and logical ops write bool.
#define CTRAX_FOR_EACH_BINARY_OP(X)                                                                           \
  X(add, true, same) X(sub, true, same) X(mul, true, same) X(div, true, same) X(pow, true, same)              \
  X(maximum, true, same) X(minimum, true, same) X(eq, false, boolean) X(ne, false, boolean)                   \
  X(lt, false, boolean) X(le, false, boolean) X(gt, false, boolean) X(ge, false, boolean)                     \
  X(logical_and, false, boolean) X(logical_or, false, boolean)

// Reductions over axes.
#define CTRAX_FOR_EACH_REDUCE_OP(X)                                                                           \
  X(sum, true, same) X(mean, true, same) X(var, true, same) X(std, true, same) X(max, true, same)             \
  X(min, true, same) X(prod, true, same) X(logsumexp, true, same) X(any, false, boolean)                      \
  X(all, false, boolean) X(argmax, false, index) X(argmin, false, index)

// Everything else: linear algebra, indexing, joins, scans, sorting and views.
#define CTRAX_FOR_EACH_OTHER_OP(X)                                                                            \
  X(matmul, true, same) X(softmax, true, same) X(log_softmax, true, same)                                     \
  X(one_hot, false, same) X(take_along_axis, true, same) X(index_select, true, same)                          \
  X(scatter_add, true, same) X(concatenate, true, same) X(stack, true, same) X(split, true, same)             \
  X(pad, true, same) X(flip, true, same) X(cumsum, true, same) X(discounted_cumsum, true, same)               \
  X(sort, true, same) X(argsort, false, index) X(topk, true, same)                                            \
  X(reshape, true, same) X(permute, true, same) X(slice, true, same) X(expand, true, same)                    \
  X(squeeze, true, same) X(unsqueeze, true, same) X(contiguous, true, same) X(cast, true, same)

// The whole table, in OpId order: the elementwise family (unary, binary, where), the
// reductions, the rest.
#define CTRAX_FOR_EACH_OP(X)                                                                                  \
  CTRAX_FOR_EACH_UNARY_OP(X) CTRAX_FOR_EACH_BINARY_OP(X) X(where, true, same) CTRAX_FOR_EACH_REDUCE_OP(X)      \
  CTRAX_FOR_EACH_OTHER_OP(X)

namespace ctrax {
// The names of all ops, in table order.
inline constexpr const char* kOpNames[] = {
#define CTRAX_OP_NAME(name, differentiable, result) #name,
    CTRAX_FOR_EACH_OP(CTRAX_OP_NAME)
#undef CTRAX_OP_NAME
};
inline constexpr int kOpCount = sizeof(kOpNames) / sizeof(kOpNames[0]);
}  // namespace ctrax
