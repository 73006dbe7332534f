// The tensor ops: free functions over Tensor, with NumPy's broadcasting.
//
// What it is for: the complete list of computations the engine offers, each with forward
// semantics documented here. Implementations live one file per family in tensor/ops/
// (unary.cpp, binary.cpp, reduce.cpp, matmul.cpp, softmax.cpp, index.cpp, join.cpp,
// scan.cpp, sort.cpp); op_list.h enumerates them for the tests, autodiff and the CUDA backend.
//
// What it is not for: gradients (autograd/) or random numbers (random.h).
//
// Dtype rules: binary ops promote with promote_types() (dtype.h). Functions that only make
// sense on real numbers (exp, log, sqrt, tanh, sigmoid, ..., true division, softmax) turn
// integer and bool inputs into float32. Arithmetic on bool tensors (add, sub, mul, neg, ...)
// throws ctrax::Error: cast first. Comparisons and logical ops give bool.
// Every op checks its inputs and throws ctrax::Error naming the op, what it got and what it
// expected.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "tensor.h"

namespace ctrax {

// A C++ number used as an operand. It is "weak" (dtype.h): it takes the tensor's dtype
// when the categories agree.
struct Scalar {
  double value;
  bool is_floating;
  Scalar(double v) : value(v), is_floating(true) {}
  Scalar(float v) : value(v), is_floating(true) {}
  Scalar(int v) : value(v), is_floating(false) {}
  Scalar(int64_t v) : value(static_cast<double>(v)), is_floating(false) {}
  Scalar(bool v) : value(v ? 1.0 : 0.0), is_floating(false) {}
};

// ---- Unary ------------------------------------------------------------------------------------
Tensor neg(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor sign(const Tensor& x);          // -1, 0 or 1 (0 at 0; NaN stays NaN)
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor log1p(const Tensor& x);
Tensor expm1(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);         // 1 / sqrt(x)
Tensor square(const Tensor& x);
Tensor reciprocal(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);       // 1 / (1 + exp(-x)), stable for large |x|
Tensor softplus(const Tensor& x);      // log(1 + exp(x)), stable: max(x, 0) + log1p(exp(-|x|))
Tensor relu(const Tensor& x);          // max(x, 0)
// GELU: exact x * Phi(x) with erf, or the tanh approximation
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) when approximate.
Tensor gelu(const Tensor& x, bool approximate = false);
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor floor(const Tensor& x);         // integer tensors are returned unchanged (copied)
Tensor ceil(const Tensor& x);
Tensor round(const Tensor& x);         // halves to even, as NumPy
// Clamps into [lo, hi]; lo <= hi is required. NaN stays NaN.
Tensor clip(const Tensor& x, Scalar lo, Scalar hi);
Tensor isnan(const Tensor& x);         // bool
Tensor isfinite(const Tensor& x);      // bool
Tensor logical_not(const Tensor& x);   // bool: x == 0

// ---- Binary, broadcasting ---------------------------------------------------------------------
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);      // true division; integers give float32
Tensor pow(const Tensor& a, const Tensor& b);      // floating result for floating inputs
Tensor maximum(const Tensor& a, const Tensor& b);  // NaN propagates
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, const Tensor& b);       // comparisons give bool
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor logical_and(const Tensor& a, const Tensor& b);  // nonzero is true; gives bool
Tensor logical_or(const Tensor& a, const Tensor& b);
// cond ? a : b elementwise; cond must be bool; all three broadcast together.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);

// Scalar forms (the scalar is weak, see above).
Tensor add(const Tensor& a, Scalar b);
Tensor sub(const Tensor& a, Scalar b);
Tensor sub(Scalar a, const Tensor& b);
Tensor mul(const Tensor& a, Scalar b);
Tensor div(const Tensor& a, Scalar b);
Tensor div(Scalar a, const Tensor& b);
Tensor pow(const Tensor& a, Scalar b);
Tensor maximum(const Tensor& a, Scalar b);
Tensor minimum(const Tensor& a, Scalar b);
// A rank-0 tensor holding `s` in the dtype it takes next to `like` (the weak-scalar rule).
Tensor scalar_like(Scalar s, const Tensor& like);

inline Tensor operator-(const Tensor& x) { return neg(x); }
inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator+(const Tensor& a, Scalar b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, Scalar b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, Scalar b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, Scalar b) { return div(a, b); }
inline Tensor operator+(Scalar a, const Tensor& b) { return add(b, a); }
inline Tensor operator-(Scalar a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(Scalar a, const Tensor& b) { return mul(b, a); }
inline Tensor operator/(Scalar a, const Tensor& b) { return div(a, b); }

// ---- Reductions -------------------------------------------------------------------------------
// `axes` empty means every axis. Negative axes count from the end; repeated axes are an
// error. keepdims keeps reduced axes with size 1. Reducing an empty set: sum 0, prod 1,
// any false, all true; mean/var/max/min/argmax/logsumexp of zero elements throw.
// Integer and bool inputs: sum/prod give int64, mean/var/std/logsumexp give float32,
// max/min keep the dtype.
Tensor sum(const Tensor& x, const std::vector<int>& axes = {}, bool keepdims = false);
Tensor mean(const Tensor& x, const std::vector<int>& axes = {}, bool keepdims = false);
// Variance with `correction` (0: population, 1: Bessel's): sum of squared deviations from
// the mean divided by (n - correction), computed in two passes. NaN when n - correction <= 0
// (as NumPy and PyTorch); a negative correction throws. Reducing over axis 0 of a rank-0
// tensor throws; empty axes on a rank-0 tensor return the element (NumPy).
Tensor var(const Tensor& x, const std::vector<int>& axes = {}, bool keepdims = false, int64_t correction = 0);
Tensor std(const Tensor& x, const std::vector<int>& axes = {}, bool keepdims = false, int64_t correction = 0);
Tensor max(const Tensor& x, const std::vector<int>& axes = {}, bool keepdims = false);  // NaN propagates
Tensor min(const Tensor& x, const std::vector<int>& axes = {}, bool keepdims = false);
Tensor prod(const Tensor& x, const std::vector<int>& axes = {}, bool keepdims = false);
// log(sum(exp(x))) computed as m + log(sum(exp(x - m))) with m the max, so it never
// overflows; all -inf gives -inf.
Tensor logsumexp(const Tensor& x, const std::vector<int>& axes = {}, bool keepdims = false);
Tensor any(const Tensor& x, const std::vector<int>& axes = {}, bool keepdims = false);
Tensor all(const Tensor& x, const std::vector<int>& axes = {}, bool keepdims = false);
// Index (int64) of the first maximum / minimum along `axis` (first NaN if any). Without
// an axis, over the flattened tensor (a rank-0 result).
Tensor argmax(const Tensor& x, int axis, bool keepdims = false);
Tensor argmin(const Tensor& x, int axis, bool keepdims = false);
Tensor argmax(const Tensor& x);
Tensor argmin(const Tensor& x);

// ---- Linear algebra ---------------------------------------------------------------------------
// NumPy matmul: 1-D operands are promoted to matrices and the added axis removed; batch
// axes broadcast; float32 and float64 only (both operands the same after promotion).
// Transposed views (x.mT()) are read without a copy. Runs on the selected GEMM backend.
Tensor matmul(const Tensor& a, const Tensor& b);

// ---- Softmax ----------------------------------------------------------------------------------
// exp(x - max) / sum(exp(x - max)) along `axis`; log_softmax = x - logsumexp(x).
Tensor softmax(const Tensor& x, int axis = -1);
Tensor log_softmax(const Tensor& x, int axis = -1);

// ---- Indexing ---------------------------------------------------------------------------------
// one_hot(i, depth)[..., j] = (i[...] == j); indices must be integer; out-of-range
// indices (< 0 or >= depth) give an all-zero row, as jax.nn.one_hot.
Tensor one_hot(const Tensor& indices, int64_t depth, DType dtype = DType::float32);
// out[i][j][k] = x[i][index[i][j][k]][k] for axis 1 (NumPy take_along_axis): `index` has
// x's rank and broadcasts against x on the other axes. Indices must be in [-n, n).
Tensor take_along_axis(const Tensor& x, const Tensor& index, int axis);
inline Tensor gather(const Tensor& x, const Tensor& index, int axis) { return take_along_axis(x, index, axis); }
// Rows of x along `axis` picked by a 1-D integer tensor (negative indices count from the end).
Tensor index_select(const Tensor& x, int axis, const Tensor& indices);
// A copy of x with src added at positions given by index along `axis`:
// out[i][index[i][j][k]][k] += src[i][j][k] (axis 1). index and src have the same shape;
// duplicates accumulate in order of increasing position. On the non-axis dims index may be
// smaller than x (as torch.scatter_add). src must promote to x's dtype (float64 into float32
// is an error); integer overflow wraps.
Tensor scatter_add(const Tensor& x, int axis, const Tensor& index, const Tensor& src);

// ---- Joining and rearranging ------------------------------------------------------------------
Tensor concatenate(const std::vector<Tensor>& xs, int axis = 0);
Tensor stack(const std::vector<Tensor>& xs, int axis = 0);
// Splits into `sections` equal parts (the size must divide), or at the given sizes.
// The parts are fresh contiguous copies, not views. Inputs of concatenate/stack are
// promoted to a common dtype with promote_types().
std::vector<Tensor> split(const Tensor& x, int64_t sections, int axis = 0);
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int axis = 0);
// Constant padding: widths[i] = {before, after} for axis i (one pair per axis).
Tensor pad(const Tensor& x, const std::vector<std::pair<int64_t, int64_t>>& widths, double value = 0.0);
Tensor flip(const Tensor& x, const std::vector<int>& axes);

// ---- Scans ------------------------------------------------------------------------------------
// Running sum along `axis`; with reverse, y[t] = sum_{s >= t} x[s]. Integer and bool
// inputs give int64 (like sum); floating inputs keep their dtype.
Tensor cumsum(const Tensor& x, int axis, bool reverse = false);
// Discounted reverse cumulative sum (returns): y[t] = x[t] + discount * y[t + 1].
// Floating result (integer inputs give float32); the discount must be finite.
Tensor discounted_cumsum(const Tensor& x, int axis, double discount);

// ---- Sorting ----------------------------------------------------------------------------------
// Stable; NaN sorts last (ascending) as NumPy. Descending treats NaN as the largest value
// (first) and still keeps equal elements in their original order, so it is not the exact
// reverse of ascending; topk(largest) follows the same rule, ties going to the lower index.
Tensor sort(const Tensor& x, int axis = -1, bool descending = false);
Tensor argsort(const Tensor& x, int axis = -1, bool descending = false);  // int64
// The k largest (or smallest) along `axis`, in order, with their int64 indices.
std::pair<Tensor, Tensor> topk(const Tensor& x, int64_t k, int axis = -1, bool largest = true);

}  // namespace ctrax
