#!/usr/bin/env bash
# Installs the Debian 12 (bookworm) packages ctrax needs to build, test, benchmark and run.
# Idempotent: when everything is already installed it changes nothing and does not call apt.
# Runs as root, or as a user with sudo. CUDA is optional and is not installed here: the build
# uses it when nvcc is found at configure time.
set -euo pipefail

packages=(
  build-essential     # g++, make
  cmake               # 3.25 in bookworm
  pkg-config
  git
  libopenblas-dev     # OpenBLAS GEMM backend (CTRAX_OPENBLAS)
  doctest-dev         # tests
  libbenchmark-dev    # benchmarks (Google Benchmark)
  nlohmann-json3-dev  # JSON (configs, logs)
  libxxhash-dev       # XXH3 checksums of checkpoint files (header-only use)
  libcli11-dev        # command-line parsing (tools)
  libtomlplusplus-dev # TOML configs
  gnuplot-nox         # plots of benchmark and training results
  clang               # the libFuzzer target of the checkpoint loader (tests/fuzz/)
  libclang-rt-14-dev  # libFuzzer's runtime for bookworm's clang 14
  libopenmpi-dev      # MPI for data-parallel training across processes (CTRAX_MPI, dist/)
  openmpi-bin         # mpirun, for the MPI tests
)

missing=()
for pkg in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
  if [[ "$status" != "installed" ]]; then
    missing+=("$pkg")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "setup: all ${#packages[@]} packages already installed"
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "setup: apt-get not found. This script supports Debian 12 (bookworm); install these" >&2
  echo "       packages (or their equivalents) by hand: ${missing[*]}" >&2
  exit 1
fi

if [[ $(id -u) -eq 0 ]]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1; then
  as_root=(sudo)
else
  echo "setup: not root and sudo is not installed; run as root or install sudo. Missing: ${missing[*]}" >&2
  exit 1
fi

echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
echo "setup: done"
