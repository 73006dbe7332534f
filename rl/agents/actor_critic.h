// Actor-critic agents with separate policy and value networks (Trax's rl/actor_critic.py):
// ActorCriticAgent and its algorithms A2C, PPO, AWR and SamplingAWR. Not for one network with
// two heads (rl/agents/actor_critic_joint.h).
//
// An epoch, in Trax's order: the collect state into the policy trainer; the first n_shared_layers
// policy layers to the value network; train the value network; the shared layers back; train the
// policy. The value network regresses onto G_t = (V_target(o_t) + A_t) / scale, V_target frozen
// for each value chunk, from value_batch_size slices of max_slice_length + 1 entries of every
// stored epoch. The policy trains on the algorithm's loss (rl/learning/losses.h) with the
// advantages of advantage_estimator over the current value network, from policy_batch_size slices
// of max_slice_length + margin entries (margin = 1 + added_policy_slice_length; the last epoch only
// when on_policy), cut to their first L - margin. With q_value the value model is a Q-network and
// V(o) is estimated from q_value_n_samples actions drawn from the current policy.
// Design, batches, Q-value baselines, SamplingAWR, differences from Trax: docs/algorithms.md,
// "Actor-critic: A2C, PPO, AWR, SamplingAWR".
#pragma once

#include <cstdint>
#include <memory>

#include "../learning/advantages.h"
#include "../learning/losses.h"
#include "policy_agent.h"

namespace ctrax {

struct ActorCriticOptions {
  LayerPtr value_model;                        // required: [B, L, ...] -> [B, L], e.g. Value(body); with
                                               // q_value (observations, actions) -> [B, L], e.g. ActionValue
  // Default: Adam with Trax's multifactor schedule as its learning rate (the Trainer's default).
  std::shared_ptr<Optimizer> value_optimizer;
  int64_t value_batch_size = 64;               // >= 1
  int64_t value_train_steps_per_epoch = 500;   // >= 0
  int64_t value_evals_per_epoch = 1;           // >= 1: chunks, each followed by an evaluation and a target sync
  int64_t value_eval_steps = 1;                // >= 1
  // With n_shared_layers > 0 both models must be Serial, those layers of equal weight shapes.
  int64_t n_shared_layers = 0;                 // >= 0
  // Look-ahead entries for the estimator (td_k and the like), after the 1 that ctrax always adds.
  int64_t added_policy_slice_length = 0;       // >= 0
  int64_t n_replay_epochs = 1;                 // >= 0: set on the task (RLTask::set_n_replay_epochs)
  // The value network's outputs are returns / scale: scale = 1 / (1 - gamma) with this, else 1.
  bool scale_value_targets = false;
  bool on_policy = true;                       // policy batches from the last epoch only
  AdvantageEstimator advantage_estimator;      // default: td_lambda(0.95)
  bool advantage_normalization = true;
  double advantage_normalization_epsilon = 1e-5;  // > 0
  double advantage_normalization_factor = 1.0;
  // Q-value baselines, on Discrete or rank-1 Box action spaces: the Q-network takes actions in the
  // distribution's sample dtype and is probed with every action id at construction. Design:
  // docs/algorithms.md, "Q-value baselines".
  bool q_value = false;                        // value_model is a Q-network (2 inputs)
  bool q_value_aggregate_max = true;           // value targets: V = max of Q over the sampled actions, else mean
  bool q_value_direct_advantages = false;      // policy advantages Q(o_t, a_t) - V(o_t), not the estimator's
  int64_t q_value_n_samples = 1;               // >= 1 actions sampled per state
  int64_t vocab_size = 2;                      // >= 1; with q_value on a Discrete(k) space, >= k
  uint64_t seed = 1;                           // the value network's initial weights, the sampled actions
  // Rollout passes (SB3's PPO; rl/learning/rollout_buffer.h): n passes over the epoch's own
  // collection in shuffled minibatches, one policy and one value step each. The *_batch_size,
  // *_train_steps_per_epoch, evals, value chunks and target network are unused then;
  // n_shared_layers, q_value and on_policy = false are refused. Design: docs/algorithms.md,
  // "Rollout passes".
  std::optional<int64_t> rollout_passes;       // >= 1; none: Trax's random slice batches
  int64_t minibatch_size = 64;                 // >= 1 rows
  bool normalize_advantages_per_minibatch = true;  // rollout passes: per minibatch (SB3), else once
                                               // over the whole rollout (advantage_normalization on)
  std::optional<double> target_kl;             // > 0: end the epoch's passes after a minibatch whose
                                               // approximate KL exceeds 1.5 target_kl (SB3's rule)
  std::optional<double> value_clip;            // > 0, rollout passes only, in the value network's
                                               // output units (targets / scale)
};

class ActorCriticAgent : public PolicyAgent {
 public:
  ~ActorCriticAgent() override;

  Trainer& value_trainer() { return *value_trainer_; }
  const ActorCriticOptions& actor_critic_options() const { return ac_; }
  // V(o) times the value scale for observations [B, L, ...] with the current weights. State-value
  // models only (ctrax::Error with q_value: see state_values).
  Tensor values(const Tensor& observations) const;
  // Q-value models only (ctrax::Error otherwise), current weights, times the value scale, for
  // observations [B, L, ...]. q_values: Q(o, a) [B, L] for actions [B, L, ...event] (any real
  // dtype; converted).
  Tensor q_values(const Tensor& observations, const Tensor& actions) const;
  // q_value_n_samples actions per entry from the current policy at temperature 1,
  // [n, B, L, ...event]; sample i of every entry uses element i of one draw from `key` over [n, B, L].
  Tensor sample_actions(const Tensor& observations, Key key) const;
  // max_i (aggregate_max) or mean_i of Q(o, a_i) over sample_actions(o, key): [B, L].
  Tensor state_values(const Tensor& observations, Key key, bool aggregate_max) const;
  // The keys of the actions sampled for policy and value batch `index`: a pure function of the
  // value seed and the index, so batches stay reproducible and resumable.
  Key policy_sampling_key(int64_t index) const;
  Key value_sampling_key(int64_t index) const;
  // Policy batch `index`: (observations, actions, advantages, old distribution inputs, mask);
  // value batch `index`: (observations, targets, weights), with q_value (observations, actions,
  // targets, weights).
  virtual Batch policy_batch(int64_t index) const;
  Batch value_batch(int64_t index) const;

 protected:
  ActorCriticAgent(TaskPtr task, AgentOptions agent_options, PolicyAgentOptions policy_options,
                   ActorCriticOptions options, LayerPtr policy_loss, std::map<std::string, LayerPtr> policy_metrics);

  // Sampled actions and their Q-values under `weights` (the current or the target network).
  struct QSamples {
    Tensor dist_inputs;  // [B, L, D]: the current policy's, which the actions were drawn from
    Tensor actions;      // [n, B, L, ...event]
    Tensor q;            // [n, B, L] float32, times the value scale
  };
  QSamples sample_q(const Tensor& observations, Key key, const Tree& weights) const;
  const Tree& value_weights() const;
  // Actions as the Q-network takes them: the distribution's sample dtype.
  Tensor model_actions(const Tensor& actions) const;
  // The slices of policy batch `index` and the margin they were laid out with.
  TimeStepBatch policy_slices(int64_t index, int64_t& margin) const;

  // The policy acts (PolicyAgent::act); while collecting, a value model with state (a
  // Normalize layer) also sees the observations (and, with q_value, the actions) in
  // Mode::collect, so that its statistics follow the data as the policy's do.
  PolicyOutput act(const Tensor& observations, Key key, double temperature) override;
  Metrics train_epoch() override;
  std::vector<CollectModel*> collect_models() override;
  std::vector<const Trainer*> trainers() const override;
  void export_state(std::map<std::string, Tensor>& tensors, io::ManifestFields& fields) const override;
  void import_state(const io::Checkpoint& checkpoint) override;

 private:
  // The value network's trainer: Trax's slice batches with a target network, or the agent's
  // own minibatches with rollout passes.
  TrainerOptions value_trainer_options();
  // One epoch of rollout passes (ActorCriticOptions::rollout_passes).
  Metrics train_rollout_epoch();
  void copy_shared_layers(Trainer& from, Trainer& to) const;
  void check_q_value_model() const;
  // The value model's output under `weights` (Mode::eval), times the value scale.
  Tensor run_value_model(const Stack& inputs, const Tree& weights) const;

  ActorCriticOptions ac_;
  double value_scale_ = 1.0;
  std::unique_ptr<Trainer> value_trainer_;
  Tree value_target_weights_;  // the frozen value network of the value targets
  // The value model's statistics as collection leaves them; none for a stateless value model.
  // The value trainer's state equals it after each epoch's training, so the checkpoint's
  // "value/state/..." holds it.
  std::unique_ptr<CollectModel> value_collect_;
};

// Defaults: Trax's (rl/learning/losses.h, loss_defaults).
struct A2COptions {
  double entropy_coeff = loss_defaults::entropy_coeff;  // >= 0
};
struct PPOOptions {
  double epsilon = loss_defaults::epsilon;              // in (0, 1)
  double entropy_coeff = loss_defaults::entropy_coeff;  // >= 0
  bool anneal_epsilon = false;  // epsilon times 1 - progress() in each epoch (SB3's linear clip
                                // range); needs AgentOptions::max_epochs or total_env_steps
};
struct AWROptions {
  double beta = loss_defaults::awr_beta;                    // > 0
  double w_max = loss_defaults::awr_w_max;                  // > 0
  double entropy_coeff = loss_defaults::awr_entropy_coeff;  // >= 0
};

struct SamplingAWROptions {
  double beta = loss_defaults::awr_beta;                    // > 0
  double w_max = loss_defaults::awr_w_max;                  // > 0
  double entropy_coeff = loss_defaults::awr_entropy_coeff;  // >= 0
  // Each state's sample weights divided by their mean: docs/algorithms.md, "SamplingAWR's batches".
  bool reweight = false;        // normalise each state's sample weights (see the top of this file)
};

// An actor-critic's options by name, so a call site reads which is which:
//   PPO ppo(task, {.agent = {...}, .policy = policy, .value = value, .algorithm = {.epsilon = 0.1}});
// (the positional constructors take the same four structs in this order).
template <class AlgorithmOptions>
struct ActorCriticSetup {
  AgentOptions agent;
  PolicyAgentOptions policy;
  ActorCriticOptions value;
  AlgorithmOptions algorithm;
};

class A2C final : public ActorCriticAgent {
 public:
  A2C(TaskPtr task, AgentOptions agent_options, PolicyAgentOptions policy_options, ActorCriticOptions options,
      A2COptions a2c = {});
  A2C(TaskPtr task, ActorCriticSetup<A2COptions> setup)
      : A2C(std::move(task), std::move(setup.agent), std::move(setup.policy), std::move(setup.value),
            setup.algorithm) {}
  std::string name() const override { return "A2C"; }
};

class PPO final : public ActorCriticAgent {
 public:
  PPO(TaskPtr task, AgentOptions agent_options, PolicyAgentOptions policy_options, ActorCriticOptions options,
      PPOOptions ppo = {});
  PPO(TaskPtr task, ActorCriticSetup<PPOOptions> setup)
      : PPO(std::move(task), std::move(setup.agent), std::move(setup.policy), std::move(setup.value),
            setup.algorithm) {}
  std::string name() const override { return "PPO"; }
  // The clip range the losses use now (epsilon, or annealed: PPOOptions::anneal_epsilon).
  double epsilon() const { return *epsilon_; }

 protected:
  Metrics train_epoch() override;

 private:
  PPO(TaskPtr task, AgentOptions agent_options, PolicyAgentOptions policy_options, ActorCriticOptions options,
      PPOOptions ppo, std::shared_ptr<double> epsilon);
  PPOOptions ppo_;
  std::shared_ptr<double> epsilon_;  // read by the loss and the clip-fraction metric
};

class AWR final : public ActorCriticAgent {
 public:
  AWR(TaskPtr task, AgentOptions agent_options, PolicyAgentOptions policy_options, ActorCriticOptions options,
      AWROptions awr = {});
  AWR(TaskPtr task, ActorCriticSetup<AWROptions> setup)
      : AWR(std::move(task), std::move(setup.agent), std::move(setup.policy), std::move(setup.value),
            setup.algorithm) {}
  std::string name() const override { return "AWR"; }
};

// AWR on actions sampled per state, weighted by their Q-value advantages; options.q_value is set
// to true. Design: docs/algorithms.md, "SamplingAWR's batches".
class SamplingAWR final : public ActorCriticAgent {
 public:
  SamplingAWR(TaskPtr task, AgentOptions agent_options, PolicyAgentOptions policy_options,
              ActorCriticOptions options, SamplingAWROptions awr = {});
  SamplingAWR(TaskPtr task, ActorCriticSetup<SamplingAWROptions> setup)
      : SamplingAWR(std::move(task), std::move(setup.agent), std::move(setup.policy), std::move(setup.value),
                    setup.algorithm) {}
  std::string name() const override { return "SamplingAWR"; }
  const SamplingAWROptions& sampling_awr_options() const { return awr_; }
  // (observations, sampled actions, advantages, old distribution inputs, mask), [n B, L', ...]:
  // row i * B + b is sample i of slice b, L' = L - margin.
  Batch policy_batch(int64_t index) const override;

 private:
  SamplingAWROptions awr_;
};

}  // namespace ctrax
