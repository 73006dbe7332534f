// Run configurations: a TOML file (configs/*.toml) that says everything about one RL training
// run, and the agent built from it.
//
// What it is for: keeping hyperparameters out of code. `ctrax train CONFIG` and the RL
// benchmark (bench/run_rl.sh) read these files; --set overrides any key. Every key has a
// counterpart in the C++ options structs of rl/ and optim/ with the same meaning.
//
// Every key, its type, default, range and meaning: docs/configs.md, generated from the key
// tables the reader itself uses (tools/config_sections.h, tools/algorithm_registry.h) and checked
// against them by a test; `ctrax list keys` prints the same. In short: the top level (algorithm,
// seed, epochs, total_env_steps, target_eval_return), [task], [agent], the networks' sections
// ([policy] and [value], or [joint], each with .model, .optimizer and .distribution) and the
// algorithm's own section ([ppo], ...).
//
// Sections that do not apply to the algorithm are refused, as are unknown keys, wrong types and
// values out of range (tools/config.h names the file, line and key).
#pragma once

#include <any>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <ctrax/rl/agents/actor_critic.h>
#include <ctrax/rl/agents/actor_critic_joint.h>
#include <ctrax/rl/agents/agent.h>
#include <ctrax/rl/agents/policy_agent.h>
#include <ctrax/rl/learning/task.h>
#include <toml++/toml.h>

#include "algorithm_registry.h"
#include "config_sections.h"

namespace ctrax::tools {

struct RunConfig {
  std::string algorithm;
  uint64_t seed = 0;
  int64_t epochs = 100;
  std::optional<int64_t> total_env_steps;
  std::optional<double> target_eval_return;
  // Subnormal floats flushed to zero (x86's FTZ and DAZ) on the threads that run the agent:
  // faster where training makes them (Adam's moments behind ReLU units that rarely fire), and
  // what -Ofast builds and XLA do; results may differ from the exact default wherever one occurs
  // (kernels/denormals.h). Part of the run's configuration, so a resume or an eval of the run
  // computes in the same mode.
  bool flush_denormals = false;
  std::string env;
  RLTaskOptions task;
  AgentOptions agent;
  PolicyAgentOptions policy;   // algorithms with separate networks
  ActorCriticOptions value;    // ... and a value network
  ActorCriticJointOptions joint;  // joint algorithms
  // The algorithm section's options, of the type its registration names (e.g. PPOOptions).
  std::any algorithm_options;
  // Throws std::bad_any_cast when Options is not that type.
  template <class Options>
  const Options& options() const {
    return std::any_cast<const Options&>(algorithm_options);
  }
  template <class Options>
  Options& options() {
    return std::any_cast<Options&>(algorithm_options);
  }
  // The networks (the options' model fields stay empty: make_agent builds fresh ones).
  std::function<LayerPtr()> make_policy_model, make_value_model, make_joint_model;
  toml::table resolved;  // the configuration with every default filled in
};

// The top-level keys (algorithm, seed, epochs, total_env_steps, target_eval_return,
// flush_denormals).
const OptionTable<RunConfig>& run_keys();

// Reads and validates a configuration (see the top of this file); `file` names it in messages.
// Builds the networks too (their sizes depend on the environment's spaces), so an unknown
// environment or a distribution that does not fit the action space is reported here.
RunConfig read_run_config(toml::table config, const std::string& file);

// Puts the calling thread in the configuration's floating-point mode (flush_denormals) for the
// object's lifetime, then restores the mode it had; the commands hold one on each thread that
// runs an agent (a thread pool's workers follow the caller). Throws ctrax::Error when flushing
// is asked for on a CPU without such a mode.
class FloatingPointModeScope {
 public:
  explicit FloatingPointModeScope(const RunConfig& config);
  ~FloatingPointModeScope();
  FloatingPointModeScope(const FloatingPointModeScope&) = delete;
  FloatingPointModeScope& operator=(const FloatingPointModeScope&) = delete;

 private:
  unsigned saved_;
};

// The task and the agent of a run; the agent writes to output_dir (empty: nothing). With
// config.agent.communicator the task is this rank's share (rank_task_options).
TaskPtr make_task(const RunConfig& config);
std::unique_ptr<Agent> make_agent(const RunConfig& config, TaskPtr task, const std::filesystem::path& output_dir);

}  // namespace ctrax::tools
