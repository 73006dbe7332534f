// Backward of the gather-like ops (take_along_axis, index_select) and of scatter_add
// (forwards: tensor/ops/index.cpp).
//
// Gathering reads x at some positions; its backward scatters: each output gradient is added
// into the position it was read from, so positions read twice get both gradients and
// positions never read get zero. scatter_add's backward is the mirror: x's gradient passes
// through unchanged and src's is gathered from the positions src was added to.
#include "../../tensor/ops.h"
#include "../derivatives.h"

namespace ctrax::autograd_detail {

Tensor scatter_into_zeros(const Shape& shape, int axis, const Tensor& index, const Tensor& g) {
  return scatter_add(zeros(shape, g.dtype(), g.device()), axis, index, g);
}

namespace {

void take_along_axis_backward(const BackwardContext& c, std::span<Tensor> dx) {
  const int axis = c.attr<AxisAttrs>().axis;
  const Tensor& g = c.output_grads[0];
  const Shape& x_shape = c.input_meta[0].shape;
  const int a = normalize_axis(axis, x_shape.rank(), "take_along_axis");
  // x may have been broadcast against index on the other axes: scatter into x's broadcast
  // shape; the tape sums it down to x's shape.
  Shape target = g.shape();
  target[a] = x_shape[a];
  dx[0] = scatter_into_zeros(target, a, c.inputs[1].expand(g.shape()), g);
}

void index_select_backward(const BackwardContext& c, std::span<Tensor> dx) {
  const int axis = c.attr<AxisAttrs>().axis;
  const Tensor& g = c.output_grads[0];
  const Shape& x_shape = c.input_meta[0].shape;
  const int a = normalize_axis(axis, x_shape.rank(), "index_select");
  Shape along = Shape::filled(x_shape.rank(), 1);
  along[a] = c.inputs[1].numel();
  dx[0] = scatter_into_zeros(x_shape, a, c.inputs[1].reshape(along).expand(g.shape()), g);
}

void scatter_add_backward(const BackwardContext& c, std::span<Tensor> dx) {
  const int axis = c.attr<AxisAttrs>().axis;
  const Tensor& g = c.output_grads[0];
  const Tensor& index = c.inputs[1];
  if (c.needs_grad(0)) dx[0] = g;
  if (c.needs_grad(2)) {
    // index may be shorter than x off the axis (torch semantics): gather from the part of g
    // it covers.
    const int a = normalize_axis(axis, g.rank(), "scatter_add");
    Tensor covered = g;
    for (int d = 0; d < g.rank(); ++d)
      if (d != a) covered = covered.slice(d, 0, index.shape()[d]);
    dx[2] = take_along_axis(covered, index, a);
  }
}

constexpr OpDerivative kTable[] = {
    {OpId::take_along_axis, kSavesInputs, take_along_axis_backward},
    {OpId::index_select, kSavesInputs, index_select_backward},
    {OpId::scatter_add, kSavesInputs, scatter_add_backward},
};

}  // namespace

std::span<const OpDerivative> index_derivatives() { return kTable; }

}  // namespace ctrax::autograd_detail
