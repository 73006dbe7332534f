// Advantage estimators and discounted returns (see advantages.h).
#include "advantages.h"

#include <cmath>
#include <string>
#include <vector>

#include "../../base/error.h"

namespace ctrax {

namespace {

// The inputs of one estimator call as flat row-major [B, L] arrays in double. The rows are
// short (a slice), so plain loops over them are the clearest form of the recursions.
struct Rows {
  int64_t batch = 0;
  int64_t length = 0;
  std::vector<double> reward, ret, value, gamma, lambda;
  std::vector<bool> done, step;  // step: mask set (an action was taken at this entry)

  size_t at(int64_t b, int64_t t) const { return static_cast<size_t>(b * length + t); }
};

void check_parameter(const char* who, const char* name, double value) {
  CTRAX_REQUIRE(std::isfinite(value) && value >= 0.0 && value <= 1.0, who, ": ", name, " must be in [0, 1], got ",
                value);
}

// Reads `t` (required unless `optional`) as doubles after checking it is [B, L] like the rewards.
std::vector<double> read(const char* who, const char* name, const Tensor& t, const Shape& shape, bool optional,
                         double fill) {
  if (!t.defined()) {
    CTRAX_REQUIRE(optional, who, ": ", name, " is undefined (expected a tensor of shape ", shape, ")");
    return std::vector<double>(static_cast<size_t>(shape.numel()), fill);
  }
  CTRAX_REQUIRE(t.shape() == shape, who, ": ", name, " has shape ", t.shape(), ", expected ", shape,
                " (the rewards' shape)");
  return t.to_vector<double>();
}

Rows read_rows(const char* who, const AdvantageInputs& in, double gamma, double lambda, int64_t margin,
               bool needs_returns) {
  check_parameter(who, "gamma", gamma);
  check_parameter(who, "lambda", lambda);
  CTRAX_REQUIRE(in.rewards.defined(), who, ": rewards are undefined (expected a tensor of shape [B, L])");
  const Shape& shape = in.rewards.shape();
  CTRAX_REQUIRE(shape.rank() == 2, who, ": rewards have shape ", shape, ", expected [B, L]");
  CTRAX_REQUIRE(margin >= 0 && margin < shape[1], who, ": margin must be in [0, L) with L = ", shape[1],
                " (the slice length), got ", margin);
  Rows rows;
  rows.batch = shape[0];
  rows.length = shape[1];
  rows.reward = read(who, "rewards", in.rewards, shape, false, 0.0);
  rows.value = read(who, "values", in.values, shape, false, 0.0);
  if (needs_returns) rows.ret = read(who, "returns", in.returns, shape, false, 0.0);
  const std::vector<double> done = read(who, "dones", in.dones, shape, false, 0.0);
  const std::vector<double> mask = read(who, "mask", in.mask, shape, true, 1.0);
  const std::vector<double> discount = read(who, "discount_mask", in.discount_mask, shape, true, 1.0);
  const size_t n = done.size();
  rows.done.resize(n);
  rows.step.resize(n);
  rows.gamma.resize(n);
  rows.lambda.resize(n);
  for (size_t i = 0; i < n; ++i) {
    rows.done[i] = done[i] != 0.0;
    rows.step[i] = mask[i] != 0.0;
    rows.gamma[i] = discount[i] != 0.0 ? gamma : 1.0;
    rows.lambda[i] = discount[i] != 0.0 ? lambda : 1.0;
  }
  return rows;
}

// The first L - margin columns of a [B, L] array, as float32 [B, L - margin].
Tensor first_columns(const Rows& rows, const std::vector<double>& a, int64_t margin) {
  const int64_t keep = rows.length - margin;
  Tensor out(Shape{rows.batch, keep}, DType::float32);
  float* o = out.data<float>();
  for (int64_t b = 0; b < rows.batch; ++b)
    for (int64_t t = 0; t < keep; ++t) o[b * keep + t] = static_cast<float>(a[rows.at(b, t)]);
  return out;
}

// The lambda-return G of every entry (advantages.h): G = V at mask-0 entries and at a
// non-terminated last column, G = r at terminated steps, else
// G_t = r_t + gamma_t ((1 - lambda_t) V_{t+1} + lambda_t G_{t+1}).
std::vector<double> lambda_returns(const Rows& rows) {
  std::vector<double> g(rows.reward.size());
  for (int64_t b = 0; b < rows.batch; ++b) {
    for (int64_t t = rows.length - 1; t >= 0; --t) {
      const size_t i = rows.at(b, t);
      if (!rows.step[i]) {
        g[i] = rows.value[i];
      } else if (rows.done[i]) {
        g[i] = rows.reward[i];
      } else if (t == rows.length - 1) {
        g[i] = rows.value[i];
      } else {
        g[i] = rows.reward[i] +
               rows.gamma[i] * ((1.0 - rows.lambda[i]) * rows.value[i + 1] + rows.lambda[i] * g[i + 1]);
      }
    }
  }
  return g;
}

}  // namespace

Tensor monte_carlo_advantages(const AdvantageInputs& in, double gamma, int64_t margin) {
  const Rows rows = read_rows("monte_carlo_advantages", in, gamma, 0.0, margin, true);
  std::vector<double> a(rows.reward.size(), 0.0);
  for (size_t i = 0; i < a.size(); ++i) {
    if (!rows.step[i]) continue;
    // Trax: at a terminated step the return is r and the baseline 0.
    a[i] = rows.done[i] ? rows.reward[i] : rows.ret[i] - rows.value[i];
  }
  return first_columns(rows, a, margin);
}

Tensor td_k_advantages(const AdvantageInputs& in, double gamma, int64_t margin) {
  CTRAX_REQUIRE(margin >= 1, "td_k_advantages: k = margin must be >= 1, got ", margin);
  const Rows rows = read_rows("td_k_advantages", in, gamma, 0.0, margin, false);
  const int64_t k = margin;
  std::vector<double> a(rows.reward.size(), 0.0);
  for (int64_t b = 0; b < rows.batch; ++b) {
    for (int64_t t = 0; t + k < rows.length; ++t) {
      const size_t i0 = rows.at(b, t);
      if (!rows.step[i0]) continue;
      // Walk j = 0, 1, ... < k: add the discounted reward of entry t + j; stop at a terminal
      // step, or bootstrap from the value of the next entry when the window ends there or the
      // next entry is an observation only (the final observation of a truncated piece).
      double g = 0.0;
      double discount = 1.0;
      for (int64_t j = 0; j < k; ++j) {
        const size_t i = i0 + static_cast<size_t>(j);
        g += discount * rows.reward[i];
        if (rows.done[i]) break;
        discount *= rows.gamma[i];
        if (j == k - 1 || !rows.step[i + 1]) {
          g += discount * rows.value[i + 1];
          break;
        }
      }
      a[i0] = g - rows.value[i0];
    }
  }
  return first_columns(rows, a, margin);
}

Tensor td_lambda_advantages(const AdvantageInputs& in, double gamma, int64_t margin, double lambda) {
  const Rows rows = read_rows("td_lambda_advantages", in, gamma, lambda, margin, false);
  std::vector<double> a = lambda_returns(rows);
  for (size_t i = 0; i < a.size(); ++i) a[i] -= rows.value[i];
  return first_columns(rows, a, margin);
}

Tensor gae_advantages(const AdvantageInputs& in, double gamma, int64_t margin, double lambda) {
  const Rows rows = read_rows("gae_advantages", in, gamma, lambda, margin, false);
  std::vector<double> a(rows.reward.size(), 0.0);
  for (int64_t b = 0; b < rows.batch; ++b) {
    for (int64_t t = rows.length - 1; t >= 0; --t) {
      const size_t i = rows.at(b, t);
      if (!rows.step[i]) {
        a[i] = 0.0;
      } else if (rows.done[i]) {
        a[i] = rows.reward[i] - rows.value[i];
      } else if (t == rows.length - 1) {
        a[i] = 0.0;
      } else {
        const double delta = rows.reward[i] + rows.gamma[i] * rows.value[i + 1] - rows.value[i];
        a[i] = delta + rows.gamma[i] * rows.lambda[i] * a[i + 1];
      }
    }
  }
  return first_columns(rows, a, margin);
}

AdvantageEstimator monte_carlo() {
  return [](const AdvantageInputs& in, double gamma, int64_t margin) { return monte_carlo_advantages(in, gamma, margin); };
}

AdvantageEstimator td_k() {
  return [](const AdvantageInputs& in, double gamma, int64_t margin) { return td_k_advantages(in, gamma, margin); };
}

AdvantageEstimator td_lambda(double lambda) {
  check_parameter("td_lambda", "lambda", lambda);
  return [lambda](const AdvantageInputs& in, double gamma, int64_t margin) {
    return td_lambda_advantages(in, gamma, margin, lambda);
  };
}

AdvantageEstimator gae(double lambda) {
  check_parameter("gae", "lambda", lambda);
  return [lambda](const AdvantageInputs& in, double gamma, int64_t margin) {
    return gae_advantages(in, gamma, margin, lambda);
  };
}

Tensor discounted_returns(const Tensor& rewards, double gamma, const Tensor& discount_mask, const Tensor& dones) {
  const char* who = "discounted_returns";
  check_parameter(who, "gamma", gamma);
  CTRAX_REQUIRE(rewards.defined(), who, ": rewards are undefined");
  CTRAX_REQUIRE(rewards.rank() >= 1, who, ": rewards are a scalar; expected a tensor [..., T]");
  const Shape& shape = rewards.shape();
  const std::vector<double> r = rewards.to_vector<double>();
  const std::vector<double> discount = read(who, "discount_mask", discount_mask, shape, true, 1.0);
  const std::vector<double> done = read(who, "dones", dones, shape, true, 0.0);
  const int64_t length = shape.back();
  const int64_t rows = length == 0 ? 0 : shape.numel() / length;
  Tensor out(shape, DType::float32);
  float* o = out.data<float>();
  for (int64_t b = 0; b < rows; ++b) {
    double ret = 0.0;
    for (int64_t t = length - 1; t >= 0; --t) {
      const size_t i = static_cast<size_t>(b * length + t);
      const double next = done[i] != 0.0 ? 0.0 : ret;
      ret = r[i] + (discount[i] != 0.0 ? gamma : 1.0) * next;
      o[i] = static_cast<float>(ret);
    }
  }
  return out;
}

}  // namespace ctrax
