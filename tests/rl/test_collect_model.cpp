// CollectModel (rl/agents/collect_model.h): the compiled collection step runs the policy's forward and
// the action sampling as one plan that draws from each call's key. It equals act() followed by
// the distribution's eager sample() bit for bit, and in steady state allocates only the two
// copies it returns.
#include <doctest/doctest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <ctrax/ctrax.h>
#include <ctrax/rl/agents/collect_model.h>

#include "test_util.h"

using namespace ctrax;

namespace {

using test::bitwise_equal;

// A policy network over observations [B, L, 3] whose output feeds `distribution`.
std::unique_ptr<Trainer> policy_trainer(const Distribution& distribution, bool compile, bool normalize = false) {
  TrainerOptions o;
  o.model = normalize ? Serial({Normalize(), Dense(16), Tanh(), Dense(distribution.n_inputs())})
                      : Serial({Dense(16), Tanh(), Dense(distribution.n_inputs())});
  o.loss = L2Loss();
  o.optimizer = std::make_shared<Adam>(AdamOptions{});
  o.compile = compile;
  o.train_stream = [n = distribution.n_inputs()](int64_t index) {
    return Batch{normal(fold_in(Key(3), static_cast<uint64_t>(index)), {4, 1, 3}), zeros({4, 1, n})};
  };
  return std::make_unique<Trainer>(std::move(o));
}

void check_collection_plan(const Distribution& distribution, bool normalize = false) {
  std::vector<std::string> lines;
  const CompileLogSink previous = set_compile_log_sink([&](const std::string& l) { lines.push_back(l); });
  const auto compiled_trainer = policy_trainer(distribution, true, normalize);
  const auto eager_trainer = policy_trainer(distribution, false, normalize);
  CollectModel compiled(*compiled_trainer, "policy_collect_state", "test");
  CollectModel eager(*eager_trainer, "policy_collect_state", "test");
  for (uint64_t step = 0; step < 6; ++step) {
    const Tensor observations = normal(fold_in(Key(9), step), {4, 3});
    const Key key = fold_in(Key(17), step);
    for (const double temperature : {1.0, 0.5}) {
      const AllocationStats before = allocation_stats();
      const auto [actions, inputs] = compiled.act_and_sample(observations, false, distribution, key, temperature);
      const int64_t allocated = allocation_stats().storages_allocated - before.storages_allocated;
      // The two copies it returns; a Normalize's statistics are copied into the state's own tensors.
      if (step > 0) CHECK(allocated == 2);
      const Tensor want_inputs = eager.act(observations, false)[0];
      CHECK(bitwise_equal(inputs, want_inputs));
      // The collected statistics (a Normalize's) move the same way in the plan.
      const std::vector<Tensor> got_state = compiled.state().leaves(), want_state = eager.state().leaves();
      REQUIRE(got_state.size() == want_state.size());
      for (size_t i = 0; i < got_state.size(); ++i) CHECK(bitwise_equal(got_state[i], want_state[i]));
      CHECK(bitwise_equal(actions, distribution.sample(want_inputs, key, temperature)));
    }
  }
  set_compile_log_sink(previous);
  CHECK(lines.empty());
  CHECK(compiled.compile_stats().recordings == 2);  // one plan per temperature
  CHECK(compiled.compile_stats().replays == 10);
}

}  // namespace

TEST_CASE("CollectModel: forward and sampling as one plan equal act() then sample(), Gaussian") {
  check_collection_plan(Gaussian(Shape{2}, 1.0, LearnStd::separate));
}

TEST_CASE("CollectModel: forward and sampling as one plan equal act() then sample(), Categorical") {
  check_collection_plan(Categorical(3));
}

TEST_CASE("CollectModel: a policy with a Normalize in front collects through the plan, its statistics equal eager's") {
  check_collection_plan(Gaussian(Shape{2}, 1.0, LearnStd::separate), /*normalize=*/true);
}

TEST_CASE("CollectModel: update_state moves the statistics as act() does, compiled and eager, without the outputs") {
  const Gaussian distribution(Shape{2}, 1.0, LearnStd::separate);
  for (const bool compile : {true, false}) {
    INFO("compile " << compile);
    const auto trainer = policy_trainer(distribution, compile, /*normalize=*/true);
    CollectModel acting(*trainer, "policy_collect_state", "test");
    CollectModel updating(*trainer, "policy_collect_state", "test");
    for (uint64_t step = 0; step < 5; ++step) {
      const Tensor observations = normal(fold_in(Key(19), step), {4, 3});
      acting.act(observations, false);
      updating.update_state(observations);
      const std::vector<Tensor> want = acting.state().leaves(), got = updating.state().leaves();
      REQUIRE(got.size() == 3);  // the Normalize's count, mean and var
      for (size_t i = 0; i < got.size(); ++i) CHECK(bitwise_equal(got[i], want[i]));
    }
    // act() still returns the outputs after update_state ran on the same model.
    CHECK(updating.act(normal(Key(20), {4, 3}), true)[0].shape() == Shape{4, distribution.n_inputs()});
    if (compile) CHECK(updating.compile_stats().replays >= 4);
  }
}

TEST_CASE("CollectModel: evaluation steps between collection steps leave the collected statistics as eager's") {
  // The plans of one compiled function share their buffers; the statistics a collection step
  // returns must survive the evaluation plan's run (it reads them but keeps its own temporaries).
  const Gaussian distribution(Shape{2}, 1.0, LearnStd::separate);
  const auto compiled_trainer = policy_trainer(distribution, true, /*normalize=*/true);
  const auto eager_trainer = policy_trainer(distribution, false, /*normalize=*/true);
  CollectModel compiled(*compiled_trainer, "policy_collect_state", "test");
  CollectModel eager(*eager_trainer, "policy_collect_state", "test");
  for (uint64_t step = 0; step < 6; ++step) {
    const Tensor observations = normal(fold_in(Key(29), step), {4, 3});
    const Key key = fold_in(Key(31), step);
    const bool evaluating = step % 2 == 1;
    for (const Tensor& batch : {observations, observations.slice(0, 0, 2) * 3.0}) {
      INFO("step " << step << ", rows " << batch.size(0));
      const auto [actions, inputs] = compiled.act_and_sample(batch, evaluating, distribution, key, 1.0);
      const Tensor want_inputs = eager.act(batch, evaluating)[0];
      CHECK(bitwise_equal(inputs, want_inputs));
      CHECK(bitwise_equal(actions, distribution.sample(want_inputs, key, 1.0)));
      const std::vector<Tensor> got_state = compiled.state().leaves(), want_state = eager.state().leaves();
      REQUIRE(got_state.size() == want_state.size());
      for (size_t i = 0; i < got_state.size(); ++i) CHECK(bitwise_equal(got_state[i], want_state[i]));
    }
  }
  CHECK(compiled.compile_stats().replays >= 6);
}
