// Helpers shared by the RL agent tests (test_agents.cpp, test_q_value.cpp): small networks and
// options, CartPole tasks, hand-made trajectories, bitwise comparison.
#pragma once

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <ctrax/ctrax.h>

namespace ctrax::test_rl {

// A fresh path (removed if it exists) under the temporary directory, unique to this process.
inline std::filesystem::path fresh_directory(const std::string& prefix, const std::string& name) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / (prefix + name + "_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  return dir;
}

inline LayerFactory tanh_mlp(int64_t width) {
  return [width] { return MLP({width, width}, Tanh, {.out_activation = true}); };
}

inline PolicyAgentOptions small_policy(uint64_t seed = 0) {
  PolicyAgentOptions p;
  p.policy_model = Policy(2, tanh_mlp(16));
  p.policy_optimizer = std::make_shared<Adam>(AdamOptions{.learning_rate = 1e-3});
  p.policy_batch_size = 4;
  p.policy_train_steps_per_epoch = 2;
  p.policy_evals_per_epoch = 1;
  p.max_slice_length = 8;
  p.seed = seed;
  return p;
}

inline AgentOptions collect_trajectories(int64_t n) {
  AgentOptions a;
  a.n_trajectories_per_epoch = n;
  return a;
}

inline RLTaskOptions cartpole_task(uint64_t seed, int64_t n_envs = 1) {
  RLTaskOptions t;
  t.n_envs = n_envs;
  t.key = Key(seed);
  return t;
}

inline bool bitwise_equal(const Tree& a, const Tree& b) {
  const std::vector<Tensor> x = a.leaves(), y = b.leaves();
  if (x.size() != y.size()) return false;
  for (size_t i = 0; i < x.size(); ++i) {
    const Tensor u = x[i].contiguous(), v = y[i].contiguous();
    if (u.shape() != v.shape() || u.dtype() != v.dtype()) return false;
    if (std::memcmp(u.raw_data(), v.raw_data(), static_cast<size_t>(u.numel()) * dtype_size(u.dtype())) != 0)
      return false;
  }
  return true;
}

// One hand-made CartPole-shaped trajectory of T steps: observation i = (i, 0, 0, 0) / 10,
// actions alternate, reward 1, dist_inputs (i, -i) / 10.
inline Trajectory hand_trajectory(int64_t steps, bool terminated, bool truncated, double gamma) {
  std::vector<float> obs, dist;
  std::vector<int64_t> actions;
  std::vector<double> rewards;
  for (int64_t i = 0; i <= steps; ++i) {
    obs.insert(obs.end(), {static_cast<float>(i) / 10, 0, 0, 0});
    if (i == steps) break;
    actions.push_back(i % 2);
    rewards.push_back(1.0);
    dist.insert(dist.end(), {static_cast<float>(i) / 10, -static_cast<float>(i) / 10});
  }
  TrajectoryData d;
  d.observations = from_vector(obs, Shape{steps + 1, 4});
  d.actions = from_vector(actions, Shape{steps});
  d.rewards = from_vector(rewards, Shape{steps});
  d.dist_inputs = from_vector(dist, Shape{steps, 2});
  d.terminated = terminated;
  d.truncated = truncated;
  return Trajectory(d, gamma);
}

}  // namespace ctrax::test_rl
