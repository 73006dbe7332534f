// Optimizer update cost (Google Benchmark), one thread.
//
// What it measures:
//   - a whole Optimizer::update of one float32 weight of 1M elements (1024 x 1024) for SGD,
//     Momentum, Adam, RMSProp and Adafactor, reporting bytes/s for the memory the update must
//     touch per element: the gradient-norm pass reads g (4 bytes), then SGD reads w and g and
//     writes w (12; 16 in all), Momentum and RMSProp also read and write one slot (24 in all),
//     Adam two (32); Adafactor's three passes read g and w, then g, then g and w and write w
//     (28 in all; its row and column slots are negligible). Compare with "triad" below: the
//     fused single pass should come close to it;
//   - the same on a tree the size of a small MLP (4-64-64-2: 4,610 weights in six tensors, the
//     RL case, where everything is in L1/L2 and the per-leaf walk and the arithmetic matter)
//     and a medium one (784-256-256-10: 269,322 weights, L2-sized);
//   - Adam's loop alone on the 1M weight for each instruction-set variant the CPU can run
//     (kernels/optimizer_steps.h), to show what the wide variants buy;
//   - triad: a[i] = b[i] + s c[i] over 1M floats (12 bytes per element), the machine's
//     one-thread streaming bandwidth for reference.
#include <benchmark/benchmark.h>

#include <ctrax/kernels/optimizer_steps.h>
#include <ctrax/kernels/parallel.h>
#include <ctrax/optim/adafactor.h>
#include <ctrax/optim/adam.h>
#include <ctrax/optim/momentum.h>
#include <ctrax/optim/rmsprop.h>
#include <ctrax/optim/sgd.h>
#include <ctrax/tensor/ops.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

namespace {

using ctrax::Shape;
using ctrax::Tensor;
using ctrax::Tree;

constexpr int64_t kBig = 1 << 20;

// Weights and gradients with the shapes of Dense layers in -> hidden... -> out (kernel + bias).
std::pair<Tree, Tree> mlp(const std::vector<int64_t>& sizes) {
  Tree::List w, g;
  for (size_t i = 0; i + 1 < sizes.size(); ++i) {
    const Shape k{sizes[i], sizes[i + 1]}, b{sizes[i + 1]};
    w.push_back(Tree(Tree::Dict{{"bias", Tree(ctrax::full(b, 0.01f))},
                                {"kernel", Tree(ctrax::linspace(-0.1, 0.1, k.numel()).reshape(k))}}));
    g.push_back(Tree(Tree::Dict{{"bias", Tree(ctrax::full(b, 1e-3f))},
                                {"kernel", Tree(ctrax::linspace(-1e-3, 1e-3, k.numel()).reshape(k))}}));
  }
  return {Tree(std::move(w)), Tree(std::move(g))};
}

std::pair<Tree, Tree> big_weight() {
  const Shape s{1024, 1024};
  return {Tree(ctrax::linspace(-0.1, 0.1, kBig).reshape(s)), Tree(ctrax::linspace(-1e-3, 1e-3, kBig).reshape(s))};
}

// bytes_per_element: what one update must move per weight element, norm pass included.
void update(benchmark::State& state, const ctrax::Optimizer& opt, std::pair<Tree, Tree> tree,
            int64_t bytes_per_element) {
  ctrax::kernels::set_num_threads(1);
  Tree& weights = tree.first;
  const Tree& gradients = tree.second;
  Tree slots = opt.init(weights);
  int64_t elements = 0;
  for (const Tensor& t : weights.leaves()) elements += t.numel();
  int64_t step = 0;
  for (auto _ : state) {
    // A fixed step keeps Adafactor's decay and Adam's bias correction from drifting; the cost
    // does not depend on it.
    benchmark::DoNotOptimize(opt.update(step % 16, 1e-4, gradients, weights, slots));
    ++step;
  }
  state.SetBytesProcessed(state.iterations() * elements * bytes_per_element);
  state.counters["weights"] = static_cast<double>(elements);
}

const std::vector<int64_t> kSmallMlp = {4, 64, 64, 2};
const std::vector<int64_t> kMediumMlp = {784, 256, 256, 10};

template <typename Opt>
void register_update(const char* name, int64_t bytes) {
  static const Opt opt;
  benchmark::RegisterBenchmark((std::string(name) + "/1M").c_str(),
                               [bytes](benchmark::State& s) { update(s, opt, big_weight(), bytes); });
  benchmark::RegisterBenchmark((std::string(name) + "/mlp_4_64_64_2").c_str(),
                               [bytes](benchmark::State& s) { update(s, opt, mlp(kSmallMlp), bytes); });
  benchmark::RegisterBenchmark((std::string(name) + "/mlp_784_256_256_10").c_str(),
                               [bytes](benchmark::State& s) { update(s, opt, mlp(kMediumMlp), bytes); });
}

// Adam's loop alone, on one ISA variant.
void BM_adam_kernel(benchmark::State& state) {
  const auto isa = static_cast<ctrax::kernels::ElementwiseIsa>(state.range(0));
  const int64_t n = state.range(1);
  if (!ctrax::kernels::elementwise_isa_supported(isa)) {
    state.SkipWithError("this CPU cannot run the variant");
    return;
  }
  ctrax::kernels::force_optimizer_isa(isa);
  std::vector<float> w(n, 0.5f), g(n, 1e-3f), m(n, 0.0f), v(n, 0.0f);
  const ctrax::kernels::AdamStep p{1e-4 / 0.1, 1.0, 0.9, 0.999, 1 / std::sqrt(0.001), 1e-5, 1 - 1e-5};
  for (auto _ : state) benchmark::DoNotOptimize(ctrax::kernels::adam_step(p, g.data(), w.data(), m.data(), v.data(), n));
  ctrax::kernels::force_optimizer_isa(std::nullopt);
  state.SetBytesProcessed(state.iterations() * n * 28);
  state.SetLabel(ctrax::kernels::elementwise_isa_name(isa));
}

void BM_triad(benchmark::State& state) {
  const int64_t n = state.range(0);
  std::vector<float> a(n), b(n, 1.0f), c(n, 2.0f);
  const float s = 0.5f;
  for (auto _ : state) {
    for (int64_t i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
    benchmark::DoNotOptimize(a.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * n * 12);
}

}  // namespace

BENCHMARK(BM_triad)->Arg(kBig)->Arg(4610);
BENCHMARK(BM_adam_kernel)->ArgsProduct({{0, 1, 2}, {4610, kBig}});

int main(int argc, char** argv) {
  register_update<ctrax::SGD>("SGD", 16);
  register_update<ctrax::Momentum>("Momentum", 24);
  register_update<ctrax::Adam>("Adam", 32);
  register_update<ctrax::RMSProp>("RMSProp", 24);
  register_update<ctrax::Adafactor>("Adafactor", 28);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
