// The actor-critic losses and metrics (rl/learning/losses.h): every value against a reference computed
// here in plain double loops (independent of the tensor ops), PPO clipping on both sides of
// the ratio, AWR weight clipping, entropy terms, masks (garbage in padding changes nothing),
// the joint advantage at done and not-done steps with and without normalisation, the value
// term and its gradient (the only path to V), the metrics, batches of padding only, gradchecks
// of every loss in float64, and every bad argument and input.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <numbers>
#include <string>
#include <vector>

#include <ctrax/autograd/grad.h>
#include <ctrax/autograd/gradcheck.h>
#include <ctrax/rl/learning/distributions.h>
#include <ctrax/rl/learning/losses.h>
#include <ctrax/tensor/ops.h>

#include "../test_util.h"

namespace {

using ctrax::Categorical;
using ctrax::DistributionPtr;
using ctrax::DType;
using ctrax::Error;
using ctrax::Gaussian;
using ctrax::LayerPtr;
using ctrax::LearnStd;
using ctrax::Shape;
using ctrax::Stack;
using ctrax::Tensor;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kHalfLog2Pi = 0.5 * std::log(2.0 * std::numbers::pi);

Tensor f64(const std::vector<double>& v, const Shape& s) { return ctrax::from_vector(v, s); }
Tensor i64(const std::vector<int64_t>& v, const Shape& s) { return ctrax::from_vector(v, s); }

// Runs a layer on a stack; checks the result is a scalar.
double run(const LayerPtr& layer, const Stack& in) {
  const Tensor y = (*layer)(in)[0];
  REQUIRE(y.shape() == Shape{});
  return y.item<double>();
}

void check_close(double got, double want, double tol = 1e-12) {
  CHECK(got == doctest::Approx(want).epsilon(tol).scale(1.0));
}

void check_gradcheck(const ctrax::GradcheckFn& f, const std::vector<Tensor>& inputs) {
  const ctrax::GradcheckResult r = ctrax::gradcheck(f, inputs);
  INFO(r.message);
  CHECK(r.ok);
}

// ---- The reference: per-step log-probs and entropies in double ---------------------------------

// One distribution in plain arithmetic: n_inputs per step, elements per action, log-prob and
// entropy of one step's inputs.
struct RefDist {
  int64_t d;
  int64_t action_size;
  std::function<double(const double* x, const double* a)> logp;
  std::function<double(const double* x)> entropy;
  std::function<double(const double* x)> mode;  // the preferred move, averaged over elements
};

double logsumexp(const double* x, int64_t n) {
  double hi = x[0];
  for (int64_t j = 1; j < n; ++j) hi = std::max(hi, x[j]);
  double s = 0.0;
  for (int64_t j = 0; j < n; ++j) s += std::exp(x[j] - hi);
  return hi + std::log(s);
}

// Categorical(n): log p(a) = x_a - logsumexp(x), H = -sum p log p.
RefDist ref_categorical(int64_t n) {
  RefDist r{n, 1, nullptr, nullptr, nullptr};
  r.logp = [n](const double* x, const double* a) { return x[static_cast<int64_t>(*a)] - logsumexp(x, n); };
  r.entropy = [n](const double* x) {
    const double z = logsumexp(x, n);
    double h = 0.0;
    for (int64_t j = 0; j < n; ++j) h -= std::exp(x[j] - z) * (x[j] - z);
    return h;
  };
  r.mode = [n](const double* x) {
    int64_t best = 0;
    for (int64_t j = 1; j < n; ++j)
      if (x[j] > x[best]) best = j;
    return static_cast<double>(best);
  };
  return r;
}

// Gaussian(shape [k], std0, shared): inputs (mu_1..mu_k, raw), sigma = softplus(raw + std0);
// log p = -sum_i ((a_i - mu_i)^2 / (2 sigma^2) + log sigma + log(2 pi) / 2),
// H = k (log sigma + (1 + log 2 pi) / 2).
RefDist ref_gaussian_shared(int64_t k, double std0) {
  RefDist r{k + 1, k, nullptr, nullptr, nullptr};
  r.logp = [k, std0](const double* x, const double* a) {
    const double sigma = std::log1p(std::exp(x[k] + std0));
    double lp = 0.0;
    for (int64_t i = 0; i < k; ++i)
      lp -= (a[i] - x[i]) * (a[i] - x[i]) / (2.0 * sigma * sigma) + std::log(sigma) + kHalfLog2Pi;
    return lp;
  };
  r.entropy = [k, std0](const double* x) {
    const double sigma = std::log1p(std::exp(x[k] + std0));
    return static_cast<double>(k) * (std::log(sigma) + 0.5 + kHalfLog2Pi);
  };
  r.mode = [k](const double* x) {
    double s = 0.0;
    for (int64_t i = 0; i < k; ++i) s += x[i];
    return s / static_cast<double>(k);
  };
  return r;
}

// Per-step reference values; 0 at mask-0 steps (their inputs may be garbage).
std::vector<double> ref_logp(const RefDist& rd, const std::vector<double>& x, const std::vector<double>& a,
                             const std::vector<double>& m) {
  std::vector<double> out(m.size(), 0.0);
  for (size_t t = 0; t < m.size(); ++t)
    if (m[t] != 0.0) out[t] = rd.logp(&x[t * rd.d], &a[t * rd.action_size]);
  return out;
}

std::vector<double> ref_entropy(const RefDist& rd, const std::vector<double>& x, const std::vector<double>& m) {
  std::vector<double> out(m.size(), 0.0);
  for (size_t t = 0; t < m.size(); ++t)
    if (m[t] != 0.0) out[t] = rd.entropy(&x[t * rd.d]);
  return out;
}

// sum(x m) / sum(m), skipping mask-0 steps entirely (0 * NaN would be NaN).
double ref_mean(const std::vector<double>& x, const std::vector<double>& m) {
  double num = 0.0, den = 0.0;
  for (size_t t = 0; t < m.size(); ++t)
    if (m[t] != 0.0) {
      num += x[t] * m[t];
      den += m[t];
    }
  return den == 0.0 ? 0.0 : num / den;
}

double ref_var(const std::vector<double>& x, const std::vector<double>& m) {
  const double mu = ref_mean(x, m);
  std::vector<double> d2(x.size());
  for (size_t t = 0; t < x.size(); ++t) d2[t] = (x[t] - mu) * (x[t] - mu);
  return ref_mean(d2, m);
}

double ppo_obj(double rho, double a, double eps) {
  return std::min(rho * a, std::clamp(rho, 1.0 - eps, 1.0 + eps) * a);
}

// Trax's joint advantage where(d, r, R) - where(d, 0, V), optionally normalised with the masked
// mean and population standard deviation (eps 1e-8).
std::vector<double> ref_joint_advantage(const std::vector<double>& v, const std::vector<double>& ret,
                                        const std::vector<double>& done, const std::vector<double>& rew,
                                        const std::vector<double>& m, bool normalize) {
  std::vector<double> a(m.size(), 0.0);
  for (size_t t = 0; t < m.size(); ++t)
    if (m[t] != 0.0) a[t] = done[t] != 0.0 ? rew[t] : ret[t] - v[t];
  if (!normalize) return a;
  const double mu = ref_mean(a, m), sd = std::sqrt(ref_var(a, m));
  for (double& x : a) x = (x - mu) / (sd + 1e-8);
  return a;
}

// ---- Batches ------------------------------------------------------------------------------------

// A policy batch of shape [B, L] in double (the reference's view) and as tensors.
struct PolicyData {
  Shape s;
  std::vector<double> x, old_x, a, adv, m;
  bool int_actions = true;
  // Category ids [B, L] (a scalar-event Categorical) or points [B, L, k] (a Gaussian).
  Tensor actions_tensor(const RefDist& rd) const {
    if (int_actions) {
      std::vector<int64_t> ids;
      for (double v : a) ids.push_back(static_cast<int64_t>(v));
      return i64(ids, s);
    }
    Shape as = s;
    as.push_back(rd.action_size);
    return f64(a, as);
  }
  Stack stack(const RefDist& rd) const {
    return {f64(x, Shape{s[0], s[1], rd.d}), actions_tensor(rd), f64(adv, s), f64(old_x, Shape{s[0], s[1], rd.d}),
            f64(m, s)};
  }
};

// The joint batch: the policy part plus values, returns, dones, rewards and old log-probs.
struct JointData {
  PolicyData p;
  std::vector<double> v, ret, done, rew, old_lp;
  Stack stack(const RefDist& rd) const {
    const Shape& s = p.s;
    return {f64(p.x, Shape{s[0], s[1], rd.d}), f64(v, s), f64(ret, s), f64(done, s).to(DType::boolean),
            f64(rew, s), p.actions_tensor(rd), f64(old_lp, s), f64(p.m, s)};
  }
};

std::vector<double> uniform_values(size_t n, uint64_t seed, double lo, double hi) {
  return ctrax::test::random_tensor(Shape{static_cast<int64_t>(n)}, DType::float64, seed, lo, hi).to_vector<double>();
}

// Categorical(3), [B, L] = [2, 3]; step 5 is padding. Old inputs uniform (log p = -log 3), so
// rho = 3 p(a) with a = 0 everywhere:
//   s0 [ 1,  0,    0  ] A = +1.5: p = e/(e+2) = 0.576, rho = 1.73 > 1.2    clipped (A > 0)
//   s1 [-1,  0,    0  ] A = -0.7: p = 0.155,           rho = 0.47 < 0.8    clipped (A < 0)
//   s2 [0.1, 0,    0  ] A = +0.4: rho = 1.07 inside [0.8, 1.2]             unclipped
//   s3 [-1,  0.5,  0  ] A = +0.9: rho = 0.37 < 0.8, but A > 0: min is rho A  unclipped
//   s4 [ 1,  0,  -0.5 ] A = -1.2: rho = 1.89 > 1.2, but A < 0: min is rho A  unclipped
PolicyData ppo_categorical_batch() {
  PolicyData b;
  b.s = Shape{2, 3};
  b.x = {1.0, 0.0, 0.0, -1.0, 0.0, 0.0, 0.1, 0.0, 0.0, -1.0, 0.5, 0.0, 1.0, 0.0, -0.5, 0.3, -0.2, 0.1};
  b.old_x = std::vector<double>(18, 0.0);
  b.a = {0, 0, 0, 0, 0, 0};
  b.adv = {1.5, -0.7, 0.4, 0.9, -1.2, 0.0};
  b.m = {1, 1, 1, 1, 1, 0};
  return b;
}

// Garbage at every mask-0 step: NaN and huge logits, NaN advantages, inf old inputs, an
// out-of-range category id.
Stack with_garbage(Stack in, const Shape& s, int64_t d, int64_t t_pad) {
  std::vector<double> x = in[0].to_vector<double>();
  x[static_cast<size_t>(t_pad * d)] = kNaN;
  for (int64_t j = 1; j < d; ++j) x[static_cast<size_t>(t_pad * d + j)] = 1e300;
  in[0] = f64(x, in[0].shape());
  std::vector<double> adv = in[2].to_vector<double>();
  adv[static_cast<size_t>(t_pad)] = kNaN;
  in[2] = f64(adv, s);
  std::vector<double> ox = in[3].to_vector<double>();
  for (int64_t j = 0; j < d; ++j) ox[static_cast<size_t>(t_pad * d + j)] = -kInf;
  in[3] = f64(ox, in[3].shape());
  if (in[1].dtype() == DType::int64) {
    std::vector<int64_t> a = in[1].to_vector<int64_t>();
    a[static_cast<size_t>(t_pad)] = 99;
    in[1] = i64(a, s);
  }
  return in;
}

}  // namespace

// ---- Separate policy losses ---------------------------------------------------------------------

TEST_CASE("RL losses: PPOLoss clips the ratio on both sides, Categorical") {
  const auto dist = std::make_shared<Categorical>(3);
  const RefDist rd = ref_categorical(3);
  const PolicyData b = ppo_categorical_batch();
  const double eps = 0.2;

  const std::vector<double> logp = ref_logp(rd, b.x, b.a, b.m), old = ref_logp(rd, b.old_x, b.a, b.m);
  std::vector<double> rho(6), obj(6);
  for (size_t t = 0; t < 5; ++t) {
    rho[t] = std::exp(logp[t] - old[t]);
    obj[t] = ppo_obj(rho[t], b.adv[t], eps);
  }
  // The regimes the batch was built for.
  CHECK(rho[0] > 1.0 + eps);
  CHECK(obj[0] == doctest::Approx((1.0 + eps) * 1.5));
  CHECK(rho[1] < 1.0 - eps);
  CHECK(obj[1] == doctest::Approx((1.0 - eps) * -0.7));
  CHECK((rho[2] > 1.0 - eps && rho[2] < 1.0 + eps));
  CHECK(rho[3] < 1.0 - eps);
  CHECK(obj[3] == doctest::Approx(rho[3] * 0.9));
  CHECK(rho[4] > 1.0 + eps);
  CHECK(obj[4] == doctest::Approx(rho[4] * -1.2));

  const double surrogate = ref_mean(obj, b.m);
  const double mean_h = ref_mean(ref_entropy(rd, b.x, b.m), b.m);

  const LayerPtr plain = ctrax::PPOLoss(dist, eps, 0.0);
  CHECK(plain->n_in() == 5);
  CHECK(plain->n_out() == 1);
  CHECK(plain->name() == "PPOLoss");
  check_close(run(plain, b.stack(rd)), -surrogate);
  // With an entropy bonus: -surrogate - c mean_m(H).
  check_close(run(ctrax::PPOLoss(dist, eps, 0.05), b.stack(rd)), -surrogate - 0.05 * mean_h);

  // Garbage in the padding step changes neither the value nor the gradient.
  const Stack garbage = with_garbage(b.stack(rd), b.s, 3, 5);
  check_close(run(plain, garbage), -surrogate);
  const auto g = ctrax::value_and_grad([&](const Tensor& x) {
    Stack in = garbage;
    in[0] = x;
    return (*plain)(in)[0];
  })(garbage[0]);
  const std::vector<double> grad = g.grad.to_vector<double>();
  for (double v : grad) CHECK(std::isfinite(v));
  // Clipped steps (0 and 1) and padding (5) get exactly 0; step 2 gets
  // d(-rho A / 5) / dx = -(A / 5) rho (onehot(a) - softmax(x)).
  for (int t : {0, 1, 5})
    for (int j = 0; j < 3; ++j) CHECK(grad[static_cast<size_t>(3 * t + j)] == 0.0);
  const double z2 = logsumexp(&b.x[6], 3);
  for (int j = 0; j < 3; ++j) {
    const double p = std::exp(b.x[static_cast<size_t>(6 + j)] - z2);
    check_close(grad[static_cast<size_t>(6 + j)], -(0.4 / 5.0) * rho[2] * ((j == 0 ? 1.0 : 0.0) - p), 1e-10);
  }

  // float32 in, float32 rank-0 out.
  Stack in32 = b.stack(rd);
  for (int i : {0, 2, 3, 4}) in32[static_cast<size_t>(i)] = in32[static_cast<size_t>(i)].to(DType::float32);
  const Tensor y32 = (*plain)(in32)[0];
  CHECK(y32.dtype() == DType::float32);
  CHECK(y32.shape() == Shape{});
  CHECK(y32.item<double>() == doctest::Approx(-surrogate).epsilon(1e-5));
}

TEST_CASE("RL losses: PPOLoss with a Gaussian (shared learned std, event shape 2)") {
  const auto dist = std::make_shared<Gaussian>(Shape{2}, 0.5, LearnStd::shared);
  const RefDist rd = ref_gaussian_shared(2, 0.5);
  PolicyData b;
  b.s = Shape{3, 4};
  b.int_actions = false;
  b.x = uniform_values(36, 11, -1.0, 1.0);
  b.old_x = uniform_values(36, 12, -1.0, 1.0);
  b.a = uniform_values(24, 13, -1.5, 1.5);
  b.adv = uniform_values(12, 14, -2.0, 2.0);
  b.m = {1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 0, 0};
  const double eps = 0.25, c = 0.02;

  const std::vector<double> logp = ref_logp(rd, b.x, b.a, b.m), old = ref_logp(rd, b.old_x, b.a, b.m);
  std::vector<double> obj(12, 0.0);
  int clipped = 0, unclipped = 0;
  for (size_t t = 0; t < 12; ++t) {
    if (b.m[t] == 0.0) continue;
    const double rho = std::exp(logp[t] - old[t]);
    obj[t] = ppo_obj(rho, b.adv[t], eps);
    (obj[t] == rho * b.adv[t] ? unclipped : clipped) += 1;
  }
  CHECK(clipped > 0);  // the random batch exercises both branches
  CHECK(unclipped > 0);
  const double want = -ref_mean(obj, b.m) - c * ref_mean(ref_entropy(rd, b.x, b.m), b.m);
  const LayerPtr loss = ctrax::PPOLoss(dist, eps, c);
  check_close(run(loss, b.stack(rd)), want);

  // Garbage in the padding: NaN means and std inputs, NaN actions and advantages.
  Stack g = b.stack(rd);
  std::vector<double> x = b.x, a = b.a, adv = b.adv;
  for (size_t t : {7, 10, 11}) {
    for (size_t j = 0; j < 3; ++j) x[3 * t + j] = j == 0 ? kNaN : 1e300;
    a[2 * t] = kNaN;
    adv[t] = kInf;
  }
  g[0] = f64(x, Shape{3, 4, 3});
  g[1] = f64(a, Shape{3, 4, 2});
  g[2] = f64(adv, Shape{3, 4});
  check_close(run(loss, g), want);
  const auto r = ctrax::value_and_grad([&](const Tensor& xx) {
    Stack in = g;
    in[0] = xx;
    return (*loss)(in)[0];
  })(g[0]);
  const std::vector<double> grad = r.grad.to_vector<double>();
  for (size_t i = 0; i < grad.size(); ++i) {
    CHECK(std::isfinite(grad[i]));
    if (b.m[i / 3] == 0.0) CHECK(grad[i] == 0.0);
  }
}

TEST_CASE("RL losses: A2CLoss, value and entropy term, masked entries excluded") {
  const auto dist = std::make_shared<Categorical>(4);
  const RefDist rd = ref_categorical(4);
  PolicyData b;
  b.s = Shape{2, 3};
  b.x = uniform_values(24, 21, -2.0, 2.0);
  b.old_x = uniform_values(24, 22, -2.0, 2.0);
  b.a = {3, 0, 2, 1, 1, 0};
  b.adv = {0.5, -1.0, 2.0, 0.25, -0.5, 3.0};
  b.m = {1, 0, 1, 1, 1, 0};
  const std::vector<double> logp = ref_logp(rd, b.x, b.a, b.m);
  std::vector<double> la(6);
  for (size_t t = 0; t < 6; ++t) la[t] = logp[t] * b.adv[t];
  const double mean_h = ref_mean(ref_entropy(rd, b.x, b.m), b.m);
  check_close(run(ctrax::A2CLoss(dist, 0.0), b.stack(rd)), -ref_mean(la, b.m));
  check_close(run(ctrax::A2CLoss(dist, 0.3), b.stack(rd)), -ref_mean(la, b.m) - 0.3 * mean_h);
  // Trax's default entropy coefficient.
  check_close(run(ctrax::A2CLoss(dist), b.stack(rd)), -ref_mean(la, b.m) - 0.01 * mean_h);

  // The masked steps 1 and 5 hold real-looking data that would change the loss if counted.
  PolicyData other = b;
  other.adv[1] = 100.0;
  other.a[5] = 2;
  for (size_t j = 0; j < 4; ++j) other.x[4 + j] = 5.0 * static_cast<double>(j);
  check_close(run(ctrax::A2CLoss(dist, 0.3), other.stack(rd)), -ref_mean(la, b.m) - 0.3 * mean_h);
  // Unmasking step 1 does change it.
  other.m[1] = 1.0;
  CHECK(run(ctrax::A2CLoss(dist, 0.3), other.stack(rd)) != doctest::Approx(-ref_mean(la, b.m) - 0.3 * mean_h));

  // Fractional mask values weight the steps.
  PolicyData w = b;
  w.m = {0.5, 0, 2, 1, 1, 0};
  const std::vector<double> logp_w = ref_logp(rd, w.x, w.a, w.m);
  std::vector<double> la_w(6);
  for (size_t t = 0; t < 6; ++t) la_w[t] = logp_w[t] * w.adv[t];
  check_close(run(ctrax::A2CLoss(dist, 0.0), w.stack(rd)), -ref_mean(la_w, w.m));
}

TEST_CASE("RL losses: AWRLoss weights exp(A / beta) are clipped at w_max and are constants") {
  const auto dist = std::make_shared<Categorical>(3);
  const RefDist rd = ref_categorical(3);
  PolicyData b;
  b.s = Shape{1, 4};
  b.x = {0.2, -0.3, 0.5, 1.0, 0.0, -1.0, -0.4, 0.4, 0.0, 2.0, 2.0, 2.0};
  b.old_x = std::vector<double>(12, 0.0);
  b.a = {2, 0, 1, 1};
  // beta = 0.5, w_max = 3: A = 1 -> e^2 = 7.39, clipped to 3; A = 0.2 -> e^0.4 = 1.49;
  // A = -1 -> e^-2 = 0.135; step 3 is padding.
  b.adv = {1.0, 0.2, -1.0, 5.0};
  b.m = {1, 1, 1, 0};
  const std::vector<double> w = {3.0, std::exp(0.4), std::exp(-2.0), 0.0};
  CHECK(std::exp(1.0 / 0.5) > 3.0);
  const std::vector<double> logp = ref_logp(rd, b.x, b.a, b.m);
  std::vector<double> lw(4);
  for (size_t t = 0; t < 4; ++t) lw[t] = logp[t] * w[t];
  const double mean_h = ref_mean(ref_entropy(rd, b.x, b.m), b.m);

  const LayerPtr awr = ctrax::AWRLoss(dist, 0.5, 3.0);
  CHECK(awr->n_in() == 5);
  check_close(run(awr, b.stack(rd)), -ref_mean(lw, b.m));
  check_close(run(ctrax::AWRLoss(dist, 0.5, 3.0, 0.1), b.stack(rd)), -ref_mean(lw, b.m) - 0.1 * mean_h);
  // w_max = +inf: no clipping.
  std::vector<double> lw_inf = lw;
  lw_inf[0] = logp[0] * std::exp(2.0);
  check_close(run(ctrax::AWRLoss(dist, 0.5, kInf), b.stack(rd)), -ref_mean(lw_inf, b.m));

  // The gradient treats w as a constant: d/dx = -(w / 3) (onehot(a) - softmax(x)) per step.
  const Stack in = b.stack(rd);
  const auto r = ctrax::value_and_grad([&](const Tensor& x) {
    Stack s = in;
    s[0] = x;
    return (*awr)(s)[0];
  })(in[0]);
  const std::vector<double> grad = r.grad.to_vector<double>();
  for (size_t t = 0; t < 4; ++t) {
    const double z = logsumexp(&b.x[3 * t], 3);
    for (size_t j = 0; j < 3; ++j) {
      const double p = std::exp(b.x[3 * t + j] - z);
      const double want = b.m[t] == 0.0 ? 0.0 : -(w[t] / 3.0) * ((static_cast<double>(j) == b.a[t] ? 1.0 : 0.0) - p);
      check_close(grad[3 * t + j], want, 1e-10);
    }
  }
}

// ---- Joint losses -------------------------------------------------------------------------------

namespace {

// A joint batch, Categorical(3), [B, L] = [2, 4]: done and not-done steps, two padding steps.
JointData joint_categorical_batch() {
  JointData j;
  PolicyData& b = j.p;
  b.s = Shape{2, 4};
  b.x = uniform_values(24, 31, -1.5, 1.5);
  b.a = {0, 2, 1, 1, 2, 0, 0, 1};
  b.m = {1, 1, 1, 0, 1, 1, 1, 0};
  j.v = {0.5, -0.2, 1.0, 9.0, 0.3, 0.8, -0.6, 7.0};
  j.ret = {1.0, 0.4, 2.0, -3.0, 0.1, 1.5, 0.2, 4.0};
  j.done = {0, 0, 1, 1, 0, 1, 0, 1};
  j.rew = {0.3, 0.1, 1.5, 2.0, -0.2, 1.0, 0.4, 1.0};
  j.old_lp = uniform_values(8, 32, -1.6, -0.6);
  return j;
}

// The full joint PPO loss in double.
double ref_ppo_joint(const RefDist& rd, const JointData& j, double eps, double cv, double ce, bool normalize) {
  const PolicyData& b = j.p;
  const std::vector<double> a = ref_joint_advantage(j.v, j.ret, j.done, j.rew, b.m, normalize);
  const std::vector<double> logp = ref_logp(rd, b.x, b.a, b.m);
  std::vector<double> obj(b.m.size(), 0.0), sq(b.m.size(), 0.0);
  for (size_t t = 0; t < b.m.size(); ++t) {
    if (b.m[t] == 0.0) continue;
    obj[t] = ppo_obj(std::exp(logp[t] - j.old_lp[t]), a[t], eps);
    sq[t] = (j.ret[t] - j.v[t]) * (j.ret[t] - j.v[t]);
  }
  return -ref_mean(obj, b.m) + cv * ref_mean(sq, b.m) - ce * ref_mean(ref_entropy(rd, b.x, b.m), b.m);
}

}  // namespace

TEST_CASE("RL losses: the joint advantage at done and not-done steps, raw and normalised") {
  const auto dist = std::make_shared<Categorical>(3);
  const RefDist rd = ref_categorical(3);
  const JointData j = joint_categorical_batch();
  // By hand: A = R - V where not done, r where done; padding (steps 3, 7) excluded.
  //   t:   0          1            2      4          5      6
  //   A:   1.0-0.5    0.4+0.2      1.5    0.1-0.3    1.0    0.2+0.6
  const std::vector<double> a_raw = {0.5, 0.6, 1.5, 0.0, -0.2, 1.0, 0.8, 0.0};
  const std::vector<double> a_ref = ref_joint_advantage(j.v, j.ret, j.done, j.rew, j.p.m, false);
  for (size_t t = 0; t < 8; ++t) check_close(a_ref[t], a_raw[t]);
  const double mean_a = (0.5 + 0.6 + 1.5 - 0.2 + 1.0 + 0.8) / 6.0;
  const double rms_a = std::sqrt((0.25 + 0.36 + 2.25 + 0.04 + 1.0 + 0.64) / 6.0);
  check_close(run(ctrax::JointAdvantageMean(), j.stack(rd)), mean_a);
  check_close(run(ctrax::JointAdvantageNorm(), j.stack(rd)), rms_a);

  // A2C joint without the value and entropy terms isolates -mean_m(logp A).
  const std::vector<double> logp = ref_logp(rd, j.p.x, j.p.a, j.p.m);
  for (bool normalize : {false, true}) {
    const std::vector<double> a = ref_joint_advantage(j.v, j.ret, j.done, j.rew, j.p.m, normalize);
    if (normalize) {  // the normalised advantages have masked mean 0 and variance 1
      CHECK(std::abs(ref_mean(a, j.p.m)) < 1e-12);
      check_close(ref_var(a, j.p.m), 1.0, 1e-7);
    }
    std::vector<double> la(8);
    for (size_t t = 0; t < 8; ++t) la[t] = logp[t] * a[t];
    check_close(run(ctrax::A2CJointLoss(dist, 0.0, 0.0, normalize), j.stack(rd)), -ref_mean(la, j.p.m));
  }
  // Dones as float (nonzero = done) give the same.
  Stack fl = j.stack(rd);
  fl[3] = f64(j.done, j.p.s);
  CHECK(run(ctrax::A2CJointLoss(dist, 0.0, 0.0), fl) == run(ctrax::A2CJointLoss(dist, 0.0, 0.0), j.stack(rd)));
}

TEST_CASE("RL losses: joint losses, value term and entropy, Categorical") {
  const auto dist = std::make_shared<Categorical>(3);
  const RefDist rd = ref_categorical(3);
  const JointData j = joint_categorical_batch();
  const std::vector<double>& m = j.p.m;
  std::vector<double> sq(8, 0.0);
  for (size_t t = 0; t < 8; ++t)
    if (m[t] != 0.0) sq[t] = (j.ret[t] - j.v[t]) * (j.ret[t] - j.v[t]);
  const double value_mse = ref_mean(sq, m);
  const double mean_h = ref_mean(ref_entropy(rd, j.p.x, m), m);
  const std::vector<double> logp = ref_logp(rd, j.p.x, j.p.a, m);

  const LayerPtr ppo = ctrax::PPOJointLoss(dist, 0.2, 0.5, 0.03, true);
  CHECK(ppo->n_in() == 8);
  CHECK(ppo->n_out() == 1);
  check_close(run(ppo, j.stack(rd)), ref_ppo_joint(rd, j, 0.2, 0.5, 0.03, true));
  check_close(run(ctrax::PPOJointLoss(dist), j.stack(rd)), ref_ppo_joint(rd, j, 0.2, 0.1, 0.01, true));
  check_close(run(ctrax::PPOJointLoss(dist, 0.2, 0.0, 0.0, false), j.stack(rd)), ref_ppo_joint(rd, j, 0.2, 0, 0, false));
  // The value term alone: c_v mean_m((R - V)^2).
  check_close(run(ppo, j.stack(rd)) - run(ctrax::PPOJointLoss(dist, 0.2, 0.0, 0.03, true), j.stack(rd)),
              0.5 * value_mse, 1e-10);
  check_close(run(ctrax::JointValueLoss(), j.stack(rd)), value_mse);

  // A2C joint: -mean_m(logp A) + c_v value - c_e H.
  {
    const std::vector<double> a = ref_joint_advantage(j.v, j.ret, j.done, j.rew, m, true);
    std::vector<double> la(8);
    for (size_t t = 0; t < 8; ++t) la[t] = logp[t] * a[t];
    check_close(run(ctrax::A2CJointLoss(dist, 0.4, 0.2), j.stack(rd)),
                -ref_mean(la, m) + 0.4 * value_mse - 0.2 * mean_h);
  }
  // AWR joint: weights min(exp(A / beta), w_max) of the raw advantage (Trax's default: no
  // normalisation); A = 1.5 at step 2 gives e^3 = 20.1 > w_max = 10.
  {
    const std::vector<double> a = ref_joint_advantage(j.v, j.ret, j.done, j.rew, m, false);
    std::vector<double> lw(8);
    for (size_t t = 0; t < 8; ++t) lw[t] = logp[t] * std::min(std::exp(a[t] / 0.5), 10.0);
    CHECK(std::exp(a[2] / 0.5) > 10.0);
    check_close(run(ctrax::AWRJointLoss(dist, 0.5, 10.0, 0.3), j.stack(rd)), -ref_mean(lw, m) + 0.3 * value_mse);
    check_close(run(ctrax::AWRJointLoss(dist, 0.5, 10.0, 0.3, 0.1), j.stack(rd)),
                -ref_mean(lw, m) + 0.3 * value_mse - 0.1 * mean_h);
    const std::vector<double> an = ref_joint_advantage(j.v, j.ret, j.done, j.rew, m, true);
    for (size_t t = 0; t < 8; ++t) lw[t] = logp[t] * std::min(std::exp(an[t] / 0.5), 10.0);
    check_close(run(ctrax::AWRJointLoss(dist, 0.5, 10.0, 0.3, 0.0, true), j.stack(rd)),
                -ref_mean(lw, m) + 0.3 * value_mse);
  }

  // Garbage at the padding steps (3 and 7) changes nothing.
  Stack g = j.stack(rd);
  std::vector<double> x = j.p.x, v = j.v, ret = j.ret, rew = j.rew, olp = j.old_lp;
  std::vector<int64_t> acts = {0, 2, 1, 42, 2, 0, 0, -5};
  for (size_t t : {3, 7}) {
    x[3 * t] = kNaN;
    x[3 * t + 1] = 1e300;
    v[t] = kInf;
    ret[t] = kNaN;
    rew[t] = -kInf;
    olp[t] = kNaN;
  }
  g[0] = f64(x, Shape{2, 4, 3});
  g[1] = f64(v, j.p.s);
  g[2] = f64(ret, j.p.s);
  g[4] = f64(rew, j.p.s);
  g[5] = i64(acts, j.p.s);
  g[6] = f64(olp, j.p.s);
  check_close(run(ppo, g), ref_ppo_joint(rd, j, 0.2, 0.5, 0.03, true));
  const auto r = ctrax::value_and_grad<0, 1>([&](const Tensor& xx, const Tensor& vv) {
    Stack in = g;
    in[0] = xx;
    in[1] = vv;
    return (*ppo)(in)[0];
  })(g[0], g[1]);
  for (double d : std::get<0>(r.grad).to_vector<double>()) CHECK(std::isfinite(d));
  for (double d : std::get<1>(r.grad).to_vector<double>()) CHECK(std::isfinite(d));
}

TEST_CASE("RL losses: the gradient of a joint loss with respect to V comes only from the value term") {
  const auto dist = std::make_shared<Categorical>(3);
  const RefDist rd = ref_categorical(3);
  const JointData j = joint_categorical_batch();
  const Stack in = j.stack(rd);
  auto grad_v = [&](const LayerPtr& loss) {
    return ctrax::value_and_grad([&](const Tensor& v) {
             Stack s = in;
             s[1] = v;
             return (*loss)(s)[0];
           })(in[1])
        .grad.to_vector<double>();
  };
  const double n_real = 6.0;
  for (bool normalize : {false, true}) {
    // c_v = 0: nothing reaches V, though the advantage is built from it.
    for (double g : grad_v(ctrax::PPOJointLoss(dist, 0.2, 0.0, 0.01, normalize))) CHECK(g == 0.0);
    for (double g : grad_v(ctrax::A2CJointLoss(dist, 0.0, 0.01, normalize))) CHECK(g == 0.0);
    for (double g : grad_v(ctrax::AWRJointLoss(dist, 1.0, 20.0, 0.0, 0.0, normalize))) CHECK(g == 0.0);
    // c_v = 0.5: d(0.5 mean_m((R - V)^2)) / dV = 0.5 * 2 (V - R) m / sum(m).
    for (const LayerPtr& loss : {ctrax::PPOJointLoss(dist, 0.2, 0.5, 0.01, normalize),
                                 ctrax::A2CJointLoss(dist, 0.5, 0.01, normalize),
                                 ctrax::AWRJointLoss(dist, 1.0, 20.0, 0.5, 0.0, normalize)}) {
      const std::vector<double> g = grad_v(loss);
      for (size_t t = 0; t < 8; ++t) check_close(g[t], j.p.m[t] * (j.v[t] - j.ret[t]) / n_real, 1e-12);
    }
  }
}

TEST_CASE("RL losses: PPOJointLoss with a Gaussian") {
  const auto dist = std::make_shared<Gaussian>(Shape{2}, 1.0, LearnStd::shared);
  const RefDist rd = ref_gaussian_shared(2, 1.0);
  JointData j;
  PolicyData& b = j.p;
  b.s = Shape{2, 5};
  b.int_actions = false;
  b.x = uniform_values(30, 41, -1.0, 1.0);
  b.a = uniform_values(20, 42, -2.0, 2.0);
  b.m = {1, 1, 1, 1, 0, 1, 1, 1, 1, 1};
  j.v = uniform_values(10, 43, -1.0, 1.0);
  j.ret = uniform_values(10, 44, -2.0, 2.0);
  j.done = {0, 0, 0, 1, 1, 0, 1, 0, 0, 1};
  j.rew = uniform_values(10, 45, -1.0, 1.0);
  // Old log-probs near the new ones, so that some ratios are inside [0.8, 1.2] and some out.
  j.old_lp = ref_logp(rd, b.x, b.a, b.m);
  const std::vector<double> shift = uniform_values(10, 46, -0.5, 0.5);
  for (size_t t = 0; t < 10; ++t) j.old_lp[t] += shift[t];
  int inside = 0, outside = 0;
  for (size_t t = 0; t < 10; ++t)
    if (b.m[t] != 0.0) (std::abs(std::exp(-shift[t]) - 1.0) <= 0.2 ? inside : outside) += 1;
  CHECK(inside > 0);
  CHECK(outside > 0);

  const LayerPtr loss = ctrax::PPOJointLoss(dist, 0.2, 0.25, 0.05, true);
  check_close(run(loss, j.stack(rd)), ref_ppo_joint(rd, j, 0.2, 0.25, 0.05, true), 1e-11);
  check_close(run(ctrax::PPOJointLoss(dist, 0.2, 0.25, 0.05, false), j.stack(rd)),
              ref_ppo_joint(rd, j, 0.2, 0.25, 0.05, false), 1e-11);
  // Garbage at the padding step.
  Stack g = j.stack(rd);
  std::vector<double> x = b.x, a = b.a;
  x[12] = kNaN;
  x[14] = 1e300;
  a[8] = kInf;
  g[0] = f64(x, Shape{2, 5, 3});
  g[5] = f64(a, Shape{2, 5, 2});
  check_close(run(loss, g), ref_ppo_joint(rd, j, 0.2, 0.25, 0.05, true), 1e-11);
}

// ---- Padding only -------------------------------------------------------------------------------

TEST_CASE("RL losses: a batch of padding only gives 0 and a zero gradient, never NaN") {
  const auto dist = std::make_shared<Categorical>(3);
  const RefDist rd = ref_categorical(3);
  PolicyData b = ppo_categorical_batch();
  b.m = std::vector<double>(6, 0.0);
  const Stack in = b.stack(rd);
  for (const LayerPtr& loss : {ctrax::A2CLoss(dist, 0.1), ctrax::PPOLoss(dist, 0.2, 0.1), ctrax::AWRLoss(dist, 1, 20, 0.1),
                               ctrax::PolicyEntropy(dist), ctrax::ApproximateKL(dist), ctrax::ClipFraction(dist),
                               ctrax::LogProbMean(dist), ctrax::AdvantageMean(), ctrax::AdvantageNorm(),
                               ctrax::PreferredMove(dist)}) {
    INFO(loss->name());
    CHECK(run(loss, in) == 0.0);
  }
  const auto r = ctrax::value_and_grad([&](const Tensor& x) {
    Stack s = in;
    s[0] = x;
    return (*ctrax::PPOLoss(dist, 0.2, 0.1))(s)[0];
  })(in[0]);
  for (double g : r.grad.to_vector<double>()) CHECK(g == 0.0);

  JointData j = joint_categorical_batch();
  j.p.m = std::vector<double>(8, 0.0);
  for (const LayerPtr& loss : {ctrax::PPOJointLoss(dist), ctrax::A2CJointLoss(dist), ctrax::AWRJointLoss(dist),
                               ctrax::JointValueLoss(), ctrax::ExplainedVariance(), ctrax::JointEntropy(dist),
                               ctrax::JointAdvantageNorm()}) {
    INFO(loss->name());
    CHECK(run(loss, j.stack(rd)) == 0.0);
  }
  // An empty batch too.
  const Stack empty = {ctrax::zeros(Shape{0, 3, 3}, DType::float64), ctrax::zeros(Shape{0, 3}, DType::int64),
                       ctrax::zeros(Shape{0, 3}, DType::float64), ctrax::zeros(Shape{0, 3, 3}, DType::float64),
                       ctrax::zeros(Shape{0, 3}, DType::float64)};
  CHECK(run(ctrax::PPOLoss(dist), empty) == 0.0);
}

// ---- Metrics ------------------------------------------------------------------------------------

TEST_CASE("RL losses: policy metrics, Categorical and Gaussian") {
  {
    const auto dist = std::make_shared<Categorical>(3);
    const RefDist rd = ref_categorical(3);
    PolicyData b = ppo_categorical_batch();
    // Old inputs near the new ones, so that some ratios are inside [0.8, 1.2] and some out.
    const std::vector<double> noise = uniform_values(18, 51, -0.4, 0.4);
    for (size_t i = 0; i < 18; ++i) b.old_x[i] = b.x[i] + noise[i];
    const Stack in = with_garbage(b.stack(rd), b.s, 3, 5);
    const std::vector<double> logp = ref_logp(rd, b.x, b.a, b.m), old = ref_logp(rd, b.old_x, b.a, b.m);
    std::vector<double> d2(6, 0.0), clipped(6, 0.0), modes(6, 0.0), a2(6, 0.0);
    for (size_t t = 0; t < 5; ++t) {
      d2[t] = (logp[t] - old[t]) * (logp[t] - old[t]);
      clipped[t] = std::abs(std::exp(logp[t] - old[t]) - 1.0) > 0.2 ? 1.0 : 0.0;
      modes[t] = rd.mode(&b.x[3 * t]);
      a2[t] = b.adv[t] * b.adv[t];
    }
    CHECK(ref_mean(clipped, b.m) > 0.0);
    CHECK(ref_mean(clipped, b.m) < 1.0);
    check_close(run(ctrax::PolicyEntropy(dist), in), ref_mean(ref_entropy(rd, b.x, b.m), b.m));
    check_close(run(ctrax::ApproximateKL(dist), in), 0.5 * ref_mean(d2, b.m));
    check_close(run(ctrax::ClipFraction(dist, 0.2), in), ref_mean(clipped, b.m));
    check_close(run(ctrax::LogProbMean(dist), in), ref_mean(logp, b.m));
    check_close(run(ctrax::AdvantageMean(), in), ref_mean(b.adv, b.m));
    check_close(run(ctrax::AdvantageNorm(), in), std::sqrt(ref_mean(a2, b.m)));
    // Argmaxes of steps 0..4: 0, 1 (tie 1/2 goes to the lowest), 0, 1, 0 -> mean 2/5.
    check_close(run(ctrax::PreferredMove(dist), in), 0.4);
    check_close(ref_mean(modes, b.m), 0.4);
    for (const LayerPtr& metric : {ctrax::PolicyEntropy(dist), ctrax::ApproximateKL(dist), ctrax::ClipFraction(dist),
                                   ctrax::LogProbMean(dist), ctrax::AdvantageMean(), ctrax::AdvantageNorm(),
                                   ctrax::PreferredMove(dist)}) {
      CHECK(metric->n_in() == 5);
      CHECK(metric->n_out() == 1);
    }
  }
  {
    const auto dist = std::make_shared<Gaussian>(Shape{2}, 1.0, LearnStd::shared);
    const RefDist rd = ref_gaussian_shared(2, 1.0);
    PolicyData b;
    b.s = Shape{2, 2};
    b.int_actions = false;
    b.x = uniform_values(12, 52, -1.0, 1.0);
    b.old_x = uniform_values(12, 53, -1.0, 1.0);
    b.a = uniform_values(8, 54, -1.0, 1.0);
    b.adv = {0.3, -0.6, 1.2, 4.0};
    b.m = {1, 1, 1, 0};
    const Stack in = b.stack(rd);
    const std::vector<double> logp = ref_logp(rd, b.x, b.a, b.m), old = ref_logp(rd, b.old_x, b.a, b.m);
    std::vector<double> d2(4, 0.0), modes(4, 0.0);
    for (size_t t = 0; t < 3; ++t) {
      d2[t] = (logp[t] - old[t]) * (logp[t] - old[t]);
      modes[t] = rd.mode(&b.x[3 * t]);
    }
    check_close(run(ctrax::PolicyEntropy(dist), in), ref_mean(ref_entropy(rd, b.x, b.m), b.m));
    check_close(run(ctrax::ApproximateKL(dist), in), 0.5 * ref_mean(d2, b.m));
    check_close(run(ctrax::LogProbMean(dist), in), ref_mean(logp, b.m));
    // The preferred move of a Gaussian: its mean, averaged over the event's elements.
    check_close(run(ctrax::PreferredMove(dist), in), ref_mean(modes, b.m));
  }
  {
    // Categorical with an event shape: the argmax of each element, averaged.
    const auto dist = std::make_shared<Categorical>(3, Shape{2});
    // One step: element 0 logits (0, 5, 1) -> 1, element 1 logits (2, 0, 3) -> 2; mean 1.5.
    const Stack in = {f64({0, 5, 1, 2, 0, 3}, Shape{1, 1, 6}), i64({0, 0}, Shape{1, 1, 2}), f64({0}, Shape{1, 1}),
                      f64({0, 0, 0, 0, 0, 0}, Shape{1, 1, 6}), f64({1}, Shape{1, 1})};
    check_close(run(ctrax::PreferredMove(dist), in), 1.5);
  }
}

TEST_CASE("RL losses: joint metrics and explained variance") {
  const auto dist = std::make_shared<Categorical>(3);
  const RefDist rd = ref_categorical(3);
  const JointData j = joint_categorical_batch();
  const std::vector<double>& m = j.p.m;
  const Stack in = j.stack(rd);
  const std::vector<double> logp = ref_logp(rd, j.p.x, j.p.a, m);
  std::vector<double> d2(8, 0.0), clipped(8, 0.0), modes(8, 0.0), diff(8, 0.0);
  for (size_t t = 0; t < 8; ++t) {
    if (m[t] == 0.0) continue;
    d2[t] = (logp[t] - j.old_lp[t]) * (logp[t] - j.old_lp[t]);
    clipped[t] = std::abs(std::exp(logp[t] - j.old_lp[t]) - 1.0) > 0.3 ? 1.0 : 0.0;
    modes[t] = rd.mode(&j.p.x[3 * t]);
    diff[t] = j.ret[t] - j.v[t];
  }
  check_close(run(ctrax::JointEntropy(dist), in), ref_mean(ref_entropy(rd, j.p.x, m), m));
  check_close(run(ctrax::JointApproximateKL(dist), in), 0.5 * ref_mean(d2, m));
  check_close(run(ctrax::JointClipFraction(dist, 0.3), in), ref_mean(clipped, m));
  check_close(run(ctrax::JointLogProbMean(dist), in), ref_mean(logp, m));
  check_close(run(ctrax::JointPreferredMove(dist), in), ref_mean(modes, m));
  // Explained variance 1 - Var_m(R - V) / Var_m(R).
  const double ev = 1.0 - ref_var(diff, m) / ref_var(j.ret, m);
  check_close(run(ctrax::ExplainedVariance(), in), ev);
  for (const LayerPtr& metric :
       {ctrax::JointEntropy(dist), ctrax::JointApproximateKL(dist), ctrax::JointClipFraction(dist),
        ctrax::JointLogProbMean(dist), ctrax::JointAdvantageMean(), ctrax::JointAdvantageNorm(),
        ctrax::JointPreferredMove(dist), ctrax::JointValueLoss(), ctrax::ExplainedVariance()}) {
    CHECK(metric->n_in() == 8);
    CHECK(metric->n_out() == 1);
  }

  // Perfect values explain everything; constant values explain nothing beyond the mean.
  Stack perfect = in;
  perfect[1] = in[2];
  check_close(run(ctrax::ExplainedVariance(), perfect), 1.0);
  Stack flat = in;
  flat[1] = ctrax::full(j.p.s, 0.7, DType::float64);
  check_close(run(ctrax::ExplainedVariance(), flat), 0.0, 1e-12);

  // The value trainer's version: (values, targets, weights), garbage where the weight is 0.
  const LayerPtr vev = ctrax::ValueExplainedVariance();
  CHECK(vev->n_in() == 3);
  std::vector<double> v = j.v, ret = j.ret;
  v[3] = kNaN;
  ret[7] = kInf;
  check_close(run(vev, {f64(v, j.p.s), f64(ret, j.p.s), f64(m, j.p.s)}), ev);
  // Constant targets (up to float32 rounding, 0.1 is not exact): 0, not NaN, -inf or noise.
  const Tensor c32 = ctrax::full(Shape{3, 7}, 0.1, DType::float32);
  const Tensor v32 = ctrax::test::random_tensor(Shape{3, 7}, DType::float32, 55);
  const Tensor y = (*vev)({v32, c32, ctrax::ones(Shape{3, 7})})[0];
  CHECK(y.dtype() == DType::float32);
  CHECK(y.item<double>() == 0.0);
  CHECK(run(vev, {f64(v, j.p.s), f64(ret, j.p.s), ctrax::zeros(j.p.s, DType::float64)}) == 0.0);
}

// ---- Gradchecks ---------------------------------------------------------------------------------

TEST_CASE("RL losses: gradcheck of every loss with respect to dist_inputs (and values) in float64") {
  // Padding entries hold large finite values: their finite differences and gradients are 0.
  struct Case {
    DistributionPtr dist;
    RefDist rd;
    bool int_actions;
  };
  const std::vector<Case> cases = {
      {std::make_shared<Categorical>(3), ref_categorical(3), true},
      {std::make_shared<Gaussian>(Shape{2}, 1.0, LearnStd::shared), ref_gaussian_shared(2, 1.0), false}};
  for (const Case& c : cases) {
    INFO(c.dist->name());
    PolicyData b;
    b.s = Shape{2, 3};
    b.int_actions = c.int_actions;
    const size_t d = static_cast<size_t>(c.rd.d);
    b.x = uniform_values(6 * d, 61, -1.0, 1.0);
    b.old_x = uniform_values(6 * d, 62, -1.0, 1.0);
    b.a = c.int_actions ? std::vector<double>{0, 1, 2, 1, 0, 2} : uniform_values(12, 63, -1.0, 1.0);
    b.adv = uniform_values(6, 64, -1.5, 1.5);
    b.m = {1, 1, 0, 1, 1, 1};
    for (size_t j = 0; j < d; ++j) b.x[2 * d + j] = 50.0;
    const Stack in = b.stack(c.rd);
    for (const LayerPtr& loss : {ctrax::A2CLoss(c.dist, 0.1), ctrax::PPOLoss(c.dist, 0.2, 0.1),
                                 ctrax::AWRLoss(c.dist, 0.7, 2.0, 0.1)}) {
      INFO(loss->name());
      check_gradcheck([&](const std::vector<Tensor>& x) {
        Stack s = in;
        s[0] = x[0];
        return (*loss)(s)[0];
      }, {in[0]});
    }

    JointData j;
    j.p = b;
    j.v = uniform_values(6, 65, -1.0, 1.0);
    j.ret = uniform_values(6, 66, -1.0, 1.0);
    j.rew = uniform_values(6, 67, -1.0, 1.0);
    j.old_lp = uniform_values(6, 68, -2.5, -1.0);
    j.done = {0, 1, 0, 0, 1, 0};
    const Stack jin = j.stack(c.rd);
    Stack all_done = jin;
    all_done[3] = ctrax::ones(j.p.s, DType::boolean);
    for (const LayerPtr& loss : {ctrax::PPOJointLoss(c.dist, 0.2, 0.3, 0.05), ctrax::A2CJointLoss(c.dist, 0.3, 0.05),
                                 ctrax::AWRJointLoss(c.dist, 0.7, 2.0, 0.3, 0.05, true)}) {
      INFO(loss->name());
      check_gradcheck([&](const std::vector<Tensor>& x) {
        Stack s = jin;
        s[0] = x[0];
        return (*loss)(s)[0];
      }, {jin[0]});
      // With respect to V: the advantage holds V under stop_gradient, which finite differences
      // cannot see, so check where every step is done (A = r, free of V). The exact V gradient
      // with mixed dones is checked in its own test case.
      check_gradcheck([&](const std::vector<Tensor>& x) {
        Stack s = all_done;
        s[0] = x[0];
        s[1] = x[1];
        return (*loss)(s)[0];
      }, {all_done[0], all_done[1]});
    }
  }
}

// ---- Bad arguments and inputs -------------------------------------------------------------------

// BatchPadding::none: on an all-ones mask the value and the gradients are BatchPadding::masked's bit for
// bit (float32, as the agents train; 37 steps, so the mean divides by a count that is not a
// power of two), and a mask with any other entry is refused with the clear error.
TEST_CASE("RL losses: BatchPadding::none gives the masked loss bit for bit on an all-ones mask, and refuses padding") {
  using ctrax::BatchPadding;
  const Shape s{37, 1};
  const auto uniform32 = [&](Shape shape, uint64_t seed, double lo, double hi) {
    return ctrax::test::random_tensor(shape, DType::float32, seed, lo, hi);
  };
  const auto gaussian = std::make_shared<Gaussian>(Shape{}, 1.0, LearnStd::separate);
  const auto categorical = std::make_shared<Categorical>(3);
  struct Case {
    DistributionPtr dist;
    Tensor x, old_x, actions;
  };
  const std::vector<Case> cases = {
      {gaussian, uniform32(Shape{37, 1, 2}, 1, -1.0, 1.0), uniform32(Shape{37, 1, 2}, 2, -1.0, 1.0),
       uniform32(s, 3, -2.0, 2.0)},
      {categorical, uniform32(Shape{37, 1, 3}, 4, -2.0, 2.0), uniform32(Shape{37, 1, 3}, 5, -2.0, 2.0),
       ctrax::randint(ctrax::Key(6), s, 0, 3)},
  };
  const Tensor advantages = uniform32(s, 7, -2.0, 2.0);
  const Tensor ones = ctrax::ones(s, DType::float32);
  // Both versions of a loss on (x, mask): the loss and its gradient with respect to x.
  const auto value_and_gradient = [](const LayerPtr& loss, Stack in) {
    const Tensor x = in[0];
    return ctrax::value_and_grad([&](const Tensor& xx) {
      in[0] = xx;
      return (*loss)(in)[0];
    })(x);
  };
  const auto same = [&](const LayerPtr& masked, const LayerPtr& none, const Stack& in) {
    const auto a = value_and_gradient(masked, in);
    const auto b = value_and_gradient(none, in);
    CHECK(ctrax::test::bitwise_equal(a.value, b.value));
    CHECK(ctrax::test::bitwise_equal(a.grad, b.grad));
    CHECK(a.value.item<double>() != 0.0);
  };
  for (const Case& c : cases) {
    INFO(c.dist->name());
    const Stack in{c.x, c.actions, advantages, c.old_x, ones};
    same(ctrax::A2CLoss(c.dist, 0.05), ctrax::A2CLoss(c.dist, 0.05, BatchPadding::none), in);
    same(ctrax::PPOLoss(c.dist, 0.2, 0.05), ctrax::PPOLoss(c.dist, 0.2, 0.05, BatchPadding::none), in);
    same(ctrax::PPOLoss(c.dist, 0.2, 0.0), ctrax::PPOLoss(c.dist, 0.2, 0.0, BatchPadding::none), in);
    same(ctrax::AWRLoss(c.dist, 1.0, 20.0, 0.05), ctrax::AWRLoss(c.dist, 1.0, 20.0, 0.05, BatchPadding::none), in);
    // A bool mask of trues is all ones too.
    Stack with_bool = in;
    with_bool[4] = ctrax::ones(s, DType::boolean);
    same(ctrax::PPOLoss(c.dist, 0.2, 0.05), ctrax::PPOLoss(c.dist, 0.2, 0.05, BatchPadding::none), with_bool);
  }
  // The value loss of rollout passes, with and without its clip.
  const Tensor values = uniform32(s, 8, -1.0, 1.0), targets = uniform32(s, 9, -1.0, 1.0);
  const Tensor old_values = uniform32(s, 10, -1.0, 1.0);
  const Stack value_in{values, targets, ones, old_values};
  same(ctrax::RolloutValueLoss(), ctrax::RolloutValueLoss(std::nullopt, BatchPadding::none), value_in);
  same(ctrax::RolloutValueLoss(0.2), ctrax::RolloutValueLoss(0.2, BatchPadding::none), value_in);
  // No steps at all: 0, as with a mask.
  const Stack empty_in{ctrax::zeros(Shape{0, 1}, DType::float32), ctrax::zeros(Shape{0, 1}, DType::float32),
                       ctrax::zeros(Shape{0, 1}, DType::float32), ctrax::zeros(Shape{0, 1}, DType::float32)};
  CHECK(run(ctrax::RolloutValueLoss(std::nullopt, BatchPadding::none), empty_in) == 0.0);

  // Anything but ones in the mask is refused, whatever the entry.
  const std::string refusal = "has an entry other than 1, but this loss was made for batches without padding";
  for (const double entry : {0.0, 0.5, 2.0, kNaN}) {
    INFO(entry);
    std::vector<float> m(37, 1.0f);
    m[20] = static_cast<float>(entry);
    const Tensor mask = ctrax::from_vector(m, s);
    const Case& c = cases[0];
    CHECK_THROWS_WITH_AS((*ctrax::PPOLoss(c.dist, 0.2, 0.0, BatchPadding::none))(
                             Stack{c.x, c.actions, advantages, c.old_x, mask}),
                         doctest::Contains(("PPOLoss: the mask " + refusal).c_str()), Error);
    CHECK_THROWS_WITH_AS((*ctrax::RolloutValueLoss(std::nullopt, BatchPadding::none))(
                             Stack{values, targets, mask, old_values}),
                         doctest::Contains(("RolloutValueLoss: the mask " + refusal).c_str()), Error);
  }
  std::vector<float> flags(37, 1.0f);
  flags[3] = 0.0f;
  CHECK_THROWS_WITH_AS((*ctrax::A2CLoss(gaussian, 0.0, BatchPadding::none))(
                           Stack{cases[0].x, cases[0].actions, advantages, cases[0].old_x,
                                 ctrax::from_vector(flags, s).to(DType::boolean)}),
                       doctest::Contains(("A2CLoss: the mask " + refusal).c_str()), Error);
  // Shapes are still checked as with a mask.
  CHECK_THROWS_WITH_AS((*ctrax::PPOLoss(gaussian, 0.2, 0.0, BatchPadding::none))(
                           Stack{cases[0].x, cases[0].actions, ctrax::zeros(Shape{36, 1}, DType::float32),
                                 cases[0].old_x, ones}),
                       doctest::Contains("advantages of shape [36, 1] do not match the mask of shape [37, 1]"), Error);
  // An invalid value of the enum.
  CHECK_THROWS_WITH_AS(ctrax::PPOLoss(gaussian, 0.2, 0.0, static_cast<BatchPadding>(7)),
                       doctest::Contains("PPOLoss: padding has the invalid value 7"), Error);
  CHECK_THROWS_WITH_AS(ctrax::RolloutValueLoss(std::nullopt, static_cast<BatchPadding>(7)),
                       doctest::Contains("RolloutValueLoss: padding has the invalid value 7"), Error);
}

TEST_CASE("RL losses: bad construction arguments") {
  const auto dist = std::make_shared<Categorical>(3);
  const double nan = kNaN;
  CHECK_THROWS_WITH_AS(ctrax::PPOLoss(nullptr), doctest::Contains("PPOLoss: the distribution is null"), Error);
  CHECK_THROWS_WITH_AS(ctrax::A2CJointLoss(nullptr), doctest::Contains("A2CJointLoss: the distribution is null"), Error);
  CHECK_THROWS_WITH_AS(ctrax::PreferredMove(nullptr), doctest::Contains("PreferredMove: the distribution is null"),
                       Error);
  for (double eps : {0.0, 1.0, -0.1, 1.5, nan}) {
    CHECK_THROWS_WITH_AS(ctrax::PPOLoss(dist, eps), doctest::Contains("PPOLoss: epsilon must be in (0, 1), got"), Error);
    CHECK_THROWS_WITH_AS(ctrax::PPOJointLoss(dist, eps), doctest::Contains("PPOJointLoss: epsilon must be in (0, 1)"),
                         Error);
    CHECK_THROWS_WITH_AS(ctrax::ClipFraction(dist, eps), doctest::Contains("ClipFraction: epsilon must be in (0, 1)"),
                         Error);
    CHECK_THROWS_WITH_AS(ctrax::JointClipFraction(dist, eps), doctest::Contains("epsilon must be in (0, 1)"), Error);
  }
  for (double beta : {0.0, -1.0, nan, kInf}) {
    CHECK_THROWS_WITH_AS(ctrax::AWRLoss(dist, beta), doctest::Contains("AWRLoss: beta must be finite and > 0, got"),
                         Error);
    CHECK_THROWS_WITH_AS(ctrax::AWRJointLoss(dist, beta), doctest::Contains("AWRJointLoss: beta must be finite"), Error);
  }
  for (double w_max : {0.0, -2.0, nan}) {
    CHECK_THROWS_WITH_AS(ctrax::AWRLoss(dist, 1.0, w_max), doctest::Contains("AWRLoss: w_max must be > 0"), Error);
    CHECK_THROWS_WITH_AS(ctrax::AWRJointLoss(dist, 1.0, w_max), doctest::Contains("w_max must be > 0"), Error);
  }
  CHECK_NOTHROW(ctrax::AWRLoss(dist, 1.0, kInf));
  for (double c : {-0.01, nan, kInf}) {
    CHECK_THROWS_WITH_AS(ctrax::A2CLoss(dist, c),
                         doctest::Contains("A2CLoss: entropy_coeff must be finite and >= 0, got"), Error);
    CHECK_THROWS_WITH_AS(ctrax::PPOLoss(dist, 0.2, c), doctest::Contains("PPOLoss: entropy_coeff must be finite"), Error);
    CHECK_THROWS_WITH_AS(ctrax::AWRLoss(dist, 1.0, 20.0, c), doctest::Contains("AWRLoss: entropy_coeff"), Error);
    CHECK_THROWS_WITH_AS(ctrax::PPOJointLoss(dist, 0.2, c),
                         doctest::Contains("PPOJointLoss: value_loss_coeff must be finite and >= 0"), Error);
    CHECK_THROWS_WITH_AS(ctrax::PPOJointLoss(dist, 0.2, 0.1, c), doctest::Contains("PPOJointLoss: entropy_coeff"),
                         Error);
    CHECK_THROWS_WITH_AS(ctrax::A2CJointLoss(dist, c), doctest::Contains("A2CJointLoss: value_loss_coeff"), Error);
    CHECK_THROWS_WITH_AS(ctrax::A2CJointLoss(dist, 0.1, c), doctest::Contains("A2CJointLoss: entropy_coeff"), Error);
    CHECK_THROWS_WITH_AS(ctrax::AWRJointLoss(dist, 1.0, 20.0, c), doctest::Contains("AWRJointLoss: value_loss_coeff"),
                         Error);
    CHECK_THROWS_WITH_AS(ctrax::AWRJointLoss(dist, 1.0, 20.0, 0.1, c), doctest::Contains("AWRJointLoss: entropy_coeff"),
                         Error);
  }
}

TEST_CASE("RL losses: bad inputs name the layer, the expected and the actual shapes") {
  const auto dist = std::make_shared<Categorical>(3);
  const RefDist rd = ref_categorical(3);
  const PolicyData b = ppo_categorical_batch();  // [2, 3], D = 3
  const LayerPtr ppo = ctrax::PPOLoss(dist);
  auto with = [&](int i, Tensor t) {
    Stack s = b.stack(rd);
    s[static_cast<size_t>(i)] = std::move(t);
    return s;
  };
  // Advantages of another shape than the mask's.
  CHECK_THROWS_WITH_AS((*ppo)(with(2, ctrax::zeros(Shape{2, 2}, DType::float64))),
                       doctest::Contains("PPOLoss: advantages of shape [2, 2] do not match the mask of shape [2, 3]: "
                                         "expected advantages of shape [2, 3]"),
                       Error);
  // The wrong D for the distribution.
  CHECK_THROWS_WITH_AS((*ppo)(with(0, ctrax::zeros(Shape{2, 3, 4}, DType::float64))),
                       doctest::Contains("PPOLoss: dist_inputs of shape [2, 3, 4] do not match: expected [2, 3, 3], the "
                                         "mask's shape [2, 3] followed by D = n_inputs = 3 of Categorical(3)"),
                       Error);
  // Leading dims of dist_inputs against the mask.
  CHECK_THROWS_WITH_AS((*ppo)(with(0, ctrax::zeros(Shape{3, 2, 3}, DType::float64))),
                       doctest::Contains("dist_inputs of shape [3, 2, 3] do not match: expected [2, 3, 3]"), Error);
  CHECK_THROWS_WITH_AS((*ppo)(with(0, ctrax::zeros(Shape{6, 3}, DType::float64))),
                       doctest::Contains("dist_inputs of shape [6, 3] do not match: expected [2, 3, 3]"), Error);
  CHECK_THROWS_WITH_AS((*ppo)(with(3, ctrax::zeros(Shape{2, 3, 2}, DType::float64))),
                       doctest::Contains("old_dist_inputs of shape [2, 3, 2] do not match: expected [2, 3, 3]"), Error);
  // A mask of another shape: every per-step input is then wrong; dist_inputs are checked first.
  CHECK_THROWS_WITH_AS((*ppo)(with(4, ctrax::ones(Shape{2, 4}, DType::float64))),
                       doctest::Contains("dist_inputs of shape [2, 3, 3] do not match: expected [2, 4, 3]"), Error);
  // Actions.
  CHECK_THROWS_WITH_AS((*ppo)(with(1, ctrax::zeros(Shape{2, 3, 1}, DType::int64))),
                       doctest::Contains("actions of shape [2, 3, 1] do not match: expected [2, 3], the mask's shape "
                                         "[2, 3] followed by the event shape [] of Categorical(3)"),
                       Error);
  CHECK_THROWS_WITH_AS((*ppo)(with(1, ctrax::zeros(Shape{2, 3}, DType::float64))),
                       doctest::Contains("expected int32 or int64 category ids"), Error);
  CHECK_THROWS_WITH_AS((*ppo)(with(1, i64({0, 1, 3, 0, 0, 0}, Shape{2, 3}))),
                       doctest::Contains("category ids must be in [0, 3), got 3"), Error);
  // dtypes and undefined inputs.
  CHECK_THROWS_WITH_AS((*ppo)(with(0, ctrax::zeros(Shape{2, 3, 3}, DType::int64))),
                       doctest::Contains("dist_inputs have dtype int64, expected float32 or float64"), Error);
  CHECK_THROWS_WITH_AS((*ppo)(with(2, ctrax::zeros(Shape{2, 3}, DType::int32))),
                       doctest::Contains("advantages have dtype int32, expected float32 or float64"), Error);
  // (The layer system catches undefined inputs before the layer runs.)
  CHECK_THROWS_WITH_AS((*ppo)(with(2, Tensor())), doctest::Contains("PPOLoss: input 2 is undefined"), Error);
  // The mask's values.
  CHECK_THROWS_WITH_AS((*ppo)(with(4, f64({1, 1, -1, 1, 1, 0}, Shape{2, 3}))),
                       doctest::Contains("PPOLoss: the mask must be >= 0 (1 for a real step, 0 for padding), got -1"),
                       Error);
  CHECK_THROWS_WITH_AS((*ppo)(with(4, f64({1, kNaN, 1, 1, 1, 0}, Shape{2, 3}))),
                       doctest::Contains("the mask has a NaN or infinite entry"), Error);
  // A bool mask is fine.
  CHECK_NOTHROW((*ppo)(with(4, f64(b.m, b.s).to(DType::boolean))));
  // The metrics without a distribution still check the leading shapes.
  CHECK_THROWS_WITH_AS((*ctrax::AdvantageMean())(with(1, ctrax::zeros(Shape{3}, DType::int64))),
                       doctest::Contains("AdvantageMean: actions of shape [3] do not match the mask of shape [2, 3]"),
                       Error);

  // Joint batches.
  const JointData j = joint_categorical_batch();  // [2, 4]
  const LayerPtr joint = ctrax::PPOJointLoss(dist);
  auto jwith = [&](int i, Tensor t) {
    Stack s = j.stack(rd);
    s[static_cast<size_t>(i)] = std::move(t);
    return s;
  };
  CHECK_THROWS_WITH_AS((*joint)(jwith(1, ctrax::zeros(Shape{2, 4, 1}, DType::float64))),
                       doctest::Contains("PPOJointLoss: values of shape [2, 4, 1] do not match the mask of shape "
                                         "[2, 4]: expected values of shape [2, 4]"),
                       Error);
  CHECK_THROWS_WITH_AS((*joint)(jwith(1, ctrax::zeros(Shape{2, 4}, DType::float32))),
                       doctest::Contains("values have dtype float32 but dist_inputs have float64"), Error);
  CHECK_THROWS_WITH_AS((*joint)(jwith(2, ctrax::zeros(Shape{4, 2}, DType::float64))),
                       doctest::Contains("returns of shape [4, 2] do not match the mask of shape [2, 4]"), Error);
  CHECK_THROWS_WITH_AS((*joint)(jwith(3, ctrax::zeros(Shape{2}, DType::boolean))),
                       doctest::Contains("dones of shape [2] do not match the mask of shape [2, 4]"), Error);
  CHECK_THROWS_WITH_AS((*joint)(jwith(4, ctrax::zeros(Shape{2, 4, 1}, DType::float64))),
                       doctest::Contains("rewards of shape [2, 4, 1] do not match"), Error);
  CHECK_THROWS_WITH_AS((*joint)(jwith(6, ctrax::zeros(Shape{2, 3}, DType::float64))),
                       doctest::Contains("old_log_probs of shape [2, 3] do not match the mask of shape [2, 4]"), Error);
  CHECK_THROWS_WITH_AS((*joint)(jwith(0, ctrax::zeros(Shape{2, 4, 5}, DType::float64))),
                       doctest::Contains("PPOJointLoss: dist_inputs of shape [2, 4, 5] do not match: expected [2, 4, 3]"),
                       Error);
  CHECK_THROWS_WITH_AS((*joint)(jwith(7, f64({1, 1, 1, 1, 1, 1, 1, -0.5}, Shape{2, 4}))),
                       doctest::Contains("the mask must be >= 0"), Error);
  CHECK_THROWS_WITH_AS((*ctrax::ExplainedVariance())(jwith(2, ctrax::zeros(Shape{2, 5}, DType::float64))),
                       doctest::Contains("ExplainedVariance: returns of shape [2, 5] do not match"), Error);

  // The value batch.
  const LayerPtr vev = ctrax::ValueExplainedVariance();
  CHECK_THROWS_WITH_AS((*vev)({ctrax::zeros(Shape{2, 3}), ctrax::zeros(Shape{2, 3}), ctrax::ones(Shape{2, 4})}),
                       doctest::Contains("ValueExplainedVariance: values of shape [2, 3] do not match the weights of "
                                         "shape [2, 4]"),
                       Error);
  CHECK_THROWS_WITH_AS((*vev)({ctrax::zeros(Shape{2, 3}), ctrax::zeros(Shape{3, 2}), ctrax::ones(Shape{2, 3})}),
                       doctest::Contains("targets of shape [3, 2] do not match"), Error);
  CHECK_THROWS_WITH_AS((*vev)({ctrax::zeros(Shape{2, 3}), ctrax::zeros(Shape{2, 3}), ctrax::full(Shape{2, 3}, -1.0)}),
                       doctest::Contains("the weights must be >= 0"), Error);
}
