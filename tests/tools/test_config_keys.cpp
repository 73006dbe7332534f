// The key tables (tools/option_table.h) and the algorithm registry (tools/algorithm_registry.h):
// docs/configs.md is what the tables generate, the reader accepts exactly the tables' keys, and a
// user's algorithm registered once trains from a TOML config and through `ctrax train`.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <algorithm_registry.h>
#include <commands.h>
#include <config.h>
#include <config_reference.h>
#include <ctrax/ctrax.h>
#include <run_config.h>

using namespace ctrax;
namespace fs = std::filesystem;

namespace {

tools::RunConfig read(const std::string& text) {
  return tools::read_run_config(tools::parse_config_text(text, "run.toml"), "run.toml");
}

// The keys of `section` in a resolved configuration (its values, not its sub-tables).
std::set<std::string> resolved_keys(const tools::RunConfig& c, const std::string& section) {
  const toml::table* t = section.empty() ? &c.resolved : c.resolved.at_path(section).as_table();
  REQUIRE(t != nullptr);
  std::set<std::string> out;
  for (const auto& [key, value] : *t)
    if (!value.is_table()) out.insert(std::string(key.str()));
  return out;
}

std::set<std::string> doc_keys(const std::vector<tools::KeyDoc>& docs) {
  std::set<std::string> out;
  for (const tools::KeyDoc& d : docs) out.insert(d.key);
  return out;
}

// The keys a resolved section holds: every documented key but the optional ones left out
// (default "none"), plus `given`, optional keys the config gave.
std::set<std::string> written_keys(const std::vector<tools::KeyDoc>& docs, const std::set<std::string>& given = {}) {
  std::set<std::string> out = given;
  for (const tools::KeyDoc& d : docs)
    if (d.default_value != "none") out.insert(d.key);
  return out;
}

// A user's algorithm: an actor-critic with its own loss (PPO's clipped loss without the entropy
// bonus), whose one option is the clip. It does not call restore(): build_agent finishes it.
struct ClipOnlyOptions {
  double clip = 0.3;
};

class ClipOnlyPPO final : public ActorCriticAgent {
 public:
  ClipOnlyPPO(TaskPtr task, AgentOptions agent, PolicyAgentOptions policy, ActorCriticOptions value,
              ClipOnlyOptions options)
      : ActorCriticAgent(task, std::move(agent), policy, std::move(value),
                         PPOLoss(policy_distribution(task, policy), options.clip, 0.0), {}) {}
  std::string name() const override { return "ClipOnlyPPO"; }
};

void register_clip_only() {
  static const bool registered = [] {
    tools::OptionTable<ClipOnlyOptions> keys;
    keys.number("clip", &ClipOnlyOptions::clip, 1e-6, 0.999, "the probability ratio's clip");
    tools::register_algorithm(tools::algorithm_spec<ClipOnlyPPO, ClipOnlyOptions>(
        "ClipOnlyPPO", "clip_only_ppo", tools::AlgorithmNetworks::policy_and_value, keys));
    return true;
  }();
  (void)registered;
}

const std::string kSmall =
    "[agent]\nn_interactions_per_epoch = 64\nn_eval_episodes = 1\n"
    "[policy]\nmodel = { widths = [8] }\ntrain_steps_per_epoch = 2\nbatch_size = 4\n"
    "[value]\nmodel = { widths = [8] }\ntrain_steps_per_epoch = 2\nbatch_size = 4\n";

}  // namespace

TEST_CASE("docs/configs.md is what the key tables generate") {
  std::ifstream in(CTRAX_FIXTURES_DIR "/../../docs/configs.md");
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  // On a mismatch: build, then `build/tools/ctrax list keys > docs/configs.md`.
  CHECK(text.str() == tools::config_reference_markdown());
}

TEST_CASE("The reader asks for exactly the tables' keys, and writes every one back") {
  // Every conditional key switched on: rollout passes and a Q-value baseline.
  const tools::RunConfig ppo = read(
      "algorithm = \"PPO\"\n[agent]\nn_interactions_per_epoch = 64\n"
      "[value]\nrollout_passes = 2\nq_value = true\n[value.model]\ninit = \"orthogonal\"\n");
  CHECK(resolved_keys(ppo, "") == written_keys(tools::run_keys().docs()));
  CHECK(resolved_keys(ppo, "task") == written_keys(tools::task_keys().docs()));
  CHECK(resolved_keys(ppo, "agent") == written_keys(tools::agent_keys().docs(), {"n_interactions_per_epoch"}));
  CHECK(resolved_keys(ppo, "policy") == written_keys(tools::policy_keys().docs()));
  CHECK(resolved_keys(ppo, "value") == written_keys(tools::value_keys(nullptr).docs(), {"rollout_passes"}));
  CHECK(resolved_keys(ppo, "ppo") == written_keys(tools::find_algorithm("PPO")->keys));
  // Every documented key is accepted (the optional ones given here).
  CHECK_NOTHROW(read("algorithm = \"PPO\"\ntotal_env_steps = 1000\ntarget_eval_return = 1.0\n"
                     "[task]\nmax_steps = 10\ntime_limit = 10\n"
                     "[agent]\nn_interactions_per_epoch = 64\nn_eval_episodes = 1\neval_max_steps = 5\n"
                     "[value]\nrollout_passes = 2\ntarget_kl = 0.1\nvalue_clip = 0.2\n"
                     "[policy.optimizer]\nclip_grad_norm = 0.5\n"));
  std::set<std::string> model = doc_keys(tools::model_keys().docs());
  model.erase("head_init_range");  // glorot only
  model.erase("value_head_gain");  // joint models only
  CHECK(resolved_keys(ppo, "value.model") == model);
  std::set<std::string> adam{"name"};
  for (const std::string& k : doc_keys(tools::optimizer_specs().front().keys)) adam.insert(k);
  adam.erase("clip_grad_norm");  // optional, none by default: not written back
  CHECK(resolved_keys(ppo, "policy.optimizer") == adam);
  // Every algorithm's section.
  for (const std::string& name : tools::algorithm_names()) {
    const tools::AlgorithmSpec* spec = tools::find_algorithm(name);
    if (spec->section.empty() || name == "ClipOnlyPPO") continue;
    CAPTURE(name);
    const bool joint = spec->networks == tools::AlgorithmNetworks::joint;
    const tools::RunConfig c =
        read("algorithm = \"" + name + "\"\n[agent]\nn_interactions_per_epoch = 64\n" + (joint ? "[joint]\n" : ""));
    CHECK(resolved_keys(c, spec->section) == written_keys(spec->keys));
    if (joint) CHECK(resolved_keys(c, "joint") == written_keys(tools::joint_keys().docs()));
  }
}

TEST_CASE("The defaults come from the options structs") {
  const tools::RunConfig c = read("algorithm = \"PPO\"\n[agent]\nn_interactions_per_epoch = 64\n");
  CHECK(c.options<PPOOptions>().epsilon == PPOOptions{}.epsilon);
  CHECK(c.options<PPOOptions>().entropy_coeff == PPOOptions{}.entropy_coeff);
  CHECK(c.value.value_batch_size == ActorCriticOptions{}.value_batch_size);
  CHECK(c.policy.policy_train_steps_per_epoch == PolicyAgentOptions{}.policy_train_steps_per_epoch);
  CHECK(c.task.gamma == RLTaskOptions{}.gamma);
  CHECK(c.agent.checkpoints_to_keep == AgentOptions{}.checkpoints_to_keep);
  // The optimizer's learning rate is its options struct's.
  CHECK(c.policy.policy_optimizer->learning_rate_at(0) == AdamOptions{}.learning_rate.constant());
  CHECK(c.resolved.at_path("policy.optimizer.learning_rate").value<double>() == AdamOptions{}.learning_rate.constant());
  // AWRJoint's own default: no advantage normalisation.
  const tools::RunConfig awr = read("algorithm = \"AWRJoint\"\n[agent]\nn_interactions_per_epoch = 64\n");
  CHECK(awr.joint.normalize_advantages == false);
  CHECK(awr.resolved.at_path("joint.normalize_advantages").value<bool>() == false);
  CHECK(read("algorithm = \"PPOJoint\"\n[agent]\nn_interactions_per_epoch = 64\n").joint.normalize_advantages == true);
}

TEST_CASE("A registered algorithm trains from a TOML config, and is listed and documented") {
  register_clip_only();
  const std::vector<std::string> names = tools::algorithm_names();
  CHECK(std::find(names.begin(), names.end(), "ClipOnlyPPO") != names.end());
  const tools::RunConfig c = read("algorithm = \"ClipOnlyPPO\"\n" + kSmall + "[clip_only_ppo]\nclip = 0.1\n");
  CHECK(c.options<ClipOnlyOptions>().clip == 0.1);
  TaskPtr task = tools::make_task(c);
  std::unique_ptr<Agent> agent = tools::make_agent(c, task, "");
  const Metrics row = agent->run(2);
  CHECK(agent->epoch() == 2);
  CHECK(std::isfinite(row.at("eval/return_mean")));
  CHECK(tools::config_reference_markdown().find("## [clip_only_ppo]") != std::string::npos);
  // Its section is checked like a built-in's.
  CHECK_THROWS_WITH_AS(read("algorithm = \"ClipOnlyPPO\"\n" + kSmall + "[clip_only_ppo]\nclip = 2.0\n"),
                       doctest::Contains("clip_only_ppo.clip: expected a number in"), Error);
  CHECK_THROWS_WITH_AS(read("algorithm = \"ClipOnlyPPO\"\n" + kSmall + "[ppo]\nepsilon = 0.1\n"),
                       doctest::Contains("ppo: unknown key"), Error);

  // Through the command line: `ctrax train` of a config file, then `ctrax list algorithms`.
  const fs::path dir = fs::temp_directory_path() / ("ctrax_test_algorithm_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  {
    std::ofstream config(dir / "clip.toml");
    config << "algorithm = \"ClipOnlyPPO\"\nepochs = 2\n" << kSmall;
  }
  std::vector<std::string> args{"ctrax", "train", (dir / "clip.toml").string(), "--output-dir", (dir / "run").string()};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  CHECK(tools::run_cli(static_cast<int>(argv.size()), argv.data()) == 0);
  CHECK(fs::exists(dir / "run" / "metrics.csv"));
  fs::remove_all(dir);
}

TEST_CASE("register_algorithm refuses a taken name or section, a reserved section and a wrong constructor") {
  register_clip_only();
  using tools::AlgorithmNetworks;
  tools::OptionTable<ClipOnlyOptions> keys;
  CHECK_THROWS_WITH_AS(tools::register_algorithm(tools::algorithm_spec<ClipOnlyPPO, ClipOnlyOptions>(
                           "ClipOnlyPPO", "other", AlgorithmNetworks::policy_and_value, keys)),
                       doctest::Contains("\"ClipOnlyPPO\" is already registered"), Error);
  CHECK_THROWS_WITH_AS(tools::register_algorithm(tools::algorithm_spec<ClipOnlyPPO, ClipOnlyOptions>(
                           "Other", "ppo", AlgorithmNetworks::policy_and_value, keys)),
                       doctest::Contains("the section [ppo] is already PPO's"), Error);
  CHECK_THROWS_WITH_AS(tools::register_algorithm(tools::algorithm_spec<ClipOnlyPPO, ClipOnlyOptions>(
                           "Other", "value", AlgorithmNetworks::policy_and_value, keys)),
                       doctest::Contains("the section [value] is one every run configuration has"), Error);
  CHECK_THROWS_WITH_AS((tools::algorithm_spec<ClipOnlyPPO, ClipOnlyOptions>("Other", "other", AlgorithmNetworks::joint,
                                                                           keys)),
                       doctest::Contains("the agent type has no constructor of the shape its networks call"), Error);
  CHECK_THROWS_WITH_AS(tools::register_algorithm(tools::AlgorithmSpec{}), doctest::Contains("the name is empty"),
                       Error);
}
