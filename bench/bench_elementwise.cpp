// Elementwise op throughput and per-call overhead (Google Benchmark).
//
// What it measures:
//   - GB/s of add, mul, exp and tanh on contiguous float32 tensors of 4K..16M elements,
//     through the tensor API (output allocation included) and through the raw kernel into a
//     preallocated buffer, next to a memcpy of the same bytes (bytes = inputs + output);
//   - a broadcast add (64 x 256) + (256);
//   - time per call of add, mul and relu on a 1-element and a 64 x 64 float32 tensor with one
//     thread: the overhead that dominates RL-sized workloads.
// bench/run_bench.sh elementwise runs it and writes bench/results/elementwise.md.
#include <benchmark/benchmark.h>

#include <ctrax/kernels/elementwise/elementwise.h>
#include <ctrax/kernels/parallel.h>
#include <ctrax/tensor/ops.h>

#include <cstring>
#include <vector>

namespace {

using ctrax::Shape;
using ctrax::Tensor;

Tensor filled(int64_t n, float value) { return ctrax::full(Shape{n}, value); }

void set_bytes(benchmark::State& state, int64_t elements, int arrays) {
  state.SetBytesProcessed(state.iterations() * elements * arrays * static_cast<int64_t>(sizeof(float)));
}

// ---- throughput -------------------------------------------------------------------------------

void BM_memcpy(benchmark::State& state) {
  const int64_t n = state.range(0);
  std::vector<float> src(n, 1.0f), dst(n);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), n * sizeof(float));
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  set_bytes(state, n, 2);
}

template <typename Op>
void op_binary(benchmark::State& state, Op op) {
  const int64_t n = state.range(0);
  const Tensor a = filled(n, 1.5f), b = filled(n, 0.25f);
  for (auto _ : state) benchmark::DoNotOptimize(op(a, b));
  set_bytes(state, n, 3);
}
template <typename Op>
void op_unary(benchmark::State& state, Op op) {
  const int64_t n = state.range(0);
  const Tensor x = filled(n, 0.5f);
  for (auto _ : state) benchmark::DoNotOptimize(op(x));
  set_bytes(state, n, 2);
}

void BM_add(benchmark::State& s) { op_binary(s, [](const Tensor& a, const Tensor& b) { return ctrax::add(a, b); }); }
void BM_mul(benchmark::State& s) { op_binary(s, [](const Tensor& a, const Tensor& b) { return ctrax::mul(a, b); }); }
void BM_exp(benchmark::State& s) { op_unary(s, [](const Tensor& x) { return ctrax::exp(x); }); }
void BM_tanh(benchmark::State& s) { op_unary(s, [](const Tensor& x) { return ctrax::tanh(x); }); }
void BM_log(benchmark::State& s) { op_unary(s, [](const Tensor& x) { return ctrax::log(x); }); }

// The kernels alone, single-threaded, into a preallocated (already faulted-in) buffer.
void BM_kernel_add(benchmark::State& state) {
  const int64_t n = state.range(0);
  std::vector<float> a(n, 1.5f), b(n, 0.25f), out(n);
  for (auto _ : state) {
    ctrax::kernels::binary_kernel(ctrax::kernels::BinaryKernel::add, a.data(), 1, b.data(), 1, out.data(), n);
    benchmark::ClobberMemory();
  }
  set_bytes(state, n, 3);
}
void kernel_unary(benchmark::State& state, ctrax::kernels::UnaryKernel op) {
  const int64_t n = state.range(0);
  std::vector<float> x(n, 0.5f), out(n);
  for (auto _ : state) {
    ctrax::kernels::unary_kernel(op, x.data(), out.data(), n);
    benchmark::ClobberMemory();
  }
  set_bytes(state, n, 2);
}
void BM_kernel_exp(benchmark::State& s) { kernel_unary(s, ctrax::kernels::UnaryKernel::exp); }
void BM_kernel_tanh(benchmark::State& s) { kernel_unary(s, ctrax::kernels::UnaryKernel::tanh); }
void BM_kernel_log(benchmark::State& s) { kernel_unary(s, ctrax::kernels::UnaryKernel::log); }

void BM_broadcast_add_64x256(benchmark::State& state) {
  const Tensor a = ctrax::full(Shape{64, 256}, 1.5f), row = filled(256, 0.25f);
  for (auto _ : state) benchmark::DoNotOptimize(ctrax::add(a, row));
  set_bytes(state, 64 * 256, 2);  // the row stays in cache: one tensor read, one written
}

// ---- per-call overhead, one thread ---------------------------------------------------------------

template <typename Op>
void overhead(benchmark::State& state, Op op) {
  ctrax::kernels::set_num_threads(1);
  const Tensor x = state.range(0) == 1 ? ctrax::full(Shape{1}, 0.5f) : ctrax::full(Shape{64, 64}, 0.5f);
  for (auto _ : state) benchmark::DoNotOptimize(op(x));
}
void BM_overhead_add(benchmark::State& s) { overhead(s, [](const Tensor& x) { return ctrax::add(x, x); }); }
void BM_overhead_mul(benchmark::State& s) { overhead(s, [](const Tensor& x) { return ctrax::mul(x, x); }); }
void BM_overhead_mul_scalar(benchmark::State& s) { overhead(s, [](const Tensor& x) { return x * 0.5; }); }
void BM_overhead_relu(benchmark::State& s) { overhead(s, [](const Tensor& x) { return ctrax::relu(x); }); }

constexpr int64_t kMin = 4 << 10, kMax = 16 << 20;

}  // namespace

BENCHMARK(BM_memcpy)->RangeMultiplier(16)->Range(kMin, kMax);
BENCHMARK(BM_add)->RangeMultiplier(16)->Range(kMin, kMax)->UseRealTime();
BENCHMARK(BM_mul)->RangeMultiplier(16)->Range(kMin, kMax)->UseRealTime();
BENCHMARK(BM_exp)->RangeMultiplier(16)->Range(kMin, kMax)->UseRealTime();
BENCHMARK(BM_tanh)->RangeMultiplier(16)->Range(kMin, kMax)->UseRealTime();
BENCHMARK(BM_log)->RangeMultiplier(16)->Range(kMin, kMax)->UseRealTime();
BENCHMARK(BM_kernel_add)->RangeMultiplier(16)->Range(kMin, kMax);
BENCHMARK(BM_kernel_exp)->RangeMultiplier(16)->Range(kMin, kMax);
BENCHMARK(BM_kernel_tanh)->RangeMultiplier(16)->Range(kMin, kMax);
BENCHMARK(BM_kernel_log)->RangeMultiplier(16)->Range(kMin, kMax);
BENCHMARK(BM_broadcast_add_64x256)->UseRealTime();
BENCHMARK(BM_overhead_add)->Arg(1)->Arg(4096);
BENCHMARK(BM_overhead_mul)->Arg(1)->Arg(4096);
BENCHMARK(BM_overhead_mul_scalar)->Arg(1)->Arg(4096);
BENCHMARK(BM_overhead_relu)->Arg(1)->Arg(4096);

BENCHMARK_MAIN();
