// PolicyAgent and PolicyGradient: see policy_agent.h.
#include "policy_agent.h"

#include <cmath>
#include <utility>

#include "../../autograd/grad.h"
#include "../../base/error.h"
#include "../../tensor/ops.h"
#include "device_placement.h"

namespace ctrax {

DistributionPtr policy_distribution(const RLTask& task, const PolicyAgentOptions& options) {
  return distribution_for_space(task.action_space(), options.distribution, "PolicyAgent (" + task.env_name() + ")");
}

DistributionPtr policy_distribution(const TaskPtr& task, const PolicyAgentOptions& options) {
  CTRAX_REQUIRE(task != nullptr, "PolicyAgent: the task is null (build it with std::make_shared<RLTask>(...))");
  return policy_distribution(*task, options);
}

PolicyAgent::PolicyAgent(TaskPtr task, AgentOptions agent_options, PolicyAgentOptions policy_options, LayerPtr loss,
                         std::map<std::string, LayerPtr> metrics, int n_loss_inputs, BatchStream batch)
    : Agent(task, std::move(agent_options)), policy_options_(std::move(policy_options)) {
  const PolicyAgentOptions& o = policy_options_;
  CTRAX_REQUIRE(o.policy_model != nullptr, "PolicyAgent: policy_model is required (e.g. Policy(task.action_space(), body))");
  CTRAX_REQUIRE(o.policy_model->n_in() == 1 && o.policy_model->n_out() == 1, "PolicyAgent: the policy model (",
                o.policy_model->name(), ") must take 1 input and give 1 output, it takes ", o.policy_model->n_in(),
                " and gives ", o.policy_model->n_out());
  CTRAX_REQUIRE(o.policy_batch_size >= 1, "PolicyAgent: policy_batch_size must be >= 1, got ", o.policy_batch_size);
  CTRAX_REQUIRE(o.policy_train_steps_per_epoch >= 0, "PolicyAgent: policy_train_steps_per_epoch must be >= 0, got ",
                o.policy_train_steps_per_epoch);
  CTRAX_REQUIRE(o.policy_evals_per_epoch >= 0, "PolicyAgent: policy_evals_per_epoch must be >= 0, got ",
                o.policy_evals_per_epoch);
  CTRAX_REQUIRE(o.policy_eval_steps >= 1, "PolicyAgent: policy_eval_steps must be >= 1, got ", o.policy_eval_steps);
  if (o.max_slice_length)
    CTRAX_REQUIRE(*o.max_slice_length >= 1, "PolicyAgent: max_slice_length must be >= 1, got ", *o.max_slice_length);
  distribution_ = policy_distribution(task, o);

  TrainerOptions t;
  t.compile = Agent::agent_options().compile;
  t.communicator = Agent::agent_options().communicator;
  t.model = o.policy_model;
  t.loss = std::move(loss);
  t.metrics = std::move(metrics);
  t.optimizer = o.policy_optimizer;
  // Batches are made on the CPU (observations may already be on the device); each tensor moves
  // to the device once per step.
  t.train_stream = [this, batch = std::move(batch)](int64_t index) { return batch_to(batch(index), device()); };
  t.n_loss_inputs = n_loss_inputs;
  t.seed = o.seed;
  t.restore = false;  // the agent's checkpoint holds the trainer (export_state)
  t.input_signature = policy_signature(o.policy_batch_size, 1);
  policy_trainer_ = std::make_unique<Trainer>(std::move(t));
  if (!device().is_cpu()) move_trainer_to(*policy_trainer_, device(), "PolicyAgent (policy network)");
  collect_model_ = std::make_unique<CollectModel>(*policy_trainer_, "policy_collect_state", "PolicyAgent", device());

  // The model must give the distribution's inputs: check once on a zero observation.
  const Signature one = policy_signature(1, 1);
  const Tensor probe = policy_outputs(zeros(one[0].shape, one[0].dtype));
  CTRAX_REQUIRE(probe.rank() == 3 && probe.shape()[2] == distribution_->n_inputs(), "PolicyAgent: the policy model (",
                o.policy_model->name(), ") gives ", to_string(probe.shape()), " for observations ",
                to_string(one[0].shape), "; the ", distribution_->name(), " of action space ", task->action_space(),
                " needs [1, 1, ", distribution_->n_inputs(), "]");
}

PolicyAgent::~PolicyAgent() = default;

Signature PolicyAgent::policy_signature(int64_t batch_size, int64_t length) const {
  const Space& space = task().observation_space();
  std::vector<int64_t> dims{batch_size, length};
  for (int64_t d : space.shape()) dims.push_back(d);
  // Observations reach the model in float32 whatever the space's dtype (the task stores the
  // environment's dtype; batches convert).
  return {{Shape(dims), DType::float32}};
}

Tensor PolicyAgent::policy_outputs(const Tensor& observations) const {
  return collect_model_->outputs(observations)[0];
}

Tensor PolicyAgent::observations_on_device(const Tensor& observations) const {
  if (observations.dtype() == DType::float32 && observations.device() == device()) return observations;
  return observations.to(DType::float32).to(device());
}

PolicyOutput PolicyAgent::act(const Tensor& observations, Key key, double temperature) {
  // The policy runs on the device; its outputs come back in one transfer and the actions are
  // sampled on the CPU, where the environments and the trajectories need them (and where the
  // random numbers are those of a CPU run).
  auto [actions, dist_inputs] =
      collect_model_->act_and_sample(observations, evaluating(), *distribution_, key, temperature);  // [N, D]
  return PolicyOutput{std::move(actions), std::move(dist_inputs)};
}

void PolicyAgent::prepare_policy_training() {
  collect_model_->to_trainer(*policy_trainer_);
  policy_trainer_->set_learning_rate_factor(learning_rate_factor());
}

void PolicyAgent::finish_policy_training() { collect_model_->from_trainer(*policy_trainer_); }

Metrics PolicyAgent::train_policy() {
  const PolicyAgentOptions& o = policy_options_;
  prepare_policy_training();
  const Metrics out = train_in_chunks(*policy_trainer_, o.policy_train_steps_per_epoch, o.policy_evals_per_epoch,
                                      o.policy_eval_steps, "policy/");
  finish_policy_training();
  return out;
}

void PolicyAgent::export_state(std::map<std::string, Tensor>& tensors, io::ManifestFields& fields) const {
  policy_trainer_->export_state(tensors, fields, "policy/");
  collect_model_->export_state(tensors);
}

void PolicyAgent::import_state(const io::Checkpoint& checkpoint) {
  Tree collect_state = collect_model_->checked_import(checkpoint);
  policy_trainer_->import_state(checkpoint, "policy/");  // checks everything before changing anything
  collect_model_->set_state(std::move(collect_state));
}

// ---- PolicyGradient ---------------------------------------------------------------------------

PolicyGradient::PolicyGradient(TaskPtr task, AgentOptions agent_options, PolicyAgentOptions policy_options)
    : PolicyAgent(task, std::move(agent_options), policy_options,
                  LogLoss(policy_distribution(task, policy_options)), {}, 2,
                  [this](int64_t index) { return policy_batch(index); }) {
  restore();
}

Batch PolicyGradient::policy_batch(int64_t index) const {
  TrajectoryBatchOptions b;
  b.pad_to_power_of_two = false;  // every loss is masked; padding only costs time
  b.batch_size = batch_share(policy_options().policy_batch_size, "policy_batch_size");
  b.epochs = {-1};  // on-policy: the last collection only
  b.max_slice_length = policy_options().max_slice_length;
  const TimeStepBatch batch =
      task().trajectory_batch(b, RLTask::policy_batch_index(index));
  const std::vector<double> returns = batch.return_.to_vector<double>();
  const std::vector<double> mask = batch.mask.to_vector<double>();
  double count = 0, sum = 0;
  for (size_t i = 0; i < returns.size(); ++i) {
    count += mask[i];
    sum += mask[i] * returns[i];
  }
  const double mean = count > 0 ? sum / count : 0.0;
  double square = 0;
  for (size_t i = 0; i < returns.size(); ++i) square += mask[i] * (returns[i] - mean) * (returns[i] - mean);
  const double std = count > 0 ? std::sqrt(square / count) : 0.0;
  std::vector<float> weights(returns.size());
  for (size_t i = 0; i < returns.size(); ++i)
    weights[i] = count > 0 ? static_cast<float>(mask[i] * (returns[i] - mean) / (std + 1e-5) / count) : 0.0f;
  return Batch{batch.observation.to(DType::float32), batch.action, from_vector(weights, batch.reward.shape())};
}

}  // namespace ctrax
