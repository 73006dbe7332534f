// An op's backends, derived from its OpId: the forwards pass the op itself down and never spell
// it again for a backend.
//
// base/op_list.h generates OpId and, family by family in the same order, the CUDA kernels'
// UnaryOp, BinaryOp and ReduceOp, so each converts by its position within its family (checked
// below for every op at compile time). vector_kernel names the ops that have a hand-vectorised
// CPU kernel (kernels/elementwise/elementwise.h): a backend's capability list, the one table
// that says which ops it covers. Internal to tensor/ops/.
#pragma once

#include "../../kernels/cuda/elementwise.h"
#include "../../kernels/cuda/reduce.h"
#include "../../kernels/elementwise/elementwise.h"
#include "../../kernels/elementwise/elementwise_math.h"
#include "../trace.h"
#include "elementwise_util.h"

namespace ctrax::ops_detail {

constexpr int family_position(OpId op, OpId first) { return static_cast<int>(op) - static_cast<int>(first); }

// `op` of the unary, binary or reduction family as the CUDA kernels' op.
constexpr kernels::cuda::UnaryOp cuda_unary_op(OpId op) {
  return static_cast<kernels::cuda::UnaryOp>(family_position(op, OpId::neg));
}
constexpr kernels::cuda::BinaryOp cuda_binary_op(OpId op) {
  return static_cast<kernels::cuda::BinaryOp>(family_position(op, OpId::add));
}
constexpr kernels::cuda::ReduceOp cuda_reduce_op(OpId op) {
  return static_cast<kernels::cuda::ReduceOp>(family_position(op, OpId::sum));
}

#define CTRAX_CHECK_UNARY(name, differentiable, result) \
  static_assert(cuda_unary_op(OpId::name) == kernels::cuda::UnaryOp::name);
#define CTRAX_CHECK_BINARY(name, differentiable, result) \
  static_assert(cuda_binary_op(OpId::name) == kernels::cuda::BinaryOp::name);
#define CTRAX_CHECK_REDUCE(name, differentiable, result) \
  static_assert(cuda_reduce_op(OpId::name) == kernels::cuda::ReduceOp::name);
CTRAX_FOR_EACH_UNARY_OP(CTRAX_CHECK_UNARY)
CTRAX_FOR_EACH_BINARY_OP(CTRAX_CHECK_BINARY)
CTRAX_FOR_EACH_REDUCE_OP(CTRAX_CHECK_REDUCE)
#undef CTRAX_CHECK_UNARY
#undef CTRAX_CHECK_BINARY
#undef CTRAX_CHECK_REDUCE

// The hand-vectorised CPU kernel of `op` (a kernels::UnaryKernel or BinaryKernel value), or
// kNoKernel: the ops map_unary and map_binary send to kernels/elementwise for contiguous floats.
constexpr int vector_kernel(OpId op) {
  using kernels::BinaryKernel;
  using kernels::UnaryKernel;
  switch (op) {
    case OpId::neg: return static_cast<int>(UnaryKernel::neg);
    case OpId::relu: return static_cast<int>(UnaryKernel::relu);
    case OpId::square: return static_cast<int>(UnaryKernel::square);
    case OpId::exp: return static_cast<int>(UnaryKernel::exp);
    case OpId::tanh: return static_cast<int>(UnaryKernel::tanh);
    case OpId::sigmoid: return static_cast<int>(UnaryKernel::sigmoid);
    case OpId::softplus: return static_cast<int>(UnaryKernel::softplus);
    case OpId::log: return static_cast<int>(UnaryKernel::log);
    case OpId::add: return static_cast<int>(BinaryKernel::add);
    case OpId::sub: return static_cast<int>(BinaryKernel::sub);
    case OpId::mul: return static_cast<int>(BinaryKernel::mul);
    case OpId::div: return static_cast<int>(BinaryKernel::div);
    case OpId::maximum: return static_cast<int>(BinaryKernel::maximum);
    case OpId::minimum: return static_cast<int>(BinaryKernel::minimum);
    default: return kNoKernel;
  }
}

// The vectorised kernel's own per-element formula of `Op` (the scalar tail of its loops).
template <OpId Op, typename T>
T vector_formula(T v) {
  return kernels::unary_value<static_cast<kernels::UnaryKernel>(vector_kernel(Op))>(v);
}
template <OpId Op, typename T>
T vector_formula(T a, T b) {
  return kernels::binary_value<static_cast<kernels::BinaryKernel>(vector_kernel(Op))>(a, b);
}

}  // namespace ctrax::ops_detail
