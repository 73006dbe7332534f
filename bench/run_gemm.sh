#!/usr/bin/env bash
# Runs bench_gemm (native vs OpenBLAS, 1 and 2 threads) and writes bench/results/gemm.md.
#
# OpenBLAS picks its kernel from the CPU at load time, and OPENBLAS_CORETYPE overrides that.
# Runs, each with medians of 3 repetitions:
#   1. native + OpenBLAS with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset (OpenBLAS's own
#      choice; OpenBLAS 0.3.21 does not know every newer CPU and may fall back to a generic core);
#   2. native + OpenBLAS with OPENBLAS_CORETYPE=SkylakeX and =Cooperlake (its AVX-512 kernels),
#      so the table can compare against OpenBLAS's best kernel on this machine whatever it
#      auto-picks. Native runs in runs 1 and 2 as well, interleaved with OpenBLAS, and both sides
#      are reported as the best of their three medians: taking OpenBLAS's best of three but
#      native's only one would bias the ratio on a noisy machine;
#   3. OpenBLAS with the environment's OPENBLAS_CORETYPE (Haswell if unset): the AVX2 figure.
# Usage: bench/run_gemm.sh [build-dir]   (default: build-gemm, else build)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-}
if [[ -z "$BUILD" ]]; then
  if [[ -x build-gemm/bench/bench_gemm ]]; then BUILD=build-gemm; else BUILD=build; fi
fi
BIN="$BUILD/bench/bench_gemm"
[[ -x "$BIN" ]] || { echo "no $BIN; build the bench_gemm target first" >&2; exit 1; }

OUT_DIR=bench/results
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$OUT_DIR"
COMMON=(--benchmark_min_time=0.05 --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
        --benchmark_out_format=json)
ENV_CORETYPE=${OPENBLAS_CORETYPE:-Haswell}
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)

echo "== run 1: native + OpenBLAS auto (OPENBLAS_CORETYPE, OPENBLAS_L2_SIZE unset)"
env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$BIN" "${COMMON[@]}" --benchmark_out="$TMP/auto.json" \
  | grep -E "openblas_corename|_median" || true
for core in SkylakeX Cooperlake; do
  echo "== run 2: native + OpenBLAS with OPENBLAS_CORETYPE=$core"
  env -u OPENBLAS_L2_SIZE OPENBLAS_CORETYPE=$core "$BIN" "${COMMON[@]}" \
    --benchmark_out="$TMP/$core.json" | grep -E "openblas_corename|_median" || true
done
echo "== run 3: OpenBLAS with OPENBLAS_CORETYPE=$ENV_CORETYPE (the environment's, or Haswell)"
OPENBLAS_CORETYPE=$ENV_CORETYPE "$BIN" "${COMMON[@]}" --benchmark_filter='/openblas/' \
  --benchmark_out="$TMP/env.json" | grep -E "openblas_corename|_median" || true

LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
python3 - "$TMP" "$OUT_DIR/gemm.md" "$ENV_CORETYPE" "$LOAD_BEFORE" "$LOAD_AFTER" <<'PY'
import json, re, sys, os
tmp, out, env_core, load_before, load_after = sys.argv[1:6]

def load(name):
    with open(os.path.join(tmp, name + ".json")) as f:
        data = json.load(f)
    rates = {}
    for b in data["benchmarks"]:
        if b.get("aggregate_name") != "median":
            continue
        key = re.sub(r"/real_time.*$", "", b["run_name"])
        rates[key] = b["GFLOP/s"]
        # 1 thread: also the rate over the thread's CPU time, which other processes on a
        # shared machine disturb much less than wall time.
        m = re.match(r".*/t1/(\d+)x(\d+)x(\d+)$", key)
        if m and b.get("cpu_time"):
            scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b.get("time_unit", "ns")]
            flops = 2.0 * int(m.group(1)) * int(m.group(2)) * int(m.group(3))
            rates[key + "/cpu"] = flops / (b["cpu_time"] * scale) / 1e9
    return data["context"], rates

ctx, auto = load("auto")
runs = {"auto": auto}
cores = {"auto": ctx.get("openblas_corename", "?")}
for name in ["SkylakeX", "Cooperlake", "env"]:
    c, r = load(name)
    runs[name] = r
    cores[name] = c.get("openblas_corename", "?")
# Native: best of its medians in runs 1 and 2 (the OpenBLAS kernel choice does not affect it).
native_best = {}
for name in ["auto", "SkylakeX", "Cooperlake"]:
    for key, value in runs[name].items():
        if "/native/" in key:
            native_best[key] = max(native_best.get(key, 0.0), value)

# Peak: FLOP/cycle * GHz * cores. AVX-512 with two FMA units: 2 units * 16 lanes * 2 FLOP = 64 SP
# FLOP/cycle (32 DP). GHz is the nominal clock benchmark reports (mhz_per_cpu).
ghz = ctx.get("mhz_per_cpu", 0) / 1000.0
isa = ctx.get("native_isa", "?")
sp_per_cycle = {"avx512": 64, "avx2": 32, "portable": 8}.get(isa, 64)

shapes = []
for key in auto:
    m = re.match(r"(sgemm|dgemm)/native/t(\d)/(\d+)x(\d+)x(\d+)$", key)
    if m:
        shapes.append((m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4)), int(m.group(5))))
def order(s):
    typ, t, m, k, n = s
    square = m == k == n
    return (typ != "sgemm", t, square, m * k * n)
shapes.sort(key=order)

lines = []
lines.append("# GEMM: native vs OpenBLAS")
lines.append("")
lines.append("Written by `bench/run_gemm.sh` (Google Benchmark, `bench/bench_gemm.cpp`). "
             "Median of 3 repetitions per run; native and each OpenBLAS figure is the best of its runs' medians "
             "(native: 3 runs, interleaved with OpenBLAS). GFLOP/s = 2*m*n*k / wall time, beta = 0, no transposes, "
             "operands warm in cache. The machine is shared and noisy: treat differences under ~10% as noise.")
lines.append("")
lines.append(f"Load average (1/5/15 min) before the runs: {load_before}; after: {load_after}. On a 2-core machine a "
             "load above ~2 means other processes shared the cores and wall-time figures are depressed; the "
             "1-thread table at the end uses CPU time instead, which such sharing disturbs far less.")
lines.append("")
lines.append(f"- CPU: {ctx.get('cpu_model')} ({ctx.get('num_cpus')} cores visible, {ghz:.2f} GHz nominal); "
             f"features: {ctx.get('cpu_features')}")
lines.append(f"- Native micro-kernel ISA: {isa}")
lines.append(f"- OpenBLAS: {ctx.get('openblas_config')}")
lines.append(f"- OpenBLAS cores: auto (CORETYPE unset) = **{cores['auto']}**; "
             f"SkylakeX run = {cores['SkylakeX']}; Cooperlake run = {cores['Cooperlake']}; "
             f"environment/Haswell run (OPENBLAS_CORETYPE={env_core}) = {cores['env']}")
lines.append(f"- Threads: 1 and 2 (ctrax set_num_threads; the OpenBLAS backend sets openblas_set_num_threads to match)")
lines.append(f"- Peak (single precision) = FLOP/cycle x GHz x cores = {sp_per_cycle} x {ghz:.2f} x cores "
             f"= {sp_per_cycle*ghz:.1f} GFLOP/s per core ({sp_per_cycle} SP FLOP/cycle: {isa} with 2 FMA units); "
             "double precision is half. Turbo can exceed the nominal clock, so fractions above 100% are possible.")
lines.append("")
lines.append("`best` is the fastest of OpenBLAS's auto, SkylakeX and Cooperlake kernels for that shape; "
             "ratio = native / best. `%peak` is native / (peak x threads).")
lines.append("")
lines.append(f"| op | threads | m x k x n | native | OB auto ({cores['auto']}) | OB SkylakeX | OB Cooperlake | OB best | native / best | OB {cores['env']} | native / {cores['env']} | native %peak |")
lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
def fmt(x):
    return "-" if x is None else f"{x:.1f}"
for typ, t, m, k, n in shapes:
    key = f"{typ}/native/t{t}/{m}x{k}x{n}"
    ob = f"{typ}/openblas/t{t}/{m}x{k}x{n}"
    nat = native_best.get(key)
    vals = [runs[r].get(ob) for r in ("auto", "SkylakeX", "Cooperlake")]
    best = max([v for v in vals if v is not None], default=None)
    envv = runs["env"].get(ob)
    peak = sp_per_cycle * ghz * t * (1 if typ == "sgemm" else 0.5)
    ratio = f"{nat/best:.2f}" if nat and best else "-"
    ratio_env = f"{nat/envv:.2f}" if nat and envv else "-"
    frac = f"{100*nat/peak:.0f}%" if nat and peak else "-"
    lines.append(f"| {typ} | {t} | {m}x{k}x{n} | {fmt(nat)} | {fmt(vals[0])} | {fmt(vals[1])} | {fmt(vals[2])} | "
                 f"{fmt(best)} | {ratio} | {fmt(envv)} | {ratio_env} | {frac} |")
lines.append("")
lines.append("## 1 thread, GFLOP/s over CPU time")
lines.append("")
lines.append(f"| op | m x k x n | native | OB best of auto/SkylakeX/Cooperlake | native / best | OB {cores['env']} | native / {cores['env']} | native %peak |")
lines.append("|---|---|---|---|---|---|---|---|")
for typ, t, m, k, n in shapes:
    if t != 1:
        continue
    key = f"{typ}/native/t1/{m}x{k}x{n}/cpu"
    ob = f"{typ}/openblas/t1/{m}x{k}x{n}/cpu"
    nat = native_best.get(key)
    best = max([v for v in (runs[r].get(ob) for r in ("auto", "SkylakeX", "Cooperlake")) if v is not None], default=None)
    envv = runs["env"].get(ob)
    peak = sp_per_cycle * ghz * (1 if typ == "sgemm" else 0.5)
    lines.append(f"| {typ} | {m}x{k}x{n} | {fmt(nat)} | {fmt(best)} | "
                 f"{(f'{nat/best:.2f}' if nat and best else '-')} | {fmt(envv)} | "
                 f"{(f'{nat/envv:.2f}' if nat and envv else '-')} | {(f'{100*nat/peak:.0f}%' if nat else '-')} |")
with open(out, "w") as f:
    f.write("\n".join(lines) + "\n")
print(f"wrote {out}")
PY
