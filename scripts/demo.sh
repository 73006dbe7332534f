#!/usr/bin/env bash
# Builds ctrax (Release) in $CTRAX_BUILD_DIR (default build/) and runs the main program,
# examples/demo.cpp -> <build>/examples/demo. Arguments are passed on to the program.
# For now a short demo of the engine; it becomes PPO training on CartPole.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
build_dir=${CTRAX_BUILD_DIR:-build}
jobs=${CTRAX_JOBS:-$(nproc)}
read -r -a extra_args <<<"${CTRAX_CMAKE_ARGS:-}"

if [[ ! -f examples/demo.cpp ]]; then
  echo "demo.sh: examples/demo.cpp does not exist yet, so there is no demo program to run" >&2
  exit 1
fi
if ! command -v cmake >/dev/null 2>&1; then
  echo "demo.sh: cmake not found; run scripts/setup.sh first" >&2
  exit 1
fi

cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DCTRAX_BUILD_EXAMPLES=ON "${extra_args[@]}"
cmake --build "$build_dir" --parallel "$jobs" --target demo
exec "$build_dir/examples/demo" "$@"
