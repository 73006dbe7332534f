// CollectModel (rl/agents/collect_model.h): the compiled collection step runs the policy's forward and
// the action sampling as one plan that draws from each call's key. It equals act() followed by
// the distribution's eager sample() bit for bit, and in steady state allocates nothing: the two
// copies it returns reuse the previous call's storages once the caller has let go of them.
#include <doctest/doctest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <ctrax/ctrax.h>
#include <ctrax/rl/agents/collect_model.h>
#include <ctrax/rl/learning/task.h>

#include "test_util.h"

using namespace ctrax;

namespace {

using test::bitwise_equal;

// A policy network over observations [B, L, 3] whose output feeds `distribution`.
// normalize: a Normalize(normalize_options) in front.
std::unique_ptr<Trainer> policy_trainer(const Distribution& distribution, bool compile, bool normalize = false,
                                        NormalizeOptions normalize_options = {}) {
  TrainerOptions o;
  o.model = normalize ? Serial({Normalize(normalize_options), Dense(16), Tanh(), Dense(distribution.n_inputs())})
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
      // The previous call's copies were dropped at the end of its iteration, so their storages
      // take this call's; a Normalize's statistics are copied into the state's own tensors.
      if (step > 0) CHECK(allocated == 0);
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

TEST_CASE("CollectModel: results the caller still holds are not overwritten by the next call") {
  const Gaussian distribution(Shape{2}, 1.0, LearnStd::separate);
  const auto trainer = policy_trainer(distribution, true);
  CollectModel model(*trainer, "policy_collect_state", "test");
  const Tensor first_obs = normal(Key(41), {4, 3}), second_obs = normal(Key(42), {4, 3});
  const auto [actions, inputs] = model.act_and_sample(first_obs, false, distribution, Key(43), 1.0);
  const Tensor actions_before = actions.clone(), inputs_before = inputs.clone();
  const Tensor view = model.act(first_obs, true)[0].slice(0, 0, 2);  // only a view of act()'s result is kept
  const Tensor view_before = view.clone();

  // Every earlier result is still held (a view counts): the next calls copy into new storages.
  const AllocationStats before = allocation_stats();
  const auto [next_actions, next_inputs] = model.act_and_sample(second_obs, false, distribution, Key(44), 1.0);
  const Stack next_outputs = model.act(second_obs, true);
  CHECK(allocation_stats().storages_allocated - before.storages_allocated == 3);
  CHECK(bitwise_equal(actions, actions_before));
  CHECK(bitwise_equal(inputs, inputs_before));
  CHECK(bitwise_equal(view, view_before));
  CHECK_FALSE(bitwise_equal(next_inputs, inputs));
  CHECK(next_actions.storage() != actions.storage());
  CHECK(next_outputs[0].storage() != view.storage());
}

TEST_CASE("CollectModel in an RLTask: a collection step allocates no storage in steady state") {
  // Pendulum's episodes last 200 steps, so none ends in the 150 steps collected here: the
  // storages a collection allocates (its stored pieces, the observations it keeps) must not
  // depend on how many steps it runs.
  const Gaussian distribution(Shape{1}, 1.0, LearnStd::separate);
  const auto trainer = policy_trainer(distribution, true);
  CollectModel model(*trainer, "policy_collect_state", "test");
  RLTaskOptions options;
  options.n_envs = 4;
  options.initial_trajectories = 0;
  options.key = Key(5);
  RLTask task("Pendulum-v1", options);
  const CollectPolicy policy = [&](const Tensor& observations, Key key, double temperature) {
    const auto [actions, inputs] = model.act_and_sample(observations, false, distribution, key, temperature);
    return PolicyOutput{actions, inputs};
  };
  int64_t epoch = 0;
  const auto storages_for = [&](int64_t steps) {
    CollectOptions o;
    o.n_interactions = 4 * steps;
    o.epoch = ++epoch;
    const int64_t before = allocation_stats().storages_allocated;
    const CollectStats stats = task.collect_trajectories(policy, o);
    REQUIRE(stats.n_interactions == 4 * steps);
    return allocation_stats().storages_allocated - before;
  };
  storages_for(10);  // records the plan
  const int64_t short_collection = storages_for(20);
  const int64_t long_collection = storages_for(120);
  CHECK(long_collection == short_collection);
  CHECK(model.compile_stats().recordings == 1);
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
      const int64_t runs_before = updating.compile_stats().replays + updating.compile_stats().recordings +
                                  updating.compile_stats().eager_calls;
      updating.update_state(observations);
      const int64_t runs = updating.compile_stats().replays + updating.compile_stats().recordings +
                           updating.compile_stats().eager_calls - runs_before;
      CHECK(runs == (step < 64 ? 1 : 0));
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

TEST_CASE("CollectModel: statistics past their sample_limit stop moving, and update_state stops running") {
  // A Normalize counting 10 observations: steps of 4 rows reach the limit on the third step. Every
  // collection step gives what a Mode::collect forward gives (the statistics stay once full); once
  // CollectModel notices (it asks every 64 steps) update_state runs nothing.
  const Gaussian distribution(Shape{2}, 1.0, LearnStd::separate);
  for (const bool compile : {true, false}) {
    INFO("compile " << compile);
    const auto owned_trainer = policy_trainer(distribution, compile, /*normalize=*/true, {10.0, 1e-5, 5.0});
    const Trainer& trainer = *owned_trainer;
    CollectModel acting(trainer, "policy_collect_state", "test");
    CollectModel updating(trainer, "policy_collect_state", "test");
    for (uint64_t step = 0; step < 70; ++step) {
      INFO("step " << step);
      const Tensor observations = normal(fold_in(Key(41), step), {4, 3});
      const Tree before = acting.state().with_leaves([&] {
        std::vector<Tensor> copies;
        for (const Tensor& t : acting.state().leaves()) copies.push_back(t.clone());
        return copies;
      }());
      CHECK(trainer.model().may_change_state(acting.state(), Mode::collect) == (step < 3));
      const LayerResult want = trainer.model().apply({observations.reshape(Shape{4, 1, 3})}, trainer.weights(), before,
                                                     Key(), Mode::collect);
      const Tensor got = acting.act(observations, false)[0];
      CHECK(bitwise_equal(got, want.outputs[0].select(1, 0).contiguous()));
      const int64_t runs_before = updating.compile_stats().replays + updating.compile_stats().recordings +
                                  updating.compile_stats().eager_calls;
      updating.update_state(observations);
      const int64_t runs = updating.compile_stats().replays + updating.compile_stats().recordings +
                           updating.compile_stats().eager_calls - runs_before;
      CHECK(runs == (step < 64 ? 1 : 0));
      const std::vector<Tensor> got_state = acting.state().leaves(), want_state = want.state.leaves(),
                                updated = updating.state().leaves();
      REQUIRE(got_state.size() == 3);
      for (size_t i = 0; i < got_state.size(); ++i) {
        CHECK(bitwise_equal(got_state[i], want_state[i]));
        CHECK(bitwise_equal(updated[i], want_state[i]));
      }
    }
    CHECK(acting.state()[0]["count"].leaf().item<int64_t>() == 10);
    // A state put back from before the limit moves again at once (set_state asks anew).
    const Tree fresh = trainer.state();
    REQUIRE(fresh[0]["count"].leaf().item<int64_t>() == 0);
    updating.set_state(fresh);
    updating.update_state(normal(Key(43), {4, 3}));
    CHECK(updating.state()[0]["count"].leaf().item<int64_t>() == 4);
  }
}
