#!/usr/bin/env bash
# A CPU run of the ctrax command with the native GEMM loads neither CUDA nor OpenBLAS, even from
# a build that has both: each is opened only when asked for (docs/cuda.md).
# Usage: lazy_backends.sh CTRAX CONFIG [--cuda-module PATH] [--openblas]
#   CTRAX   the ctrax command;  CONFIG  a config to train for two epochs;
#   --cuda-module PATH   the build made the CUDA module: `--device cuda` must load it;
#   --openblas           the build has the OpenBLAS backend: CTRAX_GEMM_BACKEND=openblas must load it.
# The last two are the controls that show the checks can see a library when one is loaded.
# Three views: ldd (what the program needs at start), LD_DEBUG=files (every library the loader
# maps, dlopen included, for the whole run) and /proc/PID/maps sampled while training runs.
set -euo pipefail
ctrax=$1 config=$2
shift 2
module="" openblas=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --cuda-module) module=$2; shift 2 ;;
    --openblas) openblas=1; shift ;;
    "") shift ;;  # an option ctest passes empty in builds without it
    *) echo "lazy_backends.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# MPI too: only a run under mpirun opens the MPI module (dist/mpi_communicator.h).
lazy='libctrax_cuda|libcudart|libcublas|libcudnn|libcuda\.so|libnvrtc|libopenblas|libctrax_mpi|libmpi'
fail() { echo "FAIL: $*" >&2; exit 1; }
unset CTRAX_GEMM_BACKEND CTRAX_CUDA_MODULE CTRAX_MPI_MODULE

if ldd "$ctrax" | grep -E "$lazy"; then fail "ldd: $ctrax needs CUDA, OpenBLAS or MPI at start"; fi
echo "ldd: neither CUDA, OpenBLAS nor MPI is needed by $ctrax"

LD_DEBUG=files "$ctrax" --help >/dev/null 2>"$work/help.log"
grep -q "file=" "$work/help.log" || fail "LD_DEBUG printed nothing (cannot check what was loaded)"
if grep -E "file=[^ ]*($lazy)" "$work/help.log"; then fail "ctrax --help loaded CUDA, OpenBLAS or MPI"; fi
echo "ctrax --help: neither CUDA, OpenBLAS nor MPI loaded"

LD_DEBUG=files "$ctrax" train "$config" --epochs 2 --output-dir "$work/run" >"$work/train.out" 2>"$work/train.log" &
pid=$!
samples=0
: >"$work/maps"
while kill -0 "$pid" 2>/dev/null; do
  cat "/proc/$pid/maps" >>"$work/maps" 2>/dev/null && samples=$((samples + 1))
  sleep 0.02
done
wait "$pid" || { tail -20 "$work/train.out" "$work/train.log"; fail "ctrax train failed"; }
[[ $samples -gt 0 ]] || fail "no /proc/PID/maps sample was taken"
if grep -E "$lazy" "$work/maps" | head -3; then fail "/proc/PID/maps of ctrax train shows CUDA, OpenBLAS or MPI"; fi
if grep -E "file=[^ ]*($lazy)" "$work/train.log"; then fail "ctrax train loaded CUDA or OpenBLAS"; fi
echo "ctrax train (2 epochs): neither CUDA nor OpenBLAS loaded ($samples maps samples)"

if [[ -n "$module" ]]; then
  # Asking for the GPU loads the module (and CUDA behind it); without a GPU it then says why.
  set +e
  LD_DEBUG=files "$ctrax" train "$config" --epochs 1 --device cuda --output-dir "$work/gpu" >"$work/gpu.out" 2>"$work/gpu.log"
  set -e
  grep -qE "file=[^ ]*libctrax_cuda" "$work/gpu.log" || fail "--device cuda did not load the CUDA module"
  echo "ctrax train --device cuda: loaded the CUDA module"
fi
if [[ $openblas -eq 1 ]]; then
  CTRAX_GEMM_BACKEND=openblas LD_DEBUG=files "$ctrax" train "$config" --epochs 1 --output-dir "$work/blas" \
    >"$work/blas.out" 2>"$work/blas.log" || { tail -5 "$work/blas.out"; fail "ctrax train on OpenBLAS failed"; }
  grep -qE "file=[^ ]*libopenblas" "$work/blas.log" || fail "CTRAX_GEMM_BACKEND=openblas did not load OpenBLAS"
  echo "ctrax train with CTRAX_GEMM_BACKEND=openblas: loaded OpenBLAS"
fi
echo "PASS"
