#!/usr/bin/env bash
# Data-parallel scaling on this machine: environment steps per second of one process against
# `mpirun -np 2` (one thread per rank), interleaved over ROUNDS rounds, on a PPO configuration
# with many environments and little training per step of them (configs/ppo_acrobot.toml with 64
# Acrobot-v1 copies, 16384 steps per epoch, 4 policy and 4 value steps of 64 slices). Also checks that the
# 2-rank run's final checkpoint equals `--virtual-ranks 2`'s bit for bit, and times the
# allreduce alone (bench/mpi_allreduce_time). Writes bench/results/mpi.md.
# Usage: bench/run_mpi_scaling.sh [path/to/ctrax] [rounds] [epochs]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
ctrax="${1:-build/tools/ctrax}"
rounds="${2:-5}"
epochs="${3:-30}"
allreduce="$(dirname "$ctrax")/../bench/mpi_allreduce_time"
config="$here/../configs/ppo_acrobot.toml"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
settings=(--set task.n_envs=64 --set task.n_eval_envs=2 --set agent.n_interactions_per_epoch=16384
          --set agent.n_eval_episodes=2 --set agent.n_confirm_episodes=4 --set agent.eval_max_steps=100
          --set policy.train_steps_per_epoch=4 --set value.train_steps_per_epoch=4 --set policy.batch_size=64
          --set value.batch_size=64 --set epochs="$epochs" --set target_eval_return=1e9)
run() {  # name, launcher...
  local name=$1
  shift
  local dir="$work/${name}_$r"
  /usr/bin/time -f "%e" -o "$work/wall_${name}_$r" "$@" "$ctrax" train "$config" "${settings[@]}" --threads 1 \
    --output-dir "$dir" > "$work/out_${name}_$r" 2>&1
  # The job's environment steps per second of every epoch after the first (compiling the steps
  # and the first allocations fall in epoch 1).
  python3 -c "
import json, statistics, sys
rows = [json.loads(l) for l in open('$dir/metrics.jsonl')]
rates = [r['time/env_steps_per_second'] for r in rows if r['step'] > 1]
print(statistics.median(rates), rows[-1]['n_interactions'])" > "$work/rate_${name}_$r"
}
# Two independent single-process runs at the same time: how far 2 cores scale this work at all.
pair() {
  run pair_a &
  run pair_b
  wait
}
for ((r = 0; r < rounds; ++r)); do
  run one_process
  run mpirun_2 mpirun -np 2 --oversubscribe --bind-to core
  pair
done
r=virtual
"$ctrax" train "$config" "${settings[@]}" --virtual-ranks 2 --output-dir "$work/virtual" > /dev/null 2>&1
last() { ls "$1"/checkpoints/checkpoint-*.safetensors | sort -V | tail -1; }
if cmp -s "$(last "$work/virtual")" "$(last "$work/mpirun_2_0")"; then identical=yes; else identical=NO; fi
allreduce_table="(bench/mpi_allreduce_time was not built)"
if [[ -x "$allreduce" ]]; then
  allreduce_table="$(mpirun -np 2 --oversubscribe --bind-to core "$allreduce" 300)"
fi
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$work" "$rounds" "$here/results/mpi.md" "$load_before" "$load_after" "$identical" "$epochs" "$allreduce_table" <<'PY'
import os, statistics, sys
work, rounds, out, before, after, identical, epochs, allreduce = sys.argv[1:9]
rounds = int(rounds)
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "unknown CPU")
def read(name):
    rates, walls, steps = [], [], []
    for r in range(rounds):
        rate, n = open(f"{work}/rate_{name}_{r}").read().split()
        rates.append(float(rate)); steps.append(float(n))
        walls.append(float(open(f"{work}/wall_{name}_{r}").read().split()[0]))
    return statistics.median(rates), statistics.median(walls), statistics.median(steps)
one, two = read("one_process"), read("mpirun_2")
wall = lambda name, r: float(open(f"{work}/wall_{name}_{r}").read().split()[0])
ceiling = statistics.median(max(wall("pair_a", r), wall("pair_b", r)) / wall("one_process", r) for r in range(rounds))
lines = ["# Data-parallel PPO: one process against 2 MPI ranks", "",
         "Written by `bench/run_mpi_scaling.sh`: configs/ppo_acrobot.toml with 64 Acrobot-v1 environments (32 per rank),",
         f"16384 environment steps per epoch, 4 policy and 4 value steps of 64 slices (32 per rank), {epochs} epochs, 2",
         "evaluation episodes of at most 100 steps per epoch (1 per rank), one CPU thread per process (`--threads 1`;",
         "mpirun `--bind-to core`).",
         "Environment steps per second: the job's steps over each epoch's wall time (collection, training, evaluation,",
         "checkpoint), the median over the epochs after the first, then over the rounds.", "",
         f"- CPU: {cpu}, {os.cpu_count()} cores; load average before: {before}; after: {after}",
         f"- medians of {rounds} interleaved rounds", "",
         "| run | environment steps per second | speed-up | wall time of the whole command |",
         "|---|---:|---:|---:|",
         f"| one process | {one[0]:,.0f} | 1.00x | {one[1]:.2f} s |",
         f"| `mpirun -np 2` | {two[0]:,.0f} | {two[0] / one[0]:.2f}x | {two[1]:.2f} s |", "",
         f"- For scale: two independent single-process runs at the same time take {ceiling:.2f}x as long as one alone (the",
         "  two cores share caches and memory bandwidth; each run also writes its checkpoints on a thread of its own).",
         f"- The 2-rank run's final checkpoint equals `ctrax train --virtual-ranks 2`'s bit for bit: **{identical}**.",
         f"- Environment steps per run: {one[2]:,.0f} (one process), {two[2]:,.0f} (2 ranks): the same epochs; the",
         "  initial random trajectory (task.initial_trajectories = 1) is played by rank 0's 32 copies, not by 64.",
         "- The wall time includes `mpirun`'s start and the final confirmation.", "",
         "## The allreduce alone (bench/mpi_allreduce_time, `mpirun -np 2`, loopback, shared memory)", "",
         "Each step's gradients: every rank widens its floats to float64, all ranks gather all of them and add",
         "them in rank order (dist/communicator.h). The slowest rank's time per call; 300 calls per size.", "",
         allreduce]
open(out, "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
