// AgentOptions::device on a machine or build without a usable GPU: the CPU is the default and
// changes nothing, and a GPU device is refused at construction with the CUDA runtime's reason.
// (The trainers on a GPU: tests/cuda/test_cuda_training.cpp.)
#include <doctest/doctest.h>

#include <memory>

#include <ctrax/ctrax.h>
#include <ctrax/kernels/cuda/runtime.h>
#include <ctrax/rl/agents/actor_critic.h>
#include <ctrax/rl/agents/actor_critic_joint.h>
#include <ctrax/rl/agents/device_placement.h>

#include "rl/agent_test_helpers.h"
#include "test_util.h"

using namespace ctrax;
using namespace ctrax::test_rl;

namespace {

ActorCriticOptions device_test_value() {
  ActorCriticOptions v;
  v.value_model = Value(tanh_mlp(16));
  v.value_optimizer = std::make_shared<Adam>(AdamOptions{.learning_rate = 1e-3});
  v.value_batch_size = 4;
  v.value_train_steps_per_epoch = 2;
  return v;
}

}  // namespace

TEST_CASE("Agent device: cpu is the default and keeps every tensor on the CPU") {
  auto task = std::make_shared<RLTask>("CartPole-v1", cartpole_task(3));
  PPO agent(task, collect_trajectories(2), small_policy(), device_test_value());
  CHECK(agent.device() == Device::cpu());
  agent.run(1);
  for (const Tensor& t : agent.policy_trainer().weights().leaves()) CHECK(t.device().is_cpu());
  for (const Tensor& t : agent.policy_trainer().slots().leaves()) CHECK(t.device().is_cpu());
  for (const Tensor& t : agent.value_trainer().weights().leaves()) CHECK(t.device().is_cpu());
}

TEST_CASE("Agent device: a GPU without a usable one is refused by every trainer, naming the reason") {
  if (kernels::cuda::available()) return;  // a GPU machine: tests/cuda/test_cuda_training.cpp covers it
  const std::string reason = kernels::cuda::unavailable_reason();
  AgentOptions a = collect_trajectories(1);
  a.device = Device::cuda(0);
  auto task = std::make_shared<RLTask>("CartPole-v1", cartpole_task(4));
  test::check_error([&] { PolicyGradient(task, a, small_policy()); }, {"Agent: device cuda:0 cannot be used", reason});
  test::check_error([&] { PPO(task, a, small_policy(), device_test_value()); }, {"cuda:0", reason});
  test::check_error([&] { A2C(task, a, small_policy(), device_test_value()); }, {"cuda:0", reason});
  test::check_error([&] { AWR(task, a, small_policy(), device_test_value()); }, {"cuda:0", reason});
  ActorCriticJointOptions joint;
  joint.joint_model = PolicyAndValue(2, tanh_mlp(8));
  test::check_error([&] { PPOJoint(task, a, joint); }, {"cuda:0", reason});
  a.device = Device::cuda(3);
  test::check_error([&] { PPO(task, a, small_policy(), device_test_value()); }, {"cuda:3", reason});
  test::check_error([] { require_usable_device(Device::cuda(1), "somebody"); }, {"somebody: device cuda:1", reason});
  CHECK_NOTHROW(require_usable_device(Device::cpu(), "somebody"));
}

TEST_CASE("Agent device placement helpers on the CPU move nothing") {
  const Tensor a = arange(6).reshape(Shape{2, 3});
  const Batch moved = batch_to(Batch{a, Tensor()}, Device::cpu());
  REQUIRE(moved.size() == 2);
  CHECK(moved[0].raw_data() == a.raw_data());  // the same tensor, no copy
  CHECK(!moved[1].defined());
  io::Checkpoint c;
  c.tensors.emplace("policy/weights/0", a);
  const io::Checkpoint same = checkpoint_on(c, Device::cpu(), {"task/"});
  CHECK(same.tensors.at("policy/weights/0").raw_data() == a.raw_data());
}
