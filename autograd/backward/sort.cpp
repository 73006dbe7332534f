// Backward of sort and topk (forwards: tensor/ops/sort.cpp).
//
// Sort is a gather with the sorting permutation, recomputed from the saved input (the sort is
// stable, so it is the same permutation); topk saves the indices it returned. Each scatters g
// back to the positions it was read from.
#include "../../tensor/ops.h"
#include "../derivatives.h"

namespace ctrax::autograd_detail {

namespace {

void sort_backward(const BackwardContext& c, std::span<Tensor> dx) {
  const AxisAttrs& at = c.attr<AxisAttrs>();
  const Tensor& x = c.inputs[0];
  const Tensor& g = c.output_grads[0];
  if (x.rank() == 0) {
    dx[0] = g;
    return;
  }
  const int a = normalize_axis(at.axis, x.rank(), "sort");
  dx[0] = scatter_into_zeros(x.shape(), a, argsort(x, a, at.flag), g);
}

void topk_backward(const BackwardContext& c, std::span<Tensor> dx) {
  const Tensor& g = c.output_grads[0];
  if (!g.defined()) return;  // only the indices were used
  const Shape& x_shape = c.input_meta[0].shape;
  if (x_shape.rank() == 0) {
    dx[0] = g.reshape(x_shape);
    return;
  }
  const int a = normalize_axis(c.attr<AxisAttrs>().axis, x_shape.rank(), "topk");
  dx[0] = scatter_into_zeros(x_shape, a, c.outputs[1], g);
}

constexpr OpDerivative kTable[] = {
    {OpId::sort, kSavesInputs, sort_backward},
    {OpId::topk, kSavesOutputs, topk_backward},
};

}  // namespace

std::span<const OpDerivative> sort_derivatives() { return kTable; }

}  // namespace ctrax::autograd_detail
