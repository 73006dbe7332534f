// Backward of softmax and log_softmax (forwards: tensor/ops/softmax.cpp).
//
// softmax along an axis, y = softmax(x):   dx = y * (g - sum(g * y))
// log_softmax, y = x - logsumexp(x):       dx = g - exp(y) * sum(g)
// (the sums along the same axis, kept as size 1 to broadcast).
#include "../../tensor/ops.h"
#include "../derivatives.h"

namespace ctrax::autograd_detail {

namespace {

void softmax_backward(const BackwardContext& c, std::span<Tensor> dx) {
  const int axis = c.attr<AxisAttrs>().axis;
  const Tensor &y = c.outputs[0], &g = c.output_grads[0];
  const Tensor gy = mul(g, y);
  dx[0] = sub(gy, mul(y, sum(gy, {axis}, true)));
}

void log_softmax_backward(const BackwardContext& c, std::span<Tensor> dx) {
  const int axis = c.attr<AxisAttrs>().axis;
  const Tensor &y = c.outputs[0], &g = c.output_grads[0];
  dx[0] = sub(g, mul(exp(y), sum(g, {axis}, true)));
}

constexpr OpDerivative kTable[] = {
    {OpId::softmax, kSavesOutputs, softmax_backward},
    {OpId::log_softmax, kSavesOutputs, log_softmax_backward},
};

}  // namespace

std::span<const OpDerivative> softmax_derivatives() { return kTable; }

}  // namespace ctrax::autograd_detail
