// Strict TOML configuration reading (tools/config.h): typed getters with defaults written
// back, ranges, choices, sub-tables, unknown keys with file and line, and --set overrides.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <map>
#include <filesystem>
#include <fstream>

#include <config.h>
#include <ctrax/ctrax.h>
#include <ctrax/base/error.h>
#include <ctrax/kernels/denormals.h>

using ctrax::Error;
using ctrax::tools::apply_overrides;
using ctrax::tools::remove_keys;
using ctrax::tools::ConfigTable;
using ctrax::tools::parse_config_file;
using ctrax::tools::parse_config_text;

TEST_CASE("Config reading: values, defaults written back, sub-tables") {
  toml::table t = parse_config_text(
      "seed = 3\nrate = 0.5\nname = \"tanh\"\n[policy]\nwidths = [64, 32]\nnormalize = true\n", "test.toml");
  ConfigTable root(t, "test.toml");
  CHECK(root.integer("seed", 0, 0) == 3);
  CHECK(root.number("rate", 1.0, 0.0, 1.0) == 0.5);
  CHECK(root.number("missing", 2.5) == 2.5);
  CHECK(root.choice("name", "relu", {"relu", "tanh"}) == "tanh");
  CHECK(!root.optional_integer("absent").has_value());
  ConfigTable policy = root.table("policy");
  CHECK(policy.integers("widths", {}, 1, 4096) == std::vector<int64_t>{64, 32});
  CHECK(policy.boolean("normalize", false));
  CHECK(policy.numbers("temperatures", {0.0, 0.5}, 0, 10) == std::vector<double>{0.0, 0.5});
  CHECK_NOTHROW(policy.finish());
  CHECK_NOTHROW(root.finish());
  // Defaults are now part of the table: the resolved configuration.
  CHECK(t["missing"].value<double>() == 2.5);
  CHECK(t["policy"]["temperatures"].as_array()->size() == 2);
  // An integer is accepted where a number is expected.
  CHECK(root.number("seed", 0.0) == 3.0);
}

TEST_CASE("Config reading: errors name the file, the line, the key and what is allowed") {
  toml::table t = parse_config_text(
      "seed = -1\nrate = \"fast\"\nname = \"sigmoid\"\n[policy]\nwidths = [64, 0]\nbatch = 1.5\nextra = 1\n",
      "cfg.toml");
  ConfigTable root(t, "cfg.toml");
  CHECK_THROWS_WITH_AS(root.integer("seed", 0, 0), "cfg.toml:1: seed: expected an integer in [0, 9223372036854775807], got -1",
                       Error);
  CHECK_THROWS_WITH_AS(root.number("rate", 1.0), doctest::Contains("cfg.toml:2: rate: expected a number, got a string 'fast'"),
                       Error);
  CHECK_THROWS_WITH_AS(root.choice("name", "relu", {"relu", "tanh"}),
                       "cfg.toml:3: name: expected one of relu, tanh, got \"sigmoid\"", Error);
  ConfigTable policy = root.table("policy");
  CHECK_THROWS_WITH_AS(policy.integers("widths", {}, 1, 10), doctest::Contains("cfg.toml:5: policy.widths: expected an array of integers in [1, 10]"),
                       Error);
  CHECK_THROWS_WITH_AS(policy.integer("batch", 1, 1), doctest::Contains("cfg.toml:6: policy.batch: expected an integer, got a number 1.5"),
                       Error);
  CHECK_THROWS_WITH_AS(policy.finish(),
                       "cfg.toml:7: policy.extra: unknown key; allowed here: batch, widths", Error);
  CHECK_THROWS_WITH_AS(root.table("seed"), doctest::Contains("seed: expected a table, got an integer"), Error);
  CHECK_THROWS_WITH_AS(parse_config_text("a = [1,\nb", "broken.toml"), doctest::Contains("broken.toml:2:"), Error);
}

TEST_CASE("Config files: a missing file, and --set overrides") {
  CHECK_THROWS_WITH_AS(parse_config_file("/nonexistent/ctrax.toml"),
                       "cannot read the configuration file /nonexistent/ctrax.toml: cannot open for reading: No such file or directory", Error);
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("ctrax_test_config_" + std::to_string(getpid()) + ".toml");
  std::ofstream(path) << "algorithm = \"PPO\"\n[task]\nenv = \"CartPole-v1\"\n";
  toml::table t = parse_config_file(path);
  apply_overrides(t, {"task.env=Acrobot-v1", "seed=7", "policy.optimizer.b1=0.8", "agent.eval_temperatures=[0, 0.5]",
                      "policy.model.activation=\"relu\""});
  CHECK(t["task"]["env"].value<std::string>() == "Acrobot-v1");
  CHECK(t["seed"].value<int64_t>() == 7);
  CHECK(t["policy"]["optimizer"]["b1"].value<double>() == 0.8);
  CHECK(t["agent"]["eval_temperatures"].as_array()->size() == 2);
  CHECK(t["policy"]["model"]["activation"].value<std::string>() == "relu");
  CHECK_THROWS_WITH_AS(apply_overrides(t, {"seed"}), "--set seed: expected key=value, e.g. seed=3", Error);
  CHECK_THROWS_WITH_AS(apply_overrides(t, {"seed.x=1"}), "--set seed.x=1: seed is an integer, not a table", Error);
  CHECK_THROWS_WITH_AS(apply_overrides(t, {"a..b=1"}), doctest::Contains("has an empty part"), Error);
  CHECK_THROWS_WITH_AS(apply_overrides(t, {"x=[1,"}), "--set x=[1,: [1, is not a TOML value", Error);
  std::filesystem::remove(path);
}

TEST_CASE("Config files: --unset removes a key the configuration sets, so it takes its default") {
  toml::table t = parse_config_text("seed = 3\ntarget_eval_return = -200.0\n[agent]\nn_eval_episodes = 4\n"
                                    "[policy]\nmodel = { widths = [64, 64], activation = \"tanh\" }\n",
                                    "cfg.toml");
  remove_keys(t, {"target_eval_return", "policy.model.activation"});
  CHECK_FALSE(t.contains("target_eval_return"));
  CHECK(t["policy"]["model"]["widths"].as_array()->size() == 2);
  CHECK_FALSE(t["policy"]["model"].as_table()->contains("activation"));
  CHECK(t["seed"].value<int64_t>() == 3);
  // What the configuration does not set, a path through a value, and an empty part are refused.
  CHECK_THROWS_WITH_AS(remove_keys(t, {"target_eval_return"}),
                       "--unset target_eval_return: the configuration does not set target_eval_return", Error);
  CHECK_THROWS_WITH_AS(remove_keys(t, {"agent.n_eval_episode"}),
                       "--unset agent.n_eval_episode: the configuration does not set agent.n_eval_episode", Error);
  CHECK_THROWS_WITH_AS(remove_keys(t, {"seed.x"}), "--unset seed.x: seed is an integer, not a table", Error);
  CHECK_THROWS_WITH_AS(remove_keys(t, {"agent..x"}), "--unset agent..x: the key has an empty part", Error);
  // Several in one call, the last of a table among them.
  remove_keys(t, {"agent.n_eval_episodes"});
  CHECK_FALSE(t["agent"].as_table()->contains("n_eval_episodes"));
}

// ---- Run configurations (tools/run_config.h) --------------------------------------------------

#include <memory_estimate.h>
#include <run_config.h>

using ctrax::tools::read_run_config;

TEST_CASE("Run configs: every shipped configuration reads and builds its agent") {
  for (const auto& entry : std::filesystem::directory_iterator(CTRAX_FIXTURES_DIR "/../../configs")) {
    if (entry.path().extension() != ".toml") continue;
    CAPTURE(entry.path().string());
    const ctrax::tools::RunConfig c = read_run_config(parse_config_file(entry.path()), entry.path().string());
    CHECK(c.epochs >= 1);
    CHECK(c.target_eval_return.has_value());
    ctrax::TaskPtr task = ctrax::tools::make_task(c);
    std::unique_ptr<ctrax::Agent> agent = ctrax::tools::make_agent(c, task, "");
    CHECK(agent->name() == c.algorithm);
    // Every default is written back: the resolved configuration names the optimizer.
    CHECK(c.resolved.at_path(c.algorithm.ends_with("Joint") ? "joint.optimizer.name" : "policy.optimizer.name").is_string());
  }
}

TEST_CASE("Run configs: bad configurations are refused with the file, the line and the key") {
  auto read = [](const std::string& text) { return read_run_config(parse_config_text(text, "run.toml"), "run.toml"); };
  const std::string base = "algorithm = \"PPO\"\n[agent]\nn_trajectories_per_epoch = 2\n";
  CHECK_NOTHROW(read(base));
  CHECK_THROWS_WITH_AS(read("algorithm = \"DQN\"\n"),
                       "run.toml:1: algorithm: expected one of PolicyGradient, A2C, PPO, AWR, SamplingAWR, PPOJoint, A2CJoint, AWRJoint, got \"DQN\"",
                       Error);
  CHECK_THROWS_WITH_AS(read(base + "[task]\nenv = \"Pong-v5\"\n"), doctest::Contains("run.toml:5: task.env: unknown environment \"Pong-v5\"; known: Acrobot-v1"),
                       Error);
  CHECK_THROWS_WITH_AS(read("algorithm = \"PPO\"\n[agent]\nn_eval_episodes = 1\n"),
                       doctest::Contains("give exactly one of n_trajectories_per_epoch and n_interactions_per_epoch"), Error);
  // A section of another algorithm, and options of a Box space on a discrete one.
  CHECK_THROWS_WITH_AS(read(base + "[joint]\nbatch_size = 4\n"),
                       doctest::Contains("run.toml:4: joint: PPO trains separate networks: give [policy] and [value] instead of [joint]"),
                       Error);
  CHECK_THROWS_WITH_AS(read("algorithm = \"PPOJoint\"\n[agent]\nn_trajectories_per_epoch = 2\n[value]\nbatch_size = 4\n"),
                       doctest::Contains("value: PPOJoint trains one network with a policy and a value head: give [joint]"),
                       Error);
  CHECK_THROWS_WITH_AS(read(base + "[policy.distribution]\nstd = 0.5\n"),
                       doctest::Contains("run.toml:5: policy.distribution.std: a Gaussian option, but the action space is discrete"),
                       Error);
  CHECK_THROWS_WITH_AS(read(base + "[policy.optimizer]\nname = \"adam\"\nmass = 0.9\n"),
                       doctest::Contains("policy.optimizer.mass: unknown key; allowed here: b1, b2, clip_grad_norm, eps, learning_rate, name, weight_decay_rate"),
                       Error);
  CHECK_THROWS_WITH_AS(read(base + "[value]\nadvantage_lambda = 1.5\n"),
                       doctest::Contains("value.advantage_lambda: expected a number in [0, 1], got 1.5"), Error);
  CHECK_THROWS_WITH_AS(read(base + "[ppo]\nepsilon = 0\n"), doctest::Contains("ppo.epsilon: expected a number in"), Error);
  CHECK_THROWS_WITH_AS(read("algorithm = \"PPO\"\ntarget_eval_return = 10.0\n[agent]\nn_trajectories_per_epoch = 2\n"),
                       doctest::Contains("target_eval_return: needs agent.n_eval_episodes >= 1"), Error);
  CHECK_THROWS_WITH_AS(read(base + "[task]\ngamma = 1.0\n[value]\nscale_value_targets = true\n"),
                       doctest::Contains("value.scale_value_targets: needs task.gamma < 1"), Error);
  CHECK_THROWS_WITH_AS(
      read(base + "[policy.optimizer.learning_rate]\nname = \"multifactor\"\nfactors = \"constant * cosine\"\n"),
      doctest::Contains("policy.optimizer.learning_rate.factors:"), Error);
  // The learning rate has one place, the optimizer: the old section is refused with directions.
  CHECK_THROWS_WITH_AS(read(base + "[policy.lr_schedule]\nname = \"constant\"\nvalue = 1e-3\n"),
                       doctest::Contains("the learning rate belongs to the optimizer"), Error);
  // A Gaussian's options on a continuous environment are accepted.
  CHECK_NOTHROW(read("algorithm = \"PPO\"\n[task]\nenv = \"Pendulum-v1\"\n[agent]\nn_trajectories_per_epoch = 2\n"
                     "[policy.distribution]\nstd = 0.5\nlearn_std = \"shared\"\n"));
  const ctrax::tools::RunConfig independent =
      read("algorithm = \"PPO\"\n[task]\nenv = \"Pendulum-v1\"\n[agent]\nn_trajectories_per_epoch = 2\n"
           "[policy.distribution]\nstd = 2.0\nlearn_std = \"state_independent\"\n");
  const auto* gaussian = dynamic_cast<const ctrax::Gaussian*>(independent.policy.distribution.get());
  REQUIRE(gaussian != nullptr);
  CHECK(gaussian->learn_std() == ctrax::LearnStd::state_independent);
  CHECK(gaussian->name() == "Gaussian(shape [1], std 2, learned state-independent std)");
  // Its network: a head for the mean, then the learned log std.
  const ctrax::LayerPtr policy = independent.make_policy_model();
  CHECK(policy->sublayers().back()->name() == "LearnedColumns_1");
  CHECK_THROWS_WITH_AS(read("algorithm = \"PPO\"\n[task]\nenv = \"Pendulum-v1\"\n[agent]\nn_trajectories_per_epoch = 2\n"
                            "[policy.distribution]\nlearn_std = \"independent\"\n"),
                       doctest::Contains("none, shared, separate, state_independent"), Error);
}

TEST_CASE("Run configs: Q-value baselines and SamplingAWR") {
  auto read = [](const std::string& text) { return read_run_config(parse_config_text(text, "run.toml"), "run.toml"); };
  const std::string agent = "[agent]\nn_trajectories_per_epoch = 2\n";
  // SamplingAWR turns q_value on by itself; the value network is then a Q-network whose
  // vocabulary defaults to the Discrete(2) space's size.
  const ctrax::tools::RunConfig sampling = read("algorithm = \"SamplingAWR\"\n" + agent +
                                                "[sampling_awr]\nbeta = 0.5\nreweight = true\n"
                                                "[value.model]\ninjection_dim = 16\n");
  CHECK(sampling.value.q_value);
  CHECK(sampling.value.vocab_size == 2);
  CHECK(sampling.options<ctrax::SamplingAWROptions>().beta == 0.5);
  CHECK(sampling.options<ctrax::SamplingAWROptions>().reweight);
  {
    ctrax::TaskPtr task = ctrax::tools::make_task(sampling);
    std::unique_ptr<ctrax::Agent> built = ctrax::tools::make_agent(sampling, task, "");
    CHECK(built->name() == "SamplingAWR");
  }
  // PPO with a Q-value baseline on a continuous space: no vocabulary.
  const ctrax::tools::RunConfig ppo = read("algorithm = \"PPO\"\n" + agent +
                                           "[task]\nenv = \"Pendulum-v1\"\n"
                                           "[value]\nq_value = true\nq_value_n_samples = 3\nq_value_aggregate_max = false\n");
  CHECK(ppo.value.q_value);
  CHECK(ppo.value.q_value_n_samples == 3);
  CHECK_FALSE(ppo.value.q_value_aggregate_max);
  {
    ctrax::TaskPtr task = ctrax::tools::make_task(ppo);
    CHECK(ctrax::tools::make_agent(ppo, task, "")->name() == "PPO");
  }
  CHECK_THROWS_WITH_AS(read("algorithm = \"SamplingAWR\"\n" + agent + "[value]\nq_value = false\n"),
                       doctest::Contains("value.q_value: SamplingAWR always uses a Q-network"), Error);
  CHECK_THROWS_WITH_AS(read("algorithm = \"PPO\"\n" + agent + "[value]\nq_value = true\nvocab_size = 1\n"),
                       doctest::Contains("value.vocab_size: expected an integer in [2,"), Error);
  CHECK_THROWS_WITH_AS(read("algorithm = \"PPO\"\n" + agent + "[value.model]\ninjection_dim = 8\n"),
                       doctest::Contains("value.model.injection_dim: applies to Q-networks (value.q_value = true)"), Error);
  CHECK_THROWS_WITH_AS(read("algorithm = \"PPO\"\n" + agent + "[value]\nq_value_n_samples = 2\n"),
                       doctest::Contains("value.q_value_n_samples: applies to Q-value baselines: give value.q_value = true"), Error);
  CHECK_THROWS_WITH_AS(read("algorithm = \"PPO\"\n" + agent + "[task]\nenv = \"Pendulum-v1\"\n[value]\nq_value = true\nvocab_size = 4\n"),
                       doctest::Contains("value.vocab_size: applies to discrete action spaces only"), Error);
  CHECK_THROWS_WITH_AS(read("algorithm = \"AWR\"\n" + agent + "[sampling_awr]\nbeta = 1.0\n"),
                       doctest::Contains("sampling_awr: unknown key"), Error);
}

TEST_CASE("Run configs: orthogonal initialisation with gains, rollout passes, annealing and stopping keys") {
  auto read = [](const std::string& text) { return read_run_config(parse_config_text(text, "run.toml"), "run.toml"); };
  const ctrax::tools::RunConfig c = read(
      "algorithm = \"PPO\"\ntotal_env_steps = 5000\ntarget_eval_return = 100.0\n"
      "[task]\nenv = \"CartPole-v1\"\n"
      "[agent]\nn_interactions_per_epoch = 64\nn_eval_episodes = 2\nconfirm_statistic = \"ci95_low\"\n"
      "n_confirm_episodes = 30\ncheckpoint_every = 5\nanneal_learning_rate = true\n"
      "[policy]\nmodel = { widths = [8, 8], init = \"orthogonal\", head_gain = 0.5 }\n"
      "[value]\nrollout_passes = 3\nminibatch_size = 32\ntarget_kl = 0.02\nvalue_clip = 0.3\n"
      "model = { widths = [8], init = \"orthogonal\", init_gain = 2.0 }\n"
      "[ppo]\nanneal_epsilon = true\n");
  CHECK(c.total_env_steps == 5000);
  CHECK(c.agent.total_env_steps == 5000);
  CHECK(c.epochs == int64_t{1} << 40);  // a step budget: as many epochs as it takes
  CHECK(c.agent.target_return == 100.0);
  CHECK(c.agent.confirm_statistic == ctrax::AgentOptions::ConfirmStatistic::ci95_low);
  CHECK(c.agent.n_confirm_episodes == 30);
  CHECK(c.agent.checkpoint_every == 5);
  CHECK(c.agent.anneal_learning_rate);
  CHECK(c.value.rollout_passes == 3);
  CHECK(c.value.minibatch_size == 32);
  CHECK(c.value.target_kl == 0.02);
  CHECK(c.value.value_clip == 0.3);
  CHECK(c.options<ctrax::PPOOptions>().anneal_epsilon);
  // The weights: W^T W = gain^2 I for each (semi-)orthogonal kernel with more rows than columns,
  // and zero biases. Policy: Serial(MLP(Dense 8, Tanh, Dense 8, Tanh), Dense 2).
  const ctrax::LayerPtr policy = c.make_policy_model();
  const ctrax::Tree w = policy->init({{ctrax::Shape({1, 1, 4}), ctrax::DType::float32}}, ctrax::Key(1)).first;
  auto gram_is = [](const ctrax::Tensor& kernel, double gain) {
    const ctrax::Tensor g = ctrax::matmul(kernel.transpose(0, 1), kernel);
    const int64_t n = g.shape()[0];
    const std::vector<double> v = g.to_vector<double>();
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j)
        if (std::abs(v[static_cast<size_t>(i * n + j)] - (i == j ? gain * gain : 0.0)) > 1e-4) return false;
    return true;
  };
  const std::vector<ctrax::Tensor> leaves = w.leaves();
  const std::vector<std::string> paths = w.paths();
  int kernels = 0;
  for (size_t i = 0; i < leaves.size(); ++i) {
    CAPTURE(paths[i]);
    const ctrax::Tensor& t = leaves[i];
    if (t.rank() == 1) {
      CHECK(ctrax::max(ctrax::abs(t)).item<double>() == 0.0);  // biases start at zero
      continue;
    }
    ++kernels;
    // [8, 8] hidden kernel: orthogonal with gain sqrt 2; the [8, 2] head with gain 0.5; the first
    // kernel [4, 8] has fewer rows than columns: its rows are orthonormal instead.
    if (t.shape()[0] >= t.shape()[1]) CHECK(gram_is(t, t.shape()[1] == 2 ? 0.5 : std::sqrt(2.0)));
  }
  CHECK(kernels == 3);

  CHECK_THROWS_WITH_AS(read("algorithm = \"PPO\"\n[task]\nenv = \"CartPole-v1\"\n[agent]\nn_interactions_per_epoch = 64\n"
                            "[policy]\nmodel = { head_gain = 0.5 }\n"),
                       doctest::Contains("policy.model.head_gain: applies to init = \"orthogonal\""), ctrax::Error);
  CHECK_THROWS_WITH_AS(read("algorithm = \"PPO\"\n[task]\nenv = \"CartPole-v1\"\n[agent]\nn_interactions_per_epoch = 64\n"
                            "[policy]\nmodel = { init = \"orthogonal\", head_init_range = 0.1 }\n"),
                       doctest::Contains("head_init_range: applies to init = \"glorot\""), ctrax::Error);
  CHECK_THROWS_WITH_AS(read("algorithm = \"PPO\"\n[task]\nenv = \"CartPole-v1\"\n[agent]\nn_interactions_per_epoch = 64\n"
                            "[value]\nminibatch_size = 32\n"),
                       doctest::Contains("value.minibatch_size: applies to rollout passes"), ctrax::Error);
  CHECK_THROWS_WITH_AS(read("algorithm = \"PPO\"\n[task]\nenv = \"CartPole-v1\"\n[agent]\nn_interactions_per_epoch = 64\n"
                            "confirm_statistic = \"median\"\n"),
                       doctest::Contains("agent.confirm_statistic"), ctrax::Error);
}

TEST_CASE("Memory estimates: the replay, the environments and the buffers, against the machine's memory") {
  auto read = [](const std::string& extra) {
    return read_run_config(parse_config_text("algorithm = \"PPO\"\n[task]\nenv = \"Acrobot-v1\"\nn_envs = 4\n"
                                             "initial_trajectories = 0\n[agent]\n" + extra, "run.toml"),
                           "run.toml");
  };
  using ctrax::tools::estimate_memory;
  const auto small = estimate_memory(read("n_interactions_per_epoch = 1000\n"));
  const auto large = estimate_memory(read("n_interactions_per_epoch = 1000000\n"));
  // Acrobot: 6 float32 observations, an int64 action, a Categorical's 3 inputs: 2 x 24 + 8 + 17 + 12
  // bytes per step, over 2 kept epochs.
  const double step = 2 * 24 + 8 + 8 + 4 + 4 + 1 + 12;
  CHECK(large.replay - small.replay == doctest::Approx(999000 * 2 * step + (999000.0 / 1000) * 2 * 24576).epsilon(1e-9));
  CHECK(small.total() < large.total());
  CHECK(small.total() < 1e8);
  CHECK_NOTHROW(ctrax::tools::check_memory(read("n_interactions_per_epoch = 1000\n"), 1e9));
  CHECK_THROWS_WITH_AS(ctrax::tools::check_memory(read("n_interactions_per_epoch = 1099511627776\n"), 24e9),
                       doctest::Contains("this configuration needs about"), ctrax::Error);
  CHECK(ctrax::tools::available_memory() > 1e8);
}

TEST_CASE("Run configs: compiled training steps give the eager run's checkpoints bit for bit") {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("ctrax_test_compiled_runs_" + std::to_string(getpid()));
  fs::remove_all(root);
  std::vector<std::string> fallbacks;  // a compiled step that fell back to eager says so here
  const ctrax::CompileLogSink previous = ctrax::set_compile_log_sink([&](const std::string& l) { fallbacks.push_back(l); });
  // Separate and joint networks, discrete and continuous actions, annealed rate and clip range,
  // a Gaussian's std as a network output (ppo_pendulum) and as a state-independent vector
  // (ppo_pendulum_rltools; the joint network on Pendulum).
  struct Case {
    std::string name;
    std::vector<std::string> overrides;
  };
  const std::vector<Case> cases = {
      {"ppo_cartpole", {}},
      {"ppo_pendulum", {}},
      {"ppo_pendulum_rltools", {}},
      {"ppo_joint_cartpole", {}},
      {"ppo_joint_cartpole",
       {"task.env=Pendulum-v1", "joint.distribution.learn_std=state_independent", "joint.distribution.std=2.0"}},
      {"a2c_cartpole", {}},
      {"awr_cartpole", {}},
      {"policy_gradient_cartpole_v0", {}}};
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string& name = cases[i].name;
    CAPTURE(name);
    CAPTURE(cases[i].overrides.size());
    std::map<std::string, ctrax::Tensor> tensors[2];
    for (int compiled = 0; compiled < 2; ++compiled) {
      toml::table table = parse_config_file(fs::path(CTRAX_FIXTURES_DIR "/../../configs") / (name + ".toml"));
      std::vector<std::string> overrides = cases[i].overrides;
      overrides.push_back(std::string("agent.compile=") + (compiled ? "true" : "false"));
      apply_overrides(table, overrides);
      const ctrax::tools::RunConfig c = read_run_config(table, name);
      const fs::path dir = root / (std::to_string(i) + "_" + name + (compiled ? "_compiled" : "_eager"));
      ctrax::TaskPtr task = ctrax::tools::make_task(c);
      std::unique_ptr<ctrax::Agent> agent = ctrax::tools::make_agent(c, task, dir);
      agent->run(2);
      agent->save();
      const auto checkpoint = ctrax::io::CheckpointDirectory(dir / "checkpoints").load_latest();
      REQUIRE(checkpoint.has_value());
      tensors[compiled] = checkpoint->tensors;
    }
    REQUIRE(tensors[0].size() == tensors[1].size());
    for (const auto& entry : tensors[0]) {  // (no structured binding: clang 14 cannot capture one)
      const std::string& key = entry.first;
      const ctrax::Tensor& eager = entry.second;
      CAPTURE(key);
      REQUIRE(tensors[1].count(key) == 1);
      const ctrax::Tensor& got = tensors[1].at(key);
      REQUIRE(got.shape() == eager.shape());
      const ctrax::Tensor a = eager.contiguous(), b = got.contiguous();
      CHECK(std::memcmp(a.raw_data(), b.raw_data(), static_cast<size_t>(a.numel()) * a.element_size()) == 0);
    }
    CHECK(fallbacks.empty());
    fallbacks.clear();
  }
  ctrax::set_compile_log_sink(previous);
  fs::remove_all(root);
}

TEST_CASE("format_config writes every float as its shortest round-trip decimal and nothing else changes") {
  toml::table t = parse_config_text(
      "b1 = 0.9\neps = 1e-5\nlr = 3e-4\nwhole = 1.0\nnegative = -0.1\ncount = 7\n"
      "name = \"0.90000000000000002\"\nlist = [0.1, 0.2, 2.5e-10]\n"
      "[policy]\noptimizer = { name = 'adam', b2 = 0.999, learning_rate = 0.001 }\n",
      "run.toml");
  const std::string text = ctrax::tools::format_config(t);
  CAPTURE(text);
  CHECK(text.find("b1 = 0.9\n") != std::string::npos);
  CHECK(text.find("eps = 1e-05") != std::string::npos);
  CHECK(text.find("lr = 3e-04") != std::string::npos);
  CHECK(text.find("whole = 1.0") != std::string::npos);
  CHECK(text.find("negative = -0.1") != std::string::npos);
  CHECK(text.find("count = 7") != std::string::npos);
  CHECK(text.find("0.90000000000000002") != std::string::npos);  // inside the string, untouched
  CHECK(text.find("0.1, 0.2, 2.5e-10") != std::string::npos);
  CHECK(text.find("b2 = 0.999") != std::string::npos);
  std::string outside_strings = text;
  outside_strings.erase(outside_strings.find("0.90000000000000002"), 19);
  CHECK(outside_strings.find("0000000") == std::string::npos);  // no other long float
  // It reads back as the same table, value for value.
  const toml::table back = parse_config_text(text, "back.toml");
  CHECK(back == t);
}

// flush_denormals: read (false by default), and FloatingPointModeScope flushes on the calling
// thread for its lifetime, tensor ops included, then restores the mode it found.
TEST_CASE("Run configs: flush_denormals puts the thread in that mode for a scope, then restores it") {
  auto read = [](const std::string& top) {
    return ctrax::tools::read_run_config(
        parse_config_text("algorithm = \"PPO\"\n" + top + "[agent]\nn_interactions_per_epoch = 64\n", "run.toml"),
        "run.toml");
  };
  CHECK_FALSE(read("").flush_denormals);
  const ctrax::tools::RunConfig flushed = read("flush_denormals = true\n");
  CHECK(flushed.flush_denormals);
  CHECK(flushed.resolved["flush_denormals"].value<bool>() == true);
  CHECK_THROWS_WITH_AS(read("flush_denormals = 1\n"),
                       doctest::Contains("flush_denormals: expected true or false, got an integer 1"), Error);
  if (!ctrax::kernels::set_flush_denormals(false)) return;  // a CPU without the mode
  // 1e-30 * 1e-10 = 1e-40 is subnormal in float32: kept exactly, or flushed to 0.
  const auto product = [] {
    return ctrax::mul(ctrax::full({}, 1e-30, ctrax::DType::float32), 1e-10).item<float>();
  };
  CHECK(product() != 0.0f);
  {
    const ctrax::tools::FloatingPointModeScope mode(flushed);
    CHECK(ctrax::kernels::flush_denormals());
    CHECK(product() == 0.0f);
    {
      const ctrax::tools::FloatingPointModeScope exact(read(""));
      CHECK_FALSE(ctrax::kernels::flush_denormals());
      CHECK(product() != 0.0f);
    }
    CHECK(ctrax::kernels::flush_denormals());
  }
  CHECK_FALSE(ctrax::kernels::flush_denormals());
  CHECK(product() != 0.0f);
}
