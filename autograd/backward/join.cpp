// Backward of the joining and rearranging ops (forwards: tensor/ops/join.cpp).
//
//   concatenate: each input's gradient is its slice of g along the axis;
//   stack:       input i's gradient is g.select(axis, i);
//   split:       the parts' gradients concatenated (zeros for parts nothing used);
//   pad:         the interior of g (the padding's gradient is dropped);
//   flip:        g flipped back.
#include "../../tensor/ops.h"
#include "../derivatives.h"

namespace ctrax::autograd_detail {

namespace {

void concatenate_backward(const BackwardContext& c, std::span<Tensor> dx) {
  const Tensor& g = c.output_grads[0];
  const int a = normalize_axis(c.attr<AxisAttrs>().axis, g.rank(), "concatenate");
  int64_t start = 0;
  for (size_t i = 0; i < c.input_meta.size(); ++i) {
    const int64_t n = c.input_meta[i].shape[a];
    if (c.needs_grad(i)) dx[i] = g.slice(a, start, start + n);
    start += n;
  }
}

void stack_backward(const BackwardContext& c, std::span<Tensor> dx) {
  const Tensor& g = c.output_grads[0];
  const int a = normalize_axis(c.attr<AxisAttrs>().axis, g.rank(), "stack");
  for (size_t i = 0; i < c.input_meta.size(); ++i)
    if (c.needs_grad(i)) dx[i] = g.select(a, static_cast<int64_t>(i));
}

void split_backward(const BackwardContext& c, std::span<Tensor> dx) {
  const SplitAttrs& at = c.attr<SplitAttrs>();
  const Shape& x_shape = c.input_meta[0].shape;
  const int a = normalize_axis(at.axis, x_shape.rank(), "split");
  // The parts without a gradient get zeros on the device of those that have one.
  Device device = Device::cpu();
  for (const Tensor& g : c.output_grads)
    if (g.defined()) device = g.device();
  std::vector<Tensor> parts;
  parts.reserve(c.output_grads.size());
  for (size_t j = 0; j < c.output_grads.size(); ++j) {
    if (c.output_grads[j].defined()) {
      parts.push_back(c.output_grads[j]);
    } else {
      Shape part = x_shape;
      part[a] = at.sizes[j];
      parts.push_back(zeros(part, c.input_meta[0].dtype, device));
    }
  }
  dx[0] = concatenate(parts, a);
}

void pad_backward(const BackwardContext& c, std::span<Tensor> dx) {
  const PadAttrs& p = c.attr<PadAttrs>();
  const Shape& x_shape = c.input_meta[0].shape;
  Tensor interior = c.output_grads[0];
  for (int d = 0; d < x_shape.rank(); ++d) interior = interior.slice(d, p.before[d], p.before[d] + x_shape[d]);
  dx[0] = interior;
}

void flip_backward(const BackwardContext& c, std::span<Tensor> dx) {
  std::vector<int> axes;
  for (int64_t a : c.attr<AxesAttrs>().axes) axes.push_back(static_cast<int>(a));
  dx[0] = flip(c.output_grads[0], axes);
}

constexpr OpDerivative kTable[] = {
    {OpId::concatenate, kSavesNothing, concatenate_backward},
    {OpId::stack, kSavesNothing, stack_backward},
    {OpId::split, kSavesNothing, split_backward},
    {OpId::pad, kSavesNothing, pad_backward},
    {OpId::flip, kSavesNothing, flip_backward},
};

}  // namespace

std::span<const OpDerivative> join_derivatives() { return kTable; }

}  // namespace ctrax::autograd_detail
