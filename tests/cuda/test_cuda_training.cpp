// The RL trainers on a GPU (AgentOptions::device = cuda:0): PPO on CartPole gives the run a CPU
// gives (the same first collection, losses within float tolerance), keeps its weights and
// optimizer slots on the GPU, and its checkpoints move between the devices.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <memory>

#include <ctrax/ctrax.h>
#include <ctrax/dist/in_process_group.h>
#include <ctrax/kernels/cuda/nccl.h>
#include <ctrax/kernels/cuda/runtime.h>
#include <ctrax/optim/adafactor.h>
#include <ctrax/optim/nccl_allreduce.h>
#include <ctrax/rl/agents/actor_critic.h>
#include <ctrax/rl/agents/actor_critic_joint.h>

#include "rl/agent_test_helpers.h"
#include "test_util.h"

namespace ctrax {
namespace {

namespace fs = std::filesystem;
using test_rl::cartpole_task;
using test_rl::collect_trajectories;
using test_rl::small_policy;
using test_rl::tanh_mlp;

const Device kGpu = Device::cuda(0);

ActorCriticOptions training_value() {
  ActorCriticOptions v;
  v.value_model = Value(tanh_mlp(16));
  v.value_optimizer = std::make_shared<Adam>(AdamOptions{.learning_rate = 1e-3});
  v.value_batch_size = 4;
  v.value_train_steps_per_epoch = 4;
  return v;
}

AgentOptions on(Device device, int64_t n_trajectories = 4) {
  AgentOptions a = collect_trajectories(n_trajectories);
  a.n_eval_episodes = 1;
  a.device = device;
  return a;
}

void check_on(const Tree& tree, Device device, const char* what) {
  CAPTURE(what);
  for (const Tensor& t : tree.leaves()) CHECK(t.device() == device);
}

// Leaves equal bit for bit after bringing both to the CPU.
bool same_values(const Tree& a, const Tree& b) {
  const auto host = [](const Tree& t) { return t.map([](const Tensor& x) { return x.to(Device::cpu()); }); };
  return test_rl::bitwise_equal(host(a), host(b));
}

void check_close(const Metrics& gpu, const Metrics& cpu, const std::string& name, double tolerance) {
  CAPTURE(name);
  REQUIRE(gpu.count(name) == 1);
  REQUIRE(cpu.count(name) == 1);
  CHECK(std::abs(gpu.at(name) - cpu.at(name)) <= tolerance * (1.0 + std::abs(cpu.at(name))));
}

}  // namespace

TEST_CASE("CUDA training: PPO on CartPole on cuda:0 follows the CPU run and keeps its weights on the GPU") {
  auto cpu_task = std::make_shared<RLTask>("CartPole-v1", cartpole_task(7, 2));
  auto gpu_task = std::make_shared<RLTask>("CartPole-v1", cartpole_task(7, 2));
  PPO cpu(cpu_task, on(Device::cpu()), small_policy(5), training_value());
  PPO gpu(gpu_task, on(kGpu), small_policy(5), training_value());
  CHECK(gpu.device() == kGpu);
  // Initialised on the CPU from the same seed, then moved: the same weights.
  CHECK(same_values(gpu.policy_trainer().weights(), cpu.policy_trainer().weights()));
  CHECK(same_values(gpu.value_trainer().weights(), cpu.value_trainer().weights()));

  const Metrics cpu_1 = cpu.run(1);
  const Metrics gpu_1 = gpu.run(1);
  // The first collection uses the initial weights: the same episodes (lengths, returns, steps).
  CHECK(gpu_1.at("train/episodes") == cpu_1.at("train/episodes"));
  CHECK(gpu.avg_returns().back() == cpu.avg_returns().back());
  CHECK(gpu_task->n_interactions() == cpu_task->n_interactions());
  for (const char* name : {"policy/loss", "value/loss", "policy/entropy"}) check_close(gpu_1, cpu_1, name, 1e-3);

  const Metrics cpu_2 = cpu.run(2);
  const Metrics gpu_2 = gpu.run(2);
  CHECK(gpu.epoch() == 3);
  for (const char* name : {"policy/loss", "value/loss"}) {
    CAPTURE(name);
    CHECK(std::isfinite(gpu_2.at(name)));
    CHECK(std::isfinite(cpu_2.at(name)));
  }
  check_on(gpu.policy_trainer().weights(), kGpu, "policy weights");
  check_on(gpu.policy_trainer().slots(), kGpu, "policy slots");
  check_on(gpu.value_trainer().weights(), kGpu, "value weights");
  check_on(gpu.value_trainer().slots(), kGpu, "value slots");
  // The agent's outputs for a caller come back as the CPU's, within float tolerance.
  const Tensor obs = zeros(Shape{1, 1, 4});
  const std::vector<double> a = gpu.policy_outputs(obs).to_vector<double>();
  CHECK(gpu.policy_outputs(obs).device() == kGpu);
  CHECK(a.size() == 2);
  const PolicyOutput acted = gpu.evaluation_act(zeros(Shape{3, 4}), Key(1), 0.0);
  CHECK(acted.actions.device().is_cpu());
  CHECK(acted.dist_inputs.device().is_cpu());
  CHECK(acted.actions.shape() == Shape({3}));
}

TEST_CASE("CUDA training: PPOJoint and PolicyGradient train on cuda:0") {
  auto task = std::make_shared<RLTask>("CartPole-v1", cartpole_task(8, 2));
  PolicyGradient pg(task, on(kGpu, 2), small_policy(2));
  pg.run(1);
  check_on(pg.policy_trainer().weights(), kGpu, "PolicyGradient weights");

  auto joint_task = std::make_shared<RLTask>("CartPole-v1", cartpole_task(9, 2));
  ActorCriticJointOptions joint;
  joint.joint_model = PolicyAndValue(2, tanh_mlp(8));
  joint.batch_size = 4;
  joint.train_steps_per_epoch = 2;
  joint.max_slice_length = 8;
  PPOJoint ppo(joint_task, on(kGpu, 2), joint);
  const Metrics row = ppo.run(1);
  CHECK(std::isfinite(row.at("joint/loss")));
}

TEST_CASE("CUDA training: checkpoints move between cuda:0 and the CPU") {
  const fs::path gpu_dir = test_rl::fresh_directory("ctrax_gpu_training_", "gpu_to_cpu");
  const fs::path cpu_dir = test_rl::fresh_directory("ctrax_gpu_training_", "cpu_to_gpu");
  {
    // Saved on the GPU, restored on the CPU.
    AgentOptions a = on(kGpu, 2);
    a.output_dir = gpu_dir;
    auto task = std::make_shared<RLTask>("CartPole-v1", cartpole_task(11));
    PPO saved(task, a, small_policy(), training_value());
    saved.run(1);
    a.device = Device::cpu();
    auto task2 = std::make_shared<RLTask>("CartPole-v1", cartpole_task(11));
    PPO restored(task2, a, small_policy(), training_value());
    CHECK(restored.epoch() == 1);
    check_on(restored.policy_trainer().weights(), Device::cpu(), "restored policy weights");
    check_on(restored.policy_trainer().slots(), Device::cpu(), "restored policy slots");
    CHECK(same_values(restored.policy_trainer().weights(), saved.policy_trainer().weights()));
    CHECK(same_values(restored.policy_trainer().slots(), saved.policy_trainer().slots()));
    CHECK(same_values(restored.value_trainer().weights(), saved.value_trainer().weights()));
    restored.run(1);
    CHECK(restored.epoch() == 2);
  }
  {
    // Saved on the CPU, restored on the GPU.
    AgentOptions a = on(Device::cpu(), 2);
    a.output_dir = cpu_dir;
    auto task = std::make_shared<RLTask>("CartPole-v1", cartpole_task(12));
    PPO saved(task, a, small_policy(), training_value());
    saved.run(1);
    a.device = kGpu;
    auto task2 = std::make_shared<RLTask>("CartPole-v1", cartpole_task(12));
    PPO restored(task2, a, small_policy(), training_value());
    CHECK(restored.epoch() == 1);
    check_on(restored.policy_trainer().weights(), kGpu, "restored policy weights");
    check_on(restored.policy_trainer().slots(), kGpu, "restored policy slots");
    check_on(restored.value_trainer().weights(), kGpu, "restored value weights");
    CHECK(same_values(restored.policy_trainer().weights(), saved.policy_trainer().weights()));
    CHECK(same_values(restored.value_trainer().slots(), saved.value_trainer().slots()));
    restored.run(1);
    CHECK(restored.epoch() == 2);
    check_on(restored.policy_trainer().weights(), kGpu, "policy weights after training");
  }
  fs::remove_all(gpu_dir);
  fs::remove_all(cpu_dir);
}

TEST_CASE("CUDA training: an optimizer without a CUDA update is refused by name") {
  auto task = std::make_shared<RLTask>("CartPole-v1", cartpole_task(13));
  PolicyAgentOptions p = small_policy();
  p.policy_optimizer = std::make_shared<Adafactor>();
  test::check_error([&] { PolicyGradient(task, on(kGpu, 1), p); },
                    {"PolicyAgent (policy network)", "Adafactor", "no CUDA update", "cuda:0"});
  ActorCriticOptions v = training_value();
  v.value_optimizer = std::make_shared<Adafactor>();
  test::check_error([&] { PPO(task, on(kGpu, 1), small_policy(), v); },
                    {"ActorCriticAgent (value network)", "Adafactor", "cuda:0"});
}

TEST_CASE("CUDA training: 2 virtual ranks on the GPU keep identical networks and rerun bit for bit") {
  // Each rank's gradients go through host memory (optim/trainer.h); the agent checks after every
  // epoch that the ranks' weights are the same bytes (it throws otherwise).
  auto run = [] {
    std::vector<Tree> weights(2);
    dist::run_virtual_ranks(2, [&](std::shared_ptr<dist::Communicator> comm) {
      AgentOptions a = on(kGpu, 4);
      a.communicator = comm;
      auto task = std::make_shared<RLTask>("CartPole-v1", rank_task_options(cartpole_task(21, 2), *comm));
      PolicyAgentOptions p = small_policy();
      ActorCriticOptions v = training_value();
      PPO agent(task, a, p, v);
      agent.run(2);
      check_on(agent.policy_trainer().weights(), kGpu, "policy weights");
      weights[static_cast<size_t>(comm->rank())] =
          agent.policy_trainer().weights().map([](const Tensor& t) { return t.to(Device::cpu()); });
    });
    return weights;
  };
  const std::vector<Tree> first = run(), second = run();
  CHECK(test_rl::bitwise_equal(first[0], first[1]));
  CHECK(test_rl::bitwise_equal(first[0], second[0]));
}

TEST_CASE("NCCL: the rank-ordered mean on GPUs equals the host's bit for bit") {
  // One rank per GPU (NCCL refuses two ranks on one GPU): as many virtual ranks as GPUs, up to 4.
  const int n = std::min(4, kernels::cuda::device_count());
  if (!kernels::cuda::nccl_built_in()) {
    MESSAGE("the CUDA module was built without NCCL: NcclAllreduce::create must give no group");
    dist::SingleProcess single;
    CHECK(NcclAllreduce::create(single, kGpu) == nullptr);
    return;
  }
  std::vector<int> equal(static_cast<size_t>(n), 0);
  dist::run_virtual_ranks(n, [&](std::shared_ptr<dist::Communicator> comm) {
    const int r = comm->rank();
    const Device gpu = Device::cuda(r);
    std::unique_ptr<NcclAllreduce> nccl = NcclAllreduce::create(*comm, gpu);
    REQUIRE(nccl != nullptr);
    // Values of mixed magnitudes, so that the order of the additions shows.
    Tensor x = normal(Key(50 + static_cast<uint64_t>(r)), Shape{10007}, DType::float64);
    x = x * (r == 0 ? 1e16 : 1.0);
    const Tensor on_gpu = nccl->mean(x.to(gpu)).to(Device::cpu());
    std::vector<double> host = x.to_vector<double>();
    dist::allreduce_sum(*comm, std::span<double>(host), /*divide_by_size=*/true);
    equal[static_cast<size_t>(r)] = test_rl::bitwise_equal(Tree(on_gpu), Tree(from_vector(host)));
  });
  CHECK(equal == std::vector<int>(static_cast<size_t>(n), 1));
}

}  // namespace ctrax
