// Trajectories and time-step batches: the data RLTask (rl/learning/task.h) collects and the RL
// trainers learn from (Trax's Trajectory and TimeStepBatch in rl/task.py). A Trajectory holds one
// piece of an episode as contiguous tensors with its discounted returns; slices of pieces are
// stacked into [B, L] batches with padding and masks. Not collection, not advantages
// (rl/learning/advantages.h). Design, the layout with a margin, and Trax differences:
// docs/rl.md, "Trajectories and batches".
//
// A piece of T >= 1 steps holds observations o_0..o_T (o_T: where it ended) and per step t < T the
// action, reward, dist_inputs [T, D] (D = 0 when none were recorded) and discount mask. It ended
// terminated (nothing bootstraps from o_T), truncated (a time limit) or neither (the collector
// cut it; the episode goes on from o_T); only terminated counts as done for the learner.
// Returns: R_t = r_t + gamma_t R_{t+1}, R_T = 0, without the bootstrap tail.
// Laid out with margin m: entries 0..T-1 are the steps (mask 1), entry T (m >= 1) is o_T, later
// entries are zeros; every entry past the steps has mask 0, done true and zero action, reward,
// dist_inputs and return.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "../../tensor/tensor.h"

namespace ctrax {

// Fields [B, L, ...]: B slices of L entries.
struct TimeStepBatch {
  Tensor observation;    // [B, L, ...observation shape], the observation dtype
  Tensor action;         // [B, L, ...action shape], the action dtype
  Tensor reward;         // [B, L] float32
  Tensor done;           // [B, L] bool: terminated after this step (true on entries past the steps)
  Tensor mask;           // [B, L] float32: 1 for steps, 0 for the final observation and padding
  Tensor dist_inputs;    // [B, L, D] float32
  Tensor discount_mask;  // [B, L] bool
  Tensor return_;        // [B, L] float32: discounted return from this step
};

// What a Trajectory is made from (the collector fills one; tests and users can too).
struct TrajectoryData {
  Tensor observations;   // [T + 1, ...], any dtype; T >= 1
  Tensor actions;        // [T, ...], any dtype
  Tensor rewards;        // [T], floating
  Tensor dist_inputs;    // [T, D], floating, D >= 0; undefined: D = 0
  Tensor discount_mask;  // [T], any real or bool dtype (nonzero = set); undefined: all set
  bool terminated = false;
  bool truncated = false;
};

// Everything a Trajectory holds, as it holds it (the dtypes of its getters). This is what a
// checkpoint stores (RLTask::export_state): the returns were computed in double from the
// rewards as the collector gave them, so the float32 rewards kept could not reproduce them.
struct TrajectoryParts {
  Tensor observations;   // [T + 1, ...], any dtype; T >= 1
  Tensor actions;        // [T, ...], any dtype
  Tensor rewards;        // [T] float32
  Tensor dist_inputs;    // [T, D] float32, D >= 0
  Tensor discount_mask;  // [T] bool
  Tensor returns;        // [T] float32
  bool terminated = false;
  bool truncated = false;
  double total_return = 0.0;
};

class Trajectory {
 public:
  // Validates the shapes (ctrax::Error naming the field), copies the data into contiguous
  // tensors of the documented dtypes, and computes the returns with discount gamma in [0, 1].
  Trajectory(const TrajectoryData& data, double gamma);
  // Exactly the given parts (returns and total_return as they are). Validates the shapes and
  // dtypes (ctrax::Error naming the field) and copies the data into contiguous tensors.
  static Trajectory from_parts(const TrajectoryParts& parts);
  // The parts of this trajectory (its tensors, shared, not copied): from_parts(parts()) is
  // an equal trajectory.
  TrajectoryParts parts() const;

  // T, the number of steps.
  int64_t length() const { return length_; }
  const Tensor& observations() const { return observations_; }  // [T + 1, ...]
  const Tensor& actions() const { return actions_; }            // [T, ...]
  const Tensor& rewards() const { return rewards_; }            // [T] float32
  const Tensor& dist_inputs() const { return dist_inputs_; }    // [T, D] float32
  const Tensor& discount_mask() const { return discount_mask_; }  // [T] bool
  const Tensor& returns() const { return returns_; }            // [T] float32
  int64_t n_dist_inputs() const { return dist_inputs_.shape()[1]; }
  bool terminated() const { return terminated_; }
  bool truncated() const { return truncated_; }
  // The episode ended here (terminated or truncated); otherwise the piece was cut by the
  // collector and the episode continues in a later piece.
  bool episode_ended() const { return terminated_ || truncated_; }
  // Undiscounted sum of the rewards (accumulated in double).
  double total_return() const { return total_return_; }
  // o_T: a view of the last row of observations().
  Tensor last_observation() const { return observations_.select(0, length_); }

  // The whole trajectory laid out with `margin` >= 0 (see the top of this file): [1, T + margin].
  TimeStepBatch to_batch(int64_t margin = 1) const;

 private:
  Trajectory() = default;

  int64_t length_ = 0;
  Tensor observations_, actions_, rewards_, dist_inputs_, discount_mask_, returns_;
  bool terminated_ = false;
  bool truncated_ = false;
  double total_return_ = 0.0;
};

// How many slices of max_slice_length entries a trajectory laid out with `margin` offers (Trax's
// _n_slices): max(1, T + 1 + margin - max_slice_length); 1 without a max_slice_length (the
// whole trajectory is the only slice). Slice start s in [0, n) covers entries
// [s, min(s + max_slice_length, T + margin)).
int64_t n_slices(const Trajectory& trajectory, std::optional<int64_t> max_slice_length, int64_t margin);

// Entries [start, start + length) of `trajectory` laid out with `margin`.
struct TrajectorySlice {
  const Trajectory* trajectory = nullptr;
  int64_t start = 0;
  int64_t length = 0;
  int64_t margin = 0;
};

// Stacks slices into one batch. All trajectories must have the same observation and action
// shapes and dtypes, and the same D, except that D = 0 (no recorded dist_inputs) is filled with
// zeros next to others. L = the common length when all slices have it and it is at least
// min_length; else the next power of two >= max(longest slice, min_length), padded like the
// entries past T (Trax's choice: few batch shapes); with pad_to_power_of_two = false,
// L = max(longest slice, min_length). Throws ctrax::Error for no slices, a slice outside its
// trajectory's entries, or mismatched trajectories.
TimeStepBatch stack_slices(const std::vector<TrajectorySlice>& slices,
                           std::optional<int64_t> min_length = std::nullopt, bool pad_to_power_of_two = true);

}  // namespace ctrax
