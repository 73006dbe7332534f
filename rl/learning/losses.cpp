// The actor-critic losses and metrics (see losses.h).
#include "../../tensor/compile.h"
#include "losses.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "../../autograd/tape.h"
#include "../../base/error.h"
#include "../../layers/combinators.h"
#include "../../tensor/ops.h"

namespace ctrax {

namespace {

// Errors thrown while applying are prefixed with the layer's path and input signature by the
// pass (layers/layer.cpp); construction errors name the layer themselves.

// ---- Construction checks ----------------------------------------------------------------------

DistributionPtr checked(DistributionPtr dist, const char* layer) {
  CTRAX_REQUIRE(dist != nullptr, layer, ": the distribution is null");
  return dist;
}

void check_epsilon(const char* layer, double epsilon) {
  CTRAX_REQUIRE(epsilon > 0.0 && epsilon < 1.0, layer, ": epsilon must be in (0, 1), got ", epsilon,
                " (the ratio is clipped to [1 - epsilon, 1 + epsilon])");
}

void check_coefficient(const char* layer, const char* what, double c) {
  CTRAX_REQUIRE(std::isfinite(c) && c >= 0.0, layer, ": ", what, " must be finite and >= 0, got ", c);
}

void check_awr(const char* layer, double beta, double w_max) {
  CTRAX_REQUIRE(std::isfinite(beta) && beta > 0.0, layer, ": beta must be finite and > 0, got ", beta);
  // +inf is allowed: no clipping of the weights.
  CTRAX_REQUIRE(w_max > 0.0, layer, ": w_max must be > 0 (+inf for no clipping), got ", w_max);
}

void check_padding(const char* layer, BatchPadding padding) {
  CTRAX_REQUIRE(padding == BatchPadding::masked || padding == BatchPadding::none, layer,
                ": padding has the invalid value ", static_cast<int>(padding),
                " (expected BatchPadding::masked or BatchPadding::none)");
}

// ---- The mask and per-step inputs ---------------------------------------------------------------

Shape concat_shapes(const Shape& a, const Shape& b) {
  Shape out = a;
  for (int64_t d : b) out.push_back(d);
  return out;
}

// What the mask implies for a batch: its shape S (every per-step input's), the float mask m,
// the bool "real step" flags, and the dtype results are computed in.
struct Steps {
  Shape shape;
  DType dtype;
  Tensor m;      // S, `dtype`, a constant
  Tensor valid;  // S, bool: m != 0
  Tensor den;    // sum(m), rank 0
  Tensor none;   // sum(m) == 0, rank 0 bool (undefined when all_real)
  const char* mask_name = "mask";  // "weights" for the value batch
  // BatchPadding::none: m is all ones (checked), `valid` and `none` are undefined, and den is the
  // step count: nothing needs zeroing and a masked mean is a plain one.
  bool all_real = false;
};

Steps read_mask(const Tensor& mask, DType dtype, const char* name = "mask",
                BatchPadding padding = BatchPadding::masked) {
  CTRAX_REQUIRE(mask.defined(), "the ", name, " is undefined");
  NoGradScope no_grad;  // the mask is data
  Steps st;
  st.mask_name = name;
  st.shape = mask.shape();
  st.dtype = dtype;
  st.m = mask.dtype() == dtype ? stop_gradient(mask) : mask.to(dtype);
  if (padding == BatchPadding::none) {
    st.all_real = true;
    if (st.m.numel() > 0) {
      check_value(all(eq(st.m, scalar_like(1.0, st.m))), [name](double ones) {
        return ones != 0.0 ? std::string()
                           : detail::cat("the ", name, " has an entry other than 1, but this loss was made for "
                                         "batches without padding (BatchPadding::none); use BatchPadding::masked");
      });
    }
    // sum(m) of an all-ones mask, exactly: the same divisor as the masked mean's.
    st.den = scalar_like(static_cast<double>(st.m.numel()), st.m);
    return st;
  }
  if (st.m.numel() > 0) {
    // check_value rather than item(): the checks stay in a compiled training step.
    check_value(all(isfinite(st.m)), [name](double finite) {
      return finite != 0.0 ? std::string() : detail::cat("the ", name, " has a NaN or infinite entry");
    });
    check_value(min(st.m), [name](double lowest) {
      return lowest >= 0.0 ? std::string()
                           : detail::cat("the ", name, " must be >= 0 (1 for a real step, 0 for padding), got ", lowest);
    });
  }
  st.valid = ne(st.m, scalar_like(0.0, st.m));
  st.den = sum(st.m);
  st.none = eq(st.den, scalar_like(0.0, st.den));
  return st;
}

// `valid` viewed as S + [1, ..., 1], broadcastable against x of shape S + [...].
Tensor valid_for(const Tensor& x, const Steps& st) {
  Shape s = st.shape;
  while (s.rank() < x.rank()) s.push_back(1);
  return st.valid.reshape(s);
}

// x with every entry of a padding step replaced by 0, so that NaN, inf or out-of-range garbage
// there reaches neither the value (0 * inf = NaN) nor the gradient (where sends the
// unpicked branch exactly 0).
Tensor zero_padding(const Tensor& x, const Steps& st) {
  if (st.all_real) return x;
  return where(valid_for(x, st), x, scalar_like(Scalar(0), x));
}

void require_float(const Tensor& x, const char* name) {
  CTRAX_REQUIRE(x.defined(), name, " are undefined");
  CTRAX_REQUIRE(is_floating(x.dtype()), name, " have dtype ", x.dtype(), ", expected float32 or float64");
}

// A per-step input: exactly the mask's shape.
void check_steps(const Tensor& x, const char* name, const Steps& st) {
  CTRAX_REQUIRE(x.defined(), name, " are undefined");
  CTRAX_REQUIRE(x.shape() == st.shape, name, " of shape ", x.shape(), " do not match the ", st.mask_name, " of shape ",
                st.shape,
                ": expected ", name, " of shape ", st.shape, " (one per step)");
}

// Per-step float data (advantages, returns, ...): checked, cast to the batch's dtype, zeroed at
// padding, and constant.
Tensor step_data(const Tensor& x, const char* name, const Steps& st) {
  require_float(x, name);
  check_steps(x, name, st);
  NoGradScope no_grad;
  return zero_padding(x.dtype() == st.dtype ? stop_gradient(x) : x.to(st.dtype), st);
}

// Distribution inputs: S + [D], D = dist->n_inputs() (any D >= 1 without a distribution).
void check_dist_inputs(const Tensor& x, const char* name, const Distribution* dist, const Steps& st) {
  require_float(x, name);
  const bool lead_ok = x.rank() == st.shape.rank() + 1 &&
                       std::equal(st.shape.begin(), st.shape.end(), x.shape().begin());
  if (dist != nullptr) {
    const Shape expected = concat_shapes(st.shape, Shape{dist->n_inputs()});
    CTRAX_REQUIRE(lead_ok && x.shape() == expected, name, " of shape ", x.shape(), " do not match: expected ",
                  expected, ", the mask's shape ", st.shape, " followed by D = n_inputs = ", dist->n_inputs(),
                  " of ", dist->name());
  } else {
    CTRAX_REQUIRE(lead_ok, name, " of shape ", x.shape(), " do not match the ", st.mask_name, " of shape ", st.shape,
                  ": expected the mask's shape followed by one axis of distribution inputs");
  }
}

// Actions: S + the event shape (with a distribution), or at least S's axes in front.
void check_actions(const Tensor& a, const Distribution* dist, const Steps& st) {
  CTRAX_REQUIRE(a.defined(), "actions are undefined");
  if (dist != nullptr) {
    const Shape expected = concat_shapes(st.shape, dist->event_shape());
    CTRAX_REQUIRE(a.shape() == expected, "actions of shape ", a.shape(), " do not match: expected ", expected,
                  ", the mask's shape ", st.shape, " followed by the event shape ", dist->event_shape(), " of ",
                  dist->name());
  } else {
    const bool ok = a.rank() >= st.shape.rank() && std::equal(st.shape.begin(), st.shape.end(), a.shape().begin());
    CTRAX_REQUIRE(ok, "actions of shape ", a.shape(), " do not match the ", st.mask_name, " of shape ", st.shape,
                  ": expected the mask's shape followed by the event shape");
  }
}

// The model's distribution inputs (or values), zeroed at padding, still traced: the gradient to
// a padding entry is exactly 0.
Tensor traced(const Tensor& x, const Steps& st) { return zero_padding(x, st); }

Tensor constant_actions(const Tensor& a, const Steps& st) {
  NoGradScope no_grad;
  return zero_padding(a, st);
}

// ---- Masked statistics --------------------------------------------------------------------------

// mean_m(x) = sum(x m) / sum(m), or 0 with a zero gradient when sum(m) == 0: `where` sends no
// gradient to the branch it does not pick, and the division is by 1 there, so nothing is NaN.
// Without padding it is sum(x) / n: x m = x and sum(m) = n exactly, so the same value and, through
// the same division, the same gradient.
Tensor masked_mean(const Tensor& x, const Steps& st) {
  if (st.all_real) {
    const Tensor num = sum(x);
    return st.m.numel() == 0 ? zeros_like(num) : div(num, st.den);
  }
  const Tensor num = sum(mul(x, st.m));
  return where(st.none, zeros_like(num), div(num, where(st.none, ones_like(st.den), st.den)));
}

// Var_m(x) = mean_m((x - mean_m(x))^2), the population variance (as jnp.var).
Tensor masked_var(const Tensor& x, const Steps& st) { return masked_mean(square(sub(x, masked_mean(x, st))), st); }

// ---- The two batch layouts ----------------------------------------------------------------------

// (dist_inputs, actions, advantages, old_dist_inputs, mask). dist may be null for the layers
// that do not score actions (then D and the event shape are not checked).
struct PolicyBatch {
  Steps st;
  Tensor dist_inputs;      // traced
  Tensor actions;          // constant
  Tensor advantages;       // constant
  Tensor old_dist_inputs;  // constant
};

PolicyBatch policy_batch(const Stack& in, const Distribution* dist, BatchPadding padding) {
  require_float(in[0], "dist_inputs");
  PolicyBatch b;
  b.st = read_mask(in[4], in[0].dtype(), "mask", padding);
  check_dist_inputs(in[0], "dist_inputs", dist, b.st);
  check_actions(in[1], dist, b.st);
  b.advantages = step_data(in[2], "advantages", b.st);
  check_dist_inputs(in[3], "old_dist_inputs", dist, b.st);
  CTRAX_REQUIRE(in[3].shape() == in[0].shape(), "old_dist_inputs of shape ", in[3].shape(),
                " do not match dist_inputs of shape ", in[0].shape());
  b.dist_inputs = traced(in[0], b.st);
  b.actions = constant_actions(in[1], b.st);
  NoGradScope no_grad;
  b.old_dist_inputs = zero_padding(in[3].dtype() == b.st.dtype ? stop_gradient(in[3]) : in[3].to(b.st.dtype), b.st);
  return b;
}

// (dist_inputs, values, returns, dones, rewards, actions, old_log_probs, mask).
struct JointBatch {
  Steps st;
  Tensor dist_inputs;    // traced
  Tensor values;         // traced
  Tensor returns;        // constant
  Tensor dones;          // bool, constant (false at padding)
  Tensor rewards;        // constant
  Tensor actions;        // constant
  Tensor old_log_probs;  // constant
};

JointBatch joint_batch(const Stack& in, const Distribution* dist) {
  require_float(in[0], "dist_inputs");
  JointBatch b;
  b.st = read_mask(in[7], in[0].dtype());
  check_dist_inputs(in[0], "dist_inputs", dist, b.st);
  require_float(in[1], "values");
  check_steps(in[1], "values", b.st);
  // Both come out of one model; mixing dtypes would silently promote the loss.
  CTRAX_REQUIRE(in[1].dtype() == in[0].dtype(), "values have dtype ", in[1].dtype(), " but dist_inputs have ",
                in[0].dtype(), "; expected the same dtype (the two heads of one model)");
  b.returns = step_data(in[2], "returns", b.st);
  check_steps(in[3], "dones", b.st);
  b.rewards = step_data(in[4], "rewards", b.st);
  check_actions(in[5], dist, b.st);
  b.old_log_probs = step_data(in[6], "old_log_probs", b.st);
  b.dist_inputs = traced(in[0], b.st);
  b.values = traced(in[1], b.st);
  b.actions = constant_actions(in[5], b.st);
  NoGradScope no_grad;
  const Tensor d = in[3].dtype() == DType::boolean ? in[3] : ne(in[3], scalar_like(Scalar(0), in[3]));
  b.dones = b.st.all_real ? d : logical_and(d, b.st.valid);
  return b;
}

// Trax's one-step advantage A = where(d, r, R) - where(d, 0, V) (at a done step the return is
// the reward and there is no bootstrap), optionally normalised to zero mean and unit variance
// over the real steps. A constant: the policy term never moves V.
Tensor joint_advantage(const JointBatch& b, bool normalize) {
  NoGradScope no_grad;
  const Tensor v = stop_gradient(b.values);
  Tensor a = sub(where(b.dones, b.rewards, b.returns), where(b.dones, zeros_like(v), v));
  if (normalize) {
    const Tensor mu = masked_mean(a, b.st);
    const Tensor sd = sqrt(masked_var(a, b.st));
    a = div(sub(a, mu), add(sd, 1e-8));
    a = zero_padding(a, b.st);  // -mu / sd at padding is harmless under the mask; 0 is tidier
  }
  return a;
}

// ---- The loss terms ---------------------------------------------------------------------------

// The PPO surrogate min(rho A, clip(rho, 1 - eps, 1 + eps) A): the pessimistic one of the
// unclipped and clipped objectives, so moving rho beyond 1 +- eps in A's favour earns nothing
// (and has zero gradient), while moves against A are always paid in full.
Tensor ppo_objective(const Tensor& logp, const Tensor& old_logp, const Tensor& a, double eps) {
  const Tensor rho = exp(sub(logp, old_logp));
  return minimum(mul(rho, a), mul(clip(rho, 1.0 - eps, 1.0 + eps), a));
}

// AWR's weights min(exp(A / beta), w_max), constants (exp overflowing to inf is clipped).
Tensor awr_weights(const Tensor& a, double beta, double w_max) {
  NoGradScope no_grad;
  return minimum(exp(div(a, beta)), w_max);
}

// -c mean_m(H); nothing to compute (and an exact 0) when c == 0.
Tensor entropy_term(const Distribution& dist, const Tensor& dist_inputs, const Steps& st, double c, Tensor loss) {
  if (c == 0.0) return loss;
  return sub(loss, mul(masked_mean(dist.entropy(dist_inputs), st), c));
}

Tensor value_term(const JointBatch& b, double c, Tensor loss) {
  if (c == 0.0) return loss;
  return add(loss, mul(masked_mean(square(sub(b.returns, b.values)), b.st), c));
}

Tensor old_log_prob(const Distribution& dist, const PolicyBatch& b) {
  NoGradScope no_grad;
  return dist.log_prob(b.old_dist_inputs, b.actions);
}

// The mode averaged over the event's elements: [S]. A Gaussian's mode is its mean, read
// directly (its samples are float32, which would round float64 inputs); any other
// distribution's is its sample at temperature 0 (the argmax for a Categorical).
Tensor mode_per_step(const Distribution& dist, const Tensor& dist_inputs, DType dtype) {
  const auto* gaussian = dynamic_cast<const Gaussian*>(&dist);
  Tensor mode = gaussian != nullptr ? gaussian->mean_and_std(dist_inputs).first.to(dtype)
                                    : dist.sample(dist_inputs, Key(), 0.0).to(dtype);
  const int event_rank = dist.event_shape().rank();
  if (event_rank == 0) return mode;
  std::vector<int> axes;
  for (int i = 1; i <= event_rank; ++i) axes.push_back(-i);
  return mean(mode, axes);
}

// 1 - Var_m(R - V) / Var_m(R), in float64; 0 where Var_m(R) <= 1e-12 mean_m(R^2), i.e. R
// constant up to rounding (a constant summed in floating point rarely gives back a mean that
// is exactly the constant, so testing Var == 0 alone would divide rounding noise), or no real
// step.
Tensor explained_variance(const Tensor& values, const Tensor& returns, const Steps& st32) {
  NoGradScope no_grad;
  Steps st = st32;
  st.m = st.m.to(DType::float64);
  st.den = sum(st.m);
  st.none = eq(st.den, scalar_like(0.0, st.den));
  const Tensor r = returns.to(DType::float64), v = values.to(DType::float64);
  const Tensor var_r = masked_var(r, st);
  const Tensor var_d = masked_var(sub(r, v), st);
  const Tensor flat = le(var_r, mul(masked_mean(square(r), st), 1e-12));
  const Tensor ev = where(flat, zeros_like(var_r), sub(1.0, div(var_d, where(flat, ones_like(var_r), var_r))));
  return ev.to(st32.dtype);
}

using PolicyFn = std::function<Tensor(const PolicyBatch&)>;
using JointFn = std::function<Tensor(const JointBatch&)>;

// A layer over the 5-input policy batch; `metric` computes without recording.
LayerPtr policy_layer(const char* name, DistributionPtr dist, PolicyFn f, bool metric,
                      BatchPadding padding = BatchPadding::masked) {
  check_padding(name, padding);
  return Fn(name, StackFn([dist = std::move(dist), f = std::move(f), metric, padding](const Stack& in) {
              const PolicyBatch b = policy_batch(in, dist.get(), padding);
              if (!metric) return Stack{f(b)};
              NoGradScope no_grad;
              return Stack{f(b)};
            }),
            5, 1);
}

LayerPtr joint_layer(const char* name, DistributionPtr dist, JointFn f, bool metric) {
  return Fn(name, StackFn([dist = std::move(dist), f = std::move(f), metric](const Stack& in) {
              const JointBatch b = joint_batch(in, dist.get());
              if (!metric) return Stack{f(b)};
              NoGradScope no_grad;
              return Stack{f(b)};
            }),
            8, 1);
}

}  // namespace

// ---- Separate policy losses ---------------------------------------------------------------------

LayerPtr A2CLoss(DistributionPtr dist, double entropy_coeff, BatchPadding padding) {
  dist = checked(std::move(dist), "A2CLoss");
  check_coefficient("A2CLoss", "entropy_coeff", entropy_coeff);
  const Distribution* d = dist.get();
  return policy_layer("A2CLoss", dist, [d, c = entropy_coeff](const PolicyBatch& b) {
    const Tensor logp = d->log_prob(b.dist_inputs, b.actions);
    return entropy_term(*d, b.dist_inputs, b.st, c, neg(masked_mean(mul(logp, b.advantages), b.st)));
  }, false, padding);
}

LayerPtr PPOLoss(DistributionPtr dist, double epsilon, double entropy_coeff, BatchPadding padding) {
  check_epsilon("PPOLoss", epsilon);
  return PPOLoss(std::move(dist), std::make_shared<const double>(epsilon), entropy_coeff, padding);
}

LayerPtr PPOLoss(DistributionPtr dist, std::shared_ptr<const double> epsilon, double entropy_coeff,
                 BatchPadding padding) {
  dist = checked(std::move(dist), "PPOLoss");
  CTRAX_REQUIRE(epsilon != nullptr, "PPOLoss: the epsilon handle is null");
  check_epsilon("PPOLoss", *epsilon);
  check_coefficient("PPOLoss", "entropy_coeff", entropy_coeff);
  const Distribution* d = dist.get();
  return policy_layer("PPOLoss", dist, [d, eps = std::move(epsilon), c = entropy_coeff](const PolicyBatch& b) {
    check_epsilon("PPOLoss", *eps);
    depend_on_value(eps);  // annealed between epochs: a compiled step is recorded again
    const Tensor logp = d->log_prob(b.dist_inputs, b.actions);
    const Tensor obj = ppo_objective(logp, old_log_prob(*d, b), b.advantages, *eps);
    return entropy_term(*d, b.dist_inputs, b.st, c, neg(masked_mean(obj, b.st)));
  }, false, padding);
}

LayerPtr AWRLoss(DistributionPtr dist, double beta, double w_max, double entropy_coeff, BatchPadding padding) {
  dist = checked(std::move(dist), "AWRLoss");
  check_awr("AWRLoss", beta, w_max);
  check_coefficient("AWRLoss", "entropy_coeff", entropy_coeff);
  const Distribution* d = dist.get();
  return policy_layer("AWRLoss", dist, [d, beta, w_max, c = entropy_coeff](const PolicyBatch& b) {
    const Tensor logp = d->log_prob(b.dist_inputs, b.actions);
    const Tensor w = awr_weights(b.advantages, beta, w_max);
    return entropy_term(*d, b.dist_inputs, b.st, c, neg(masked_mean(mul(logp, w), b.st)));
  }, false, padding);
}

// ---- Joint losses -------------------------------------------------------------------------------

LayerPtr PPOJointLoss(DistributionPtr dist, double epsilon, double value_loss_coeff, double entropy_coeff,
                      bool normalize_advantages) {
  dist = checked(std::move(dist), "PPOJointLoss");
  check_epsilon("PPOJointLoss", epsilon);
  check_coefficient("PPOJointLoss", "value_loss_coeff", value_loss_coeff);
  check_coefficient("PPOJointLoss", "entropy_coeff", entropy_coeff);
  const Distribution* d = dist.get();
  return joint_layer("PPOJointLoss", dist,
                     [d, eps = epsilon, cv = value_loss_coeff, ce = entropy_coeff,
                      norm = normalize_advantages](const JointBatch& b) {
    const Tensor a = joint_advantage(b, norm);
    const Tensor logp = d->log_prob(b.dist_inputs, b.actions);
    Tensor loss = neg(masked_mean(ppo_objective(logp, b.old_log_probs, a, eps), b.st));
    loss = value_term(b, cv, loss);
    return entropy_term(*d, b.dist_inputs, b.st, ce, loss);
  }, false);
}

LayerPtr A2CJointLoss(DistributionPtr dist, double value_loss_coeff, double entropy_coeff,
                      bool normalize_advantages) {
  dist = checked(std::move(dist), "A2CJointLoss");
  check_coefficient("A2CJointLoss", "value_loss_coeff", value_loss_coeff);
  check_coefficient("A2CJointLoss", "entropy_coeff", entropy_coeff);
  const Distribution* d = dist.get();
  return joint_layer("A2CJointLoss", dist,
                     [d, cv = value_loss_coeff, ce = entropy_coeff, norm = normalize_advantages](const JointBatch& b) {
    const Tensor a = joint_advantage(b, norm);
    const Tensor logp = d->log_prob(b.dist_inputs, b.actions);
    Tensor loss = neg(masked_mean(mul(logp, a), b.st));
    loss = value_term(b, cv, loss);
    return entropy_term(*d, b.dist_inputs, b.st, ce, loss);
  }, false);
}

LayerPtr AWRJointLoss(DistributionPtr dist, double beta, double w_max, double value_loss_coeff,
                      double entropy_coeff, bool normalize_advantages) {
  dist = checked(std::move(dist), "AWRJointLoss");
  check_awr("AWRJointLoss", beta, w_max);
  check_coefficient("AWRJointLoss", "value_loss_coeff", value_loss_coeff);
  check_coefficient("AWRJointLoss", "entropy_coeff", entropy_coeff);
  const Distribution* d = dist.get();
  return joint_layer("AWRJointLoss", dist,
                     [d, beta, w_max, cv = value_loss_coeff, ce = entropy_coeff,
                      norm = normalize_advantages](const JointBatch& b) {
    const Tensor w = awr_weights(joint_advantage(b, norm), beta, w_max);
    const Tensor logp = d->log_prob(b.dist_inputs, b.actions);
    Tensor loss = neg(masked_mean(mul(logp, w), b.st));
    loss = value_term(b, cv, loss);
    return entropy_term(*d, b.dist_inputs, b.st, ce, loss);
  }, false);
}

// ---- Metrics on the policy batch ----------------------------------------------------------------

LayerPtr PolicyEntropy(DistributionPtr dist) {
  dist = checked(std::move(dist), "PolicyEntropy");
  const Distribution* d = dist.get();
  return policy_layer("PolicyEntropy", dist, [d](const PolicyBatch& b) {
    return masked_mean(d->entropy(b.dist_inputs), b.st);
  }, true);
}

LayerPtr ApproximateKL(DistributionPtr dist) {
  dist = checked(std::move(dist), "ApproximateKL");
  const Distribution* d = dist.get();
  return policy_layer("ApproximateKL", dist, [d](const PolicyBatch& b) {
    const Tensor delta = sub(d->log_prob(b.dist_inputs, b.actions), old_log_prob(*d, b));
    return mul(masked_mean(square(delta), b.st), 0.5);
  }, true);
}

LayerPtr ClipFraction(DistributionPtr dist, double epsilon) {
  check_epsilon("ClipFraction", epsilon);
  return ClipFraction(std::move(dist), std::make_shared<const double>(epsilon));
}

LayerPtr ClipFraction(DistributionPtr dist, std::shared_ptr<const double> epsilon) {
  dist = checked(std::move(dist), "ClipFraction");
  CTRAX_REQUIRE(epsilon != nullptr, "ClipFraction: the epsilon handle is null");
  check_epsilon("ClipFraction", *epsilon);
  const Distribution* d = dist.get();
  return policy_layer("ClipFraction", dist, [d, epsilon = std::move(epsilon)](const PolicyBatch& b) {
    depend_on_value(epsilon);
    const Tensor rho = exp(sub(d->log_prob(b.dist_inputs, b.actions), old_log_prob(*d, b)));
    const Tensor clipped = gt(abs(sub(rho, 1.0)), scalar_like(*epsilon, rho)).to(b.st.dtype);
    return masked_mean(clipped, b.st);
  }, true);
}

LayerPtr LogProbMean(DistributionPtr dist) {
  dist = checked(std::move(dist), "LogProbMean");
  const Distribution* d = dist.get();
  return policy_layer("LogProbMean", dist, [d](const PolicyBatch& b) {
    return masked_mean(d->log_prob(b.dist_inputs, b.actions), b.st);
  }, true);
}

LayerPtr AdvantageMean() {
  return policy_layer("AdvantageMean", nullptr, [](const PolicyBatch& b) {
    return masked_mean(b.advantages, b.st);
  }, true);
}

LayerPtr AdvantageNorm() {
  return policy_layer("AdvantageNorm", nullptr, [](const PolicyBatch& b) {
    return sqrt(masked_mean(square(b.advantages), b.st));
  }, true);
}

LayerPtr PreferredMove(DistributionPtr dist) {
  dist = checked(std::move(dist), "PreferredMove");
  const Distribution* d = dist.get();
  return policy_layer("PreferredMove", dist, [d](const PolicyBatch& b) {
    return masked_mean(mode_per_step(*d, b.dist_inputs, b.st.dtype), b.st);
  }, true);
}

// ---- Metrics on the joint batch -----------------------------------------------------------------

LayerPtr JointEntropy(DistributionPtr dist) {
  dist = checked(std::move(dist), "JointEntropy");
  const Distribution* d = dist.get();
  return joint_layer("JointEntropy", dist, [d](const JointBatch& b) {
    return masked_mean(d->entropy(b.dist_inputs), b.st);
  }, true);
}

LayerPtr JointApproximateKL(DistributionPtr dist) {
  dist = checked(std::move(dist), "JointApproximateKL");
  const Distribution* d = dist.get();
  return joint_layer("JointApproximateKL", dist, [d](const JointBatch& b) {
    const Tensor delta = sub(d->log_prob(b.dist_inputs, b.actions), b.old_log_probs);
    return mul(masked_mean(square(delta), b.st), 0.5);
  }, true);
}

LayerPtr JointClipFraction(DistributionPtr dist, double epsilon) {
  dist = checked(std::move(dist), "JointClipFraction");
  check_epsilon("JointClipFraction", epsilon);
  const Distribution* d = dist.get();
  return joint_layer("JointClipFraction", dist, [d, epsilon](const JointBatch& b) {
    const Tensor rho = exp(sub(d->log_prob(b.dist_inputs, b.actions), b.old_log_probs));
    const Tensor clipped = gt(abs(sub(rho, 1.0)), scalar_like(epsilon, rho)).to(b.st.dtype);
    return masked_mean(clipped, b.st);
  }, true);
}

LayerPtr JointLogProbMean(DistributionPtr dist) {
  dist = checked(std::move(dist), "JointLogProbMean");
  const Distribution* d = dist.get();
  return joint_layer("JointLogProbMean", dist, [d](const JointBatch& b) {
    return masked_mean(d->log_prob(b.dist_inputs, b.actions), b.st);
  }, true);
}

LayerPtr JointAdvantageMean() {
  return joint_layer("JointAdvantageMean", nullptr, [](const JointBatch& b) {
    return masked_mean(joint_advantage(b, false), b.st);
  }, true);
}

LayerPtr JointAdvantageNorm() {
  return joint_layer("JointAdvantageNorm", nullptr, [](const JointBatch& b) {
    return sqrt(masked_mean(square(joint_advantage(b, false)), b.st));
  }, true);
}

LayerPtr JointPreferredMove(DistributionPtr dist) {
  dist = checked(std::move(dist), "JointPreferredMove");
  const Distribution* d = dist.get();
  return joint_layer("JointPreferredMove", dist, [d](const JointBatch& b) {
    return masked_mean(mode_per_step(*d, b.dist_inputs, b.st.dtype), b.st);
  }, true);
}

LayerPtr JointValueLoss() {
  return joint_layer("JointValueLoss", nullptr, [](const JointBatch& b) {
    return masked_mean(square(sub(b.returns, b.values)), b.st);
  }, true);
}

LayerPtr ExplainedVariance() {
  return joint_layer("ExplainedVariance", nullptr, [](const JointBatch& b) {
    return explained_variance(b.values, b.returns, b.st);
  }, true);
}

// ---- Metric on the value batch ------------------------------------------------------------------

namespace {

// (values, targets, mask[, inputs it ignores]) -> the explained variance of the targets.
LayerPtr value_explained_variance(const char* name, const char* mask_name, int n_in) {
  return Fn(name, StackFn([mask_name](const Stack& in) {
              require_float(in[0], "values");
              const Steps st = read_mask(in[2], in[0].dtype(), mask_name);
              check_steps(in[0], "values", st);
              const Tensor targets = step_data(in[1], "targets", st);
              NoGradScope no_grad;
              return Stack{explained_variance(zero_padding(in[0], st), targets, st)};
            }),
            n_in, 1);
}

}  // namespace

LayerPtr ValueExplainedVariance() { return value_explained_variance("ValueExplainedVariance", "weights", 3); }

// ---- The value loss of rollout passes -----------------------------------------------------------

LayerPtr RolloutValueLoss(std::optional<double> value_clip, BatchPadding padding) {
  CTRAX_REQUIRE(!value_clip || (std::isfinite(*value_clip) && *value_clip > 0),
                "RolloutValueLoss: the clip must be > 0, got ", value_clip.value_or(0.0));
  check_padding("RolloutValueLoss", padding);
  return Fn("RolloutValueLoss", StackFn([value_clip, padding](const Stack& in) {
              require_float(in[0], "values");
              const Steps st = read_mask(in[2], in[0].dtype(), "mask", padding);
              check_steps(in[0], "values", st);
              const Tensor targets = step_data(in[1], "targets", st);
              const Tensor v = traced(in[0], st);
              Tensor loss = square(sub(v, targets));
              if (value_clip) {
                const Tensor old = step_data(in[3], "old values", st);
                const Tensor clipped = add(old, clip(sub(v, old), -*value_clip, *value_clip));
                loss = maximum(loss, square(sub(clipped, targets)));
              }
              return Stack{masked_mean(loss, st)};
            }),
            4, 1);
}

LayerPtr RolloutValueExplainedVariance() {
  return value_explained_variance("RolloutValueExplainedVariance", "mask", 4);
}

}  // namespace ctrax
