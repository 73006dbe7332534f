#!/usr/bin/env bash
# A CPU run of the ctrax command loads no CUDA library, even from a build that compiled the CUDA
# module (issue: CUDA as a backend that CPU programs never pay for).
# Usage: no_cuda_loaded.sh CTRAX CONFIG [MODULE]
#   CTRAX   the ctrax command;  CONFIG  a config to train for one epoch;
#   MODULE  the build's libctrax_cuda.so, when it built one: then `--device cuda` must load it
#           (the check below can see a CUDA library when one is there).
# Three views: ldd (what the program needs at start), LD_DEBUG=files (every library the loader
# maps, dlopen included, for the whole run) and /proc/PID/maps sampled while training runs.
set -euo pipefail
ctrax=$1 config=$2 module=${3:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cuda='libctrax_cuda|libcudart|libcublas|libcudnn|libcuda\.so|libnvrtc'
fail() { echo "FAIL: $*" >&2; exit 1; }

if ldd "$ctrax" | grep -E "$cuda"; then fail "ldd: $ctrax needs CUDA libraries"; fi
echo "ldd: no CUDA library needed by $ctrax"

LD_DEBUG=files "$ctrax" --help >/dev/null 2>"$work/help.log"
grep -q "file=" "$work/help.log" || fail "LD_DEBUG printed nothing (cannot check what was loaded)"
if grep -E "file=[^ ]*($cuda)" "$work/help.log"; then fail "ctrax --help loaded CUDA libraries"; fi
echo "ctrax --help: no CUDA library loaded"

LD_DEBUG=files "$ctrax" train "$config" --epochs 2 --output-dir "$work/run" >"$work/train.out" 2>"$work/train.log" &
pid=$!
samples=0
: >"$work/maps"
while kill -0 "$pid" 2>/dev/null; do
  cat "/proc/$pid/maps" >>"$work/maps" 2>/dev/null && samples=$((samples + 1))
  sleep 0.02
done
wait "$pid" || { cat "$work/train.out" "$work/train.log" | tail -20; fail "ctrax train failed"; }
[[ $samples -gt 0 ]] || fail "no /proc/PID/maps sample was taken"
if grep -E "$cuda" "$work/maps" | head -3; then fail "/proc/PID/maps of ctrax train shows CUDA libraries"; fi
if grep -E "file=[^ ]*($cuda)" "$work/train.log"; then fail "ctrax train loaded CUDA libraries"; fi
echo "ctrax train (2 epochs): no CUDA library loaded ($samples maps samples)"

if [[ -n "$module" ]]; then
  # The control: asking for the GPU loads the module (and CUDA behind it), and says why it
  # cannot train where there is no GPU.
  set +e
  LD_DEBUG=files "$ctrax" train "$config" --epochs 1 --device cuda --output-dir "$work/gpu" >"$work/gpu.out" 2>"$work/gpu.log"
  set -e
  grep -qE "file=[^ ]*libctrax_cuda" "$work/gpu.log" || fail "--device cuda did not load the CUDA module"
  echo "ctrax train --device cuda: loaded the CUDA module"
fi
echo "PASS"
