// CUDA elementwise kernels: the GPU side of the unary ops, binary ops (with tensor or C++
// scalar operands) and where() of tensor/ops/unary.cpp and binary.cpp.
//
// What it is for: the per-element loop once the tensor layer has decided the dtypes, the
// broadcast shape and converted the operands to the computation dtype (exactly as the CPU
// path does). Each op computes the same formula as its CPU counterpart: integer arithmetic
// wraps modulo 2^bits, relu(-0) = +0, maximum/minimum propagate NaN, round is half to even,
// float32 exp/tanh/sigmoid use the same range reduction as kernels/elementwise/vec_math.h.
//
// What it is not for: dtype promotion or conversion (the caller converts first; the kernels
// take every input in one computation type), or device checks (tensor layer).
//
// Operands are StridedArg views at the output's shape (0 strides on broadcast axes). A
// contiguous view, or one whose strides are all 0, is read without index arithmetic.
// All calls are asynchronous on current_stream() except any_negative, which waits.
#pragma once

#include <cstdint>

#include "../../base/op_list.h"
#include "strided.h"

namespace ctrax::kernels::cuda {

// The unary and binary families of base/op_list.h, in its order (so an OpId converts by
// position), plus gelu_tanh: gelu is the exact x Phi(x), gelu_tanh its tanh approximation
// (OpId gelu with approximate = true). clip takes its bounds in p0, p1 (converted to the element
// type with the saturating rule of tensor/convert.h).
enum class UnaryOp : uint8_t {
#define CTRAX_CUDA_OP(name, differentiable, result) name,
  CTRAX_FOR_EACH_UNARY_OP(CTRAX_CUDA_OP) gelu_tanh
};

// Comparisons and logical ops give bool (uint8 0/1); the others give the computation type.
enum class BinaryOp : uint8_t { CTRAX_FOR_EACH_BINARY_OP(CTRAX_CUDA_OP) };
#undef CTRAX_CUDA_OP

namespace detail {
inline constexpr bool kUnaryGivesBool[] = {
#define CTRAX_GIVES_BOOL(name, differentiable, result) (#result[0] == 'b'),
    CTRAX_FOR_EACH_UNARY_OP(CTRAX_GIVES_BOOL) false /* gelu_tanh */};
inline constexpr bool kBinaryGivesBool[] = {CTRAX_FOR_EACH_BINARY_OP(CTRAX_GIVES_BOOL)};
#undef CTRAX_GIVES_BOOL
}  // namespace detail

// True when `op` writes bool rather than the computation type (the table's result column).
inline bool binary_gives_bool(BinaryOp op) { return detail::kBinaryGivesBool[static_cast<int>(op)]; }
// True when `op` writes bool rather than the input type.
inline bool unary_gives_bool(UnaryOp op) { return detail::kUnaryGivesBool[static_cast<int>(op)]; }

// out = op(x). x_t is the computation type; out_t must be x_t, or boolean for isnan,
// isfinite and logical_not.
void unary(UnaryOp op, const StridedArg& out, ElementType out_t, const StridedArg& x, ElementType x_t,
           double p0 = 0, double p1 = 0);

// out = a (op) b, a and b both of type t; out of type t or boolean (binary_gives_bool).
// Integer pow expects the caller to have refused negative exponents (any_negative).
void binary(BinaryOp op, const StridedArg& out, ElementType out_t, const StridedArg& a, const StridedArg& b,
            ElementType t);

// out = x (op) scalar, or scalar (op) x when scalar_first. The scalar is converted to t on
// the host with the saturating rule of tensor/convert.h (as the CPU path's saturate_cast).
void binary_scalar(BinaryOp op, const StridedArg& out, ElementType out_t, const StridedArg& x, ElementType t,
                   double scalar, bool scalar_first);

// out = cond ? a : b; cond is boolean, a, b and out of type t.
void where(const StridedArg& out, ElementType t, const StridedArg& cond, const StridedArg& a, const StridedArg& b);

// True when some element of the integer view x is negative (waits for the stream).
bool any_negative(const StridedArg& x, ElementType t, int device);

}  // namespace ctrax::kernels::cuda
