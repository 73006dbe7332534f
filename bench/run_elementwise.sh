#!/usr/bin/env bash
# Runs the already-built elementwise benchmark and writes bench/results/elementwise.md.
# Builds nothing. Usage: bench/run_elementwise.sh [path/to/bench_elementwise] [repetitions]
# (default build/bench/bench_elementwise, 5 repetitions; the table shows medians).
# If PyTorch is importable, bench/torch_elementwise.py adds its per-op overhead alongside.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
binary="${1:-build/bench/bench_elementwise}"
reps="${2:-5}"
if [[ ! -x "$binary" ]]; then
  echo "run_elementwise.sh: no benchmark binary at $binary (build the bench_elementwise target first)" >&2
  exit 1
fi
mkdir -p "$here/results"
json="$(mktemp)"
trap 'rm -f "$json" "$json.torch"' EXIT
"$binary" --benchmark_repetitions="$reps" --benchmark_report_aggregates_only=true \
  --benchmark_format=json --benchmark_out="$json" --benchmark_out_format=json > /dev/null
torch_json=""
if python3 -c "import torch" 2> /dev/null; then
  python3 "$here/torch_elementwise.py" > "$json.torch" && torch_json="$json.torch"
fi
python3 - "$json" "$here/results/elementwise.md" "$torch_json" <<'PY'
import json, os, sys
data = json.load(open(sys.argv[1]))
out_path, torch_path = sys.argv[2], sys.argv[3]
ctx = data["context"]
cpu = "unknown CPU"
for line in open("/proc/cpuinfo"):
    if line.startswith("model name"):
        cpu = line.split(":", 1)[1].strip()
        break
threads = os.environ.get("CTRAX_NUM_THREADS", str(ctx.get("num_cpus", "?")))
rows = [b for b in data["benchmarks"] if b.get("aggregate_name") == "median"]
lines = ["# Elementwise benchmarks", "",
         f"- CPU: {cpu} ({ctx.get('num_cpus')} logical CPUs visible, load avg {ctx.get('load_avg')})",
         f"- ctrax threads: {threads} (overhead rows force 1 thread)",
         f"- date: {ctx.get('date')}; medians of {rows[0].get('repetitions', '?') if rows else '?'} repetitions",
         "", "| benchmark | real time | CPU time | GB/s (bytes = inputs + output) |", "|---|---|---|---|"]
def fmt(ns):
    return f"{ns / 1e3:.2f} us" if ns >= 1e3 else f"{ns:.0f} ns"
for b in rows:
    unit = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[b["time_unit"]]
    gbs = f"{b['bytes_per_second'] / 1e9:.2f}" if "bytes_per_second" in b else ""
    name = b["run_name"]
    lines.append(f"| {name} | {fmt(b['real_time'] * unit)} | {fmt(b['cpu_time'] * unit)} | {gbs} |")
if torch_path:
    lines += ["", "## PyTorch eager, same per-op overhead (1 thread)", "", "| op | time per call |", "|---|---|"]
    for name, ns in json.load(open(torch_path)).items():
        lines.append(f"| {name} | {fmt(ns)} |")
else:
    lines += ["", "(PyTorch not installed: no side-by-side overhead table.)"]
open(out_path, "w").write("\n".join(lines) + "\n")
print(f"wrote {out_path}")
PY
