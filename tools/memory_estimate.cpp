// Memory estimates of run configurations: see memory_estimate.h.
#include "memory_estimate.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <ctrax/base/error.h>
#include <ctrax/rl/environments/env.h>
#include <ctrax/rl/environments/env_registry.h>

namespace ctrax::tools {

namespace {

// Bytes one environment copy takes with its share of the vector environment's buffers, and
// the fixed cost of one stored piece (a Trajectory's tensors and their allocations) beside its
// per-step data. Measured together: ctrax train configs/ppo_acrobot.toml with 65536 copies and
// one step each peaked at 3.4 GB (8 KiB + 24 KiB x 2 kept epochs per copy, plus the steps, give
// 3.6 GB); the batched CartPole needs less.
constexpr double kBytesPerEnvironment = 8192;
constexpr double kBytesPerPiece = 24576;
// A trajectory of n_trajectories_per_epoch without a configured time limit.
constexpr double kDefaultEpisodeSteps = 1000;

std::string gib(double bytes) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f GiB", bytes / (1024.0 * 1024.0 * 1024.0));
  return buffer;
}

}  // namespace

std::string MemoryEstimate::describe() const {
  return "about " + gib(total()) + " (environments " + gib(environments) + ", replay " + gib(replay) +
         ", collection and checkpoint buffers " + gib(working) + ")";
}

MemoryEstimate estimate_memory(const RunConfig& c) {
  const EnvPtr env = make_env(c.env);
  const Space& obs = env->observation_space();
  const Space& act = env->action_space();
  const DistributionPtr& dist = c.make_joint_model ? c.joint.distribution : c.policy.distribution;
  const double d = dist ? static_cast<double>(dist->n_inputs()) : 0.0;
  const double step_bytes = 2.0 * static_cast<double>(obs.shape().numel() * dtype_size(obs.dtype())) +
                            static_cast<double>(act.shape().numel() * dtype_size(act.dtype())) + 8 + 4 + 4 + 1 +
                            4 * d;
  const double n_envs = static_cast<double>(c.task.n_envs);
  const double limit = static_cast<double>(c.task.time_limit.value_or(c.task.max_steps.value_or(0)));
  const double episode = limit > 0 ? limit : kDefaultEpisodeSteps;
  const double epoch_steps =
      c.agent.n_interactions_per_epoch
          ? std::ceil(static_cast<double>(*c.agent.n_interactions_per_epoch) / n_envs) * n_envs
          : static_cast<double>(c.agent.n_trajectories_per_epoch.value_or(1)) * episode;
  const double kept_epochs = static_cast<double>(c.task.n_replay_epochs) + 1;
  // Every copy closes at least one piece per epoch (the one cut when collection stops).
  const double epoch_pieces = n_envs + epoch_steps / episode;
  MemoryEstimate m;
  m.environments = (n_envs + static_cast<double>(c.task.n_eval_envs)) * kBytesPerEnvironment;
  m.replay = (epoch_steps * kept_epochs + static_cast<double>(c.task.initial_trajectories) * episode) * step_bytes +
             (epoch_pieces * kept_epochs + static_cast<double>(c.task.initial_trajectories)) * kBytesPerPiece;
  // One collection's raw pieces before they become trajectories, the checkpoint's copy of the
  // replay, and the rows of rollout passes (the padded grid and its flattened copy).
  m.working = 2 * epoch_steps * step_bytes + m.replay + (c.value.rollout_passes ? 3 * epoch_steps * step_bytes : 0);
  return m;
}

double available_memory() {
  std::ifstream in("/proc/meminfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    std::istringstream fields(line.substr(13));
    double kib = 0;
    if (fields >> kib) return kib * 1024.0;
  }
  return static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGESIZE));
}

void check_memory(const RunConfig& config, double available) {
  const MemoryEstimate m = estimate_memory(config);
  CTRAX_REQUIRE(m.total() <= available, "this configuration needs ", m.describe(), ", more than the ", gib(available),
                " of memory available (lower agent.n_interactions_per_epoch, task.n_envs, task.n_replay_epochs or "
                "task.initial_trajectories)");
}

}  // namespace ctrax::tools
