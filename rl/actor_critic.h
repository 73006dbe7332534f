// Actor-critic agents with separate policy and value networks (Trax's rl/actor_critic.py):
// ActorCriticAgent and its algorithms A2C, PPO and AWR.
//
// What it is for: training a policy with advantages A_t = G_t - V(o_t) from a learned value
// network. What it is not for: one network with two heads (rl/actor_critic_joint.h).
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
// first L - margin entries, for the algorithm's loss (rl/losses.h):
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
// Not yet built: Q-value baselines (Trax's q_value, q_value_aggregate_max, q_value_n_samples,
// vocab_size) and SamplingAWR, which needs them.
#pragma once

#include <cstdint>
#include <memory>

#include "advantages.h"
#include "policy_agent.h"

namespace ctrax {

struct ActorCriticOptions {
  LayerPtr value_model;                        // required: [B, L, ...] -> [B, L], e.g. Value(body)
  std::shared_ptr<Optimizer> value_optimizer;  // default: Adam with Trax's defaults
  Schedule value_lr_schedule;                  // default: multifactor_schedule()
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
  uint64_t seed = 1;                           // the value network's initial weights
};

class ActorCriticAgent : public PolicyAgent {
 public:
  ~ActorCriticAgent() override;

  Trainer& value_trainer() { return *value_trainer_; }
  const ActorCriticOptions& actor_critic_options() const { return ac_; }
  // V(o) times the value scale for observations [B, L, ...] with the current weights.
  Tensor values(const Tensor& observations) const;
  // Policy batch `index` (see the top of this file): (observations, actions, advantages, old
  // distribution inputs, mask); value batch `index`: (observations, targets, weights).
  Batch policy_batch(int64_t index) const;
  Batch value_batch(int64_t index) const;

 protected:
  ActorCriticAgent(RLTask& task, AgentOptions agent_options, PolicyAgentOptions policy_options,
                   ActorCriticOptions options, LayerPtr policy_loss, std::map<std::string, LayerPtr> policy_metrics);

  Metrics train_epoch() override;
  void export_state(std::map<std::string, Tensor>& tensors, io::ManifestFields& fields) const override;
  void import_state(const io::Checkpoint& checkpoint) override;

 private:
  void copy_shared_layers(Trainer& from, Trainer& to) const;

  ActorCriticOptions ac_;
  double value_scale_ = 1.0;
  std::unique_ptr<Trainer> value_trainer_;
  Tree value_target_weights_;  // the frozen value network of the value targets
};

struct A2COptions {
  double entropy_coeff = 0.01;  // >= 0
};
struct PPOOptions {
  double epsilon = 0.2;         // in (0, 1)
  double entropy_coeff = 0.01;  // >= 0
};
struct AWROptions {
  double beta = 1.0;            // > 0
  double w_max = 20.0;          // > 0
  double entropy_coeff = 0.0;   // >= 0
};

class A2C final : public ActorCriticAgent {
 public:
  A2C(RLTask& task, AgentOptions agent_options, PolicyAgentOptions policy_options, ActorCriticOptions options,
      A2COptions a2c = {});
  std::string name() const override { return "A2C"; }
};

class PPO final : public ActorCriticAgent {
 public:
  PPO(RLTask& task, AgentOptions agent_options, PolicyAgentOptions policy_options, ActorCriticOptions options,
      PPOOptions ppo = {});
  std::string name() const override { return "PPO"; }
};

class AWR final : public ActorCriticAgent {
 public:
  AWR(RLTask& task, AgentOptions agent_options, PolicyAgentOptions policy_options, ActorCriticOptions options,
      AWROptions awr = {});
  std::string name() const override { return "AWR"; }
};

}  // namespace ctrax
