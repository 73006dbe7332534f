#!/usr/bin/env bash
# What a CPU program pays for ctrax: the start time and peak memory of `ctrax --help`, the peak
# memory of a whole `ctrax train configs/ppo_pendulum_rltools.toml` run (one thread), and the
# size of docs/embedding.md's custom-environment program, for one or more builds side by side
# (e.g. a CUDA-enabled build and a CPU-only one). Writes bench/results/footprint.md. Builds
# nothing. Each build directory must hold tools/ctrax and tests/docs/docs_embedding_program_1.
# Usage: bench/run_footprint.sh [rounds] [LABEL=]BUILD_DIR [[LABEL=]BUILD_DIR...]   (rounds default 5)
#   e.g. bench/run_footprint.sh 5 "CUDA-enabled=build-cuda" "CPU-only=build"
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
rounds=5
if [[ "${1:-}" =~ ^[0-9]+$ ]]; then rounds=$1; shift; fi
[[ $# -ge 1 ]] || { echo "usage: run_footprint.sh [rounds] BUILD_DIR [BUILD_DIR...]" >&2; exit 2; }
for build in "$@"; do
  build=${build##*=}
  [[ -x "$build/tools/ctrax" ]] || { echo "run_footprint.sh: no $build/tools/ctrax" >&2; exit 1; }
done
python3 - "$rounds" "$here/../configs/ppo_pendulum_rltools.toml" "$here/results/footprint.md" "$@" <<'PY'
import math, os, re, statistics, subprocess, sys, tempfile, time
rounds, config, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
labels = {}  # build dir -> the label shown
builds = []
for arg in sys.argv[4:]:
    label, _, path = arg.rpartition("=")
    builds.append(path)
    labels[path] = label or path
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "unknown CPU")
before = open("/proc/loadavg").read().split()[:3]

def timed(cmd):
    """Wall seconds and peak RSS in KiB of the whole process tree (/usr/bin/time), and stdout."""
    with tempfile.NamedTemporaryFile("r") as f:
        t = time.perf_counter()
        p = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", f.name] + cmd, capture_output=True, text=True)
        wall = time.perf_counter() - t
        if p.returncode != 0:
            sys.exit(f"run_footprint.sh: {' '.join(cmd)} failed:\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
        return wall, int(open(f.name).read().split()[-1]), p.stdout

def cuda_libraries(build):
    """Whether the build made the CUDA module, and the CUDA libraries `ldd ctrax` lists."""
    module = any(n.startswith("libctrax_cuda.so") for n in os.listdir(os.path.join(build, "kernels"))) \
        if os.path.isdir(os.path.join(build, "kernels")) else False
    ldd = subprocess.run(["ldd", os.path.join(build, "tools/ctrax")], capture_output=True, text=True).stdout
    return module, [l.split()[0] for l in ldd.splitlines() if re.search(r"libcud|libcublas|libctrax_cuda", l)]

rows = {b: {"help_ms": [], "help_kib": [], "train_tree_kib": [], "train_own_mib": [], "train_s": []} for b in builds}
with tempfile.TemporaryDirectory() as work:
    for r in range(rounds):  # interleaved: every build once per round
        for i, b in enumerate(builds):
            ctrax = os.path.join(b, "tools/ctrax")
            for _ in range(20):
                wall, kib, _ = timed([ctrax, "--help"])
                rows[b]["help_ms"].append(wall * 1e3)
                rows[b]["help_kib"].append(kib)
            wall, kib, text = timed([ctrax, "train", config, "--threads", "1", "--output-dir",
                                     os.path.join(work, f"run_{i}_{r}"), "--set", "target_eval_return=1e9"])
            own = re.search(r"peak memory ([0-9.]+) MiB", text)
            rows[b]["train_tree_kib"].append(kib)
            rows[b]["train_own_mib"].append(float(own.group(1)) if own else float("nan"))
            rows[b]["train_s"].append(wall)
# /usr/bin/time's own start is in every --help figure: measured alone, it is subtracted.
base = []
for _ in range(40):
    t = time.perf_counter()
    subprocess.run(["/usr/bin/time", "-f", "%M", "-o", "/dev/null", "/bin/true"], capture_output=True)
    base.append((time.perf_counter() - t) * 1e3)
base_ms = statistics.median(base)
after = open("/proc/loadavg").read().split()[:3]
med = statistics.median
lines = ["# What a CPU program pays for ctrax", "",
         "Written by `bench/run_footprint.sh`. `ctrax --help`: start-to-exit time (median of "
         f"{20 * rounds} runs, less the {base_ms:.2f} ms that starting `/usr/bin/time` and `/bin/true` takes) and peak "
         "resident memory. `ctrax train configs/ppo_pendulum_rltools.toml` (300k steps, one thread, no early stop): peak "
         "memory of ctrax's own process (its summary line, getrusage) and of the process tree (`/usr/bin/time`, which "
         "also counts gnuplot drawing the learning curve at the end), and the run's wall time. The embedding "
         "program is docs/embedding.md's custom environment (section 2) as the docs tests build it (with "
         "`--gc-sections`, not stripped).", "",
         f"- CPU: {cpu}", f"- load average before: {' '.join(before)}; after: {' '.join(after)}",
         f"- medians of {rounds} interleaved rounds", "",
         "| build | CUDA module built | CUDA libraries `ldd ctrax` lists | `ctrax --help` | `ctrax --help` peak | train: ctrax's peak | train: process tree's peak | train: wall time | embedding program |",
         "|---|---|---|---|---|---|---|---|---|"]
for b in builds:
    x = rows[b]
    module, libs = cuda_libraries(b)
    program = os.path.join(b, "tests/docs/docs_embedding_program_1")
    size = f"{os.path.getsize(program) / 1e6:.1f} MB" if os.path.exists(program) else "-"
    lines.append(f"| {labels[b]} (`{b}`) | {'yes' if module else 'no'} | {', '.join(libs) if libs else 'none'} | "
                 f"{max(0.0, med(x['help_ms']) - base_ms):.1f} ms | {med(x['help_kib']) / 1024:.1f} MiB | "
                 + (f"{med(x['train_own_mib']):.1f} MiB" if not math.isnan(med(x['train_own_mib'])) else "- (not reported)")
                 + f" | {med(x['train_tree_kib']) / 1024:.1f} MiB | "
                 f"{med(x['train_s']):.2f} s | {size} |")
open(out, "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
