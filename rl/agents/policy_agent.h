// PolicyAgent: an Agent with a policy network trained by a supervised Trainer (Trax's
// PolicyAgent / PolicyTrainer), and PolicyGradient, REINFORCE on top of it (Trax's PolicyGradient
// and ExamplePolicyTrainer). It holds what the policy-based trainers share: the policy network, its
// distribution, acting, and the policy Trainer (optim/trainer.h) with its optimizer and batches.
// Not for value functions (rl/agents/actor_critic.h) or one network with two heads
// (rl/agents/actor_critic_joint.h).
//
// The policy model maps observations [B, L, ...] to distribution inputs [B, L, D], D =
// distribution().n_inputs() (e.g. Policy(task.action_space(), body), rl/agents/policy_models.h).
// Acting runs it on the N current observations as [N, 1, ...] (one observation, no history) in
// Mode::collect, which updates Normalize statistics; evaluation runs in Mode::eval. The collect
// state is copied into the policy Trainer before each training epoch.
// Design, REINFORCE's loss, differences from Trax: docs/algorithms.md, "PolicyGradient".
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "../../layers/layer.h"
#include "../../optim/optimizer.h"
#include "../../optim/schedules.h"
#include "../../optim/trainer.h"
#include "agent.h"
#include "collect_model.h"
#include "../learning/distributions.h"

namespace ctrax {

struct PolicyAgentOptions {
  LayerPtr policy_model;                        // required: [B, L, ...] -> [B, L, D]
  // The action distribution; default create_distribution(action space): Categorical for
  // discrete spaces, Gaussian with a fixed std of 1 for Box spaces. Give e.g.
  // Gaussian(shape, 0.5, LearnStd::separate) to learn the std. It must fit the action space. With
  // LearnStd::state_independent the model's last n_state_independent_inputs() outputs must be a
  // learned vector the same for every state: Policy(distribution, body) builds it so
  // (LearnedColumns); a hand-made Dense head of n_inputs() outputs would make the log std a
  // function of the state, which nothing here can tell from the outputs' width.
  DistributionPtr distribution;
  // Default: Adam with Trax's multifactor schedule as its learning rate (the Trainer's default).
  std::shared_ptr<Optimizer> policy_optimizer;
  int64_t policy_batch_size = 64;               // >= 1 slices per batch
  int64_t policy_train_steps_per_epoch = 500;   // >= 0
  int64_t policy_evals_per_epoch = 1;           // >= 0: evaluations of the policy loss per epoch (metrics only)
  int64_t policy_eval_steps = 1;                // >= 1: batches per such evaluation
  std::optional<int64_t> max_slice_length = 1;  // >= 1; none: whole trajectories
  uint64_t seed = 0;                            // the policy's initial weights and sampling
};

// options.distribution, or create_distribution(task.action_space()) when unset; throws
// ctrax::Error when the given one does not fit the action space (kind, number of categories,
// event shape).
DistributionPtr policy_distribution(const RLTask& task, const PolicyAgentOptions& options);
// The same for a task pointer (a subclass's initialiser list, before Agent checks it): throws
// ctrax::Error for a null task.
DistributionPtr policy_distribution(const TaskPtr& task, const PolicyAgentOptions& options);

class PolicyAgent : public Agent {
 public:
  ~PolicyAgent() override;

  const Distribution& distribution() const { return *distribution_; }
  Trainer& policy_trainer() { return *policy_trainer_; }
  const PolicyAgentOptions& policy_options() const { return policy_options_; }
  // Distribution inputs [B, L, D] of the current policy for observations [B, L, ...] (Mode::eval),
  // on the agent's device.
  Tensor policy_outputs(const Tensor& observations) const;

 protected:
  // `loss` takes (distribution inputs, n_loss_inputs batch entries...); `metrics` the same.
  // `batch` makes policy batch `index` (observations, loss inputs...).
  PolicyAgent(TaskPtr task, AgentOptions agent_options, PolicyAgentOptions policy_options, LayerPtr loss,
              std::map<std::string, LayerPtr> metrics, int n_loss_inputs, BatchStream batch);

  // Actions and distribution inputs on the CPU (the policy runs on the device).
  PolicyOutput act(const Tensor& observations, Key key, double temperature) override;
  std::vector<CollectModel*> collect_models() override { return {collect_model_.get()}; }
  std::vector<const Trainer*> trainers() const override { return {policy_trainer_.get()}; }
  // Observations as the networks take them: float32 on the agent's device (converted on the
  // host, then one transfer; none when they are there already).
  Tensor observations_on_device(const Tensor& observations) const;
  // Copies the collect state into the trainer, then trains policy_train_steps_per_epoch steps
  // in policy_evals_per_epoch chunks, evaluating after each; returns "policy/<metric>" values
  // of the last evaluation (or of the last step without evaluations).
  Metrics train_policy();
  // The two ends of any policy training: the collect model's statistics into the trainer and
  // the learning-rate factor (Agent::learning_rate_factor) set; then the trainer's statistics
  // back into the collect model. train_policy calls both.
  void prepare_policy_training();
  void finish_policy_training();
  void export_state(std::map<std::string, Tensor>& tensors, io::ManifestFields& fields) const override;
  void import_state(const io::Checkpoint& checkpoint) override;
  // The observation signature of policy batches: [batch, length, ...observation shape].
  Signature policy_signature(int64_t batch_size, int64_t length) const;

 private:
  PolicyAgentOptions policy_options_;
  DistributionPtr distribution_;
  std::unique_ptr<Trainer> policy_trainer_;
  std::unique_ptr<CollectModel> collect_model_;  // acts; keeps the Normalize statistics of collection
};

// PolicyGradient's options by name: PolicyGradient pg(task, {.agent = {...}, .policy = policy}).
struct PolicyGradientSetup {
  AgentOptions agent;
  PolicyAgentOptions policy;
};

// REINFORCE: loss -sum_t m_t A_t log pi(a_t|o_t) / sum_t m_t on slices of the last collected
// epoch, A the normalised returns.
class PolicyGradient final : public PolicyAgent {
 public:
  PolicyGradient(TaskPtr task, AgentOptions agent_options, PolicyAgentOptions policy_options);
  PolicyGradient(TaskPtr task, PolicyGradientSetup setup)
      : PolicyGradient(std::move(task), std::move(setup.agent), std::move(setup.policy)) {}
  std::string name() const override { return "PolicyGradient"; }

 protected:
  Metrics train_epoch() override { return train_policy(); }

 private:
  // (observations, actions, weights m_t A_t / sum_t m_t), A_t = (R_t - mean(R)) / (std(R) + 1e-5)
  // with the mean and std over the batch's real steps (m = 1).
  Batch policy_batch(int64_t index) const;
};

}  // namespace ctrax
