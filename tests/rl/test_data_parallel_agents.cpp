// Data-parallel RL agents (AgentOptions::communicator, rl/agents/data_parallel.h) on virtual
// ranks: the ranks keep identical networks, a run is a pure function of its seeds (not of thread
// timing), rank 0's checkpoint holds every rank's task and resumes bit for bit, one rank is a
// plain run, and the ranks' Normalize statistics combine as one collection of all observations.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <mutex>
#include <optional>

#include <ctrax/ctrax.h>
#include <ctrax/dist/in_process_group.h>

#include "agent_test_helpers.h"

using namespace ctrax;
using ctrax::test_rl::bitwise_equal;
using ctrax::test_rl::fresh_directory;

namespace {

// A PPO job with separate networks (rollout passes, a Normalize in front) on Pendulum
// (continuous) or with Trax's slice batches on CartPole (discrete).
std::unique_ptr<Agent> make_ppo(bool continuous, std::shared_ptr<dist::Communicator> comm,
                                const std::filesystem::path& dir, bool read_only = false,
                                std::optional<int64_t> confirm_envs = std::nullopt) {
  RLTaskOptions t;
  t.n_envs = 4;
  t.initial_trajectories = 0;
  t.key = Key(7);
  if (comm) t = rank_task_options(t, *comm);
  if (read_only) t = rank_task_options(t, 0, checkpoint_rank_count(dir));
  auto task = std::make_shared<RLTask>(continuous ? "Pendulum-v1" : "CartPole-v1", t);
  ActorCriticSetup<PPOOptions> s;
  s.agent.n_interactions_per_epoch = 64;
  s.agent.n_eval_episodes = 3;  // uneven over 2 ranks
  s.agent.n_confirm_episodes = 3;
  s.agent.n_confirm_envs = confirm_envs;
  s.agent.eval_max_steps = 50;
  s.agent.max_epochs = 3;
  s.agent.output_dir = dir;
  s.agent.read_only = read_only;
  s.agent.communicator = comm;
  const LayerFactory body = [] { return MLP({16}, Tanh, {.out_activation = true}); };
  const LayerFactory normalizer = [] { return Normalize(); };
  const Space& actions = task->action_space();
  s.policy.policy_model = Policy(actions, body, normalizer);
  s.policy.policy_optimizer = std::make_shared<Adam>(AdamOptions{.learning_rate = 1e-3});
  s.policy.policy_batch_size = 8;
  s.policy.policy_train_steps_per_epoch = 3;
  s.policy.max_slice_length = 4;
  s.policy.seed = 3;
  s.value.value_model = Value(body, normalizer);
  s.value.value_optimizer = std::make_shared<Adam>(AdamOptions{.learning_rate = 1e-3});
  s.value.value_batch_size = 8;
  s.value.value_train_steps_per_epoch = 3;
  s.value.seed = 4;
  if (continuous) {
    s.value.rollout_passes = 2;
    s.value.minibatch_size = 16;
    s.value.target_kl = 0.05;
  }
  return build_agent<PPO>(task, s);
}

std::unique_ptr<Agent> make_ppo_joint(std::shared_ptr<dist::Communicator> comm, const std::filesystem::path& dir,
                                      bool read_only = false) {
  RLTaskOptions t;
  t.n_envs = 2;
  t.initial_trajectories = 2;
  t.key = Key(9);
  if (comm) t = rank_task_options(t, *comm);
  if (read_only) t = rank_task_options(t, 0, checkpoint_rank_count(dir));
  auto task = std::make_shared<RLTask>("CartPole-v1", t);
  JointSetup<PPOJointOptions> s;
  s.agent.n_trajectories_per_epoch = 4;
  s.agent.n_eval_episodes = 2;
  s.agent.n_confirm_episodes = 2;
  s.agent.eval_max_steps = 50;
  s.agent.max_epochs = 3;
  s.agent.output_dir = dir;
  s.agent.read_only = read_only;
  s.agent.communicator = comm;
  s.joint.joint_model = PolicyAndValue(task->action_space(), [] { return MLP({16}, Tanh, {.out_activation = true}); },
                                       [] { return Normalize(); });
  s.joint.optimizer = std::make_shared<Adam>(AdamOptions{.learning_rate = 1e-3});
  s.joint.batch_size = 8;
  s.joint.train_steps_per_epoch = 3;
  s.joint.max_slice_length = 4;
  return build_agent<PPOJoint>(task, s);
}

// (communicator, output directory, read-only)
using Maker =
    std::function<std::unique_ptr<Agent>(std::shared_ptr<dist::Communicator>, const std::filesystem::path&, bool)>;

// What a run leaves: every rank's networks (rank order) and rank 0's last checkpoint.
struct RunResult {
  std::vector<std::map<std::string, Tensor>> networks;
  io::Checkpoint checkpoint;
  std::vector<Metrics> rows;  // rank 0's
};

// `epochs` epochs of the job on n virtual ranks (0: a single process without a communicator).
RunResult run_job(const Maker& make, int n, const std::filesystem::path& dir, int64_t epochs) {
  RunResult result;
  std::mutex mutex;
  auto body = [&](std::shared_ptr<dist::Communicator> comm) {
    std::unique_ptr<Agent> agent = make(comm, dir, false);
    while (agent->epoch() < epochs) {
      const Metrics row = agent->run(1);
      if (!comm || comm->rank() == 0) {
        std::lock_guard<std::mutex> lock(mutex);
        result.rows.push_back(row);
      }
    }
    agent->finish_saving();
  };
  if (n == 0) body(nullptr);
  else dist::run_virtual_ranks(n, body);
  io::CheckpointDirectory checkpoints(dir / "checkpoints", 2, io::CheckpointDirectory::Access::read_only);
  result.checkpoint = *checkpoints.load_latest();
  return result;
}

bool same_tensors(const std::map<std::string, Tensor>& a, const std::map<std::string, Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [name, tensor] : a) {
    const auto it = b.find(name);
    if (it == b.end() || !bitwise_equal(Tree(tensor), Tree(it->second))) {
      MESSAGE("differs: ", name);  // which one, should the check fail
      return false;
    }
  }
  return true;
}

}  // namespace

TEST_CASE("Data-parallel agents: 2 virtual ranks are reproducible, checkpoint every rank's task and resume exactly") {
  struct Case {
    const char* name;
    Maker make;
  };
  const Case cases[] = {
      {"PPO continuous, rollout passes",
       [](auto comm, const auto& dir, bool ro) { return make_ppo(true, std::move(comm), dir, ro); }},
      {"PPO discrete, slice batches",
       [](auto comm, const auto& dir, bool ro) { return make_ppo(false, std::move(comm), dir, ro); }},
      {"PPOJoint discrete", [](auto comm, const auto& dir, bool ro) { return make_ppo_joint(std::move(comm), dir, ro); }},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    const auto dir_a = fresh_directory("dp_a_", "agents"), dir_b = fresh_directory("dp_b_", "agents");
    const RunResult a = run_job(c.make, 2, dir_a, 3);
    const RunResult b = run_job(c.make, 2, dir_b, 3);
    // The same bits again: the run does not depend on how the threads were scheduled.
    CHECK(same_tensors(a.checkpoint.tensors, b.checkpoint.tensors));
    CHECK(a.checkpoint.fields == b.checkpoint.fields);
    // Rank 0's checkpoint holds both ranks' tasks and the job's rank count.
    CHECK(a.checkpoint.int_field("agent/n_ranks") == 2);
    CHECK(a.checkpoint.fields.count("rank1/task/n_interactions") == 1);
    // The rows count every rank's environment steps.
    REQUIRE(a.rows.size() == 3);
    CHECK(a.rows.back().at("n_interactions") == static_cast<double>(a.checkpoint.int_field("task/n_interactions") +
                                                                     a.checkpoint.int_field("rank1/task/n_interactions")));

    // Resume: 2 epochs, then a new job on the same directory runs the third: the same checkpoint.
    const auto dir_c = fresh_directory("dp_c_", "agents");
    run_job(c.make, 2, dir_c, 2);
    const RunResult resumed = run_job(c.make, 2, dir_c, 3);
    CHECK(same_tensors(resumed.checkpoint.tensors, a.checkpoint.tensors));
    // Another number of ranks is refused, on every rank, naming both counts.
    CHECK_THROWS_WITH_AS(run_job(c.make, 1, dir_c, 4), doctest::Contains("is of a run on 2 rank(s)"), Error);
    CHECK_THROWS_WITH_AS(run_job(c.make, 0, dir_c, 4), doctest::Contains("is of a run on 2 rank(s)"), Error);
    // Evaluating the job's policy needs no ranks: a read-only agent of one process reads it.
    const std::unique_ptr<Agent> evaluator = c.make(nullptr, dir_c, /*read_only=*/true);
    CHECK(evaluator->epoch() == 3);
    CHECK(evaluator->evaluate(1, 0.0).n_trajectories == 1);
    // Averaging over two ranks is not one rank's training.
    const auto dir_d = fresh_directory("dp_d_", "agents");
    const RunResult single = run_job(c.make, 0, dir_d, 3);
    CHECK_FALSE(same_tensors(single.checkpoint.tensors, a.checkpoint.tensors));
    for (const auto& dir : {dir_a, dir_b, dir_c, dir_d}) std::filesystem::remove_all(dir);
  }
}

TEST_CASE("Data-parallel agents: a confirmation in copies of its own width plays each rank's share, training unchanged") {
  const auto dir_a = fresh_directory("dpw_a_", "agents"), dir_b = fresh_directory("dpw_b_", "agents");
  const Maker narrow = [](auto comm, const auto& dir, bool ro) { return make_ppo(true, std::move(comm), dir, ro); };
  const Maker wide = [](auto comm, const auto& dir, bool ro) {
    return make_ppo(true, std::move(comm), dir, ro, int64_t{1000});  // wider than either rank's share
  };
  const RunResult a = run_job(narrow, 2, dir_a, 3);
  const RunResult b = run_job(wide, 2, dir_b, 3);
  // The final epoch is confirmed on the job's 3 episodes (2 + 1 over the ranks) either way.
  REQUIRE(b.rows.size() == 3);
  CHECK(b.rows.back().at("confirm/episodes") == 3);
  CHECK(a.rows.back().at("confirm/episodes") == 3);
  // The confirmation's copies are not the task's: the training and its checkpoint are the same,
  // but for the eval copies' state, which only the narrow confirmation moved (every evaluation
  // resets them, so it changes no later result).
  auto without_eval_envs = [](std::map<std::string, Tensor> tensors) {
    std::erase_if(tensors, [](const auto& entry) { return entry.first.find("eval_env_state") != std::string::npos; });
    return tensors;
  };
  CHECK(same_tensors(without_eval_envs(a.checkpoint.tensors), without_eval_envs(b.checkpoint.tensors)));
  CHECK(without_eval_envs(a.checkpoint.tensors).size() < a.checkpoint.tensors.size());
  for (const auto& dir : {dir_a, dir_b}) std::filesystem::remove_all(dir);
}

TEST_CASE("Data-parallel agents: one rank equals a single process without a communicator") {
  const auto dir_a = fresh_directory("dp1_a_", "agents"), dir_b = fresh_directory("dp1_b_", "agents");
  const Maker make = [](auto comm, const auto& dir, bool ro) { return make_ppo(true, std::move(comm), dir, ro); };
  const RunResult plain = run_job(make, 0, dir_a, 2);
  const RunResult one = run_job(make, 1, dir_b, 2);
  CHECK(same_tensors(one.checkpoint.tensors, plain.checkpoint.tensors));
  CHECK(one.checkpoint.int_field("agent/n_ranks") == 1);
  for (const auto& dir : {dir_a, dir_b}) std::filesystem::remove_all(dir);
}

TEST_CASE("Data-parallel agents: shares that do not split evenly are refused with the option's name") {
  auto job = [](int64_t n_envs, int64_t interactions, int64_t minibatch) {
    dist::run_virtual_ranks(2, [&](std::shared_ptr<dist::Communicator> comm) {
      RLTaskOptions t;
      t.n_envs = n_envs;
      t.initial_trajectories = 0;
      auto task = std::make_shared<RLTask>("Pendulum-v1", rank_task_options(t, *comm));
      ActorCriticSetup<PPOOptions> s;
      s.agent.n_interactions_per_epoch = interactions;
      s.agent.communicator = comm;
      s.policy.policy_model = Policy(task->action_space(), [] { return MLP({8}); });
      s.value.value_model = Value([] { return MLP({8}); });
      s.value.rollout_passes = 1;
      s.value.minibatch_size = minibatch;
      build_agent<PPO>(task, s)->run(1);
    });
  };
  CHECK_THROWS_WITH_AS(job(3, 64, 16), doctest::Contains("n_envs 3 does not split evenly over 2 ranks"), Error);
  CHECK_THROWS_WITH_AS(job(2, 63, 16), doctest::Contains("n_interactions_per_epoch 63 does not split evenly over 2"),
                       Error);
  CHECK_THROWS_WITH_AS(job(2, 64, 15), doctest::Contains("minibatch_size 15 does not split evenly over 2 ranks"),
                       Error);
  CHECK_NOTHROW(job(2, 64, 16));
}

TEST_CASE("Data-parallel agents: a rank that fails ends the job on every rank with its message") {
  CHECK_THROWS_WITH_AS(dist::run_virtual_ranks(2,
                                               [](std::shared_ptr<dist::Communicator> comm) {
                                                 auto agent = make_ppo(true, comm, "");
                                                 agent->run(1);
                                                 if (comm->rank() == 1) CTRAX_THROW("rank 1's simulator crashed");
                                                 agent->run(1);  // rank 0 waits in a collective, then throws
                                               }),
                       doctest::Contains("rank 1's simulator crashed"), Error);
}

TEST_CASE("combine_rank_statistics: two ranks' Normalize statistics are those of all their observations") {
  LayerPtr norm = Normalize();
  const Signature sig{{Shape{4, 1, 3}, DType::float64}};
  const std::pair<Tree, Tree> initial = norm->init(sig);
  const Tree& w = initial.first;
  const Tree& base = initial.second;
  // The base has seen 4 observations; rank 0 then sees a, rank 1 sees b; one process sees all.
  const Tensor first = normal(Key(1), Shape{4, 1, 3}, DType::float64);
  const Tensor a = normal(Key(2), Shape{4, 1, 3}, DType::float64, 1.0, 2.0);
  const Tensor b = normal(Key(3), Shape{6, 1, 3}, DType::float64, -1.0, 0.5);
  auto step = [&](const Tree& state, const Tensor& x) { return norm->apply({x}, w, state, Key(), Mode::collect).state; };
  const Tree start = step(base, first);
  const Tree combined = combine_rank_statistics(start, {step(start, a), step(start, b)});
  const Tree all = step(step(start, a), b);
  CHECK(combined["count"].leaf().item<int64_t>() == 14);
  const std::vector<double> m = combined["mean"].leaf().to_vector<double>(), m_all = all["mean"].leaf().to_vector<double>();
  const std::vector<double> v = combined["var"].leaf().to_vector<double>(), v_all = all["var"].leaf().to_vector<double>();
  for (size_t i = 0; i < 3; ++i) {
    CHECK(m[i] == doctest::Approx(m_all[i]).epsilon(1e-12));
    CHECK(v[i] == doctest::Approx(v_all[i]).epsilon(1e-12));
  }
  // A rank that saw nothing adds nothing; state other than Normalize's must agree.
  CHECK(bitwise_equal(combine_rank_statistics(start, {start, start}), start));
  Tree other = start;
  other["extra"] = from_vector(std::vector<float>{1.0f});
  Tree differs = other;
  differs["extra"] = from_vector(std::vector<float>{2.0f});
  CHECK_THROWS_WITH_AS(combine_rank_statistics(other, {other, differs}),
                       doctest::Contains("the state at 'extra' differs between rank 0 and rank 1"), Error);
}
