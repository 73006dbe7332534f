// Joint actor-critic agents: one network with a policy head and a value head, trained by one
// Trainer on one loss (Trax's rl/actor_critic_joint.py): ActorCriticJointAgent and its
// algorithms PPOJoint, A2CJoint and AWRJoint.
//
// What it is for: actor-critic training where the policy and the value function share a body
// (PolicyAndValue(n, body) of layers/models.h), so the value loss shapes the features the policy
// uses. What it is not for: separate policy and value networks with a frozen target network and
// GAE-style advantage estimators (rl/agents/actor_critic.h), or pure policy gradients
// (rl/agents/policy_agent.h).
//
// The joint model maps observations [B, L, ...] to (dist_inputs [B, L, D], values [B, L]) with
// D = distribution().n_inputs() (ActorCriticJointOptions::distribution, by default
// create_distribution of the task's action space). Acting runs it on [N, 1, ...] like
// PolicyAgent: Mode::collect while collecting for training (a Normalize layer updates its
// statistics; the state is kept between calls), Mode::eval while the agent evaluates; only the
// first output (the distribution inputs) is used.
//
// Batches (Trax's batches_stream). Batch i is batch_size slices of max_slice_length steps
// (laid out with margin 1: one entry more, the final observation a cut piece bootstraps from,
// which the batch then drops) drawn by RLTask::trajectory_batch with index
// RLTask::policy_batch_index(i), from the last collected epoch for the on-policy algorithms
// (PPOJoint, A2CJoint: Trax's epochs=[-1]) and from every stored epoch for AWRJoint (the task
// keeps n_replay_epochs + 1 of them; the constructor sets n_replay_epochs on the task). It is
//   (observations float32 [B, L, ...], returns R, dones d, rewards r, actions, old_log_probs, mask)
// with old_log_probs = log pi_old(a | o), pi_old the stored distribution inputs of the policy
// that acted (zeros, the uniform Categorical, for the random initial trajectories), computed
// without gradient. The model consumes the observations and pushes (dist_inputs, values), so the
// loss sees the 8 inputs of rl/learning/losses.h's joint losses (Trax's stack wiring):
//   A = where(d, r, R) - where(d, 0, sg(V))   (then normalised when normalize_advantages)
//   PPOJoint  -mean_m(min(rho A, clip(rho, 1 - eps, 1 + eps) A)) + c_v mean_m((R - V)^2) - c_e mean_m(H)
//   A2CJoint  -mean_m(log pi(a|o) A)                            + c_v mean_m((R - V)^2) - c_e mean_m(H)
//   AWRJoint  -mean_m(log pi(a|o) min(exp(A / beta), w_max))     + c_v mean_m((R - V)^2) - c_e mean_m(H)
// with rho = exp(log pi(a|o) - old_log_probs), m the mask (see rl/learning/losses.h for how ctrax's masks
// differ from Trax's). R is the lambda-return of return_lambda below: with the default 1, the
// discounted return of the stored piece (rl/learning/trajectory.h) plus, for a piece cut by a time limit
// or by the collector, the tail gamma^k V(o_T) from the network's current values.
//
// One training epoch: copy the collect model's state into the trainer; train
// train_steps_per_epoch steps in supervised_evals_per_epoch chunks (spread as evenly as
// possible), evaluating supervised_eval_steps batches after each chunk (metrics only); the
// result is "joint/<metric>" of the last evaluation, or of the last step when
// supervised_evals_per_epoch is 0 (which adds the step's learning_rate, gradients_l2 and
// weights_l2). Metrics: loss, entropy, approximate_kl, clip_fraction (PPOJoint only),
// log_prob_mean, advantage_mean, advantage_norm (both of the raw advantage), preferred_move,
// value_loss (without its coefficient), explained_variance.
//
// Checkpoints (Agent's output directory): this class adds the trainer under "joint/" (weights,
// state, optimizer slots, rng, step) and the collect state under "joint_collect_state/<path>";
// the rest (epoch, returns, and whatever of the task is saved) is Agent's (rl/agents/agent.h).
//
// Trax's joint constructor also takes n_trajectories_per_epoch and output_dir: here they are
// AgentOptions::n_trajectories_per_epoch (or n_interactions_per_epoch) and
// AgentOptions::output_dir, next to the eval options Trax's joint agents lack.
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
  // The returns R of the loss are lambda-returns from the network's own values (no gradient):
  // R_t = r_t + gamma ((1 - lambda) V_{t+1} + lambda R_{t+1}), R = 0 after a terminated step and
  // R = V at the final observation of a truncated or cut piece. lambda = 1 (the default) is
  // Trax's discounted return, except that a piece that did not terminate bootstraps from the
  // value of its final observation (Gymnasium's truncation semantics; Trax's joint agents use
  // the raw discounted rewards, which undervalues every step near a cut). In [0, 1].
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
  // Training batch `index` (see the top of this file): (observations, returns, dones, rewards,
  // actions, old_log_probs, mask).
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
// restores the newest checkpoint of AgentOptions::output_dir, if any.
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
