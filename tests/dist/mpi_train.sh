#!/usr/bin/env bash
# `mpirun -np 2 ctrax train` against `ctrax train --virtual-ranks 2` (tools/CMakeLists.txt runs
# it when MPI is built): for PPO with separate networks on Pendulum (continuous, rollout passes,
# a Normalize in front) and on CartPole (discrete), and PPOJoint (slice batches, a Normalize in
# front) on CartPole (discrete) and Pendulum (continuous), the final checkpoints' tensors must be
# the same bytes; a 2-rank run resumed under mpirun must end where the
# uninterrupted one does; a different rank count must be refused; and a rank killed mid-run
# must end the whole job within seconds, its last checkpoint resuming.
# Usage: mpi_train.sh CTRAX MPIRUN
set -euo pipefail
ctrax=$1
mpirun=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpi() { "$mpirun" -np "$1" --oversubscribe "${@:2}"; }
fail() { echo "FAIL: $*" >&2; exit 1; }

pendulum=(--set task.n_envs=4 --set agent.n_interactions_per_epoch=256 --set agent.n_eval_episodes=3
          --set agent.n_confirm_episodes=3 --set value.minibatch_size=64 --set policy.model.normalize=true
          --set value.model.normalize=true --set total_env_steps=100000000 --set epochs=3)
joint=(--set task.n_envs=4 --set task.n_eval_envs=2 --set agent.n_interactions_per_epoch=128
       --set agent.n_eval_episodes=2 --set agent.n_confirm_episodes=2 --set joint.train_steps_per_epoch=4
       --set joint.model.normalize=true --set epochs=3)

# The newest checkpoint's tensor file of a run directory.
last_tensors() { ls "$1"/checkpoints/checkpoint-*.safetensors | sort -V | tail -1; }

check_same() {  # name, config, overrides...
  local name=$1 config=$2
  shift 2
  mpi 2 "$ctrax" train "$config" "$@" --threads 1 --output-dir "$work/$name-mpi" > "$work/$name-mpi.log"
  "$ctrax" train "$config" "$@" --virtual-ranks 2 --output-dir "$work/$name-virtual" > "$work/$name-virtual.log"
  cmp "$(last_tensors "$work/$name-mpi")" "$(last_tensors "$work/$name-virtual")" ||
    fail "$name: mpirun -np 2 and --virtual-ranks 2 ended with different checkpoints"
  grep -q "on 2 ranks" "$work/$name-mpi.log" || fail "$name: rank 0 did not report the 2 ranks"
  echo "ok: $name, mpirun -np 2 equals 2 virtual ranks bit for bit"
}
cartpole=(--set task.n_envs=4 --set task.n_eval_envs=2 --set agent.n_interactions_per_epoch=256
          --set agent.n_eval_episodes=2 --set agent.n_confirm_episodes=2 --set value.rollout_passes=2 --set epochs=3)
check_same pendulum configs/ppo_pendulum_rltools.toml "${pendulum[@]}"
check_same cartpole configs/ppo_cartpole.toml "${cartpole[@]}"
check_same joint configs/ppo_joint_cartpole.toml "${joint[@]}"
check_same joint-pendulum configs/ppo_joint_cartpole.toml "${joint[@]}" --set task.env=Pendulum-v1

# Resume: 2 epochs, then 1 more under mpirun, equals the 3 epochs in one go.
mpi 2 "$ctrax" train configs/ppo_pendulum_rltools.toml "${pendulum[@]}" --set epochs=2 --threads 1 \
  --output-dir "$work/resumed" > /dev/null
mpi 2 "$ctrax" resume "$work/resumed" --epochs 3 --threads 1 > "$work/resume.log"
cmp "$(last_tensors "$work/resumed")" "$(last_tensors "$work/pendulum-mpi")" ||
  fail "a resumed 2-rank run differs from the uninterrupted one"
echo "ok: a 2-rank run resumed under mpirun continues bit for bit"

# Another rank count is refused with the counts.
if "$ctrax" resume "$work/resumed" --epochs 4 > "$work/refused.log" 2>&1; then fail "1 rank resumed a 2-rank run"; fi
grep -q "is of a run on 2 rank(s)" "$work/refused.log" || fail "no clear message for the rank count: $(cat "$work/refused.log")"
echo "ok: resuming on another number of ranks is refused"
"$ctrax" eval "$work/resumed" --episodes 2 > "$work/eval.log" 2>&1 || fail "ctrax eval of a 2-rank run failed: $(tail -3 "$work/eval.log")"
echo "ok: ctrax eval reads a 2-rank run in one process"

# An error ends every rank with its message: on every rank (a share that does not split), and on
# rank 0 alone (a run directory it cannot create) while rank 1 waits in a collective.
if mpi 2 "$ctrax" train configs/ppo_pendulum_rltools.toml --set task.n_envs=3 --output-dir "$work/uneven" \
  > "$work/uneven.log" 2>&1; then fail "n_envs = 3 on 2 ranks was accepted"; fi
grep -q "error on rank 0 of 2: rank_task_options: n_envs 3 does not split evenly over 2 ranks" "$work/uneven.log" ||
  fail "no clear message for an uneven share: $(tail -5 "$work/uneven.log")"
[[ ! -e "$work/uneven" ]] || fail "a refused job created its run directory"
start=$(date +%s)
if timeout 60 "$mpirun" -np 2 --oversubscribe "$ctrax" train configs/ppo_pendulum_rltools.toml \
  --output-dir /proc/ctrax_cannot_write_here > "$work/rank0.log" 2>&1; then fail "an unwritable run directory was accepted"; fi
(( $(date +%s) - start <= 20 )) || fail "rank 0's error took more than 20 s to end the job"
grep -q "error on rank 0 of 2" "$work/rank0.log" || fail "no message from rank 0: $(tail -5 "$work/rank0.log")"
echo "ok: an error on every rank, or on rank 0 alone, ends the job with its message"

# A rank killed mid-run ends the job within seconds; rank 0's last checkpoint resumes.
mpi 2 "$ctrax" train configs/ppo_pendulum_rltools.toml "${pendulum[@]}" --set epochs=1000 --threads 1 \
  --output-dir "$work/killed" > "$work/killed.log" 2>&1 &
job=$!
for _ in $(seq 600); do
  [[ -f "$work/killed/metrics.jsonl" && $(wc -l < "$work/killed/metrics.jsonl") -ge 2 ]] && break
  sleep 0.1
done
victim=""
for pid in $(pgrep -f "killed" || true); do
  if tr '\0' '\n' < "/proc/$pid/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=1" &&
     tr '\0' ' ' < "/proc/$pid/cmdline" | grep -q "ctrax"; then victim=$pid; fi
done
[[ -n "$victim" ]] || { kill "$job" 2>/dev/null || true; fail "rank 1 of the job was not found"; }
kill -9 "$victim"
start=$(date +%s)
status=0
wait "$job" || status=$?
elapsed=$(( $(date +%s) - start ))
(( status != 0 )) || fail "the job exited 0 after rank 1 was killed"
(( elapsed <= 20 )) || fail "the job took ${elapsed} s to end after rank 1 was killed"
grep -qi "signal 9\|killed" "$work/killed.log" || fail "no message about the killed rank: $(tail -5 "$work/killed.log")"
echo "ok: killing rank 1 ended the job in ${elapsed} s (status $status)"
mpi 2 "$ctrax" resume "$work/killed" --epochs 4 --threads 1 > "$work/killed-resume.log" ||
  fail "the killed run did not resume: $(tail -5 "$work/killed-resume.log")"
echo "ok: the killed run resumed from rank 0's last checkpoint"
