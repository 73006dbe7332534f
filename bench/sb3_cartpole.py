#!/usr/bin/env python3
"""PPO on CartPole-v1, Stable-Baselines3 beside ctrax on the same 100k-step budget, one thread each.

SB3 runs rl-baselines3-zoo's CartPole-v1 hyperparameters (8 envs x 32 steps, batch 256, 20 epochs,
gamma 0.98, GAE lambda 0.8, entropy 0, learning rate and clip range annealed linearly from 1e-3
and 0.2) for the whole budget; its final policy is scored on 100 greedy episodes on fresh seeds.
ctrax runs configs/ppo_cartpole.toml (the same settings) twice per seed, interleaved with SB3:
as shipped (it stops once 100 greedy episodes confirm the target) and with the target removed
(the whole budget without routine evaluations, checkpoints every 50 epochs, then the final
policy's 100-episode confirmation). Wall-clock is the whole
process: start, training, evaluation. Prints a Markdown table of medians; a benchmark, never a
test or a build dependency:

  python3 -m pip install stable-baselines3 gymnasium
  python3 bench/sb3_cartpole.py [--ctrax build/tools/ctrax] [--seeds 10] [--first-seed 1000]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

SB3_RUN = r"""
import sys, time
import numpy as np, torch
torch.set_num_threads(1)
import gymnasium as gym
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env
seed = int(sys.argv[1])
start = time.perf_counter()
lin = lambda v: (lambda progress: progress * v)
env = make_vec_env("CartPole-v1", n_envs=8, seed=seed)
model = PPO("MlpPolicy", env, n_steps=32, batch_size=256, gae_lambda=0.8, gamma=0.98, n_epochs=20,
            ent_coef=0.0, learning_rate=lin(1e-3), clip_range=lin(0.2), seed=seed, device="cpu", verbose=0)
model.learn(total_timesteps=100_000)
train_seconds = time.perf_counter() - start
returns = []
e = gym.make("CartPole-v1")
for i in range(100):
    obs, _ = e.reset(seed=10_000_000 + 1000 * seed + i)
    done, total = False, 0.0
    while not done:
        action, _ = model.predict(obs, deterministic=True)
        obs, r, term, trunc, _ = e.step(int(action))
        total += r
        done = term or trunc
    returns.append(total)
print(f"RESULT {train_seconds:.3f} {np.mean(returns):.2f} {model.num_timesteps}")
"""


def run_sb3(seed):
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", SB3_RUN, str(seed)], capture_output=True, text=True,
                         env={**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}, check=True).stdout
    wall = time.perf_counter() - start
    _, train, mean, steps = re.search(r"RESULT .*", out).group(0).split()
    return wall, float(mean), int(steps)


def run_ctrax(binary, config, seed, work, name):
    out_dir = os.path.join(work, f"{name}_{seed}")
    start = time.perf_counter()
    out = subprocess.run([binary, "train", config, "--seed", str(seed), "--threads", "1", "--output-dir", out_dir],
                         capture_output=True, text=True, check=True).stdout
    wall = time.perf_counter() - start
    mean = float(re.search(r"(?:solved|final policy): mean (-?[0-9.]+)", out).group(1))
    steps = int(re.search(r"epoch \d+, (\d+) environment steps", out).group(1))
    return wall, mean, steps


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ctrax", default=os.path.join(ROOT, "build", "tools", "ctrax"))
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--first-seed", type=int, default=1000)
    a = p.parse_args()
    config = os.path.join(ROOT, "configs", "ppo_cartpole.toml")
    with tempfile.TemporaryDirectory() as work:
        budget_only = os.path.join(work, "ppo_cartpole_budget.toml")
        with open(config) as f, open(budget_only, "w") as g:
            # No target, so no routine evaluation is needed (SB3 runs none either), and a
            # checkpoint every 50 epochs (the final one is always written and confirmed).
            text = "".join(line for line in f if not line.startswith("target_eval_return"))
            text = text.replace("n_eval_episodes = 10", "n_eval_episodes = 0\ncheckpoint_every = 50")
            g.write(text)
        rows = {"sb3": [], "ctrax": [], "ctrax_budget": []}
        for seed in range(a.first_seed, a.first_seed + a.seeds):  # interleaved, seed by seed
            rows["sb3"].append(run_sb3(seed))
            rows["ctrax"].append(run_ctrax(a.ctrax, config, seed, work, "stop"))
            rows["ctrax_budget"].append(run_ctrax(a.ctrax, budget_only, seed, work, "budget"))
            print(f"seed {seed}: " + ", ".join(f"{k} {v[-1][0]:.2f} s mean {v[-1][1]:.1f}" for k, v in rows.items()),
                  file=sys.stderr)
    with open("/proc/cpuinfo") as f:
        cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "unknown CPU")
    print(f"- CPU: {cpu}; one thread per process; load average {os.getloadavg()[0]:.2f} at the end")
    print(f"- seeds {a.first_seed}..{a.first_seed + a.seeds - 1}; medians over seeds; 100 greedy episodes on fresh seeds")
    print()
    print("| run | wall-clock s (median) | env steps (median) | 100-episode mean: median, min | runs at >= 475 |")
    print("|---|---|---|---|---|")
    names = {"sb3": "SB3 PPO, 100k steps", "ctrax": "ctrax PPO, stop on confirmation",
             "ctrax_budget": "ctrax PPO, the whole 100k steps"}
    for key, label in names.items():
        r = rows[key]
        means = [m for _, m, _ in r]
        print(f"| {label} | {statistics.median(w for w, _, _ in r):.2f} | {statistics.median(s for _, _, s in r):.0f} | "
              f"{statistics.median(means):.1f}, {min(means):.1f} | {sum(m >= 475 for m in means)}/{len(r)} |")


if __name__ == "__main__":
    main()
