// Joint actor-critic agents (Trax's rl/actor_critic_joint.py): one network with a policy head and
// a value head, trained by one Trainer on one loss; ActorCriticJointAgent and its algorithms
// PPOJoint, A2CJoint and AWRJoint. For a policy and a value sharing a body (PolicyAndValue of
// rl/agents/policy_models.h), so that the value loss shapes the policy's features; not for separate
// networks with a frozen target and GAE-style estimators (rl/agents/actor_critic.h) or pure
// policy gradients (rl/agents/policy_agent.h).
//
// The joint model maps observations [B, L, ...] to (dist_inputs [B, L, D], values [B, L]), D =
// distribution().n_inputs(); acting uses the first output only, like PolicyAgent (Mode::collect
// while collecting, Mode::eval while evaluating). Batches of batch_size slices of max_slice_length
// steps come from the last epoch (PPOJoint, A2CJoint) or every stored one (AWRJoint) and feed the
// joint losses of rl/learning/losses.h. An epoch trains train_steps_per_epoch steps in
// supervised_evals_per_epoch chunks and returns "joint/<metric>" of the last evaluation (of the
// last step, with its learning_rate, gradients_l2 and weights_l2, when there is none): loss,
// entropy, approximate_kl, clip_fraction (PPOJoint only), log_prob_mean, advantage_mean and
// advantage_norm (of the raw advantage), preferred_move, value_loss (without its coefficient),
// explained_variance. Checkpoints add to Agent's the trainer under "joint/" (weights, state,
// optimizer slots, rng, step) and the collect state under "joint_collect_state/<path>".
// Design, batches, losses, differences from Trax: docs/algorithms.md, "Joint actor-critic".
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "../../layers/layer.h"
#include "../../optim/optimizer.h"
#include "../../optim/schedules.h"
#include "../../optim/trainer.h"
#include "agent.h"
#include "collect_model.h"
#include "../learning/distributions.h"
#include "../learning/losses.h"

namespace ctrax {

struct ActorCriticJointOptions {
  LayerPtr joint_model;                         // required: [B, L, ...] -> ([B, L, D], [B, L])
  // The action distribution; default create_distribution(action space) (as PolicyAgentOptions's:
  // e.g. Gaussian(shape, 0.5, LearnStd::separate) learns the std). It must fit the action space.
  // A state-independent std needs a model built by PolicyAndValue(distribution, body), as there.
  DistributionPtr distribution;
  // Default: Adam with Trax's multifactor schedule as its learning rate (the Trainer's default).
  std::shared_ptr<Optimizer> optimizer;
  int64_t batch_size = 64;                      // >= 1 slices per batch
  int64_t train_steps_per_epoch = 500;          // >= 0
  int64_t supervised_evals_per_epoch = 1;       // >= 0: evaluations per epoch (metrics only)
  int64_t supervised_eval_steps = 1;            // >= 1: batches per evaluation
  std::optional<int64_t> max_slice_length = 1;  // >= 1; none: whole trajectories
  // Normalise the advantages to zero mean and unit variance over each batch's real steps.
  // Default (none): the algorithm's Trax default, true for PPOJoint and A2CJoint, false for
  // AWRJoint (Trax's AWRJoint never normalises; its weights exp(A / beta) use A as it is).
  std::optional<bool> normalize_advantages;
  int64_t n_replay_epochs = 1;                  // >= 0: set on the task (RLTask::set_n_replay_epochs)
  // The loss's returns R: lambda-returns from the network's own values (no gradient), R = 0 after
  // a terminated step, R = V at the final observation of a truncated or cut piece. In [0, 1]; 1 is
  // the discounted return, bootstrapped at cuts (docs/algorithms.md, "Joint actor-critic").
  double return_lambda = 1.0;
  uint64_t seed = 0;                            // the initial weights and the trainer's rng
};

class ActorCriticJointAgent : public Agent {
 public:
  ~ActorCriticJointAgent() override;

  // "PPOJoint", "A2CJoint" or "AWRJoint".
  std::string name() const override { return name_; }

  const Distribution& distribution() const { return *distribution_; }
  Trainer& trainer() { return *trainer_; }
  const Trainer& trainer() const { return *trainer_; }
  const ActorCriticJointOptions& joint_options() const { return options_; }
  // The model's (dist_inputs [B, L, D], values [B, L]) for observations [B, L, ...] with the
  // current weights and collect state, in Mode::eval.
  Stack joint_outputs(const Tensor& observations) const;
  // Training batch `index`: (observations float32 [B, L, ...], returns, dones, rewards, actions,
  // old_log_probs, mask), old_log_probs = log pi_old(a|o) (uniform for the random trajectories).
  Batch batch(int64_t index) const;

 protected:
  // What a subclass adds: its name (for messages), its loss on the 8 joint inputs (made once the
  // base options are checked, so that errors come in the order of the options), and how it
  // draws batches.
  struct Algorithm {
    std::string name;                                                  // "PPOJoint"
    std::function<LayerPtr(DistributionPtr, bool normalize_advantages)> loss;
    bool on_policy = true;                 // batches from the last epoch only
    bool normalize_advantages = true;      // the default of ActorCriticJointOptions's
    std::optional<double> clip_epsilon;    // adds the clip_fraction metric
  };
  ActorCriticJointAgent(TaskPtr task, AgentOptions agent_options, ActorCriticJointOptions options,
                        Algorithm algorithm);

  PolicyOutput act(const Tensor& observations, Key key, double temperature) override;
  Metrics train_epoch() override;
  std::vector<CollectModel*> collect_models() override { return {collect_model_.get()}; }
  std::vector<const Trainer*> trainers() const override { return {trainer_.get()}; }
  void export_state(std::map<std::string, Tensor>& tensors, io::ManifestFields& fields) const override;
  void import_state(const io::Checkpoint& checkpoint) override;

 private:
  // The observation signature of batches: [batch, length, ...observation shape], float32.
  Signature observation_signature(int64_t batch_size, int64_t length) const;

  ActorCriticJointOptions options_;
  bool on_policy_;
  std::string name_;
  DistributionPtr distribution_;
  std::unique_ptr<Trainer> trainer_;
  std::unique_ptr<CollectModel> collect_model_;  // acts; keeps the Normalize statistics of collection
};

// Defaults: Trax's (rl/learning/losses.h, loss_defaults).
struct PPOJointOptions {
  double epsilon = loss_defaults::epsilon;                    // in (0, 1)
  double value_loss_coeff = loss_defaults::value_loss_coeff;  // >= 0
  double entropy_coeff = loss_defaults::entropy_coeff;        // >= 0
};
struct A2CJointOptions {
  double value_loss_coeff = loss_defaults::value_loss_coeff;  // >= 0
  double entropy_coeff = loss_defaults::entropy_coeff;        // >= 0
};
struct AWRJointOptions {
  double beta = loss_defaults::awr_beta;                      // > 0
  double w_max = loss_defaults::awr_w_max;                    // > 0 (+inf: no clipping)
  double value_loss_coeff = loss_defaults::value_loss_coeff;  // >= 0
  double entropy_coeff = loss_defaults::awr_entropy_coeff;    // >= 0
};

// A joint agent's options by name: PPOJoint ppo(task, {.agent = {...}, .joint = joint, .algorithm = {}}).
template <class AlgorithmOptions>
struct JointSetup {
  AgentOptions agent;
  ActorCriticJointOptions joint;
  AlgorithmOptions algorithm;
};

// Each constructor validates its options (ctrax::Error naming the option), builds the trainer and
// restores the checkpoint of AgentOptions::output_dir that restore_from chooses, if any.
class PPOJoint final : public ActorCriticJointAgent {
 public:
  PPOJoint(TaskPtr task, AgentOptions agent_options, ActorCriticJointOptions options, PPOJointOptions ppo = {});
  PPOJoint(TaskPtr task, JointSetup<PPOJointOptions> setup)
      : PPOJoint(std::move(task), std::move(setup.agent), std::move(setup.joint), setup.algorithm) {}
};

class A2CJoint final : public ActorCriticJointAgent {
 public:
  A2CJoint(TaskPtr task, AgentOptions agent_options, ActorCriticJointOptions options, A2CJointOptions a2c = {});
  A2CJoint(TaskPtr task, JointSetup<A2CJointOptions> setup)
      : A2CJoint(std::move(task), std::move(setup.agent), std::move(setup.joint), setup.algorithm) {}
};

class AWRJoint final : public ActorCriticJointAgent {
 public:
  AWRJoint(TaskPtr task, AgentOptions agent_options, ActorCriticJointOptions options, AWRJointOptions awr = {});
  AWRJoint(TaskPtr task, JointSetup<AWRJointOptions> setup)
      : AWRJoint(std::move(task), std::move(setup.agent), std::move(setup.joint), setup.algorithm) {}
};

}  // namespace ctrax
