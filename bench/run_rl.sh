#!/usr/bin/env bash
# The RL results table: trains every shipped configuration with 5 seeds and writes
# bench/results/rl.md (environment steps and wall-clock to the target, final evaluation return).
# Builds nothing. Usage:
#   bench/run_rl.sh [path/to/ctrax] [seeds] [config ...]
# default binary build/tools/ctrax, seeds 5, configs: every configs/*.toml. Each run writes to a
# temporary directory; the table reads its metrics.jsonl. Wall-clock is the sum of the epochs'
# times (collection, evaluation and training), so it includes the evaluation episodes.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
binary="${1:-$root/build/tools/ctrax}"
seeds="${2:-5}"
shift $(( $# > 2 ? 2 : $# ))
configs=("$@")
if [[ ${#configs[@]} -eq 0 ]]; then configs=("$root"/configs/*.toml); fi
if [[ ! -x "$binary" ]]; then
  echo "run_rl.sh: no ctrax binary at $binary (build the ctrax_command target first)" >&2
  exit 1
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$here/results"
for config in "${configs[@]}"; do
  name="$(basename "$config" .toml)"
  for ((seed = 0; seed < seeds; seed++)); do
    out="$work/$name/seed$seed"
    mkdir -p "$work/$name"
    echo "run_rl.sh: $name seed $seed" >&2
    "$binary" train "$config" --seed "$seed" --output-dir "$out" > "$out.log" 2>&1 || {
      echo "run_rl.sh: $name seed $seed failed:" >&2
      tail -5 "$out.log" >&2
    }
  done
done
python3 - "$work" "$here/results/rl.md" "$seeds" "${configs[@]}" <<'PY'
import datetime, json, os, statistics, sys, tomllib
work, out_path, seeds, configs = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
cpu = "unknown CPU"
for line in open("/proc/cpuinfo"):
    if line.startswith("model name"):
        cpu = line.split(":", 1)[1].strip()
        break
lines = ["# RL results: steps and wall-clock to the target", "",
         f"- CPU: {cpu} ({os.cpu_count()} logical CPUs visible), load average {os.getloadavg()[0]:.2f} at the end",
         f"- ctrax threads: CTRAX_NUM_THREADS={os.environ.get('CTRAX_NUM_THREADS', 'default (all)')}",
         f"- date: {datetime.datetime.now().isoformat(timespec='seconds')}; {seeds} seeds per configuration (seed 0..{seeds - 1})",
         "- target: the configuration's target_eval_return on the greedy (temperature 0) evaluation return;",
         "  steps and seconds are those of the first epoch that reached it (wall-clock: the sum of the epochs'",
         "  times, evaluation included); \"-\" when it was not reached within the configuration's epochs.",
         "",
         "| configuration | algorithm | env | target | reached | steps to target (median, max) | seconds to target (median, max) | final eval return (mean) |",
         "|---|---|---|---|---|---|---|---|"]
for config in configs:
    name = os.path.basename(config)[:-5]
    spec = tomllib.load(open(config, "rb"))
    target = spec.get("target_eval_return")
    steps, secs, finals, reached = [], [], [], 0
    for seed in range(seeds):
        path = os.path.join(work, name, f"seed{seed}", "metrics.jsonl")
        if not os.path.exists(path):
            continue
        rows = [json.loads(l) for l in open(path) if l.strip()]
        rows = [r for r in rows if r.get("phase") == "rl"]
        if not rows:
            continue
        key = next((k for k in rows[0] if k.startswith("eval_return_T")), None)
        total = 0.0
        hit = None
        for r in rows:
            total += r.get("epoch_seconds", 0.0)
            if hit is None and key and target is not None and r[key] >= target:
                hit = (r["n_interactions"], total)
        finals.append(rows[-1][key] if key else rows[-1]["return"])
        if hit:
            reached += 1
            steps.append(hit[0]); secs.append(hit[1])
    fmt = lambda xs, f: f"{f(statistics.median(xs))}, {f(max(xs))}" if xs else "-"
    lines.append(f"| {name} | {spec.get('algorithm', '')} | {spec.get('task', {}).get('env', '')} | {target} | "
                 f"{reached}/{seeds} | {fmt(steps, lambda x: f'{x:.0f}')} | {fmt(secs, lambda x: f'{x:.1f}')} | "
                 f"{statistics.mean(finals):.1f} |" if finals else f"| {name} | | | {target} | 0/{seeds} | - | - | - |")
open(out_path, "w").write("\n".join(lines) + "\n")
print(f"wrote {out_path}")
PY
