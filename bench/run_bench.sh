#!/usr/bin/env bash
# Runs one already-built Google Benchmark program and writes bench/results/NAME.md.
# Builds nothing. Usage: bench/run_bench.sh NAME [path/to/bench_NAME] [repetitions]
#   NAME: elementwise or reduce (bench_NAME.cpp); default binary build/bench/bench_NAME,
#   5 repetitions; the table shows medians. GEMM has its own script (run_gemm.sh), which
#   also runs OpenBLAS under several kernels.
# If PyTorch is importable and bench/torch_NAME.py exists, its figures are added alongside.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
name="${1:?usage: bench/run_bench.sh NAME [binary] [repetitions]}"
binary="${2:-build/bench/bench_$name}"
reps="${3:-5}"
if [[ ! -x "$binary" ]]; then
  echo "run_bench.sh: no benchmark binary at $binary (build the bench_$name target first)" >&2
  exit 1
fi
mkdir -p "$here/results"
json="$(mktemp)"
trap 'rm -f "$json" "$json.torch"' EXIT
"$binary" --benchmark_repetitions="$reps" --benchmark_report_aggregates_only=true \
  --benchmark_format=json --benchmark_out="$json" --benchmark_out_format=json > /dev/null
torch_json=""
if [[ -f "$here/torch_$name.py" ]] && python3 -c "import torch" 2> /dev/null; then
  python3 "$here/torch_$name.py" > "$json.torch" && torch_json="$json.torch"
fi
python3 - "$json" "$here/results/$name.md" "$torch_json" "$name" <<'PY'
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
lines = [f"# {sys.argv[4].capitalize()} benchmarks", "",
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
elif os.path.exists(os.path.join(os.path.dirname(out_path), "..", f"torch_{sys.argv[4]}.py")):
    lines += ["", "(PyTorch not installed: no side-by-side table.)"]
open(out_path, "w").write("\n".join(lines) + "\n")
print(f"wrote {out_path}")
PY
