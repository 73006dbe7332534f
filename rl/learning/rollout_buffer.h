// A rollout buffer: the steps of one collection as rows, with their advantages and value
// targets, for training in shuffled minibatches over several passes (Stable-Baselines3's and
// CleanRL's PPO; ActorCriticOptions::rollout_passes).
//
// What it is for: the other way to train an actor-critic besides Trax's random slice batches.
// The value network runs once per epoch on every stored observation (final ones included), the
// advantage estimator runs once over whole pieces, and every step is then one row. What it is
// not for: replay across epochs (Trax's slices do that) or recurrent policies (rows are single
// steps).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "../../tensor/random.h"
#include "../../tensor/tensor.h"
#include "advantages.h"
#include "trajectory.h"

namespace ctrax {

class RolloutBuffer {
 public:
  // `values` maps observations [K, L, ...] (float32) to V [K, L] (any floating dtype, on the
  // CPU); `pieces` are one collection's trajectories (at least one). The rows are the pieces'
  // steps in order. Advantages are the estimator's over each whole piece (a terminated piece's
  // final observation counts 0, a truncated or cut one bootstraps from V of it), and the value
  // targets are old value + advantage (SB3's returns).
  RolloutBuffer(const std::vector<Trajectory>& pieces, const std::function<Tensor(const Tensor&)>& values,
                const AdvantageEstimator& estimator, double gamma);

  int64_t size() const { return n_; }
  const Tensor& observations() const { return observations_; }  // [N, ...] float32
  const Tensor& actions() const { return actions_; }            // [N, ...] the action dtype
  const Tensor& dist_inputs() const { return dist_inputs_; }    // [N, D] float32 (the behaviour policy's)
  const Tensor& advantages() const { return advantages_; }      // [N] float32
  const Tensor& value_targets() const { return value_targets_; }  // [N] float32
  const Tensor& old_values() const { return old_values_; }      // [N] float32

  // The minibatches of one pass: a permutation of [0, N) from `key`, cut into consecutive
  // pieces of minibatch_size rows (the last may be shorter), views of that one permutation.
  // Every row is in exactly one.
  static std::vector<Tensor> minibatch_indices(int64_t n, int64_t minibatch_size, Key key);
  // `rows` (int64 [B]) of a field as a [B, 1, ...] batch of one-step slices.
  static Tensor select(const Tensor& field, const Tensor& rows);

 private:
  int64_t n_ = 0;
  Tensor observations_, actions_, dist_inputs_, advantages_, value_targets_, old_values_;
};

// One minibatch of a RolloutBuffer: its rows of every field as [B, 1, ...] one-step batches
// (RolloutBuffer::select's), gathered into tensors this object keeps and refills for the next
// minibatch of the same size when nothing else holds them any more (a training step does not
// keep its batch), so that the rollout passes allocate nothing per minibatch in steady state.
// A tensor still held elsewhere is left alone and a fresh one takes its place.
class RolloutMinibatch {
 public:
  // The buffer's observations, actions and dist_inputs and the given per-row advantages, value
  // targets and old values (CPU tensors of buffer.size() rows: the buffer's own, or rescaled or
  // normalised copies) at `rows`: int64 [B], B >= 1, each in [0, buffer.size()); throws
  // ctrax::Error otherwise. With `normalize` = (epsilon, factor) the advantages are normalised
  // over the minibatch, exactly as normalize_minibatch does (they must be float32).
  void gather(const RolloutBuffer& buffer, const Tensor& rows, const Tensor& advantages, const Tensor& value_targets,
              const Tensor& old_values, std::optional<std::pair<double, double>> normalize);
  const Tensor& observations() const { return fields_[0]; }  // [B, 1, ...] float32
  const Tensor& actions() const { return fields_[1]; }       // [B, 1, ...]
  const Tensor& dist_inputs() const { return fields_[2]; }   // [B, 1, D] float32
  const Tensor& advantages() const { return fields_[3]; }    // [B, 1] the advantages' dtype
  const Tensor& value_targets() const { return fields_[4]; } // [B, 1] the targets' dtype
  const Tensor& old_values() const { return fields_[5]; }    // [B, 1] the old values' dtype
  const Tensor& mask() const { return mask_; }               // [B, 1] float32 ones

 private:
  Tensor fields_[6];
  Tensor mask_;
};

// (A - mean(A)) / (std(A) + epsilon) * factor over a [B, ...] minibatch (std: population),
// float32; an all-equal minibatch becomes zeros.
Tensor normalize_minibatch(const Tensor& advantages, double epsilon, double factor = 1.0);

}  // namespace ctrax
