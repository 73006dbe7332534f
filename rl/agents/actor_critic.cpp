// ActorCriticAgent, A2C, PPO, AWR and SamplingAWR: see actor_critic.h.
#include "actor_critic.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include "../../autograd/grad.h"
#include "../../base/error.h"
#include "../../layers/metrics.h"
#include "../../tensor/ops.h"
#include "device_placement.h"
#include "../learning/losses.h"
#include "../learning/rollout_buffer.h"

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

// `shape` with `d` in front.
Shape with_front(int64_t d, const Shape& shape) {
  Shape out = shape;
  out.insert(0, d);
  return out;
}

// [n, B, ...] -> [n B, ...]: the samples stacked along the batch axis, sample-major.
Tensor merge_front(const Tensor& t) {
  Shape out = t.shape();
  const int64_t n = out[0];
  out.erase(0);
  out[0] *= n;
  return t.contiguous().reshape(out);
}

// [B, ...] repeated n times along a new leading axis, then merged: row i B + b is row b.
Tensor repeat_front(const Tensor& t, int64_t n) {
  return merge_front(t.unsqueeze(0).expand(with_front(n, t.shape())));
}

// Mixed into the value seed for the keys of the actions sampled for Q-value baselines, so they
// are independent of the value network's initialisation and training keys.
constexpr uint64_t kActionSamplingTag = 0x5156414c55455321ULL;

std::map<std::string, LayerPtr> policy_metrics(const DistributionPtr& d, std::shared_ptr<const double> epsilon) {
  std::map<std::string, LayerPtr> m{{"entropy", PolicyEntropy(d)},
                                    {"approximate_kl", ApproximateKL(d)},
                                    {"log_prob_mean", LogProbMean(d)},
                                    {"advantage_mean", AdvantageMean()},
                                    {"advantage_norm", AdvantageNorm()},
                                    {"preferred_move", PreferredMove(d)}};
  if (epsilon) m["clip_fraction"] = ClipFraction(d, std::move(epsilon));
  return m;
}

// Tags of the rollout passes' shuffling keys (folded into the policy seed with the epoch and the
// pass), apart from every other use of that seed.
constexpr uint64_t kRolloutShuffleTag = 0x524f4c4c4f555421ULL;

ActorCriticOptions with_defaults(ActorCriticOptions o) {
  if (!o.advantage_estimator) o.advantage_estimator = td_lambda(0.95);
  return o;
}

// Every option in range and the options consistent with each other and with the task.
void check_actor_critic_options(const ActorCriticOptions& o, const RLTask& task) {
  CTRAX_REQUIRE(o.value_model != nullptr, "ActorCriticAgent: value_model is required (e.g. Value(body))");
  if (o.q_value) {
    CTRAX_REQUIRE(o.value_model->n_in() == 2 && o.value_model->n_out() == 1,
                  "ActorCriticAgent: with q_value the value model (", o.value_model->name(),
                  ") must take 2 inputs (observations, actions) and give 1 output (Q), it takes ",
                  o.value_model->n_in(), " and gives ", o.value_model->n_out(),
                  "; build a Q-network with ActionValue(body, is_discrete, vocab_size)");
  } else {
    CTRAX_REQUIRE(o.value_model->n_in() == 1 && o.value_model->n_out() == 1, "ActorCriticAgent: the value model (",
                  o.value_model->name(), ") must take 1 input and give 1 output, it takes ", o.value_model->n_in(),
                  " and gives ", o.value_model->n_out(),
                  o.value_model->n_in() == 2 ? "; a model of (observations, actions) is a Q-network: set q_value = true"
                                             : "");
  }
  CTRAX_REQUIRE(o.q_value_n_samples >= 1, "ActorCriticAgent: q_value_n_samples must be >= 1, got ",
                o.q_value_n_samples);
  CTRAX_REQUIRE(o.vocab_size >= 1, "ActorCriticAgent: vocab_size must be >= 1, got ", o.vocab_size);
  if (o.q_value) {
    const Space& space = task.action_space();
    const bool discrete = space.kind() == Space::Kind::discrete;
    CTRAX_REQUIRE(discrete || (space.kind() == Space::Kind::box && space.shape().rank() == 1),
                  "ActorCriticAgent: q_value needs a Discrete or a rank-1 Box action space, got ", space);
    if (discrete)
      CTRAX_REQUIRE(o.vocab_size >= space.n(), "ActorCriticAgent: vocab_size = ", o.vocab_size,
                    " is smaller than the ", space.n(), " actions of ", space,
                    "; the Q-network's action embedding needs vocab_size >= ", space.n());
  }
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
  CTRAX_REQUIRE(!o.scale_value_targets || task.gamma() < 1.0,
                "ActorCriticAgent: scale_value_targets needs gamma < 1 (the scale is 1 / (1 - gamma)), got gamma ",
                task.gamma());
  if (o.rollout_passes) {
    CTRAX_REQUIRE(*o.rollout_passes >= 1, "ActorCriticAgent: rollout_passes must be >= 1, got ", *o.rollout_passes);
    CTRAX_REQUIRE(!o.q_value, "ActorCriticAgent: rollout_passes needs a state-value model (q_value is off)");
    CTRAX_REQUIRE(o.n_shared_layers == 0, "ActorCriticAgent: rollout_passes trains both networks minibatch by "
                  "minibatch, so n_shared_layers must be 0, got ", o.n_shared_layers);
    CTRAX_REQUIRE(o.on_policy, "ActorCriticAgent: rollout_passes trains on the last collection (on_policy = true)");
  }
  CTRAX_REQUIRE(o.minibatch_size >= 1, "ActorCriticAgent: minibatch_size must be >= 1, got ", o.minibatch_size);
  if (o.target_kl)
    CTRAX_REQUIRE(std::isfinite(*o.target_kl) && *o.target_kl > 0, "ActorCriticAgent: target_kl must be > 0, got ",
                  *o.target_kl);
  if (o.value_clip) {
    CTRAX_REQUIRE(std::isfinite(*o.value_clip) && *o.value_clip > 0, "ActorCriticAgent: value_clip must be > 0, got ",
                  *o.value_clip);
    CTRAX_REQUIRE(o.rollout_passes.has_value(), "ActorCriticAgent: value_clip applies to rollout passes "
                  "(rollout_passes); Trax's slice batches have a target network instead");
  }
}

}  // namespace

ActorCriticAgent::ActorCriticAgent(TaskPtr task, AgentOptions agent_options, PolicyAgentOptions policy_options,
                                   ActorCriticOptions options, LayerPtr policy_loss,
                                   std::map<std::string, LayerPtr> metrics)
    : PolicyAgent(task, std::move(agent_options), std::move(policy_options), std::move(policy_loss),
                  std::move(metrics), 4, [this](int64_t index) { return policy_batch(index); }),
      ac_(with_defaults(std::move(options))) {
  const ActorCriticOptions& o = ac_;
  check_actor_critic_options(o, this->task());
  this->task().set_n_replay_epochs(o.n_replay_epochs);
  value_scale_ = o.scale_value_targets ? 1.0 / (1.0 - this->task().gamma()) : 1.0;

  value_trainer_ = std::make_unique<Trainer>(value_trainer_options());
  if (!device().is_cpu()) move_trainer_to(*value_trainer_, device(), "ActorCriticAgent (value network)");
  // A copy: the trainer updates its weights in place, and the target network must stay frozen
  // until the next sync (and equal to what a checkpoint restores).
  value_target_weights_ = value_trainer_->weights().map([](const Tensor& t) { return t.clone(); });
  if (o.q_value) check_q_value_model();
  if (o.n_shared_layers > 0) copy_shared_layers(policy_trainer(), *value_trainer_);  // checks the layers fit
  if (!value_trainer_->state().leaves().empty())
    value_collect_ =
        std::make_unique<CollectModel>(*value_trainer_, "value_collect_state", "ActorCriticAgent", device());
}

TrainerOptions ActorCriticAgent::value_trainer_options() {
  const ActorCriticOptions& o = ac_;
  TrainerOptions t;
  t.compile = this->agent_options().compile;
  t.communicator = this->agent_options().communicator;
  t.model = o.value_model;
  t.optimizer = o.value_optimizer;
  if (o.rollout_passes) {
    // (observations, targets, mask, old values): the agent makes every batch itself.
    t.loss = RolloutValueLoss(o.value_clip, BatchPadding::none);  // every minibatch row is a real step
    t.metrics = {{"explained_variance", RolloutValueExplainedVariance()}};
    t.n_loss_inputs = 3;
    t.train_stream = [](int64_t) -> Batch {
      CTRAX_THROW("ActorCriticAgent: with rollout_passes the value network trains on the agent's minibatches");
    };
  } else {
    t.loss = L2Loss();
    t.metrics = {{"explained_variance", ValueExplainedVariance()}};
    t.train_stream = [this](int64_t index) { return batch_to(value_batch(index), device()); };
    t.has_weights = true;
  }
  t.seed = o.seed;
  t.restore = false;
  Signature signature = policy_signature(o.value_batch_size, 1);
  if (o.q_value)
    signature.push_back({with_front(o.value_batch_size, with_front(1, distribution().event_shape())),
                         distribution().sample_dtype()});
  t.input_signature = std::move(signature);
  return t;
}

PolicyOutput ActorCriticAgent::act(const Tensor& observations, Key key, double temperature) {
  // One transfer of the observations serves both networks.
  const Tensor on_device = observations_on_device(observations);
  PolicyOutput out = PolicyAgent::act(on_device, key, temperature);
  if (value_collect_ && !evaluating()) {
    Stack more;
    if (ac_.q_value) more.push_back(model_actions(out.actions));
    value_collect_->update_state(on_device, more);  // its statistics follow the observations; no outputs
  }
  return out;
}

ActorCriticAgent::~ActorCriticAgent() = default;

void ActorCriticAgent::check_q_value_model() const {
  // Every action id once (a Discrete space), or one zero action (a Box): a Q-network whose
  // embedding is too small, or that gives the wrong shape, fails here rather than mid-training.
  const Space& space = task().action_space();
  const bool discrete = space.kind() == Space::Kind::discrete;
  const int64_t k = discrete ? space.n() : 1;
  const Signature one = policy_signature(1, k);
  const Tensor observations = zeros(one[0].shape, one[0].dtype);
  const Tensor actions = discrete ? arange(k).reshape(Shape{1, k})
                                  : zeros(with_front(1, with_front(1, distribution().event_shape())));
  Tensor q;
  try {
    q = run_value_model({observations, model_actions(actions)}, value_weights());
  } catch (const Error& e) {
    CTRAX_THROW("ActorCriticAgent: the Q-network (", ac_.value_model->name(), ") fails on ",
                discrete ? "every action id of " : "an action of ", space, ": ", e.what());
  }
  CTRAX_REQUIRE(q.shape() == Shape({1, k}), "ActorCriticAgent: the Q-network (", ac_.value_model->name(), ") gives ",
                to_string(q.shape()), " for observations ", to_string(observations.shape()), " and actions ",
                to_string(actions.shape()), "; expected [1, ", k, "]");
}

const Tree& ActorCriticAgent::value_weights() const { return value_trainer_->weights(); }

Tensor ActorCriticAgent::run_value_model(const Stack& inputs, const Tree& weights) const {
  NoGradScope no_grad;
  Stack on_device;
  for (const Tensor& t : inputs) on_device.push_back(t.to(device()));  // no transfer for those already there
  const Tensor v =
      value_trainer_->model().apply(on_device, weights, value_trainer_->state(), Key(), Mode::eval).outputs[0];
  return value_scale_ == 1.0 ? v : v * value_scale_;
}

Tensor ActorCriticAgent::model_actions(const Tensor& actions) const {
  return actions.to(distribution().sample_dtype()).contiguous();
}

Key ActorCriticAgent::policy_sampling_key(int64_t index) const {
  return fold_in(fold_in(Key(ac_.seed), kActionSamplingTag),
                 static_cast<uint64_t>(RLTask::policy_batch_index(index)));
}

Key ActorCriticAgent::value_sampling_key(int64_t index) const {
  return fold_in(fold_in(Key(ac_.seed), kActionSamplingTag),
                 static_cast<uint64_t>(RLTask::value_batch_index(index)));
}

Tensor ActorCriticAgent::q_values(const Tensor& observations, const Tensor& actions) const {
  CTRAX_REQUIRE(ac_.q_value, "ActorCriticAgent::q_values needs q_value (a Q-network); use values(observations)");
  return run_value_model({observations.to(DType::float32), model_actions(actions)}, value_weights());
}

ActorCriticAgent::QSamples ActorCriticAgent::sample_q(const Tensor& observations, Key key,
                                                      const Tree& weights) const {
  CTRAX_REQUIRE(ac_.q_value, "ActorCriticAgent: sampled Q-values need q_value (a Q-network)");
  CTRAX_REQUIRE(observations.rank() >= 2, "ActorCriticAgent: observations must be [B, L, ...], got ",
                to_string(observations.shape()));
  NoGradScope no_grad;
  const int64_t n = ac_.q_value_n_samples;
  const Tensor obs = observations_on_device(observations).contiguous();
  QSamples out;
  out.dist_inputs = policy_outputs(obs);  // [B, L, D]
  // One draw over [n, B, L]: sample i of an entry is element i along the new axis.
  const Tensor inputs = out.dist_inputs.unsqueeze(0).expand(with_front(n, out.dist_inputs.shape())).contiguous();
  out.actions = distribution().sample(inputs, key, 1.0);
  const Tensor q = run_value_model({repeat_front(obs, n), model_actions(merge_front(out.actions))}, weights);
  out.q = q.reshape(Shape{n, obs.shape()[0], obs.shape()[1]}).to(DType::float32);
  return out;
}

Tensor ActorCriticAgent::sample_actions(const Tensor& observations, Key key) const {
  return sample_q(observations, key, value_weights()).actions;
}

Tensor ActorCriticAgent::state_values(const Tensor& observations, Key key, bool aggregate_max) const {
  const Tensor q = sample_q(observations, key, value_weights()).q;
  return aggregate_max ? max(q, {0}) : mean(q, {0});
}

Tensor ActorCriticAgent::values(const Tensor& observations) const {
  CTRAX_REQUIRE(!ac_.q_value, "ActorCriticAgent::values is for state-value models; with q_value use "
                "state_values(observations, key, aggregate_max) or q_values(observations, actions)");
  NoGradScope no_grad;
  const Tensor v = value_trainer_->predict({observations_on_device(observations)})[0];
  return value_scale_ == 1.0 ? v : v * value_scale_;
}

TimeStepBatch ActorCriticAgent::policy_slices(int64_t index, int64_t& margin) const {
  margin = 1 + ac_.added_policy_slice_length;
  TrajectoryBatchOptions b;
  b.pad_to_power_of_two = false;  // every loss is masked; padding only costs time
  b.batch_size = batch_share(policy_options().policy_batch_size, "policy_batch_size");
  if (ac_.on_policy) b.epochs = {-1};
  if (policy_options().max_slice_length) b.max_slice_length = *policy_options().max_slice_length + margin;
  b.margin = margin;
  b.min_slice_length = margin + 1;
  return task().trajectory_batch(b, RLTask::policy_batch_index(index));
}

Batch ActorCriticAgent::policy_batch(int64_t index) const {
  int64_t margin = 0;
  const TimeStepBatch batch = policy_slices(index, margin);
  const int64_t n = batch.reward.shape()[1] - margin;
  const Tensor mask = first_steps(batch.mask, n);
  // The observations cross to the device once; the networks' outputs come back for the
  // estimator and the normalisation, which run on the CPU.
  const Tensor all_observations = observations_on_device(batch.observation);
  const Tensor observations = first_steps(all_observations, n);
  const Device cpu = Device::cpu();
  Tensor advantages;
  if (ac_.q_value && ac_.q_value_direct_advantages) {
    // The critic's own advantage A = Q(o, a) - mean_i Q(o, a_i), a_i ~ pi(. | o), on the steps.
    const Tensor q = q_values(observations, first_steps(batch.action, n)).to(cpu);
    const Tensor v = mean(sample_q(observations, policy_sampling_key(index), value_weights()).q, {0}).to(cpu);
    advantages = where(ne(mask, zeros_like(mask)), q - v, zeros_like(q)).to(DType::float32);
  } else {
    // Trax's Q-value baseline replaces V by mean_i Q(o, a_i) on every entry; the estimator is
    // the same.
    const Tensor v =
        (ac_.q_value ? mean(sample_q(all_observations, policy_sampling_key(index), value_weights()).q, {0})
                     : values(all_observations))
            .to(cpu);
    AdvantageInputs in{batch.reward, batch.return_, v, batch.done, batch.mask, batch.discount_mask};
    advantages = ac_.advantage_estimator(in, task().gamma(), margin);
  }
  if (ac_.advantage_normalization)
    advantages = normalize_advantages(advantages, mask, ac_.advantage_normalization_epsilon,
                                      ac_.advantage_normalization_factor);
  return Batch{observations, first_steps(batch.action, n), advantages, first_steps(batch.dist_inputs, n), mask};
}

Batch ActorCriticAgent::value_batch(int64_t index) const {
  TrajectoryBatchOptions b;
  b.pad_to_power_of_two = false;  // every loss is masked; padding only costs time
  b.batch_size = batch_share(ac_.value_batch_size, "value_batch_size");
  if (policy_options().max_slice_length) b.max_slice_length = *policy_options().max_slice_length + 1;
  b.margin = 1;
  b.min_slice_length = 2;
  const TimeStepBatch batch = task().trajectory_batch(b, RLTask::value_batch_index(index));
  const Tensor observations = observations_on_device(batch.observation);  // the one transfer
  // V_target on every entry, the final observations included (they are what the last steps
  // bootstrap from): the frozen network's V, or its Q aggregated over sampled actions. It comes
  // back to the CPU for the estimator.
  Tensor v;
  if (ac_.q_value) {
    const Tensor q = sample_q(observations, value_sampling_key(index), value_target_weights_).q;
    v = (ac_.q_value_aggregate_max ? max(q, {0}) : mean(q, {0})).to(Device::cpu());
  } else {
    v = run_value_model({observations}, value_target_weights_).to(Device::cpu());
  }
  AdvantageInputs in{batch.reward, batch.return_, v, batch.done, batch.mask, batch.discount_mask};
  const int64_t n = batch.reward.shape()[1] - 1;
  const Tensor advantages = ac_.advantage_estimator(in, task().gamma(), 1);
  const Tensor targets = ((first_steps(v, n) + advantages) * (1.0 / value_scale_)).to(DType::float32);
  if (ac_.q_value)
    return Batch{first_steps(observations, n), model_actions(first_steps(batch.action, n)), targets,
                 first_steps(batch.mask, n)};
  return Batch{first_steps(observations, n), targets, first_steps(batch.mask, n)};
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
  value_trainer_->set_learning_rate_factor(learning_rate_factor());
  if (ac_.rollout_passes) return train_rollout_epoch();
  Metrics out;
  const ActorCriticOptions& o = ac_;
  if (o.n_shared_layers > 0) copy_shared_layers(policy_trainer(), *value_trainer_);
  if (value_collect_) value_collect_->to_trainer(*value_trainer_);
  for (const auto& [name, value] :
       train_in_chunks(*value_trainer_, o.value_train_steps_per_epoch, o.value_evals_per_epoch, o.value_eval_steps,
                       "value/", [this] {
                         // Value targets of the next chunk come from the weights trained so far.
                         value_target_weights_ = value_trainer_->weights().map([](const Tensor& t) { return t.clone(); });
                       }))
    out[name] = value;
  if (o.n_shared_layers > 0) copy_shared_layers(*value_trainer_, policy_trainer());
  for (const auto& [name, value] : train_policy()) out[name] = value;
  return out;
}

Metrics ActorCriticAgent::train_rollout_epoch() {
  const ActorCriticOptions& o = ac_;
  Trainer& policy = policy_trainer();
  prepare_policy_training();
  if (value_collect_) value_collect_->to_trainer(*value_trainer_);
  const auto pieces = task().trajectories().find(epoch());
  CTRAX_REQUIRE(pieces != task().trajectories().end(), "ActorCriticAgent: epoch ", epoch(),
                " collected nothing to train on");
  // V_old once for every stored observation, in the value network's units times the scale.
  const RolloutBuffer rollout(
      pieces->second, [this](const Tensor& observations) { return values(observations).to(Device::cpu()); },
      o.advantage_estimator, task().gamma());
  Tensor advantages = rollout.advantages();
  const bool normalize = o.advantage_normalization;
  if (normalize && !o.normalize_advantages_per_minibatch)
    advantages = normalize_minibatch(advantages, o.advantage_normalization_epsilon, o.advantage_normalization_factor);
  const double scale = 1.0 / value_scale_;
  const Tensor targets = (rollout.value_targets() * scale).to(DType::float32);
  const Tensor old_values = (rollout.old_values() * scale).to(DType::float32);

  // Metric sums and counts: the loss and learning rate every step; the metrics and the
  // optimizer's norms on each pass's last minibatch (every step with a target KL, which needs
  // the policy's KL), for both networks.
  std::map<std::string, std::pair<double, int64_t>> sums;
  auto add = [&sums](const std::string& prefix, const Metrics& m) {
    for (const auto& [name, value] : m) {
      auto& [sum, count] = sums[prefix + name];
      sum += value;
      ++count;
    }
  };
  int64_t steps = 0, passes_done = 0;
  bool stopped = false;
  // Data-parallel: every rank takes the same steps, on its share of each minibatch.
  const int64_t minibatch = batch_share(o.minibatch_size, "minibatch_size");
  if (dist::Communicator* comm = ranks()) {
    const int64_t rows = rollout.size();
    dist::check_same_on_every_rank(*comm, std::span(reinterpret_cast<const unsigned char*>(&rows), sizeof rows),
                                   "the rollout's rows (rollout passes on several ranks need n_interactions_per_epoch)");
  }
  const Key shuffle = fold_in(fold_in(Key(policy_options().seed), kRolloutShuffleTag), static_cast<uint64_t>(epoch()));
  // The minibatches' rows of every field, gathered into the same tensors each time (the steps
  // keep none of their batch); the epoch-wide normalisation, if any, is already in `advantages`.
  std::optional<std::pair<double, double>> per_minibatch;
  if (normalize && o.normalize_advantages_per_minibatch)
    per_minibatch = std::pair{o.advantage_normalization_epsilon, o.advantage_normalization_factor};
  RolloutMinibatch mb;
  for (int64_t pass = 0; pass < *o.rollout_passes && !stopped; ++pass) {
    const std::vector<Tensor> minibatches =
        RolloutBuffer::minibatch_indices(rollout.size(), minibatch, fold_in(shuffle, static_cast<uint64_t>(pass)));
    for (size_t i = 0; i < minibatches.size(); ++i) {
      const bool last = i + 1 == minibatches.size();
      mb.gather(rollout, minibatches[i], advantages, targets, old_values, per_minibatch);
      const Batch policy_batch{mb.observations(), mb.actions(), mb.advantages(), mb.dist_inputs(), mb.mask()};
      // The metrics (the KL among them) come from this step's forward pass, before its update.
      const Metrics p = policy.train_step(batch_to(policy_batch, device()), o.target_kl.has_value() || last);
      const Batch value_batch{mb.observations(), mb.value_targets(), mb.mask(), mb.old_values()};
      // With a target KL the policy may stop at any step, so the value network reports its
      // metrics whenever the policy does: every epoch's row then has the same columns.
      const Metrics v = value_trainer_->train_step(batch_to(value_batch, device()), o.target_kl.has_value() || last);
      add("policy/", p);
      add("value/", v);
      ++steps;
      if (o.target_kl && p.count("approximate_kl")) {
        // On several ranks the stop is decided on the KL averaged over them, so they stop together.
        const double kl = ranks() ? dist::mean_over_ranks(*ranks(), p.at("approximate_kl")) : p.at("approximate_kl");
        if (kl > 1.5 * *o.target_kl) {
          stopped = true;
          break;
        }
      }
    }
    if (!stopped) ++passes_done;
  }
  finish_policy_training();
  Metrics out;
  for (const auto& [name, sum_count] : sums) out[name] = sum_count.first / static_cast<double>(sum_count.second);
  out["policy/passes_completed"] = static_cast<double>(passes_done);
  out["policy/steps"] = static_cast<double>(steps);
  out["policy/early_stop"] = stopped ? 1.0 : 0.0;
  return out;
}

std::vector<CollectModel*> ActorCriticAgent::collect_models() {
  std::vector<CollectModel*> models = PolicyAgent::collect_models();
  if (value_collect_) models.push_back(value_collect_.get());
  return models;
}

std::vector<const Trainer*> ActorCriticAgent::trainers() const {
  std::vector<const Trainer*> all = PolicyAgent::trainers();
  all.push_back(value_trainer_.get());
  return all;
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
  if (value_collect_) value_collect_->from_trainer(*value_trainer_);
}

// ---- The algorithms ---------------------------------------------------------------------------

namespace {

// Rollout passes train on minibatches of real steps only; Trax's slices carry padding.
BatchPadding policy_padding(const ActorCriticOptions& options) {
  return options.rollout_passes ? BatchPadding::none : BatchPadding::masked;
}

}  // namespace

A2C::A2C(TaskPtr task, AgentOptions agent_options, PolicyAgentOptions policy_options, ActorCriticOptions options,
         A2COptions a2c)
    : ActorCriticAgent(task, std::move(agent_options), policy_options, options,
                       A2CLoss(policy_distribution(task, policy_options), a2c.entropy_coeff, policy_padding(options)),
                       policy_metrics(policy_distribution(task, policy_options), nullptr)) {
  restore();
}

namespace {

std::shared_ptr<double> checked_epsilon(const PPOOptions& ppo) {
  CTRAX_REQUIRE(std::isfinite(ppo.epsilon) && ppo.epsilon > 0 && ppo.epsilon < 1, "PPO: epsilon must be in (0, 1), got ",
                ppo.epsilon);
  return std::make_shared<double>(ppo.epsilon);
}

}  // namespace

PPO::PPO(TaskPtr task, AgentOptions agent_options, PolicyAgentOptions policy_options, ActorCriticOptions options,
         PPOOptions ppo)
    : PPO(task, std::move(agent_options), std::move(policy_options), std::move(options), ppo, checked_epsilon(ppo)) {}

PPO::PPO(TaskPtr task, AgentOptions agent_options, PolicyAgentOptions policy_options, ActorCriticOptions options,
         PPOOptions ppo, std::shared_ptr<double> epsilon)
    : ActorCriticAgent(task, std::move(agent_options), policy_options, options,
                       PPOLoss(policy_distribution(task, policy_options), epsilon, ppo.entropy_coeff,
                               policy_padding(options)),
                       policy_metrics(policy_distribution(task, policy_options), epsilon)),
      ppo_(ppo),
      epsilon_(std::move(epsilon)) {
  CTRAX_REQUIRE(!ppo_.anneal_epsilon || this->agent_options().max_epochs.has_value() ||
                    this->agent_options().total_env_steps.has_value(), "PPO: anneal_epsilon needs "
                "AgentOptions::max_epochs or total_env_steps (what the clip range anneals over)");
  restore();
}

Metrics PPO::train_epoch() {
  // Annealed linearly to (nearly) 0, never to 0 itself: the loss needs epsilon in (0, 1).
  *epsilon_ = ppo_.anneal_epsilon ? std::max(ppo_.epsilon * (1.0 - progress()), 1e-8) : ppo_.epsilon;
  Metrics out = ActorCriticAgent::train_epoch();
  out["policy/epsilon"] = *epsilon_;
  return out;
}

AWR::AWR(TaskPtr task, AgentOptions agent_options, PolicyAgentOptions policy_options, ActorCriticOptions options,
         AWROptions awr)
    : ActorCriticAgent(task, std::move(agent_options), policy_options, options,
                       AWRLoss(policy_distribution(task, policy_options), awr.beta, awr.w_max, awr.entropy_coeff,
                               policy_padding(options)),
                       policy_metrics(policy_distribution(task, policy_options), nullptr)) {
  restore();
}

// ---- SamplingAWR ------------------------------------------------------------------------------

namespace {

ActorCriticOptions with_q_value(ActorCriticOptions o) {
  o.q_value = true;  // Trax's SamplingAWR forces it
  return o;
}

}  // namespace

SamplingAWR::SamplingAWR(TaskPtr task, AgentOptions agent_options, PolicyAgentOptions policy_options,
                         ActorCriticOptions options, SamplingAWROptions awr)
    : ActorCriticAgent(task, std::move(agent_options), policy_options, with_q_value(std::move(options)),
                       AWRLoss(policy_distribution(task, policy_options), awr.beta, awr.w_max, awr.entropy_coeff),
                       policy_metrics(policy_distribution(task, policy_options), nullptr)),
      awr_(awr) {
  restore();
}

Batch SamplingAWR::policy_batch(int64_t index) const {
  int64_t margin = 0;
  const TimeStepBatch batch = policy_slices(index, margin);
  const int64_t length = batch.reward.shape()[1] - margin;
  const Tensor observations = observations_on_device(first_steps(batch.observation, length));
  const QSamples s = sample_q(observations, policy_sampling_key(index), value_weights());
  const int64_t n = actor_critic_options().q_value_n_samples;
  const int64_t slices = observations.shape()[0];
  const int64_t per_sample = slices * length;  // entries of one sample: [B, L']

  // A_i = Q(o, a_i) - mean_j Q(o, a_j), on mask-1 entries only. Row-major [n, B, L'] is the
  // batch's [n B, L'] (sample-major), so entry e of sample i is element i * per_sample + e.
  const auto at = [per_sample](int64_t i, int64_t e) { return static_cast<size_t>(i * per_sample + e); };
  const std::vector<double> q = s.q.to_vector<double>();
  const std::vector<double> m = first_steps(batch.mask, length).to_vector<double>();
  std::vector<double> a(q.size(), 0.0);
  for (int64_t e = 0; e < per_sample; ++e) {
    if (m[at(0, e)] == 0) continue;
    double mean_q = 0;
    for (int64_t i = 0; i < n; ++i) mean_q += q[at(i, e)] / static_cast<double>(n);
    for (int64_t i = 0; i < n; ++i) a[at(i, e)] = q[at(i, e)] - mean_q;
  }
  const Shape rows{n * slices, length};
  const Tensor mask = repeat_front(first_steps(batch.mask, length), n);
  Tensor advantages = from_vector(a, rows).to(DType::float32);
  const ActorCriticOptions& o = actor_critic_options();
  if (o.advantage_normalization)
    advantages = normalize_advantages(advantages, mask, o.advantage_normalization_epsilon,
                                      o.advantage_normalization_factor);
  if (awr_.reweight) {
    // log w_i = min(A_i / beta, log w_max); A_i <- beta (log w_i - log mean_j w_j), so that
    // AWRLoss's exp(A_i / beta) is w_i / mean_j w_j. log-sum-exp keeps large A finite.
    const std::vector<double> in = advantages.to_vector<double>();
    std::vector<double> out(in.size(), 0.0), log_w(static_cast<size_t>(n));
    const double log_w_max = std::log(awr_.w_max);
    for (int64_t e = 0; e < per_sample; ++e) {
      if (m[at(0, e)] == 0) continue;
      double top = -std::numeric_limits<double>::infinity();
      for (int64_t i = 0; i < n; ++i) {
        log_w[static_cast<size_t>(i)] = std::min(in[at(i, e)] / awr_.beta, log_w_max);
        top = std::max(top, log_w[static_cast<size_t>(i)]);
      }
      double sum = 0;
      for (double l : log_w) sum += std::exp(l - top);
      const double log_mean = top + std::log(sum / static_cast<double>(n));
      for (int64_t i = 0; i < n; ++i) out[at(i, e)] = awr_.beta * (log_w[static_cast<size_t>(i)] - log_mean);
    }
    advantages = from_vector(out, rows).to(DType::float32);
  }
  return Batch{repeat_front(observations, n), model_actions(merge_front(s.actions)), advantages,
               repeat_front(s.dist_inputs, n), mask};
}

}  // namespace ctrax
