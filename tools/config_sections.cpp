// The built-in sections' key tables: see config_sections.h.
#include "config_sections.h"

#include <map>

#include <ctrax/base/error.h>
#include <ctrax/layers/core.h>
#include <ctrax/layers/normalization.h>
#include <ctrax/optim/adafactor.h>
#include <ctrax/optim/adam.h>
#include <ctrax/optim/momentum.h>
#include <ctrax/optim/rmsprop.h>
#include <ctrax/optim/sgd.h>
#include <ctrax/rl/environments/env_registry.h>

namespace ctrax::tools {

namespace {

constexpr double kInf = kAnyNumber;
constexpr int64_t kBig = kAnyCount;

// max_slice_length: 0 means whole trajectories (none).
template <class Options>
void add_slice_length(OptionTable<Options>& table, std::optional<int64_t> Options::*member) {
  table.custom({"max_slice_length", "integer", "", ">= 0",
                "the longest slice of a trajectory in a batch; 0: whole trajectories"},
               [member](const Options& o) { return config_text((o.*member).value_or(0)); },
               [member](ConfigTable& t, Options& o) {
                 const int64_t v = t.integer("max_slice_length", (o.*member).value_or(0), 0, kBig);
                 o.*member = v == 0 ? std::nullopt : std::optional<int64_t>(v);
               });
}

const std::map<std::string, LayerFactory>& activations() {
  static const std::map<std::string, LayerFactory> table{
      {"relu", [] { return Relu(); }},       {"tanh", [] { return Tanh(); }},
      {"gelu", [] { return Gelu(); }},       {"elu", [] { return Elu(); }},
      {"selu", [] { return Selu(); }},       {"swish", [] { return Swish(); }},
      {"sigmoid", [] { return Sigmoid(); }}, {"leaky_relu", [] { return LeakyRelu(); }}};
  return table;
}

}  // namespace

const OptionTable<TaskSection>& task_keys() {
  static const OptionTable<TaskSection> table = [] {
    OptionTable<TaskSection> t;
    t.custom({"env", "string", "", "a registered id (ctrax list environments)", "the environment"},
             [](const TaskSection& o) { return "\"" + o.env + "\""; },
             [](ConfigTable& c, TaskSection& o) {
               o.env = c.string("env", o.env);
               if (!find_env_spec(o.env))
                 c.fail("env", "unknown environment \"" + o.env + "\"; known: " + join_names(env_names()));
             });
    t.integer("n_envs", &TaskSection::n_envs, 1, 1 << 20, "environment copies stepped together in collection");
    t.integer("n_eval_envs", &TaskSection::n_eval_envs, 1, 1 << 20, "copies of the evaluation environment");
    t.integer("initial_trajectories", &TaskSection::initial_trajectories, 0, kBig,
              "random-policy pieces stored as epoch 0");
    t.number("gamma", &TaskSection::gamma, 0.0, 1.0, "the discount factor");
    t.optional_integer("max_steps", &TaskSection::max_steps, 1, kBig,
                       "the longest collected piece; none: pieces end with episodes");
    t.optional_integer("time_limit", &TaskSection::time_limit, 1, kBig,
                       "the episode's truncation limit; none: max_steps, else the environment's own");
    t.integer("n_replay_epochs", &TaskSection::n_replay_epochs, 0, kBig, "past epochs kept for training");
    return t;
  }();
  return table;
}

const OptionTable<AgentOptions>& agent_keys() {
  using O = AgentOptions;
  static const OptionTable<O> table = [] {
    OptionTable<O> t;
    t.optional_integer("n_trajectories_per_epoch", &O::n_trajectories_per_epoch, 1, kBig,
                       "trajectories collected per epoch (or n_interactions_per_epoch, exactly one)");
    t.optional_integer("n_interactions_per_epoch", &O::n_interactions_per_epoch, 1, kBig,
                       "environment steps collected per epoch (or n_trajectories_per_epoch)");
    t.integer("n_eval_episodes", &O::n_eval_episodes, 0, kBig, "evaluation episodes per temperature and epoch");
    t.numbers("eval_temperatures", &O::eval_temperatures, 0.0, 1e6, "the evaluation temperatures (0: greedy)");
    t.optional_integer("eval_max_steps", &O::eval_max_steps, 1, kBig,
                       "the longest evaluation episode; none: the task's max_steps");
    t.boolean("only_eval", &O::only_eval, "collect for evaluation only, train nothing");
    t.integer("checkpoints_to_keep", &O::checkpoints_to_keep, 1, 1000, "checkpoints kept in the run directory");
    t.integer("checkpoint_every", &O::checkpoint_every, 1, kBig, "epochs between checkpoints");
    t.integer("n_confirm_episodes", &O::n_confirm_episodes, 1, kBig,
              "episodes of the confirmation run when the target return is reached");
    t.optional_integer("n_confirm_envs", &O::n_confirm_envs, 1, kBig,
                       "environment copies a confirmation plays in at once (at most its episodes); "
                       "none: the task's n_eval_envs");
    t.choice("confirm_statistic", &O::confirm_statistic,
             {{"mean", O::ConfirmStatistic::mean}, {"ci95_low", O::ConfirmStatistic::ci95_low}},
             "what of the confirmation's returns must reach the target");
    t.boolean("anneal_learning_rate", &O::anneal_learning_rate,
              "scale every learning rate by 1 - progress (SB3's linear schedule)");
    t.boolean("compile", &O::compile, "capture each training step once and replay it");
    return t;
  }();
  return table;
}

const OptionTable<PolicyAgentOptions>& policy_keys() {
  using O = PolicyAgentOptions;
  static const OptionTable<O> table = [] {
    OptionTable<O> t;
    t.integer("batch_size", &O::policy_batch_size, 1, kBig, "slices per policy batch");
    t.integer("train_steps_per_epoch", &O::policy_train_steps_per_epoch, 0, kBig, "policy training steps per epoch");
    t.integer("evals_per_epoch", &O::policy_evals_per_epoch, 0, kBig, "evaluations of the policy loss per epoch");
    t.integer("eval_steps", &O::policy_eval_steps, 1, kBig, "batches per such evaluation");
    add_slice_length(t, &O::max_slice_length);
    return t;
  }();
  return table;
}

OptionTable<ValueSection> value_keys(const Space* actions) {
  using O = ValueSection;
  OptionTable<O> t;
  t.integer("batch_size", &O::value_batch_size, 1, kBig, "slices per value batch");
  t.integer("train_steps_per_epoch", &O::value_train_steps_per_epoch, 0, kBig, "value training steps per epoch");
  t.integer("evals_per_epoch", &O::value_evals_per_epoch, 1, kBig,
            "chunks of training, each followed by an evaluation and a target sync");
  t.integer("eval_steps", &O::value_eval_steps, 1, kBig, "batches per evaluation");
  t.integer("n_shared_layers", &O::n_shared_layers, 0, 1000, "value-network layers shared with the policy");
  t.integer("added_policy_slice_length", &O::added_policy_slice_length, 0, kBig,
            "extra steps in policy slices for the value targets");
  t.boolean("scale_value_targets", &O::scale_value_targets, "scale the value targets by 1 - gamma");
  t.boolean("on_policy", &O::on_policy, "policy batches from the last epoch only");
  t.choice<std::string>("advantage_estimator", &O::advantage_estimator_name,
                        {{"monte_carlo", "monte_carlo"}, {"td_k", "td_k"}, {"td_lambda", "td_lambda"}, {"gae", "gae"}},
                        "how advantages are estimated");
  t.number("advantage_lambda", &O::advantage_lambda, 0.0, 1.0, "lambda of td_lambda and gae");
  t.boolean("advantage_normalization", &O::advantage_normalization, "normalise the advantages");
  t.number("advantage_normalization_epsilon", &O::advantage_normalization_epsilon, 1e-30, 1e6,
           "added to the standard deviation when normalising");
  t.number("advantage_normalization_factor", &O::advantage_normalization_factor, -kInf, kInf,
           "the normalised advantages' scale");
  // Rollout passes (SB3-style epochs) and their stabilisers.
  const auto passes = [](const O& o) { return o.rollout_passes.has_value(); };
  const std::string needs_passes = "applies to rollout passes: give value.rollout_passes";
  t.optional_integer("rollout_passes", &O::rollout_passes, 1, kBig,
                     "passes over each epoch's rollout in minibatches; none: Trax's random slice batches");
  t.integer("minibatch_size", &O::minibatch_size, 1, kBig, "rows per minibatch")
      .only_if(passes, needs_passes, "with rollout_passes");
  t.boolean("normalize_advantages_per_minibatch", &O::normalize_advantages_per_minibatch,
            "normalise advantages per minibatch (SB3), else once per epoch")
      .only_if(passes, needs_passes, "with rollout_passes");
  t.optional_number("target_kl", &O::target_kl, 1e-12, kInf, "end the epoch's passes once the KL passes it")
      .only_if(passes, needs_passes, "with rollout_passes");
  t.optional_number("value_clip", &O::value_clip, 1e-12, kInf, "clip the value change (value-network units)")
      .only_if(passes, needs_passes, "with rollout_passes");
  // Q-value baselines: the value network is ActionValue, a Q-network.
  const auto q = [](const O& o) { return o.q_value; };
  const std::string needs_q = "applies to Q-value baselines: give value.q_value = true";
  t.boolean("q_value", &O::q_value, "the value network is a Q-network (ActionValue)");
  t.boolean("q_value_aggregate_max", &O::q_value_aggregate_max,
            "value targets: the max of Q over the sampled actions, else the mean")
      .only_if(q, needs_q, "with q_value = true");
  t.boolean("q_value_direct_advantages", &O::q_value_direct_advantages,
            "policy advantages Q(o, a) - V(o), not the estimator's")
      .only_if(q, needs_q, "with q_value = true");
  t.integer("q_value_n_samples", &O::q_value_n_samples, 1, 1 << 20, "actions sampled per state")
      .only_if(q, needs_q, "with q_value = true");
  const bool discrete = actions && actions->kind() == Space::Kind::discrete;
  const int64_t k = discrete ? actions->n() : 1;
  t.custom({"vocab_size", "integer", "", ">= k", "the action embedding's ids (Discrete(k) action spaces only)"},
           [actions, k](const O&) { return actions ? config_text(k) : std::string("k"); },
           [discrete, k](ConfigTable& c, O& o) {
             if (!discrete && c.has("vocab_size")) c.fail("vocab_size", "applies to discrete action spaces only");
             o.vocab_size = discrete ? c.integer("vocab_size", k, k, 1 << 24) : 1;
           })
      .only_if(q, needs_q, "with q_value = true");
  return t;
}

const OptionTable<ActorCriticJointOptions>& joint_keys() {
  using O = ActorCriticJointOptions;
  static const OptionTable<O> table = [] {
    OptionTable<O> t;
    t.integer("batch_size", &O::batch_size, 1, kBig, "slices per batch");
    t.integer("train_steps_per_epoch", &O::train_steps_per_epoch, 0, kBig, "training steps per epoch");
    t.integer("supervised_evals_per_epoch", &O::supervised_evals_per_epoch, 0, kBig, "evaluations per epoch");
    t.integer("supervised_eval_steps", &O::supervised_eval_steps, 1, kBig, "batches per evaluation");
    add_slice_length(t, &O::max_slice_length);
    t.custom({"normalize_advantages", "boolean", "", "true, false",
              "normalise the advantages over each batch (default: the algorithm's; AWRJoint false)"},
             [](const O& o) { return config_text(o.normalize_advantages.value_or(true)); },
             [](ConfigTable& c, O& o) {
               o.normalize_advantages = c.boolean("normalize_advantages", o.normalize_advantages.value_or(true));
             });
    t.number("return_lambda", &O::return_lambda, 0.0, 1.0, "lambda of the value targets' lambda-returns");
    return t;
  }();
  return table;
}

std::vector<std::string> activation_names() {
  std::vector<std::string> out;
  for (const auto& [name, f] : activations()) out.push_back(name);
  return out;
}

const OptionTable<ModelSection>& model_keys() {
  using O = ModelSection;
  static const OptionTable<O> table = [] {
    OptionTable<O> t;
    std::vector<std::pair<std::string, std::string>> acts;
    for (const std::string& a : activation_names()) acts.emplace_back(a, a);
    t.integers("widths", &O::widths, 1, 1 << 20, "the hidden layers' widths");
    t.choice("activation", &O::activation, acts, "the hidden layers' activation");
    t.choice<std::string>("init", &O::init, {{"glorot", "glorot"}, {"orthogonal", "orthogonal"}},
                          "the weights' initialisation");
    const auto glorot = [](const O& o) { return o.init == "glorot"; };
    const auto orthogonal_init = [](const O& o) { return o.init == "orthogonal"; };
    const std::string needs_orthogonal = "applies to init = \"orthogonal\"";
    t.number("head_init_range", &O::head_init_range, 0.0, 1e6, "the heads' uniform range; 0: glorot")
        .only_if(glorot, "applies to init = \"glorot\"; with init = \"orthogonal\" give head_gain",
                 "init = \"glorot\" only");
    t.number("init_gain", &O::init_gain, 0.0, 1e6, "the hidden layers' orthogonal gain")
        .only_if(orthogonal_init, needs_orthogonal, "init = \"orthogonal\" only");
    t.custom({"head_gain", "number", "", range_text(0.0, 1e6), "the head's orthogonal gain"},
             [](const O&) { return std::string("0.01 (policy), 1.0 (value)"); },
             [](ConfigTable& c, O& o) {
               const double fallback = o.kind == O::Kind::value || o.kind == O::Kind::q_value ? 1.0 : o.head_gain;
               o.head_gain = c.number("head_gain", fallback, 0.0, 1e6);
             })
        .only_if(orthogonal_init, needs_orthogonal, "init = \"orthogonal\" only");
    t.number("value_head_gain", &O::value_head_gain, 0.0, 1e6, "the value head's orthogonal gain")
        .only_if([](const O& o) { return o.init == "orthogonal" && o.kind == O::Kind::joint; },
                 "applies to joint models with init = \"orthogonal\"", "joint models, init = \"orthogonal\" only");
    const auto q = [](const O& o) { return o.kind == O::Kind::q_value; };
    const std::string needs_q = "applies to Q-networks (value.q_value = true)";
    const std::string q_only = "Q-networks: value.q_value = true";
    t.integer("injection_dim", &O::injection_dim, 1, 1 << 20, "the action injection's width")
        .only_if(q, needs_q, q_only);
    t.integer("injection_layers", &O::injection_layers, 1, 1000, "the action injection's layers")
        .only_if(q, needs_q, q_only);
    t.boolean("normalize", &O::normalize, "a running observation Normalize in front");
    t.number("normalize_sample_limit", &O::normalize_sample_limit, 1.0, kInf, "Normalize's sample limit");
    t.number("normalize_clip", &O::normalize_clip, 0.0, kInf, "Normalize's clip of the normalised values");
    return t;
  }();
  return table;
}

ModelFactories model_factories(const ModelSection& m) {
  ModelFactories out;
  const LayerFactory act = activations().at(m.activation);
  MLPOptions mlp;
  mlp.out_activation = true;
  if (m.init == "orthogonal") {
    mlp.kernel_init = orthogonal(m.init_gain);
    mlp.bias_init = constant_init(0.0);
    out.head_init = orthogonal(m.head_gain);
    if (m.kind == ModelSection::Kind::joint) out.value_head_init = orthogonal(m.value_head_gain);
  } else {
    out.head_init_range = m.head_init_range;
  }
  if (!m.widths.empty()) out.body = [widths = m.widths, act, mlp] { return MLP(widths, act, mlp); };
  if (m.normalize) {
    NormalizeOptions n;
    n.sample_limit = m.normalize_sample_limit;
    n.clip = m.normalize_clip;
    out.normalizer = [n] { return Normalize(n); };
  }
  return out;
}

const OptionTable<DistributionSection>& distribution_keys() {
  using O = DistributionSection;
  static const OptionTable<O> table = [] {
    OptionTable<O> t;
    const auto box = [](const O& o) { return o.box; };
    const std::string needs_box =
        "a Gaussian option, but the action space is discrete (a Categorical policy); "
        "[distribution] options apply to Box action spaces only";
    t.number("std", &O::std, 1e-9, 1e9, "the Gaussian's initial standard deviation")
        .only_if(box, needs_box, "Box action spaces only");
    t.choice("learn_std", &O::learn_std,
             {{"none", LearnStd::none},
              {"shared", LearnStd::shared},
              {"separate", LearnStd::separate},
              {"state_independent", LearnStd::state_independent}},
             "whether the std is learned: none, one output of the network for all actions (shared), one per "
             "action (separate), or a learned log std per action that does not depend on the state "
             "(state_independent, std = exp(log_std), starting at std)")
        .only_if(box, needs_box, "Box action spaces only");
    return t;
  }();
  return table;
}

DistributionPtr make_distribution(const DistributionSection& d, const Space& actions) {
  if (actions.kind() != Space::Kind::box) return create_distribution(actions);
  return std::make_shared<Gaussian>(actions.shape(), d.std, d.learn_std);
}

}  // namespace ctrax::tools
