#!/usr/bin/env bash
# Builds ctrax (Release) in $CTRAX_BUILD_DIR (default build/) and runs the main job:
# `ctrax train`, which trains PPO on CartPole-v1 (configs/ppo_cartpole.toml, embedded in the
# command) until 100 greedy episodes confirm a mean return above 475 (within a 100k-step
# budget), with a progress line, and writes the run to runs/ppo_cartpole[_k]/ (metrics,
# TensorBoard events, checkpoints with the best confirmed one, learning curve).
# Arguments are passed on to `ctrax train` (e.g. a config: configs/ppo_pendulum.toml, --seed 3).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
build_dir=${CTRAX_BUILD_DIR:-build}
jobs=${CTRAX_JOBS:-$(nproc)}
read -r -a extra_args <<<"${CTRAX_CMAKE_ARGS:-}"

if ! command -v cmake >/dev/null 2>&1; then
  echo "demo.sh: cmake not found; run scripts/setup.sh first" >&2
  exit 1
fi

cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release "${extra_args[@]}"
cmake --build "$build_dir" --parallel "$jobs" --target ctrax_command
exec "$build_dir/tools/ctrax" train "$@"
