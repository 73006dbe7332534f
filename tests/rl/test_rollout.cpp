// Rollouts as CSV (rl/environments/rollout.h): the number parser, actions from numbers, and the CSV itself
// (layout, values equal to stepping the environment by hand, stopping at the episode's end).
#include <doctest/doctest.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include <ctrax/rl/environments/env.h>
#include <ctrax/rl/environments/env_registry.h>
#include <ctrax/rl/environments/rollout.h>

namespace {

using ctrax::DType;
using ctrax::Error;
using ctrax::Shape;
using ctrax::Space;
using ctrax::Tensor;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string g(double v, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*g", digits, v);
  return buffer;
}

// The row write_rollout_csv should print for a step, built independently.
std::string expected_row(int step, const ctrax::StepResult& r) {
  std::string row = std::to_string(step);
  for (float v : r.observation.to_vector<float>()) row += "," + g(v, 9);
  row += "," + g(r.reward, 17) + (r.terminated ? ",1" : ",0") + (r.truncated ? ",1" : ",0");
  return row;
}

}  // namespace

TEST_CASE("parse_numbers splits on commas and whitespace and names a bad token") {
  CHECK(ctrax::parse_numbers("0,1, 1\n0\t2", "--actions") == std::vector<double>{0, 1, 1, 0, 2});
  CHECK(ctrax::parse_numbers("-0.5,1e-3,,", "--state") == std::vector<double>{-0.5, 1e-3});
  CHECK(ctrax::parse_numbers("", "--actions").empty());
  CHECK(ctrax::parse_numbers(" \n", "--actions").empty());
  CHECK_THROWS_WITH_AS(ctrax::parse_numbers("0,x,1", "--actions"),
                       doctest::Contains("--actions: \"x\" (item 1) is not a finite number"), Error);
  CHECK_THROWS_WITH_AS(ctrax::parse_numbers("1.5.2", "--state"), doctest::Contains("\"1.5.2\""), Error);
  CHECK_THROWS_WITH_AS(ctrax::parse_numbers("nan", "--state"), doctest::Contains("not a finite number"), Error);
  CHECK_THROWS_WITH_AS(ctrax::parse_numbers("1e999", "--state"), doctest::Contains("not a finite number"), Error);
}

TEST_CASE("actions_from_numbers builds actions of the space and refuses what is not one") {
  const std::vector<Tensor> d = ctrax::actions_from_numbers(Space::discrete(3), {0, 2, 1});
  REQUIRE(d.size() == 3);
  CHECK(d[1].dtype() == DType::int64);
  CHECK(d[1].shape() == Shape{});
  CHECK(d[1].item<int64_t>() == 2);
  CHECK_THROWS_WITH_AS(ctrax::actions_from_numbers(Space::discrete(3), {0, 1.5}),
                       doctest::Contains("action 1 has 1.5 where the space Discrete(3) needs an integer"), Error);
  CHECK_THROWS_WITH_AS(ctrax::actions_from_numbers(Space::discrete(3), {0, 3}),
                       doctest::Contains("action 1 (3) is not in the space Discrete(3)"), Error);

  const std::vector<Tensor> b = ctrax::actions_from_numbers(Space::box(Shape{2}, -1.0, 1.0), {0.5, -0.5, 3, 0});
  REQUIRE(b.size() == 2);
  CHECK(b[0].dtype() == DType::float32);
  CHECK(b[0].shape() == Shape{2});
  CHECK(b[1].to_vector<float>() == std::vector<float>{3.0f, 0.0f});  // Box values are not clipped here
  CHECK_THROWS_WITH_AS(ctrax::actions_from_numbers(Space::box(Shape{2}, -1.0, 1.0), {0.5, -0.5, 3}),
                       doctest::Contains("got 3 numbers, which is not a multiple of 2"), Error);

  const std::vector<Tensor> m = ctrax::actions_from_numbers(Space::multi_discrete({2, 3}), {1, 2});
  REQUIRE(m.size() == 1);
  CHECK(m[0].to_vector<int64_t>() == std::vector<int64_t>{1, 2});
  CHECK_THROWS_WITH_AS(ctrax::actions_from_numbers(Space::multi_discrete({2, 3}), {2, 2}),
                       doctest::Contains("is not in the space MultiDiscrete([2, 3])"), Error);
}

TEST_CASE("write_rollout_csv from a seed prints what stepping the environment gives") {
  ctrax::EnvPtr env = ctrax::make_env("CartPole-v1");
  const std::vector<Tensor> actions = ctrax::actions_from_numbers(env->action_space(), {0, 1, 1, 0});
  std::ostringstream out;
  const ctrax::RolloutSummary summary = ctrax::write_rollout_csv(*env, {.seed = 5, .state = std::nullopt}, actions, out);
  CHECK(summary.steps == 4);
  CHECK_FALSE(summary.terminated);
  CHECK_FALSE(summary.truncated);

  ctrax::EnvPtr by_hand = ctrax::make_env("CartPole-v1");
  const Tensor first = by_hand->reset(5);
  std::string row0 = "0";
  for (float v : first.to_vector<float>()) row0 += "," + g(v, 9);
  row0 += ",,,";
  std::vector<std::string> expected = {"step,obs_0,obs_1,obs_2,obs_3,reward,terminated,truncated", row0};
  for (int i = 0; i < 4; ++i) expected.push_back(expected_row(i + 1, by_hand->step(actions[static_cast<size_t>(i)])));
  CHECK(lines_of(out.str()) == expected);
}

TEST_CASE("write_rollout_csv from a state stops where the episode ends") {
  // A cart near the edge of the track, pushed right, leaves it within a few steps.
  ctrax::EnvPtr env = ctrax::make_env("CartPole-v1");
  const std::vector<double> state = {2.3, 1.0, 0.01, -0.02};
  const std::vector<Tensor> actions = ctrax::actions_from_numbers(env->action_space(), std::vector<double>(50, 1.0));
  std::ostringstream out;
  const ctrax::RolloutSummary summary = ctrax::write_rollout_csv(*env, {.seed = std::nullopt, .state = state}, actions, out);
  CHECK(summary.terminated);
  CHECK(summary.steps < 50);
  const std::vector<std::string> lines = lines_of(out.str());
  REQUIRE(lines.size() == static_cast<size_t>(summary.steps) + 2);
  CHECK(lines[1] == "0,2.29999995,1,0.00999999978,-0.0199999996,,,");
  CHECK(lines.back().ends_with(",1,1,0"));  // reward 1, terminated, not truncated

  // With a time limit below that, the last row is the truncated one.
  ctrax::EnvPtr limited = ctrax::make_env("CartPole-v1", 2);
  std::ostringstream out2;
  const ctrax::RolloutSummary s2 = ctrax::write_rollout_csv(*limited, {.seed = 0, .state = state}, actions, out2);
  CHECK(s2.steps == 2);
  CHECK(s2.truncated);
  CHECK(lines_of(out2.str()).back().ends_with(",1,0,1"));
}

TEST_CASE("write_rollout_csv prints continuous environments and passes on environment errors") {
  ctrax::EnvPtr env = ctrax::make_env("Pendulum-v1");
  const std::vector<Tensor> actions = ctrax::actions_from_numbers(env->action_space(), {0.5, -2.5});
  std::ostringstream out;
  ctrax::write_rollout_csv(*env, {.seed = std::nullopt, .state = std::vector<double>{0.0, 0.0}}, actions, out);
  const std::vector<std::string> lines = lines_of(out.str());
  REQUIRE(lines.size() == 4);
  CHECK(lines[0] == "step,obs_0,obs_1,obs_2,reward,terminated,truncated");
  CHECK(lines[1] == "0,1,0,0,,,");
  // Upright and still: cost 0.001 * 0.5^2 (u^2 in float32), a push of 3 * 0.5 * 0.05.
  CHECK(lines[2].starts_with("1,0.99999"));
  CHECK(lines[2].find(",-0.00025000001187436283,0,0") != std::string::npos);

  std::ostringstream ignored;
  CHECK_THROWS_WITH_AS(
      ctrax::write_rollout_csv(*env, {.seed = std::nullopt, .state = std::vector<double>{0.0}}, actions, ignored),
      doctest::Contains("Pendulum-v1: set_state expects 2 values, got 1"), Error);
}
