// Vectorised contiguous loops for the hot float32 / float64 elementwise ops.
//
// What it is for: the inner loop of add, sub, mul, div, maximum, minimum, neg, relu, square,
// exp, tanh, sigmoid, softplus and log (and relu's backward, for autograd/) once the tensor layer (tensor/ops/unary.cpp, binary.cpp) has found a
// run of contiguous elements. The library is compiled for baseline x86-64; each loop is
// compiled three times, for the portable baseline, for AVX2+FMA and for AVX-512, and the best
// variant the CPU can run is picked once at first use (like kernels/gemm.h's micro-kernels).
// force_elementwise_isa() pins a variant so tests can compare every one with the portable one.
//
// What it is not for: strides other than 1 and 0, dtype conversion, broadcasting of shapes,
// or integer dtypes (the tensor layer handles those with plain loops).
//
// Semantics per element (the same as the tensor ops in tensor/ops.h):
//   maximum/minimum propagate NaN; relu(x) = x <= 0 ? +0 : x (NaN stays NaN);
//   float32 exp/tanh/sigmoid/softplus/log use kernels/elementwise/vec_math.h, float64 uses std::.
#pragma once

#include <cstdint>
#include <optional>

namespace ctrax::kernels {

// relu_backward is the gradient of relu, a the incoming gradient and b relu's output:
// b > 0 ? a : 0 (backward ops are kernels like any other, as in ggml).
enum class BinaryKernel : uint8_t { add, sub, mul, div, maximum, minimum, relu_backward };
enum class UnaryKernel : uint8_t { neg, relu, square, exp, tanh, sigmoid, softplus, log };

// out[i] = a[i * a_step] (op) b[i * b_step] for 0 <= i < n. Each step is 1 (a contiguous run)
// or 0 (one value broadcast over the run, e.g. the 0.5 of x * 0.5). out may equal a or b
// when that operand's step is 1 (in-place), but must not otherwise overlap them.
void binary_kernel(BinaryKernel op, const float* a, int64_t a_step, const float* b, int64_t b_step, float* out,
                   int64_t n);
void binary_kernel(BinaryKernel op, const double* a, int64_t a_step, const double* b, int64_t b_step, double* out,
                   int64_t n);

// out[i] = op(x[i]) for 0 <= i < n (contiguous; out may equal x).
// The same over `rows` rows of n elements: row r reads a + r * a_row and b + r * b_row (a row
// stride of 0 repeats one row, as a bias does) and writes out + r * n. One call for a [rows, n]
// op instead of one per row; the elements are computed exactly as binary_kernel computes them.
void binary_rows_kernel(BinaryKernel op, const float* a, int64_t a_row, int64_t a_step, const float* b, int64_t b_row,
                        int64_t b_step, float* out, int64_t rows, int64_t n);
void binary_rows_kernel(BinaryKernel op, const double* a, int64_t a_row, int64_t a_step, const double* b,
                        int64_t b_row, int64_t b_step, double* out, int64_t rows, int64_t n);

void unary_kernel(UnaryKernel op, const float* x, float* out, int64_t n);
void unary_kernel(UnaryKernel op, const double* x, double* out, int64_t n);
// The portable variant whatever the CPU: compiled for baseline x86-64, without FMA, so each
// element is exactly unary_value's scalar result (elementwise_math.h), the formula the tensor
// ops use for runs too short for unary_kernel and for strided elements; its loop still runs
// at SSE2's width, four floats at a time. (The AVX2 and AVX-512 variants contract multiply-adds
// into FMAs, which changes the last bits of the approximated functions.) A NaN result may
// differ in its sign: x86 keeps the sign of the NaN operand an instruction reads first, and
// compilers may order an operation's operands differently in the two loops.
void unary_kernel_baseline(UnaryKernel op, const float* x, float* out, int64_t n);
void unary_kernel_baseline(UnaryKernel op, const double* x, double* out, int64_t n);

// acc[j] += x[r * row_stride + j] for r = 0, 1, ..., rows - 1 in that order and 0 <= j < n, in
// double: a column-wise sum over rows (the "row mode" of tensor/ops/reduce_util.h, e.g.
// summing a [batch, features] gradient over the batch for a bias). Each column's additions
// happen in row order, so the result is the same on every ISA.
void accumulate_rows(const float* x, int64_t rows, int64_t row_stride, double* acc, int64_t n);
void accumulate_rows(const double* x, int64_t rows, int64_t row_stride, double* acc, int64_t n);

// Instruction-set variant of the loops. By default the best the CPU supports;
// force_elementwise_isa() pins one and throws ctrax::Error if the CPU cannot run it;
// std::nullopt returns to the automatic choice.
enum class ElementwiseIsa { portable, avx2, avx512 };
bool elementwise_isa_supported(ElementwiseIsa isa);
void force_elementwise_isa(std::optional<ElementwiseIsa> isa);
ElementwiseIsa active_elementwise_isa();
const char* elementwise_isa_name(ElementwiseIsa isa);

}  // namespace ctrax::kernels
