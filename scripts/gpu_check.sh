#!/usr/bin/env bash
# The GPU session's one script: builds the CUDA backend on the GPU machine, runs every GPU test
# and the CUDA benchmarks, and leaves the logs and tables in $OUT (default gpu-out/).
#
# Usage (from the repository root, on a machine with an NVIDIA GPU and the CUDA toolkit):
#   OUT=/some/dir bash scripts/gpu_check.sh
# It prints a short summary last. Nothing here changes the GPU's settings.
# Settings (environment):
#   CTRAX_GPU_BUILD_DIR      the build folder (default build-gpu)
#   CTRAX_GPU_SKIP_BUILD=1   use that folder as it is: built elsewhere with the same toolkit, so a
#                            short GPU lease is not spent compiling, or because the GPU machine
#                            lacks the build's packages (doctest, toml++, ...). The build's
#                            absolute paths (RUNPATH, the CTest files) must resolve there, and
#                            the loader must find libtomlplusplus and CUDA's libcublas, libcudnn
#                            and libnccl of the same major version (LD_LIBRARY_PATH)
#   CTRAX_GPU_BENCH_TIMEOUT  seconds each benchmark may run (default 240)
#   CTRAX_GPU_PPO_EPOCHS     epochs per PPO row of bench/run_cuda_ppo.sh (default 6)
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
out=${OUT:-gpu-out}
mkdir -p "$out"
build=${CTRAX_GPU_BUILD_DIR:-build-gpu}
jobs=${CTRAX_JOBS:-$(nproc)}
summary=()

{ nvidia-smi || echo "nvidia-smi failed"; nvcc --version; } >"$out/machine.txt" 2>&1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1 | tee "$out/gpu.txt"

# The standalone GPU benchmarks (bench/bench_cuda_*.cpp), each writing a markdown table.
benches=()
for source in bench/bench_cuda_*.cpp; do benches+=("$(basename "$source" .cpp)"); done

# Release, tests, benchmarks and the ctrax command (for the PPO step GPU vs CPU), Hopper (sm_90)
# code; examples are not needed here.
start=$SECONDS
bench_timeout=${CTRAX_GPU_BENCH_TIMEOUT:-240}
if [[ ${CTRAX_GPU_SKIP_BUILD:-0} == 1 ]]; then
  missing=()
  for target in tests/ctrax_gpu_tests tools/ctrax "${benches[@]/#/bench/}"; do
    [[ -x "$build/$target" ]] || missing+=("$target")
  done
  if ((${#missing[@]})); then
    echo "CTRAX_GPU_SKIP_BUILD=1 but $build lacks: ${missing[*]}"
    exit 1
  fi
  summary+=("build: skipped (CTRAX_GPU_SKIP_BUILD=1, using $build)")
elif cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCTRAX_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
     -DCTRAX_BUILD_TESTS=ON -DCTRAX_BUILD_BENCHMARKS=ON -DCTRAX_BUILD_EXAMPLES=OFF -DCTRAX_BUILD_TOOLS=ON \
     >"$out/configure.log" 2>&1 &&
   cmake --build "$build" --parallel "$jobs" --target ctrax_gpu_tests "${benches[@]}" ctrax_command >"$out/build.log" 2>&1; then
  summary+=("build: ok ($((SECONDS - start)) s)")
else
  summary+=("build: FAILED ($((SECONDS - start)) s); see build.log")
  tail -40 "$out/build.log"
  printf '%s\n' "${summary[@]}"
  exit 1
fi

# Every GPU test (a skip here would mean the GPU was not usable: reported, not hidden).
start=$SECONDS
if command -v ctest >/dev/null 2>&1; then
  ctest --test-dir "$build" -L gpu --output-on-failure -j "$jobs" --timeout 120 >"$out/ctest_gpu.log" 2>&1
  rc=$?
  summary+=("ctest -L gpu: exit $rc ($((SECONDS - start)) s): $(grep -E 'tests passed|tests failed' "$out/ctest_gpu.log" | tail -1)")
else  # no ctest on the machine: the test binary itself, all cases in one process
  "$build/tests/ctrax_gpu_tests" >"$out/ctest_gpu.log" 2>&1
  rc=$?
  summary+=("ctrax_gpu_tests (no ctest here): exit $rc ($((SECONDS - start)) s): $(grep -E '^\[doctest\] test cases' "$out/ctest_gpu.log" | tail -1)")
fi
grep -E "Failed|Not Run|\*\*\*" "$out/ctest_gpu.log" | head -30

# The benchmarks (each checks its results before timing).
for bench in "${benches[@]}"; do
  start=$SECONDS
  timeout "$bench_timeout" "$build/bench/$bench" --out "$out/${bench#bench_}.md" >"$out/$bench.log" 2>&1
  summary+=("$bench: exit $? ($((SECONDS - start)) s)")
done

# A PPO training step on the GPU against the CPU (bench/run_cuda_ppo.sh), if present.
if [[ -f bench/run_cuda_ppo.sh ]]; then
  start=$SECONDS
  timeout "$bench_timeout" bash bench/run_cuda_ppo.sh "$build/tools/ctrax" "$out/cuda_ppo.md" "${CTRAX_GPU_PPO_EPOCHS:-6}" >"$out/cuda_ppo.log" 2>&1
  summary+=("run_cuda_ppo.sh: exit $? ($((SECONDS - start)) s)")
fi

echo
for table in "$out"/*.md; do [[ -f "$table" ]] && cat "$table"; done
printf '%s\n' "${summary[@]}"
