// Backward of the scans (forwards: tensor/ops/scan.cpp).
//
//   cumsum:      y_t = sum_{s <= t} x_s, so dx_s = sum_{t >= s} g_t: a cumsum of g in the
//                other direction;
//   discounted_cumsum: y_t = sum_{s >= t} d^(s-t) x_s, so dx_s = sum_{t <= s} d^(s-t) g_t:
//                the same discounted sum run forwards, i.e. on g flipped along the axis.
#include "../../tensor/ops.h"
#include "../derivatives.h"

namespace ctrax::autograd_detail {

namespace {

void cumsum_backward(const BackwardContext& c, std::span<Tensor> dx) {
  const AxisAttrs& a = c.attr<AxisAttrs>();
  dx[0] = cumsum(c.output_grads[0], a.axis, !a.flag);
}

void discounted_cumsum_backward(const BackwardContext& c, std::span<Tensor> dx) {
  const ScalarAttrs& a = c.attr<ScalarAttrs>();
  const Tensor flipped = flip(c.output_grads[0], {a.axis});
  dx[0] = flip(discounted_cumsum(flipped, a.axis, a.lo), {a.axis});
}

constexpr OpDerivative kTable[] = {
    {OpId::cumsum, kSavesNothing, cumsum_backward},
    {OpId::discounted_cumsum, kSavesNothing, discounted_cumsum_backward},
};

}  // namespace

std::span<const OpDerivative> scan_derivatives() { return kTable; }

}  // namespace ctrax::autograd_detail
