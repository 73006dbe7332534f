// GEMM throughput, native vs OpenBLAS, side by side (Google Benchmark).
//
// Each benchmark is named <s|d>gemm/<backend>/t<threads>/<m>x<k>x<n> and reports GFLOP/s,
// counting 2*m*n*k FLOPs per call (one multiply and one add per term; beta = 0). Shapes: the
// square sizes 16..4096, and the RL shapes (m, k, n) = (64,4,64), (64,64,64), (256,64,64),
// (64,64,2), (256,3,64), (256,1,64). Shapes with k <= 4 also run as native_tile: the register
// tile the small-k path (kernels/gemm/small_k_body.h) replaces, for comparing the two. Operands stay resident between iterations, as they do in a training loop: these
// are warm-cache numbers, which is what the small shapes see in practice. bench/run_gemm.sh
// runs this and writes bench/results/gemm.md.
//
// The context block (top of the output, and the JSON) records the CPU, the native ISA and
// which OpenBLAS kernel was picked, since OPENBLAS_CORETYPE changes it.
#include <benchmark/benchmark.h>
#include <ctrax/kernels/cpu_features.h>
#include <ctrax/kernels/gemm.h>
#include <ctrax/kernels/gemm/driver.h>
#include <ctrax/kernels/parallel.h>

#include <random>
#include <string>
#include <vector>

using namespace ctrax::kernels;

namespace {

struct Shape {
  int64_t m, k, n;
};

template <typename T>
void run_gemm(benchmark::State& state, GemmBackend backend, int threads, Shape s, bool small_k_path = true) {
  set_gemm_backend(backend);
  set_num_threads(threads);
  gemm_detail::set_small_k_path(small_k_path);
  std::mt19937 rng(42);
  std::uniform_real_distribution<T> dist(-1, 1);
  std::vector<T> a(size_t(s.m * s.k)), b(size_t(s.k * s.n)), c(size_t(s.m * s.n));
  for (auto& x : a) x = dist(rng);
  for (auto& x : b) x = dist(rng);
  for (auto _ : state) {
    if constexpr (std::is_same_v<T, float>) {
      sgemm(false, false, s.m, s.n, s.k, 1.0f, a.data(), s.k, b.data(), s.n, 0.0f, c.data(), s.n);
    } else {
      dgemm(false, false, s.m, s.n, s.k, 1.0, a.data(), s.k, b.data(), s.n, 0.0, c.data(), s.n);
    }
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  gemm_detail::set_small_k_path(true);
  const double flops = 2.0 * double(s.m) * double(s.n) * double(s.k);
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * double(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}

template <typename T>
void register_shape(const char* type, Shape s) {
  for (int threads : {1, 2}) {
    for (GemmBackend backend : {GemmBackend::native, GemmBackend::openblas}) {
      if (backend == GemmBackend::openblas && !openblas_available()) continue;
      const std::string name = std::string(type) + "/" + gemm_backend_name(backend) + "/t" +
                               std::to_string(threads) + "/" + std::to_string(s.m) + "x" +
                               std::to_string(s.k) + "x" + std::to_string(s.n);
      benchmark::RegisterBenchmark(name.c_str(),
                                   [=](benchmark::State& state) { run_gemm<T>(state, backend, threads, s); })
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime();
    }
    if (s.k <= gemm_detail::kSmallKMax) {
      const std::string name = std::string(type) + "/native_tile/t" + std::to_string(threads) + "/" +
                               std::to_string(s.m) + "x" + std::to_string(s.k) + "x" + std::to_string(s.n);
      benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& state) {
        run_gemm<T>(state, GemmBackend::native, threads, s, /*small_k_path=*/false);
      })->Unit(benchmark::kMicrosecond)->UseRealTime();
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Shape rl_shapes[] = {{64, 4, 64}, {64, 64, 64}, {256, 64, 64}, {64, 64, 2}, {256, 3, 64}, {256, 1, 64}};
  for (const Shape& s : rl_shapes) register_shape<float>("sgemm", s);
  for (int64_t size : {16, 32, 64, 128, 256, 512, 1024, 2048, 4096}) register_shape<float>("sgemm", {size, size, size});
  for (const Shape& s : rl_shapes) register_shape<double>("dgemm", s);
  for (int64_t size : {64, 256, 1024}) register_shape<double>("dgemm", {size, size, size});

  benchmark::AddCustomContext("cpu_model", cpu_model_name());
  benchmark::AddCustomContext("cpu_features", cpu_features_string());
  benchmark::AddCustomContext("native_isa", gemm_isa_name(active_gemm_isa()));
  benchmark::AddCustomContext("openblas_corename", openblas_corename());
  benchmark::AddCustomContext("openblas_config", openblas_config());
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
