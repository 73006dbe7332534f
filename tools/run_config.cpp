// Run configurations: see run_config.h. Each section has one reader, which asks for every key
// it understands (with its default and range) and then refuses any other key.
#include "run_config.h"

#include <cmath>
#include <functional>
#include <limits>
#include <map>

#include <ctrax/base/error.h>
#include <ctrax/layers/core.h>
#include <ctrax/layers/initializers.h>
#include <ctrax/layers/models.h>
#include <ctrax/layers/normalization.h>
#include <ctrax/optim/adafactor.h>
#include <ctrax/optim/adam.h>
#include <ctrax/optim/momentum.h>
#include <ctrax/optim/rmsprop.h>
#include <ctrax/optim/schedules.h>
#include <ctrax/optim/sgd.h>
#include <ctrax/rl/advantages.h>
#include <ctrax/rl/env.h>
#include <ctrax/rl/env_registry.h>
#include <ctrax/rl/policy_models.h>

#include "config.h"

namespace ctrax::tools {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int64_t kBig = int64_t{1} << 40;  // "any sensible count"

bool is_joint(const std::string& algorithm) { return algorithm.size() > 5 && algorithm.ends_with("Joint"); }
bool has_value_network(const std::string& algorithm) {
  return algorithm == "A2C" || algorithm == "PPO" || algorithm == "AWR" || algorithm == "SamplingAWR";
}

const std::map<std::string, LayerFactory>& activations() {
  static const std::map<std::string, LayerFactory> table{
      {"relu", [] { return Relu(); }},   {"tanh", [] { return Tanh(); }},         {"gelu", [] { return Gelu(); }},
      {"elu", [] { return Elu(); }},     {"selu", [] { return Selu(); }},         {"swish", [] { return Swish(); }},
      {"sigmoid", [] { return Sigmoid(); }}, {"leaky_relu", [] { return LeakyRelu(); }}};
  return table;
}

std::vector<std::string> keys_of(const std::map<std::string, LayerFactory>& m) {
  std::vector<std::string> out;
  for (const auto& [name, f] : m) out.push_back(name);
  return out;
}

// An MLP body and an optional Normalize in front; the head is the caller's.
struct ModelSpec {
  LayerFactory body;
  LayerFactory normalizer;
  double head_init_range = 0.0;
  Initializer head_init, value_head_init;  // init = "orthogonal": the heads' kernels (else empty)
  int64_t injection_dim = 64, injection_layers = 1;  // Q-networks only (ActionValue)
};

// with_injection: the model is a Q-network (value.q_value), which also takes injection_dim and
// injection_layers; other models refuse these keys.
// The network kind decides the default head gain of init = "orthogonal": 0.01 for a policy
// head, 1 for a value head (SB3's and CleanRL's); a joint model has both.
enum class Network { policy, value, joint };

ModelSpec read_model(ConfigTable t, Network network, bool with_injection = false) {
  ModelSpec m;
  const std::vector<int64_t> widths = t.integers("widths", {64, 64}, 1, 1 << 20);
  const std::string activation = t.choice("activation", "tanh", keys_of(activations()));
  const std::string init = t.choice("init", "glorot", {"glorot", "orthogonal"});
  const bool orthogonal_init = init == "orthogonal";
  if (orthogonal_init && t.has("head_init_range"))
    t.fail("head_init_range", "applies to init = \"glorot\"; with init = \"orthogonal\" give head_gain");
  for (const char* key : {"init_gain", "head_gain", "value_head_gain"})
    if (!orthogonal_init && t.has(key)) t.fail(key, "applies to init = \"orthogonal\"");
  m.head_init_range = orthogonal_init ? 0.0 : t.number("head_init_range", 0.0, 0.0, 1e6);
  double hidden_gain = 1.0;
  if (orthogonal_init) {
    hidden_gain = t.number("init_gain", std::sqrt(2.0), 0.0, 1e6);
    m.head_init = orthogonal(t.number("head_gain", network == Network::value ? 1.0 : 0.01, 0.0, 1e6));
    if (network == Network::joint) m.value_head_init = orthogonal(t.number("value_head_gain", 1.0, 0.0, 1e6));
  }
  if (with_injection) {
    m.injection_dim = t.integer("injection_dim", 64, 1, 1 << 20);
    m.injection_layers = t.integer("injection_layers", 1, 1, 1000);
  }
  const bool normalize = t.boolean("normalize", false);
  NormalizeOptions n;
  n.sample_limit = t.number("normalize_sample_limit", 1e12, 1.0, kInf);
  n.clip = t.number("normalize_clip", 1e12, 0.0, kInf);
  t.finish();
  const LayerFactory act = activations().at(activation);
  MLPOptions mlp;
  mlp.out_activation = true;
  if (orthogonal_init) {
    mlp.kernel_init = orthogonal(hidden_gain);
    mlp.bias_init = constant_init(0.0);
  }
  if (!widths.empty()) m.body = [widths, act, mlp] { return MLP(widths, act, mlp); };
  if (normalize) m.normalizer = [n] { return Normalize(n); };
  return m;
}

Schedule read_schedule(ConfigTable t);

// learning_rate = 1e-3 (a number) or learning_rate = { name = "...", ... } (a schedule).
LearningRate read_learning_rate(ConfigTable& t) {
  if (t.has_table("learning_rate")) return read_schedule(t.table("learning_rate"));
  return t.number("learning_rate", 1e-3, 0.0, kInf);
}

std::shared_ptr<Optimizer> read_optimizer(ConfigTable t) {
  const std::string name = t.choice("name", "adam", optimizer_names());
  const LearningRate rate = read_learning_rate(t);
  const std::optional<double> clip = t.optional_number("clip_grad_norm", 0.0, kInf);
  std::shared_ptr<Optimizer> out;
  if (name == "adam") {
    AdamOptions o;
    o.b1 = t.number("b1", o.b1, 0.0, 0.999999);
    o.b2 = t.number("b2", o.b2, 0.0, 0.999999);
    o.eps = t.number("eps", o.eps, 1e-30, 1.0);
    o.weight_decay_rate = t.number("weight_decay_rate", o.weight_decay_rate, 0.0, 0.999999);
    o.learning_rate = rate;
    o.clip_grad_norm = clip;
    out = std::make_shared<Adam>(o);
  } else if (name == "adamw") {
    AdamWOptions o;
    o.b1 = t.number("b1", o.b1, 0.0, 0.999999);
    o.b2 = t.number("b2", o.b2, 0.0, 0.999999);
    o.eps = t.number("eps", o.eps, 1e-30, 1.0);
    o.weight_decay = t.number("weight_decay", o.weight_decay, 0.0, 0.999999);
    o.learning_rate = rate;
    o.clip_grad_norm = clip;
    out = std::make_shared<AdamW>(o);
  } else if (name == "sgd") {
    SGDOptions o;
    o.learning_rate = rate;
    o.clip_grad_norm = clip;
    out = std::make_shared<SGD>(o);
  } else if (name == "momentum") {
    MomentumOptions o;
    o.mass = t.number("mass", o.mass, 0.0, 0.999999);
    o.weight_decay_rate = t.number("weight_decay_rate", o.weight_decay_rate, 0.0, 0.999999);
    o.nesterov = t.boolean("nesterov", o.nesterov);
    o.learning_rate = rate;
    o.clip_grad_norm = clip;
    out = std::make_shared<Momentum>(o);
  } else if (name == "rmsprop") {
    RMSPropOptions o;
    o.gamma = t.number("gamma", o.gamma, 0.0, 0.999999);
    o.eps = t.number("eps", o.eps, 1e-30, 1.0);
    o.initial_mean_square = t.number("initial_mean_square", o.initial_mean_square, 0.0, kInf);
    o.learning_rate = rate;
    o.clip_grad_norm = clip;
    out = std::make_shared<RMSProp>(o);
  } else {
    AdafactorOptions o;
    o.factored = t.boolean("factored", o.factored);
    o.multiply_by_parameter_scale = t.boolean("multiply_by_parameter_scale", o.multiply_by_parameter_scale);
    o.do_clipping = t.boolean("do_clipping", o.do_clipping);
    o.do_momentum = t.boolean("do_momentum", o.do_momentum);
    o.beta1 = t.number("beta1", o.beta1, 0.0, 0.999999);
    o.decay_rate = t.number("decay_rate", o.decay_rate, 1e-9, kInf);
    o.clipping_threshold = t.number("clipping_threshold", o.clipping_threshold, 1e-9, kInf);
    o.weight_decay_rate = t.number("weight_decay_rate", o.weight_decay_rate, 0.0, 0.999999);
    o.epsilon1 = t.number("epsilon1", o.epsilon1, 1e-300, 1.0);
    o.epsilon2 = t.number("epsilon2", o.epsilon2, 0.0, 1.0);
    o.learning_rate = rate;
    o.clip_grad_norm = clip;
    out = std::make_shared<Adafactor>(o);
  }
  t.finish();
  return out;
}

Schedule read_schedule(ConfigTable t) {
  const std::string name = t.choice("name", "constant", schedule_names());
  Schedule out;
  if (name == "constant") {
    out = constant_schedule(t.number("value", 1e-3, 0.0, kInf));
  } else if (name == "multifactor") {
    MultifactorOptions o;
    o.factors = t.string("factors", o.factors);
    o.constant = t.number("constant", o.constant, 0.0, kInf);
    o.warmup_steps = t.integer("warmup_steps", o.warmup_steps, 0, kBig);
    o.decay_factor = t.number("decay_factor", o.decay_factor, 0.0, kInf);
    o.steps_per_decay = t.integer("steps_per_decay", o.steps_per_decay, 1, kBig);
    o.steps_per_cycle = t.integer("steps_per_cycle", o.steps_per_cycle, 1, kBig);
    o.second_constant = t.number("second_constant", o.second_constant, 0.0, kInf);
    o.second_constant_step = t.integer("second_constant_step", o.second_constant_step, 0, kBig);
    o.minimum = t.number("minimum", o.minimum, 0.0, kInf);
    try {
      out = multifactor_schedule(o);
    } catch (const Error& e) {
      t.fail("factors", e.what());
    }
  } else {
    out = linear_annealing_schedule(t.number("initial", 1e-3, 0.0, kInf), t.integer("total_steps", 100000, 1, kBig));
  }
  t.finish();
  return out;
}

// The action distribution: Box spaces take [distribution] std and learn_std.
DistributionPtr read_distribution(ConfigTable t, const Space& actions) {
  if (actions.kind() != Space::Kind::box) {
    // A discrete space has one distribution (Categorical), which takes no options.
    for (const char* key : {"std", "learn_std"})
      if (t.has(key))
        t.fail(key, "a Gaussian option, but the action space is discrete (a Categorical policy); "
                    "[distribution] options apply to Box action spaces only");
    t.finish();
    return create_distribution(actions);
  }
  const double std = t.number("std", 1.0, 1e-9, 1e9);
  const std::string learn = t.choice("learn_std", "none", {"none", "shared", "separate"});
  t.finish();
  const LearnStd mode = learn == "none" ? LearnStd::none : learn == "shared" ? LearnStd::shared : LearnStd::separate;
  return std::make_shared<Gaussian>(actions.shape(), std, mode);
}

// A network's optimizer, with its learning rate.
void read_training(ConfigTable& section, std::shared_ptr<Optimizer>& optimizer) {
  if (section.has("lr_schedule"))
    section.fail("lr_schedule", "the learning rate belongs to the optimizer: write it in the optimizer table, "
                                "learning_rate = 1e-3 or learning_rate = { name = \"linear_annealing\", ... }");
  optimizer = read_optimizer(section.table("optimizer"));
}

AdvantageEstimator read_estimator(ConfigTable& t) {
  const std::string name = t.choice("advantage_estimator", "gae", {"monte_carlo", "td_k", "td_lambda", "gae"});
  const double lambda = t.number("advantage_lambda", 0.95, 0.0, 1.0);
  if (name == "monte_carlo") return monte_carlo();
  if (name == "td_k") return td_k();
  if (name == "td_lambda") return td_lambda(lambda);
  return gae(lambda);
}

std::optional<int64_t> slice_length(ConfigTable& t, int64_t fallback) {
  const int64_t v = t.integer("max_slice_length", fallback, 0, kBig);
  return v == 0 ? std::nullopt : std::optional<int64_t>(v);
}

}  // namespace

std::vector<std::string> activation_names() { return keys_of(activations()); }

const std::vector<std::string>& optimizer_names() {
  static const std::vector<std::string> names{"adam", "adamw", "sgd", "momentum", "rmsprop", "adafactor"};
  return names;
}

const std::vector<std::string>& schedule_names() {
  static const std::vector<std::string> names{"constant", "multifactor", "linear_annealing"};
  return names;
}

const std::vector<std::string>& algorithm_names() {
  static const std::vector<std::string> names{"PolicyGradient", "A2C", "PPO",      "AWR",
                                              "SamplingAWR",    "PPOJoint", "A2CJoint", "AWRJoint"};
  return names;
}

RunConfig read_run_config(toml::table config, const std::string& file) {
  RunConfig c;
  ConfigTable root(config, file);
  c.algorithm = root.choice("algorithm", "PPO", algorithm_names());
  c.seed = static_cast<uint64_t>(root.integer("seed", 0, 0, kBig));
  c.total_env_steps = root.optional_integer("total_env_steps", 1, kBig);
  // With a step budget the epochs default to "as many as the budget takes".
  c.epochs = root.integer("epochs", c.total_env_steps ? kBig : 100, 1, kBig);
  c.target_eval_return = root.optional_number("target_eval_return");

  {
    ConfigTable t = root.table("task");
    c.env = t.string("env", "CartPole-v1");
    const std::vector<std::string> known = env_names();
    if (std::find(known.begin(), known.end(), c.env) == known.end()) {
      std::string list;
      for (const std::string& n : known) list += (list.empty() ? "" : ", ") + n;
      t.fail("env", "unknown environment \"" + c.env + "\"; known: " + list);
    }
    c.task.n_envs = t.integer("n_envs", 1, 1, 1 << 20);
    c.task.n_eval_envs = t.integer("n_eval_envs", 1, 1, 1 << 20);
    c.task.initial_trajectories = t.integer("initial_trajectories", 1, 0, kBig);
    c.task.gamma = t.number("gamma", 0.99, 0.0, 1.0);
    c.task.max_steps = t.optional_integer("max_steps", 1, kBig);
    c.task.time_limit = t.optional_integer("time_limit", 1, kBig);
    c.task.n_replay_epochs = t.integer("n_replay_epochs", 1, 0, kBig);
    c.task.key = Key(c.seed);
    t.finish();
  }
  {
    ConfigTable t = root.table("agent");
    c.agent.n_trajectories_per_epoch = t.optional_integer("n_trajectories_per_epoch", 1, kBig);
    c.agent.n_interactions_per_epoch = t.optional_integer("n_interactions_per_epoch", 1, kBig);
    if (c.agent.n_trajectories_per_epoch.has_value() == c.agent.n_interactions_per_epoch.has_value())
      t.fail("", "give exactly one of n_trajectories_per_epoch and n_interactions_per_epoch");
    c.agent.n_eval_episodes = t.integer("n_eval_episodes", 0, 0, kBig);
    c.agent.eval_temperatures = t.numbers("eval_temperatures", {0.0}, 0.0, 1e6);
    c.agent.eval_max_steps = t.optional_integer("eval_max_steps", 1, kBig);
    c.agent.only_eval = t.boolean("only_eval", false);
    c.agent.checkpoints_to_keep = static_cast<int>(t.integer("checkpoints_to_keep", 2, 1, 1000));
    c.agent.checkpoint_every = t.integer("checkpoint_every", 1, 1, kBig);
    c.agent.n_confirm_episodes = t.integer("n_confirm_episodes", 100, 1, kBig);
    c.agent.confirm_statistic = t.choice("confirm_statistic", "mean", {"mean", "ci95_low"}) == "mean"
                                    ? AgentOptions::ConfirmStatistic::mean
                                    : AgentOptions::ConfirmStatistic::ci95_low;
    c.agent.anneal_learning_rate = t.boolean("anneal_learning_rate", false);
    c.agent.compile = t.boolean("compile", true);
    t.finish();
    if (c.target_eval_return && (c.agent.n_eval_episodes == 0 || c.agent.eval_temperatures.empty()))
      root.fail("target_eval_return", "needs agent.n_eval_episodes >= 1 and an eval temperature");
    c.agent.target_return = c.target_eval_return;
    c.agent.max_epochs = c.epochs;
    c.agent.total_env_steps = c.total_env_steps;
  }

  const EnvPtr env = make_env(c.env);
  const Space& actions = env->action_space();
  // Sections of other algorithms are refused by root.finish() (never asked for).
  if (is_joint(c.algorithm)) {
    for (const char* separate : {"policy", "value"})
      if (root.has(separate))
        root.fail(separate, c.algorithm + " trains one network with a policy and a value head: give [joint] "
                            "(its model, optimizer and batches) instead of [policy] and [value]");
    ConfigTable t = root.table("joint");
    c.joint.batch_size = t.integer("batch_size", 64, 1, kBig);
    c.joint.train_steps_per_epoch = t.integer("train_steps_per_epoch", 500, 0, kBig);
    c.joint.supervised_evals_per_epoch = t.integer("supervised_evals_per_epoch", 1, 0, kBig);
    c.joint.supervised_eval_steps = t.integer("supervised_eval_steps", 1, 1, kBig);
    c.joint.max_slice_length = slice_length(t, 1);
    if (t.has("normalize_advantages")) c.joint.normalize_advantages = t.boolean("normalize_advantages", true);
    else t.boolean("normalize_advantages", c.algorithm != "AWRJoint");
    c.joint.return_lambda = t.number("return_lambda", 1.0, 0.0, 1.0);
    c.joint.n_replay_epochs = c.task.n_replay_epochs;
    c.joint.seed = c.seed;
    const ModelSpec m = read_model(t.table("model"), Network::joint);
    read_training(t, c.joint.optimizer);
    c.joint.distribution = read_distribution(t.table("distribution"), actions);
    c.make_joint_model = [d = c.joint.distribution, m] {
      return m.head_init ? PolicyAndValue(*d, m.body, m.normalizer, m.head_init, m.value_head_init)
                         : PolicyAndValue(*d, m.body, m.normalizer, m.head_init_range);
    };
    t.finish();
    if (c.algorithm == "PPOJoint") {
      ConfigTable a = root.table("ppo_joint");
      c.ppo_joint.epsilon = a.number("epsilon", c.ppo_joint.epsilon, 1e-9, 0.999999);
      c.ppo_joint.value_loss_coeff = a.number("value_loss_coeff", c.ppo_joint.value_loss_coeff, 0.0, kInf);
      c.ppo_joint.entropy_coeff = a.number("entropy_coeff", c.ppo_joint.entropy_coeff, 0.0, kInf);
      a.finish();
    } else if (c.algorithm == "A2CJoint") {
      ConfigTable a = root.table("a2c_joint");
      c.a2c_joint.value_loss_coeff = a.number("value_loss_coeff", c.a2c_joint.value_loss_coeff, 0.0, kInf);
      c.a2c_joint.entropy_coeff = a.number("entropy_coeff", c.a2c_joint.entropy_coeff, 0.0, kInf);
      a.finish();
    } else {
      ConfigTable a = root.table("awr_joint");
      c.awr_joint.beta = a.number("beta", c.awr_joint.beta, 1e-9, kInf);
      c.awr_joint.w_max = a.number("w_max", c.awr_joint.w_max, 1e-9, kInf);
      c.awr_joint.value_loss_coeff = a.number("value_loss_coeff", c.awr_joint.value_loss_coeff, 0.0, kInf);
      c.awr_joint.entropy_coeff = a.number("entropy_coeff", c.awr_joint.entropy_coeff, 0.0, kInf);
      a.finish();
    }
  } else {
    if (root.has("joint"))
      root.fail("joint", c.algorithm + " trains separate networks: give [policy]" +
                             (has_value_network(c.algorithm) ? std::string(" and [value]") : std::string()) +
                             " instead of [joint] (or choose a joint algorithm: PPOJoint, A2CJoint, AWRJoint)");
    ConfigTable t = root.table("policy");
    c.policy.policy_batch_size = t.integer("batch_size", 64, 1, kBig);
    c.policy.policy_train_steps_per_epoch = t.integer("train_steps_per_epoch", 500, 0, kBig);
    c.policy.policy_evals_per_epoch = t.integer("evals_per_epoch", 1, 0, kBig);
    c.policy.policy_eval_steps = t.integer("eval_steps", 1, 1, kBig);
    c.policy.max_slice_length = slice_length(t, 1);
    c.policy.seed = c.seed;
    const ModelSpec m = read_model(t.table("model"), Network::policy);
    read_training(t, c.policy.policy_optimizer);
    c.policy.distribution = read_distribution(t.table("distribution"), actions);
    c.make_policy_model = [d = c.policy.distribution, m] {
      return m.head_init ? Policy(*d, m.body, m.normalizer, m.head_init)
                         : Policy(*d, m.body, m.normalizer, m.head_init_range);
    };
    t.finish();
    if (has_value_network(c.algorithm)) {
      ConfigTable v = root.table("value");
      c.value.value_batch_size = v.integer("batch_size", 64, 1, kBig);
      c.value.value_train_steps_per_epoch = v.integer("train_steps_per_epoch", 500, 0, kBig);
      c.value.value_evals_per_epoch = v.integer("evals_per_epoch", 1, 1, kBig);
      c.value.value_eval_steps = v.integer("eval_steps", 1, 1, kBig);
      c.value.n_shared_layers = v.integer("n_shared_layers", 0, 0, 1000);
      c.value.added_policy_slice_length = v.integer("added_policy_slice_length", 0, 0, kBig);
      c.value.scale_value_targets = v.boolean("scale_value_targets", false);
      c.value.on_policy = v.boolean("on_policy", true);
      c.value.advantage_estimator = read_estimator(v);
      c.value.advantage_normalization = v.boolean("advantage_normalization", true);
      c.value.advantage_normalization_epsilon = v.number("advantage_normalization_epsilon", 1e-5, 1e-30, 1e6);
      c.value.advantage_normalization_factor = v.number("advantage_normalization_factor", 1.0);
      c.value.n_replay_epochs = c.task.n_replay_epochs;
      c.value.seed = c.seed + 1;
      // Rollout passes (SB3-style epochs) and their stabilisers.
      c.value.rollout_passes = v.optional_integer("rollout_passes", 1, kBig);
      if (c.value.rollout_passes) {
        c.value.minibatch_size = v.integer("minibatch_size", 64, 1, kBig);
        c.value.normalize_advantages_per_minibatch = v.boolean("normalize_advantages_per_minibatch", true);
        c.value.target_kl = v.optional_number("target_kl", 1e-12, kInf);
        c.value.value_clip = v.optional_number("value_clip", 1e-12, kInf);
      } else {
        for (const char* key : {"minibatch_size", "normalize_advantages_per_minibatch", "target_kl", "value_clip"})
          if (v.has(key)) v.fail(key, "applies to rollout passes: give value.rollout_passes");
      }
      // Q-value baselines: the value network becomes ActionValue (a Q-network); SamplingAWR
      // always uses one (the key may be given, but only as true).
      const bool sampling = c.algorithm == "SamplingAWR";
      c.value.q_value = v.boolean("q_value", sampling);
      if (sampling && !c.value.q_value) v.fail("q_value", "SamplingAWR always uses a Q-network; it must be true");
      const bool discrete = actions.kind() == Space::Kind::discrete;
      if (c.value.q_value) {
        c.value.q_value_aggregate_max = v.boolean("q_value_aggregate_max", true);
        c.value.q_value_direct_advantages = v.boolean("q_value_direct_advantages", false);
        c.value.q_value_n_samples = v.integer("q_value_n_samples", 1, 1, 1 << 20);
        // Discrete(k): the embedding needs at least k ids; the default is exactly k.
        const int64_t k = discrete ? actions.n() : 1;
        c.value.vocab_size = discrete ? v.integer("vocab_size", k, k, 1 << 24) : 1;
        if (!discrete && v.has("vocab_size")) v.fail("vocab_size", "applies to discrete action spaces only");
      }
      const ModelSpec m2 = read_model(v.table("model"), Network::value, c.value.q_value);
      read_training(v, c.value.value_optimizer);
      if (c.value.q_value) {
        const int64_t vocab = c.value.vocab_size;
        c.make_value_model = [m2, discrete, vocab] {
          return ActionValue(m2.body, discrete, vocab, m2.injection_dim, m2.normalizer, m2.head_init_range,
                             m2.injection_layers);
        };
      } else {
        c.make_value_model = [m2] {
          return m2.head_init ? Value(m2.body, m2.normalizer, m2.head_init)
                              : Value(m2.body, m2.normalizer, m2.head_init_range);
        };
      }
      v.finish();
      if (c.value.scale_value_targets && c.task.gamma >= 1.0)
        v.fail("scale_value_targets", "needs task.gamma < 1 (the scale is 1 / (1 - gamma))");
    }
    if (c.algorithm == "PPO") {
      ConfigTable a = root.table("ppo");
      c.ppo.epsilon = a.number("epsilon", c.ppo.epsilon, 1e-9, 0.999999);
      c.ppo.entropy_coeff = a.number("entropy_coeff", c.ppo.entropy_coeff, 0.0, kInf);
      c.ppo.anneal_epsilon = a.boolean("anneal_epsilon", c.ppo.anneal_epsilon);
      a.finish();
    } else if (c.algorithm == "A2C") {
      ConfigTable a = root.table("a2c");
      c.a2c.entropy_coeff = a.number("entropy_coeff", c.a2c.entropy_coeff, 0.0, kInf);
      a.finish();
    } else if (c.algorithm == "AWR") {
      ConfigTable a = root.table("awr");
      c.awr.beta = a.number("beta", c.awr.beta, 1e-9, kInf);
      c.awr.w_max = a.number("w_max", c.awr.w_max, 1e-9, kInf);
      c.awr.entropy_coeff = a.number("entropy_coeff", c.awr.entropy_coeff, 0.0, kInf);
      a.finish();
    } else if (c.algorithm == "SamplingAWR") {
      ConfigTable a = root.table("sampling_awr");
      c.sampling_awr.beta = a.number("beta", c.sampling_awr.beta, 1e-9, kInf);
      c.sampling_awr.w_max = a.number("w_max", c.sampling_awr.w_max, 1e-9, kInf);
      c.sampling_awr.entropy_coeff = a.number("entropy_coeff", c.sampling_awr.entropy_coeff, 0.0, kInf);
      c.sampling_awr.reweight = a.boolean("reweight", c.sampling_awr.reweight);
      a.finish();
    }
  }
  root.finish();
  c.resolved = std::move(config);
  return c;
}

std::unique_ptr<RLTask> make_task(const RunConfig& c) { return std::make_unique<RLTask>(c.env, c.task); }

std::unique_ptr<Agent> make_agent(const RunConfig& c, RLTask& task, const std::filesystem::path& output_dir) {
  AgentOptions agent = c.agent;
  agent.output_dir = output_dir;
  // Fresh networks for every agent (layers hold their weights).
  PolicyAgentOptions policy = c.policy;
  ActorCriticOptions value = c.value;
  ActorCriticJointOptions joint = c.joint;
  if (c.make_policy_model) policy.policy_model = c.make_policy_model();
  if (c.make_value_model) value.value_model = c.make_value_model();
  if (c.make_joint_model) joint.joint_model = c.make_joint_model();
  const std::string& a = c.algorithm;
  if (a == "PolicyGradient") return std::make_unique<PolicyGradient>(task, agent, policy);
  if (a == "A2C") return std::make_unique<A2C>(task, agent, policy, value, c.a2c);
  if (a == "PPO") return std::make_unique<PPO>(task, agent, policy, value, c.ppo);
  if (a == "AWR") return std::make_unique<AWR>(task, agent, policy, value, c.awr);
  if (a == "SamplingAWR") return std::make_unique<SamplingAWR>(task, agent, policy, value, c.sampling_awr);
  if (a == "PPOJoint") return std::make_unique<PPOJoint>(task, agent, joint, c.ppo_joint);
  if (a == "A2CJoint") return std::make_unique<A2CJoint>(task, agent, joint, c.a2c_joint);
  if (a == "AWRJoint") return std::make_unique<AWRJoint>(task, agent, joint, c.awr_joint);
  throw Error("unknown algorithm " + a);
}

}  // namespace ctrax::tools
