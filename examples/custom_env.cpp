// A user-defined environment: what it takes to plug your own task into ctrax's RL code.
//
//   custom_env
//
// ReachTarget is a 1-D task: a point at position p in [-1, 1] must reach a target t. Actions
// are Discrete(3): move by -0.1, 0 or +0.1 (clipped to [-1, 1]). Each step costs 0.01; reaching
// |p - t| < 0.05 gives +1 and terminates the episode. Observation: float32 [p, t].
//
// An environment derives from ctrax::Env and provides: its name, the two spaces, reset (draw
// the initial state from a key: reset(seed) reseeds, reset() continues), step (check the
// action, advance, say terminated when the task is over), and state / set_state /
// observation (its internal state as numbers). Time limits are a wrapper (TimeLimit), not
// the environment's business: a truncated episode is one the agent could have continued.
// For runs that resume from checkpoints it also provides checkpoint_state and
// restore_checkpoint_state: everything it keeps between calls (here the key, the episode
// counter, the position, the target and whether an episode is running) as doubles, and the
// exact inverse, which checks every value before changing anything (CheckpointStateReader
// does the checks). Without them the environment still works; RLTask's checkpoints then
// restart its episodes on resume (rl/learning/task.h).
//
// The program plays a random policy and a greedy one (move toward the target) for a few
// episodes each and prints their returns, then checkpoints the environment in mid-episode,
// restores the checkpoint into a fresh one and checks that both go on identically. It exits
// with status 1 unless the greedy policy reaches the target in every episode and the restored
// environment matches (so running it is a check of the interface).
#include <cmath>
#include <cstdio>
#include <memory>

#include <ctrax/base/error.h>
#include <ctrax/rl/environments/env.h>
#include <ctrax/rl/environments/env_registry.h>
#include <ctrax/rl/environments/time_limit.h>

using namespace ctrax;

namespace {

class ReachTarget final : public Env {
 public:
  ReachTarget()
      : observation_space_(Space::box(Shape{2}, -1.0, 1.0)), action_space_(Space::discrete(3)) {}

  std::string name() const override { return "ReachTarget"; }
  const Space& observation_space() const override { return observation_space_; }
  const Space& action_space() const override { return action_space_; }

  Tensor reset(std::optional<uint64_t> seed = std::nullopt) override {
    // The environment's own randomness: one key per episode, derived from the seed.
    if (seed) {
      key_ = Key(*seed);
      episode_ = 0;
    }
    const Tensor start = uniform(fold_in(key_, episode_++), Shape{2}, DType::float64, -1.0, 1.0);
    position_ = start.to_vector<double>()[0];
    target_ = start.to_vector<double>()[1];
    running_ = true;
    return observation();
  }

  StepResult step(const Tensor& action) override {
    CTRAX_REQUIRE(running_, "ReachTarget: call reset() before step()");
    CTRAX_REQUIRE(action_space_.contains(action), "ReachTarget: action ", action.to_string(), " is not in ",
                  action_space_);
    const double move = 0.1 * static_cast<double>(action.item<int64_t>() - 1);
    position_ = std::fmin(std::fmax(position_ + move, -1.0), 1.0);
    const bool reached = std::abs(position_ - target_) < 0.05;
    running_ = !reached;
    return {observation(), reached ? 1.0 : -0.01, reached, false};
  }

  std::vector<double> state() const override { return {position_, target_}; }
  void set_state(const std::vector<double>& state) override {
    CTRAX_REQUIRE(state.size() == 2, "ReachTarget: set_state expects 2 values, got ", state.size());
    position_ = state[0];
    target_ = state[1];
    running_ = true;
  }
  Tensor observation() const override {
    return from_vector(std::vector<float>{static_cast<float>(position_), static_cast<float>(target_)});
  }

  // Layout: key word 0, key word 1, episode counter, position, target, running (0 or 1).
  std::vector<double> checkpoint_state() const override {
    std::vector<double> out;
    append_key(out, key_);
    out.insert(out.end(), {static_cast<double>(episode_), position_, target_, running_ ? 1.0 : 0.0});
    return out;
  }
  void restore_checkpoint_state(const std::vector<double>& state) override {
    // Read (and check) everything before changing anything.
    CheckpointStateReader in(state, name());
    const Key key = in.key("the key");
    const uint64_t episode = in.count("the episode counter");
    const double position = in.number("the position");
    const double target = in.number("the target");
    const bool running = in.flag("the running flag");
    in.finish();
    key_ = key;
    episode_ = episode;
    position_ = position;
    target_ = target;
    running_ = running;
  }

 private:
  Space observation_space_, action_space_;
  Key key_;
  uint64_t episode_ = 0;
  double position_ = 0.0, target_ = 0.0;
  bool running_ = false;
};

struct EpisodeResult {
  double total_return = 0.0;
  int64_t length = 0;
  bool terminated = false;
};

template <typename Policy>
EpisodeResult play(Env& env, Policy policy) {
  EpisodeResult result;
  Tensor observation = env.reset();
  while (true) {
    const StepResult step = env.step(policy(observation, result.length));
    result.total_return += step.reward;
    ++result.length;
    observation = step.observation;
    if (step.terminated || step.truncated) {
      result.terminated = step.terminated;
      return result;
    }
  }
}

}  // namespace

int main() {
  // A 100-step time limit, as make_env applies to the built-in environments.
  EnvPtr env = std::make_unique<TimeLimit>(std::make_unique<ReachTarget>(), 100);
  env->reset(42);
  std::printf("%s: observations %s, actions %s\n", env->name().c_str(), env->observation_space().to_string().c_str(),
              env->action_space().to_string().c_str());

  const Key policy_key(7);
  for (int episode = 0; episode < 3; ++episode) {
    const EpisodeResult r = play(*env, [&](const Tensor&, int64_t step) {
      return env->action_space().sample(fold_in(fold_in(policy_key, static_cast<uint64_t>(episode)),
                                                static_cast<uint64_t>(step)));
    });
    std::printf("random policy, episode %d: return %7.2f over %3lld steps (%s)\n", episode, r.total_return,
                static_cast<long long>(r.length), r.terminated ? "reached" : "time limit");
  }

  bool all_reached = true;
  for (int episode = 0; episode < 3; ++episode) {
    const EpisodeResult r = play(*env, [](const Tensor& observation, int64_t) {
      const std::vector<float> o = observation.to_vector<float>();
      const int64_t action = o[1] > o[0] + 0.04f ? 2 : o[1] < o[0] - 0.04f ? 0 : 1;
      return scalar_tensor(static_cast<double>(action), DType::int64);
    });
    std::printf("greedy policy, episode %d: return %7.2f over %3lld steps (%s)\n", episode, r.total_return,
                static_cast<long long>(r.length), r.terminated ? "reached" : "time limit");
    all_reached = all_reached && r.terminated;
  }
  if (!all_reached) {
    std::printf("FAIL: the greedy policy should reach the target in every episode\n");
    return 1;
  }

  // Checkpoint in mid-episode (TimeLimit adds its step count to the environment's state),
  // restore into a fresh environment, and play the same random actions in both, across
  // episode ends and resets: they must agree exactly.
  env->reset(3);
  const Key action_key(11);
  for (uint64_t t = 0; t < 5; ++t) env->step(env->action_space().sample(fold_in(action_key, t)));
  EnvPtr resumed = std::make_unique<TimeLimit>(std::make_unique<ReachTarget>(), 100);
  resumed->restore_checkpoint_state(env->checkpoint_state());
  bool same = true;
  for (uint64_t t = 5; t < 400; ++t) {
    const Tensor action = env->action_space().sample(fold_in(action_key, t));
    const StepResult a = env->step(action), b = resumed->step(action);
    same = same && a.observation.to_vector<float>() == b.observation.to_vector<float>() && a.reward == b.reward &&
           a.terminated == b.terminated && a.truncated == b.truncated;
    if (a.terminated || a.truncated || b.terminated || b.truncated)
      same = same && env->reset().to_vector<float>() == resumed->reset().to_vector<float>();
  }
  std::printf("restored from a checkpoint: %s\n", same ? "identical" : "DIFFERENT");
  if (!same) {
    std::printf("FAIL: an environment restored from a checkpoint should continue exactly as the original\n");
    return 1;
  }
  return 0;
}
