// Backward of the binary ops and where (forwards: tensor/ops/binary.cpp).
//
// Each gradient is the chain rule on the op's formula. Gradients are left in the broadcast
// output shape; the tape sums them down to each input.
//
// Subgradients (documented choices, the same as PyTorch):
//   maximum/minimum: ties split the gradient evenly between a and b (as JAX and PyTorch);
//   pow:   d/da of a^0 is 0, and d/db of 0^b is 0 (not NaN from 0 * log 0).
#include "../../tensor/ops.h"
#include "../derivatives.h"

namespace ctrax::autograd_detail {

namespace {

// 1.0 where cond, else 0.0, in dtype like t's.
Tensor mask_like(const Tensor& cond, const Tensor& like) { return cond.to(like.dtype()); }

const Tensor& g0(const BackwardContext& c) { return c.output_grads[0]; }

void add_backward(const BackwardContext& c, std::span<Tensor> dx) {
  if (c.needs_grad(0)) dx[0] = g0(c);
  if (c.needs_grad(1)) dx[1] = g0(c);
}
void sub_backward(const BackwardContext& c, std::span<Tensor> dx) {
  if (c.needs_grad(0)) dx[0] = g0(c);
  if (c.needs_grad(1)) dx[1] = neg(g0(c));
}
void mul_backward(const BackwardContext& c, std::span<Tensor> dx) {
  if (c.needs_grad(0)) dx[0] = mul(g0(c), c.inputs[1]);
  if (c.needs_grad(1)) dx[1] = mul(g0(c), c.inputs[0]);
}
// a / b: d/da = 1/b, d/db = -a/b^2.
void div_backward(const BackwardContext& c, std::span<Tensor> dx) {
  const Tensor &a = c.inputs[0], &b = c.inputs[1];
  if (c.needs_grad(0)) dx[0] = div(g0(c), b);
  if (c.needs_grad(1)) dx[1] = neg(div(mul(g0(c), a), square(b)));
}
// y = a^b: d/da = b a^(b-1), d/db = y log(a).
void pow_backward(const BackwardContext& c, std::span<Tensor> dx) {
  const Tensor &a = c.inputs[0], &b = c.inputs[1], &y = c.outputs[0];
  if (c.needs_grad(0)) {
    const Tensor d = where(eq(b, scalar_like(0.0, b)), scalar_like(0.0, y), mul(b, pow(a, sub(b, 1.0))));
    dx[0] = mul(g0(c), d);
  }
  if (c.needs_grad(1)) {
    const Tensor d = where(eq(a, scalar_like(0.0, a)), scalar_like(0.0, y), mul(y, log(a)));
    dx[1] = mul(g0(c), d);
  }
}
// maximum: the gradient goes to the larger operand; ties split it in half.
template <bool kMax>
void extremum_backward(const BackwardContext& c, std::span<Tensor> dx) {
  const Tensor &a = c.inputs[0], &b = c.inputs[1];
  const Tensor& g = g0(c);
  const Tensor half_on_ties = mul(mask_like(eq(a, b), g), 0.5);
  if (c.needs_grad(0)) dx[0] = mul(g, add(mask_like(kMax ? gt(a, b) : lt(a, b), g), half_on_ties));
  if (c.needs_grad(1)) dx[1] = mul(g, add(mask_like(kMax ? gt(b, a) : lt(b, a), g), half_on_ties));
}
// where(cond, a, b): the gradient goes to the operand that was picked.
void where_backward(const BackwardContext& c, std::span<Tensor> dx) {
  const Tensor& cond = c.inputs[0];
  const Tensor& g = g0(c);
  const Tensor zero = scalar_like(0.0, g);
  if (c.needs_grad(1)) dx[1] = where(cond, g, zero);
  if (c.needs_grad(2)) dx[2] = where(cond, zero, g);
}

constexpr OpDerivative kTable[] = {
    {OpId::add, kSavesNothing, add_backward},
    {OpId::sub, kSavesNothing, sub_backward},
    {OpId::mul, kSavesInputs, mul_backward},
    {OpId::div, kSavesInputs, div_backward},
    {OpId::pow, kSavesBoth, pow_backward},
    {OpId::maximum, kSavesInputs, extremum_backward<true>},
    {OpId::minimum, kSavesInputs, extremum_backward<false>},
    {OpId::where, kSavesInputs, where_backward},
};

}  // namespace

std::span<const OpDerivative> binary_derivatives() { return kTable; }

}  // namespace ctrax::autograd_detail
