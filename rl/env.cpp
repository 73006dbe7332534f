// The registry of built-in environments (make_env, env_names; see env.h).
#include "env.h"

#include <functional>
#include <map>
#include <sstream>

#include "../kernels/check.h"
#include "envs/acrobot.h"
#include "envs/cartpole.h"
#include "envs/mountain_car.h"
#include "envs/mountain_car_continuous.h"
#include "envs/pendulum.h"
#include "time_limit.h"

namespace ctrax {

namespace {

struct Registration {
  std::function<EnvPtr()> make;
  int64_t max_episode_steps;  // Gymnasium's registered limit
};

// Gymnasium's ids and registered time limits (gymnasium/envs/__init__.py).
const std::map<std::string, Registration>& registry() {
  static const std::map<std::string, Registration> table = {
      {"CartPole-v0", {[] { return std::make_unique<CartPoleEnv>(CartPoleParams{}, "CartPole-v0"); }, 200}},
      {"CartPole-v1", {[] { return std::make_unique<CartPoleEnv>(CartPoleParams{}, "CartPole-v1"); }, 500}},
      {"Acrobot-v1", {[] { return std::make_unique<AcrobotEnv>(); }, 500}},
      {"MountainCar-v0", {[] { return std::make_unique<MountainCarEnv>(); }, 200}},
      {"MountainCarContinuous-v0", {[] { return std::make_unique<MountainCarContinuousEnv>(); }, 999}},
      {"Pendulum-v1", {[] { return std::make_unique<PendulumEnv>(); }, 200}},
  };
  return table;
}

}  // namespace

EnvPtr make_env(const std::string& name, std::optional<int64_t> max_episode_steps) {
  const auto it = registry().find(name);
  if (it == registry().end()) {
    std::ostringstream known;
    for (const std::string& n : env_names()) known << (known.tellp() > 0 ? ", " : "") << n;
    CTRAX_THROW("make_env: unknown environment \"", name, "\" (known: ", known.str(), ")");
  }
  const int64_t limit = max_episode_steps.value_or(it->second.max_episode_steps);
  CTRAX_REQUIRE(limit >= 0, "make_env: max_episode_steps must be >= 0 (0: no limit), got ", limit);
  EnvPtr env = it->second.make();
  if (limit == 0) return env;
  return std::make_unique<TimeLimit>(std::move(env), limit);
}

std::vector<std::string> env_names() {
  std::vector<std::string> names;
  for (const auto& [name, registration] : registry()) names.push_back(name);
  return names;  // std::map keeps them sorted
}

}  // namespace ctrax
