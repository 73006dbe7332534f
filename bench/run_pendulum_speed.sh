#!/usr/bin/env bash
# PPO on Pendulum-v1 in RLtools' configuration (configs/ppo_pendulum_rltools.toml), the whole
# 300k-step run on one thread: ctrax compiled, ctrax eager, and (optionally) a program you built
# yourself, e.g. RLtools' Pendulum PPO example, all interleaved over ROUNDS rounds. Writes
# bench/results/pendulum_speed.md with the medians of wall time and peak memory, and a paired
# comparison of the like-for-like row with the other program (the two run back to back each
# round, in alternating order), round by round. Builds nothing;
# the other program is run as given, with OpenBLAS held to one thread and its kernel reported;
# its "Final return: X" line is its result. OTHER_LABEL names it in the table; OTHER_CORETYPES
# (default "auto") lists the OpenBLAS core types to run it with, e.g. "auto SkylakeX". Peak memory is
# measured twice for ctrax: the whole process tree (/usr/bin/time, which counts gnuplot drawing
# the learning curve at the end) and ctrax's own process (its summary line, getrusage).
# RESULTS names the table's file (default bench/results/pendulum_speed.md): the figures differ
# between machines as much as between programs (RLtools' OpenBLAS GEMM is far faster on an
# AVX-512 core than on an AVX2 one), so each machine kind keeps a table of its own.
# Usage: [OTHER_LABEL=...] [RESULTS=...] bench/run_pendulum_speed.sh [path/to/ctrax] [rounds] [other program...]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
ctrax="${1:-build/tools/ctrax}"
rounds="${2:-5}"
shift $(( $# >= 2 ? 2 : $# ))
other=("$@")
config="$here/../configs/ppo_pendulum_rltools.toml"
# The other program runs once per OpenBLAS core type listed (auto: OpenBLAS's own choice, which
# on a CPU it cannot identify is its slow generic Prescott kernel), each a row of its own.
other_cores="${OTHER_CORETYPES:-auto}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
# The single-core GEMM peak the run's GEMM throughput is compared with: bench_gemm's native
# kernels on one thread at 256^3 and 512^3 (the better median), beside the ctrax binary's build.
bench_gemm="${BENCH_GEMM:-$(dirname "$ctrax")/../bench/bench_gemm}"
gemm_peak() {
  [[ -x "$bench_gemm" ]] || return 0
  "$bench_gemm" --benchmark_filter='^sgemm/native/t1/(256x256x256|512x512x512)/' --benchmark_repetitions=3 \
    --benchmark_report_aggregates_only=true --benchmark_format=json 2> /dev/null |
    python3 -c "import json, sys; print(max(b['GFLOP/s'] for b in json.load(sys.stdin)['benchmarks'] if b.get('aggregate_name') == 'median'))" \
    >> "$work/gemm_peak" || true
}
gemm_peak
run_ctrax() {  # name, extra --set flags... (with no early stop either way)
  local name="$1"
  shift
  local dir="$work/run_${name}_$r"
  local start
  start=$(date +%s%N)
  /usr/bin/time -f "%e %M" -o "$work/time_${name}_$r" "$ctrax" train "$config" --threads 1 --output-dir "$dir" \
    "$@" > "$work/out_${name}_$r" 2>&1
  echo $(( ($(date +%s%N) - start) / 1000 )) > "$work/wall_${name}_$r"
  grep -o 'peak memory [0-9.]*' "$work/out_${name}_$r" | awk '{print $3}' > "$work/own_${name}_$r" || true
  grep -o 'GEMM [0-9.]* GFLOP' "$work/out_${name}_$r" | awk '{print $2}' > "$work/gflop_${name}_$r" || true
  grep -o '"confirm/return_mean": [-0-9.e]*' "$dir/metrics.jsonl" | tail -1 | awk '{print $2}' > "$work/result_${name}_$r"
}
run_other() {  # the other program, once per core type listed (reversed when $1 is "reversed")
  ((${#other[@]})) || return 0
  local cores=($other_cores) core
  if [[ "${1:-}" == reversed ]]; then
    local i reversed=()
    for ((i = ${#cores[@]} - 1; i >= 0; --i)); do reversed+=("${cores[i]}"); done
    cores=("${reversed[@]}")
  fi
  for core in "${cores[@]}"; do
    local name="other_$core" start
    local coretype=()
    [[ "$core" != auto ]] && coretype=(OPENBLAS_CORETYPE="$core")
    start=$(date +%s%N)
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "${coretype[@]}" OPENBLAS_NUM_THREADS=1 OPENBLAS_VERBOSE=2 \
      /usr/bin/time -f "%e %M" -o "$work/time_${name}_$r" "${other[@]}" > "$work/out_${name}_$r" 2>&1
    echo $(( ($(date +%s%N) - start) / 1000 )) > "$work/wall_${name}_$r"
    grep -o 'Core: .*' "$work/out_${name}_$r" | head -1 | sed 's/Core: //' > "$work/core_${name}" || true
    grep -o 'Final return: [-0-9.]*' "$work/out_${name}_$r" | awk '{print $3}' > "$work/result_${name}_$r" || true
  done
}
for ((r = 0; r < rounds; ++r)); do
  # The full rows evaluate 4 episodes every epoch, as the configuration does, with a target no
  # evaluation reaches (no early stop).
  full=(--set target_eval_return=1e9)
  # "bare": RLtools' outputs and evaluation: no per-epoch evaluation, checkpoint or plot, and the
  # final policy confirmed on 1000 episodes played at once, as RLtools plays them.
  bare=(--unset target_eval_return --set agent.n_eval_episodes=0 --set agent.checkpoint_every=1000000
        --set agent.n_confirm_episodes=1000 --set agent.n_confirm_envs=1000 --no-plot)
  # The like-for-like pair runs back to back, first one then the other in alternate rounds, so
  # that each round compares the two under the same conditions (the paired line below the table;
  # with several core types the first one listed is the one next to ctrax).
  if ((r % 2 == 0)); then
    run_ctrax compiled_bare "${bare[@]}"
    run_other
  else
    run_other reversed
    run_ctrax compiled_bare "${bare[@]}"
  fi
  run_ctrax compiled "${full[@]}"
  # RLtools' -Ofast build flushes subnormal floats (it links crtfastmath: `nm` shows
  # set_fast_math); ctrax computes them exactly unless flush_denormals is set.
  run_ctrax compiled_bare_flushed "${bare[@]}" --set flush_denormals=true
  # RLtools' observation normalisation: both networks, with the statistics of the first epoch's
  # observations (its warm-up collection), then fixed.
  run_ctrax norm_bare --set policy.model.normalize=true --set value.model.normalize=true \
    --set policy.model.normalize_sample_limit=4096 --set value.model.normalize_sample_limit=4096 "${bare[@]}"
  run_ctrax eager "${full[@]}" --set agent.compile=false
  # The configuration's std and gamma until 2026-12-05 (late): the std an output of the policy
  # per state, softplus(raw + 1), and gamma 0.95.
  run_ctrax per_state_std "${full[@]}" --set task.gamma=0.95 --set 'policy.distribution.learn_std="separate"' \
    --set policy.distribution.std=1.0
done
gemm_peak
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$work" "$rounds" "${RESULTS:-$here/results/pendulum_speed.md}" "$load_before" "$load_after" "${OTHER_LABEL:-${other[*]:-}}" "$other_cores" <<'PY'
import glob, os, statistics, sys
work, rounds, out, before, after, other = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6]
other_cores = sys.argv[7].split()
peaks = [float(x) for x in open(f"{work}/gemm_peak").read().split()] if os.path.exists(f"{work}/gemm_peak") else []
peak = max(peaks) if peaks else None
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "unknown CPU")
# The model name alone ("AMD EPYC" under some hypervisors) does not tell Zen 3 from Zen 4: say
# what the core can run and its L2.
flags = next((l.split(":", 1)[1].split() for l in open("/proc/cpuinfo") if l.startswith("flags")), [])
isa = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "no AVX2"
try:
    l2 = open("/sys/devices/system/cpu/cpu0/cache/index2/size").read().strip()
except OSError:
    l2 = "unknown"
cpu = f"{cpu} ({isa}, L2 {l2} per core)"
def read(kind, name):
    values = []
    for r in range(rounds):
        p = f"{work}/{kind}_{name}_{r}"
        if os.path.exists(p) and open(p).read().strip():
            values.append([float(x) for x in open(p).read().split()])
    return values
def read_one(kind, name, r):
    p = f"{work}/{kind}_{name}_{r}"
    return float(open(p).read().split()[0]) if os.path.exists(p) and open(p).read().strip() else None
def core_of(name):
    p = f"{work}/core_{name}"
    return open(p).read().strip() if os.path.exists(p) and open(p).read().strip() else "not reported"
names = [("compiled", "ctrax, compiled steps (default)"),
         ("compiled_bare", "ctrax, compiled, RLtools' outputs and final evaluation (\"bare\", below)"),
         ("compiled_bare_flushed", "ctrax, compiled, bare, subnormals flushed (flush_denormals, as RLtools' -Ofast build runs)"),
         ("norm_bare", "ctrax, compiled, observations normalised as RLtools does (both networks, the first 4096 observations' statistics), bare"),
         ("eager", "ctrax, eager (agent.compile = false)"),
         ("per_state_std", "ctrax, compiled, std per state and gamma 0.95 (the configuration's until 2026-12-05, late)")]
if other:
    for c in other_cores:
        how = "OpenBLAS picks its kernel" if c == "auto" else f"OPENBLAS_CORETYPE={c}"
        names.append((f"other_{c}", f"{other}; {how}: {core_of('other_' + c)} kernel"))
lines = ["# PPO on Pendulum-v1, RLtools' configuration: the whole run", "",
         "Written by `bench/run_pendulum_speed.sh`: configs/ppo_pendulum_rltools.toml, 300k environment steps (74 epochs",
         "of 4 x 1024), one thread, no early stop (the final epoch is confirmed on 100 greedy episodes). Wall time of",
         "the whole process (the clock around it, to the millisecond; median, and the range over the rounds), including",
         "ctrax's checkpoints, its final confirmation and its",
         "learning-curve plot; peak resident memory of the process tree (`/usr/bin/time`: gnuplot, which draws the",
         "learning curve in a process of its own, counts) and of ctrax's own process (getrusage, in its summary line).", "",
         f"- CPU: {cpu}; ctrax threads: 1", f"- load average before: {before}; after: {after}",
         f"- medians of {rounds} interleaved rounds; the other program's OpenBLAS kernel (OPENBLAS_VERBOSE=2) is in its row", "",
         (f"- single-core GEMM peak: {peak:.1f} GFLOP/s (bench_gemm, native, one thread, the best of 256^3 and 512^3, medians; "
          f"run before and after the rounds: {', '.join(f'{p:.1f}' for p in peaks)})" if peaks else "- single-core GEMM peak: not measured (no bench_gemm)"),
         "- GEMM throughput: the run's GEMM work (`ctrax train` counts 2 m n k per call) over its wall time, and its share of that peak", "",
         "| run | wall time (range) | peak memory, process tree | peak memory, ctrax's own process | GEMM throughput | final 100-episode return (median) |",
         "|---|---|---|---|---|---|"]
for name, label in names:
    t = read("time", name)
    res = [v[0] for v in read("result", name)]
    if not t:
        continue
    own = [v[0] for v in read("own", name)]
    gflop = [v[0] for v in read("gflop", name)]
    # Wall time in microseconds from the clock around the command (/usr/bin/time's %e has
    # 10 ms steps, too coarse to tell programs 2% apart).
    walls = [v[0] / 1e6 for v in read("wall", name)]
    wall = statistics.median(walls)
    rate = statistics.median(g / w for g, w in zip(gflop, walls)) if gflop and len(gflop) == len(walls) else None
    throughput = (f"{rate:.1f} GFLOP/s" + (f" ({100 * rate / peak:.0f}% of peak)" if peaks else "")) if rate else "-"
    lines.append(f"| {label} | {wall:.3f} s ({min(walls):.3f}-{max(walls):.3f}) | {statistics.median(x[1] for x in t) / 1024:.0f} MiB | "
                 + (f"{statistics.median(own):.1f} MiB" if own else "-") + f" | {throughput} | "
                 + (f"{statistics.median(res):.1f}" if res else "-") + " |")
if other and other_cores:
    # Round by round: the like-for-like row against the other program (its first core type),
    # which ran back to back with it.
    mine = {r: read_one("wall", "compiled_bare", r) for r in range(rounds)}
    theirs = {r: read_one("wall", f"other_{other_cores[0]}", r) for r in range(rounds)}
    pairs = [(mine[r], theirs[r]) for r in range(rounds) if mine[r] and theirs[r]]
    if pairs:
        faster = sum(1 for m, t in pairs if m < t)
        ratios = sorted(m / t for m, t in pairs)
        lines += ["", f"Paired, round by round (\"bare\" and the other program run back to back, in alternating order): "
                  f"ctrax's wall time is {statistics.median(ratios):.3f} of the other's (median ratio; range "
                  f"{ratios[0]:.3f}-{ratios[-1]:.3f}), and ctrax was faster in {faster} of {len(pairs)} rounds."]
lines += ["", "Where the two configurations differ (RLtools' example in src/rl/environments/pendulum/ppo/cpu/config.h and",
          "the defaults of its PPO loop, rl_tools/rl/algorithms/ppo/loop/core/config.h, against",
          "configs/ppo_pendulum_rltools.toml): RLtools normalises observations (and scales them, ScaleObservations)",
          "where the configuration does not; the normalised row adds it: both networks' inputs, with fixed",
          "statistics of the first 4096 observations (RLtools takes them from a warm-up epoch it does not train",
          "on; ctrax from its first epoch, which it trains on, the statistics growing through it; normalize =",
          "true and normalize_sample_limit = 4096 in [policy.model] and [value.model]). ctrax scales the value",
          "targets by 1 - gamma and clips",
          "the policy's gradients to a global norm of 1 (RLtools does not clip them). Both: gamma 0.9, a learned",
          "state-independent log std starting at std 2.0 (ctrax: learn_std = \"state_independent\", std =",
          "exp(raw + log 2) with raw a learned vector starting at 0), ReLU hidden layers (RLtools' PPO loop's",
          "default activation), 4 x 1024 steps per epoch, 2 passes in minibatches of 256, GAE lambda 0.95, 64 x 64",
          "networks, Adam 1e-3, 300k steps. So per step ctrax does RLtools' arithmetic plus the gradients' norm.",
          "Until 2026-12-05 (late) the configuration differed in two more: gamma 0.95, and the std an output of",
          "the policy per state (a second output column, std = softplus(raw + 1.0), about 1.3 at the start;",
          "learn_std = \"separate\", as Trax); that configuration is the \"std per state\" row.",
          "Reliability (measured 2026-12-05 on Zen 4 with the build of this table: whole 300k-step runs, no early",
          "stop, the final policy's 100-episode confirmation reaching -200 or better), the configuration against",
          "the one before it (std per state, gamma 0.95): seeds 0-23 and 100-131, 55 of 56 (miss -229.7) against 56; seeds",
          "200-263, 64 of 64 against 63 (miss -238); seeds 300-363, 63 of 64 (miss -201.5) against 61 (misses",
          "-200.4 to -269); seeds 500-563, which no earlier choice used, 64 of 64 against 64. In all 246 of 248",
          "against 244. On seeds 200-263 and 300-363, each change alone: the state-independent std with gamma 0.95,",
          "126 of 128; the std per state with gamma 0.9, 125 of 128; both, 127. Differences of a few runs in 128",
          "are within what other seed sets give, so the switch is for likeness to RLtools, and it costs no",
          "reliability. The final returns are lower with gamma 0.9 (median -175 against -157 on seeds 500-563;",
          "RLtools' own run ends near -175): a shorter horizon solves as reliably but balances less tightly. With",
          "observations normalised as in the normalised row it solved 64 of 64 on seeds 0-31 and 100-131 and 127",
          "of 128 on seeds 200-263 and 300-363 (miss -201.0). With the",
          "configuration's early stop (a confirmation at -200): seeds 2000-2127, 128 of 128 in a median of 92k",
          "steps (0.22 s of training), as the configuration before it (128 of 128 in 94k).",
          "The gradient clip and its value were chosen with the configuration before (and the build before float32",
          "log became a vectorised kernel, 2026-12-05 evening). Then, on seeds 0-23 and 100-131, the clip took",
          "ReLU from 45 to 54 of 56 solved, tanh from 45 to 52 and normalised ReLU from 51 to 64 (of 64, seeds",
          "0-31 and 100-131): without it a late minibatch whose probability ratios explode (approximate KL in the",
          "thousands, once the std is small) could collapse the policy (misses down to -758). Its value (1; 0.5",
          "and 0.2 did worse: 60 and 61 ReLU runs of 64) was chosen on seeds 200-263 (ReLU 50 -> 64 of 64, tanh",
          "57 -> 58) and checked on seeds 300-363 (ReLU 59 -> 63, tanh 58 -> 61).",
          "Around the training: the full rows evaluate 4 greedy episodes every",
          "epoch, confirm the last epoch on 100, write a checkpoint every epoch (on a thread of their own while the",
          "next epoch runs, as `ctrax train` does) and draw the learning curve with gnuplot (0.05-0.15 s of the",
          "run). RLtools' BENCHMARK build evaluates only at the end, on 1000 episodes played at once (one policy",
          "call of 1000 rows per step), and writes nothing. The \"bare\" rows do what it does: no routine",
          "evaluation, the final checkpoint and the metrics only, no plot, the final policy confirmed on 1000",
          "episodes in 1000 copies (`--unset target_eval_return --set agent.n_eval_episodes=0 --set",
          "agent.checkpoint_every=1000000 --set agent.n_confirm_episodes=1000 --set agent.n_confirm_envs=1000",
          "--no-plot`). Routine evaluations draw seeds of their own and change nothing in training (docs/rl.md,",
          "Reproducibility), so a bare row trains exactly as the full row of the same networks does.",
          "\"ctrax, compiled, bare\" is the like-for-like row: the same networks and std, the",
          "same work per epoch and the same outputs, without RLtools' observation normalisation (the configuration",
          "has none; the normalised row adds it). RLtools' -Ofast build also flushes subnormal floats to zero (it",
          "links GCC's crtfastmath: `nm` shows set_fast_math); the row with flush_denormals = true computes that way",
          "too, and here flushing changes no result (the final returns agree to the last digit), only the time the",
          "subnormals' microcode assists took. The normalised row adds the observation normalisation RLtools uses",
          "(both networks, fixed after the first 4096 observations); once the statistics are full, ctrax's",
          "collection stops copying them back and skips the value network's update (Layer::may_change_state)."]
open(out, "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
