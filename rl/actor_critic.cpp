// ActorCriticAgent, A2C, PPO and AWR: see actor_critic.h.
#include "actor_critic.h"

#include <cmath>
#include <utility>

#include "../autograd/grad.h"
#include "../kernels/check.h"
#include "../layers/metrics.h"
#include "../tensor/ops.h"
#include "losses.h"

namespace ctrax {

namespace {

// (A - mean) / (std + epsilon) * factor over the entries with mask 1; others become 0.
Tensor normalize_advantages(const Tensor& advantages, const Tensor& mask, double epsilon, double factor) {
  const std::vector<double> a = advantages.to_vector<double>();
  const std::vector<double> m = mask.to_vector<double>();
  double count = 0, sum = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    count += m[i];
    sum += m[i] * a[i];
  }
  if (count == 0) return zeros_like(advantages);
  const double mean = sum / count;
  double square = 0;
  for (size_t i = 0; i < a.size(); ++i) square += m[i] * (a[i] - mean) * (a[i] - mean);
  const double std = std::sqrt(square / count);
  std::vector<float> out(a.size());
  for (size_t i = 0; i < a.size(); ++i)
    out[i] = m[i] != 0 ? static_cast<float>(factor * (a[i] - mean) / (std + epsilon)) : 0.0f;
  return from_vector(out, advantages.shape());
}

// The first n entries along the time axis (1).
Tensor first_steps(const Tensor& t, int64_t n) { return t.slice(1, 0, n).contiguous(); }

std::map<std::string, LayerPtr> policy_metrics(const DistributionPtr& d, std::optional<double> epsilon) {
  std::map<std::string, LayerPtr> m{{"entropy", PolicyEntropy(d)},
                                    {"approximate_kl", ApproximateKL(d)},
                                    {"log_prob_mean", LogProbMean(d)},
                                    {"advantage_mean", AdvantageMean()},
                                    {"advantage_norm", AdvantageNorm()},
                                    {"preferred_move", PreferredMove(d)}};
  if (epsilon) m["clip_fraction"] = ClipFraction(d, *epsilon);
  return m;
}

ActorCriticOptions with_defaults(ActorCriticOptions o) {
  if (!o.advantage_estimator) o.advantage_estimator = td_lambda(0.95);
  return o;
}

}  // namespace

ActorCriticAgent::ActorCriticAgent(RLTask& task, AgentOptions agent_options, PolicyAgentOptions policy_options,
                                   ActorCriticOptions options, LayerPtr policy_loss,
                                   std::map<std::string, LayerPtr> metrics)
    : PolicyAgent(task, std::move(agent_options), std::move(policy_options), std::move(policy_loss),
                  std::move(metrics), 4, [this](int64_t index) { return policy_batch(index); }),
      ac_(with_defaults(std::move(options))) {
  const ActorCriticOptions& o = ac_;
  CTRAX_REQUIRE(o.value_model != nullptr, "ActorCriticAgent: value_model is required (e.g. Value(body))");
  CTRAX_REQUIRE(o.value_model->n_in() == 1 && o.value_model->n_out() == 1, "ActorCriticAgent: the value model (",
                o.value_model->name(), ") must take 1 input and give 1 output");
  CTRAX_REQUIRE(o.value_batch_size >= 1, "ActorCriticAgent: value_batch_size must be >= 1, got ", o.value_batch_size);
  CTRAX_REQUIRE(o.value_train_steps_per_epoch >= 0, "ActorCriticAgent: value_train_steps_per_epoch must be >= 0, got ",
                o.value_train_steps_per_epoch);
  CTRAX_REQUIRE(o.value_evals_per_epoch >= 1, "ActorCriticAgent: value_evals_per_epoch must be >= 1, got ",
                o.value_evals_per_epoch);
  CTRAX_REQUIRE(o.value_eval_steps >= 1, "ActorCriticAgent: value_eval_steps must be >= 1, got ", o.value_eval_steps);
  CTRAX_REQUIRE(o.n_shared_layers >= 0, "ActorCriticAgent: n_shared_layers must be >= 0, got ", o.n_shared_layers);
  CTRAX_REQUIRE(o.added_policy_slice_length >= 0, "ActorCriticAgent: added_policy_slice_length must be >= 0, got ",
                o.added_policy_slice_length);
  CTRAX_REQUIRE(o.n_replay_epochs >= 0, "ActorCriticAgent: n_replay_epochs must be >= 0, got ", o.n_replay_epochs);
  CTRAX_REQUIRE(std::isfinite(o.advantage_normalization_epsilon) && o.advantage_normalization_epsilon > 0,
                "ActorCriticAgent: advantage_normalization_epsilon must be > 0, got ",
                o.advantage_normalization_epsilon);
  CTRAX_REQUIRE(std::isfinite(o.advantage_normalization_factor),
                "ActorCriticAgent: advantage_normalization_factor must be finite, got ",
                o.advantage_normalization_factor);
  CTRAX_REQUIRE(!o.scale_value_targets || this->task().gamma() < 1.0,
                "ActorCriticAgent: scale_value_targets needs gamma < 1 (the scale is 1 / (1 - gamma)), got gamma ",
                this->task().gamma());
  this->task().set_n_replay_epochs(o.n_replay_epochs);
  value_scale_ = o.scale_value_targets ? 1.0 / (1.0 - this->task().gamma()) : 1.0;

  TrainerOptions t;
  t.model = o.value_model;
  t.loss = L2Loss();
  t.metrics = {{"explained_variance", ValueExplainedVariance()}};
  t.optimizer = o.value_optimizer;
  t.lr_schedule = o.value_lr_schedule;
  t.train_stream = [this](int64_t index) { return value_batch(index); };
  t.has_weights = true;
  t.seed = o.seed;
  t.restore = false;
  t.input_signature = policy_signature(o.value_batch_size, 1);
  value_trainer_ = std::make_unique<Trainer>(std::move(t));
  value_target_weights_ = value_trainer_->weights();
  if (o.n_shared_layers > 0) copy_shared_layers(policy_trainer(), *value_trainer_);  // checks the layers fit
}

ActorCriticAgent::~ActorCriticAgent() = default;

Tensor ActorCriticAgent::values(const Tensor& observations) const {
  NoGradScope no_grad;
  const Tensor v = value_trainer_->predict({observations.to(DType::float32)})[0];
  return value_scale_ == 1.0 ? v : v * value_scale_;
}

Batch ActorCriticAgent::policy_batch(int64_t index) const {
  const int64_t margin = 1 + ac_.added_policy_slice_length;
  TrajectoryBatchOptions b;
  b.batch_size = policy_options().policy_batch_size;
  if (ac_.on_policy) b.epochs = {-1};
  if (policy_options().max_slice_length) b.max_slice_length = *policy_options().max_slice_length + margin;
  b.margin = margin;
  b.min_slice_length = margin + 1;
  const TimeStepBatch batch = task().trajectory_batch(b, policy_batch_index(index));
  const Tensor v = values(batch.observation);
  AdvantageInputs in{batch.reward, batch.return_, v, batch.done, batch.mask, batch.discount_mask};
  const int64_t n = batch.reward.shape()[1] - margin;
  Tensor advantages = ac_.advantage_estimator(in, task().gamma(), margin);
  const Tensor mask = first_steps(batch.mask, n);
  if (ac_.advantage_normalization)
    advantages = normalize_advantages(advantages, mask, ac_.advantage_normalization_epsilon,
                                      ac_.advantage_normalization_factor);
  return Batch{first_steps(batch.observation, n).to(DType::float32), first_steps(batch.action, n), advantages,
               first_steps(batch.dist_inputs, n), mask};
}

Batch ActorCriticAgent::value_batch(int64_t index) const {
  TrajectoryBatchOptions b;
  b.batch_size = ac_.value_batch_size;
  if (policy_options().max_slice_length) b.max_slice_length = *policy_options().max_slice_length + 1;
  b.margin = 1;
  b.min_slice_length = 2;
  const TimeStepBatch batch = task().trajectory_batch(b, value_batch_index(index));
  Tensor v;
  {
    NoGradScope no_grad;
    v = value_trainer_->model()
            .apply({batch.observation.to(DType::float32)}, value_target_weights_, value_trainer_->state(), Key(),
                   Mode::eval)
            .outputs[0];
    if (value_scale_ != 1.0) v = v * value_scale_;
  }
  AdvantageInputs in{batch.reward, batch.return_, v, batch.done, batch.mask, batch.discount_mask};
  const int64_t n = batch.reward.shape()[1] - 1;
  const Tensor advantages = ac_.advantage_estimator(in, task().gamma(), 1);
  const Tensor targets = ((first_steps(v, n) + advantages) * (1.0 / value_scale_)).to(DType::float32);
  return Batch{first_steps(batch.observation, n).to(DType::float32), targets, first_steps(batch.mask, n)};
}

void ActorCriticAgent::copy_shared_layers(Trainer& from, Trainer& to) const {
  const int64_t k = ac_.n_shared_layers;
  const Tree& source = from.weights();
  Tree target = to.weights();
  CTRAX_REQUIRE(source.is_list() && target.is_list() && static_cast<int64_t>(source.size()) >= k &&
                    static_cast<int64_t>(target.size()) >= k,
                "ActorCriticAgent: n_shared_layers = ", k, " needs policy and value models that are Serial "
                "combinators of at least ", k, " layers; their weights are ", source.to_string(), " and ",
                target.to_string());
  for (int64_t i = 0; i < k; ++i) target[static_cast<size_t>(i)] = source[static_cast<size_t>(i)];
  to.set_weights(std::move(target));  // checks every shape and dtype
}

Metrics ActorCriticAgent::train_epoch() {
  Metrics out;
  const ActorCriticOptions& o = ac_;
  if (o.n_shared_layers > 0) copy_shared_layers(policy_trainer(), *value_trainer_);
  if (o.value_train_steps_per_epoch > 0) {
    Metrics train, eval;
    for (int64_t c = 0; c < o.value_evals_per_epoch; ++c) {
      const int64_t steps = o.value_train_steps_per_epoch / o.value_evals_per_epoch +
                            (c < o.value_train_steps_per_epoch % o.value_evals_per_epoch);
      for (int64_t s = 0; s < steps; ++s) train = value_trainer_->train_step();
      eval = value_trainer_->evaluate(o.value_eval_steps);
      value_target_weights_ = value_trainer_->weights().map([](const Tensor& t) { return t.clone(); });
    }
    for (const auto& [name, value] : train) out["value/" + name] = value;
    for (const auto& [name, value] : eval) out["value/" + name] = value;
  }
  if (o.n_shared_layers > 0) copy_shared_layers(*value_trainer_, policy_trainer());
  for (const auto& [name, value] : train_policy()) out[name] = value;
  return out;
}

void ActorCriticAgent::export_state(std::map<std::string, Tensor>& tensors, io::ManifestFields& fields) const {
  PolicyAgent::export_state(tensors, fields);
  value_trainer_->export_state(tensors, fields, "value/");
  const std::vector<Tensor> leaves = value_target_weights_.leaves();
  const std::vector<std::string> paths = value_target_weights_.paths();
  for (size_t i = 0; i < leaves.size(); ++i) tensors.emplace("value_target/" + paths[i], leaves[i]);
}

void ActorCriticAgent::import_state(const io::Checkpoint& checkpoint) {
  const std::vector<Tensor> like = value_target_weights_.leaves();
  const std::vector<std::string> paths = value_target_weights_.paths();
  std::vector<Tensor> leaves;
  for (size_t i = 0; i < like.size(); ++i) {
    const Tensor& t = checkpoint.tensor("value_target/" + paths[i]);
    CTRAX_REQUIRE(t.shape() == like[i].shape() && t.dtype() == like[i].dtype(), "ActorCriticAgent: checkpoint ",
                  checkpoint.manifest_path.string(), ": value_target/", paths[i], " is ", dtype_name(t.dtype()),
                  to_string(t.shape()), ", the value model has ", dtype_name(like[i].dtype()),
                  to_string(like[i].shape()));
    leaves.push_back(t);
  }
  value_trainer_->import_state(checkpoint, "value/");  // checked before the policy changes
  PolicyAgent::import_state(checkpoint);
  value_target_weights_ = value_target_weights_.with_leaves(leaves);
}

// ---- The algorithms ---------------------------------------------------------------------------

A2C::A2C(RLTask& task, AgentOptions agent_options, PolicyAgentOptions policy_options, ActorCriticOptions options,
         A2COptions a2c)
    : ActorCriticAgent(task, std::move(agent_options), policy_options, std::move(options),
                       A2CLoss(policy_distribution(task, policy_options), a2c.entropy_coeff),
                       policy_metrics(policy_distribution(task, policy_options), std::nullopt)) {
  restore();
}

PPO::PPO(RLTask& task, AgentOptions agent_options, PolicyAgentOptions policy_options, ActorCriticOptions options,
         PPOOptions ppo)
    : ActorCriticAgent(task, std::move(agent_options), policy_options, std::move(options),
                       PPOLoss(policy_distribution(task, policy_options), ppo.epsilon, ppo.entropy_coeff),
                       policy_metrics(policy_distribution(task, policy_options), ppo.epsilon)) {
  restore();
}

AWR::AWR(RLTask& task, AgentOptions agent_options, PolicyAgentOptions policy_options, ActorCriticOptions options,
         AWROptions awr)
    : ActorCriticAgent(task, std::move(agent_options), policy_options, std::move(options),
                       AWRLoss(policy_distribution(task, policy_options), awr.beta, awr.w_max, awr.entropy_coeff),
                       policy_metrics(policy_distribution(task, policy_options), std::nullopt)) {
  restore();
}

}  // namespace ctrax
