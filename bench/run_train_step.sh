#!/usr/bin/env bash
# The MLP 4-64-64-2 training step, eager against compiled (bench_train_step.cpp), side by side
# with jax.jit (bench/jax_train_step.py, when jax is importable), one thread, ROUNDS interleaved
# rounds; writes bench/results/train_step.md (or RESULTS) with the medians. Builds nothing.
# Usage: [RESULTS=...] bench/run_train_step.sh [path/to/bench_train_step] [rounds]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
binary="${1:-build/bench/bench_train_step}"
rounds="${2:-5}"
if [[ ! -x "$binary" ]]; then
  echo "run_train_step.sh: no benchmark binary at $binary (build the bench_train_step target first)" >&2
  exit 1
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
has_jax=0
python3 -c "import jax" 2> /dev/null && has_jax=1
for ((r = 0; r < rounds; ++r)); do
  CTRAX_NUM_THREADS=1 "$binary" --benchmark_format=json --benchmark_out="$work/ctrax_$r.json" \
    --benchmark_out_format=json > /dev/null
  if ((has_jax)); then python3 "$here/jax_train_step.py" --repetitions 1 > "$work/jax_$r.txt"; fi
done
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$work" "$rounds" "$has_jax" "${RESULTS:-$here/results/train_step.md}" "$load_before" "$load_after" <<'PY'
import glob, json, statistics, sys
work, rounds, has_jax, out = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", sys.argv[4]
times, storages = {}, {}
for path in sorted(glob.glob(f"{work}/ctrax_*.json")):
    for b in json.load(open(path))["benchmarks"]:
        unit = {"ns": 1e-3, "us": 1, "ms": 1e3}[b["time_unit"]]
        name = b["name"].removeprefix("BM_")
        times.setdefault(name, []).append(b["real_time"] * unit)
        if "storages_per_step" in b:
            storages[name] = b["storages_per_step"]
jax = [float(open(p).read()) for p in sorted(glob.glob(f"{work}/jax_*.txt"))] if has_jax else []
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "unknown CPU")
flags = next((l.split(":", 1)[1].split() for l in open("/proc/cpuinfo") if l.startswith("flags")), [])
cpu += " (AVX-512)" if "avx512f" in flags else " (AVX2)" if "avx2" in flags else ""
med = {k: statistics.median(v) for k, v in times.items()}
lines = ["# Training step: eager, compiled, jax.jit", "",
         "Written by `bench/run_train_step.sh`: the MLP 4-64-64-2 (Dense + ReLU twice, then Dense; MSE) on a batch",
         "of 64, float32, Adam, one thread. `train_step` rows go through the Trainer (forward, backward, loss, Adam,",
         "the row of metrics); `value_and_grad` rows are the loss and gradients alone. Compiled = tensor/compile.h",
         "(the step recorded once, then replayed as a plan of kernels). JAX: bench/jax_train_step.py, the same",
         "step with Adam written out, under one jax.jit (XLA CPU, one thread). Each step takes the next of 16",
         "batches (one fixed batch would be fitted until Adam's moments turn subnormal). `_flushed` rows flush",
         "subnormal floats to zero (kernels/denormals.h), as XLA does on the CPU; the others compute them",
         "exactly (ctrax's default, and PyTorch's). `_unfused`: the same plan without its GEMM epilogues",
         "(CompileOptions::fuse = false, tensor/plan_fusion.h): each matmul, bias add and ReLU a kernel of its own.",
         "",
         f"- CPU: {cpu}; ctrax threads: 1 (CTRAX_NUM_THREADS=1); JAX: intra_op_parallelism_threads=1",
         f"- load average before: {sys.argv[5]}; after: {sys.argv[6]}",
         f"- medians of {rounds} interleaved rounds",
         "",
         "| step | time | storages allocated per step |", "|---|---|---|"]
for name in ["mlp_train_step_eager", "mlp_train_step_compiled", "mlp_train_step_eager_flushed",
             "mlp_train_step_compiled_flushed", "mlp_value_and_grad_eager", "mlp_value_and_grad_compiled",
             "mlp_value_and_grad_compiled_unfused"]:
    if name in med:
        lines.append(f"| {name} | {med[name]:.1f} us | {storages.get(name, '-') if name in storages else '-'} |")
if jax:
    lines.append(f"| jax.jit train step | {statistics.median(jax):.1f} us | - |")
lines.append("")
# The replay's per-kernel overhead: 60 elementwise kernels on [n, 1] columns as a plan against
# the same kernels called directly (bench_train_step.cpp).
chain = [(n, med.get(f"plan_replay_elementwise_chain/{n}"), med.get(f"direct_elementwise_kernels/{n}"))
         for n in (8, 256, 4096)]
if all(p and d for _, p, d in chain):
    lines += ["What a plan's kernel costs beyond its work (60 elementwise kernels on [n, 1] float32, replayed as a",
              "plan against the same kernels called directly; per kernel):", "",
              "| n | replayed | direct |", "|---|---|---|"]
    lines += [f"| {n} | {1000 * p / 60:.1f} ns | {1000 * d / 60:.1f} ns |" for n, p, d in chain]
    lines.append("")
e, c = med.get("mlp_train_step_eager"), med.get("mlp_train_step_compiled")
ef, cf = med.get("mlp_train_step_eager_flushed"), med.get("mlp_train_step_compiled_flushed")
if e and c:
    lines.append(f"Compiled against eager (train step): {e / c:.2f}x faster; with subnormals flushed: "
                 f"{ef / cf:.2f}x." if ef and cf else f"Compiled against eager (train step): {e / c:.2f}x faster.")
if jax and cf:
    lines.append(f"Compiled, subnormals flushed, against jax.jit (which flushes them): {statistics.median(jax) / cf:.2f}x "
                 f"faster (unflushed: {statistics.median(jax) / c:.2f}x).")
open(out, "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
