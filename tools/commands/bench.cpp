// ctrax bench: a quick benchmark suite (a few seconds) of what ctrax's speed rests on:
// SGEMM GFLOP/s at a few sizes (the hand-written kernels, kernels/gemm.h), batched CartPole
// environment steps per second, and PPO epochs on CartPole (the embedded default
// configuration). Each figure is the best of several repeats. For the full, comparative
// benchmarks (OpenBLAS, PyTorch, Google Benchmark) see bench/ and bench/results/.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <ctrax/kernels/gemm.h>
#include <ctrax/kernels/parallel.h>
#include <ctrax/rl/environments/env_registry.h>
#include <ctrax/rl/environments/vector_env.h>
#include <ctrax/tensor/random.h>

#include "../config.h"
#include "../run_config.h"
#include "commands.h"
#include "default_config.h"

namespace ctrax::tools {

namespace {

using Clock = std::chrono::steady_clock;

// The best time of `repeats` calls of f, in seconds.
template <class F>
double best_seconds(int repeats, F&& f) {
  double best = 1e300;
  for (int r = 0; r < repeats; ++r) {
    const auto start = Clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - start).count());
  }
  return best;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

int bench() {
  std::printf("ctrax bench: %s, %d threads\n", cpu_model().c_str(), kernels::num_threads());
  for (int64_t n : {128, 512, 1024}) {
    const std::vector<float> a = uniform(Key(1), Shape{n, n}).to_vector<float>();
    const std::vector<float> b = uniform(Key(2), Shape{n, n}).to_vector<float>();
    std::vector<float> c(static_cast<size_t>(n * n));
    const double seconds = best_seconds(n <= 128 ? 50 : 5, [&] {
      kernels::sgemm(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    });
    std::printf("  sgemm %4lld^3            %8.1f GFLOP/s\n", static_cast<long long>(n),
                2.0 * static_cast<double>(n * n * n) / seconds * 1e-9);
  }
  {
    const int64_t n_envs = 4096, steps = 200;
    VectorEnvPtr env = make_vector_env("CartPole-v1", n_envs);
    env->reset(0);
    const Tensor actions = zeros(Shape{n_envs}, DType::int64);
    const double seconds = best_seconds(3, [&] {
      for (int64_t s = 0; s < steps; ++s) env->step(actions);
    });
    std::printf("  CartPole-v1 x %lld       %8.2f M steps/s\n", static_cast<long long>(n_envs),
                static_cast<double>(n_envs * steps) / seconds * 1e-6);
  }
  {
    // PPO epochs of the default configuration (its collection, training and routine
    // evaluation), without its target or budget (so that no epoch stops the run or confirms),
    // writing nothing.
    RunConfig config = read_run_config(parse_config_text(kDefaultConfig, "default"), "default");
    config.agent.target_return.reset();
    config.agent.total_env_steps.reset();
    config.agent.max_epochs.reset();
    config.agent.anneal_learning_rate = false;
    config.options<PPOOptions>().anneal_epsilon = false;
    TaskPtr task = make_task(config);
    std::unique_ptr<Agent> agent = make_agent(config, task, "");
    agent->run(1);  // warm-up: the first epoch allocates
    const int epochs = 5;
    const int64_t steps_before = task->n_interactions();
    const double seconds = best_seconds(1, [&] { agent->run(epochs); });
    std::printf("  PPO CartPole epoch       %8.1f ms (%lld env steps, training, 10 evaluation episodes)\n",
                seconds / epochs * 1e3, static_cast<long long>((task->n_interactions() - steps_before) / epochs));
  }
  return 0;
}

}  // namespace

void add_bench_command(CLI::App& app, int& status) {
  CLI::App* cmd = app.add_subcommand("bench", "a quick benchmark suite (GEMM, environments, a PPO epoch)");
  cmd->callback([&status] { status = bench(); });
}

}  // namespace ctrax::tools
