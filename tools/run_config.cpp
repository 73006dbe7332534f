// Run configurations: see run_config.h. Each section is read through its key table (the table
// asks for every key it has, with the struct's default and its range), then refuses any other.
#include "run_config.h"

#include <cmath>
#include <functional>
#include <limits>
#include <map>

#include <ctrax/base/error.h>
#include <ctrax/kernels/denormals.h>
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
#include <ctrax/rl/learning/advantages.h>
#include <ctrax/rl/environments/env.h>
#include <ctrax/rl/environments/env_registry.h>
#include <ctrax/rl/agents/data_parallel.h>
#include <ctrax/rl/agents/policy_models.h>

#include "config.h"

namespace ctrax::tools {

namespace {

constexpr int64_t kBig = kAnyCount;

template <class Options>
void read_section(ConfigTable t, const OptionTable<Options>& keys, Options& o) {
  keys.read(t, o);
  t.finish();
}

ModelSection read_model(ConfigTable t, ModelSection::Kind kind) {
  ModelSection m;
  m.kind = kind;
  read_section(std::move(t), model_keys(), m);
  return m;
}

DistributionPtr read_distribution(ConfigTable t, const Space& actions) {
  DistributionSection d;
  d.box = actions.kind() == Space::Kind::box;
  read_section(std::move(t), distribution_keys(), d);
  return make_distribution(d, actions);
}

// A network's optimizer, with its learning rate.
std::shared_ptr<Optimizer> read_training(ConfigTable& section) {
  if (section.has("lr_schedule"))
    section.fail("lr_schedule", "the learning rate belongs to the optimizer: write it in the optimizer table, "
                                "learning_rate = 1e-3 or learning_rate = { name = \"linear_annealing\", ... }");
  return read_optimizer(section.table("optimizer"));
}

AdvantageEstimator make_estimator(const std::string& name, double lambda) {
  if (name == "monte_carlo") return monte_carlo();
  if (name == "td_k") return td_k();
  if (name == "td_lambda") return td_lambda(lambda);
  return gae(lambda);
}

void read_task(ConfigTable& root, RunConfig& c) {
  TaskSection task;
  read_section(root.table("task"), task_keys(), task);
  c.env = task.env;
  c.task = task;
  c.task.key = Key(c.seed);
}

void read_agent(ConfigTable& root, RunConfig& c) {
  ConfigTable t = root.table("agent");
  agent_keys().read(t, c.agent);
  if (c.agent.n_trajectories_per_epoch.has_value() == c.agent.n_interactions_per_epoch.has_value())
    t.fail("", "give exactly one of n_trajectories_per_epoch and n_interactions_per_epoch");
  t.finish();
  if (c.target_eval_return && (c.agent.n_eval_episodes == 0 || c.agent.eval_temperatures.empty()))
    root.fail("target_eval_return", "needs agent.n_eval_episodes >= 1 and an eval temperature");
  c.agent.target_return = c.target_eval_return;
  c.agent.max_epochs = c.epochs;
  c.agent.total_env_steps = c.total_env_steps;
}

void read_joint(ConfigTable& root, RunConfig& c, const Space& actions) {
  for (const char* separate : {"policy", "value"})
    if (root.has(separate))
      root.fail(separate, c.algorithm + " trains one network with a policy and a value head: give [joint] "
                          "(its model, optimizer and batches) instead of [policy] and [value]");
  ConfigTable t = root.table("joint");
  joint_keys().read(t, c.joint);
  c.joint.n_replay_epochs = c.task.n_replay_epochs;
  c.joint.seed = c.seed;
  const ModelFactories m = model_factories(read_model(t.table("model"), ModelSection::Kind::joint));
  c.joint.optimizer = read_training(t);
  c.joint.distribution = read_distribution(t.table("distribution"), actions);
  c.make_joint_model = [d = c.joint.distribution, m] {
    return m.head_init ? PolicyAndValue(*d, m.body, m.normalizer, m.head_init, m.value_head_init)
                       : PolicyAndValue(*d, m.body, m.normalizer, m.head_init_range);
  };
  t.finish();
}

void read_policy(ConfigTable& root, RunConfig& c, const Space& actions, bool with_value) {
  if (root.has("joint"))
    root.fail("joint", c.algorithm + " trains separate networks: give [policy]" +
                           (with_value ? std::string(" and [value]") : std::string()) +
                           " instead of [joint] (or choose a joint algorithm: PPOJoint, A2CJoint, AWRJoint)");
  ConfigTable t = root.table("policy");
  policy_keys().read(t, c.policy);
  c.policy.seed = c.seed;
  const ModelFactories m = model_factories(read_model(t.table("model"), ModelSection::Kind::policy));
  c.policy.policy_optimizer = read_training(t);
  c.policy.distribution = read_distribution(t.table("distribution"), actions);
  c.make_policy_model = [d = c.policy.distribution, m] {
    return m.head_init ? Policy(*d, m.body, m.normalizer, m.head_init)
                       : Policy(*d, m.body, m.normalizer, m.head_init_range);
  };
  t.finish();
}

void read_value(ConfigTable& root, RunConfig& c, const Space& actions) {
  ConfigTable t = root.table("value");
  ValueSection v;
  static_cast<ActorCriticOptions&>(v) = c.value;  // the algorithm's defaults
  value_keys(&actions).read(t, v);
  v.advantage_estimator = make_estimator(v.advantage_estimator_name, v.advantage_lambda);
  v.n_replay_epochs = c.task.n_replay_epochs;
  v.seed = c.seed + 1;
  c.value = v;
  const ModelSection::Kind kind = v.q_value ? ModelSection::Kind::q_value : ModelSection::Kind::value;
  const ModelSection spec = read_model(t.table("model"), kind);
  const ModelFactories m = model_factories(spec);
  c.value.value_optimizer = read_training(t);
  if (v.q_value) {
    const bool discrete = actions.kind() == Space::Kind::discrete;
    c.make_value_model = [m, discrete, vocab = v.vocab_size, spec] {
      return ActionValue(m.body, discrete, vocab, spec.injection_dim, m.normalizer, m.head_init_range,
                         spec.injection_layers);
    };
  } else {
    c.make_value_model = [m] {
      return m.head_init ? Value(m.body, m.normalizer, m.head_init) : Value(m.body, m.normalizer, m.head_init_range);
    };
  }
  t.finish();
  if (c.value.scale_value_targets && c.task.gamma >= 1.0)
    t.fail("scale_value_targets", "needs task.gamma < 1 (the scale is 1 / (1 - gamma))");
}

void read_algorithm_section(ConfigTable& root, RunConfig& c, const AlgorithmSpec& spec) {
  if (spec.section.empty()) {
    toml::table none;
    ConfigTable empty(none, root.file());
    c.algorithm_options = spec.read_options(empty);
    return;
  }
  ConfigTable t = root.table(spec.section);
  c.algorithm_options = spec.read_options(t);
  t.finish();
}

}  // namespace

const OptionTable<RunConfig>& run_keys() {
  static const OptionTable<RunConfig> table = [] {
    OptionTable<RunConfig> t;
    t.custom({"algorithm", "string", "", "a registered name (ctrax list algorithms)", "the training algorithm"},
             [](const RunConfig&) { return std::string("\"PPO\""); },
             [](ConfigTable& c, RunConfig& o) { o.algorithm = c.choice("algorithm", "PPO", algorithm_names()); });
    t.custom({"seed", "integer", "", ">= 0", "the task's key and the networks' initial weights"},
             [](const RunConfig& o) { return config_text(static_cast<int64_t>(o.seed)); },
             [](ConfigTable& c, RunConfig& o) { o.seed = static_cast<uint64_t>(c.integer("seed", 0, 0, kBig)); });
    t.optional_integer("total_env_steps", &RunConfig::total_env_steps, 1, kBig,
                       "the run's budget of environment steps, the initial random trajectories included");
    t.custom({"epochs", "integer", "", ">= 1", "the run's length in epochs (with total_env_steps: unlimited)"},
             [](const RunConfig& o) { return config_text(o.epochs); },
             [](ConfigTable& c, RunConfig& o) {
               o.epochs = c.integer("epochs", o.total_env_steps ? kBig : o.epochs, 1, kBig);
             });
    t.optional_number("target_eval_return", &RunConfig::target_eval_return, -kAnyNumber, kAnyNumber,
                      "stop once a confirmation run reaches this return (agent.n_confirm_episodes)");
    t.boolean("flush_denormals", &RunConfig::flush_denormals,
              "flush subnormal floats to zero (x86 FTZ and DAZ, as -Ofast builds and XLA do): "
              "faster where they occur, which may change results");
    return t;
  }();
  return table;
}

FloatingPointModeScope::FloatingPointModeScope(const RunConfig& config)
    : saved_(kernels::detail::floating_point_mode()) {
  const bool changed = kernels::set_flush_denormals(config.flush_denormals);
  CTRAX_REQUIRE(changed || !config.flush_denormals,
                "flush_denormals = true: this CPU has no mode that flushes subnormal floats (ctrax knows x86-64's); "
                "set flush_denormals = false");
}

FloatingPointModeScope::~FloatingPointModeScope() { kernels::detail::set_floating_point_mode(saved_); }

RunConfig read_run_config(toml::table config, const std::string& file) {
  RunConfig c;
  ConfigTable root(config, file);
  run_keys().read(root, c);
  read_task(root, c);
  read_agent(root, c);
  const AlgorithmSpec& spec = *find_algorithm(c.algorithm);  // checked by the algorithm key
  NetworkOptions defaults;
  if (spec.network_defaults) spec.network_defaults(defaults);
  c.policy = defaults.policy;
  c.value = defaults.value;
  c.joint = defaults.joint;
  const EnvPtr env = make_env(c.env);
  const Space& actions = env->action_space();
  // Sections of other algorithms are refused by root.finish() (never asked for).
  if (spec.networks == AlgorithmNetworks::joint) {
    read_joint(root, c, actions);
  } else {
    const bool with_value = spec.networks == AlgorithmNetworks::policy_and_value;
    read_policy(root, c, actions, with_value);
    if (with_value) read_value(root, c, actions);
  }
  if (spec.check) spec.check(NetworkOptions{c.policy, c.value, c.joint}, root);
  read_algorithm_section(root, c, spec);
  root.finish();
  c.resolved = std::move(config);
  return c;
}

TaskPtr make_task(const RunConfig& c) {
  // Data-parallel: this rank's share of the environments, on its own seeds.
  if (c.agent.communicator) return std::make_shared<RLTask>(c.env, rank_task_options(c.task, *c.agent.communicator));
  return std::make_shared<RLTask>(c.env, c.task);
}

std::unique_ptr<Agent> make_agent(const RunConfig& c, TaskPtr task, const std::filesystem::path& output_dir) {
  const AlgorithmSpec* spec = find_algorithm(c.algorithm);
  CTRAX_REQUIRE(spec != nullptr, "make_agent: unknown algorithm \"", c.algorithm, "\"; known: ",
                join_names(algorithm_names()));
  AgentOptions agent = c.agent;
  agent.output_dir = output_dir;
  // Fresh networks for every agent (layers hold their weights).
  NetworkOptions n{c.policy, c.value, c.joint};
  if (c.make_policy_model) n.policy.policy_model = c.make_policy_model();
  if (c.make_value_model) n.value.value_model = c.make_value_model();
  if (c.make_joint_model) n.joint.joint_model = c.make_joint_model();
  return spec->make(std::move(task), agent, n, c.algorithm_options);
}

}  // namespace ctrax::tools
