// The derivative table: gathers the families' entries and indexes them by OpId.
#include "derivatives.h"

#include <array>

#include "../base/error.h"
#include "../tensor/ops.h"

namespace ctrax::autograd_detail {

namespace {
struct Table {
  std::array<const OpDerivative*, kOpCount> by_op{};

  Table() {
    for (auto family : {unary_derivatives(), binary_derivatives(), reduce_derivatives(), matmul_derivatives(),
                        softmax_derivatives(), index_derivatives(), sort_derivatives(), join_derivatives(),
                        scan_derivatives(), view_derivatives()}) {
      for (const OpDerivative& d : family) {
        const int i = static_cast<int>(d.op);
        CTRAX_CHECK(kOpDifferentiable[i], "autodiff: op ", kOpNames[i], " has a derivative but op_list.h marks it not differentiable");
        CTRAX_CHECK(by_op[i] == nullptr, "autodiff: op ", kOpNames[i], " has two derivatives");
        by_op[i] = &d;
      }
    }
  }
};
}  // namespace

const OpDerivative* find_derivative(OpId op) {
  static const Table table;
  return table.by_op[static_cast<int>(op)];
}

Tensor sum_to_shape(const Tensor& g, const Shape& shape) {
  if (g.shape() == shape) return g;
  const int shift = g.rank() - shape.rank();
  CTRAX_CHECK(shift >= 0, "autodiff: cannot sum a gradient of shape ", g.shape(), " down to ", shape);
  std::vector<int> axes;
  for (int i = 0; i < g.rank(); ++i) {
    if (i < shift) {
      axes.push_back(i);
      continue;
    }
    const int64_t d = shape[i - shift];
    CTRAX_CHECK(d == g.shape()[i] || d == 1, "autodiff: cannot sum a gradient of shape ", g.shape(), " down to ", shape);
    if (d == 1 && g.shape()[i] != 1) axes.push_back(i);
  }
  Tensor s = axes.empty() ? g : sum(g, axes, true);
  return s.reshape(shape);
}

std::vector<bool> reduced_axes_mask(const ReduceAttrs& a, int rank) {
  std::vector<bool> mask(static_cast<size_t>(rank), a.axes.empty());
  for (int64_t axis : a.axes) mask[static_cast<size_t>(normalize_axis(static_cast<int>(axis), rank, "autodiff"))] = true;
  return mask;
}

Tensor keep_reduced_dims(const Tensor& t, const ReduceAttrs& a, const Shape& input_shape) {
  if (a.keepdims) return t;
  const std::vector<bool> mask = reduced_axes_mask(a, input_shape.rank());
  Shape kept;
  for (int i = 0; i < input_shape.rank(); ++i) kept.push_back(mask[static_cast<size_t>(i)] ? 1 : input_shape[i]);
  return t.reshape(kept);
}

}  // namespace ctrax::autograd_detail
