// Run configurations: a TOML file (configs/*.toml) that says everything about one RL training
// run, and the agent built from it.
//
// What it is for: keeping hyperparameters out of code. `ctrax train CONFIG` and the RL
// benchmark (bench/run_rl.sh) read these files; --set overrides any key. Every key has a
// counterpart in the C++ options structs of rl/ with the same name and meaning:
//
//   algorithm = "PPO"      PolicyGradient, A2C, PPO, AWR, SamplingAWR, PPOJoint, A2CJoint, AWRJoint
//   seed = 0               the task's key and the networks' initial weights
//   epochs = 100           >= 1 (with total_env_steps: default unlimited)
//   total_env_steps        optional: the run's budget of environment steps (SB3's n_timesteps),
//                          the initial random trajectories included; the epoch that reaches it
//                          is the last
//   target_eval_return     optional: stop once a confirmation of agent.n_confirm_episodes
//                          episodes, run when the routine evaluation (the first eval temperature)
//                          reaches it, confirms it (rl/agent.h); absent: no early stop
//   [task]        env, n_envs, n_eval_envs, initial_trajectories, gamma, max_steps, time_limit,
//                 n_replay_epochs                                       (RLTaskOptions)
//   [agent]       n_trajectories_per_epoch | n_interactions_per_epoch, n_eval_episodes,
//                 eval_temperatures, eval_max_steps, only_eval, checkpoints_to_keep,
//                 checkpoint_every, n_confirm_episodes, confirm_statistic (mean, ci95_low),
//                 anneal_learning_rate, compile (AgentOptions)
//   [policy]      batch_size, train_steps_per_epoch, evals_per_epoch, eval_steps, max_slice_length
//                 (0: whole trajectories)         (PolicyAgentOptions; not for joint algorithms)
//   [value]       batch_size, train_steps_per_epoch, evals_per_epoch, eval_steps, n_shared_layers,
//                 added_policy_slice_length, scale_value_targets, on_policy, advantage_estimator
//                 (monte_carlo, td_k, td_lambda, gae), advantage_lambda, advantage_normalization,
//                 advantage_normalization_epsilon, advantage_normalization_factor; Q-value
//                 baselines: q_value (default false; always true for SamplingAWR), and with it
//                 q_value_aggregate_max, q_value_direct_advantages, q_value_n_samples,
//                 vocab_size (Discrete(k) spaces; default k); rollout passes (SB3-style epochs):
//                 rollout_passes, minibatch_size, normalize_advantages_per_minibatch, target_kl,
//                 value_clip  (ActorCriticOptions; A2C, PPO, AWR, SamplingAWR)
//   [joint]       batch_size, train_steps_per_epoch, supervised_evals_per_epoch,
//                 supervised_eval_steps, max_slice_length, normalize_advantages, return_lambda
//                 (ActorCriticJointOptions; joint algorithms)
//   [<network>.model]        widths, activation, init (glorot, orthogonal), head_init_range (glorot),
//                            init_gain, head_gain, value_head_gain (joint) (orthogonal), normalize,
//                            normalize_sample_limit, normalize_clip (an MLP body; <network> is
//                            policy, value or joint);
//                            with value.q_value also injection_dim, injection_layers (ActionValue)
//   [<network>.optimizer]    name (adam, adamw, sgd, momentum, rmsprop, adafactor), learning_rate
//                            (a number, default 1e-3, or a schedule table: name (constant,
//                            multifactor, linear_annealing) and its options), and its options
//   [<network>.distribution] std, learn_std (none, shared, separate): Box action spaces only
//   [ppo] epsilon, entropy_coeff, anneal_epsilon     [a2c] entropy_coeff     [awr] beta, w_max, entropy_coeff
//   [sampling_awr] beta, w_max, entropy_coeff, reweight
//   [ppo_joint] epsilon, value_loss_coeff, entropy_coeff     [a2c_joint] value_loss_coeff,
//   entropy_coeff     [awr_joint] beta, w_max, value_loss_coeff, entropy_coeff
//
// Sections that do not apply to the algorithm are refused, as are unknown keys, wrong types and
// values out of range (tools/config.h names the file, line and key).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <ctrax/rl/actor_critic.h>
#include <ctrax/rl/actor_critic_joint.h>
#include <ctrax/rl/agent.h>
#include <ctrax/rl/policy_agent.h>
#include <ctrax/rl/task.h>
#include <toml++/toml.h>

namespace ctrax::tools {

struct RunConfig {
  std::string algorithm;
  uint64_t seed = 0;
  int64_t epochs = 100;
  std::optional<int64_t> total_env_steps;
  std::optional<double> target_eval_return;
  std::string env;
  RLTaskOptions task;
  AgentOptions agent;
  PolicyAgentOptions policy;
  ActorCriticOptions value;
  ActorCriticJointOptions joint;
  A2COptions a2c;
  PPOOptions ppo;
  AWROptions awr;
  SamplingAWROptions sampling_awr;
  PPOJointOptions ppo_joint;
  A2CJointOptions a2c_joint;
  AWRJointOptions awr_joint;
  // The networks (the options' model fields stay empty: make_agent builds fresh ones).
  std::function<LayerPtr()> make_policy_model, make_value_model, make_joint_model;
  toml::table resolved;  // the configuration with every default filled in
};

// What a config may name: algorithms, model activations, optimizers and schedules.
const std::vector<std::string>& algorithm_names();
std::vector<std::string> activation_names();
const std::vector<std::string>& optimizer_names();
const std::vector<std::string>& schedule_names();

// Reads and validates a configuration (see the top of this file); `file` names it in messages.
// Builds the networks too (their sizes depend on the environment's spaces), so an unknown
// environment or a distribution that does not fit the action space is reported here.
RunConfig read_run_config(toml::table config, const std::string& file);

// The task and the agent of a run; the agent writes to output_dir (empty: nothing).
std::unique_ptr<RLTask> make_task(const RunConfig& config);
std::unique_ptr<Agent> make_agent(const RunConfig& config, RLTask& task, const std::filesystem::path& output_dir);

}  // namespace ctrax::tools
