// PPO on CartPole-v1: the main job of ctrax, as a program (configs/ppo_cartpole.toml in C++).
//
//   train_ppo_cartpole [seed] [output_dir]
//
// Trains a PPO agent (rl/agents/actor_critic.h) with separate 64x64 tanh policy and value networks on
// 8 batched CartPoles in rl-baselines3-zoo's settings: 256 environment steps per epoch, 20
// passes over them in one minibatch, learning rates and clip range annealed linearly over a
// 100k-step budget, orthogonal initialisation and gradient clipping. A routine evaluation of 10
// greedy episodes that reaches 475 (CartPole-v1's "solved" level; 500 is the maximum) only
// proposes a stop: 100 greedy episodes on seeds of their own must confirm it, with the lower end
// of their 95% interval at 475 or more (rl/agents/agent.h). Prints one line per epoch; with an output
// directory, writes metrics, checkpoints and the best confirmed checkpoint there (running it
// again continues from the last checkpoint). Exits with status 1 unless the run was solved, so
// running it is a convergence check.
#include <chrono>
#include <cmath>
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
    task_options.gamma = 0.98;
    task_options.initial_trajectories = 0;
    task_options.key = Key(seed);
    auto task = std::make_shared<RLTask>("CartPole-v1", task_options);  // the agent shares it

    AgentOptions agent;
    agent.n_interactions_per_epoch = 256;
    agent.n_eval_episodes = 10;
    agent.target_return = 475.0;
    agent.confirm_statistic = AgentOptions::ConfirmStatistic::ci95_low;
    agent.total_env_steps = 100000;
    agent.anneal_learning_rate = true;
    agent.output_dir = output_dir;

    const MLPOptions orthogonal_body{.out_activation = true, .kernel_init = orthogonal(std::sqrt(2.0)),
                                     .bias_init = constant_init(0.0)};
    auto body = [orthogonal_body] { return MLP({64, 64}, Tanh, orthogonal_body); };
    PolicyAgentOptions policy;
    policy.policy_model = Policy(task->action_space(), body, nullptr, orthogonal(0.01));
    policy.policy_optimizer = std::make_shared<Adam>(AdamOptions{.learning_rate = 1e-3, .clip_grad_norm = 0.5});
    policy.seed = seed;

    ActorCriticOptions value;
    value.value_model = Value(body, nullptr, orthogonal(1.0));
    value.value_optimizer = std::make_shared<Adam>(AdamOptions{.learning_rate = 1e-3, .clip_grad_norm = 0.5});
    value.advantage_estimator = gae(0.8);
    value.rollout_passes = 20;
    value.minibatch_size = 256;
    value.seed = seed + 1;

    PPO ppo(task, {.agent = agent,
                   .policy = policy,
                   .value = value,
                   .algorithm = {.epsilon = 0.2, .entropy_coeff = 0.0, .anneal_epsilon = true}});
    if (ppo.epoch() > 0) std::printf("resumed at epoch %lld\n", static_cast<long long>(ppo.epoch()));
    const auto start = std::chrono::steady_clock::now();
    while (!ppo.done()) {
      const Metrics m = ppo.run(1);
      std::printf("epoch %3lld  steps %7.0f  eval return %6.1f  value ev %5.2f  %.0f steps/s%s\n",
                  static_cast<long long>(ppo.epoch()), m.at("n_interactions"), m.at("eval/return_mean"),
                  m.at("value/explained_variance"), m.at("time/env_steps_per_second"),
                  m.count("confirm/return_mean") ? ("  confirmed " + std::to_string(m.at("confirm/return_mean"))).c_str()
                                                 : "");
      std::fflush(stdout);
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const EpisodeSummary& s = ppo.last_confirmation()->summary;
    std::printf("%s: %s after %lld epochs, %lld environment steps, %.1f s\n", ppo.solved() ? "solved" : "not solved",
                describe(s).c_str(), static_cast<long long>(ppo.epoch()),
                static_cast<long long>(task->n_interactions()), seconds);
    return ppo.solved() ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "train_ppo_cartpole: %s\n", e.what());
    return 2;
  }
}
