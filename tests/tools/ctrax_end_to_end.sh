#!/usr/bin/env bash
# The `ctrax` command end to end, through the real executable (ctest: tool_ctrax_end_to_end).
#   ctrax_end_to_end.sh PATH/TO/ctrax PATH/TO/configs
# Trains a tiny run, interrupts one with SIGINT and resumes it, evaluates and renders, plots,
# lists and benchmarks; then every bad input, checking the message on stderr, exit status 2,
# that nothing was created, and that an existing run directory is left byte for byte as it was.
set -uo pipefail
ctrax=$(realpath "$1")
configs=$(realpath "$2")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# A few seconds of PPO on CartPole: small collections and few training steps.
tiny=(--set agent.n_interactions_per_epoch=256 --set agent.n_eval_episodes=2 --set policy.train_steps_per_epoch=2
      --set value.train_steps_per_epoch=2)

# expect_ok NAME COMMAND...: status 0; stdout in $work/NAME.out.
expect_ok() {
  local name=$1; shift
  "$@" >"$name.out" 2>"$name.err"
  local rc=$?
  [[ $rc -eq 0 ]] || fail "$name: exit $rc, expected 0; stderr: $(cat "$name.err")"
}

# expect_bad NAME REGEX COMMAND...: status 2, one line on stderr matching REGEX.
expect_bad() {
  local name=$1 regex=$2; shift 2
  "$@" >"$name.out" 2>"$name.err"
  local rc=$?
  [[ $rc -eq 2 ]] || fail "$name: exit $rc, expected 2; stderr: $(cat "$name.err")"
  grep -Eq -- "$regex" "$name.err" || fail "$name: stderr does not match /$regex/: $(cat "$name.err")"
}

# A directory listing with checksums: "untouched" means the same before and after.
fingerprint() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum); }

signature_is() {  # FILE HEX: the file starts with these bytes
  [[ "$(head -c $((${#2} / 2)) "$1" | od -An -tx1 | tr -d ' \n')" == "$2" ]] || fail "$1 does not start with $2"
}

# ---- help ------------------------------------------------------------------------------------
expect_ok help "$ctrax" --help
for command in train resume eval plot rollout list bench sweep report; do
  expect_ok "help_$command" "$ctrax" "$command" --help
  grep -q "Usage" "help_$command.out" || fail "ctrax $command --help prints no usage"
done

# ---- train (the embedded default configuration), eval, render, plot --------------------------
expect_ok train "$ctrax" train --epochs 2 --seed 1 --output-dir run1 "${tiny[@]}"
for f in run.toml config.toml metrics.csv metrics.jsonl checkpoints; do
  [[ -e run1/$f ]] || fail "train wrote no run1/$f"
done
ls run1/events.out.tfevents.* >/dev/null 2>&1 || fail "train wrote no TensorBoard event file"
grep -q "PPO on CartPole-v1: epoch 2, " train.out || fail "train summary: $(cat train.out)"
# The final epoch confirms the policy on 100 episodes and says what it showed.
grep -Eq "final policy: mean [0-9.]+ \+- [0-9.]+ over 100 episodes \(95% CI" train.out ||
  fail "train: no final confirmation line: $(cat train.out)"
grep -q "the target 475 was not confirmed" train.out || fail "train: the unmet target is not said: $(cat train.out)"
ls run1/checkpoints/best/checkpoint-0000000002.json >/dev/null 2>&1 || fail "train wrote no best checkpoint"
[[ $(grep -c '"phase": "rl"' run1/metrics.jsonl) -eq 2 ]] || fail "metrics.jsonl does not hold 2 epochs"
grep -q '^seed = 1' run1/config.toml || fail "config.toml does not hold the resolved seed"
if command -v gnuplot >/dev/null; then
  signature_is run1/learning_curve.png 89504e47
else
  echo "gnuplot is not installed: the PNG, GIF and plot checks are skipped" >&2
fi

# flush_denormals = true is part of the run: written back, and the run evaluates in its mode.
expect_ok train_flushed "$ctrax" train --epochs 1 --seed 1 --output-dir run_flushed --no-plot "${tiny[@]}" \
  --set flush_denormals=true
grep -q '^flush_denormals = true' run_flushed/config.toml || fail "config.toml does not hold flush_denormals = true"
grep -q '^flush_denormals = false' run1/config.toml || fail "config.toml does not hold the default flush_denormals"
expect_ok eval_flushed "$ctrax" eval run_flushed --episodes 2
expect_bad train_flush_not_bool "flush_denormals: expected true or false" "$ctrax" train --epochs 1 --output-dir run_bad_flush \
  "${tiny[@]}" --set flush_denormals=1

before=$(fingerprint run1)
expect_ok eval "$ctrax" eval run1 --episodes 3 --output "$work/episodes.csv"
grep -Eq "PPO on CartPole-v1, epoch 2 \(latest checkpoint\), temperature 0, seed 0:" eval.out ||
  fail "eval output: $(cat eval.out)"
grep -Eq "return  mean [0-9.]+ \+- [0-9.]+ over 3 episodes \(95% CI [0-9.-]+ to [0-9.]+\); min [0-9.]+, median [0-9.]+, max" eval.out ||
  fail "eval statistics: $(cat eval.out)"
[[ $(head -1 episodes.csv) == "episode,return,length" && $(wc -l <episodes.csv) -eq 4 ]] ||
  fail "eval --output: $(cat episodes.csv)"
expect_ok eval_jsonl "$ctrax" eval run1 --episodes 2 --checkpoint best --output "$work/episodes.jsonl"
grep -q "(best checkpoint)" eval_jsonl.out || fail "eval --checkpoint best: $(cat eval_jsonl.out)"
[[ $(grep -c '"return": ' episodes.jsonl) -eq 2 ]] || fail "eval --output .jsonl: $(cat episodes.jsonl)"
expect_ok eval_epoch "$ctrax" eval run1 --episodes 2 --checkpoint 1
grep -q "epoch 1 (epoch 1 checkpoint)" eval_epoch.out || fail "eval --checkpoint 1: $(cat eval_epoch.out)"
[[ "$(fingerprint run1)" == "$before" ]] || fail "eval changed the run directory"
expect_bad eval_no_epoch "has no checkpoint of epoch 7; it has: 1, 2" "$ctrax" eval run1 --checkpoint 7
expect_bad eval_bad_choice 'a checkpoint is "latest", "best" or an epoch number' "$ctrax" eval run1 --checkpoint newest
expect_bad eval_bad_output "give a .csv or .jsonl file" "$ctrax" eval run1 --output episodes.txt
if command -v gnuplot >/dev/null; then
  before=$(fingerprint run1)
  expect_ok render_gif "$ctrax" eval run1 --episodes 1 --render "$work/episode.gif"
  signature_is episode.gif 47494638
  expect_ok render_png "$ctrax" eval run1 --episodes 1 --render "$work/strip.png"
  signature_is strip.png 89504e47
  [[ "$(fingerprint run1)" == "$before" ]] || fail "eval changed the run directory"
fi

# ---- Ctrl-C and resume -----------------------------------------------------------------------
# --no-plot: no learning curve at the end of this run; the resume below draws one.
"$ctrax" train --epochs 100000 --no-plot --output-dir run2 "${tiny[@]}" >sigint.out 2>sigint.err &
pid=$!
for _ in $(seq 1 300); do
  [[ -s run2/metrics.jsonl ]] && break
  sleep 0.1
done
kill -INT "$pid"
wait "$pid"
rc=$?
[[ $rc -eq 130 ]] || fail "SIGINT: exit $rc, expected 130; $(cat sigint.err)"
epoch=$(sed -n 's/^interrupted after epoch \([0-9]*\);.*/\1/p' sigint.out)
[[ -n "$epoch" ]] || fail "SIGINT: no 'interrupted after epoch' line: $(cat sigint.out)"
target=$((epoch + 2))
[[ ! -e run2/learning_curve.png ]] || fail "train --no-plot drew a learning curve"
expect_ok resume "$ctrax" resume run2 --epochs "$target"
grep -q "resuming run2 at epoch $epoch" resume.out || fail "resume did not start at epoch $epoch: $(cat resume.out)"
grep -q "epoch $target," resume.out || fail "resume did not reach epoch $target: $(cat resume.out)"
[[ $(grep -c '"phase": "rl"' run2/metrics.jsonl) -eq $target ]] || fail "run2/metrics.jsonl does not hold $target epochs"

if command -v gnuplot >/dev/null; then
  signature_is run2/learning_curve.png 89504e47  # drawn by the resume (the train said --no-plot)
  expect_ok plot "$ctrax" plot run1 run2 -o "$work/both.png"
  signature_is both.png 89504e47
fi

# ---- resume from an earlier checkpoint, sweep and report ----------------------------------------
cp -r run1 older && rm -f older/learning_curve.png
expect_ok resume_older "$ctrax" resume older --checkpoint 1 --epochs 3 --no-plot
[[ ! -e older/learning_curve.png ]] || fail "resume --no-plot drew a learning curve"
grep -q "resuming older at epoch 1 (epoch 1 checkpoint)" resume_older.out || fail "resume --checkpoint 1: $(cat resume_older.out)"
[[ $(grep -c '"phase": "rl"' older/metrics.jsonl) -eq 3 ]] || fail "resume --checkpoint 1 did not replace epoch 2's row"
expect_ok sweep "$ctrax" sweep "$configs/ppo_cartpole.toml" --seeds 2 --first-seed 5 --jobs 2 --output-dir sweeps \
  --set epochs=2 "${tiny[@]}"
for s in 5 6; do
  [[ -f sweeps/ppo_cartpole/seed_$s/run.toml && -s sweeps/ppo_cartpole/seed_$s.log ]] || fail "sweep: no run or log for seed $s"
done
grep -q "| ppo_cartpole | PPO | CartPole-v1 | 475.0 | 0/2 |" sweep.out || fail "sweep report: $(cat sweep.out)"
[[ -f sweeps/ppo_cartpole/report.md ]] || fail "sweep wrote no report.md"
# --unset: no target, so no routine evaluation is needed; the final epoch is still confirmed, here
# in copies of its own width.
expect_ok unset "$ctrax" train "$configs/ppo_pendulum_rltools.toml" --unset target_eval_return \
  --set agent.n_eval_episodes=0 --set agent.n_interactions_per_epoch=256 --set value.minibatch_size=64 \
  --set agent.n_confirm_episodes=6 --set agent.n_confirm_envs=6 --set epochs=1 --no-plot --output-dir unset_run
grep -q '"confirm/episodes": 6' unset_run/metrics.jsonl || fail "--unset run: no 6-episode confirmation"
! grep -q '"eval/return_mean"' unset_run/metrics.jsonl || fail "--unset run: a routine evaluation ran"
! grep -q 'target_eval_return' unset_run/run.toml || fail "--unset run: run.toml still sets the target"
expect_bad unset_absent "--unset agent.n_eval_episode: the configuration does not set agent.n_eval_episode" \
  "$ctrax" train "$configs/ppo_pendulum_rltools.toml" --unset agent.n_eval_episode --output-dir bad_unset
expect_ok report "$ctrax" report sweeps run1 --output "$work/report.md"
grep -q "All configurations: 0 of 3 runs solved" report.out || fail "report over groups: $(cat report.out)"
mkdir -p no_runs && expect_bad report_nothing "holds no run directory" "$ctrax" report no_runs
expect_ok list "$ctrax" list
grep -q "CartPole-v1" list.out && grep -q "SamplingAWR" list.out || fail "list: $(cat list.out)"
expect_ok bench "$ctrax" bench
grep -q "GFLOP/s" bench.out && grep -q "PPO CartPole epoch" bench.out || fail "bench: $(cat bench.out)"

# ---- bad input: status 2, one clear line, nothing created or changed --------------------------
expect_bad missing_config "cannot (open|read).*no_such.toml" "$ctrax" train no_such.toml --output-dir bad1
expect_bad unknown_env 'task.env: unknown environment "Pong-v5"' "$ctrax" train --set task.env=Pong-v5 --output-dir bad1
expect_bad unknown_algorithm 'algorithm: expected one of PolicyGradient' "$ctrax" train --set algorithm=DQN --output-dir bad1
expect_bad gaussian_on_discrete "a Gaussian option, but the action space is discrete" \
  "$ctrax" train --set policy.distribution.std=0.5 --output-dir bad1
expect_bad joint_with_value_model "PPOJoint trains one network with a policy and a value head" \
  "$ctrax" train --set algorithm=PPOJoint --output-dir bad1
expect_bad unknown_key "policy.batch_sise: unknown key" "$ctrax" train --set policy.batch_sise=3 --output-dir bad1
expect_bad bad_value "policy.batch_size: expected an integer" "$ctrax" train --set policy.batch_size=0 --output-dir bad1
expect_bad bad_override "--set" "$ctrax" train --set nonsense --output-dir bad1
# --device cuda: refused with the CUDA runtime's reason in a CPU-only build or on a machine
# without a usable GPU; with a GPU it passes and the bad batch size is refused instead.
expect_bad cuda "--device cuda: cannot train on cuda:0: .+; the devices available are: cpu|policy.batch_size: expected" \
  "$ctrax" train --device cuda --set policy.batch_size=0 --output-dir bad1
expect_bad cuda_index "--device cuda:99: (cannot train on cuda:99: .+|this machine has [0-9]+ GPU)" \
  "$ctrax" train --device cuda:99 --output-dir bad1
expect_bad unknown_device 'unknown device "tpu" \(expected cpu, cuda or cuda:N\)' "$ctrax" train --device tpu --output-dir bad1
expect_bad resume_cuda_index "--device cuda:99: (cannot train on cuda:99|this machine has [0-9]+ GPU)" \
  "$ctrax" resume run1 --device cuda:99
expect_bad not_writable "cannot create the output directory /proc/ctrax_e2e" "$ctrax" train --output-dir /proc/ctrax_e2e/run
expect_bad agent_refuses "n_shared_layers|shared" "$ctrax" train --set value.n_shared_layers=50 --output-dir bad1
[[ -e bad1 ]] && fail "a refused train created its output directory"
before=$(fingerprint run1)
expect_bad existing_run "run1 already holds a run; continue it with .ctrax resume run1." \
  "$ctrax" train --output-dir run1 "${tiny[@]}"
[[ "$(fingerprint run1)" == "$before" ]] || fail "a refused train changed an existing run"

expect_bad resume_nothing "no run directory at nowhere" "$ctrax" resume nowhere
mkdir plain && expect_bad resume_not_a_run "plain is not a ctrax run directory" "$ctrax" resume plain
cp -r run1 future && sed -i 's/^version = .*/version = 99/' future/run.toml
expect_bad resume_future "format version 99; this ctrax reads version 1" "$ctrax" resume future
expect_bad eval_future "format version 99" "$ctrax" eval future

# A corrupted checkpoint: every byte of its tensors file flipped in the middle.
cp -r run1 corrupt
newest=$(ls -d corrupt/checkpoints/checkpoint-* | grep -v manifest | sort | tail -1)
data=$(find corrupt/checkpoints -maxdepth 1 -name '*.safetensors' | sort | tail -1)
[[ -n "$data" ]] || fail "no .safetensors file in the checkpoint ($newest)"
size=$(stat -c %s "$data")
printf '\xff\xff\xff\xff\xff\xff\xff\xff' | dd of="$data" bs=1 seek=$((size / 2)) conv=notrunc status=none
before=$(fingerprint corrupt)
expect_bad corrupt_resume "checksum|corrupt" "$ctrax" resume corrupt --epochs 5
expect_bad corrupt_eval "checksum|corrupt" "$ctrax" eval corrupt
[[ "$(fingerprint corrupt)" == "$before" ]] || fail "a refused resume changed the run directory"

# ---- hostile inputs (issue 20): each refused with one line and status 2, the run unchanged -------
# A crash between the first epoch's row and its checkpoint: a directory where the checkpoint's
# tensor file goes makes the save fail right after the row was written.
mkdir -p crash/checkpoints/checkpoint-0000000001.safetensors
expect_bad crash_first_save "checkpoint" "$ctrax" train --epochs 3 --output-dir crash "${tiny[@]}"
[[ $(grep -c '"phase": "rl"' crash/metrics.jsonl) -eq 1 ]] || fail "crash: the first row was not written before the failed save"
rmdir crash/checkpoints/checkpoint-0000000001.safetensors
expect_ok crash_resume "$ctrax" resume crash
[[ "$(grep -o '"step": [0-9]*' crash/metrics.jsonl | tr -d '\n')" == '"step": 1"step": 2"step": 3' ]] ||
  fail "crash: resume duplicated or lost rows: $(grep -o '"step": [0-9]*' crash/metrics.jsonl | tr '\n' ' ')"
[[ $(($(wc -l <crash/metrics.csv) - 1)) -eq 3 ]] || fail "crash: metrics.csv does not hold exactly 3 rows"

# eval needs read access only: a run without checkpoints/ is refused and stays without one.
cp -r run1 nockpt && rm -rf nockpt/checkpoints
before=$(fingerprint nockpt)
expect_bad eval_no_checkpoints "holds no checkpoint to evaluate" "$ctrax" eval nockpt
[[ ! -e nockpt/checkpoints && "$(fingerprint nockpt)" == "$before" ]] || fail "eval created or changed files in nockpt"

# A FIFO in place of the newest checkpoint's tensor file or manifest: refused at once, no hang.
for part in safetensors json; do
  cp -r run1 "fifo_$part"
  target=$(find "fifo_$part/checkpoints" -maxdepth 1 -name "*.$part" | sort | tail -1)
  rm "$target" && mkfifo "$target"
  before=$(fingerprint "fifo_$part")
  expect_bad "fifo_${part}_eval" "not a regular file \(it is a FIFO" timeout 20 "$ctrax" eval "fifo_$part"
  expect_bad "fifo_${part}_resume" "not a regular file \(it is a FIFO" timeout 20 "$ctrax" resume "fifo_$part" --epochs 5
  [[ "$(fingerprint "fifo_$part")" == "$before" ]] || fail "a refused FIFO run changed"
done

# Configurations that are not regular files of a sensible size, or link in a loop.
mkdir -p config_dir
expect_bad config_directory "not a regular file \(it is a directory\)" "$ctrax" train config_dir --output-dir bad2
expect_bad config_dev_zero "not a regular file \(it is a character device\)" "$ctrax" train /dev/zero --output-dir bad2
head -c 2000000 /dev/zero | tr '\0' '#' > huge.toml
expect_bad config_too_large "more than the limit of 1048576 bytes" "$ctrax" train huge.toml --output-dir bad2
ln -s loop.toml loop.toml
expect_bad config_loop "Too many levels of symbolic links" "$ctrax" train loop.toml --output-dir bad2
ln -s run_loop run_loop
expect_bad run_dir_loop "cannot open the run directory run_loop: Too many levels of symbolic links" "$ctrax" eval run_loop
mkfifo pipe.toml
expect_bad config_fifo "it is a FIFO" timeout 20 "$ctrax" train pipe.toml --output-dir bad2
[[ ! -e bad2 ]] || fail "a refused configuration created its output directory"

# Counts within their ranges whose product cannot fit in memory are refused before anything starts.
expect_bad memory_interactions "this configuration needs about [0-9.]+ GiB .*more than the [0-9.]+ GiB of memory available" \
  "$ctrax" train --set agent.n_interactions_per_epoch=1099511627776 --output-dir bad2
expect_bad memory_envs "this configuration needs about [0-9.]+ GiB" "$ctrax" train "$configs/ppo_acrobot.toml" \
  --set task.n_envs=1048576 --set task.n_eval_envs=1048576 --output-dir bad2
[[ ! -e bad2 ]] || fail "a configuration refused for its memory created its output directory"

# What was typed is what the message shows.
expect_bad seed_overflow "--seed: expected a whole number >= 0, got 99999999999999999999 \(too large\)" \
  "$ctrax" train --seed 99999999999999999999 --output-dir bad2
expect_bad epochs_overflow "--epochs: expected a whole number >= 0, got 123456789012345678901" \
  "$ctrax" resume run1 --epochs 123456789012345678901
expect_bad target_inf "target_eval_return: expected a finite number, got inf" "$ctrax" train \
  --set target_eval_return=inf --output-dir bad2

# A stale temporary of an interrupted write is removed when the run is next opened for writing.
cp -r run1 stale && touch stale/.run.toml.tmp.999999.1
expect_ok stale_resume "$ctrax" resume stale --epochs 3
[[ ! -e stale/.run.toml.tmp.999999.1 ]] || fail "resume left a stale .run.toml.tmp"

expect_bad render_extension "give a .gif" "$ctrax" eval run1 --render episode.mp4
expect_bad unknown_command "" "$ctrax" fly

if [[ $failures -ne 0 ]]; then
  echo "ctrax_end_to_end: $failures failure(s)" >&2
  exit 1
fi
echo "ctrax_end_to_end: all checks passed"
