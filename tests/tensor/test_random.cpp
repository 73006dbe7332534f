// Tests of tensor/random.h: the Philox-4x32-10 block function against published known
// answers, key derivation, the documented counter layout, determinism and independence from
// the thread count, statistical sanity with fixed keys and loose (5 sigma) bounds, ranges
// and errors. Random functions are not ops of op_list.h, so nothing is declared tested here.
#include <ctrax/autograd/grad.h>
#include <ctrax/kernels/parallel.h>
#include <ctrax/tensor/random.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "test_util.h"

using namespace ctrax;
using ctrax::test::check_error;

namespace {

template <typename T>
bool same_values(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() && a.to_vector<T>() == b.to_vector<T>();
}

double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

double variance_of(const std::vector<double>& v) {
  const double m = mean_of(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return s / static_cast<double>(v.size());
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Philox known answers
// ---------------------------------------------------------------------------------------------

TEST_CASE("random: philox4x32-10 known-answer vectors") {
  // From the kat_vectors file of the Random123 distribution (D. E. Shaw Research), as quoted
  // in DEShawResearch/Random123-Boost libs/random/test/test_philox.cpp (test_kat_philox4x32):
  // counter (4 words), key (2 words) -> expected output (4 words).
  struct Kat {
    std::array<uint32_t, 4> counter;
    std::array<uint32_t, 2> key;
    std::array<uint32_t, 4> expected;
  };
  const Kat kats[] = {
      {{0x00000000, 0x00000000, 0x00000000, 0x00000000},
       {0x00000000, 0x00000000},
       {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
      // Further philox4x32 10 lines of the generated known-answer set in Random123's
      // examples/kat_vectors (as stored in girving/random123-manual examples/kat_vectors).
      {{0x00000001, 0x00000000, 0x00000000, 0x00000000},
       {0x00000001, 0x00000000},
       {0xac08141b, 0xdfc5ccbe, 0x79c07a47, 0xa7f66093}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0x00000000, 0x00000001},
       {0x126514c3, 0xd1898b69, 0xda2707b3, 0x6e6fb436}},
      {{0x00000000, 0x00000000, 0x00000000, 0x80000000},
       {0x00000000, 0x80000000},
       {0xf7a0b371, 0xe51dc93d, 0x56ce135d, 0x1d4b5580}},
  };
  for (const Kat& kat : kats) {
    const auto got = philox4x32_10(kat.counter, kat.key);
    for (int w = 0; w < 4; ++w) {
      INFO("counter[0] = " << kat.counter[0] << ", key = " << kat.key[0] << " " << kat.key[1] << ", word " << w);
      CHECK(got[w] == kat.expected[w]);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Keys, split, fold_in
// ---------------------------------------------------------------------------------------------

TEST_CASE("random: Key construction, words, equality and printing") {
  const Key k(0x0123456789abcdefULL);
  CHECK(k.words()[0] == 0x89abcdefu);
  CHECK(k.words()[1] == 0x01234567u);
  CHECK(Key::from_seed(0x0123456789abcdefULL) == k);
  CHECK(Key(k.words()[0], k.words()[1]) == k);
  CHECK(Key(1) != Key(2));
  CHECK(Key() == Key(0));
  std::ostringstream text;
  text << Key(42);
  CHECK(text.str() == "Key(0x0000002a, 0x00000000)");
}

TEST_CASE("random: split follows the documented derivation and gives distinct keys") {
  const Key parent(7);
  const std::vector<Key> children = split(parent, 5);
  REQUIRE(children.size() == 5);
  for (int j = 0; j < 5; ++j) {
    const auto out = philox4x32_10({static_cast<uint32_t>(j), 0, 0, 1}, parent.words());
    CHECK(children[j] == Key(out[0], out[1]));
  }
  // child j does not depend on n; the pair form equals split(key, 2)
  const std::vector<Key> more = split(parent, 9);
  for (int j = 0; j < 5; ++j) CHECK(more[j] == children[j]);
  const auto [a, b] = split(parent);
  CHECK(a == children[0]);
  CHECK(b == children[1]);
  CHECK(split(parent, 1).size() == 1);

  std::set<std::pair<uint32_t, uint32_t>> seen{{parent.words()[0], parent.words()[1]}};
  for (const Key& k : split(parent, 2000)) seen.insert({k.words()[0], k.words()[1]});
  CHECK(seen.size() == 2001);

  // split children give different streams
  const Tensor ua = uniform(a, {64}), ub = uniform(b, {64}), up = uniform(parent, {64});
  CHECK_FALSE(same_values<float>(ua, ub));
  CHECK_FALSE(same_values<float>(ua, up));
}

TEST_CASE("random: fold_in follows the documented derivation, distinct data give distinct keys") {
  const Key key(123);
  const uint64_t data = 0x1122334455667788ULL;
  const auto out = philox4x32_10({0x55667788u, 0x11223344u, 0, 2}, key.words());
  CHECK(fold_in(key, data) == Key(out[0], out[1]));
  std::set<std::pair<uint32_t, uint32_t>> seen;
  for (uint64_t d = 0; d < 2000; ++d) {
    const Key k = fold_in(key, d);
    seen.insert({k.words()[0], k.words()[1]});
  }
  CHECK(seen.size() == 2000);
  CHECK(fold_in(key, 0) != split(key, 1)[0]);  // the purpose word separates them
  CHECK(fold_in(key, 5) == fold_in(key, 5));
  CHECK(fold_in(Key(1), 5) != fold_in(Key(2), 5));
}

// ---------------------------------------------------------------------------------------------
// Counter layout, determinism, thread count
// ---------------------------------------------------------------------------------------------

TEST_CASE("random: uniform float32 element i is the top 24 bits of 32-bit draw i") {
  const Key key(99);
  const std::vector<float> u = uniform(key, {9}).to_vector<float>();
  for (uint32_t i = 0; i < 9; ++i) {
    const auto block = philox4x32_10({i / 4, 0, 0, 0}, key.words());
    CHECK(u[i] == static_cast<float>((block[i % 4] >> 8) * std::ldexp(1.0, -24)));
  }
  // float64: 64-bit draw i = words 2(i%2) (high) and 2(i%2)+1 of block i/2, top 53 bits
  const std::vector<double> d = uniform(key, {5}, DType::float64).to_vector<double>();
  for (uint32_t i = 0; i < 5; ++i) {
    const auto block = philox4x32_10({i / 2, 0, 0, 0}, key.words());
    const uint64_t w = (uint64_t{block[2 * (i % 2)]} << 32) | block[2 * (i % 2) + 1];
    CHECK(d[i] == static_cast<double>(w >> 11) * std::ldexp(1.0, -53));
  }
}

TEST_CASE("random: same key same result, element i depends only on (key, i)") {
  const Key key(5);
  CHECK(same_values<float>(uniform(key, {3, 4}), uniform(key, {3, 4})));
  CHECK(same_values<double>(normal(key, {7}, DType::float64), normal(key, {7}, DType::float64)));
  CHECK_FALSE(same_values<float>(uniform(Key(5), {16}), uniform(Key(6), {16})));
  // a longer output extends a shorter one; the shape does not matter, only the flat index
  const std::vector<float> short_u = uniform(key, {10}).to_vector<float>();
  const std::vector<float> long_u = uniform(key, {2, 50}).to_vector<float>();
  for (size_t i = 0; i < short_u.size(); ++i) CHECK(short_u[i] == long_u[i]);
  const std::vector<double> short_n = normal(key, {5}, DType::float64).to_vector<double>();
  const std::vector<double> long_n = normal(key, {40}, DType::float64).to_vector<double>();
  for (size_t i = 0; i < short_n.size(); ++i) CHECK(short_n[i] == long_n[i]);
  const std::vector<int64_t> short_r = randint(key, {5}, -3, 1000).to_vector<int64_t>();
  const std::vector<int64_t> long_r = randint(key, {3, 3}, -3, 1000).to_vector<int64_t>();
  for (size_t i = 0; i < short_r.size(); ++i) CHECK(short_r[i] == long_r[i]);
}

TEST_CASE("random: results do not depend on unrelated calls") {
  const Key key(2024);
  const Tensor before = uniform(key, {100});
  (void)normal(Key(1), {1000});
  (void)split(key, 10);
  (void)permutation(Key(3), 50);
  (void)bernoulli(key, {33}, 0.5);
  CHECK(same_values<float>(before, uniform(key, {100})));
}

TEST_CASE("random: results do not depend on the thread count") {
  test::ThreadCountGuard guard;
  const Key key(77);
  const Shape big{3, 70001};  // > one parallel chunk, not a multiple of the block size
  const Tensor logits = tensor<float>({0.1f, -1.0f, 2.0f, 0.0f});
  auto draw_all = [&] {
    return std::vector<Tensor>{uniform(key, big),
                               uniform(key, big, DType::float64, -2, 5),
                               normal(key, big),
                               normal(key, big, DType::float64),
                               bernoulli(key, big, 0.3),
                               randint(key, big, -10, 17),
                               randint(key, big, 0, 1000, DType::int32),
                               categorical(key, logits, -1, Shape{100003})};
  };
  kernels::set_num_threads(1);
  const std::vector<Tensor> one = draw_all();
  kernels::set_num_threads(2);
  const std::vector<Tensor> two = draw_all();
  for (size_t i = 0; i < one.size(); ++i) {
    INFO("sampler " << i);
    CHECK(same_values<double>(one[i], two[i]));
  }
}

// ---------------------------------------------------------------------------------------------
// Statistics (fixed keys, bounds of 5 standard errors)
// ---------------------------------------------------------------------------------------------

TEST_CASE("random: uniform and normal moments") {
  const int64_t n = 100000;
  const double sn = std::sqrt(static_cast<double>(n));
  for (DType dtype : {DType::float32, DType::float64}) {
    INFO("dtype " << dtype);
    const std::vector<double> u = uniform(Key(11), {n}, dtype).to_vector<double>();
    CHECK(std::fabs(mean_of(u) - 0.5) < 5 * std::sqrt(1.0 / 12) / sn);
    CHECK(std::fabs(variance_of(u) - 1.0 / 12) < 5 * std::sqrt(1.0 / 180) / sn);  // Var((x-m)^2) = 1/180
    CHECK(std::all_of(u.begin(), u.end(), [](double x) { return x >= 0.0 && x < 1.0; }));

    const std::vector<double> ab = uniform(Key(12), {n}, dtype, -3, 5).to_vector<double>();
    CHECK(std::fabs(mean_of(ab) - 1.0) < 5 * 8 * std::sqrt(1.0 / 12) / sn);
    CHECK(std::all_of(ab.begin(), ab.end(), [](double x) { return x >= -3.0 && x < 5.0; }));

    const std::vector<double> z = normal(Key(13), {n}, dtype).to_vector<double>();
    CHECK(std::fabs(mean_of(z)) < 5 / sn);
    CHECK(std::fabs(variance_of(z) - 1) < 5 * std::sqrt(2.0) / sn);
    // the two halves of each Box-Muller pair are uncorrelated
    double cross = 0;
    for (int64_t i = 0; i + 1 < n; i += 2) cross += z[i] * z[i + 1];
    CHECK(std::fabs(cross / (n / 2)) < 5 / std::sqrt(n / 2.0));

    const std::vector<double> shifted = normal(Key(14), {n}, dtype, 3.0, 2.0).to_vector<double>();
    CHECK(std::fabs(mean_of(shifted) - 3.0) < 5 * 2 / sn);
    CHECK(std::fabs(variance_of(shifted) - 4.0) < 5 * 4 * std::sqrt(2.0) / sn);
  }
  // stddev 0 gives the mean exactly
  for (double x : normal(Key(1), {10}, DType::float64, 1.5, 0.0).to_vector<double>()) CHECK(x == 1.5);
}

// normal(key, mean, stddev) is add(mean, mul(stddev, normal(key, shape, dtype))) bit for bit: both
// dtypes, parameters that are one evenly spaced run (a slice of a policy's outputs) or not (an
// expanded or transposed view), more than one chunk of 64, and a rank-0 draw.
TEST_CASE("random: normal with tensor parameters equals mean + stddev z bit for bit, for every layout") {
  for (const DType dtype : {DType::float32, DType::float64}) {
    INFO(dtype_name(dtype));
    const Tensor outputs = test::random_tensor({300, 2}, dtype, 1, -2.0, 2.0);
    const Tensor wide = test::random_tensor({5, 3}, dtype, 2, 0.1, 2.0);
    struct Case {
      Tensor mean, stddev;
    };
    const std::vector<Case> cases = {
        {outputs.slice(1, 0, 1), abs(outputs.slice(1, 1, 2))},                              // strided [300, 1]
        {test::random_tensor({7}, dtype, 3), test::random_tensor({7}, dtype, 4, 0.5, 1.5)},  // contiguous
        {wide.transpose(0, 1), wide.transpose(0, 1)},                                       // transposed [3, 5]
        {test::random_tensor({3, 5}, dtype, 5), test::random_tensor({3, 1}, dtype, 6, 0.5, 1.0).expand({3, 5})},
        {full({}, 2.0, dtype), full({}, 0.5, dtype)},                                       // rank 0
        {zeros({0, 3}, dtype), zeros({0, 3}, dtype)},                                       // empty
    };
    for (size_t c = 0; c < cases.size(); ++c) {
      INFO("case " << c);
      const Key key = fold_in(Key(21), c);
      const Tensor& m = cases[c].mean;
      const Tensor& s = cases[c].stddev;
      const Tensor got = normal(key, m, s);
      const Tensor want = add(m, mul(s, normal(key, m.shape(), dtype)));
      CHECK(got.shape() == m.shape());
      CHECK(got.dtype() == dtype);
      CHECK(test::bitwise_equal(got, want));
    }
  }
  // The thread count changes nothing.
  test::ThreadCountGuard threads;
  const Tensor m = test::random_tensor({4000}, DType::float32, 7), s = test::random_tensor({4000}, DType::float32, 8);
  const Tensor one = normal(Key(3), m.expand({2, 4000}), s.expand({2, 4000}));
  kernels::set_num_threads(2);
  const Tensor two = normal(Key(3), m.expand({2, 4000}), s.expand({2, 4000}));
  kernels::set_num_threads(1);
  CHECK(test::bitwise_equal(one, two));
  CHECK(test::bitwise_equal(one, add(m, mul(s, normal(Key(3), {2, 4000})))));
  // Bad arguments.
  const Tensor f32 = zeros({3}), f64 = zeros({3}, DType::float64);
  check_error([&] { normal(Key(1), f32, f64); }, {"normal: mean (float32) and stddev (float64) must be float tensors"});
  check_error([&] { normal(Key(1), zeros({3}, DType::int64), zeros({3}, DType::int64)); }, {"must be float tensors"});
  check_error([&] { normal(Key(1), f32, zeros({4})); }, {"normal: stddev of shape [4] does not match mean of shape [3]"});
  check_error([&] { normal(Key(1), Tensor(), f32); }, {"normal: mean is an undefined tensor"});
  check_error([&] { normal(Key(1), f32, Tensor()); }, {"normal: stddev is an undefined tensor"});
  check_error([&] { normal(Key(1), zeros({3}, DType::float32), zeros({3}, DType::int32)); },
              {"normal: mean (float32) and stddev (int32) must be float tensors of one dtype"});
  // Not differentiable: a traced parameter is refused.
  check_error([&] { value_and_grad([&](const Tensor& x) { return sum(normal(Key(1), x, ones({3}))); })(f32); },
              {"normal(key, mean, stddev) is not differentiable", "its mean"});
}

TEST_CASE("random: bernoulli frequencies, scalar and broadcast tensor probabilities") {
  const int64_t n = 100000;
  const double p = 0.3;
  const std::vector<int64_t> b = bernoulli(Key(21), {n}, p).to(DType::int64).to_vector<int64_t>();
  const double freq = static_cast<double>(std::count(b.begin(), b.end(), 1)) / n;
  CHECK(std::fabs(freq - p) < 5 * std::sqrt(p * (1 - p) / n));
  CHECK(bernoulli(Key(21), {n}, p).dtype() == DType::boolean);

  const std::vector<int64_t> never = bernoulli(Key(2), {1000}, 0.0).to(DType::int64).to_vector<int64_t>();
  CHECK(std::count(never.begin(), never.end(), 1) == 0);
  const std::vector<int64_t> always = bernoulli(Key(2), {1000}, 1.0).to(DType::int64).to_vector<int64_t>();
  CHECK(std::count(always.begin(), always.end(), 1) == 1000);

  // per-row probabilities [3, 1] broadcast to [3, m]; the tensor form with a constant p
  // equals the scalar form
  const int64_t m = 40000;
  const Tensor probs = tensor<double>({0.0, 0.25, 1.0}, {3, 1});
  const Tensor rows = bernoulli(Key(22), {3, m}, probs).to(DType::int64);
  const std::vector<int64_t> r = rows.to_vector<int64_t>();
  int64_t counts[3] = {0, 0, 0};
  for (int64_t i = 0; i < 3 * m; ++i) counts[i / m] += r[i];
  CHECK(counts[0] == 0);
  CHECK(counts[2] == m);
  CHECK(std::fabs(counts[1] / double(m) - 0.25) < 5 * std::sqrt(0.25 * 0.75 / m));
  CHECK(same_values<uint8_t>(bernoulli(Key(23), {4, 5}, full({1}, 0.4)), bernoulli(Key(23), {4, 5}, 0.4)));
  const Tensor p_nc = ctrax::test::non_contiguous(tensor<float>({0.f, 1.f, 1.f, 0.f, 1.f, 0.f}, {2, 3}));
  CHECK(bernoulli(Key(3), p_nc).to(DType::int64).to_vector<int64_t>() == std::vector<int64_t>{0, 1, 1, 0, 1, 0});
}

TEST_CASE("random: categorical frequencies match softmax(logits) (chi-square)") {
  const int64_t n = 100000;
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> logit_values{1.0, 2.0, 0.5, -inf, 3.0};
  for (DType dtype : {DType::float32, DType::float64}) {
    INFO("dtype " << dtype);
    const Tensor logits = from_vector(logit_values).to(dtype);
    const Tensor samples = categorical(Key(31), logits, -1, Shape{n});
    CHECK(samples.dtype() == DType::int64);
    CHECK(samples.shape() == Shape{n});
    std::vector<int64_t> counts(5, 0);
    for (int64_t s : samples.to_vector<int64_t>()) {
      if (s < 0 || s >= 5) FAIL("category " << s << " outside [0, 5)");
      ++counts[static_cast<size_t>(s)];
    }
    CHECK(counts[3] == 0);  // -inf is never chosen
    double z = 0;
    for (double v : logit_values) z += std::exp(v);
    double chi2 = 0;
    for (size_t j = 0; j < 5; ++j) {
      if (j == 3) continue;
      const double expected = n * std::exp(logit_values[j]) / z;
      chi2 += (counts[j] - expected) * (counts[j] - expected) / expected;
    }
    // 3 degrees of freedom: P(chi2 > 40) is about 1e-8
    CHECK(chi2 < 40);
  }
  // huge logits do not overflow: p = (1/4, 3/4)
  const Tensor big = tensor<double>({1000.0, 1000.0 + std::log(3.0)});
  const std::vector<int64_t> s = categorical(Key(32), big, 0, Shape{20000}).to_vector<int64_t>();
  const double f1 = static_cast<double>(std::count(s.begin(), s.end(), 1)) / 20000;
  CHECK(std::fabs(f1 - 0.75) < 5 * std::sqrt(0.75 * 0.25 / 20000));
}

TEST_CASE("random: categorical axis, batch broadcasting and non-contiguous logits") {
  const double inf = std::numeric_limits<double>::infinity();
  // categories along axis 0 (size 3), batch of 2: row b can only pick category 2 - b
  const Tensor logits = tensor<double>({-inf, -inf, -inf, 0.5, 0.0, -inf}, {3, 2});
  CHECK(categorical(Key(1), logits, 0).to_vector<int64_t>() == std::vector<int64_t>{2, 1});
  const Tensor many = categorical(Key(1), logits, 0, Shape{4, 2});
  CHECK(many.shape() == Shape{4, 2});
  CHECK(many.to_vector<int64_t>() == std::vector<int64_t>{2, 1, 2, 1, 2, 1, 2, 1});
  // the same distribution via a transposed view along the last axis
  const Tensor transposed = logits.transpose(0, 1);  // [2, 3], non-contiguous
  CHECK(categorical(Key(1), transposed, -1).to_vector<int64_t>() == std::vector<int64_t>{2, 1});
  CHECK(same_values<int64_t>(categorical(Key(9), transposed, 1, Shape{5, 2}),
                             categorical(Key(9), transposed.contiguous(), 1, Shape{5, 2})));
  // one category: always 0; zero-sized batch: empty output; +inf wins
  CHECK(categorical(Key(1), zeros({4, 1}), -1).to_vector<int64_t>() == std::vector<int64_t>(4, 0));
  CHECK(categorical(Key(1), zeros({0, 3}), -1).shape() == Shape{0});
  CHECK(categorical(Key(1), tensor<double>({0.0, inf, 5.0})).item<int64_t>() == 1);
  CHECK(categorical(Key(1), tensor<float>({0.f, 1.f})).rank() == 0);
}

// The documented draws exactly: Fisher-Yates from i = n - 1 down, j = Lemire's bounded draw in
// [0, i] from 64-bit word i (the high and low words 2 (i % 2), 2 (i % 2) + 1 of Philox block i / 2
// at counter {i / 2, 0, attempt, 0}), redrawn at the next attempt when it lands in an extra slot.
// Sizes around the blocks the sampler computes at a time (128 blocks, 256 draws).
TEST_CASE("random: permutation makes exactly the documented Fisher-Yates draws") {
  const auto reference = [](Key key, int64_t n) {
    std::vector<int64_t> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = i;
    const auto word = [&](uint64_t i, uint32_t attempt) {
      const auto w = philox4x32_10({static_cast<uint32_t>(i / 2), static_cast<uint32_t>((i / 2) >> 32), attempt, 0},
                                   key.words());
      return (uint64_t{w[2 * (i % 2)]} << 32) | w[2 * (i % 2) + 1];
    };
    for (int64_t i = n - 1; i >= 1; --i) {
      const uint64_t range = static_cast<uint64_t>(i) + 1, threshold = (0 - range) % range;
      unsigned __int128 m = static_cast<unsigned __int128>(word(static_cast<uint64_t>(i), 0)) * range;
      for (uint32_t attempt = 1; static_cast<uint64_t>(m) < threshold; ++attempt)
        m = static_cast<unsigned __int128>(word(static_cast<uint64_t>(i), attempt)) * range;
      std::swap(v[static_cast<size_t>(i)], v[static_cast<size_t>(m >> 64)]);
    }
    return v;
  };
  for (const int64_t n : {2, 3, 255, 256, 257, 258, 1000, 4097}) {
    INFO("n " << n);
    for (uint64_t seed = 0; seed < 3; ++seed) {
      const Key key = fold_in(Key(45), seed);
      CHECK(permutation(key, n).to_vector<int64_t>() == reference(key, n));
    }
  }
}

TEST_CASE("random: permutation is a permutation, all 3! orders appear") {
  for (int64_t n : {0, 1, 2, 10, 1000}) {
    const Tensor p = permutation(Key(41), n);
    CHECK(p.dtype() == DType::int64);
    CHECK(p.shape() == Shape{n});
    std::vector<int64_t> v = p.to_vector<int64_t>();
    std::sort(v.begin(), v.end());
    for (int64_t i = 0; i < n; ++i) CHECK(v[static_cast<size_t>(i)] == i);
  }
  CHECK(same_values<int64_t>(permutation(Key(42), 100), permutation(Key(42), 100)));
  CHECK_FALSE(same_values<int64_t>(permutation(Key(42), 100), permutation(Key(43), 100)));
  std::map<std::vector<int64_t>, int> orders;
  const std::vector<Key> keys = split(Key(44), 600);
  for (const Key& k : keys) ++orders[permutation(k, 3).to_vector<int64_t>()];
  CHECK(orders.size() == 6);
  for (const auto& [order, count] : orders) CHECK(std::abs(count - 100) < 5 * std::sqrt(600 * (1.0 / 6) * (5.0 / 6)));
}

TEST_CASE("random: randint ranges and uniformity") {
  const int64_t n = 60000;
  const std::vector<int64_t> r = randint(Key(51), {n}, 0, 3).to_vector<int64_t>();
  int64_t counts[3] = {0, 0, 0};
  for (int64_t x : r) {
    if (x < 0 || x >= 3) FAIL("randint value " << x << " outside [0, 3)");
    ++counts[x];
  }
  for (int64_t c : counts) CHECK(std::fabs(c - n / 3.0) < 5 * std::sqrt(n * (1.0 / 3) * (2.0 / 3)));

  const Tensor small = randint(Key(52), {1000}, -5, 5, DType::int32);
  CHECK(small.dtype() == DType::int32);
  for (int32_t x : small.to_vector<int32_t>()) CHECK((x >= -5 && x < 5));
  for (int64_t x : randint(Key(53), {10}, 7, 8).to_vector<int64_t>()) CHECK(x == 7);
  // the widest range and the int32 extremes
  const int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  const std::vector<int64_t> wide = randint(Key(54), {1000}, lo, hi).to_vector<int64_t>();
  CHECK(std::set<int64_t>(wide.begin(), wide.end()).size() > 990);
  int64_t negative = std::count_if(wide.begin(), wide.end(), [](int64_t x) { return x < 0; });
  CHECK(std::abs(negative - 500) < 5 * std::sqrt(250.0));
  for (int64_t x : wide) CHECK(x != hi);
  const Tensor i32 = randint(Key(55), {100}, std::numeric_limits<int32_t>::min(),
                             int64_t{std::numeric_limits<int32_t>::max()} + 1, DType::int32);
  CHECK(i32.numel() == 100);
  // range 3 * 2^62: a plain multiply-shift would give offsets divisible by 3 probability 1/2
  // (2 of every 4 64-bit draws); rejecting the 2^64 mod range = 2^62 extra draws (a quarter
  // of them) restores 1/3
  const int64_t half = int64_t{3} << 61;
  int64_t divisible = 0;
  const int64_t m = 3000;
  for (int64_t x : randint(Key(56), {m}, -half, half).to_vector<int64_t>()) {
    if (x < -half || x >= half) FAIL("randint value " << x << " outside the range");
    divisible += (static_cast<uint64_t>(x) - static_cast<uint64_t>(-half)) % 3 == 0;
  }
  CHECK(std::fabs(divisible - m / 3.0) < 5 * std::sqrt(m * (1.0 / 3) * (2.0 / 3)));
}

// ---------------------------------------------------------------------------------------------
// Ranges, shapes and errors
// ---------------------------------------------------------------------------------------------

TEST_CASE("random: uniform never returns hi, for tiny and huge ranges") {
  // [1, next float after 1): the only representable value is 1
  const float one_up = std::nextafter(1.0f, 2.0f);
  for (float x : uniform(Key(61), {4096}, DType::float32, 1.0, one_up).to_vector<float>()) CHECK(x == 1.0f);
  // three floats in range
  const float three_up = std::nextafter(std::nextafter(one_up, 2.0f), 2.0f);
  std::set<float> seen;
  for (float x : uniform(Key(62), {4096}, DType::float32, 1.0, std::nextafter(three_up, 2.0f)).to_vector<float>()) {
    CHECK((x >= 1.0f && x <= three_up));
    seen.insert(x);
  }
  CHECK(seen.size() == 4);
  const double d_up = std::nextafter(1e10, 2e10);
  for (double x : uniform(Key(63), {4096}, DType::float64, 1e10, d_up).to_vector<double>()) CHECK(x == 1e10);
  // the whole finite range: no overflow, always below hi
  const double dmax = std::numeric_limits<double>::max();
  for (double x : uniform(Key(64), {4096}, DType::float64, -dmax, dmax).to_vector<double>())
    CHECK((std::isfinite(x) && x < dmax));
  const double fmax = std::numeric_limits<float>::max();
  for (float x : uniform(Key(65), {4096}, DType::float32, -fmax, fmax).to_vector<float>())
    CHECK((std::isfinite(x) && x < static_cast<float>(fmax)));
  // a float32 range where lo + u * (hi - lo) rounds up to hi for u near 1
  const std::vector<float> coarse = uniform(Key(66), {100000}, DType::float32, 16777216.0, 16777218.0).to_vector<float>();
  CHECK(std::count(coarse.begin(), coarse.end(), 16777216.0f) == 100000);
}

TEST_CASE("random: shapes, rank 0 and zero-sized outputs") {
  const Key key(71);
  CHECK(uniform(key, {}).rank() == 0);
  CHECK(normal(key, {}, DType::float64).numel() == 1);
  CHECK(uniform(key, {0, 3}).shape() == Shape{0, 3});
  CHECK(normal(key, {2, 0}).numel() == 0);
  CHECK(bernoulli(key, {0}, 0.5).numel() == 0);
  CHECK(randint(key, {3, 0, 2}, 0, 4).numel() == 0);
  CHECK(uniform(key, {2, 3}, DType::float64).dtype() == DType::float64);
  CHECK(uniform(key, {2, 3}).is_contiguous());
}

TEST_CASE("random: bad arguments throw ctrax::Error naming the function and the values") {
  const Key key(81);
  const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
  check_error([&] { uniform(key, {3}, DType::float32, 1.0, 1.0); }, {"uniform", "lo = 1", "hi = 1"});
  check_error([&] { uniform(key, {3}, DType::float32, 2.0, 1.0); }, {"uniform", "lo = 2"});
  check_error([&] { uniform(key, {3}, DType::float32, nan, 1.0); }, {"uniform", "nan"});
  check_error([&] { uniform(key, {3}, DType::float64, 0.0, inf); }, {"uniform", "inf"});
  check_error([&] { uniform(key, {3}, DType::float32, 0.0, 1e39); }, {"uniform", "float32"});
  check_error([&] { uniform(key, {3}, DType::float32, 1.0, 1.0 + 1e-12); }, {"uniform", "float32"});
  check_error([&] { uniform(key, {3}, DType::int32); }, {"uniform", "int32"});
  check_error([&] { uniform(key, {2, -1}); }, {"uniform", "[2, -1]", "-1"});
  check_error([&] { normal(key, {3}, DType::float32, 0.0, -1.0); }, {"normal", "stddev = -1"});
  check_error([&] { normal(key, {3}, DType::float32, nan, 1.0); }, {"normal", "mean = nan"});
  check_error([&] { normal(key, {3}, DType::int64); }, {"normal", "int64"});
  check_error([&] { normal(key, {-2}); }, {"normal", "-2"});
  check_error([&] { bernoulli(key, {3}, -0.1); }, {"bernoulli", "-0.1", "[0, 1]"});
  check_error([&] { bernoulli(key, {3}, 1.5); }, {"bernoulli", "1.5"});
  check_error([&] { bernoulli(key, {3}, nan); }, {"bernoulli", "nan"});
  check_error([&] { bernoulli(key, {-3}, 0.5); }, {"bernoulli", "-3"});
  check_error([&] { bernoulli(key, {2}, tensor<double>({0.5, 2.0})); }, {"bernoulli", "p = 2", "index 1"});
  check_error([&] { bernoulli(key, {2, 3}, tensor<double>({0.5, 0.5})); }, {"bernoulli", "[2]", "[2, 3]"});
  check_error([&] { bernoulli(key, {3}, ones({2, 3})); }, {"bernoulli", "[2, 3]", "[3]"});
  check_error([&] { bernoulli(key, Tensor()); }, {"bernoulli", "undefined"});
  check_error([&] { split(key, 0); }, {"split", "n = 0"});
  check_error([&] { split(key, -4); }, {"split", "n = -4"});
  check_error([&] { categorical(key, tensor<int64_t>({1, 2})); }, {"categorical", "int64"});
  check_error([&] { categorical(key, scalar_tensor(1.0)); }, {"categorical", "rank 0"});
  check_error([&] { categorical(key, Tensor()); }, {"categorical", "undefined"});
  check_error([&] { categorical(key, zeros({2, 3}), 2); }, {"categorical"});
  check_error([&] { categorical(key, zeros({2, 0}), -1); }, {"categorical", "[2, 0]", "no categories"});
  check_error([&] { categorical(key, tensor<double>({0.0, -inf, -inf, -inf}, {2, 2})); },
              {"categorical", "row 1", "-inf"});
  check_error([&] { categorical(key, tensor<double>({0.0, nan})); }, {"categorical", "NaN"});
  check_error([&] { categorical(key, zeros({2, 3}), -1, Shape{3}); }, {"categorical", "[2]", "[3]"});
  check_error([&] { categorical(key, zeros({2, 3}), -1, Shape{-1, 2}); }, {"categorical", "-1"});
  check_error([&] { permutation(key, -1); }, {"permutation", "n = -1"});
  check_error([&] { randint(key, {3}, 5, 5); }, {"randint", "lo = 5", "hi = 5"});
  check_error([&] { randint(key, {3}, 0, 10, DType::float32); }, {"randint", "float32"});
  check_error([&] { randint(key, {3}, 0, int64_t{1} << 40, DType::int32); }, {"randint", "int32"});
  check_error([&] { randint(key, {-1}, 0, 2); }, {"randint", "-1"});
}
