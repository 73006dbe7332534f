// The MLP 4-64-64-2 training step (forward, backward, Adam; batch 64, one thread) through the
// Trainer, eager against compiled (TrainerOptions::compile, tensor/compile.h), and the bare
// value_and_grad of the same loss compiled with CompiledFunction. Run side by side by
// bench/run_train_step.sh, which writes bench/results/train_step.md.
#include <benchmark/benchmark.h>

#include <ctrax/ctrax.h>
#include <ctrax/kernels/elementwise/elementwise.h>

namespace {

using ctrax::Tensor;

// The batches a step cycles through. Not one fixed batch: on a single batch the MLP fits it within
// a few thousand steps, its gradients shrink until Adam's g^2 is subnormal (each subnormal
// operation costs this CPU a microcode assist), and the time per step grows with the number
// of iterations Google Benchmark chooses. Sixteen batches keep the loss and the gradients at
// the size training sees.
constexpr int kBatches = 16;

std::vector<ctrax::Batch> mlp_batches() {
  std::vector<ctrax::Batch> batches;
  for (int i = 0; i < kBatches; ++i) {
    const auto [kx, ky] = ctrax::split(ctrax::Key(100 + i));
    batches.push_back({ctrax::uniform(kx, {64, 4}, ctrax::DType::float32, -1.0, 1.0),
                       ctrax::uniform(ky, {64, 2}, ctrax::DType::float32, -0.5, 0.5)});
  }
  return batches;
}

ctrax::TrainerOptions mlp_trainer(bool compile, const std::vector<ctrax::Batch>& batches) {
  ctrax::TrainerOptions o;
  o.model = ctrax::Serial({ctrax::Dense(64), ctrax::Relu(), ctrax::Dense(64), ctrax::Relu(), ctrax::Dense(2)});
  o.loss = ctrax::L2Loss();
  o.optimizer = std::make_shared<ctrax::Adam>(ctrax::AdamOptions{.learning_rate = 1e-3});
  o.train_stream = [batches](int64_t i) { return batches[static_cast<size_t>(i % kBatches)]; };
  o.compile = compile;
  return o;
}

// flush: subnormal floats flushed to zero (kernels/denormals.h), as XLA computes on the CPU.
void train_steps(benchmark::State& state, bool compile, bool flush = false) {
  ctrax::kernels::set_num_threads(1);
  const bool was_flushing = ctrax::kernels::flush_denormals();
  if (flush && !ctrax::kernels::set_flush_denormals(true)) {
    state.SkipWithError("this CPU has no flush-to-zero mode");
    return;
  }
  const std::vector<ctrax::Batch> batches = mlp_batches();
  ctrax::Trainer trainer(mlp_trainer(compile, batches));
  size_t i = 0;
  for (; i < 3; ++i) trainer.train_step(batches[i], false);  // warm: records the plan
  const ctrax::AllocationStats before = ctrax::allocation_stats();
  for (auto _ : state) benchmark::DoNotOptimize(trainer.train_step(batches[i++ % kBatches], false));
  state.counters["storages_per_step"] = static_cast<double>(ctrax::allocation_stats().storages_allocated -
                                                            before.storages_allocated) /
                                        static_cast<double>(state.iterations());
  ctrax::kernels::set_flush_denormals(was_flushing);
}

void BM_mlp_train_step_eager(benchmark::State& state) { train_steps(state, false); }
void BM_mlp_train_step_compiled(benchmark::State& state) { train_steps(state, true); }
void BM_mlp_train_step_eager_flushed(benchmark::State& state) { train_steps(state, false, true); }
void BM_mlp_train_step_compiled_flushed(benchmark::State& state) { train_steps(state, true, true); }

// The loss and gradients alone (no optimizer, no Trainer): the plan's kernels against eager.
Tensor mlp_loss(const std::vector<Tensor>& w, const Tensor& x, const Tensor& y) {
  Tensor h = ctrax::relu(ctrax::matmul(x, w[0]) + w[1]);
  h = ctrax::relu(ctrax::matmul(h, w[2]) + w[3]);
  return ctrax::mean(ctrax::square(ctrax::matmul(h, w[4]) + w[5] - y));
}

std::vector<Tensor> mlp_weights() {
  return {ctrax::uniform(ctrax::Key(3), {4, 64}, ctrax::DType::float32, -0.5, 0.5), ctrax::full({64}, 0.01),
          ctrax::uniform(ctrax::Key(4), {64, 64}, ctrax::DType::float32, -0.12, 0.12), ctrax::full({64}, 0.01),
          ctrax::uniform(ctrax::Key(5), {64, 2}, ctrax::DType::float32, -0.12, 0.12), ctrax::full({2}, 0.0)};
}

void BM_mlp_value_and_grad_eager(benchmark::State& state) {
  ctrax::kernels::set_num_threads(1);
  const std::vector<Tensor> w = mlp_weights();
  const Tensor x = ctrax::uniform(ctrax::Key(1), {64, 4}), y = ctrax::uniform(ctrax::Key(2), {64, 2});
  const auto step = ctrax::value_and_grad(mlp_loss);
  for (auto _ : state) benchmark::DoNotOptimize(step(w, x, y));
}

// fuse: the plan's GEMM epilogues (tensor/plan_fusion.h); off, the plan replays the eager kernels.
void value_and_grad_compiled(benchmark::State& state, bool fuse) {
  ctrax::kernels::set_num_threads(1);
  const std::vector<Tensor> w = mlp_weights();
  const Tensor x = ctrax::uniform(ctrax::Key(1), {64, 4}), y = ctrax::uniform(ctrax::Key(2), {64, 2});
  const auto step = ctrax::value_and_grad(mlp_loss);
  ctrax::CompileOptions options;
  options.fuse = fuse;
  ctrax::CompiledFunction compiled(
      [&](const std::vector<Tensor>& in) {
        auto r = step(w, in[0], in[1]);
        std::vector<Tensor> out{r.value};
        out.insert(out.end(), r.grad.begin(), r.grad.end());
        return out;
      },
      options);
  compiled({x, y});
  for (auto _ : state) benchmark::DoNotOptimize(compiled({x, y}));
  state.counters["kernels"] = static_cast<double>(compiled.stats().kernels);
}
void BM_mlp_value_and_grad_compiled(benchmark::State& state) { value_and_grad_compiled(state, true); }
void BM_mlp_value_and_grad_compiled_unfused(benchmark::State& state) { value_and_grad_compiled(state, false); }

// What a plan's kernel costs beyond its work: 60 elementwise kernels (add, multiply by a scalar,
// minimum, 20 times over) on [n, 1] float32 columns, replayed as a plan against the same 60
// kernels::binary_kernel calls made directly. The difference is the replay's per-kernel
// overhead (the closure call and the tensor layer's loop set-up), which is what fusing such a
// chain into one pass could save when the data sit in L1.
constexpr int kChainOps = 60;

void BM_plan_replay_elementwise_chain(benchmark::State& state) {
  ctrax::kernels::set_num_threads(1);
  const int64_t n = state.range(0);
  const Tensor x = ctrax::full({n, 1}, 0.5), y = ctrax::full({n, 1}, 0.25);
  ctrax::CompiledFunction chain([](const std::vector<Tensor>& in) {
    Tensor a = in[0];
    for (int i = 0; i < kChainOps / 3; ++i) a = ctrax::minimum(ctrax::mul(ctrax::add(a, in[1]), 0.5), in[1]);
    return std::vector<Tensor>{a};
  });
  chain({x, y});
  for (auto _ : state) benchmark::DoNotOptimize(chain({x, y}));
  state.counters["kernels"] = static_cast<double>(chain.stats().kernels);
  state.counters["ns_per_kernel"] = benchmark::Counter(static_cast<double>(state.iterations()) * kChainOps * 1e-9,
                                                       benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_direct_elementwise_kernels(benchmark::State& state) {
  const int64_t n = state.range(0);
  std::vector<float> a(static_cast<size_t>(n), 0.5f), b(static_cast<size_t>(n), 0.25f), t(static_cast<size_t>(n));
  const float half = 0.5f;
  using ctrax::kernels::BinaryKernel;
  for (auto _ : state) {
    for (int i = 0; i < kChainOps / 3; ++i) {
      ctrax::kernels::binary_kernel(BinaryKernel::add, a.data(), 1, b.data(), 1, t.data(), n);
      ctrax::kernels::binary_kernel(BinaryKernel::mul, t.data(), 1, &half, 0, t.data(), n);
      ctrax::kernels::binary_kernel(BinaryKernel::minimum, t.data(), 1, b.data(), 1, a.data(), n);
    }
    benchmark::DoNotOptimize(a.data());
    benchmark::ClobberMemory();
  }
  state.counters["ns_per_kernel"] = benchmark::Counter(static_cast<double>(state.iterations()) * kChainOps * 1e-9,
                                                       benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

}  // namespace

BENCHMARK(BM_plan_replay_elementwise_chain)->Arg(8)->Arg(256)->Arg(4096);
BENCHMARK(BM_direct_elementwise_kernels)->Arg(8)->Arg(256)->Arg(4096);
BENCHMARK(BM_mlp_train_step_eager);
BENCHMARK(BM_mlp_train_step_compiled);
BENCHMARK(BM_mlp_train_step_eager_flushed);
BENCHMARK(BM_mlp_train_step_compiled_flushed);
BENCHMARK(BM_mlp_value_and_grad_eager);
BENCHMARK(BM_mlp_value_and_grad_compiled);
BENCHMARK(BM_mlp_value_and_grad_compiled_unfused);
BENCHMARK_MAIN();
