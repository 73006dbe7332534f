#!/usr/bin/env bash
# A PPO training epoch on the GPU against the CPU: the shipped PPO CartPole configuration
# (configs/ppo_cartpole.toml) trained for a few epochs with `ctrax train --device cpu` and
# `--device cuda`, at the shipped network width (64) and at wider ones, where the GPU's
# arithmetic starts to pay for its per-launch and transfer costs. Writes a markdown table of the
# median seconds per epoch (collection: environments on the CPU, the policy on the device;
# training: every minibatch's forward, backward and Adam update on the device).
#
# Usage: bench/run_cuda_ppo.sh [path/to/ctrax] [out.md] [epochs]
# Builds nothing. Needs a GPU for the cuda rows (without one they say why).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
binary="${1:-$root/build/tools/ctrax}"
out="${2:-$here/results/cuda_ppo.md}"
epochs="${3:-6}"
if [[ ! -x "$binary" ]]; then
  echo "run_cuda_ppo.sh: no ctrax binary at $binary (build the ctrax_command target first)" >&2
  exit 1
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# The shipped configuration without its target (a run that solved CartPole would stop early).
config="$work/ppo_cartpole.toml"
grep -v '^target_eval_return' "$root/configs/ppo_cartpole.toml" >"$config"

# median_of COLUMN CSV: the median of a metrics.csv column over the epochs after the first
# (the first pays one-time costs: allocator warm-up, CUDA context, cuBLAS handles).
median_of() {
  awk -F, -v name="$1" 'NR == 1 { for (i = 1; i <= NF; ++i) if ($i == name) col = i; next }
                        NR > 2 && col { print $col }' "$2" | sort -g |
    awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else printf "%.3f", (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}

gpu="no GPU"
if command -v nvidia-smi >/dev/null 2>&1; then
  gpu="$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
fi
cpu="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
{
  echo "# PPO on CartPole-v1: seconds per epoch, GPU against CPU"
  echo
  echo "- GPU: ${gpu:-unknown}; CPU: $cpu ($(nproc) logical CPUs, ctrax threads: ${CTRAX_NUM_THREADS:-all})"
  echo "- configs/ppo_cartpole.toml without its target (256 environment steps per epoch from 8"
  echo "  environments, 20 rollout passes in minibatches of the given size), $epochs epochs, seed 0;"
  echo "  median over epochs 2..$epochs."
  echo "- collect: stepping the environments on the CPU with the policy on the device (one transfer of"
  echo "  the observations in and one of the outputs back per step); train: forward, backward and Adam"
  echo "  updates of both networks on the device."
  echo
  echo "| hidden widths | batch size | device | collect s | train s | epoch s |"
  echo "|---|---:|---|---:|---:|---:|"
} >"$out"

for width in 64 256 1024; do
  for batch in 64 256; do
    for device in cpu cuda; do
      dir="$work/w${width}_b${batch}_$device"
      if "$binary" train "$config" --device "$device" --epochs "$epochs" --seed 0 \
           --output-dir "$dir" --set "policy.model.widths=[$width, $width]" \
           --set "value.model.widths=[$width, $width]" --set "value.minibatch_size=$batch" \
           >"$dir.log" 2>&1; then
        csv="$dir/metrics.csv"
        echo "| $width, $width | $batch | $device | $(median_of time/collect_seconds "$csv") |" \
             "$(median_of time/train_seconds "$csv") | $(median_of time/epoch_seconds "$csv") |" >>"$out"
      else
        reason="$(tail -1 "$dir.log" | tr '|' '/')"
        echo "| $width, $width | $batch | $device | failed: $reason | | |" >>"$out"
      fi
      echo "run_cuda_ppo.sh: widths $width, batch $batch, $device done" >&2
    done
  done
done
echo "wrote $out"
