// Normalisation layers (see normalization.h).
#include "normalization.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <sstream>

#include "../autograd/tape.h"
#include "../base/error.h"
#include "../tensor/ops.h"
#include "../tensor/plan.h"
#include "../tensor/trace.h"

namespace ctrax {

namespace {

std::string shape_string(const Shape& s) {
  std::ostringstream out;
  out << s;
  return out.str();
}

// ---- LayerNorm -------------------------------------------------------------------------------

class LayerNormLayer final : public Layer {
 public:
  explicit LayerNormLayer(double epsilon) : Layer("LayerNorm", 1, 1), epsilon_(epsilon) {
    CTRAX_REQUIRE(std::isfinite(epsilon_) && epsilon_ >= 0.0, "LayerNorm: epsilon must be finite and >= 0, got ",
                  epsilon_);
  }

 protected:
  std::pair<Tree, Tree> init_weights_and_state(const Signature& input, Key, LayerPass&) override {
    const ShapeDtype& x = input[0];
    check_input(x.shape, x.dtype);
    Tree::Dict w;
    w["scale"] = ones(Shape{x.shape.back()}, x.dtype);
    w["bias"] = zeros(Shape{x.shape.back()}, x.dtype);
    return {Tree(std::move(w)), Tree()};
  }

  LayerResult forward(const Stack& inputs, const Tree& weights, const Tree& state, Key, Mode,
                      LayerPass&) const override {
    const Tensor& x = inputs[0];
    check_input(x.shape(), x.dtype());
    const Tensor& scale = weights["scale"].leaf();
    const Tensor& bias = weights["bias"].leaf();
    if (x.shape().back() != scale.numel())
      fail("input has last dimension " + std::to_string(x.shape().back()) + ", expected " +
           std::to_string(scale.numel()));
    // Two passes (mean, then the mean of squared deviations): no cancellation as in E[x^2] - E[x]^2.
    const Tensor mu = mean(x, {-1}, true);
    const Tensor centred = sub(x, mu);
    const Tensor s2 = mean(square(centred), {-1}, true);
    return {{add(mul(mul(centred, rsqrt(add(s2, epsilon_))), scale), bias)}, state};
  }

 private:
  void check_input(const Shape& shape, DType dtype) const {
    if (shape.rank() < 1) fail("input is a rank-0 tensor; LayerNorm needs a last axis of features");
    if (!is_floating(dtype)) fail(std::string("input dtype ") + dtype_name(dtype) + " is not a float dtype");
  }

  double epsilon_;
};

// ---- BatchNorm -------------------------------------------------------------------------------

class BatchNormLayer final : public Layer {
 public:
  BatchNormLayer(std::vector<int> axes, double epsilon, double momentum, bool center, bool scale)
      : Layer("BatchNorm", 1, 1), axes_(std::move(axes)), epsilon_(epsilon), momentum_(momentum), center_(center),
        scale_(scale) {
    CTRAX_REQUIRE(!axes_.empty(), "BatchNorm: axes must not be empty");
    CTRAX_REQUIRE(std::isfinite(epsilon_) && epsilon_ >= 0.0, "BatchNorm: epsilon must be finite and >= 0, got ",
                  epsilon_);
    CTRAX_REQUIRE(momentum_ >= 0.0 && momentum_ <= 1.0, "BatchNorm: momentum must be in [0, 1], got ", momentum_);
  }

 protected:
  std::pair<Tree, Tree> init_weights_and_state(const Signature& input, Key, LayerPass&) override {
    const ShapeDtype& x = input[0];
    if (!is_floating(x.dtype)) fail(std::string("input dtype ") + dtype_name(x.dtype) + " is not a float dtype");
    const std::vector<bool> reduced = reduced_axes(x.shape.rank());
    Shape param_shape, stats_shape;
    for (int i = 0; i < x.shape.rank(); ++i) {
      if (!reduced[i]) param_shape.push_back(x.shape[i]);
      stats_shape.push_back(reduced[i] ? 1 : x.shape[i]);
    }
    Tree::Dict w;
    if (scale_) w["scale"] = ones(param_shape, x.dtype);
    if (center_) w["bias"] = zeros(param_shape, x.dtype);
    Tree::Dict s;
    s["mean"] = zeros(stats_shape, x.dtype);
    s["var"] = ones(stats_shape, x.dtype);
    s["n_batches"] = zeros(Shape{}, DType::int64);
    return {Tree(std::move(w)), Tree(std::move(s))};
  }

  LayerResult forward(const Stack& inputs, const Tree& weights, const Tree& state, Key, Mode mode,
                      LayerPass&) const override {
    const Tensor& x = inputs[0];
    if (!is_floating(x.dtype())) fail(std::string("input dtype ") + dtype_name(x.dtype()) + " is not a float dtype");
    const Tensor& running_mean = state["mean"].leaf();
    const Tensor& running_var = state["var"].leaf();
    const std::vector<bool> reduced = reduced_axes(x.rank());
    Shape stats_shape;
    for (int i = 0; i < x.rank(); ++i) stats_shape.push_back(reduced[i] ? 1 : x.shape()[i]);
    if (stats_shape != running_mean.shape())
      fail("input has shape " + shape_string(x.shape()) + "; with the batch axes set to 1 it must match the " +
           "statistics' shape " + shape_string(running_mean.shape()));

    Tensor m, v;
    Tree new_state = state;
    if (mode == Mode::train) {
      // Batch statistics, differentiated through (the gradient of batch norm includes the dependence of m and
      // v on every element of the batch). Population variance in two passes: Trax's E[x^2] - E[x]^2 cancels
      // catastrophically when |mean| >> std and can come out negative, making sqrt(v + eps) NaN.
      m = mean(x, axes_, true);
      v = var(x, axes_, true);
      // Running statistics as Trax (an exponential moving average from mean 0, var 1, with no bias correction):
      //   running = momentum * running + (1 - momentum) * batch
      // The batch values enter as constants: state is never differentiated.
      NoGradScope no_grad;
      const Tensor bm = stop_gradient(m), bv = stop_gradient(v);
      new_state["mean"] = add(mul(running_mean, momentum_), mul(bm, 1.0 - momentum_)).to(running_mean.dtype());
      new_state["var"] = add(mul(running_var, momentum_), mul(bv, 1.0 - momentum_)).to(running_var.dtype());
      new_state["n_batches"] = add(state["n_batches"].leaf(), 1);
    } else {
      m = running_mean;
      v = running_var;
    }
    Tensor y = mul(sub(x, m), rsqrt(add(v, epsilon_)));
    // Weights have x's shape without the batch axes; viewed with size 1 there they broadcast against x.
    if (scale_) y = mul(y, weights["scale"].leaf().reshape(stats_shape));
    if (center_) y = add(y, weights["bias"].leaf().reshape(stats_shape));
    return {{y}, new_state};
  }

 private:
  // reduced[i]: whether axis i of a rank-`rank` input is a batch axis. Negative axes count from the end.
  std::vector<bool> reduced_axes(int rank) const {
    std::vector<bool> reduced(static_cast<size_t>(std::max(rank, 0)), false);
    for (int a : axes_) {
      const int axis = a < 0 ? a + rank : a;
      if (axis < 0 || axis >= rank)
        fail("axis " + std::to_string(a) + " is out of range for an input of rank " + std::to_string(rank));
      if (reduced[axis]) fail("axis " + std::to_string(a) + " is repeated in axes");
      reduced[axis] = true;
    }
    return reduced;
  }

  std::vector<int> axes_;
  double epsilon_;
  double momentum_;
  bool center_;
  bool scale_;
};

// ---- Normalize -------------------------------------------------------------------------------

class NormalizeLayer final : public Layer {
 public:
  explicit NormalizeLayer(NormalizeOptions options) : Layer("Normalize", 1, 1), options_(options) {
    CTRAX_REQUIRE(options_.sample_limit >= 0.0, "Normalize: sample_limit must be >= 0, got ", options_.sample_limit);
    CTRAX_REQUIRE(std::isfinite(options_.epsilon) && options_.epsilon >= 0.0,
                  "Normalize: epsilon must be finite and >= 0, got ", options_.epsilon);
    CTRAX_REQUIRE(options_.clip > 0.0, "Normalize: clip must be > 0, got ", options_.clip);
  }

  // Statistics move only in collect mode, and only while count < sample_limit; a count on a GPU
  // is not read (that would wait for the device), so there the answer is "may".
  bool may_change_state(const Tree& state, Mode mode) const override {
    if (mode != Mode::collect) return false;
    if (!std::isfinite(options_.sample_limit) || !state.is_dict() || !state.contains("count")) return true;
    const Tensor& count = state["count"].leaf();
    if (!count.device().is_cpu() || count.dtype() != DType::int64 || count.numel() != 1) return true;
    return static_cast<double>(*count.data<int64_t>()) < options_.sample_limit;
  }

 protected:
  std::pair<Tree, Tree> init_weights_and_state(const Signature& input, Key, LayerPass&) override {
    const ShapeDtype& x = input[0];
    check_input(x.shape, x.dtype);
    const Shape features = feature_shape(x.shape);
    // Before any observation: mean 0, var 1 (Trax), so the layer starts as (nearly) the identity.
    Tree::Dict s;
    s["mean"] = zeros(features, x.dtype);
    s["var"] = ones(features, x.dtype);
    s["count"] = zeros(Shape{}, DType::int64);
    return {Tree(), Tree(std::move(s))};
  }

  LayerResult forward(const Stack& inputs, const Tree&, const Tree& state, Key, Mode mode,
                      LayerPass&) const override {
    const Tensor& x = inputs[0];
    check_input(x.shape(), x.dtype());
    if (feature_shape(x.shape()) != state["mean"].leaf().shape())
      fail("input has shape " + shape_string(x.shape()) + ", expected [batch, time] followed by the features " +
           shape_string(state["mean"].leaf().shape()));
    Tree new_state = state;
    // Statistics move only while collecting experience: the model trained on that data, and the evaluations,
    // must see the same fixed transformation (Trax's rule).
    if (mode == Mode::collect) new_state = updated(state, x);
    const Tensor& m = new_state["mean"].leaf();
    const Tensor& v = new_state["var"].leaf();
    // On the CPU, for an input no tape follows (the observations in front of a model), one kernel;
    // else tensor ops (differentiable, any device, mixed dtypes). The same bits either way.
    if (x.device().is_cpu() && !detail::is_traced(x) && x.dtype() == m.dtype() && v.dtype() == m.dtype())
      return {{normalized_in_one_kernel(x, m, v)}, new_state};
    // As Trax: epsilon added to the standard deviation, not to the variance.
    Tensor y = div(sub(x, m), add(sqrt(v), options_.epsilon));
    if (std::isfinite(options_.clip)) y = clip(y, -options_.clip, options_.clip);
    return {{y}, new_state};
  }

 private:
  void check_input(const Shape& shape, DType dtype) const {
    if (!is_floating(dtype)) fail(std::string("input dtype ") + dtype_name(dtype) + " is not a float dtype");
    if (shape.rank() < 2)
      fail("input has rank " + std::to_string(shape.rank()) + "; Normalize needs [batch, time, ...]");
  }

  static Shape feature_shape(const Shape& s) {
    Shape f;
    for (int i = 2; i < s.rank(); ++i) f.push_back(s[i]);
    return f;
  }

  // The statistics after adding the new observations: the last time step of each batch row (in collect mode
  // the agent passes the trajectory so far, whose earlier steps were already counted), in batch order, while
  // count < sample_limit.
  //
  // Chan, Golub, LeVeque's parallel update merges the running statistics (n_a, mean_a, var_a) with those of
  // the k new observations (k, mean_b, var_b), variances being population variances (M2 / n):
  //   n = n_a + k,  delta = mean_b - mean_a,  mean = mean_a + delta * k / n,
  //   var = (n_a var_a + k var_b + delta^2 n_a k / n) / n.
  // It equals Welford's one-at-a-time update, which Trax runs per observation, but avoids its cancellation-
  // prone alternatives (sums of x and x^2). Computed in float64 and rounded to the state's dtype once.
  //
  // The count is never read on the host, so a compiled collection step (tensor/compile.h) can replay the
  // update: k = min(batch, ceil(sample_limit - n_a)) clipped at 0 is computed where the count is read, and
  // k = 0 keeps the old statistics. On the CPU the whole update is one kernel (a few dozen tensor ops on a
  // handful of numbers cost more in dispatch than in arithmetic); on a GPU it is made of tensor ops, the
  // rows past k masked out of both sums.
  Tree updated(const Tree& state, const Tensor& x) const {
    if (x.shape()[1] == 0) fail("input has no time steps; collect mode adds the last one to the statistics");
    NoGradScope no_grad;
    const Tensor obs = stop_gradient(x).select(1, x.shape()[1] - 1);  // [batch, features...]
    const Tensor& mean = state["mean"].leaf();
    const Tensor& var = state["var"].leaf();
    const Tensor& count = state["count"].leaf();
    Tree s = state;
    if (x.device().is_cpu()) {
      Moments m = update_in_one_kernel(count, mean, var, obs);
      s["mean"] = std::move(m.mean);
      s["var"] = std::move(m.var);
      s["count"] = std::move(m.count);
      return s;
    }
    Moments m = update_with_ops(count, mean.to(DType::float64), var.to(DType::float64), obs.to(DType::float64));
    s["mean"] = m.mean.to(mean.dtype());
    s["var"] = m.var.to(var.dtype());
    s["count"] = std::move(m.count);
    return s;
  }

  struct Moments {
    Tensor count, mean, var;
  };

  // n_a, mean_a, var_a (in the state's dtype) and the batch of new observations obs [batch, features...] (in
  // the input's) -> n, mean, var in the state's dtype, as one kernel. The arithmetic is float64: the inputs are
  // widened exactly and the results rounded once, as converting them before and after would (the kernel
  // saves those five conversions, each a kernel of its own per collection step).
  Moments update_in_one_kernel(const Tensor& count, const Tensor& mean_a, const Tensor& var_a, const Tensor& obs) const {
    const Tensor c = count.contiguous(), m = mean_a.contiguous(), v = var_a.contiguous(), o = obs.contiguous();
    CTRAX_CHECK(m.dtype() == v.dtype(), "Normalize: mean and var differ in dtype");
    const int64_t batch = o.shape()[0], features = m.numel();
    Moments out{Tensor(Shape{}, DType::int64), Tensor(m.shape(), m.dtype()), Tensor(v.shape(), v.dtype())};
    const double limit = options_.sample_limit;
    dispatch_floating(m.dtype(), [&](auto state_tag) {
      dispatch_floating(o.dtype(), [&](auto obs_tag) {
        using S = decltype(state_tag);
        using X = decltype(obs_tag);
        detail::KernelScope scope;
        detail::run_kernel([batch, features, limit, c_in = static_cast<const int64_t*>(c.raw_data()),
                            m_in = static_cast<const S*>(m.raw_data()), v_in = static_cast<const S*>(v.raw_data()),
                            x = static_cast<const X*>(o.raw_data()), c_out = static_cast<int64_t*>(out.count.raw_data()),
                            m_out = static_cast<S*>(out.mean.raw_data()), v_out = static_cast<S*>(out.var.raw_data())] {
          const double na = static_cast<double>(*c_in);
          const double room = std::isfinite(limit) ? std::ceil(limit - na) : static_cast<double>(batch);
          const int64_t k = room <= 0.0 ? 0 : room >= static_cast<double>(batch) ? batch : static_cast<int64_t>(room);
          *c_out = *c_in + k;
          const double kb = static_cast<double>(k), n = na + kb;
          for (int64_t j = 0; j < features; ++j) {
            if (k == 0) {
              m_out[j] = m_in[j];
              v_out[j] = v_in[j];
              continue;
            }
            double sum = 0.0;
            for (int64_t i = 0; i < k; ++i) sum += static_cast<double>(x[i * features + j]);
            const double mean_b = sum / kb;
            double squares = 0.0;
            for (int64_t i = 0; i < k; ++i) {
              const double d = static_cast<double>(x[i * features + j]) - mean_b;
              squares += d * d;
            }
            const double var_b = squares / kb;
            const double ma = static_cast<double>(m_in[j]), va = static_cast<double>(v_in[j]);
            const double delta = mean_b - ma;
            m_out[j] = static_cast<S>(ma + delta * (kb / n));
            v_out[j] = static_cast<S>(((va * na + var_b * kb) + (delta * delta) * ((na * kb) / n)) / n);
          }
        });
      });
    });
    return out;
  }

  // clip((x - mean) / (sqrt(var) + epsilon)) over x [batch, time, features...] with the statistics
  // [features...], all of one dtype: the float operations of the tensor-op form, in its order and
  // dtype (epsilon and the clip bounds converted to it as weak scalars are), so the same bits in
  // one pass instead of five kernels. The divisor sqrt(var) + epsilon is formed once per feature
  // (in blocks of kBlock features on the stack) rather than once per element: the same two float
  // operations, so the same bits, without a square root per element (a [256, 3] policy batch took
  // 1.8 us with one).
  Tensor normalized_in_one_kernel(const Tensor& x, const Tensor& mean, const Tensor& var) const {
    const Tensor xc = x.contiguous(), m = mean.contiguous(), v = var.contiguous();
    const int64_t features = m.numel(), rows = features == 0 ? 0 : xc.numel() / features;
    Tensor out(xc.shape(), xc.dtype());
    dispatch_floating(xc.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const bool clips = std::isfinite(options_.clip);
      const T eps = static_cast<T>(options_.epsilon), lo = static_cast<T>(-options_.clip),
              hi = static_cast<T>(options_.clip);
      detail::KernelScope scope;
      detail::run_kernel([rows, features, clips, eps, lo, hi, in = static_cast<const T*>(xc.raw_data()),
                          m_in = static_cast<const T*>(m.raw_data()), v_in = static_cast<const T*>(v.raw_data()),
                          o = static_cast<T*>(out.raw_data())] {
        const auto normalized = [clips, lo, hi](T x, T m, T s) {
          T y = (x - m) / s;
          if (clips) y = y < lo ? lo : (y > hi ? hi : y);
          return y;
        };
        // Few features (an observation of 3, a row too short for a vector): the statistics laid
        // out over a period of 16 rows, so that the loop runs over the flat data in long
        // contiguous stretches the compiler vectorises. The same operations on the same
        // elements, so the same bits.
        constexpr int64_t kPeriodRows = 16, kMaxPeriodFeatures = 16;
        if (features <= kMaxPeriodFeatures && rows >= kPeriodRows) {
          T mean_p[kPeriodRows * kMaxPeriodFeatures], sd_p[kPeriodRows * kMaxPeriodFeatures];
          const int64_t period = kPeriodRows * features, n = rows * features;
          for (int64_t j = 0; j < features; ++j) {
            mean_p[j] = m_in[j];
            sd_p[j] = std::sqrt(v_in[j]) + eps;
          }
          for (int64_t j = features; j < period; ++j) {
            mean_p[j] = mean_p[j - features];
            sd_p[j] = sd_p[j - features];
          }
          int64_t i = 0;
          for (; i + period <= n; i += period)
            for (int64_t j = 0; j < period; ++j) o[i + j] = normalized(in[i + j], mean_p[j], sd_p[j]);
          for (int64_t j = 0; i + j < n; ++j) o[i + j] = normalized(in[i + j], mean_p[j], sd_p[j]);
          return;
        }
        constexpr int64_t kBlock = 64;
        T sd[kBlock];
        for (int64_t j0 = 0; j0 < features; j0 += kBlock) {
          const int64_t width = std::min(kBlock, features - j0);
          for (int64_t j = 0; j < width; ++j) sd[j] = std::sqrt(v_in[j0 + j]) + eps;
          for (int64_t r = 0; r < rows; ++r) {
            const T* x_row = in + r * features + j0;
            const T* mean_row = m_in + j0;
            T* out_row = o + r * features + j0;
            for (int64_t j = 0; j < width; ++j) out_row[j] = normalized(x_row[j], mean_row[j], sd[j]);
          }
        }
      });
    });
    return out;
  }

  // The same update as tensor ops, for tensors on a GPU: the rows past k are masked out of both sums.
  Moments update_with_ops(const Tensor& count, const Tensor& mean_a, const Tensor& var_a, const Tensor& obs) const {
    const int64_t batch = obs.shape()[0];
    const Tensor na = count.to(DType::float64);
    const Tensor kb = std::isfinite(options_.sample_limit)
                          ? clip(ceil(sub(options_.sample_limit, na)), 0.0, static_cast<double>(batch))
                          : full(Shape{}, static_cast<double>(batch), DType::float64, obs.device());
    Shape row_shape = Shape::filled(obs.rank(), 1);
    row_shape[0] = batch;
    const Tensor counted = lt(arange(batch, DType::float64).to(obs.device()).reshape(row_shape), kb);
    const Tensor zero = zeros_like(obs);
    const Tensor mean_b = div(sum(where(counted, obs, zero), {0}), kb);
    const Tensor var_b = div(sum(square(where(counted, sub(obs, mean_b), zero)), {0}), kb);
    const Tensor n = add(na, kb);
    const Tensor delta = sub(mean_b, mean_a);
    const Tensor new_mean = add(mean_a, mul(delta, div(kb, n)));
    const Tensor m2 = add(add(mul(var_a, na), mul(var_b, kb)), mul(square(delta), div(mul(na, kb), n)));
    const Tensor grew = gt(kb, zeros_like(kb));  // k = 0: mean_b is 0 / 0; the statistics stay as they were
    return {add(count, kb.to(DType::int64)), where(grew, new_mean, mean_a), where(grew, div(m2, n), var_a)};
  }

  NormalizeOptions options_;
};

}  // namespace

LayerPtr LayerNorm(double epsilon) { return std::make_shared<LayerNormLayer>(epsilon); }

LayerPtr BatchNorm(std::vector<int> axes, double epsilon, double momentum, bool center, bool scale) {
  return std::make_shared<BatchNormLayer>(std::move(axes), epsilon, momentum, center, scale);
}

LayerPtr Normalize(NormalizeOptions options) { return std::make_shared<NormalizeLayer>(options); }

namespace {

bool is_normalize_statistics(const Tree& t) {
  return t.is_dict() && t.size() == 3 && t.contains("mean") && t.contains("var") && t.contains("count") &&
         t["count"].is_leaf() && t["count"].leaf().dtype() == DType::int64 && t["mean"].is_leaf() &&
         t["var"].is_leaf();
}

std::vector<double> values_of(const Tree& t) { return t.leaf().to(Device::cpu()).to_vector<double>(); }

// One Normalize's statistics: rank r's new observations are (k, mean_d, M2_d), recovered from its
// state and the base's, then added to the running (n, mean, M2) in rank order.
Tree combined_normalize(const Tree& base, const std::vector<const Tree*>& ranks, const std::string& path) {
  const double n0 = static_cast<double>(base["count"].leaf().item<int64_t>());
  const std::vector<double> m0 = values_of(base["mean"]), v0 = values_of(base["var"]);
  const size_t f = m0.size();
  double n = n0;
  std::vector<double> mean = m0, m2(f);
  for (size_t i = 0; i < f; ++i) m2[i] = v0[i] * n0;
  for (size_t r = 0; r < ranks.size(); ++r) {
    const Tree& s = *ranks[r];
    const double nr = static_cast<double>(s["count"].leaf().item<int64_t>());
    CTRAX_REQUIRE(nr >= n0, "Normalize statistics at '", path, "': rank ", r, " counts ", nr,
                  " observations, fewer than the ", n0, " all ranks started from");
    const double k = nr - n0;
    if (k == 0) continue;
    const std::vector<double> mr = values_of(s["mean"]), vr = values_of(s["var"]);
    CTRAX_REQUIRE(mr.size() == f && vr.size() == f, "Normalize statistics at '", path, "': rank ", r, " has ",
                  mr.size(), " features, rank 0 ", f);
    const double total = n + k;
    for (size_t i = 0; i < f; ++i) {
      const double mean_d = (nr * mr[i] - n0 * m0[i]) / k;
      const double shift = mean_d - m0[i];
      const double m2_d = std::max(0.0, nr * vr[i] - n0 * v0[i] - shift * shift * n0 * k / nr);
      const double delta = mean_d - mean[i];
      mean[i] += delta * k / total;
      m2[i] += m2_d + delta * delta * n * k / total;
    }
    n = total;
  }
  if (n == n0) return base;
  std::vector<double> var(f);
  for (size_t i = 0; i < f; ++i) var[i] = m2[i] / n;
  const Tensor& like_mean = base["mean"].leaf();
  const Tensor& like_var = base["var"].leaf();
  Tree out = base;
  out["mean"] = from_vector(mean, like_mean.shape()).to(like_mean.dtype()).to(like_mean.device());
  out["var"] = from_vector(var, like_var.shape()).to(like_var.dtype()).to(like_var.device());
  out["count"] = scalar_tensor(n, DType::int64).to(base["count"].leaf().device());
  return out;
}

Tree combined(const Tree& base, const std::vector<const Tree*>& ranks, const std::string& path) {
  for (size_t r = 0; r < ranks.size(); ++r)
    CTRAX_REQUIRE(ranks[r]->same_structure(base), "combine_rank_statistics: rank ", r,
                  "'s state is not shaped like the base state at '", path, "'");
  if (is_normalize_statistics(base)) return combined_normalize(base, ranks, path);
  if (base.is_leaf()) {
    const std::vector<double> first = values_of(*ranks.front());
    for (size_t r = 1; r < ranks.size(); ++r) {
      const std::vector<double> other = values_of(*ranks[r]);
      CTRAX_REQUIRE(other.size() == first.size() &&
                        std::memcmp(other.data(), first.data(), first.size() * sizeof(double)) == 0,
                    "combine_rank_statistics: the state at '", path, "' differs between rank 0 and rank ", r,
                    "; only Normalize statistics can be combined across ranks");
    }
    return *ranks.front();
  }
  Tree out = base;
  if (base.is_dict()) {
    for (const auto& [key, child] : base.dict()) {
      std::vector<const Tree*> children;
      for (const Tree* t : ranks) children.push_back(&(*t)[key]);
      out[key] = combined(child, children, path.empty() ? key : path + "/" + key);
    }
  } else {
    for (size_t i = 0; i < base.size(); ++i) {
      std::vector<const Tree*> children;
      for (const Tree* t : ranks) children.push_back(&(*t)[i]);
      out[i] = combined(base[i], children, path + "/" + std::to_string(i));
    }
  }
  return out;
}

}  // namespace

Tree combine_rank_statistics(const Tree& base, const std::vector<Tree>& ranks) {
  CTRAX_REQUIRE(!ranks.empty(), "combine_rank_statistics: no ranks");
  std::vector<const Tree*> pointers;
  for (const Tree& t : ranks) pointers.push_back(&t);
  return combined(base, pointers, "");
}

}  // namespace ctrax
