// Environment stepping speed (Google Benchmark): CartPole steps per second.
//
// What it measures (items = environment steps, so items/s is steps per second):
//   - CartPoleEnvTensor: one CartPole-v1 from make_env (CartPoleEnv under TimeLimit) through the
//     Env interface: a Tensor action in, a Tensor observation out, reset() when an episode ends;
//   - CartPoleStepRaw: the bare dynamics, cartpole_step on one std::array state, restarted from
//     a fixed state when the pole falls: the floor under everything else;
//   - CartPoleVector/N/threads: make_vector_env("CartPole-v1", N) (the batched CartPole) at
//     N = 64, 1024, 16384 with 1 and 2 ctrax threads, auto-reset included;
//   - SyncVectorCartPole/1024: the same batch through SyncVectorEnv (N Env objects), to show
//     what the batched implementation buys.
// Every row reports wall-clock time (UseRealTime), so items/s is steps per second of wall time.
// Actions are random 0/1, drawn before timing (a cycle of 16 batches), so episodes end at
// random times as in real collection and the draw is not timed. The goal: 20M
// steps/s on 2 cores with the batched environment.
#include <benchmark/benchmark.h>

#include <ctrax/kernels/parallel.h>
#include <ctrax/rl/environments/classic_control/cartpole.h>
#include <ctrax/rl/environments/env_registry.h>
#include <ctrax/rl/environments/vector_env.h>
#include <ctrax/tensor/random.h>

#include <array>
#include <cstdint>
#include <vector>

namespace {

constexpr int kActionCycle = 16;

std::vector<ctrax::Tensor> random_action_batches(int64_t n) {
  std::vector<ctrax::Tensor> batches;
  for (int k = 0; k < kActionCycle; ++k)
    batches.push_back(ctrax::randint(ctrax::Key(static_cast<uint64_t>(k)), ctrax::Shape{n}, 0, 2));
  return batches;
}

// Sets the ctrax thread count for one benchmark and restores it after.
struct Threads {
  int saved = ctrax::kernels::num_threads();
  explicit Threads(int n) { ctrax::kernels::set_num_threads(n); }
  ~Threads() { ctrax::kernels::set_num_threads(saved); }
};

void BM_CartPoleEnvTensor(benchmark::State& state) {
  ctrax::EnvPtr env = ctrax::make_env("CartPole-v1");
  env->reset(0);
  const std::vector<int64_t> bits = ctrax::randint(ctrax::Key(1), ctrax::Shape{4096}, 0, 2).to_vector<int64_t>();
  const std::array<ctrax::Tensor, 2> actions = {ctrax::scalar_tensor(0, ctrax::DType::int64),
                                                ctrax::scalar_tensor(1, ctrax::DType::int64)};
  size_t t = 0;
  for (auto _ : state) {
    const ctrax::StepResult r = env->step(actions[static_cast<size_t>(bits[t++ % bits.size()])]);
    benchmark::DoNotOptimize(r.observation.raw_data());
    if (r.terminated || r.truncated) env->reset();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_CartPoleEnvTensor)->UseRealTime();

void BM_CartPoleStepRaw(benchmark::State& state) {
  const ctrax::CartPoleParams params;
  const std::vector<int64_t> bits = ctrax::randint(ctrax::Key(1), ctrax::Shape{4096}, 0, 2).to_vector<int64_t>();
  const std::array<double, 4> start = {0.01, -0.02, 0.03, -0.04};
  std::array<double, 4> s = start;
  size_t t = 0;
  for (auto _ : state) {
    const ctrax::CartPoleStepOutcome outcome = ctrax::cartpole_step(params, s, bits[t++ % bits.size()]);
    benchmark::DoNotOptimize(s);
    if (outcome.terminated) s = start;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_CartPoleStepRaw)->UseRealTime();

void BM_CartPoleVector(benchmark::State& state) {
  const int64_t n = state.range(0);
  const Threads threads(static_cast<int>(state.range(1)));
  ctrax::VectorEnvPtr env = ctrax::make_vector_env("CartPole-v1", n);
  env->reset(0);
  const std::vector<ctrax::Tensor> actions = random_action_batches(n);
  size_t t = 0;
  for (auto _ : state) {
    const ctrax::VectorStep& s = env->step(actions[t++ % actions.size()]);
    benchmark::DoNotOptimize(s.observations.raw_data());
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_CartPoleVector)
    ->ArgNames({"N", "threads"})
    ->ArgsProduct({{64, 1024, 16384}, {1, 2}})
    ->UseRealTime();

void BM_SyncVectorCartPole(benchmark::State& state) {
  const int64_t n = state.range(0);
  ctrax::SyncVectorEnv env([] { return ctrax::make_env("CartPole-v1"); }, n);
  env.reset(0);
  const std::vector<ctrax::Tensor> actions = random_action_batches(n);
  size_t t = 0;
  for (auto _ : state) {
    const ctrax::VectorStep& s = env.step(actions[t++ % actions.size()]);
    benchmark::DoNotOptimize(s.observations.raw_data());
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_SyncVectorCartPole)->ArgName("N")->Arg(1024)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
