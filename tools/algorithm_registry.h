// The algorithm registry: what `algorithm = "..."` in a run configuration may name.
//
// One registration makes an algorithm work in configs, `ctrax train`, `ctrax eval`, `ctrax list`
// and docs/configs.md: its name, the networks it trains (which decides the [policy], [value] or
// [joint] sections), the key table of its own options section, and how to build the agent. The
// built-ins register through the same call (algorithm_registry.cpp), as Gymnasium's register
// does for environments (rl/environments/env_registry.h is the environments' registry).
//
//   tools::register_algorithm(tools::algorithm_spec<MyAgent, MyOptions>(
//       "MyAlgorithm", "my_algorithm", tools::AlgorithmNetworks::policy_and_value, my_keys));
#pragma once

#include <any>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include <ctrax/base/error.h>
#include <ctrax/rl/agents/actor_critic.h>
#include <ctrax/rl/agents/actor_critic_joint.h>
#include <ctrax/rl/agents/agent.h>
#include <ctrax/rl/agents/policy_agent.h>
#include <ctrax/rl/learning/task.h>

#include "option_table.h"

namespace ctrax::tools {

// The networks an algorithm trains, and so its constructor's shape:
//   policy            A(task, agent_options, policy_options[, options])
//   policy_and_value  A(task, agent_options, policy_options, value_options, options)
//   joint             A(task, agent_options, joint_options, options)
enum class AlgorithmNetworks { policy, policy_and_value, joint };

// The network sections a config filled in (the models included).
struct NetworkOptions {
  PolicyAgentOptions policy;
  ActorCriticOptions value;
  ActorCriticJointOptions joint;
};

// An options struct for algorithms that take none.
struct NoAlgorithmOptions {};

struct AlgorithmSpec {
  std::string name;     // algorithm = "PPO"
  std::string section;  // its options' table, [ppo]; empty when it has no options
  AlgorithmNetworks networks = AlgorithmNetworks::policy;
  std::vector<KeyDoc> keys;  // the section's keys (docs and `ctrax list keys`)
  // Reads the section (the caller calls finish()) into the agent's options, type-erased.
  std::function<std::any(ConfigTable&)> read_options;
  // Optional: the algorithm's own defaults for the network sections, set before they are read
  // (SamplingAWR's Q-network, AWRJoint's advantage normalisation).
  std::function<void(NetworkOptions&)> network_defaults;
  // Optional: checks of the network sections once read; report with root.fail(key, why).
  std::function<void(const NetworkOptions&, const ConfigTable& root)> check;
  std::function<std::unique_ptr<Agent>(TaskPtr, const AgentOptions&, const NetworkOptions&, const std::any&)> make;
};

// Registers `spec`; throws ctrax::Error for an empty or taken name, a missing read_options or
// make, or a section that another algorithm or a built-in section already uses.
void register_algorithm(AlgorithmSpec spec);
// The spec of `name`, or null.
const AlgorithmSpec* find_algorithm(const std::string& name);
// Every registered name, the built-ins first, in registration order.
std::vector<std::string> algorithm_names();

namespace detail {
// Whether A has the constructor that `networks` calls (see AlgorithmNetworks).
template <class A, class Options>
bool builds_from(AlgorithmNetworks networks) {
  switch (networks) {
    case AlgorithmNetworks::joint:
      return std::is_constructible_v<A, TaskPtr, AgentOptions, ActorCriticJointOptions, Options>;
    case AlgorithmNetworks::policy_and_value:
      return std::is_constructible_v<A, TaskPtr, AgentOptions, PolicyAgentOptions, ActorCriticOptions, Options>;
    case AlgorithmNetworks::policy:
      return std::is_constructible_v<A, TaskPtr, AgentOptions, PolicyAgentOptions, Options> ||
             (std::is_same_v<Options, NoAlgorithmOptions> &&
              std::is_constructible_v<A, TaskPtr, AgentOptions, PolicyAgentOptions>);
  }
  return false;
}
}  // namespace detail

// A spec for agent type A whose options struct is Options, read with `keys`. Throws
// ctrax::Error when A has no constructor of the shape `networks` calls.
template <class A, class Options = NoAlgorithmOptions>
AlgorithmSpec algorithm_spec(std::string name, std::string section, AlgorithmNetworks networks,
                             OptionTable<Options> keys = {}) {
  CTRAX_REQUIRE((detail::builds_from<A, Options>(networks)), "algorithm_spec(\"", name,
                "\"): the agent type has no constructor of the shape its networks call (see AlgorithmNetworks)");
  AlgorithmSpec spec;
  spec.name = std::move(name);
  spec.section = std::move(section);
  spec.networks = networks;
  spec.keys = keys.docs();
  spec.read_options = [keys](ConfigTable& t) {
    Options o;
    keys.read(t, o);
    return std::any(o);
  };
  spec.make = [networks](TaskPtr task, const AgentOptions& agent, const NetworkOptions& n,
                         const std::any& options) -> std::unique_ptr<Agent> {
    const Options& o = std::any_cast<const Options&>(options);
    constexpr bool no_options = std::is_same_v<Options, NoAlgorithmOptions>;
    if (networks == AlgorithmNetworks::joint) {
      if constexpr (std::is_constructible_v<A, TaskPtr, AgentOptions, ActorCriticJointOptions, Options>)
        return build_agent<A>(task, agent, n.joint, o);
    } else if (networks == AlgorithmNetworks::policy_and_value) {
      if constexpr (std::is_constructible_v<A, TaskPtr, AgentOptions, PolicyAgentOptions, ActorCriticOptions, Options>)
        return build_agent<A>(task, agent, n.policy, n.value, o);
    } else if constexpr (no_options && std::is_constructible_v<A, TaskPtr, AgentOptions, PolicyAgentOptions>) {
      return build_agent<A>(task, agent, n.policy);
    } else if constexpr (std::is_constructible_v<A, TaskPtr, AgentOptions, PolicyAgentOptions, Options>) {
      return build_agent<A>(task, agent, n.policy, o);
    }
    throw Error("algorithm registry: unreachable (algorithm_spec checked the constructor)");
  };
  return spec;
}

}  // namespace ctrax::tools
