// ActorCriticJointAgent, PPOJoint, A2CJoint and AWRJoint: see actor_critic_joint.h.
#include "actor_critic_joint.h"

#include "../learning/advantages.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "../../autograd/grad.h"
#include "../../base/error.h"
#include "../../tensor/ops.h"
#include "device_placement.h"
#include "../learning/losses.h"

namespace ctrax {

namespace {

std::map<std::string, LayerPtr> joint_metrics(const DistributionPtr& d, std::optional<double> clip_epsilon) {
  std::map<std::string, LayerPtr> m{{"entropy", JointEntropy(d)},
                                    {"approximate_kl", JointApproximateKL(d)},
                                    {"log_prob_mean", JointLogProbMean(d)},
                                    {"advantage_mean", JointAdvantageMean()},
                                    {"advantage_norm", JointAdvantageNorm()},
                                    {"preferred_move", JointPreferredMove(d)},
                                    {"value_loss", JointValueLoss()},
                                    {"explained_variance", ExplainedVariance()}};
  if (clip_epsilon) m["clip_fraction"] = JointClipFraction(d, *clip_epsilon);
  return m;
}

void check_coefficient(const char* agent, const char* name, double value) {
  CTRAX_REQUIRE(std::isfinite(value) && value >= 0, agent, ": ", name, " must be finite and >= 0, got ", value);
}

}  // namespace

ActorCriticJointAgent::ActorCriticJointAgent(TaskPtr task, AgentOptions agent_options, ActorCriticJointOptions options,
                                             Algorithm algorithm)
    : Agent(task, std::move(agent_options)),
      options_(std::move(options)),
      on_policy_(algorithm.on_policy),
      name_(std::move(algorithm.name)) {
  const ActorCriticJointOptions& o = options_;
  const char* name = name_.c_str();
  CTRAX_REQUIRE(o.joint_model != nullptr, name,
                ": joint_model is required (one network with two heads, e.g. PolicyAndValue(task.action_space(), body))");
  CTRAX_REQUIRE(o.joint_model->n_in() == 1 && o.joint_model->n_out() == 2, name, ": the joint model (",
                o.joint_model->name(), ") must take 1 input (observations) and give 2 outputs (distribution "
                "inputs, values), e.g. PolicyAndValue(task.action_space(), body); it takes ", o.joint_model->n_in(),
                " and gives ", o.joint_model->n_out(),
                ". A policy or value network alone has one output: separate networks go to the agents of "
                "rl/agents/actor_critic.h");
  CTRAX_REQUIRE(o.batch_size >= 1, name, ": batch_size must be >= 1, got ", o.batch_size);
  CTRAX_REQUIRE(o.train_steps_per_epoch >= 0, name, ": train_steps_per_epoch must be >= 0, got ",
                o.train_steps_per_epoch);
  CTRAX_REQUIRE(o.supervised_evals_per_epoch >= 0, name, ": supervised_evals_per_epoch must be >= 0, got ",
                o.supervised_evals_per_epoch);
  CTRAX_REQUIRE(o.supervised_eval_steps >= 1, name, ": supervised_eval_steps must be >= 1, got ",
                o.supervised_eval_steps);
  if (o.max_slice_length)
    CTRAX_REQUIRE(*o.max_slice_length >= 1, name, ": max_slice_length must be >= 1, got ", *o.max_slice_length);
  CTRAX_REQUIRE(o.n_replay_epochs >= 0, name, ": n_replay_epochs must be >= 0, got ", o.n_replay_epochs);
  distribution_ =
      distribution_for_space(task->action_space(), o.distribution, std::string(name) + " (" + task->env_name() + ")");
  CTRAX_REQUIRE(o.return_lambda >= 0.0 && o.return_lambda <= 1.0, name, ": return_lambda must be in [0, 1], got ",
                o.return_lambda);

  TrainerOptions t;
  t.compile = Agent::agent_options().compile;
  t.communicator = Agent::agent_options().communicator;
  t.model = o.joint_model;
  t.loss = algorithm.loss(distribution_, o.normalize_advantages.value_or(algorithm.normalize_advantages));
  t.metrics = joint_metrics(distribution_, algorithm.clip_epsilon);
  t.optimizer = o.optimizer;
  // Each tensor of a batch moves to the device once per step (the observations are there already).
  t.train_stream = [this](int64_t index) { return batch_to(batch(index), device()); };
  // (observations) -> (dist_inputs, values), then the 6 loss inputs of the batch: the loss sees
  // (dist_inputs, values, returns, dones, rewards, actions, old_log_probs, mask).
  t.n_loss_inputs = 6;
  t.seed = o.seed;
  t.restore = false;  // the agent's checkpoint holds the trainer (export_state)
  t.input_signature = observation_signature(o.batch_size, 1);
  trainer_ = std::make_unique<Trainer>(std::move(t));
  if (!device().is_cpu()) move_trainer_to(*trainer_, device(), name);
  collect_model_ = std::make_unique<CollectModel>(*trainer_, "joint_collect_state", name, device());

  // The heads must fit the distribution: check once on a zero observation.
  const Signature one = observation_signature(1, 1);
  const Stack probe = joint_outputs(zeros(one[0].shape, one[0].dtype));
  CTRAX_REQUIRE(probe[0].rank() == 3 && probe[0].shape() == Shape({1, 1, distribution_->n_inputs()}), name,
                ": the joint model (", o.joint_model->name(), ") gives distribution inputs ",
                to_string(probe[0].shape()), " for observations ", to_string(one[0].shape), "; the ",
                distribution_->name(), " of action space ", task->action_space(), " needs [1, 1, ",
                distribution_->n_inputs(), "]");
  CTRAX_REQUIRE(probe[1].shape() == Shape({1, 1}), name, ": the joint model (", o.joint_model->name(),
                ") gives values ", to_string(probe[1].shape()), " for observations ", to_string(one[0].shape),
                "; they must be [1, 1] (one value per step, the last axis dropped as Value() does)");

  // Checked above first, so that a bad option leaves the task as it was.
  this->task().set_n_replay_epochs(o.n_replay_epochs);
}

ActorCriticJointAgent::~ActorCriticJointAgent() = default;

Signature ActorCriticJointAgent::observation_signature(int64_t batch_size, int64_t length) const {
  std::vector<int64_t> dims{batch_size, length};
  for (int64_t d : task().observation_space().shape()) dims.push_back(d);
  // Observations reach the model in float32 whatever the space's dtype (batches convert).
  return {{Shape(dims), DType::float32}};
}

Stack ActorCriticJointAgent::joint_outputs(const Tensor& observations) const {
  return collect_model_->outputs(observations);
}

Batch ActorCriticJointAgent::batch(int64_t index) const {
  // Slices carry one entry more than they train on (margin 1): the final observation of a
  // truncated or cut piece, whose value the returns bootstrap from.
  TrajectoryBatchOptions b;
  b.pad_to_power_of_two = false;  // every loss is masked; padding only costs time
  b.batch_size = batch_share(options_.batch_size, "batch_size");
  if (on_policy_) b.epochs = {-1};
  if (options_.max_slice_length) b.max_slice_length = *options_.max_slice_length + 1;
  b.margin = 1;
  b.min_slice_length = 2;
  const TimeStepBatch t = task().trajectory_batch(b, RLTask::policy_batch_index(index));
  const int64_t n = t.reward.shape()[1] - 1;
  auto first = [n](const Tensor& x) { return x.slice(1, 0, n).contiguous(); };
  // Float32 observations cross to the device once; the values come back for the estimator.
  const Tensor observations = t.observation.to(DType::float32).to(device());
  Tensor old_log_probs, returns;
  {
    NoGradScope no_grad;
    old_log_probs = distribution_->log_prob(first(t.dist_inputs), first(t.action));
    // G = V + A_lambda (rl/learning/advantages.h's td_lambda): with return_lambda = 1 the discounted
    // rewards to the end of the piece plus gamma^k V(final observation) unless it terminated.
    const Tensor values = joint_outputs(observations)[1].to(Device::cpu());
    const AdvantageInputs in{t.reward, t.return_, values, t.done, t.mask, t.discount_mask};
    // Padding and final observations (mask 0) get 0, as the stored returns do.
    returns = ((td_lambda_advantages(in, task().gamma(), 1, options_.return_lambda) + first(values)) *
               first(t.mask).to(values.dtype()))
                  .to(DType::float32);
  }
  return Batch{first(observations), returns, first(t.done), first(t.reward), first(t.action),
               old_log_probs, first(t.mask)};
}

PolicyOutput ActorCriticJointAgent::act(const Tensor& observations, Key key, double temperature) {
  // The model runs on the device; the distribution inputs come back in one transfer and the
  // actions are sampled on the CPU (as PolicyAgent::act does).
  auto [actions, dist_inputs] =
      collect_model_->act_and_sample(observations, evaluating(), *distribution_, key, temperature);  // [N, D]
  return PolicyOutput{std::move(actions), std::move(dist_inputs)};
}

Metrics ActorCriticJointAgent::train_epoch() {
  const ActorCriticJointOptions& o = options_;
  collect_model_->to_trainer(*trainer_);
  trainer_->set_learning_rate_factor(learning_rate_factor());
  const Metrics out = train_in_chunks(*trainer_, o.train_steps_per_epoch, o.supervised_evals_per_epoch,
                                      o.supervised_eval_steps, "joint/");
  collect_model_->from_trainer(*trainer_);
  return out;
}

void ActorCriticJointAgent::export_state(std::map<std::string, Tensor>& tensors, io::ManifestFields& fields) const {
  trainer_->export_state(tensors, fields, "joint/");
  collect_model_->export_state(tensors);
}

void ActorCriticJointAgent::import_state(const io::Checkpoint& checkpoint) {
  Tree collect_state = collect_model_->checked_import(checkpoint);
  trainer_->import_state(checkpoint, "joint/");  // checks everything before changing anything
  collect_model_->set_state(std::move(collect_state));
}

// ---- The algorithms ---------------------------------------------------------------------------

PPOJoint::PPOJoint(TaskPtr task, AgentOptions agent_options, ActorCriticJointOptions options, PPOJointOptions ppo)
    : ActorCriticJointAgent(
          task, std::move(agent_options), std::move(options),
          {"PPOJoint",
           [ppo](DistributionPtr d, bool normalize) {
             CTRAX_REQUIRE(std::isfinite(ppo.epsilon) && ppo.epsilon > 0 && ppo.epsilon < 1,
                           "PPOJoint: epsilon must be in (0, 1), got ", ppo.epsilon);
             check_coefficient("PPOJoint", "value_loss_coeff", ppo.value_loss_coeff);
             check_coefficient("PPOJoint", "entropy_coeff", ppo.entropy_coeff);
             return PPOJointLoss(std::move(d), ppo.epsilon, ppo.value_loss_coeff, ppo.entropy_coeff, normalize);
           },
           /*on_policy=*/true, /*normalize_advantages=*/true, ppo.epsilon}) {
  restore();
}

A2CJoint::A2CJoint(TaskPtr task, AgentOptions agent_options, ActorCriticJointOptions options, A2CJointOptions a2c)
    : ActorCriticJointAgent(
          task, std::move(agent_options), std::move(options),
          {"A2CJoint",
           [a2c](DistributionPtr d, bool normalize) {
             check_coefficient("A2CJoint", "value_loss_coeff", a2c.value_loss_coeff);
             check_coefficient("A2CJoint", "entropy_coeff", a2c.entropy_coeff);
             return A2CJointLoss(std::move(d), a2c.value_loss_coeff, a2c.entropy_coeff, normalize);
           },
           /*on_policy=*/true, /*normalize_advantages=*/true, std::nullopt}) {
  restore();
}

AWRJoint::AWRJoint(TaskPtr task, AgentOptions agent_options, ActorCriticJointOptions options, AWRJointOptions awr)
    : ActorCriticJointAgent(
          task, std::move(agent_options), std::move(options),
          {"AWRJoint",
           [awr](DistributionPtr d, bool normalize) {
             CTRAX_REQUIRE(std::isfinite(awr.beta) && awr.beta > 0, "AWRJoint: beta must be finite and > 0, got ",
                           awr.beta);
             CTRAX_REQUIRE(!std::isnan(awr.w_max) && awr.w_max > 0, "AWRJoint: w_max must be > 0, got ", awr.w_max);
             check_coefficient("AWRJoint", "value_loss_coeff", awr.value_loss_coeff);
             check_coefficient("AWRJoint", "entropy_coeff", awr.entropy_coeff);
             return AWRJointLoss(std::move(d), awr.beta, awr.w_max, awr.value_loss_coeff, awr.entropy_coeff,
                                 normalize);
           },
           // Off-policy: AWR's weights need no ratio to the acting policy, so every stored
           // epoch serves (Trax's AWRJoint samples all of them).
           /*on_policy=*/false, /*normalize_advantages=*/false, std::nullopt}) {
  restore();
}

}  // namespace ctrax
