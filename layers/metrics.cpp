// Losses and metrics (see metrics.h).
#include "../tensor/compile.h"
#include "metrics.h"

#include "../autograd/tape.h"
#include "../base/error.h"
#include "../tensor/ops.h"
#include "combinators.h"

namespace ctrax {

namespace {

// Errors thrown here are prefixed with the layer's path by the pass (layer.cpp).

void require_float(const Tensor& t, const char* what) {
  CTRAX_REQUIRE(is_floating(t.dtype()), what, " have dtype ", t.dtype(), ", expected float32 or float64");
}

void check_label_smoothing(const char* layer, double eps) {
  CTRAX_REQUIRE(eps >= 0.0 && eps <= 1.0, layer, ": label_smoothing must be in [0, 1], got ", eps);
}

// Class scores [..., N] and int targets [...] with ids in [0, N).
void check_class_inputs(const Tensor& scores, const char* scores_name, const Tensor& targets) {
  require_float(scores, scores_name);
  CTRAX_REQUIRE(scores.rank() >= 1, scores_name, " are a rank-0 tensor; expected shape [..., N] with N classes");
  const int64_t n = scores.shape().back();
  CTRAX_REQUIRE(n >= 1, scores_name, " have 0 classes (shape ", scores.shape(), ")");
  CTRAX_REQUIRE(is_integer(targets.dtype()), "targets have dtype ", targets.dtype(),
                ", expected int32 or int64 class ids");
  Shape lead = scores.shape();
  lead.erase(lead.rank() - 1);
  CTRAX_REQUIRE(targets.shape() == lead, "targets of shape ", targets.shape(), " do not match ", scores_name,
                " of shape ", scores.shape(), ": expected targets of shape ", lead);
  if (targets.numel() == 0) return;
  // check_value rather than item(): the checks stay in a compiled training step.
  check_value(min(targets), [n](double lo) {
    return lo >= 0 ? std::string() : detail::cat("target ids must be in [0, ", n, "), got ", static_cast<int64_t>(lo));
  });
  check_value(max(targets), [n](double hi) {
    return hi < static_cast<double>(n) ? std::string()
                                       : detail::cat("target ids must be in [0, ", n, "), got ", static_cast<int64_t>(hi));
  });
}

// Model output and targets of the same shape (regression, binary targets); targets of another
// dtype are cast to the output's.
Tensor check_same_shape(const Tensor& y, const Tensor& t, const char* y_name) {
  require_float(y, y_name);
  CTRAX_REQUIRE(t.shape() == y.shape(), "targets of shape ", t.shape(), " do not match ", y_name, " of shape ",
                y.shape());
  return t.dtype() == y.dtype() ? t : t.to(y.dtype());
}

// Weights broadcast to the per-example loss's shape (never enlarging it), cast to a float
// dtype, checked >= 0.
Tensor prepare_weights(const Tensor& w, const Tensor& loss, bool nonnegative = true) {
  const Shape& s = loss.shape();
  bool ok = w.rank() <= s.rank();
  for (int i = 1; ok && i <= w.rank(); ++i) {
    const int64_t d = w.shape()[w.rank() - i];
    ok = d == 1 || d == s[s.rank() - i];
  }
  CTRAX_REQUIRE(ok, "weights of shape ", w.shape(), " do not broadcast to the per-example loss of shape ", s);
  const Tensor wf = is_floating(w.dtype()) ? w : w.to(loss.dtype());
  if (nonnegative && wf.numel() > 0) {
    NoGradScope no_grad;
    check_value(min(wf), [](double lowest) {
      return lowest >= 0.0 ? std::string() : detail::cat("weights must be >= 0, got ", lowest);
    });
  }
  return wf.expand(s);
}

// sum(loss w) / sum(w), or 0 (with a zero gradient) when sum(w) == 0: `where` sends no gradient
// to the branch it does not pick, and the division is by 1 there, so nothing is NaN.
Tensor weighted_mean(const Tensor& loss, const Tensor& weights) {
  const Tensor w = prepare_weights(weights, loss);
  const Tensor num = sum(mul(loss, w));
  const Tensor den = sum(w);
  const Tensor none = eq(den, scalar_like(0.0, den));
  return where(none, zeros_like(num), div(num, where(none, ones_like(den), den)));
}

// The plain mean; 0 for an empty batch (see metrics.h), where mean() would throw.
Tensor plain_mean(const Tensor& loss) { return loss.numel() == 0 ? sum(loss) : mean(loss); }

// x[..., target]: the score of each example's target class.
Tensor pick(const Tensor& scores, const Tensor& targets) {
  return take_along_axis(scores, targets.unsqueeze(-1), -1).squeeze(-1);
}

// Per-example CE = -sum_j p_j lp_j with p = (1 - eps) onehot + eps / N and lp = log_softmax:
// -(1 - eps) lp[target] - (eps / N) sum_j lp_j. Picking the target's entry instead of
// multiplying by a one-hot row keeps it exact and never forms 0 * (-inf).
Tensor category_cross_entropy(const Tensor& logits, const Tensor& targets, double eps) {
  check_class_inputs(logits, "logits", targets);
  const Tensor lp = log_softmax(logits, -1);
  const Tensor picked = pick(lp, targets);
  if (eps == 0.0) return neg(picked);
  const double n = static_cast<double>(logits.shape().back());
  return neg(add(mul(picked, 1.0 - eps), mul(sum(lp, {-1}), eps / n)));
}

// softplus(z) - z t: log(1 + e^z) - z t = -t log sigmoid(z) - (1 - t) log(1 - sigmoid(z)).
// softplus is max(z, 0) + log1p(exp(-|z|)) inside, and its gradient sigmoid(z) is exact at
// z = 0, where the max and |.| pieces taken separately have kinks.
Tensor binary_cross_entropy(const Tensor& z, const Tensor& targets) {
  const Tensor t = check_same_shape(z, targets, "logits");
  return sub(softplus(z), mul(z, t));
}

// Argmax hits as the logits' float dtype; a constant (nothing to differentiate).
Tensor hits(const Tensor& logits, const Tensor& targets) {
  check_class_inputs(logits, "logits", targets);
  NoGradScope no_grad;
  return eq(argmax(logits, -1), targets.to(DType::int64)).to(logits.dtype());
}

}  // namespace

LayerPtr CategoryCrossEntropy(double label_smoothing) {
  check_label_smoothing("CategoryCrossEntropy", label_smoothing);
  return Fn("CategoryCrossEntropy", [eps = label_smoothing](const Stack& in) {
    return Stack{plain_mean(category_cross_entropy(in[0], in[1], eps))};
  }, 2, 1);
}

LayerPtr WeightedCategoryCrossEntropy(double label_smoothing, double cutoff) {
  check_label_smoothing("WeightedCategoryCrossEntropy", label_smoothing);
  CTRAX_REQUIRE(cutoff >= 0.0, "WeightedCategoryCrossEntropy: cutoff must be >= 0, got ", cutoff);
  return Fn("WeightedCategoryCrossEntropy", [eps = label_smoothing, cutoff](const Stack& in) {
    Tensor ce = category_cross_entropy(in[0], in[1], eps);
    // max(CE, c) - c: elements whose loss is already below c give 0 and no gradient.
    if (cutoff > 0.0) ce = sub(maximum(ce, cutoff), cutoff);
    return Stack{weighted_mean(ce, in[2])};
  }, 3, 1);
}

LayerPtr CrossEntropyLoss() {
  return Fn("CrossEntropyLoss", [](const Stack& in) {
    check_class_inputs(in[0], "log-probs", in[1]);
    return Stack{weighted_mean(neg(pick(in[0], in[1])), in[2])};
  }, 3, 1);
}

LayerPtr L2Loss() {
  return Fn("L2Loss", [](const Stack& in) {
    const Tensor t = check_same_shape(in[0], in[1], "outputs");
    return Stack{weighted_mean(square(sub(in[0], t)), in[2])};
  }, 3, 1);
}

LayerPtr SmoothL1Loss() {
  return Fn("SmoothL1Loss", [](const Stack& in) {
    const Tensor d = sub(in[0], check_same_shape(in[0], in[1], "outputs"));
    // Huber, delta 1: quadratic inside |d| < 1, linear outside; value and slope match at |d| = 1.
    const Tensor huber = where(lt(abs(d), scalar_like(1.0, d)), mul(square(d), 0.5), sub(abs(d), 0.5));
    return Stack{weighted_mean(huber, in[2])};
  }, 3, 1);
}

LayerPtr BinaryCrossEntropy(bool weighted) {
  return Fn("BinaryCrossEntropy", [weighted](const Stack& in) {
    const Tensor bce = binary_cross_entropy(in[0], in[1]);
    return Stack{weighted ? weighted_mean(bce, in[2]) : plain_mean(bce)};
  }, weighted ? 3 : 2, 1);
}

LayerPtr Accuracy(bool weighted) {
  return Fn("Accuracy", [weighted](const Stack& in) {
    const Tensor h = hits(in[0], in[1]);
    NoGradScope no_grad;
    return Stack{weighted ? weighted_mean(h, in[2]) : plain_mean(h)};
  }, weighted ? 3 : 2, 1);
}

LayerPtr WeightedSum() {
  return Fn("WeightedSum", [](const Stack& in) {
    require_float(in[0], "inputs");
    // Any sign of weight is fine here: there is no division by sum(w).
    return Stack{sum(mul(in[0], prepare_weights(in[1], in[0], /*nonnegative=*/false)))};
  }, 2, 1);
}

Tensor mask_from_ids(const Tensor& targets, int64_t id_to_mask) {
  CTRAX_REQUIRE(targets.defined(), "mask_from_ids: targets are undefined");
  return ne(targets, scalar_like(Scalar(id_to_mask), targets)).to(DType::float32);
}

}  // namespace ctrax
