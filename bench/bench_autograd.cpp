// Autodiff cost (Google Benchmark), one ctrax thread throughout.
//
// What it measures:
//   - the bookkeeping per op on 64 x 64 float32: a chain of kChain ops y = op(y, w) run
//       plain:               with no tape (the op alone),
//       recorded:            inside a GradientTape that watches w (recording only; the tape's
//                            setup and teardown are amortised over the chain),
//       record_and_backward: the same plus gradient(sum(y), {w}),
//     for add, relu and matmul, and add_const: y = y + c with a constant c, whose backward
//     passes the gradient through with no arithmetic at all, so its record_and_backward - plain
//     is the pure bookkeeping of one op (record and replay). Every row reports time per op (the iteration's time / kChain,
//     the "ops" counter), so recorded - plain is the recording overhead of one op and
//     record_and_backward - recorded is its backward (the gradient arithmetic included);
//   - an MLP 4-64-64-2 (Dense+ReLU, Dense+ReLU, Dense, MSE against targets) on a batch of 64:
//     forward alone, and forward + backward with value_and_grad over the six weight tensors.
// bench/torch_autograd.py times the same things in PyTorch eager; bench/run_bench.sh autograd
// runs both and writes bench/results/autograd.md.
#include <benchmark/benchmark.h>

#include <ctrax/autograd/grad.h>
#include <ctrax/kernels/parallel.h>
#include <ctrax/tensor/ops.h>

#include <vector>

namespace {

using ctrax::Shape;
using ctrax::Tensor;

// Long enough that a tape's construction (a pooled buffer) and its final sum are noise, short
// enough that the saved 64 x 64 outputs (16 KiB each, relu) stay in L2.
constexpr int kChain = 64;

Tensor filled(int64_t rows, int64_t cols, double lo, double hi) {
  return ctrax::linspace(lo, hi, rows * cols, ctrax::DType::float32).reshape(Shape{rows, cols});
}

// The chain's operand and its step. relu runs on positive values so the gradient flows
// through every link; matmul multiplies by the identity so values stay finite.
struct Chain {
  Tensor w;
  Tensor (*step)(const Tensor& y, const Tensor& w);
};
Chain add_chain() { return {ctrax::full(Shape{64, 64}, 0.5f), [](const Tensor& y, const Tensor& w) { return y + w; }}; }
// The constant of add_const (not watched, so it needs no gradient).
const Tensor& chain_constant() {
  static const Tensor c = ctrax::full(Shape{64, 64}, 0.25f);
  return c;
}
Chain add_const_chain() {
  return {ctrax::full(Shape{64, 64}, 0.5f), [](const Tensor& y, const Tensor&) { return y + chain_constant(); }};
}
Chain relu_chain() {
  return {filled(64, 64, 0.1, 1.0), [](const Tensor& y, const Tensor&) { return ctrax::relu(y); }};
}
Chain matmul_chain() {
  return {ctrax::eye(64, 64, ctrax::DType::float32),
          [](const Tensor& y, const Tensor& w) { return ctrax::matmul(y, w); }};
}

Tensor run_chain(const Chain& c, const Tensor& w) {
  Tensor y = w;
  for (int i = 0; i < kChain; ++i) y = c.step(y, w);
  return y;
}

void per_op(benchmark::State& state) { state.counters["ops"] = kChain; }

void plain(benchmark::State& state, Chain c) {
  for (auto _ : state) benchmark::DoNotOptimize(run_chain(c, c.w));
  per_op(state);
}

void recorded(benchmark::State& state, Chain c) {
  for (auto _ : state) {
    ctrax::GradientTape tape;
    const Tensor w = tape.watch(c.w);
    benchmark::DoNotOptimize(run_chain(c, w));
  }
  per_op(state);
}

void record_and_backward(benchmark::State& state, Chain c) {
  for (auto _ : state) {
    ctrax::GradientTape tape;
    const Tensor w = tape.watch(c.w);
    const Tensor loss = ctrax::sum(run_chain(c, w));
    benchmark::DoNotOptimize(tape.gradient(loss, {w}));
  }
  per_op(state);
}

void BM_add_64x64_plain(benchmark::State& s) { plain(s, add_chain()); }
void BM_add_64x64_recorded(benchmark::State& s) { recorded(s, add_chain()); }
void BM_add_64x64_record_and_backward(benchmark::State& s) { record_and_backward(s, add_chain()); }
void BM_add_const_64x64_plain(benchmark::State& s) { plain(s, add_const_chain()); }
void BM_add_const_64x64_recorded(benchmark::State& s) { recorded(s, add_const_chain()); }
void BM_add_const_64x64_record_and_backward(benchmark::State& s) { record_and_backward(s, add_const_chain()); }
void BM_relu_64x64_plain(benchmark::State& s) { plain(s, relu_chain()); }
void BM_relu_64x64_recorded(benchmark::State& s) { recorded(s, relu_chain()); }
void BM_relu_64x64_record_and_backward(benchmark::State& s) { record_and_backward(s, relu_chain()); }
void BM_matmul_64x64_plain(benchmark::State& s) { plain(s, matmul_chain()); }
void BM_matmul_64x64_recorded(benchmark::State& s) { recorded(s, matmul_chain()); }
void BM_matmul_64x64_record_and_backward(benchmark::State& s) { record_and_backward(s, matmul_chain()); }

// ---- MLP 4-64-64-2, batch 64 ---------------------------------------------------------------------

struct Mlp {
  std::vector<Tensor> weights;  // w1, b1, w2, b2, w3, b3
  Tensor x, y;
};

Mlp make_mlp() {
  Mlp m;
  m.weights = {filled(4, 64, -0.5, 0.5),  ctrax::full(Shape{64}, 0.01f), filled(64, 64, -0.12, 0.12),
               ctrax::full(Shape{64}, 0.01f), filled(64, 2, -0.12, 0.12), ctrax::full(Shape{2}, 0.0f)};
  m.x = filled(64, 4, -1.0, 1.0);
  m.y = filled(64, 2, -0.5, 0.5);
  return m;
}

Tensor mlp_loss(const std::vector<Tensor>& w, const Tensor& x, const Tensor& y) {
  Tensor h = ctrax::relu(ctrax::matmul(x, w[0]) + w[1]);
  h = ctrax::relu(ctrax::matmul(h, w[2]) + w[3]);
  return ctrax::mean(ctrax::square(ctrax::matmul(h, w[4]) + w[5] - y));
}

void BM_mlp_forward(benchmark::State& state) {
  const Mlp m = make_mlp();
  for (auto _ : state) benchmark::DoNotOptimize(mlp_loss(m.weights, m.x, m.y));
}

void BM_mlp_forward_backward(benchmark::State& state) {
  const Mlp m = make_mlp();
  const auto step = ctrax::value_and_grad(mlp_loss);
  for (auto _ : state) benchmark::DoNotOptimize(step(m.weights, m.x, m.y));
}

}  // namespace

BENCHMARK(BM_add_64x64_plain);
BENCHMARK(BM_add_64x64_recorded);
BENCHMARK(BM_add_64x64_record_and_backward);
BENCHMARK(BM_add_const_64x64_plain);
BENCHMARK(BM_add_const_64x64_recorded);
BENCHMARK(BM_add_const_64x64_record_and_backward);
BENCHMARK(BM_relu_64x64_plain);
BENCHMARK(BM_relu_64x64_recorded);
BENCHMARK(BM_relu_64x64_record_and_backward);
BENCHMARK(BM_matmul_64x64_plain);
BENCHMARK(BM_matmul_64x64_recorded);
BENCHMARK(BM_matmul_64x64_record_and_backward);
BENCHMARK(BM_mlp_forward);
BENCHMARK(BM_mlp_forward_backward);

int main(int argc, char** argv) {
  ctrax::kernels::set_num_threads(1);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
