// Plan fusion (tensor/plan_fusion.h): a matmul, bias add and activation recorded in a plan replay
// as one GEMM with an epilogue, bit for bit as eager and as the unfused plan; a chain whose
// skipped buffer is read later (returned, or used by another op) keeps those kernels; a training
// step through autodiff fuses its forward layers and still equals eager.
#include <doctest/doctest.h>

#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <ctrax/autograd/grad.h>
#include <ctrax/tensor/compile.h>
#include <ctrax/tensor/ops.h>
#include <ctrax/tensor/plan_fusion.h>

#include "test_util.h"

using namespace ctrax;

namespace {

using test::bitwise_equal;
using Fn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

// Inputs with NaN, infinite and large negative values, so relu and tanh see every case.
Tensor awkward_input(const Shape& shape, DType dtype, uint64_t seed) {
  Tensor x = test::random_tensor(shape, dtype, seed);
  std::vector<double> v = x.to_vector<double>();
  if (v.size() > 6) {
    v[1] = std::numeric_limits<double>::quiet_NaN();
    v[3] = -1e30;
    v[5] = std::numeric_limits<double>::infinity();
  }
  return from_vector<double>(v, shape).to(dtype);
}

struct Compiled {
  CompileStats stats;
  std::vector<std::vector<Tensor>> outputs;  // one per call after the recording
};

// Records f on x0, then replays it on each input (cloning the outputs).
Compiled run_compiled(const Fn& f, bool fuse, const Tensor& x0, const std::vector<Tensor>& xs) {
  CompileOptions options;
  options.fuse = fuse;
  CompiledFunction compiled(f, options);
  compiled({x0});
  Compiled result;
  for (const Tensor& x : xs) {
    std::vector<Tensor> out;
    for (const Tensor& t : compiled({x})) out.push_back(t.clone());
    result.outputs.push_back(out);
  }
  result.stats = compiled.stats();
  CHECK(result.stats.replays == static_cast<int64_t>(xs.size()));
  return result;
}

// f compiled with and without fusion, replayed on new inputs: both bitwise equal to eager.
// Returns {fused chains, kernels saved}.
std::pair<int64_t, int64_t> check_against_eager(const Fn& f, const Shape& x_shape, DType dtype) {
  const Tensor x0 = awkward_input(x_shape, dtype, 1);
  std::vector<Tensor> xs;
  for (uint64_t seed = 2; seed < 5; ++seed) xs.push_back(awkward_input(x_shape, dtype, seed));
  const Compiled fused = run_compiled(f, true, x0, xs);
  const Compiled plain = run_compiled(f, false, x0, xs);
  CHECK(plain.stats.fused_epilogues == 0);
  for (size_t call = 0; call < xs.size(); ++call) {
    const std::vector<Tensor> want = f({xs[call]});
    REQUIRE(fused.outputs[call].size() == want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      CHECK(bitwise_equal(fused.outputs[call][i], want[i]));
      CHECK(bitwise_equal(plain.outputs[call][i], want[i]));
    }
  }
  return {fused.stats.fused_epilogues, plain.stats.kernels - fused.stats.kernels};
}

// A training step as a function of the batch: the loss and the gradients of `params`.
using LossFn = std::function<Tensor(const std::vector<Tensor>&, const Tensor&)>;
Fn training_step(const LossFn& loss, const std::vector<Tensor>& params) {
  return [loss, params](const std::vector<Tensor>& in) {
    auto r = value_and_grad(loss)(params, in[0]);
    std::vector<Tensor> out{r.value};
    out.insert(out.end(), r.grad.begin(), r.grad.end());
    return out;
  };
}

Tensor activate(const std::string& activation, const Tensor& y) {
  if (activation == "relu") return relu(y);
  if (activation == "tanh") return tanh(y);
  if (activation == "sigmoid") return sigmoid(y);
  return y;
}

// Weights and biases of Dense(in -> hidden) -> Dense(hidden -> hidden) -> Dense(hidden -> out),
// drawn with seeds 1..6 in that order.
std::vector<Tensor> dense_parameters(int64_t in, int64_t hidden, int64_t out, DType dtype) {
  return {test::random_tensor({in, hidden}, dtype, 1),     test::random_tensor({hidden}, dtype, 2),
          test::random_tensor({hidden, hidden}, dtype, 3), test::random_tensor({hidden}, dtype, 4),
          test::random_tensor({hidden, out}, dtype, 5),    test::random_tensor({out}, dtype, 6)};
}

// The mean square of that network's output: relu after the first layer, `second` after the second.
LossFn two_hidden_layer_loss(const std::string& second) {
  return [second](const std::vector<Tensor>& p, const Tensor& x) {
    const Tensor h1 = relu(add(matmul(x, p[0]), p[1]));
    const Tensor h2 = activate(second, add(matmul(h1, p[2]), p[3]));
    return mean(square(add(matmul(h2, p[4]), p[5])));
  };
}

}  // namespace

TEST_CASE("plan fusion: matmul, bias add and activation replay as one kernel, bit for bit as eager") {
  struct Case {
    Shape x;
    int64_t n;
  };
  // A single row (rank-1 input), partial and full register tiles, the narrow path (n <= 4), a
  // batch of sequences folded into one GEMM, and k over one cache block (256).
  const Case cases[] = {{{7}, 64}, {{5, 3}, 17}, {{64, 64}, 64}, {{33, 8}, 2}, {{4, 6, 5}, 24}, {{9, 300}, 20}};
  for (DType dtype : {DType::float32, DType::float64})
    for (const Case& c : cases)
      for (const std::string activation : {"relu", "tanh", "sigmoid", "none"}) {
        const int64_t k = c.x.back();
        const Tensor w = test::random_tensor({k, c.n}, dtype, 11);
        const Tensor b = test::random_tensor({c.n}, dtype, 12);
        const Fn f = [&](const std::vector<Tensor>& in) {
          return std::vector<Tensor>{activate(activation, add(matmul(in[0], w), b))};
        };
        INFO(dtype_name(dtype), " x ", c.x, " n ", c.n, " ", activation);
        const auto [fused, saved] = check_against_eager(f, c.x, dtype);
        CHECK(fused == 1);
        CHECK(saved == (activation == "none" ? 1 : 2));
      }
}

TEST_CASE("plan fusion: past one elementwise grain relu still fuses, tanh keeps its kernel") {
  // 600 x 64 = 38,400 elements, over kElementwiseGrain (32,768): the add and the activation take
  // the strided loop, which may split a run; the add and relu give the same bits in any split,
  // the approximated functions do not (a short last piece runs the inline loop).
  const Tensor w = test::random_tensor({8, 64}, DType::float32, 5);
  const Tensor b = test::random_tensor({64}, DType::float32, 6);
  for (const std::string activation : {"relu", "tanh"}) {
    const Fn f = [&](const std::vector<Tensor>& in) {
      return std::vector<Tensor>{activate(activation, add(matmul(in[0], w), b))};
    };
    INFO(activation);
    const auto [fused, saved] = check_against_eager(f, {600, 8}, DType::float32);
    CHECK(fused == 1);
    CHECK(saved == (activation == "relu" ? 2 : 1));
  }
}

TEST_CASE("plan fusion: a bias add of fewer elements than a kernel run fuses (its inline loop is the same add)") {
  const Tensor w = test::random_tensor({5, 2}, DType::float64, 5);
  const Tensor b = test::random_tensor({2}, DType::float64, 6);
  const Fn f = [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{add(b, matmul(in[0], w))}; };
  const auto [fused, saved] = check_against_eager(f, {3, 5}, DType::float64);
  CHECK(fused == 1);
  CHECK(saved == 1);
}

TEST_CASE("plan fusion: an activation straight after a matmul (no bias) fuses too") {
  const Tensor w = test::random_tensor({6, 16}, DType::float32, 3);
  const Fn f = [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{relu(matmul(in[0], w))}; };
  const auto [fused, saved] = check_against_eager(f, {8, 6}, DType::float32);
  CHECK(fused == 1);
  CHECK(saved == 1);
}

TEST_CASE("plan fusion: a buffer read after the chain keeps its kernels") {
  const Tensor w = test::random_tensor({5, 16}, DType::float32, 3);
  const Tensor b = test::random_tensor({16}, DType::float32, 4);
  const Shape x_shape{8, 5};
  SUBCASE("the matmul's output returned: nothing fuses") {
    const Fn f = [&](const std::vector<Tensor>& in) {
      const Tensor t = matmul(in[0], w);
      return std::vector<Tensor>{relu(add(t, b)), t};
    };
    const auto [fused, saved] = check_against_eager(f, x_shape, DType::float32);
    CHECK(fused == 0);
    CHECK(saved == 0);
  }
  SUBCASE("the matmul's output read by a later op: nothing fuses") {
    const Fn f = [&](const std::vector<Tensor>& in) {
      const Tensor t = matmul(in[0], w);
      const Tensor h = relu(add(t, b));
      return std::vector<Tensor>{add(h, mul(t, 2.0))};
    };
    const auto [fused, saved] = check_against_eager(f, x_shape, DType::float32);
    CHECK(fused == 0);
    CHECK(saved == 0);
  }
  SUBCASE("the pre-activation returned: the bias fuses, the activation stays") {
    const Fn f = [&](const std::vector<Tensor>& in) {
      const Tensor y = add(matmul(in[0], w), b);
      return std::vector<Tensor>{tanh(y), y};
    };
    const auto [fused, saved] = check_against_eager(f, x_shape, DType::float32);
    CHECK(fused == 1);
    CHECK(saved == 1);
  }
  SUBCASE("the pre-activation read by a later op: the bias fuses, the activation stays") {
    const Fn f = [&](const std::vector<Tensor>& in) {
      const Tensor y = add(matmul(in[0], w), b);
      const Tensor h = relu(y);
      return std::vector<Tensor>{sub(h, y)};
    };
    const auto [fused, saved] = check_against_eager(f, x_shape, DType::float32);
    CHECK(fused == 1);
    CHECK(saved == 1);
  }
  SUBCASE("a kernel between the matmul and the add: nothing fuses") {
    const Fn f = [&](const std::vector<Tensor>& in) {
      const Tensor t = matmul(in[0], w);
      const Tensor b2 = mul(b, 2.0);
      return std::vector<Tensor>{relu(add(t, b2))};
    };
    const auto [fused, saved] = check_against_eager(f, x_shape, DType::float32);
    CHECK(fused == 0);
    CHECK(saved == 0);
  }
}

TEST_CASE("plan fusion: a temporary the matmul packed its operand into is held back, so the chain fuses") {
  // Every other column of x: no GEMM layout reads that in place, so matmul packs it into a
  // temporary, which dies when matmul returns. Without the arena holding freed blocks back while
  // the chain may grow, the add's output (the same size) would take that block, and a fused GEMM
  // would write its output over the A it is still reading.
  const Tensor w = test::random_tensor({8, 8}, DType::float32, 3);
  const Tensor b = test::random_tensor({8}, DType::float32, 4);
  const Fn f = [&](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{add(matmul(in[0].slice(1, 0, 16, 2), w), b)};
  };
  const auto [fused, saved] = check_against_eager(f, {8, 16}, DType::float32);
  CHECK(fused == 1);
  CHECK(saved == 1);
}

TEST_CASE("plan fusion: a recording without fusion tracks no chain and holds no freed block back") {
  const Tensor x = test::random_tensor({8, 8}, DType::float32, 1);
  const Tensor w = test::random_tensor({8, 8}, DType::float32, 2);
  for (const bool fuse : {true, false}) {
    INFO("fuse ", fuse);
    PlanRecorder recorder;
    recorder.set_fusion(fuse);
    Tensor y = matmul(x, w);  // a chain may grow from here: with fusion, freed blocks are held
    CHECK(recorder.arena()->holding() == fuse);
    y = relu(y);
    const Tensor z = add(y, y);  // the chain can grow no more: held blocks are released
    CHECK_FALSE(recorder.arena()->holding());
    recorder.stop();
    CHECK(recorder.fused_epilogues() == (fuse ? 1 : 0));
  }
}

TEST_CASE("plan fusion: the fuser leaves a chain whose output overlaps the GEMM's operands or the bias") {
  // The fuser on its own, with buffers placed by hand: the last line of defence should a block
  // still land on an operand.
  std::vector<float> a(8 * 8), b(8 * 8), bias(8), elsewhere(8 * 8);
  for (int where = 0; where < 4; ++where) {
    Tensor c = empty({8, 8}, DType::float32);
    Tensor out_tensor = empty({8, 8}, DType::float32);
    float* out = where == 0 ? elsewhere.data() : where == 1 ? a.data() + 3 : where == 2 ? b.data() : bias.data();
    EpilogueFuser fuser;
    const detail::GemmCall call{DType::float32, false, false, 8, 8, 8, a.data(), 8, b.data(), 8, c.raw_data(), 8};
    REQUIRE(fuser.gemm(call, c.storage(), 0));
    REQUIRE(fuser.bias_add(c.raw_data(), bias.data(), DType::float32, out_tensor.storage(), out, 8, 8, 1));
    c = Tensor();  // the GEMM's output dies untouched
    std::vector<PlanKernel> kernels{[] {}, [] {}};
    INFO("output placed at ", where);
    CHECK(fuser.apply(kernels) == (where == 0 ? 1 : 0));
    CHECK(kernels.size() == (where == 0 ? 1u : 2u));
  }
}

TEST_CASE("plan fusion: a training step's forward layers fuse and its gradients equal eager") {
  const Fn step = training_step(two_hidden_layer_loss("tanh"), dense_parameters(4, 32, 2, DType::float32));
  const auto [fused, saved] = check_against_eager(step, {16, 4}, DType::float32);
  // The three forward layers at least (relu and tanh keep only their outputs for the backward).
  CHECK(fused >= 3);
  CHECK(saved >= 5);
}

TEST_CASE("plan fusion: relu's backward folds into the GEMM of the gradient before it") {
  // Forward: three chains (two with relu, the output layer's bias). Backward: the gradient of
  // each hidden layer's output is a GEMM followed by relu's backward: two more.
  const Fn step = training_step(two_hidden_layer_loss("relu"), dense_parameters(3, 24, 1, DType::float64));
  const auto [fused, saved] = check_against_eager(step, {40, 3}, DType::float64);
  CHECK(fused == 5);
  CHECK(saved == 7);
}
