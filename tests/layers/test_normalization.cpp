// LayerNorm, BatchNorm and Normalize: forward against references computed in double, gradients by
// gradcheck through apply, the modes in which state moves, and bad inputs.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include <ctrax/autograd/gradcheck.h>
#include <ctrax/autograd/tape.h>
#include <ctrax/layers/combinators.h>
#include <ctrax/layers/core.h>
#include <ctrax/layers/normalization.h>
#include <ctrax/tensor/compile.h>
#include <ctrax/tensor/ops.h>

#include "../test_util.h"

using namespace ctrax;
using test::check_close;
using test::check_error;

namespace {

const test::Tolerance kF64{1e-12, 1e-12};

Tree with_weights(const Tree& w, const std::vector<Tensor>& leaves) { return w.with_leaves(leaves); }

void check_gradients(const GradcheckFn& f, const std::vector<Tensor>& inputs) {
  const GradcheckResult r = gradcheck(f, inputs);
  CHECK_MESSAGE(r.ok, r.message);
}

// Mean and population variance of the values of x at the positions with the same index on the kept axes:
// the reference for BatchNorm's statistics, in double by plain loops.
struct Stats {
  std::vector<double> mean, var;  // one per element of the statistics' shape
};
Stats batch_stats(const Tensor& x, const Shape& stats_shape) {
  const std::vector<double> v = x.to_vector<double>();
  const int64_t n_stats = stats_shape.numel();
  std::vector<double> s(n_stats, 0.0), s2(n_stats, 0.0), count(n_stats, 0.0);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t j = test::ravel_broadcast(test::unravel(i, x.shape()), stats_shape);
    s[j] += v[i];
    count[j] += 1;
  }
  Stats st{std::vector<double>(n_stats), std::vector<double>(n_stats)};
  for (int64_t j = 0; j < n_stats; ++j) st.mean[j] = s[j] / count[j];
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t j = test::ravel_broadcast(test::unravel(i, x.shape()), stats_shape);
    s2[j] += (v[i] - st.mean[j]) * (v[i] - st.mean[j]);
  }
  for (int64_t j = 0; j < n_stats; ++j) st.var[j] = s2[j] / count[j];
  return st;
}

// (x - mean) / sqrt(var + eps) * scale + bias with every operand broadcast to x's shape.
std::vector<double> bn_reference(const Tensor& x, const Shape& stats_shape, const std::vector<double>& mean,
                                 const std::vector<double>& var, const std::vector<double>& scale,
                                 const std::vector<double>& bias, double eps) {
  const std::vector<double> v = x.to_vector<double>();
  std::vector<double> out(v.size());
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t j = test::ravel_broadcast(test::unravel(i, x.shape()), stats_shape);
    out[i] = (v[i] - mean[j]) / std::sqrt(var[j] + eps) * scale[j] + bias[j];
  }
  return out;
}

}  // namespace

// ---- LayerNorm -------------------------------------------------------------------------------

TEST_CASE("layers: LayerNorm normalises the last axis and applies the learned scale and bias") {
  LayerPtr ln = LayerNorm();
  CHECK(ln->name() == "LayerNorm");
  const Tensor x = test::random_tensor(Shape{2, 3, 5}, DType::float64, 11, -3.0, 3.0);
  auto [w, s] = ln->init({ShapeDtype::of(x)});
  CHECK(w.paths() == std::vector<std::string>{"bias", "scale"});
  CHECK(w["scale"].leaf().to_vector<double>() == std::vector<double>(5, 1.0));
  CHECK(w["bias"].leaf().to_vector<double>() == std::vector<double>(5, 0.0));
  CHECK(w["scale"].leaf().dtype() == DType::float64);
  const std::vector<double> scale = {0.5, -1.0, 2.0, 1.5, 0.25}, bias = {0.1, 0.2, -0.3, 0.0, 1.0};
  w["scale"].leaf() = from_vector(scale, Shape{5});
  w["bias"].leaf() = from_vector(bias, Shape{5});
  const std::vector<double> ref = test::ref_along_axis(x, -1, [&](const std::vector<double>& line) {
    double m = 0, v = 0;
    for (double e : line) m += e / line.size();
    for (double e : line) v += (e - m) * (e - m) / line.size();
    std::vector<double> out;
    for (size_t j = 0; j < line.size(); ++j) out.push_back((line[j] - m) / std::sqrt(v + 1e-6) * scale[j] + bias[j]);
    return out;
  });
  for (Mode mode : {Mode::train, Mode::eval, Mode::predict, Mode::collect}) {
    INFO("mode " << mode_name(mode));
    check_close(ln->apply({x}, w, s, Key(), mode).outputs[0], x.shape(), ref, kF64);
  }
  // A constant row has zero variance: epsilon keeps it finite, the output is the bias.
  const Tensor constant = full(Shape{1, 5}, 3.0, DType::float64);
  check_close(ln->apply({constant}, w, s).outputs[0], Shape{1, 5}, bias, kF64);
  // float32 stays float32.
  CHECK((*LayerNorm())(zeros({2, 4})).dtype() == DType::float32);
}

TEST_CASE("layers: LayerNorm gradients by gradcheck over the input, scale and bias") {
  LayerPtr ln = LayerNorm(1e-3);
  const Tensor x = test::random_tensor(Shape{3, 4}, DType::float64, 3);
  auto initialized = ln->init({ShapeDtype::of(x)});
  Tree& w = initialized.first;
  Tree& s = initialized.second;
  const Tensor bias = test::random_tensor(Shape{4}, DType::float64, 4);
  const Tensor scale = test::random_tensor(Shape{4}, DType::float64, 5, 0.5, 2.0);
  check_gradients([&](const std::vector<Tensor>& in) {
    return ln->apply({in[0]}, with_weights(w, {in[1], in[2]}), s).outputs[0];
  }, {x, bias, scale});
}

TEST_CASE("layers: LayerNorm rejects a wrong last dimension, integer and rank-0 inputs") {
  LayerPtr ln = LayerNorm();
  auto initialized = ln->init({{Shape{2, 4}, DType::float32}});
  Tree& w = initialized.first;
  Tree& s = initialized.second;
  check_error([&] { ln->apply({zeros({2, 3})}, w, s); }, {"LayerNorm: input has last dimension 3, expected 4"});
  check_error([&] { ln->apply({zeros({2, 4}, DType::int32)}, w, s); }, {"LayerNorm", "int32 is not a float dtype"});
  check_error([&] { LayerNorm()->init({{Shape{2, 4}, DType::int64}}); }, {"int64 is not a float dtype"});
  check_error([&] { LayerNorm()->init({{Shape{}, DType::float32}}); }, {"rank-0 tensor"});
  check_error([&] { LayerNorm(-1.0); }, {"LayerNorm: epsilon must be finite and >= 0"});
}

// ---- BatchNorm -------------------------------------------------------------------------------

TEST_CASE("layers: BatchNorm in train mode uses the batch statistics and moves the running ones") {
  // Axes {0, 2} of a [4, 3, 5] input: one statistic per index of axis 1.
  LayerPtr bn = BatchNorm({0, 2}, 1e-5, 0.9);
  const Tensor x = test::random_tensor(Shape{4, 3, 5}, DType::float64, 21, -2.0, 4.0);
  auto [w, s] = bn->init({ShapeDtype::of(x)});
  CHECK(w["scale"].leaf().shape() == Shape{3});
  CHECK(w["bias"].leaf().shape() == Shape{3});
  CHECK(s.paths() == std::vector<std::string>{"mean", "n_batches", "var"});
  CHECK(s["mean"].leaf().shape() == Shape{1, 3, 1});
  CHECK(s["var"].leaf().to_vector<double>() == std::vector<double>(3, 1.0));
  const std::vector<double> scale = {2.0, 0.5, -1.0}, bias = {0.0, 1.0, -2.0};
  w["scale"].leaf() = from_vector(scale, Shape{3});
  w["bias"].leaf() = from_vector(bias, Shape{3});
  const Shape stats_shape{1, 3, 1};
  const Stats st = batch_stats(x, stats_shape);

  const LayerResult r = bn->apply({x}, w, s, Key(), Mode::train);
  check_close(r.outputs[0], x.shape(), bn_reference(x, stats_shape, st.mean, st.var, scale, bias, 1e-5), kF64);
  std::vector<double> want_mean, want_var;
  for (int j = 0; j < 3; ++j) {
    want_mean.push_back(0.9 * 0.0 + 0.1 * st.mean[j]);
    want_var.push_back(0.9 * 1.0 + 0.1 * st.var[j]);
  }
  check_close(r.state["mean"].leaf(), stats_shape, want_mean, kF64, "running mean");
  check_close(r.state["var"].leaf(), stats_shape, want_var, kF64, "running var");
  CHECK(r.state["n_batches"].leaf().item<int64_t>() == 1);
  // A second step starts from the first one's state.
  const LayerResult r2 = bn->apply({x}, w, r.state, Key(), Mode::train);
  for (int j = 0; j < 3; ++j) want_mean[j] = 0.9 * want_mean[j] + 0.1 * st.mean[j];
  check_close(r2.state["mean"].leaf(), stats_shape, want_mean, kF64, "running mean, step 2");
  CHECK(r2.state["n_batches"].leaf().item<int64_t>() == 2);

  // Every other mode normalises with the running statistics and leaves the state as it was.
  for (Mode mode : {Mode::eval, Mode::predict, Mode::collect}) {
    INFO("mode " << mode_name(mode));
    const LayerResult e = bn->apply({x}, w, r2.state, Key(), mode);
    check_close(e.outputs[0], x.shape(),
                bn_reference(x, stats_shape, r2.state["mean"].leaf().to_vector<double>(),
                             r2.state["var"].leaf().to_vector<double>(), scale, bias, 1e-5),
                kF64);
    check_close(e.state["mean"].leaf(), r2.state["mean"].leaf(), kF64);
    check_close(e.state["var"].leaf(), r2.state["var"].leaf(), kF64);
    CHECK(e.state["n_batches"].leaf().item<int64_t>() == 2);
  }
}

TEST_CASE("layers: BatchNorm without center or scale has no such weights, and takes negative axes") {
  LayerPtr bn = BatchNorm({-1}, 1e-5, 0.999, false, false);
  const Tensor x = test::random_tensor(Shape{2, 6}, DType::float64, 8);
  auto [w, s] = bn->init({ShapeDtype::of(x)});
  CHECK(w.num_leaves() == 0);
  CHECK(s["mean"].leaf().shape() == Shape{2, 1});
  const Stats st = batch_stats(x, Shape{2, 1});
  check_close(bn->apply({x}, w, s, Key(), Mode::train).outputs[0], x.shape(),
              bn_reference(x, Shape{2, 1}, st.mean, st.var, {1.0, 1.0}, {0.0, 0.0}, 1e-5), kF64);
}

TEST_CASE("layers: BatchNorm's batch variance does not cancel when the mean dwarfs the spread") {
  // float32 values 1e4 +- 1: E[x^2] - E[x]^2 (Trax's formula) loses everything to rounding (float32 spacing
  // at 1e8 is 8), the two-pass variance is exactly 1.
  LayerPtr bn = BatchNorm();
  const Tensor x = tensor({10001.0f, 9999.0f, 10001.0f, 9999.0f}, Shape{4, 1});
  auto [w, s] = bn->init({ShapeDtype::of(x)});
  const double z = 1.0 / std::sqrt(1.0 + 1e-5);
  check_close(bn->apply({x}, w, s, Key(), Mode::train).outputs[0], Shape{4, 1}, {z, -z, z, -z}, {1e-5, 1e-5});
}

TEST_CASE("layers: BatchNorm gradients by gradcheck in train mode (through the batch statistics) and eval mode") {
  LayerPtr bn = BatchNorm({0}, 1e-3);
  const Tensor x = test::random_tensor(Shape{5, 3}, DType::float64, 31);
  auto initialized = bn->init({ShapeDtype::of(x)});
  Tree& w = initialized.first;
  Tree& s = initialized.second;
  s["mean"].leaf() = test::random_tensor(Shape{1, 3}, DType::float64, 32);
  s["var"].leaf() = test::random_tensor(Shape{1, 3}, DType::float64, 33, 0.5, 2.0);
  const Tensor bias = test::random_tensor(Shape{3}, DType::float64, 34);
  const Tensor scale = test::random_tensor(Shape{3}, DType::float64, 35, 0.5, 2.0);
  for (Mode mode : {Mode::train, Mode::eval}) {
    INFO("mode " << mode_name(mode));
    check_gradients([&](const std::vector<Tensor>& in) {
      return bn->apply({in[0]}, with_weights(w, {in[1], in[2]}), s, Key(), mode).outputs[0];
    }, {x, bias, scale});
  }
}

TEST_CASE("layers: BatchNorm rejects mismatched shapes, integer inputs and bad axes or momentum") {
  LayerPtr bn = BatchNorm();
  auto initialized = bn->init({{Shape{8, 4}, DType::float32}});
  Tree& w = initialized.first;
  Tree& s = initialized.second;
  // Another batch size is fine; another feature size is not.
  CHECK(bn->apply({zeros({3, 4})}, w, s, Key(), Mode::train).outputs[0].shape() == Shape{3, 4});
  check_error([&] { bn->apply({zeros({8, 5})}, w, s); }, {"BatchNorm: input has shape [8, 5]", "[1, 4]"});
  check_error([&] { bn->apply({zeros({8, 4, 1})}, w, s); }, {"BatchNorm: input has shape [8, 4, 1]"});
  check_error([&] { bn->apply({zeros({8, 4}, DType::int32)}, w, s); }, {"int32 is not a float dtype"});
  check_error([&] { BatchNorm({2})->init({{Shape{8, 4}, DType::float32}}); },
              {"axis 2 is out of range for an input of rank 2"});
  check_error([&] { BatchNorm({0, -2})->init({{Shape{8, 4}, DType::float32}}); }, {"axis -2 is repeated"});
  check_error([&] { BatchNorm({}); }, {"axes must not be empty"});
  check_error([&] { BatchNorm({0}, 1e-5, 1.5); }, {"momentum must be in [0, 1]"});
}

// ---- Normalize -------------------------------------------------------------------------------

namespace {
// Population mean and variance per feature of the rows `obs` (each a vector of features).
std::pair<std::vector<double>, std::vector<double>> moments(const std::vector<std::vector<double>>& obs) {
  const size_t d = obs[0].size();
  std::vector<double> m(d, 0.0), v(d, 0.0);
  for (const auto& o : obs)
    for (size_t j = 0; j < d; ++j) m[j] += o[j] / obs.size();
  for (const auto& o : obs)
    for (size_t j = 0; j < d; ++j) v[j] += (o[j] - m[j]) * (o[j] - m[j]) / obs.size();
  return {m, v};
}
// Rows x[b, T - 1, :] of a [B, T, d] tensor: the observations collect mode adds.
std::vector<std::vector<double>> last_steps(const Tensor& x) {
  std::vector<std::vector<double>> rows;
  for (int64_t b = 0; b < x.size(0); ++b) rows.push_back(x.select(0, b).select(0, x.size(1) - 1).to_vector<double>());
  return rows;
}
}  // namespace

TEST_CASE("layers: Normalize accumulates the statistics of the last time steps only in collect mode") {
  LayerPtr norm = Normalize();
  // Observations far from zero: a sum-of-squares variance would cancel, Chan's update must not.
  const Tensor x1 = add(test::random_tensor(Shape{3, 2, 2}, DType::float64, 41), 1e6);
  const Tensor x2 = add(test::random_tensor(Shape{4, 5, 2}, DType::float64, 42), 1e6);
  auto [w, s] = norm->init({ShapeDtype::of(x1)});
  CHECK(w.num_leaves() == 0);
  CHECK(s.paths() == std::vector<std::string>{"count", "mean", "var"});
  CHECK(s["mean"].leaf().shape() == Shape{2});

  // Before any observation: mean 0, var 1, so y = x / (1 + eps); no mode but collect changes that.
  for (Mode mode : {Mode::train, Mode::eval, Mode::predict}) {
    INFO("mode " << mode_name(mode));
    const LayerResult r = norm->apply({x1}, w, s, Key(), mode);
    check_close(r.outputs[0], div(x1, 1.0 + 1e-5), kF64);
    CHECK(r.state["count"].leaf().item<int64_t>() == 0);
    CHECK(r.state["mean"].leaf().to_vector<double>() == std::vector<double>{0.0, 0.0});
  }

  const LayerResult c1 = norm->apply({x1}, w, s, Key(), Mode::collect);
  const LayerResult c2 = norm->apply({x2}, w, c1.state, Key(), Mode::collect);
  std::vector<std::vector<double>> seen = last_steps(x1);
  for (const auto& row : last_steps(x2)) seen.push_back(row);
  const auto [m, v] = moments(seen);
  CHECK(c2.state["count"].leaf().item<int64_t>() == 7);
  check_close(c2.state["mean"].leaf(), Shape{2}, m, {1e-9, 1e-12}, "mean");
  check_close(c2.state["var"].leaf(), Shape{2}, v, {1e-9, 1e-9}, "var");
  // The output of a collect step uses the statistics including that step.
  std::vector<double> want;
  const std::vector<double> xv = x2.to_vector<double>();
  for (size_t i = 0; i < xv.size(); ++i) want.push_back((xv[i] - m[i % 2]) / (std::sqrt(v[i % 2]) + 1e-5));
  check_close(c2.outputs[0], x2.shape(), want, {1e-8, 1e-8});
  // Other modes apply the statistics without moving them.
  for (Mode mode : {Mode::train, Mode::eval, Mode::predict}) {
    const LayerResult r = norm->apply({x2}, w, c2.state, Key(), mode);
    check_close(r.outputs[0], x2.shape(), want, {1e-8, 1e-8});
    CHECK(r.state["count"].leaf().item<int64_t>() == 7);
    check_close(r.state["mean"].leaf(), c2.state["mean"].leaf(), kF64);
  }
}

TEST_CASE("layers: Normalize with float32 statistics equals the float64 update rounded once, step by step") {
  // The update reads float32 inputs and statistics, computes in float64 and rounds the new
  // statistics once: the same bits as widening everything, updating in float64 and rounding.
  LayerPtr norm = Normalize({10, 1e-5, 5.0});  // sample_limit 10: the third batch is cut
  const Tensor first = test::random_tensor(Shape{4, 2, 3}, DType::float32, 71, -3.0, 5.0);
  auto [w, s32] = norm->init({ShapeDtype::of(first)});
  CHECK(s32["mean"].leaf().dtype() == DType::float32);
  for (int step = 0; step < 4; ++step) {
    INFO("step " << step);
    const Tensor x32 = step == 0 ? first : test::random_tensor(Shape{4, 2, 3}, DType::float32, 72 + step, -3.0, 5.0);
    Tree s64 = s32;
    s64["mean"].leaf() = s32["mean"].leaf().to(DType::float64);
    s64["var"].leaf() = s32["var"].leaf().to(DType::float64);
    const LayerResult r32 = norm->apply({x32}, w, s32, Key(), Mode::collect);
    const LayerResult r64 = norm->apply({x32.to(DType::float64)}, w, s64, Key(), Mode::collect);
    CHECK(r32.state["count"].leaf().item<int64_t>() == r64.state["count"].leaf().item<int64_t>());
    CHECK(r32.state["mean"].leaf().dtype() == DType::float32);
    CHECK(r32.state["mean"].leaf().to_vector<float>() == r64.state["mean"].leaf().to(DType::float32).to_vector<float>());
    CHECK(r32.state["var"].leaf().to_vector<float>() == r64.state["var"].leaf().to(DType::float32).to_vector<float>());
    s32 = r32.state;
  }
  CHECK(s32["count"].leaf().item<int64_t>() == 10);
}

TEST_CASE("layers: Normalize's one-kernel CPU forward equals its tensor-op form bit for bit") {
  // An input a tape follows takes the tensor ops (they are differentiable); any other CPU input of
  // the statistics' dtype the one kernel. Both, in every mode, float32 and float64, clipped or not,
  // and with infinite inputs against finite statistics; 70 features cross the kernel's block of 64
  // per-feature divisors, and 16 rows or more of at most 16 features take its periodic layout (74
  // rows of 3: four periods of 16 rows and 10 more; exactly one period of 16 rows; 18 rows of 16;
  // 18 of 17, one feature too many for it).
  struct Size {
    int64_t batch, features;
  };
  for (const Size size : {Size{5, 3}, Size{37, 3}, Size{8, 3}, Size{9, 16}, Size{9, 17}, Size{5, 70}})
  for (const DType dtype : {DType::float32, DType::float64}) {
    for (const double clip_at : {std::numeric_limits<double>::infinity(), 1.5}) {
      const int64_t features = size.features;
      INFO(size.batch * 2 << " rows of " << features << " features, " << dtype_name(dtype) << ", clip " << clip_at);
      LayerPtr norm = Normalize({std::numeric_limits<double>::infinity(), 1e-5, clip_at});
      const Tensor x = test::random_tensor(Shape{size.batch, 2, features}, dtype, 81, -4.0, 6.0);
      const Tensor with_inf =
          where(gt(x, full(x.shape(), 5.0, dtype)), full(x.shape(), std::numeric_limits<double>::infinity(), dtype), x);
      auto [w, s] = norm->init({ShapeDtype::of(x)});
      s = norm->apply({test::random_tensor(Shape{7, 1, features}, dtype, 82, -2.0, 9.0)}, w, s, Key(), Mode::collect).state;
      for (const Mode mode : {Mode::train, Mode::eval, Mode::collect}) {
        for (const Tensor& input : {x, with_inf}) {
          INFO("mode " << mode_name(mode));
          const LayerResult fused = norm->apply({input}, w, s, Key(), mode);
          GradientTape tape;
          const LayerResult ops = norm->apply({tape.watch(input)}, w, s, Key(), mode);
          CHECK(ops.outputs[0].trace_tape() != 0);  // the op path ran
          CHECK(fused.outputs[0].trace_tape() == 0);
          CHECK(test::bitwise_equal(fused.outputs[0], ops.outputs[0]));
          CHECK(test::bitwise_equal(fused.state["mean"].leaf(), ops.state["mean"].leaf()));
        }
      }
      // Finite statistics, so the comparison is of numbers (and clipped ones), not NaNs.
      const LayerResult r = norm->apply({x}, w, s, Key(), Mode::eval);
      CHECK(bool(all(isfinite(r.outputs[0])).item<uint8_t>()));
    }
  }
}

TEST_CASE("layers: may_change_state is true while a collect step could still move the statistics") {
  const Tensor x = test::random_tensor(Shape{3, 1, 2}, DType::float64, 61);
  LayerPtr limited = Normalize({5, 1e-5, std::numeric_limits<double>::infinity()});
  auto [w, s] = limited->init({ShapeDtype::of(x)});
  CHECK(limited->may_change_state(s, Mode::collect));
  for (const Mode mode : {Mode::train, Mode::eval, Mode::predict}) CHECK_FALSE(limited->may_change_state(s, mode));
  const Tree s3 = limited->apply({x}, w, s, Key(), Mode::collect).state;  // 3 of 5
  CHECK(limited->may_change_state(s3, Mode::collect));
  const Tree s5 = limited->apply({x}, w, s3, Key(), Mode::collect).state;  // 5 of 5: full
  CHECK_FALSE(limited->may_change_state(s5, Mode::collect));
  // And indeed a further collect step leaves every statistic as it was.
  const Tree s6 = limited->apply({x}, w, s5, Key(), Mode::collect).state;
  for (const char* key : {"mean", "var", "count"}) CHECK(test::bitwise_equal(s6[key].leaf(), s5[key].leaf()));
  // Without a limit the statistics always may move.
  LayerPtr unlimited = Normalize();
  auto [wu, su] = unlimited->init({ShapeDtype::of(x)});
  CHECK(unlimited->may_change_state(unlimited->apply({x}, wu, su, Key(), Mode::collect).state, Mode::collect));
  // Serial and Parallel ask their sublayers; a layer without state never changes one; a stateful
  // layer that does not say is assumed to (BatchNorm).
  LayerPtr serial = Serial({limited, Dense(4), Relu()});
  auto [ws, ss] = serial->init({ShapeDtype::of(x)});
  CHECK(serial->may_change_state(ss, Mode::collect));
  Tree full = ss;
  full[0] = s5;
  CHECK_FALSE(serial->may_change_state(full, Mode::collect));
  LayerPtr parallel = Parallel({limited, nullptr});
  auto [wp, sp] = parallel->init({ShapeDtype::of(x), ShapeDtype::of(x)});
  CHECK(parallel->may_change_state(sp, Mode::collect));
  Tree parallel_full = sp;
  parallel_full[0] = s5;
  CHECK_FALSE(parallel->may_change_state(parallel_full, Mode::collect));
  LayerPtr plain = Serial({Dense(4), Relu()});
  auto [wd, sd] = plain->init({ShapeDtype::of(x)});
  CHECK_FALSE(plain->may_change_state(sd, Mode::collect));
  LayerPtr batch_norm = BatchNorm();
  auto [wb, sb] = batch_norm->init({ShapeDtype::of(x)});
  CHECK(batch_norm->may_change_state(sb, Mode::eval));
}

TEST_CASE("layers: Normalize stops counting at sample_limit and clips the normalised value") {
  LayerPtr norm = Normalize({5, 1e-5, 2.0});
  const Tensor x = test::random_tensor(Shape{3, 1, 2}, DType::float64, 51);
  auto [w, s] = norm->init({ShapeDtype::of(x)});
  const LayerResult c1 = norm->apply({x}, w, s, Key(), Mode::collect);
  const Tensor y = test::random_tensor(Shape{3, 1, 2}, DType::float64, 52);
  const LayerResult c2 = norm->apply({y}, w, c1.state, Key(), Mode::collect);
  // 3 + 2 of the second batch reach the limit of 5; the third row of y is not counted.
  CHECK(c2.state["count"].leaf().item<int64_t>() == 5);
  std::vector<std::vector<double>> seen = last_steps(x);
  const auto rows_y = last_steps(y);
  seen.push_back(rows_y[0]);
  seen.push_back(rows_y[1]);
  const auto [m, v] = moments(seen);
  check_close(c2.state["mean"].leaf(), Shape{2}, m, kF64, "mean");
  check_close(c2.state["var"].leaf(), Shape{2}, v, kF64, "var");
  const LayerResult c3 = norm->apply({y}, w, c2.state, Key(), Mode::collect);
  CHECK(c3.state["count"].leaf().item<int64_t>() == 5);
  check_close(c3.state["mean"].leaf(), c2.state["mean"].leaf(), kF64);
  // Clipping: a value 100 standard deviations out comes back as +-2.
  const Tensor far = tensor({m[0] + 100.0 * std::sqrt(v[0]), m[1] - 100.0 * std::sqrt(v[1])}, Shape{1, 1, 2});
  check_close(norm->apply({far}, w, c2.state).outputs[0], Shape{1, 1, 2}, {2.0, -2.0}, kF64);
}

TEST_CASE("layers: Normalize's collect update replays in a compiled step, equal to eager bit for bit up to and past sample_limit") {
  // The update reads the count inside kernels (no item()), so a compiled collection step can replay it. The
  // limit of 10 with batches of 4 covers a whole batch (recorded, then replayed), a partial one (k = 2) and
  // none (k = 0: the statistics stay), all in the plan recorded for the first.
  LayerPtr norm = Normalize({10, 1e-5, 1e12});
  const Tensor first = test::random_tensor(Shape{4, 1, 3}, DType::float32, 71);
  const std::pair<Tree, Tree> initialized = norm->init({ShapeDtype::of(first)});
  const Tree& w = initialized.first;  // a named variable: lambdas may not capture structured bindings (clang)
  const Tree& s = initialized.second;
  const Tree structure = s;
  CompiledFunction step([&](const std::vector<Tensor>& in) {
    const Tree state = structure.with_leaves(std::span<const Tensor>(in).subspan(1));
    const LayerResult r = norm->apply({in[0]}, w, state, Key(), Mode::collect);
    std::vector<Tensor> out{r.outputs[0]};
    for (const Tensor& t : r.state.leaves()) out.push_back(t);
    return out;
  });
  Tree eager_state = s, compiled_state = s;
  for (int call = 0; call < 5; ++call) {
    INFO("call " << call);
    const Tensor x = test::random_tensor(Shape{4, 1, 3}, DType::float32, 72 + call);
    const LayerResult want = norm->apply({x}, w, eager_state, Key(), Mode::collect);
    std::vector<Tensor> in{x};
    for (const Tensor& t : compiled_state.leaves()) in.push_back(t);
    const std::vector<Tensor>& got = step(in);
    CHECK(test::bitwise_equal(got[0], want.outputs[0]));
    const std::vector<Tensor> want_leaves = want.state.leaves();
    std::vector<Tensor> leaves;
    for (size_t i = 0; i < want_leaves.size(); ++i) {
      CHECK(test::bitwise_equal(got[i + 1], want_leaves[i]));
      leaves.push_back(got[i + 1].clone());
    }
    compiled_state = structure.with_leaves(leaves);
    eager_state = want.state;
  }
  CHECK(eager_state["count"].leaf().item<int64_t>() == 10);
  CHECK(step.stats().recordings == 1);
  CHECK(step.stats().replays == 4);
  CHECK(step.stats().eager_calls == 0);
}

TEST_CASE("layers: Normalize gradient by gradcheck (the statistics are constants)") {
  LayerPtr norm = Normalize({1e9, 1e-5, 3.0});
  const Tensor obs = test::random_tensor(Shape{4, 2, 3}, DType::float64, 61);
  auto initialized = norm->init({ShapeDtype::of(obs)});
  Tree& w = initialized.first;
  Tree& s = initialized.second;
  const Tree state = norm->apply({obs}, w, s, Key(), Mode::collect).state;
  // Small inputs against the statistics' spread: inside the clip range, so the gradient is not trivially 0.
  const Tensor x = test::random_tensor(Shape{2, 3, 3}, DType::float64, 62, -0.5, 0.5);
  CHECK(max(abs(norm->apply({x}, w, state).outputs[0])).item<double>() < 3.0);
  // (Not in collect mode: there the statistics move with x, and are deliberately not differentiated.)
  for (Mode mode : {Mode::train, Mode::eval}) {
    INFO("mode " << mode_name(mode));
    check_gradients(
        [&](const std::vector<Tensor>& in) { return norm->apply({in[0]}, w, state, Key(), mode).outputs[0]; }, {x});
  }
}

TEST_CASE("layers: Normalize rejects low ranks, mismatched features, integers and empty time") {
  LayerPtr norm = Normalize();
  auto initialized = norm->init({{Shape{2, 3, 4}, DType::float32}});
  Tree& w = initialized.first;
  Tree& s = initialized.second;
  check_error([&] { norm->apply({zeros({2, 3, 5})}, w, s); },
              {"Normalize: input has shape [2, 3, 5], expected [batch, time] followed by the features [4]"});
  check_error([&] { norm->apply({zeros({2, 3, 4}, DType::int32)}, w, s); }, {"int32 is not a float dtype"});
  check_error([&] { Normalize()->init({{Shape{4}, DType::float32}}); }, {"input has rank 1"});
  check_error([&] { norm->apply({zeros({2, 0, 4})}, w, s, Key(), Mode::collect); }, {"no time steps"});
  check_error([&] { Normalize({-1.0}); }, {"sample_limit must be >= 0"});
  check_error([&] { Normalize({10, 1e-5, 0.0}); }, {"clip must be > 0"});
}
