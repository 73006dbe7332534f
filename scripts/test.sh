#!/usr/bin/env bash
# Builds ctrax and runs every test, in three steps:
#   1. a Release build (library, tests, benchmarks, examples) in $CTRAX_BUILD_DIR (default build/)
#      and its whole ctest suite;
#   2. a build with AddressSanitizer + UndefinedBehaviorSanitizer (-DCTRAX_SANITIZE=ON, -O1, no CUDA;
#      tests only; clang when installed) in $CTRAX_SANITIZE_BUILD_DIR (default build-sanitize/)
#      and its ctest suite with leak detection on (the install tests, which check packaging, and
#      the suite's second run on OpenBLAS run in pass 1 only);
#   3. the libFuzzer target of the safetensors loader (clang), for CTRAX_FUZZ_SECONDS (30).
# Environment: CTRAX_BUILD_DIR, CTRAX_SANITIZE_BUILD_DIR, CTRAX_SANITIZE_CXX (the sanitizer pass's
# compiler), CTRAX_FUZZ_BUILD_DIR, CTRAX_CMAKE_ARGS (extra configure arguments for both builds,
# e.g. "-DCTRAX_CUDA=OFF"), CTRAX_SKIP_SANITIZE=1, CTRAX_SKIP_FUZZ=1, CTRAX_JOBS (parallel jobs,
# default nproc).
# Exits non-zero if any step fails; prints a summary at the end.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
build_dir=${CTRAX_BUILD_DIR:-build}
sanitize_dir=${CTRAX_SANITIZE_BUILD_DIR:-build-sanitize}
jobs=${CTRAX_JOBS:-$(nproc)}
read -r -a extra_args <<<"${CTRAX_CMAKE_ARGS:-}"

if ! command -v cmake >/dev/null 2>&1; then
  echo "test.sh: cmake not found; run scripts/setup.sh first" >&2
  exit 1
fi

summary=()
failed=0

# step NAME COMMAND...: runs the command, records pass/fail and duration; never exits.
step() {
  local name=$1
  shift
  local start=$SECONDS rc=0
  echo
  echo "==> $name"
  "$@" || rc=$?
  local took=$((SECONDS - start))
  if [[ $rc -eq 0 ]]; then
    summary+=("PASS  $name (${took}s)")
  else
    summary+=("FAIL  $name (${took}s, exit $rc)")
    failed=1
  fi
  return $rc
}

# 1. Release ---------------------------------------------------------------------------------
if step "configure Release ($build_dir)" cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release \
     -DCTRAX_BUILD_TESTS=ON "${extra_args[@]}" &&
   step "build Release" cmake --build "$build_dir" --parallel "$jobs"; then
  step "ctest Release" ctest --test-dir "$build_dir" --output-on-failure -j "$jobs" || true
fi

# 2. ASan + UBSan ----------------------------------------------------------------------------
if [[ "${CTRAX_SKIP_SANITIZE:-0}" != "1" ]]; then
  export ASAN_OPTIONS="detect_leaks=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
  # CUDA off: the sanitizers instrument host C++ only (the Release pass builds the CUDA backend
  # whenever nvcc is installed, and its GPU tests run or skip there).
  # Debug with -O1 -g1: assertions on, line tables for the sanitizers' stack traces, and a
  # build about 2.5x faster than -O2 -g (sanitizer instrumentation makes optimising costly).
  # Compiled with clang (scripts/setup.sh installs it for the fuzzer) when present: it builds this
  # pass about twice as fast as GCC (the instrumented test sources at -O0 several times faster),
  # and it is a second compiler's view of the code. CTRAX_SANITIZE_CXX overrides it.
  # MPI off: OpenMPI keeps allocations from MPI_Init to exit that LeakSanitizer reports as leaks
  # (its code, not ours). dist/'s own code (the collective, the virtual ranks, the Trainer's
  # averaging) still runs here in the doctest suite; the mpirun tests run in pass 1.
  sanitize_cxx=${CTRAX_SANITIZE_CXX:-$(command -v clang++ || command -v g++ || echo c++)}
  sanitize_cc=$([[ $sanitize_cxx == *clang++* ]] && echo "${sanitize_cxx%++}" || echo cc)
  if step "configure sanitize ($sanitize_dir, $(basename "$sanitize_cxx"))" \
       env CC="$sanitize_cc" CXX="$sanitize_cxx" cmake -S . -B "$sanitize_dir" \
       -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g1" -DCTRAX_SANITIZE=ON -DCTRAX_BUILD_TESTS=ON \
       -DCTRAX_BUILD_BENCHMARKS=OFF -DCTRAX_BUILD_EXAMPLES=OFF "${extra_args[@]}" -DCTRAX_CUDA=OFF -DCTRAX_MPI=OFF &&
     step "build sanitize" cmake --build "$sanitize_dir" --parallel "$jobs"; then
    # The install tests (label "install": installing, then building consumers with find_package,
    # pkg-config and add_subdirectory) check packaging, which the Release pass covers; under the
    # sanitizers they would only rebuild the library again, so this pass skips them to keep CI
    # short. So does the second run of the whole suite on OpenBLAS (label "openblas", about four
    # minutes instrumented): pass 1 runs it, and the OpenBLAS backend's own calls run here in
    # test_gemm.cpp and test_matmul.cpp, which select it explicitly. Everything else runs,
    # convergence and end-to-end tests included.
    step "ctest sanitize (ASan+UBSan, leaks on)" ctest --test-dir "$sanitize_dir" --output-on-failure -j "$jobs" \
      -LE '^(install|openblas)$' || true
  fi
else
  summary+=("SKIP  sanitize build (CTRAX_SKIP_SANITIZE=1)")
fi

# 3. Fuzzing ---------------------------------------------------------------------------------
# The safetensors loader (io/safetensors.h) reads files from anywhere; libFuzzer (clang) feeds
# it mutated files for a bounded time. A small standalone build: only the loader's sources.
fuzz_dir=${CTRAX_FUZZ_BUILD_DIR:-build-fuzz}
fuzz_seconds=${CTRAX_FUZZ_SECONDS:-30}
if [[ "${CTRAX_SKIP_FUZZ:-0}" != "1" ]]; then
  step "fuzz the safetensors loader (${fuzz_seconds}s, $fuzz_dir)" bash tests/fuzz/run.sh "$fuzz_dir" "$fuzz_seconds" || true
else
  summary+=("SKIP  fuzzing (CTRAX_SKIP_FUZZ=1)")
fi

echo
echo "==> summary"
printf '  %s\n' "${summary[@]}"
if [[ $failed -ne 0 ]]; then
  echo "test.sh: FAILED"
  exit 1
fi
echo "test.sh: all passed"
