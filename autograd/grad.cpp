// The non-template parts of grad.h.
#include "grad.h"

#include "../base/error.h"

namespace ctrax::autograd_detail {

void check_loss(const Tensor& loss) {
  CTRAX_REQUIRE(loss.defined(), "value_and_grad: f returned an undefined tensor; expected a scalar loss");
  CTRAX_REQUIRE(is_floating(loss.dtype()) && loss.numel() == 1,
                "value_and_grad: f must return a one-element float32 or float64 loss, got ", loss.dtype(), loss.shape(),
                "; reduce it (sum or mean) first");
}

void strip_traces(Tensor& t) { t.set_trace(0, 0); }

}  // namespace ctrax::autograd_detail
