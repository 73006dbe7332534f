#!/usr/bin/env bash
# Runs one already-built Google Benchmark program and writes bench/results/NAME.md.
# Builds nothing. Usage: bench/run_bench.sh NAME [path/to/bench_NAME] [repetitions]
#   NAME: elementwise, reduce, autograd or optimizers (bench_NAME.cpp); default binary build/bench/bench_NAME,
#   5 repetitions; the table shows medians. Rows with an "ops" counter ran that many ops per
#   iteration and are shown per op (autograd's chains). GEMM has its own script (run_gemm.sh), which
#   also runs OpenBLAS under several kernels.
# Repetitions run in random interleaved order, so a slow phase of a shared machine spreads over
# every row instead of landing on one. If PyTorch is importable and bench/torch_NAME.py exists,
# its figures are added alongside.
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
  --benchmark_enable_random_interleaving=true \
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
if not rows:  # one repetition: Google Benchmark reports no aggregates
    rows = [dict(b, repetitions=1) for b in data["benchmarks"] if b.get("run_type") == "iteration"]
# Interleaved repetitions come out in random order: list the rows in registration order.
rows.sort(key=lambda b: (b.get("family_index", 0), b.get("per_family_instance_index", 0)))
torch = json.load(open(torch_path)) if torch_path else {}
thread_note = ("1 (bench_autograd.cpp sets it; PyTorch: torch.set_num_threads(1))" if sys.argv[4] == "autograd"
               else f"{threads} (overhead rows force 1 thread)")
lines = [f"# {sys.argv[4].capitalize()} benchmarks", "",
         f"- CPU: {cpu} ({ctx.get('num_cpus')} logical CPUs visible, load avg {ctx.get('load_avg')})",
         f"- ctrax threads: {thread_note}",
         f"- date: {ctx.get('date')}; medians of {rows[0].get('repetitions', '?') if rows else '?'} repetitions"]
def fmt(ns):
    return f"{ns / 1e3:.2f} us" if ns >= 1e3 else f"{ns:.0f} ns"
def per_op_ns(b, key):
    unit = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[b["time_unit"]]
    return b[key] * unit / b.get("ops", 1)
def short(b):
    return b["run_name"].removeprefix("BM_")
if sys.argv[4] == "autograd":
    # One table of every row beside PyTorch, then the per-op costs the chains isolate:
    # recording = recorded - plain, backward = record_and_backward - recorded.
    lines += ["- chain rows: 64 ops y = op(y, w) per iteration on 64 x 64 float32, shown per op; MLP rows per call", "",
              "| benchmark | ctrax real time | ctrax CPU time | PyTorch eager | ctrax / PyTorch |",
              "|---|---|---|---|---|"]
    ours = {}
    for b in rows:
        ours[short(b)] = per_op_ns(b, "real_time")
        t = torch.get(short(b))
        ratio = f"{ours[short(b)] / t:.2f}" if t else ""
        lines.append(f"| {short(b)} | {fmt(ours[short(b)])} | {fmt(per_op_ns(b, 'cpu_time'))} | "
                     f"{fmt(t) if t else 'n/a'} | {ratio} |")
    lines += ["", "## Autodiff bookkeeping per op (64 x 64 float32)", "",
              "record overhead = recorded - plain; backward = record_and_backward - recorded (the gradient "
              "arithmetic included); total = record_and_backward - plain. add_const (y = y + c, c a constant) "
              "has no gradient arithmetic at all, so its total is the pure bookkeeping of one op, record and "
              "replay (ctrax's goal: under 0.3 us).", "",
              "| op | library | plain | recorded | record + backward | record overhead | backward | total |",
              "|---|---|---|---|---|---|---|---|"]
    for op in ("add_const", "add", "relu", "matmul"):
        for lib, table in (("ctrax", ours), ("PyTorch", torch)):
            p, r, rb = (table.get(f"{op}_64x64_{k}") for k in ("plain", "recorded", "record_and_backward"))
            if None in (p, r, rb):
                continue
            lines.append(f"| {op} | {lib} | {fmt(p)} | {fmt(r)} | {fmt(rb)} | {fmt(r - p)} | {fmt(rb - r)} | "
                         f"{fmt(rb - p)} |")
    if not torch:
        lines += ["", "(PyTorch not installed: no side-by-side figures.)"]
else:
    # PyTorch figures named like a row (bench/torch_NAME.py) go beside it; the others get their
    # own table below.
    side = {b["run_name"]: torch[b["run_name"]] for b in rows if b["run_name"] in torch}
    head = "| benchmark | real time | CPU time | GB/s (bytes = inputs + output) |"
    if side:
        head += " PyTorch | ctrax / PyTorch |"
    lines += ["", head, "|" + "---|" * (head.count("|") - 1)]
    for b in rows:
        gbs = f"{b['bytes_per_second'] / 1e9:.2f}" if "bytes_per_second" in b else ""
        real, cpu_ns = fmt(per_op_ns(b, "real_time")), fmt(per_op_ns(b, "cpu_time"))
        line = f"| {b['run_name']} | {real} | {cpu_ns} | {gbs} |"
        if side:
            t = side.get(b["run_name"])
            line += f" {fmt(t)} | {per_op_ns(b, 'real_time') / t:.2f} |" if t else " | |"
        lines.append(line)
    torch = {k: v for k, v in torch.items() if k not in side}
    extra = [k for k in torch if "/" in k and k.split("/")[0] not in {r["run_name"].split("/")[0] for r in rows}]
    if extra and side:
        lines += ["", "PyTorch rows without a ctrax counterpart:", "", "| PyTorch | time per step |", "|---|---|"]
        for name in extra:
            lines.append(f"| {name} | {fmt(torch.pop(name))} |")
    if torch:
        lines += ["", "## PyTorch eager, same per-op overhead (1 thread)", "", "| op | time per call |", "|---|---|"]
        for name, ns in torch.items():
            lines.append(f"| {name} | {fmt(ns)} |")
    elif not side and os.path.exists(os.path.join(os.path.dirname(out_path), "..", f"torch_{sys.argv[4]}.py")):
        lines += ["", "(PyTorch not installed: no side-by-side table.)"]
open(out_path, "w").write("\n".join(lines) + "\n")
print(f"wrote {out_path}")
PY
