#!/usr/bin/env bash
# The RL results table: trains every shipped configuration on several seeds with `ctrax sweep`
# and summarises them with `ctrax report` (fraction solved, steps and seconds to the confirmed
# target, the confirmed 100-episode returns' IQM with stratified bootstrap 95% intervals), writing
# bench/results/rl.md and bench/results/rl_curves.png. Builds nothing. Usage:
#   bench/run_rl.sh [path/to/ctrax] [seeds] [first seed] [config ...]
# defaults: build/tools/ctrax, 10 seeds, first seed 1000 (seeds no test or tuning run used),
# every configs/*.toml. One thread per run; JOBS runs at a time (default 1: timings from an
# otherwise idle machine). Check `uptime` first: timings taken under load are noise.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
binary="${1:-$root/build/tools/ctrax}"
seeds="${2:-10}"
first="${3:-1000}"
shift $(( $# > 3 ? 3 : $# ))
configs=("$@")
if [[ ${#configs[@]} -eq 0 ]]; then configs=("$root"/configs/*.toml); fi
if [[ ! -x "$binary" ]]; then
  echo "run_rl.sh: no ctrax binary at $binary (build the ctrax_command target first)" >&2
  exit 1
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$here/results"
load_before=$(cut -d' ' -f1 /proc/loadavg)
for config in "${configs[@]}"; do
  echo "run_rl.sh: $(basename "$config" .toml), seeds $first..$((first + seeds - 1))" >&2
  "$binary" sweep "$config" --seeds "$seeds" --first-seed "$first" --jobs "${JOBS:-1}" --threads 1 \
    --output-dir "$work" > "$work/$(basename "$config" .toml).sweep.log" 2>&1 ||
    echo "run_rl.sh: some runs of $config failed (see their logs)" >&2
done
"$binary" report "$work" --output "$work/table.md" --plot "$here/results/rl_curves.png" > /dev/null
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
{
  echo "# RL results: every shipped configuration on $seeds seeds"
  echo
  echo "- CPU: $cpu ($(nproc) logical CPUs), one thread per run, ${JOBS:-1} run(s) at a time;"
  echo "  load average $load_before before, $(cut -d' ' -f1 /proc/loadavg) after"
  echo "- date: $(date -u +%Y-%m-%dT%H:%M:%SZ); seeds $first..$((first + seeds - 1)) (never used in tuning or tests)"
  echo "- solved: the run stopped on a confirmation of 100 greedy episodes, on seeds training never"
  echo "  used, whose 95% interval lies at or above the target (confirm_statistic = ci95_low);"
  echo "  steps (the initial random trajectories included) and seconds (the sum of the epochs'"
  echo "  wall-clock, evaluations and checkpoints included) are those of that epoch, over solved runs."
  echo "- confirmed return: each run's final confirmation (the solving one, or the last policy's"
  echo "  when it was not solved), summarised over runs by the interquartile mean with a stratified"
  echo "  bootstrap 95% interval (Agarwal et al. 2021), and the mean and the minimum."
  echo "- made by: bench/run_rl.sh (ctrax sweep, ctrax report); curves: rl_curves.png"
  echo
  cat "$work/table.md"
} > "$here/results/rl.md"
echo "wrote $here/results/rl.md and $here/results/rl_curves.png"
