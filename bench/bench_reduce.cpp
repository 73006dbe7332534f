// Benchmarks of reductions, softmax and matmul's per-call overhead.
//
// What it is for: bandwidth of sum over the last axis (run mode) and over axis 0 (row mode) from
// RL sizes to large ones, softmax at RL sizes, and the cost the tensor layer adds to a small
// GEMM (matmul of 64x64 tensors against a direct kernels::sgemm on the same buffers).
// Not a test: nothing here asserts a time.
#include <benchmark/benchmark.h>

#include <ctrax/kernels/gemm.h>
#include <ctrax/tensor/ops.h>
#include <ctrax/tensor/tensor.h>

using namespace ctrax;

namespace {

Tensor filled(int64_t rows, int64_t cols) {
  return linspace(-1.0, 1.0, rows * cols, DType::float32).reshape(Shape{rows, cols});
}

void BM_SumLastAxis(benchmark::State& state) {
  const int64_t n = state.range(0);
  const Tensor x = filled(n, n);
  for (auto _ : state) benchmark::DoNotOptimize(sum(x, {1}));
  state.SetBytesProcessed(state.iterations() * n * n * static_cast<int64_t>(sizeof(float)));
}
BENCHMARK(BM_SumLastAxis)->Arg(64)->Arg(256)->Arg(4096);

void BM_SumAxis0(benchmark::State& state) {
  const int64_t n = state.range(0);
  const Tensor x = filled(n, n);
  for (auto _ : state) benchmark::DoNotOptimize(sum(x, {0}));
  state.SetBytesProcessed(state.iterations() * n * n * static_cast<int64_t>(sizeof(float)));
}
BENCHMARK(BM_SumAxis0)->Arg(64)->Arg(256)->Arg(4096);

void BM_SumAll(benchmark::State& state) {
  const int64_t n = state.range(0);
  const Tensor x = filled(n, n);
  for (auto _ : state) benchmark::DoNotOptimize(sum(x));
  state.SetBytesProcessed(state.iterations() * n * n * static_cast<int64_t>(sizeof(float)));
}
BENCHMARK(BM_SumAll)->Arg(64)->Arg(4096);

void BM_Softmax(benchmark::State& state) {
  const int64_t rows = state.range(0), cols = state.range(1);
  const Tensor x = filled(rows, cols);
  for (auto _ : state) benchmark::DoNotOptimize(softmax(x, -1));
  state.SetBytesProcessed(state.iterations() * rows * cols * static_cast<int64_t>(sizeof(float)));
}
BENCHMARK(BM_Softmax)->Args({64, 64})->Args({64, 256});

void BM_MatmulTensor64(benchmark::State& state) {
  const Tensor a = filled(64, 64), b = filled(64, 64);
  for (auto _ : state) benchmark::DoNotOptimize(matmul(a, b));
  state.SetItemsProcessed(state.iterations() * 2 * 64 * 64 * 64);
}
BENCHMARK(BM_MatmulTensor64);

void BM_MatmulTensor64Transposed(benchmark::State& state) {
  const Tensor a = filled(64, 64), b = filled(64, 64).mT();
  for (auto _ : state) benchmark::DoNotOptimize(matmul(a, b));
  state.SetItemsProcessed(state.iterations() * 2 * 64 * 64 * 64);
}
BENCHMARK(BM_MatmulTensor64Transposed);

// The same product without the tensor layer: the difference is matmul's overhead (checks, the
// output allocation, operand analysis).
void BM_SgemmDirect64(benchmark::State& state) {
  const Tensor a = filled(64, 64), b = filled(64, 64);
  Tensor c = empty(Shape{64, 64});
  for (auto _ : state) {
    kernels::sgemm(false, false, 64, 64, 64, 1.0f, a.data<float>(), 64, b.data<float>(), 64, 0.0f, c.data<float>(), 64);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * 2 * 64 * 64 * 64);
}
BENCHMARK(BM_SgemmDirect64);

// Tiny matrices, where the per-call cost dominates: (64, 4) @ (4, 4).
void BM_MatmulTensorTiny(benchmark::State& state) {
  const Tensor a = filled(64, 4), b = filled(4, 4);
  for (auto _ : state) benchmark::DoNotOptimize(matmul(a, b));
}
BENCHMARK(BM_MatmulTensorTiny);

void BM_SgemmDirectTiny(benchmark::State& state) {
  const Tensor a = filled(64, 4), b = filled(4, 4);
  Tensor c = empty(Shape{64, 4});
  for (auto _ : state) {
    kernels::sgemm(false, false, 64, 4, 4, 1.0f, a.data<float>(), 4, b.data<float>(), 4, 0.0f, c.data<float>(), 4);
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_SgemmDirectTiny);

}  // namespace

BENCHMARK_MAIN();
