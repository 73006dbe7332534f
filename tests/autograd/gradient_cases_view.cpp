// Gradient checks of the views and copies (autograd/backward/view.cpp): reshape (and flatten,
// view), permute (and transpose, mT), slice (and select), expand, squeeze, unsqueeze,
// contiguous (and clone), cast.
//
// What the cases aim at: a reshape that has to copy (from a transposed view), slices with a
// step and a negative start (the gradient lands at start, start + step, ...), a select that
// drops its axis, expand over new leading axes and size-1 axes (the tape sums g back down),
// and a gradient that passes through a float32 cast and back. gradcheck copies its inputs to
// contiguous float64 tensors, so non-contiguous layouts are made inside f.
#include <vector>

#include <ctrax/autograd/grad.h>
#include <ctrax/autograd/tape.h>
#include <ctrax/tensor/ops.h>

#include "gradient_cases.h"
#include "test_util.h"

using namespace ctrax;
using namespace ctrax::test;

CTRAX_GRADIENT_CASES(view) {
  std::vector<GradientCase> cases;
  auto push = [&](const char* op, const char* label, GradcheckFn f, std::vector<Tensor> inputs,
                  GradcheckOptions options = {}) {
    cases.push_back(GradientCase{op, label, std::move(f), std::move(inputs), options});
  };

  // ---- reshape (flatten and view are reshapes): g reshaped back. ----
  push("reshape", "contiguous, a view",
       [](const std::vector<Tensor>& in) { return in[0].reshape({3, 2, 2}); }, {random_f64({2, 6}, 1)});
  push("reshape", "from a transposed view: must copy, squared",
       [](const std::vector<Tensor>& in) { return square(in[0].mT().reshape({2, 6})); }, {random_f64({3, 4}, 2)});
  push("reshape", "with -1",
       [](const std::vector<Tensor>& in) { return in[0].reshape({-1, 3}); }, {random_f64({2, 2, 3}, 3)});
  push("reshape", "flatten of every axis",
       [](const std::vector<Tensor>& in) { return in[0].flatten(); }, {random_f64({2, 3, 2}, 4)});
  push("reshape", "flatten of axes 1..2 of a transposed view (a copy)",
       [](const std::vector<Tensor>& in) { return in[0].transpose(0, 2).flatten(1, 2); }, {random_f64({2, 3, 4}, 5)});
  push("reshape", "view (no copy) to rank 1",
       [](const std::vector<Tensor>& in) { return square(in[0].view({12})); }, {random_f64({3, 4}, 6)});

  // ---- permute (transpose and mT are permutes): g permuted back. ----
  push("permute", "a 3-cycle of rank 3",
       [](const std::vector<Tensor>& in) { return in[0].permute({2, 0, 1}); }, {random_f64({2, 3, 4}, 7)});
  push("permute", "negative axes",
       [](const std::vector<Tensor>& in) { return square(in[0].permute({-1, 0, -2})); }, {random_f64({2, 3, 4}, 8)});
  push("permute", "transpose(0, 2)",
       [](const std::vector<Tensor>& in) { return in[0].transpose(0, 2); }, {random_f64({2, 3, 4}, 9)});
  push("permute", "mT of a batch, then a permute of that",
       [](const std::vector<Tensor>& in) { return in[0].mT().permute({1, 0, 2}); }, {random_f64({2, 3, 4}, 10)});

  // ---- slice (select is a slice that drops its axis): g written at the sliced positions. ----
  push("slice", "step 2 on axis 0",
       [](const std::vector<Tensor>& in) { return in[0].slice(0, 0, 5, 2); }, {random_f64({5, 3}, 11)});
  push("slice", "negative start, step 3, axis -1, squared",
       [](const std::vector<Tensor>& in) { return square(in[0].slice(-1, -6, 7, 3)); }, {random_f64({3, 7}, 12)});
  push("slice", "negative start and stop, step 2, of a transposed view",
       [](const std::vector<Tensor>& in) { return in[0].mT().slice(0, -5, -1, 2); }, {random_f64({3, 6}, 13)});
  push("slice", "select with a negative index (drops axis 1)",
       [](const std::vector<Tensor>& in) { return in[0].select(1, -1); }, {random_f64({3, 4}, 14)});
  push("slice", "select on axis 0 of rank 3, then a stepped slice",
       [](const std::vector<Tensor>& in) { return in[0].select(0, 1).slice(1, 1, 4, 2); }, {random_f64({2, 3, 4}, 15)});
  push("slice", "two selects of the same input (gradients land in different rows)",
       [](const std::vector<Tensor>& in) { return mul(in[0].select(0, 0), in[0].select(0, 2)); }, {random_f64({3, 4}, 16)});

  // ---- expand: g summed over the broadcast axes (by the tape). ----
  push("expand", "new leading axes",
       [](const std::vector<Tensor>& in) { return in[0].expand({2, 4, 3}); }, {random_f64({3}, 17)});
  push("expand", "size-1 axes, squared",
       [](const std::vector<Tensor>& in) { return square(in[0].expand({3, 4})); }, {random_f64({3, 1}, 18)});
  push("expand", "new leading axis and size-1 axes together",
       [](const std::vector<Tensor>& in) { return in[0].expand({2, 3, 2, 4}); }, {random_f64({1, 2, 1}, 19)});

  // ---- squeeze and unsqueeze: g reshaped back. ----
  push("squeeze", "every size-1 axis",
       [](const std::vector<Tensor>& in) { return in[0].squeeze(); }, {random_f64({1, 3, 1, 2}, 20)});
  push("squeeze", "one axis (-2), squared",
       [](const std::vector<Tensor>& in) { return square(in[0].squeeze(-2)); }, {random_f64({3, 1, 2}, 21)});
  push("squeeze", "axis 0 of a transposed view",
       [](const std::vector<Tensor>& in) { return in[0].mT().squeeze(0); }, {random_f64({4, 1}, 22)});
  push("unsqueeze", "axis 0",
       [](const std::vector<Tensor>& in) { return in[0].unsqueeze(0); }, {random_f64({3, 2}, 23)});
  push("unsqueeze", "axis -1 then axis 1, squared",
       [](const std::vector<Tensor>& in) { return square(in[0].unsqueeze(-1).unsqueeze(1)); }, {random_f64({3, 2}, 24)});
  push("unsqueeze", "of a transposed view, broadcast against another input",
       [](const std::vector<Tensor>& in) { return mul(in[0].mT().unsqueeze(1), in[1]); },
       {random_f64({3, 2}, 25), random_f64({2, 4, 3}, 26)});

  // ---- contiguous (and clone): g as it is. ----
  push("contiguous", "of a transposed view",
       [](const std::vector<Tensor>& in) { return in[0].mT().contiguous(); }, {random_f64({3, 4}, 27)});
  push("contiguous", "of a stepped slice, squared",
       [](const std::vector<Tensor>& in) { return square(in[0].slice(0, 0, 5, 2).contiguous()); }, {random_f64({5, 3}, 28)});
  push("contiguous", "clone (always a copy)",
       [](const std::vector<Tensor>& in) { return in[0].clone(); }, {random_f64({2, 3}, 29)});

  // ---- cast: g, which the tape casts back to the input's dtype. ----
  push("cast", "float64 -> float32 -> float64, the float32 value scaled",
       [w = random_f64({2, 3}, 30).to(DType::float32)](const std::vector<Tensor>& in) {
         return mul(in[0].to(DType::float32), w.to(in[0].device())).to(DType::float64);
       },
       {random_f64({2, 3}, 31)}, through_float32());
  push("cast", "to float64 of a float32 value of a transposed view, added to the float64 input",
       [](const std::vector<Tensor>& in) { return add(in[0].mT().to(DType::float32).to(DType::float64), in[1]); },
       {random_f64({3, 2}, 32), random_f64({2, 3}, 33)}, through_float32());
  push("cast", "float32 and float64 values in one product (the float32 one cast back)",
       [](const std::vector<Tensor>& in) { return mul(in[0].to(DType::float32).to(DType::float64), in[0]); },
       {random_f64({4}, 34)}, through_float32());
  return cases;
}

TEST_CASE("autograd: a value used in two views and an op accumulates its gradients") {
  // loss = sum(W1 * x^T) + sum(W2 * x[0:3:2, :]) + sum(x^2), so
  // dloss/dx = W1^T + (W2 in rows 0 and 2, zero in row 1) + 2 x.
  const Tensor x = random_tensor({3, 4}, DType::float64, 40);
  const Tensor w1 = random_tensor({4, 3}, DType::float64, 41);
  const Tensor w2 = random_tensor({2, 4}, DType::float64, 42);
  auto loss_fn = [&](const Tensor& v) {
    return add(add(sum(mul(v.mT(), w1)), sum(mul(v.slice(0, 0, 3, 2), w2))), sum(square(v)));
  };
  const Tensor g = grad(loss_fn)(x);

  const std::vector<double> xv = x.to_vector<double>(), w1v = w1.to_vector<double>(), w2v = w2.to_vector<double>();
  std::vector<double> expected(12);
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 4; ++j) {
      double e = w1v[j * 3 + i] + 2.0 * xv[i * 4 + j];
      if (i % 2 == 0) e += w2v[(i / 2) * 4 + j];
      expected[i * 4 + j] = e;
    }
  }
  check_close(g, x.shape(), expected, default_tolerance(DType::float64));

  const GradcheckResult r = gradcheck([&](const std::vector<Tensor>& in) { return loss_fn(in[0]); }, {x});
  INFO(r.message);
  CHECK(r.ok);
}
