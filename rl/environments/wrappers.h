// Wrappers: observation normalisation, reward scaling, action clipping and rescaling, and
// episode statistics for any Env (Gymnasium's wrappers of the same names; TimeLimit is in
// time_limit.h). Each derives from EnvWrapper and changes only the calls it must; compose them by
// hand, e.g.
//   EnvPtr env = make_env("Pendulum-v1");
//   env = std::make_unique<RecordEpisodeStatistics>(std::move(env));   // raw returns
//   env = std::make_unique<NormalizeObservation>(std::move(env));
//   env = std::make_unique<RescaleAction>(std::move(env), -1.0, 1.0);
// Each wrapped copy keeps its own statistics (no vector-level normalisation); no image wrappers.
//
// Checkpoints (rl/environments/env.h): each wrapper's own values, listed at its class, then the
// inner environment's checkpoint_state; a running statistic is count, mean (one value per
// element), var (the same). ClipAction and RescaleAction keep nothing of their own.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "env_wrapper.h"

namespace ctrax {

// Running mean and variance of a stream of tensors of one shape, elementwise (Gymnasium's
// RunningMeanStd): the state (mean, var, count) starts at (0, 1, epsilon), as if `epsilon`
// pseudo-samples of mean 0 and variance 1 had been seen, and each batch of B samples with
// mean m_b and (population) variance v_b is merged by Chan et al.'s parallel update:
//   delta = m_b - mean,  n = count + B,
//   mean' = mean + delta B / n,
//   var'  = (var count + v_b B + delta^2 count B / n) / n,  count' = n.
// Statistics are kept in float64 whatever the samples' dtype (Gymnasium keeps them in the
// observation dtype, float32 for NormalizeObservation).
class RunningMeanStd {
 public:
  // epsilon > 0.
  explicit RunningMeanStd(const Shape& shape = {}, double epsilon = 1e-4);

  const Shape& shape() const { return shape_; }
  // batch: [B, ...shape] with B >= 1, any real dtype, finite values. The batch's mean and
  // variance are computed in two passes (as np.mean, np.var) before the merge above.
  void update(const Tensor& batch);
  // One sample of `shape` (update with B = 1: v_b = 0).
  void update_one(const Tensor& sample);
  // mean, var: float64 tensors of `shape` (contiguous; a copy of them if kept).
  const Tensor& mean() const { return mean_; }
  const Tensor& var() const { return var_; }
  double count() const { return count_; }
  // Restores a state (a checkpoint): mean and var of `shape` (any real dtype), finite, var >=
  // 0, count > 0 and finite. ctrax::Error otherwise, and nothing changes.
  void set(const Tensor& mean, const Tensor& var, double count);

 private:
  void merge(const double* batch_mean, const double* batch_var, double batch_count);

  Shape shape_;
  Tensor mean_, var_;  // float64, shape_
  double count_;
};

// obs' = (obs - mean) / sqrt(var + epsilon), elementwise, with (mean, var) the running
// statistics of every observation seen (reset's and step's), updated before normalising
// unless update_running_mean is off (evaluation). The observation space becomes
// Box(-inf, inf) of the same shape in float32, and observations are float32 (Gymnasium 1.x).
// The inner observation space must be a Box; epsilon > 0.
class NormalizeObservation final : public EnvWrapper {
 public:
  explicit NormalizeObservation(EnvPtr env, double epsilon = 1e-8);

  const Space& observation_space() const override { return observation_space_; }
  Tensor reset(std::optional<uint64_t> seed = std::nullopt) override;
  StepResult step(const Tensor& action) override;
  // The current observation normalised with the current statistics (no update).
  Tensor observation() const override;
  // update_running_mean (0 or 1), the statistics (count, mean, var), then the inner state.
  std::vector<double> checkpoint_state() const override;
  void restore_checkpoint_state(const std::vector<double>& state) override;

  bool update_running_mean() const { return update_; }
  void set_update_running_mean(bool update) { update_ = update; }
  RunningMeanStd& statistics() { return statistics_; }
  const RunningMeanStd& statistics() const { return statistics_; }
  double epsilon() const { return epsilon_; }

 private:
  Tensor normalize(const Tensor& observation) const;
  Tensor process(const Tensor& observation);

  Space observation_space_;
  RunningMeanStd statistics_;
  double epsilon_;
  bool update_ = true;
};

// Scales rewards so that a discounted return has roughly unit variance (Gymnasium's
// NormalizeReward): on every step
//   G <- G gamma (1 - terminated) + r,   update the running variance of G (unless frozen),
//   r' = r / sqrt(var(G) + epsilon)      (not centred: shifting rewards changes the task).
// As in Gymnasium, the terminating step's factor (1 - terminated) is what ends the return: the
// terminal reward itself starts the next one, and neither truncation nor reset() clears G.
// gamma in [0, 1], epsilon > 0.
class NormalizeReward final : public EnvWrapper {
 public:
  explicit NormalizeReward(EnvPtr env, double gamma = 0.99, double epsilon = 1e-8);

  StepResult step(const Tensor& action) override;
  // update_running_mean (0 or 1), the statistics of G (count, mean, var), G, then the inner
  // state.
  std::vector<double> checkpoint_state() const override;
  void restore_checkpoint_state(const std::vector<double>& state) override;

  bool update_running_mean() const { return update_; }
  void set_update_running_mean(bool update) { update_ = update; }
  // The statistics of G (shape []) and G itself, for checkpoints.
  RunningMeanStd& statistics() { return statistics_; }
  const RunningMeanStd& statistics() const { return statistics_; }
  double discounted_return() const { return return_; }
  void set_discounted_return(double value);
  double gamma() const { return gamma_; }
  double epsilon() const { return epsilon_; }

 private:
  RunningMeanStd statistics_;
  double gamma_, epsilon_;
  double return_ = 0.0;
  bool update_ = true;
};

// Clips each action to the inner Box's [low, high] before passing it on (Gymnasium's
// ClipAction); the wrapper's action space is Box(-inf, inf) of the same shape and dtype, since
// it accepts any finite or infinite value. Actions: a float tensor of the space's shape, no
// NaN; passed on in the space's dtype. The inner action space must be a Box.
class ClipAction final : public EnvWrapper {
 public:
  explicit ClipAction(EnvPtr env);
  const Space& action_space() const override { return action_space_; }
  StepResult step(const Tensor& action) override;

 private:
  Space action_space_;
  std::vector<double> low_, high_;  // the inner bounds
};

// Lets the agent act in [min_action, max_action] and maps that affinely onto the inner Box's
// [low, high] (Gymnasium's RescaleAction):
//   a_env = low + (high - low) (a - min_action) / (max_action - min_action),
// elementwise, in float64, then rounded to the space's dtype. Not clipped: an action outside
// [min, max] maps outside [low, high] (stack a ClipAction inside to clip). The inner action
// space must be a bounded Box (an infinite bound has no affine image of a finite interval);
// min_action < max_action, finite, of the space's shape (or scalars, broadcast). The
// wrapper's action space is Box(min_action, max_action) in the inner dtype.
class RescaleAction final : public EnvWrapper {
 public:
  RescaleAction(EnvPtr env, double min_action, double max_action);
  RescaleAction(EnvPtr env, const Tensor& min_action, const Tensor& max_action);
  const Space& action_space() const override { return action_space_; }
  StepResult step(const Tensor& action) override;

 private:
  Space action_space_;
  std::vector<double> low_, high_;              // the inner bounds
  std::vector<double> min_action_, max_action_;  // as given (before rounding to the dtype)
};

// Keeps the return (sum of rewards) and length of the episode in progress, those of the last
// finished episode (terminated or truncated), and how many episodes have finished (Gymnasium's
// RecordEpisodeStatistics, without its queues and wall-clock times). Wrap it inside any
// reward-changing wrapper (NormalizeReward) to record the task's own returns. After a finishing
// step the episode in progress is still the finished one, until reset() or set_state() start
// a new one (an episode left unfinished that way is not counted).
class RecordEpisodeStatistics final : public EnvWrapper {
 public:
  explicit RecordEpisodeStatistics(EnvPtr env);

  Tensor reset(std::optional<uint64_t> seed = std::nullopt) override;
  StepResult step(const Tensor& action) override;
  void set_state(const std::vector<double>& state) override;
  // The episode return and length in progress, 1 if an episode has finished (else 0), the last
  // finished one's return and length (0 when none), the episode count, then the inner state.
  // The returns may be any double (they sum whatever rewards the environment gave).
  std::vector<double> checkpoint_state() const override;
  void restore_checkpoint_state(const std::vector<double>& state) override;

  double episode_return() const { return return_; }
  int64_t episode_length() const { return length_; }
  // Empty until an episode has finished.
  std::optional<double> last_episode_return() const { return last_return_; }
  std::optional<int64_t> last_episode_length() const { return last_length_; }
  int64_t episode_count() const { return count_; }

 private:
  double return_ = 0.0;
  int64_t length_ = 0;
  std::optional<double> last_return_;
  std::optional<int64_t> last_length_;
  int64_t count_ = 0;
};

}  // namespace ctrax
