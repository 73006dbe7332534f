// Gradient checks of the gather-like ops (take_along_axis, index_select, sort, topk) and of
// scatter_add (autograd/backward/index.cpp).
//
// The cases aim at what a scatter-style backward gets wrong: positions read twice (their
// gradients must add up), positions never read (zero), negative indices, an index that
// broadcasts against x (the gradient is summed back over the broadcast axis), and an index
// shorter than x off the axis in scatter_add (the uncovered part of g must not reach src).
// Index tensors are int64 constants; gradcheck passes them through unchecked.
#include <vector>

#include <ctrax/autograd/tape.h>
#include <ctrax/tensor/ops.h>

#include "gradient_cases.h"
#include "test_util.h"

using namespace ctrax;
using namespace ctrax::test;

namespace {

Tensor ints(std::vector<int64_t> values, const Shape& shape) { return from_vector(values, shape); }

}  // namespace

CTRAX_GRADIENT_CASES(index) {
  std::vector<GradientCase> cases;
  auto push = [&](const char* op, const char* label, GradcheckFn f, std::vector<Tensor> inputs) {
    cases.push_back(GradientCase{op, label, std::move(f), std::move(inputs)});
  };

  // ---- take_along_axis: d x[i][j] = sum of g over the outputs that read x[i][j]. ----
  push("take_along_axis", "axis 1, repeated and negative indices (gradients accumulate), some never read",
      [](const std::vector<Tensor>& in) { return take_along_axis(in[0], in[1], 1); },
      {random_f64({3, 4}, 1), ints({0, 0, -1, 2, 3, 1, 1, 1, -4, 0, 2, 2, -2, 3, 2}, {3, 5})});
  push("take_along_axis", "index of 1 row broadcasts over the 3 rows of x on axis 0",
      [](const std::vector<Tensor>& in) { return take_along_axis(in[0], in[1], -1); },
      {random_f64({3, 4}, 2), ints({3, 0, 3, -1, 1, 1}, {1, 6})});
  push("take_along_axis", "x of 1 row broadcasts over index's 3 rows: x's gradient sums over them",
      [](const std::vector<Tensor>& in) { return square(take_along_axis(in[0], in[1], 1)); },
      {random_f64({1, 5}, 3), ints({4, 0, 4, 2, -5, 1}, {3, 2})});
  push("take_along_axis", "rank 3, axis -3, index broadcasting on the middle axis",
      [](const std::vector<Tensor>& in) { return take_along_axis(in[0], in[1], -3); },
      {random_f64({4, 2, 3}, 4), ints({0, 3, -1, 1, 1, 2, 0, 0, 0, -4, 2, 3, 1, 1, 1}, {5, 1, 3})});
  push("take_along_axis", "1-D, one position read three times",
      [](const std::vector<Tensor>& in) { return take_along_axis(in[0], in[1], 0); },
      {random_f64({5}, 5), ints({0, 0, 4, -1, 2, 2, 2}, {7})});

  // ---- index_select: the same scatter with a 1-D index laid along the axis. ----
  push("index_select", "axis 0, repeated and negative indices",
      [](const std::vector<Tensor>& in) { return index_select(in[0], 0, in[1]); },
      {random_f64({4, 3}, 6), ints({2, -1, 0, 2, -4}, {5})});
  push("index_select", "middle axis of rank 3, a row picked twice and one never",
      [](const std::vector<Tensor>& in) { return square(index_select(in[0], 1, in[1])); },
      {random_f64({2, 4, 3}, 7), ints({3, 1, 1, -2}, {4})});
  push("index_select", "non-contiguous x (a transposed view), axis 0",
      [](const std::vector<Tensor>& in) { return index_select(in[0].mT(), 0, in[1]); },
      {random_f64({3, 4}, 8), ints({1, 3, 3, -4}, {4})});
  push("index_select", "non-contiguous x (stepped slice), axis -1",
      [](const std::vector<Tensor>& in) { return index_select(in[0].slice(0, 0, 5, 2), -1, in[1]); },
      {random_f64({5, 3}, 9), ints({-1, 0, -1}, {3})});

  // ---- scatter_add: dx = g; dsrc[i][j] = g[i][index[i][j]] (axis 1). ----
  // Squaring the result makes both gradients depend on the accumulated sums, so a duplicate
  // that was added once instead of twice shows.
  push("scatter_add", "axis 0, duplicates, gradient to x and src",
      [](const std::vector<Tensor>& in) { return square(scatter_add(in[0], 0, in[1], in[2])); },
      {random_f64({3, 4}, 10), ints({0, 2, 1, 1, 0, -1, 1, 2, 2, 0, 0, 1, 0, 2, -3, 2, 0, 0, 0, 0}, {5, 4}), random_f64({5, 4}, 11)});
  push("scatter_add", "index shorter than x off the axis (torch), axis 1",
      [](const std::vector<Tensor>& in) { return square(scatter_add(in[0], 1, in[1], in[2])); },
      {random_f64({4, 5}, 12), ints({4, 4, -1, 0, 2, 0}, {2, 3}), random_f64({2, 3}, 13)});
  push("scatter_add", "rank 3, axis -2, index shorter on axes 0 and 2",
      [](const std::vector<Tensor>& in) { return scatter_add(in[0], -2, in[1], in[2]); },
      {random_f64({3, 3, 4}, 14), ints({0, 2, 2, 1, 1, 1, -1, 0, 2, 0, 0, 0}, {2, 2, 3}), random_f64({2, 2, 3}, 15)});
  push("scatter_add", "x constant, gradient to src only",
      [x = random_f64({2, 3}, 16)](const std::vector<Tensor>& in) { return square(scatter_add(x.to(in[1].device()), 1, in[0], in[1])); },
      {ints({2, 2, 0, 1, 1, 1}, {2, 3}), random_f64({2, 3}, 17)});

  // ---- sort: a gather with the sorting permutation. Random inputs have no ties. ----
  push("sort", "ascending, axis -1",
      [](const std::vector<Tensor>& in) { return sort(in[0], -1); }, {random_f64({3, 5}, 18)});
  push("sort", "descending, axis -1, squared",
      [](const std::vector<Tensor>& in) { return square(sort(in[0], -1, true)); }, {random_f64({3, 5}, 19)});
  push("sort", "ascending, axis 0",
      [](const std::vector<Tensor>& in) { return sort(in[0], 0); }, {random_f64({4, 3}, 20)});
  push("sort", "descending, axis 0 of rank 3, of a transposed view",
      [](const std::vector<Tensor>& in) { return sort(in[0].transpose(0, 2), 0, true); }, {random_f64({2, 3, 4}, 21)});

  // ---- topk: the k picked positions get g, the others zero. ----
  push("topk", "largest, k 2, axis -1",
      [](const std::vector<Tensor>& in) { return topk(in[0], 2, -1, true).first; }, {random_f64({3, 5}, 22)});
  push("topk", "smallest, k 3, axis 0, squared",
      [](const std::vector<Tensor>& in) { return square(topk(in[0], 3, 0, false).first); }, {random_f64({4, 3}, 23)});
  push("topk", "largest, k the whole axis, middle axis of rank 3",
      [](const std::vector<Tensor>& in) { return topk(in[0], 3, 1, true).first; }, {random_f64({2, 3, 2}, 24)});
  // The indices used downstream as a constant index: z gets a gradient through them, x only
  // through the values.
  push("topk", "values and indices both used; the indices index another input",
      [](const std::vector<Tensor>& in) {
        auto [values, indices] = topk(in[0], 2, -1, false);
        return mul(values, take_along_axis(in[1], indices, -1));
      },
      {random_f64({3, 4}, 25), random_f64({3, 4}, 26)});
  return cases;
}

TEST_CASE("autograd: topk indices are an int64 constant and cannot be differentiated") {
  const Tensor x = random_tensor({3, 4}, DType::float64, 30);
  GradientTape tape;
  const Tensor w = tape.watch(x);
  const auto top = topk(w, 2, -1, true);  // not a structured binding: a lambda captures indices
  const Tensor& values = top.first;
  const Tensor& indices = top.second;
  CHECK(indices.dtype() == DType::int64);
  CHECK(values.trace_tape() != 0);
  CHECK(indices.trace_tape() == 0);  // untraced: a constant to every tape
  const Tensor loss = sum(values);
  check_error([&] { tape.gradient(loss, {indices}); },
              {"GradientTape::gradient", "source 0", "int64", "only float32 and float64 tensors have gradients"});
}

TEST_CASE("autograd: topk indices used as an index give the same gradient as the values") {
  // sum(take_along_axis(x, topk(x).indices)) reads the same elements as sum(topk(x).values):
  // both gradients are 1 at the k picked positions and 0 elsewhere.
  const Tensor x = tensor({0.5, -1.0, 2.0, 1.5, 3.0, 0.0, -2.0, 1.0}, {2, 4});
  const std::vector<double> expected = {0, 0, 1, 1, 1, 0, 0, 1};
  for (int through_indices = 0; through_indices < 2; ++through_indices) {
    GradientTape tape;
    const Tensor w = tape.watch(x);
    auto [values, indices] = topk(w, 2, -1, true);
    const Tensor loss = through_indices ? sum(take_along_axis(w, indices, -1)) : sum(values);
    const std::vector<Tensor> g = tape.gradient(loss, {w});
    check_close(g[0], x.shape(), expected, default_tolerance(DType::float64),
                through_indices ? "through the indices" : "through the values");
  }
}
