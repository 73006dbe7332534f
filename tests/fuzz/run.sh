#!/usr/bin/env bash
# Builds the libFuzzer target for the safetensors header parser with clang and runs it for a
# bounded time on a copy of the seed corpus (tests/fuzz/corpus/, never modified).
#
#   tests/fuzz/run.sh BUILD_DIR [SECONDS]       # SECONDS defaults to 30
#
# Exits non-zero when the build fails or the fuzzer finds a crash, a sanitizer error, a leak,
# an input that runs over 10 s or one that needs more than the memory limits below (a hostile
# header must never make the parser allocate much). Reproducers land in BUILD_DIR/artifacts/.
# Environment: CTRAX_FUZZ_CXX (default clang++), CTRAX_JOBS (build jobs, default nproc).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [[ $# -lt 1 || $# -gt 2 ]]; then
  echo "usage: $0 BUILD_DIR [SECONDS]" >&2
  exit 2
fi
build_dir=$1
seconds=${2:-30}
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || [[ "$seconds" -lt 1 ]]; then
  echo "run.sh: SECONDS must be a positive integer, got '$seconds'" >&2
  exit 2
fi
cxx=${CTRAX_FUZZ_CXX:-clang++}
if ! command -v "$cxx" >/dev/null 2>&1; then
  echo "run.sh: $cxx not found; the fuzzer needs clang and libFuzzer (Debian: clang libclang-rt-14-dev)" >&2
  exit 1
fi

cmake -S "$here" -B "$build_dir" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build "$build_dir" --parallel "${CTRAX_JOBS:-$(nproc)}"

build_dir=$(cd "$build_dir" && pwd)
rm -rf "$build_dir/corpus" "$build_dir/artifacts"
cp -r "$here/corpus" "$build_dir/corpus"
mkdir -p "$build_dir/artifacts"

echo "run.sh: fuzzing parse_safetensors_header for ${seconds}s"
"$build_dir/fuzz_safetensors" "$build_dir/corpus" \
  -max_total_time="$seconds" -rss_limit_mb=1024 -malloc_limit_mb=512 -timeout=10 \
  -dict="$here/safetensors.dict" -artifact_prefix="$build_dir/artifacts/" -print_final_stats=1
