// Backward of the views and copies: the gradient is g laid back out in the input's shape.
//
//   reshape, squeeze, unsqueeze: g reshaped to the input's shape;
//   permute:   g permuted by the inverse permutation;
//   slice:     zeros of the input's shape with g written into the sliced positions (a select,
//              which drops the axis, first gets the axis back);
//   expand:    g as it is: the tape sums it over the broadcast axes;
//   contiguous: g;   cast: g, which the tape casts back to the input's dtype.
#include "../../tensor/ops.h"
#include "../derivatives.h"

namespace ctrax::autograd_detail {

namespace {

void reshape_backward(const BackwardContext& c, std::span<Tensor> dx) {
  dx[0] = c.output_grads[0].reshape(c.input_meta[0].shape);
}

void permute_backward(const BackwardContext& c, std::span<Tensor> dx) {
  const Shape& perm = c.attr<AxesAttrs>().axes;
  std::vector<int> inverse(static_cast<size_t>(perm.rank()));
  for (int i = 0; i < perm.rank(); ++i) inverse[static_cast<size_t>(perm[i])] = i;
  dx[0] = c.output_grads[0].permute(inverse);
}

void slice_backward(const BackwardContext& c, std::span<Tensor> dx) {
  const SliceAttrs& s = c.attr<SliceAttrs>();
  Tensor g = c.output_grads[0];
  if (s.drop_axis) g = g.unsqueeze(s.axis);
  Tensor out = zeros(c.input_meta[0].shape, g.dtype(), g.device());
  const int64_t count = g.shape()[s.axis];
  if (count > 0) out.slice(s.axis, s.start, s.start + (count - 1) * s.step + 1, s.step).copy_(g);
  dx[0] = out;
}

void identity_backward(const BackwardContext& c, std::span<Tensor> dx) { dx[0] = c.output_grads[0]; }

constexpr OpDerivative kTable[] = {
    {OpId::reshape, kSavesNothing, reshape_backward},
    {OpId::permute, kSavesNothing, permute_backward},
    {OpId::slice, kSavesNothing, slice_backward},
    {OpId::expand, kSavesNothing, identity_backward},
    {OpId::squeeze, kSavesNothing, reshape_backward},
    {OpId::unsqueeze, kSavesNothing, reshape_backward},
    {OpId::contiguous, kSavesNothing, identity_backward},
    {OpId::cast, kSavesNothing, identity_backward},
};

}  // namespace

std::span<const OpDerivative> view_derivatives() { return kTable; }

}  // namespace ctrax::autograd_detail
