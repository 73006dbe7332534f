#!/usr/bin/env bash
# Builds ctrax (Release) in $CTRAX_BUILD_DIR (default build/) and runs the main job: PPO on
# CartPole-v1 until it is solved, examples/train_ppo_cartpole.cpp ->
# <build>/examples/train_ppo_cartpole. Arguments are passed on to the program ([seed]
# [output_dir]). The `ctrax train` command will take its place.
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

cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DCTRAX_BUILD_EXAMPLES=ON "${extra_args[@]}"
cmake --build "$build_dir" --parallel "$jobs" --target train_ppo_cartpole
exec "$build_dir/examples/train_ppo_cartpole" "$@"
