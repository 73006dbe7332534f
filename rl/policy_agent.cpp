// PolicyAgent and PolicyGradient: see policy_agent.h.
#include "policy_agent.h"

#include <cmath>
#include <utility>

#include "../autograd/grad.h"
#include "../kernels/check.h"
#include "../tensor/ops.h"

namespace ctrax {

DistributionPtr policy_distribution(const RLTask& task, const PolicyAgentOptions& options) {
  return distribution_for_space(task.action_space(), options.distribution, "PolicyAgent (" + task.env_name() + ")");
}

PolicyAgent::PolicyAgent(RLTask& task, AgentOptions agent_options, PolicyAgentOptions policy_options, LayerPtr loss,
                         std::map<std::string, LayerPtr> metrics, int n_loss_inputs, BatchStream batch)
    : Agent(task, std::move(agent_options)), policy_options_(std::move(policy_options)) {
  const PolicyAgentOptions& o = policy_options_;
  CTRAX_REQUIRE(o.policy_model != nullptr, "PolicyAgent: policy_model is required (e.g. Policy(n_inputs, body))");
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
  t.model = o.policy_model;
  t.loss = std::move(loss);
  t.metrics = std::move(metrics);
  t.optimizer = o.policy_optimizer;
  t.lr_schedule = o.policy_lr_schedule;
  t.train_stream = std::move(batch);
  t.n_loss_inputs = n_loss_inputs;
  t.seed = o.seed;
  t.restore = false;  // the agent's checkpoint holds the trainer (export_state)
  t.input_signature = policy_signature(o.policy_batch_size, 1);
  policy_trainer_ = std::make_unique<Trainer>(std::move(t));
  collect_state_ = policy_trainer_->state();

  // The model must give the distribution's inputs: check once on a zero observation.
  const Signature one = policy_signature(1, 1);
  const Tensor probe = policy_outputs(zeros(one[0].shape, one[0].dtype));
  CTRAX_REQUIRE(probe.rank() == 3 && probe.shape()[2] == distribution_->n_inputs(), "PolicyAgent: the policy model (",
                o.policy_model->name(), ") gives ", to_string(probe.shape()), " for observations ",
                to_string(one[0].shape), "; the ", distribution_->name(), " of action space ", task.action_space(),
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
  NoGradScope no_grad;
  return policy_trainer_->model()
      .apply({observations.to(DType::float32)}, policy_trainer_->weights(), collect_state_, Key(), Mode::eval)
      .outputs[0];
}

PolicyOutput PolicyAgent::act(const Tensor& observations, Key key, double temperature) {
  NoGradScope no_grad;
  const int64_t n = observations.shape()[0];
  std::vector<int64_t> dims{n, 1};
  for (int64_t i = 1; i < observations.rank(); ++i) dims.push_back(observations.shape()[i]);
  const Tensor input = observations.to(DType::float32).reshape(Shape(dims));
  // Training collection updates the model's statistics (Mode::collect); evaluation does not.
  const Mode mode = evaluating() ? Mode::eval : Mode::collect;
  LayerResult r =
      policy_trainer_->model().apply({input}, policy_trainer_->weights(), collect_state_, Key(), mode);
  if (mode == Mode::collect) collect_state_ = std::move(r.state);
  const Tensor dist_inputs = r.outputs[0].select(1, 0).contiguous();  // [N, D]
  return PolicyOutput{distribution_->sample(dist_inputs, key, temperature), dist_inputs};
}

Metrics PolicyAgent::train_policy() {
  const PolicyAgentOptions& o = policy_options_;
  policy_trainer_->set_state(collect_state_);
  Metrics out;
  if (o.policy_train_steps_per_epoch == 0) return out;
  const int64_t chunks = std::max<int64_t>(o.policy_evals_per_epoch, 1);
  Metrics train, eval;
  for (int64_t c = 0; c < chunks; ++c) {
    // Steps spread over the chunks as evenly as possible, the remainder in the first ones.
    const int64_t steps = o.policy_train_steps_per_epoch / chunks + (c < o.policy_train_steps_per_epoch % chunks);
    for (int64_t s = 0; s < steps; ++s) train = policy_trainer_->train_step();
    if (o.policy_evals_per_epoch > 0) eval = policy_trainer_->evaluate(o.policy_eval_steps);
  }
  // Training does not change the statistics (Mode::train), but keep the two identical.
  collect_state_ = policy_trainer_->state();
  // The last training step's row (loss, metrics, learning rate, norms), with the loss and
  // metrics of the last evaluation in place of the step's where there was one.
  for (const auto& [name, value] : train) out["policy/" + name] = value;
  for (const auto& [name, value] : eval) out["policy/" + name] = value;
  return out;
}

void PolicyAgent::export_state(std::map<std::string, Tensor>& tensors, io::ManifestFields& fields) const {
  policy_trainer_->export_state(tensors, fields, "policy/");
  Tree::List state_leaves;
  const std::vector<Tensor> leaves = collect_state_.leaves();
  const std::vector<std::string> paths = collect_state_.paths();
  for (size_t i = 0; i < leaves.size(); ++i)
    tensors.emplace(paths[i].empty() ? "policy_collect_state" : "policy_collect_state/" + paths[i], leaves[i]);
}

void PolicyAgent::import_state(const io::Checkpoint& checkpoint) {
  const std::vector<Tensor> like = collect_state_.leaves();
  const std::vector<std::string> paths = collect_state_.paths();
  std::vector<Tensor> leaves;
  for (size_t i = 0; i < like.size(); ++i) {
    const Tensor& t =
        checkpoint.tensor(paths[i].empty() ? "policy_collect_state" : "policy_collect_state/" + paths[i]);
    CTRAX_REQUIRE(t.shape() == like[i].shape() && t.dtype() == like[i].dtype(), "PolicyAgent: checkpoint ",
                  checkpoint.manifest_path.string(), ": collect state ", paths[i], " is ", dtype_name(t.dtype()),
                  to_string(t.shape()), ", the model has ", dtype_name(like[i].dtype()), to_string(like[i].shape()));
    leaves.push_back(t);
  }
  policy_trainer_->import_state(checkpoint, "policy/");
  collect_state_ = collect_state_.with_leaves(leaves);
}

// ---- PolicyGradient ---------------------------------------------------------------------------

PolicyGradient::PolicyGradient(RLTask& task, AgentOptions agent_options, PolicyAgentOptions policy_options)
    : PolicyAgent(task, std::move(agent_options), policy_options,
                  LogLoss(policy_distribution(task, policy_options)), {}, 2,
                  [this](int64_t index) { return policy_batch(index); }) {
  restore();
}

Batch PolicyGradient::policy_batch(int64_t index) const {
  TrajectoryBatchOptions b;
  b.batch_size = policy_options().policy_batch_size;
  b.epochs = {-1};  // on-policy: the last collection only
  b.max_slice_length = policy_options().max_slice_length;
  const TimeStepBatch batch =
      task().trajectory_batch(b, policy_batch_index(index));
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
