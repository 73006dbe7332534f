// The built-in sections of a run configuration: for each, the options it fills and its table of
// keys (tools/option_table.h). The defaults are the options structs' own (rl/, optim/), except
// where a section names below that the config layer chooses its own.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <ctrax/layers/models.h>
#include <ctrax/layers/initializers.h>
#include <ctrax/optim/optimizer.h>
#include <ctrax/optim/schedules.h>
#include <ctrax/rl/agents/actor_critic.h>
#include <ctrax/rl/agents/actor_critic_joint.h>
#include <ctrax/rl/agents/agent.h>
#include <ctrax/rl/learning/distributions.h>
#include <ctrax/rl/agents/policy_agent.h>
#include <ctrax/rl/environments/space.h>
#include <ctrax/rl/learning/task.h>

#include "option_table.h"

namespace ctrax::tools {

// [task]: the task's options and the environment's registered id.
struct TaskSection : RLTaskOptions {
  std::string env = "CartPole-v1";
};
const OptionTable<TaskSection>& task_keys();

// [agent]; the reader also checks that exactly one of the two epoch sizes is given.
const OptionTable<AgentOptions>& agent_keys();

// [policy] (algorithms with separate networks).
const OptionTable<PolicyAgentOptions>& policy_keys();

// [value] (actor-critic algorithms). The advantage estimator is named (advantage_estimator and
// advantage_lambda); the config's default is gae (equal to the struct's td_lambda, see
// rl/learning/advantages.h). `actions` sizes the Q-network's vocabulary (null: the docs' table).
struct ValueSection : ActorCriticOptions {
  std::string advantage_estimator_name = "gae";
  double advantage_lambda = 0.95;
};
OptionTable<ValueSection> value_keys(const Space* actions);

// [joint] (joint algorithms). normalize_advantages's default is the algorithm's (see
// ActorCriticJointOptions), written into the resolved configuration.
const OptionTable<ActorCriticJointOptions>& joint_keys();

// [<network>.model]: an MLP body with an optional Normalize in front; the heads are the
// algorithm's (Policy, Value, PolicyAndValue or ActionValue).
struct ModelSection {
  enum class Kind { policy, value, joint, q_value };
  Kind kind = Kind::policy;  // set by the caller: decides the head gains and which keys apply
  std::vector<int64_t> widths = {64, 64};
  std::string activation = "tanh";
  std::string init = "glorot";
  double head_init_range = 0.0;
  double init_gain = 1.4142135623730951;  // sqrt(2)
  double head_gain = 0.01;                // 1 for a value network
  double value_head_gain = 1.0;
  int64_t injection_dim = 64, injection_layers = 1;
  bool normalize = false;
  double normalize_sample_limit = 1e12, normalize_clip = 1e12;
};
const OptionTable<ModelSection>& model_keys();
std::vector<std::string> activation_names();

// A model section as layer factories (fresh weights per call).
struct ModelFactories {
  LayerFactory body, normalizer;
  double head_init_range = 0.0;
  Initializer head_init, value_head_init;  // init = "orthogonal" only
};
ModelFactories model_factories(const ModelSection& model);

// [<network>.distribution]: Box action spaces take std and learn_std; discrete spaces have
// one distribution (Categorical) and refuse them.
struct DistributionSection {
  bool box = true;  // set by the caller from the action space
  double std = 1.0;
  LearnStd learn_std = LearnStd::none;
};
const OptionTable<DistributionSection>& distribution_keys();
DistributionPtr make_distribution(const DistributionSection& section, const Space& actions);

// [<network>.optimizer]: one table per optimizer (name = "adam", ...), each with
// learning_rate (a number or a schedule table) and clip_grad_norm.
struct OptimizerSpec {
  std::string name;
  std::vector<KeyDoc> keys;
  std::function<std::shared_ptr<Optimizer>(ConfigTable&)> read;  // reads all but `name`
};
const std::vector<OptimizerSpec>& optimizer_specs();
std::vector<std::string> optimizer_names();
std::shared_ptr<Optimizer> read_optimizer(ConfigTable t);

// learning_rate = { name = "...", ... }: one table per schedule.
struct ScheduleSpec {
  std::string name;
  std::vector<KeyDoc> keys;
  std::function<Schedule(ConfigTable&)> read;
};
const std::vector<ScheduleSpec>& schedule_specs();
std::vector<std::string> schedule_names();

}  // namespace ctrax::tools
