// Backward of the reductions.
//
// A reduction maps x (shape S) to y with the reduced axes gone (or kept as 1). Every backward
// first restores those axes as size 1 (keep_reduced_dims), so that g and y broadcast against x:
//   sum:       dx = g
//   mean:      dx = g / n                      (n = elements per output)
//   var:       dx = g * 2 (x - mean) / (n - correction)
//   std:       dx = g * (x - mean) / ((n - correction) * y), and 0 where y = 0 (PyTorch's
//              choice: std of one element is constant 0, and at equal elements sqrt has no
//              derivative; the formula would give 0/0 = NaN there)
//   logsumexp: dx = g * exp(x - y)            (the softmax of x)
//   max, min:  dx = g * [x == y] / count(x == y): tied extremes share the gradient evenly
//              (JAX's rule; PyTorch's amax/amin do the same);
//   prod:      dx_i = g * prod_{j != i} x_j, computed with prefix and suffix products so that
//              zeros in x are exact (g * y / x would divide by zero).
#include <vector>

#include "../../tensor/ops.h"
#include "../derivatives.h"

namespace ctrax::autograd_detail {

namespace {

const ReduceAttrs& reduce_attrs(const BackwardContext& c) { return c.attr<ReduceAttrs>(); }

// g with the reduced axes restored as size 1.
Tensor grad_kept(const BackwardContext& c) {
  return keep_reduced_dims(c.output_grads[0], reduce_attrs(c), c.input_meta[0].shape);
}
Tensor output_kept(const BackwardContext& c) {
  return keep_reduced_dims(c.outputs[0], reduce_attrs(c), c.input_meta[0].shape);
}

// Elements folded into each output.
int64_t reduced_count(const BackwardContext& c) {
  const Shape& s = c.input_meta[0].shape;
  const std::vector<bool> mask = reduced_axes_mask(reduce_attrs(c), s.rank());
  int64_t n = 1;
  for (int i = 0; i < s.rank(); ++i)
    if (mask[static_cast<size_t>(i)]) n *= s[i];
  return n;
}

// The reduced axes as a list (normalised), for calling mean/sum again.
std::vector<int> reduced_axes(const BackwardContext& c) {
  const std::vector<bool> mask = reduced_axes_mask(reduce_attrs(c), c.input_meta[0].shape.rank());
  std::vector<int> axes;
  for (size_t i = 0; i < mask.size(); ++i)
    if (mask[i]) axes.push_back(static_cast<int>(i));
  return axes;
}

void sum_backward(const BackwardContext& c, std::span<Tensor> dx) {
  dx[0] = grad_kept(c).expand(c.input_meta[0].shape);
}

void mean_backward(const BackwardContext& c, std::span<Tensor> dx) {
  const double n = static_cast<double>(reduced_count(c));
  dx[0] = div(grad_kept(c), n).expand(c.input_meta[0].shape);
}

void var_backward(const BackwardContext& c, std::span<Tensor> dx) {
  const Tensor& x = c.inputs[0];
  const double dof = static_cast<double>(reduced_count(c) - reduce_attrs(c).correction);
  const Tensor centred = sub(x, mean(x, reduced_axes(c), true));
  dx[0] = mul(grad_kept(c), mul(centred, 2.0 / dof));
}

void std_backward(const BackwardContext& c, std::span<Tensor> dx) {
  const Tensor& x = c.inputs[0];
  const double dof = static_cast<double>(reduced_count(c) - reduce_attrs(c).correction);
  const Tensor centred = sub(x, mean(x, reduced_axes(c), true));
  const Tensor y = output_kept(c);
  // Where y = 0 every centred element is 0 and the formula is 0/0: the gradient is 0 there.
  const Tensor scale = where(eq(y, scalar_like(0.0, y)), scalar_like(0.0, y), div(grad_kept(c), mul(y, dof)));
  dx[0] = mul(scale, centred);
}

void extremum_backward(const BackwardContext& c, std::span<Tensor> dx) {
  const Tensor& x = c.inputs[0];
  const Tensor hits = eq(x, output_kept(c)).to(x.dtype());
  const Tensor count = sum(hits, reduced_axes(c), true);
  dx[0] = mul(hits, div(grad_kept(c), count));
}

void logsumexp_backward(const BackwardContext& c, std::span<Tensor> dx) {
  const Tensor& x = c.inputs[0];
  dx[0] = mul(grad_kept(c), exp(sub(x, output_kept(c))));
}

// Product of the other elements of each reduced group, for every element, exactly (zeros
// included): the reduced axes are moved last and flattened into rows, and each row gets
// exclusive prefix times exclusive suffix products.
Tensor product_of_others(const Tensor& x, const std::vector<int>& axes) {
  const int rank = x.rank();
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (int a : axes) reduced[static_cast<size_t>(a)] = true;
  std::vector<int> perm;
  for (int i = 0; i < rank; ++i)
    if (!reduced[static_cast<size_t>(i)]) perm.push_back(i);
  for (int a : axes) perm.push_back(a);
  int64_t row = 1;
  for (int a : axes) row *= x.shape()[a];
  const Tensor moved = x.permute(perm).contiguous();
  const int64_t rows = row == 0 ? 0 : moved.numel() / row;
  Tensor others(moved.shape(), moved.dtype());
  dispatch_floating(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* in = moved.data<T>();
    T* out = others.data<T>();
    for (int64_t r = 0; r < rows; ++r) {
      const T* xr = in + r * row;
      T* o = out + r * row;
      T prefix = T(1);
      for (int64_t i = 0; i < row; ++i) {
        o[i] = prefix;
        prefix *= xr[i];
      }
      T suffix = T(1);
      for (int64_t i = row - 1; i >= 0; --i) {
        o[i] *= suffix;
        suffix *= xr[i];
      }
    }
  });
  std::vector<int> inverse(static_cast<size_t>(rank));
  for (int i = 0; i < rank; ++i) inverse[static_cast<size_t>(perm[static_cast<size_t>(i)])] = i;
  return others.permute(inverse);
}

void prod_backward(const BackwardContext& c, std::span<Tensor> dx) {
  const Tensor& x = c.inputs[0];
  // The prefix-and-suffix products have no device op yet: on a device they are made on the host.
  const Tensor others = x.device().is_cpu() ? product_of_others(x, reduced_axes(c))
                                            : product_of_others(x.to(Device::cpu()), reduced_axes(c)).to(x.device());
  dx[0] = mul(grad_kept(c), others);
}

constexpr OpDerivative kTable[] = {
    {OpId::sum, kSavesNothing, sum_backward},
    {OpId::mean, kSavesNothing, mean_backward},
    {OpId::var, kSavesInputs, var_backward},
    {OpId::std, kSavesBoth, std_backward},
    {OpId::max, kSavesBoth, extremum_backward},
    {OpId::min, kSavesBoth, extremum_backward},
    {OpId::prod, kSavesInputs, prod_backward},
    {OpId::logsumexp, kSavesBoth, logsumexp_backward},
};

}  // namespace

std::span<const OpDerivative> reduce_derivatives() { return kTable; }

}  // namespace ctrax::autograd_detail
