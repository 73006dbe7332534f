// PPO on CartPole-v1: the main job of ctrax, as a program.
//
//   train_ppo_cartpole [seed] [output_dir]
//
// Trains a PPO agent (rl/actor_critic.h) with separate 64x64 tanh policy and value networks on
// 8 batched CartPoles, one epoch = 2048 environment steps, until the greedy policy's mean return
// over 10 evaluation episodes reaches 475 (CartPole-v1's "solved" level; 500 is the maximum),
// or 100 epochs. Prints one line per epoch; with an output directory, writes metrics.csv,
// metrics.jsonl and checkpoints there (running it again continues from the last checkpoint).
// Exits with status 1 unless the target was reached, so running it is a convergence check.
#include <chrono>
#include <cstdio>
#include <string>

#include <ctrax/ctrax.h>

using namespace ctrax;

int main(int argc, char** argv) {
  try {
    const uint64_t seed = argc > 1 ? std::stoull(argv[1]) : 0;
    const std::string output_dir = argc > 2 ? argv[2] : "";

    RLTaskOptions task_options;
    task_options.n_envs = 8;
    task_options.n_eval_envs = 10;  // the 10 evaluation episodes side by side
    task_options.key = Key(seed);
    RLTask task("CartPole-v1", task_options);

    AgentOptions agent;
    agent.n_interactions_per_epoch = 2048;
    agent.n_eval_episodes = 10;
    agent.output_dir = output_dir;

    auto body = [] { return MLP({64, 64}, Tanh, /*out_activation=*/true); };
    PolicyAgentOptions policy;
    policy.policy_model = Policy(2, body, nullptr, /*head_init_range=*/0.01);
    policy.policy_optimizer = std::make_shared<Adam>(AdamOptions{.learning_rate = 1e-3});
    policy.policy_lr_schedule = constant_schedule(1e-3);
    policy.policy_batch_size = 16;
    policy.policy_train_steps_per_epoch = 40;
    policy.policy_evals_per_epoch = 0;
    policy.max_slice_length = 64;
    policy.seed = seed;

    ActorCriticOptions value;
    value.value_model = Value(body);
    value.value_optimizer = std::make_shared<Adam>(AdamOptions{.learning_rate = 1e-3});
    value.value_lr_schedule = constant_schedule(1e-3);
    value.value_batch_size = 16;
    value.value_train_steps_per_epoch = 40;
    value.advantage_estimator = gae(0.95);
    value.scale_value_targets = true;

    PPO ppo(task, agent, policy, value, {.epsilon = 0.2, .entropy_coeff = 0.0});
    if (ppo.epoch() > 0) std::printf("resumed at epoch %lld\n", static_cast<long long>(ppo.epoch()));
    const auto start = std::chrono::steady_clock::now();
    double eval_return = 0;
    while (ppo.epoch() < 100 && eval_return < 475.0) {
      const Metrics m = ppo.run(1);
      eval_return = m.at("eval_return_T0");
      std::printf("epoch %3lld  steps %7.0f  return %6.1f  eval return %6.1f  value ev %5.2f  %.0f steps/s\n",
                  static_cast<long long>(ppo.epoch()), m.at("n_interactions"), m.at("return"), eval_return,
                  m.at("value/explained_variance"), m.at("env_steps_per_second"));
      std::fflush(stdout);
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%s: evaluation return %.1f after %lld epochs, %lld environment steps, %.1f s\n",
                eval_return >= 475.0 ? "solved" : "not solved", eval_return, static_cast<long long>(ppo.epoch()),
                static_cast<long long>(task.n_interactions()), seconds);
    return eval_return >= 475.0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "train_ppo_cartpole: %s\n", e.what());
    return 2;
  }
}
