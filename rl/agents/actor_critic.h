// Actor-critic agents with separate policy and value networks (Trax's rl/actor_critic.py):
// ActorCriticAgent and its algorithms A2C, PPO, AWR and SamplingAWR.
//
// What it is for: training a policy with advantages A_t = G_t - V(o_t) from a learned value
// network, or with V(o_t) estimated from a learned Q-network (q_value, below).
// What it is not for: one network with two heads (rl/agents/actor_critic_joint.h).
//
// Value training (Trax's value_batches_stream). A value batch is value_batch_size slices of
// max_slice_length + 1 entries from every stored (replay) epoch, with margin 1: the extra entry
// is the observation a slice's last step bootstraps from. The targets are
//   G_t = (V_target(o_t) + A_t) / scale,   A = advantage_estimator(rewards, V_target, ...)
// where V_target is the value network's output times scale (scale = 1 / (1 - gamma) with
// scale_value_targets, else 1) with the weights frozen at the start of each value chunk (Trax's
// target network), and the loss is the mask-weighted L2 between V(o_t) and G_t. The
// value_train_steps_per_epoch steps run in value_evals_per_epoch chunks; after each, the frozen
// weights are synced.
//
// Policy training (Trax's AdvantageBasedActorCriticAgent). A policy batch is policy_batch_size
// slices of max_slice_length + margin entries, margin = 1 + added_policy_slice_length (Trax's
// margin is added_policy_slice_length alone; ctrax always keeps the one entry a truncated piece
// bootstraps from, and added_policy_slice_length adds look-ahead for td_k and the like), from
// the last epoch only when on_policy, else from every stored epoch. With V from the current
// value network (times scale):
//   A = advantage_estimator(rewards, returns, V, dones, mask, discount_mask)[:, :L - margin]
//   A <- factor * (A - mean(A)) / (std(A) + epsilon)   with advantage_normalization, over the
//                                                     batch's steps (mask 1) only
// and the batch is (observations, actions, A, old distribution inputs, mask), each cut to its
// first L - margin entries, for the algorithm's loss (rl/learning/losses.h):
//   A2C   -mean_m(log pi(a|o) A) - c_H mean_m(H)
//   PPO   -mean_m(min(rho A, clip(rho, 1 - eps, 1 + eps) A)) - c_H mean_m(H), rho = pi / pi_old
//   AWR   -mean_m(log pi(a|o) min(exp(A / beta), w_max)) - c_H mean_m(H)
// (mean_m: the mean over steps with mask 1).
//
// One training epoch (Trax's order): copy the collect model's state into the policy trainer;
// copy the first n_shared_layers layers of the policy to the value network; train the value
// network; copy the shared layers back; train the policy. Sharing layers needs both models to
// be Serial combinators whose first n_shared_layers layers have the same weight shapes.
//
// ---- Q-value baselines (Trax's q_value, q_value_aggregate_max, q_value_n_samples, vocab_size) --
// With q_value the value network is a Q-network: it takes (observations [B, L, ...], actions
// [B, L, ...event]) and gives Q(o, a) [B, L], e.g. ActionValue(body, is_discrete, vocab_size) of
// layers/models.h (Trax's Value(inject_actions=True)). Discrete (Categorical) and rank-1 Box
// (Gaussian) action spaces are supported; actions reach the model as the distribution's sample
// dtype (int64 ids, float32 vectors). A state's value is estimated from n = q_value_n_samples
// actions drawn from the current policy:
//   a_i ~ pi(. | o) at temperature 1, i < n   (distribution inputs from the policy network on o)
//   V(o) = max_i Q(o, a_i)  (q_value_aggregate_max)   or   mean_i Q(o, a_i)
// The draws use policy_sampling_key(index) / value_sampling_key(index), a pure function of the
// value seed and the batch index, so batches stay reproducible and resumable.
//   Value batches: (observations, the actions taken, targets, mask) with the targets above,
//     G_t = (V_target(o_t) + A_t) / scale, where V_target aggregates the frozen target network's
//     Q over sampled actions (max or mean, as chosen) and A = advantage_estimator(..., V_target):
//     with td_lambda(0), G_t = r_t + gamma V_target(o_{t+1}), an expected-SARSA target for
//     Q(o_t, a_t) (Q-learning over the sampled actions with max). A terminated step bootstraps
//     from nothing, a truncated or cut piece from V_target of its final observation.
//   Policy batches (A2C, PPO, AWR), Trax's Q-value baseline: the advantages are the estimator's,
//   as without q_value, over the baseline
//     V(o_t) = mean_i Q(o_t, a_i)   (current value network, times scale)
//   on every entry of the slices (look-ahead and final observations included), then normalised as
//   usual. The baseline is always the mean, an estimate of V^pi(o) = E_{a ~ pi} Q(o, a),
//   whatever q_value_aggregate_max says (Trax's policy batches aggregate with the mean too; the
//   max serves the value targets' bootstrap, where it gives Q-learning's optimism, while as a
//   baseline it would make most advantages negative).
//   With q_value_direct_advantages (not in Trax) the estimator is not used; instead
//     A_t = Q(o_t, a_t) - mean_i Q(o_t, a_i)
//   straight from the Q-network (the critic's own advantage: lower variance than the sampled
//   returns, biased by the critic's errors), on the steps only (0 where the mask is 0), then
//   normalised. The slices keep their look-ahead entries (unused) so that both kinds of batch
//   hold the same steps.
// Differences from Trax: Trax samples the actions from the distribution inputs stored at
// collection (the behaviour policy); ctrax samples from the current policy, so that V estimates
// the value of the policy being trained (which matters with replay: n_replay_epochs > 1, or
// on_policy = false), and SamplingAWR needs no importance correction. Trax passes vocab_size to
// the Value it builds; ctrax takes the Q-network ready-made, so vocab_size is the vocabulary the
// caller built it with: it must cover the Discrete space's actions (checked), and the model is
// probed with every action id at construction. Trax's later options (q_value_aggregate 'softmax'
// and 'logsumexp', q_value_temperature, q_value_normalization, sampling every discrete action
// when n equals the number of actions, offline) are not built.
//
// ---- SamplingAWR (Trax's SamplingAWR) ------------------------------------------------------
// AWR with q_value forced on (the given options' q_value is overridden, as Trax does). Its
// policy batch trains on the sampled actions instead of the taken ones: for the B slices of
// L - margin entries (cut as above), with the n actions a_i drawn for every entry,
//   A_i = Q(o, a_i) - mean_j Q(o, a_j)          (Trax: the mean, whatever the aggregate option)
// normalised over every sample of every step (mask 1) with advantage_normalization. Layout:
// the samples are stacked along the batch axis, sample-major: row i * B + b is sample i of slice
// b, so the batch is (observations [n B, L', ...] (slice b repeated n times), sampled actions
// [n B, L', ...event], A [n B, L'], old distribution inputs [n B, L', D], mask [n B, L']), with
// L' = L - margin, the old distribution inputs being the current policy's from which the
// actions were drawn (so approximate_kl measures one step's change). Loss: AWRLoss,
//   -mean_m(log pi(a_i | o) min(exp(A_i / beta), w_max)) - c_H mean_m(H).
// reweight: the weights of each state's samples are normalised to mean 1,
//   w_i = min(exp(A_i / beta), w_max),   w_i <- w_i / mean_j w_j,
// so that every state carries the same total weight and the loss is -mean over states of
// sum_i (w_i / sum_j w_j) log pi(a_i | o): a self-normalised AWR over the samples. It is done by
// handing AWRLoss A_i <- beta log(w_i / mean_j w_j), which (when unclipped) is the advantage over
// the soft baseline beta log mean_j exp(A_j / beta); AWRLoss's own clip at w_max then binds only
// when n > w_max. (Trax's reweight multiplies the mask by pi_new / pi_old, an importance
// correction for actions drawn from the behaviour policy; ctrax draws from the current policy,
// where that ratio is 1 at the batch's making, so the option is given this meaning instead.)
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
  int64_t n_shared_layers = 0;                 // >= 0
  int64_t added_policy_slice_length = 0;       // >= 0
  int64_t n_replay_epochs = 1;                 // >= 0: set on the task (RLTask::set_n_replay_epochs)
  bool scale_value_targets = false;
  bool on_policy = true;                       // policy batches from the last epoch only
  AdvantageEstimator advantage_estimator;      // default: td_lambda(0.95)
  bool advantage_normalization = true;
  double advantage_normalization_epsilon = 1e-5;  // > 0
  double advantage_normalization_factor = 1.0;
  // Q-value baselines (see the top of this file).
  bool q_value = false;                        // value_model is a Q-network (2 inputs)
  bool q_value_aggregate_max = true;           // value targets: V = max of Q over the sampled actions, else mean
  bool q_value_direct_advantages = false;      // policy advantages Q(o_t, a_t) - V(o_t), not the estimator's
  int64_t q_value_n_samples = 1;               // >= 1 actions sampled per state
  int64_t vocab_size = 2;                      // >= 1; with q_value on a Discrete(k) space, >= k
  uint64_t seed = 1;                           // the value network's initial weights, the sampled actions
  // Rollout passes (not in Trax: Stable-Baselines3's and CleanRL's PPO). With rollout_passes = n
  // each epoch trains on its own collection only: the value network runs once on every stored
  // observation, the advantage estimator once over whole pieces (rl/learning/rollout_buffer.h), then n
  // passes over all the steps in shuffled minibatches of minibatch_size rows, one policy step and
  // one value step per minibatch (value loss: mean (V - (V_old + A))^2, or with value_clip the
  // clipped loss max((V - G)^2, (V_old + clip(V - V_old, -c, c) - G)^2) of OpenAI's baselines).
  // The *_train_steps_per_epoch, *_batch_size, evals, value chunks and target network are
  // unused then; n_shared_layers, q_value and on_policy = false are refused.
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
  // Q-value models only (q_value; ctrax::Error otherwise). All with the current weights, times
  // the value scale, for observations [B, L, ...]:
  //   q_values        Q(o, a) [B, L] for actions [B, L, ...event] (any real dtype; converted)
  //   sample_actions  q_value_n_samples actions per entry from the current policy at temperature
  //                   1: [n, B, L, ...event]; sample i of every entry uses element i of one draw
  //                   from `key` over [n, B, L]
  //   state_values    max_i (aggregate_max) or mean_i of Q(o, a_i) over sample_actions(o, key): [B, L]
  Tensor q_values(const Tensor& observations, const Tensor& actions) const;
  Tensor sample_actions(const Tensor& observations, Key key) const;
  Tensor state_values(const Tensor& observations, Key key, bool aggregate_max) const;
  // The keys of the actions sampled for policy batch `index` and value batch `index`.
  Key policy_sampling_key(int64_t index) const;
  Key value_sampling_key(int64_t index) const;
  // Policy batch `index` (see the top of this file): (observations, actions, advantages, old
  // distribution inputs, mask); value batch `index`: (observations, targets, weights), or with
  // q_value (observations, actions, targets, weights).
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
  void export_state(std::map<std::string, Tensor>& tensors, io::ManifestFields& fields) const override;
  void import_state(const io::Checkpoint& checkpoint) override;

 private:
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

// Trains the policy on actions sampled per state, weighted by their Q-value advantages (see the
// top of this file). options.q_value is set to true.
class SamplingAWR final : public ActorCriticAgent {
 public:
  SamplingAWR(TaskPtr task, AgentOptions agent_options, PolicyAgentOptions policy_options,
              ActorCriticOptions options, SamplingAWROptions awr = {});
  SamplingAWR(TaskPtr task, ActorCriticSetup<SamplingAWROptions> setup)
      : SamplingAWR(std::move(task), std::move(setup.agent), std::move(setup.policy), std::move(setup.value),
                    setup.algorithm) {}
  std::string name() const override { return "SamplingAWR"; }
  const SamplingAWROptions& sampling_awr_options() const { return awr_; }
  // (observations, sampled actions, advantages, old distribution inputs, mask), [n B, L', ...].
  Batch policy_batch(int64_t index) const override;

 private:
  SamplingAWROptions awr_;
};

}  // namespace ctrax
