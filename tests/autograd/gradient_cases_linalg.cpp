// Gradient cases of matmul (every operand rank NumPy's rules distinguish, broadcast batch axes,
// transposed views), softmax and log_softmax (first, last and middle axes).
#include <string>
#include <vector>

#include <ctrax/tensor/ops.h>

#include "../test_util.h"
#include "gradient_cases.h"

using namespace ctrax;
using test::GradientCase;

namespace {

using Inputs = std::vector<Tensor>;

Tensor mm(const Inputs& x) { return matmul(x[0], x[1]); }

}  // namespace

CTRAX_GRADIENT_CASES(linalg) {
  std::vector<GradientCase> all = {
      // ---- matmul ----
      {"matmul", "[3,4] @ [4,2]", mm, {test::random_f64(Shape{3, 4}, 700), test::random_f64(Shape{4, 2}, 701)}},
      {"matmul", "[4] @ [4,3] (vector on the left)", mm, {test::random_f64(Shape{4}, 702), test::random_f64(Shape{4, 3}, 703)}},
      {"matmul", "[3,4] @ [4] (vector on the right)", mm, {test::random_f64(Shape{3, 4}, 704), test::random_f64(Shape{4}, 705)}},
      {"matmul", "[5] @ [5] (dot product, rank-0 result)", mm, {test::random_f64(Shape{5}, 706), test::random_f64(Shape{5}, 707)}},
      {"matmul", "[2,3,4] @ [2,4,2] (batched)", mm, {test::random_f64(Shape{2, 3, 4}, 708), test::random_f64(Shape{2, 4, 2}, 709)}},
      {"matmul", "[2,1,3,4] @ [5,4,2] (broadcast batch axes on both sides)", mm,
       {test::random_f64(Shape{2, 1, 3, 4}, 710), test::random_f64(Shape{5, 4, 2}, 711)}},
      {"matmul", "[3,4] @ [2,4,2] (the matrix is shared by the batch)", mm,
       {test::random_f64(Shape{3, 4}, 712), test::random_f64(Shape{2, 4, 2}, 713)}},
      {"matmul", "[4] @ [2,4,3] (vector against a batch)", mm, {test::random_f64(Shape{4}, 714), test::random_f64(Shape{2, 4, 3}, 715)}},
      {"matmul", "[2,3,4] @ [4] (batch against a vector)", mm, {test::random_f64(Shape{2, 3, 4}, 716), test::random_f64(Shape{4}, 717)}},
      {"matmul", "[4,3].mT() @ [2,4].mT() (both operands transposed views)",
       [](const Inputs& x) { return matmul(x[0].mT(), x[1].mT()); },
       {test::random_f64(Shape{4, 3}, 718), test::random_f64(Shape{2, 4}, 719)}},
      {"matmul", "[2,4,3].mT() @ [2,4,2] (batched, left transposed)",
       [](const Inputs& x) { return matmul(x[0].mT(), x[1]); },
       {test::random_f64(Shape{2, 4, 3}, 720), test::random_f64(Shape{2, 4, 2}, 721)}},
      {"matmul", "columns 0, 2, 4, 6 of [3,8] @ [3,4].mT() (strided left, transposed right)",
       [](const Inputs& x) { return matmul(x[0].slice(1, 0, 8, 2), x[1].mT()); },
       {test::random_f64(Shape{3, 8}, 722), test::random_f64(Shape{3, 4}, 723)}},
      // The same tensor on both sides: x x^T gets both gradients added.
      {"matmul", "x @ x.mT() with x [3,4]", [](const Inputs& x) { return matmul(x[0], x[0].mT()); },
       {test::random_f64(Shape{3, 4}, 724)}},
  };

  // ---- softmax and log_softmax ----
  for (const std::string op : {"softmax", "log_softmax"}) {
    const bool is_log = op == "log_softmax";
    const uint64_t seed = is_log ? 760 : 740;
    auto fn = [is_log](const Tensor& x, int axis) { return is_log ? log_softmax(x, axis) : softmax(x, axis); };
    all.push_back({op, "axis -1 of [3,4]", [fn](const Inputs& x) { return fn(x[0], -1); },
                   {test::random_f64(Shape{3, 4}, seed)}});
    all.push_back({op, "axis 0 of [3,4]", [fn](const Inputs& x) { return fn(x[0], 0); },
                   {test::random_f64(Shape{3, 4}, seed + 1)}});
    all.push_back({op, "axis 1 (the middle) of [2,3,4]", [fn](const Inputs& x) { return fn(x[0], 1); },
                   {test::random_f64(Shape{2, 3, 4}, seed + 2)}});
    all.push_back({op, "axis -2 (the middle) of [3,4,2]", [fn](const Inputs& x) { return fn(x[0], -2); },
                   {test::random_f64(Shape{3, 4, 2}, seed + 3)}});
    all.push_back({op, "a vector [6]", [fn](const Inputs& x) { return fn(x[0], 0); }, {test::random_f64(Shape{6}, seed + 4)}});
    all.push_back({op, "axis -1 of a transposed view of [5,3]", [fn](const Inputs& x) { return fn(x[0].mT(), -1); },
                   {test::random_f64(Shape{5, 3}, seed + 5)}});
    all.push_back({op, "axis 0 of rows 0, 2, 4 of [6,4]",
                   [fn](const Inputs& x) { return fn(x[0].slice(0, 0, 6, 2), 0); },
                   {test::random_f64(Shape{6, 4}, seed + 6)}});
    // Large logits: the backward must use the stable outputs, not exp(x).
    all.push_back({op, "logits around 300", [fn](const Inputs& x) { return fn(x[0], -1); },
                   {test::random_f64(Shape{2, 4}, seed + 7, 298.0, 302.0)}});
  }
  return all;
}
