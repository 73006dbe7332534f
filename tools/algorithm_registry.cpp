// The algorithm registry: see algorithm_registry.h. The built-ins register here, through the
// same call a user's algorithm uses, the first time the registry is read.
#include "algorithm_registry.h"

#include <deque>
#include <mutex>

namespace ctrax::tools {

namespace {

constexpr double kInf = kAnyNumber;

struct Registry {
  std::mutex mutex;
  std::deque<AlgorithmSpec> specs;  // a deque: find_algorithm's pointers stay valid
};

Registry& registry() {
  static Registry r;
  return r;
}

// The sections and top-level keys of every run configuration, which no algorithm may take.
bool reserved(const std::string& section) {
  for (const char* s : {"task", "agent", "policy", "value", "joint", "algorithm", "seed", "epochs", "total_env_steps",
                        "target_eval_return"})
    if (section == s) return true;
  return false;
}

void add(Registry& r, AlgorithmSpec spec) {
  CTRAX_REQUIRE(!spec.name.empty(), "register_algorithm: the name is empty");
  CTRAX_REQUIRE(spec.read_options && spec.make, "register_algorithm(\"", spec.name,
                "\"): read_options and make are required (tools::algorithm_spec fills both)");
  CTRAX_REQUIRE(!reserved(spec.section), "register_algorithm(\"", spec.name, "\"): the section [", spec.section,
                "] is one every run configuration has; choose another");
  for (const AlgorithmSpec& s : r.specs) {
    CTRAX_REQUIRE(s.name != spec.name, "register_algorithm: \"", spec.name, "\" is already registered");
    CTRAX_REQUIRE(spec.section.empty() || s.section != spec.section, "register_algorithm(\"", spec.name,
                  "\"): the section [", spec.section, "] is already ", s.name, "'s");
  }
  r.specs.push_back(std::move(spec));
}

OptionTable<A2COptions> a2c_keys() {
  OptionTable<A2COptions> t;
  t.number("entropy_coeff", &A2COptions::entropy_coeff, 0.0, kInf, "the entropy bonus's weight");
  return t;
}

OptionTable<PPOOptions> ppo_keys() {
  OptionTable<PPOOptions> t;
  t.number("epsilon", &PPOOptions::epsilon, 1e-9, 0.999999, "the probability ratio's clip");
  t.number("entropy_coeff", &PPOOptions::entropy_coeff, 0.0, kInf, "the entropy bonus's weight");
  t.boolean("anneal_epsilon", &PPOOptions::anneal_epsilon, "epsilon times 1 - progress in each epoch (SB3)");
  return t;
}

template <class Options>
void add_awr_keys(OptionTable<Options>& t) {
  t.number("beta", &Options::beta, 1e-9, kInf, "the advantage weights' temperature, exp(A / beta)");
  t.number("w_max", &Options::w_max, 1e-9, kInf, "the weights' clip");
}

OptionTable<AWROptions> awr_keys() {
  OptionTable<AWROptions> t;
  add_awr_keys(t);
  t.number("entropy_coeff", &AWROptions::entropy_coeff, 0.0, kInf, "the entropy bonus's weight");
  return t;
}

OptionTable<SamplingAWROptions> sampling_awr_keys() {
  OptionTable<SamplingAWROptions> t;
  add_awr_keys(t);
  t.number("entropy_coeff", &SamplingAWROptions::entropy_coeff, 0.0, kInf, "the entropy bonus's weight");
  t.boolean("reweight", &SamplingAWROptions::reweight, "normalise each state's sample weights");
  return t;
}

OptionTable<PPOJointOptions> ppo_joint_keys() {
  using O = PPOJointOptions;
  OptionTable<O> t;
  t.number("epsilon", &O::epsilon, 1e-9, 0.999999, "the probability ratio's clip");
  t.number("value_loss_coeff", &O::value_loss_coeff, 0.0, kInf, "the value loss's weight");
  t.number("entropy_coeff", &O::entropy_coeff, 0.0, kInf, "the entropy bonus's weight");
  return t;
}

OptionTable<A2CJointOptions> a2c_joint_keys() {
  using O = A2CJointOptions;
  OptionTable<O> t;
  t.number("value_loss_coeff", &O::value_loss_coeff, 0.0, kInf, "the value loss's weight");
  t.number("entropy_coeff", &O::entropy_coeff, 0.0, kInf, "the entropy bonus's weight");
  return t;
}

OptionTable<AWRJointOptions> awr_joint_keys() {
  using O = AWRJointOptions;
  OptionTable<O> t;
  add_awr_keys(t);
  t.number("value_loss_coeff", &O::value_loss_coeff, 0.0, kInf, "the value loss's weight");
  t.number("entropy_coeff", &O::entropy_coeff, 0.0, kInf, "the entropy bonus's weight");
  return t;
}

void register_builtins(Registry& r) {
  using N = AlgorithmNetworks;
  add(r, algorithm_spec<PolicyGradient>("PolicyGradient", "", N::policy));
  add(r, algorithm_spec<A2C>("A2C", "a2c", N::policy_and_value, a2c_keys()));
  add(r, algorithm_spec<PPO>("PPO", "ppo", N::policy_and_value, ppo_keys()));
  add(r, algorithm_spec<AWR>("AWR", "awr", N::policy_and_value, awr_keys()));
  AlgorithmSpec sampling = algorithm_spec<SamplingAWR>("SamplingAWR", "sampling_awr", N::policy_and_value,
                                                       sampling_awr_keys());
  sampling.network_defaults = [](NetworkOptions& n) { n.value.q_value = true; };
  sampling.check = [](const NetworkOptions& n, const ConfigTable& root) {
    if (!n.value.q_value) root.fail("value.q_value", "SamplingAWR always uses a Q-network; it must be true");
  };
  add(r, std::move(sampling));
  add(r, algorithm_spec<PPOJoint>("PPOJoint", "ppo_joint", N::joint, ppo_joint_keys()));
  add(r, algorithm_spec<A2CJoint>("A2CJoint", "a2c_joint", N::joint, a2c_joint_keys()));
  AlgorithmSpec awr_joint = algorithm_spec<AWRJoint>("AWRJoint", "awr_joint", N::joint, awr_joint_keys());
  // Trax's AWRJoint never normalises its advantages (its weights use A as it is).
  awr_joint.network_defaults = [](NetworkOptions& n) { n.joint.normalize_advantages = false; };
  add(r, std::move(awr_joint));
}

Registry& initialised_registry() {
  static std::once_flag once;
  Registry& r = registry();
  std::call_once(once, [&r] {
    std::lock_guard<std::mutex> lock(r.mutex);
    register_builtins(r);
  });
  return r;
}

}  // namespace

void register_algorithm(AlgorithmSpec spec) {
  Registry& r = initialised_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  add(r, std::move(spec));
}

const AlgorithmSpec* find_algorithm(const std::string& name) {
  Registry& r = initialised_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (const AlgorithmSpec& s : r.specs)
    if (s.name == name) return &s;
  return nullptr;
}

std::vector<std::string> algorithm_names() {
  Registry& r = initialised_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::string> out;
  for (const AlgorithmSpec& s : r.specs) out.push_back(s.name);
  return out;
}

}  // namespace ctrax::tools
