// Action distributions (Trax's rl/distributions.py): a policy outputs n_inputs() numbers per
// example, and a Distribution turns them into actions (sample), scores actions (log_prob) and
// measures randomness (entropy), all from differentiable ops so the RL losses differentiate
// through them. Not general probability (no cdf, no KL between families).
// Formulas, Gymnasium/Trax differences: docs/rl.md, "Distributions".
//
// Shapes: inputs [..., n_inputs()]; a sample or point [..., event shape]; log_prob and entropy
// [...], summed over the event's elements (as Trax).
// Categorical(n, shape): n_inputs = prod(shape) n logits, grouped by the last axis; points are
// integers in [0, n). A -inf logit (a masked action) is never sampled and adds 0 (not NaN) to
// the entropy and its gradient; sampling throws on NaN logits or a group of all -inf.
// Gaussian(shape, std, learn_std): the d = prod(shape) means first, then nothing (none), one raw
// std (shared) or d of them (separate), std = softplus(raw + std); or d raw log stds
// (state_independent), std = exp(raw + log(std)), which Policy(distribution) makes one learned
// vector for every state (LearnedColumns, zeros at first, so the std starts at `std`).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "../../layers/layer.h"
#include "../../tensor/random.h"
#include "../../tensor/tensor.h"
#include "../environments/space.h"

namespace ctrax {

class Distribution {
 public:
  virtual ~Distribution() = default;
  virtual std::string name() const = 0;
  virtual int64_t n_inputs() const = 0;
  // Shape and dtype of one sample (int64 for Categorical, float32 for Gaussian, whatever the
  // inputs' float dtype).
  virtual const Shape& event_shape() const = 0;
  virtual DType sample_dtype() const = 0;

  // temperature finite and >= 0; 0 gives the mode (argmax, ties to the lowest index; the mean).
  // Samples are fresh tensors and constants to autodiff (actions are data, not functions of the
  // weights).
  virtual Tensor sample(const Tensor& inputs, Key key, double temperature = 1.0) const = 0;
  virtual Tensor log_prob(const Tensor& inputs, const Tensor& point) const = 0;
  virtual Tensor entropy(const Tensor& inputs) const = 0;
  // How many of the last inputs are learned parameters the same for every state rather than
  // outputs of the policy's head (a Gaussian's state-independent log std): Policy(distribution)
  // gives its Dense head the other n_inputs() - n_state_independent_inputs() outputs and appends
  // these with LearnedColumns.
  virtual int64_t n_state_independent_inputs() const { return 0; }
};

using DistributionPtr = std::shared_ptr<const Distribution>;

class Categorical final : public Distribution {
 public:
  // n >= 2 categories per element; every dimension of shape >= 1.
  explicit Categorical(int64_t n_categories, Shape shape = {});
  std::string name() const override;
  int64_t n_inputs() const override;
  const Shape& event_shape() const override { return shape_; }
  DType sample_dtype() const override { return DType::int64; }
  int64_t n_categories() const { return n_; }
  Tensor sample(const Tensor& inputs, Key key, double temperature = 1.0) const override;
  Tensor log_prob(const Tensor& inputs, const Tensor& point) const override;
  Tensor entropy(const Tensor& inputs) const override;

 private:
  int64_t n_;
  Shape shape_;
};

// none: a fixed std; shared: one learned std for all the event's elements, an output of the
// network; separate: one per element, outputs of the network (Trax's three); state_independent:
// one per element, a learned vector independent of the state (Stable-Baselines3's, CleanRL's
// and RLtools' log_std), exp(raw + log std) rather than softplus.
enum class LearnStd { none, shared, separate, state_independent };

class Gaussian final : public Distribution {
 public:
  // std > 0 and finite.
  explicit Gaussian(Shape shape = {}, double std = 1.0, LearnStd learn_std = LearnStd::none);
  std::string name() const override;
  int64_t n_inputs() const override;
  const Shape& event_shape() const override { return shape_; }
  DType sample_dtype() const override { return DType::float32; }
  Tensor sample(const Tensor& inputs, Key key, double temperature = 1.0) const override;
  Tensor log_prob(const Tensor& inputs, const Tensor& point) const override;
  Tensor entropy(const Tensor& inputs) const override;
  int64_t n_state_independent_inputs() const override;
  LearnStd learn_std() const { return learn_std_; }
  // The means and standard deviations, [..., event shape] each, from the inputs.
  std::pair<Tensor, Tensor> mean_and_std(const Tensor& inputs) const;

 private:
  // state_independent: raw + log(std), [..., event shape].
  Tensor log_std_of(const Tensor& inputs, const Shape& full_shape) const;

  Shape shape_;
  double std_;
  LearnStd learn_std_;
};

// Discrete(n) -> Categorical(n); MultiDiscrete with equal entries n -> Categorical(n, [k]);
// Box(shape) -> Gaussian(shape). Throws for unequal MultiDiscrete entries or n = 1.
DistributionPtr create_distribution(const Space& space);
// `given` when it fits `space` (the same kind of samples, integer categories or real vectors, of
// the same event shape, and for categories the same count), create_distribution(space) when
// `given` is null; else ctrax::Error starting with `who` and naming both.
DistributionPtr distribution_for_space(const Space& space, DistributionPtr given, const std::string& who);

// Layers (Trax's LogProb and LogLoss): LogProb(d): (inputs, points) -> log_prob;
// LogLoss(d): (inputs, points, weights) -> -sum(weights * log_prob), a sum (callers normalise
// the weights, as Trax's do).
LayerPtr LogProb(DistributionPtr distribution);
LayerPtr LogLoss(DistributionPtr distribution);

}  // namespace ctrax
