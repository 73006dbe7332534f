// The instruction-set variants of the optimizer loops (kernels/optimizer_steps.h) against the
// portable one. Contraction is off and the sums use fixed lanes, so the results must be the same
// bits on every variant, for lengths around the 16-element blocks and for factored shapes.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <ctrax/base/error.h>
#include <ctrax/kernels/optimizer_steps.h>

namespace {

using ctrax::kernels::ElementwiseIsa;
namespace k = ctrax::kernels;

struct IsaGuard {
  ~IsaGuard() { k::force_optimizer_isa(std::nullopt); }
};

template <typename T>
std::vector<T> values(size_t n, uint64_t seed, double lo, double hi) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> real(lo, hi);
  std::vector<T> v(n);
  for (T& x : v) x = static_cast<T>(real(gen));
  return v;
}

template <typename T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

// Everything one variant computes from fixed inputs: the arrays after every loop and the sums.
template <typename T>
struct Outputs {
  std::vector<std::vector<T>> arrays;
  std::vector<double> sums;
};

// sum_weights false: the one-pass steps (sums 1 to 5) skip the weights' sum of squares.
template <typename T>
Outputs<T> run_all(int64_t batch, int64_t rows, int64_t cols, bool sum_weights = true) {
  const size_t n = static_cast<size_t>(batch * rows * cols);
  const std::vector<T> g = values<T>(n, 1, -2, 2);
  Outputs<T> out;
  const auto fresh = [&](uint64_t seed, double lo, double hi) { return values<T>(n, seed, lo, hi); };
  const auto keep = [&](std::vector<T> v) { out.arrays.push_back(std::move(v)); };
  const int64_t len = static_cast<int64_t>(n);

  out.sums.push_back(k::sum_of_squares(g.data(), len));
  {
    auto w = fresh(2, -1, 1);
    out.sums.push_back(k::sgd_step({0.1, 0.7, sum_weights}, g.data(), w.data(), len));
    keep(w);
  }
  for (bool nesterov : {true, false}) {
    auto w = fresh(3, -1, 1), v = fresh(4, -1, 1);
    out.sums.push_back(k::momentum_step({0.05, 1.0, 0.9, 0.99, nesterov, sum_weights}, g.data(), w.data(), v.data(), len));
    keep(w);
    keep(v);
  }
  {
    auto w = fresh(5, -1, 1), m = fresh(6, -1, 1), v = fresh(7, 0, 1);
    out.sums.push_back(k::adam_step({0.01 / 0.19, 0.5, 0.9, 0.999, 1 / std::sqrt(0.002), 1e-5, 0.99999, sum_weights},
                                    g.data(), w.data(), m.data(), v.data(), len));
    keep(w);
    keep(m);
    keep(v);
  }
  {
    auto w = fresh(8, -1, 1), a = fresh(9, 0, 1);
    out.sums.push_back(k::rmsprop_step({0.01, 1.0, 0.9, 1e-8, sum_weights}, g.data(), w.data(), a.data(), len));
    keep(w);
    keep(a);
  }
  {  // Adafactor, factored and not, with momentum.
    auto w = fresh(10, -1, 1), m = fresh(11, -1, 1);
    auto r = values<T>(static_cast<size_t>(batch * rows), 12, 0.1, 1);
    auto c = values<T>(static_cast<size_t>(batch * cols), 13, 0.1, 1);
    const k::AdafactorMoments moments{0.8, 0.5, 1e-16};
    out.sums.push_back(k::adafactor_factored_moments(moments, g.data(), w.data(), r.data(), c.data(), batch, rows, cols));
    out.sums.push_back(k::adafactor_factored_sum_y2(0.8, g.data(), r.data(), c.data(), batch, rows, cols));
    k::adafactor_factored_apply({0.8, 0.03, 0.99, 0.5}, g.data(), w.data(), r.data(), c.data(), m.data(), batch, rows,
                                cols);
    keep(w);
    keep(m);
    keep(r);
    keep(c);
    auto v = fresh(14, 0.1, 1);
    const k::SquareSums sums = k::adafactor_moments(moments, g.data(), w.data(), v.data(), len);
    out.sums.push_back(sums.weights);
    out.sums.push_back(sums.y);
    k::adafactor_apply({0.8, 0.03, 0.99, 0.5}, g.data(), w.data(), v.data(), m.data(), len);
    k::adafactor_apply({0.8, 0.03, 0.99, 0.0}, g.data(), w.data(), v.data(), nullptr, len);
    keep(w);
    keep(m);
    keep(v);
  }
  return out;
}

template <typename T>
void check_variant(ElementwiseIsa isa) {
  const int64_t shapes[][3] = {{1, 0, 5}, {1, 1, 1}, {1, 1, 15}, {1, 1, 16}, {1, 1, 17}, {1, 3, 33}, {2, 5, 7},
                               {3, 4, 64}, {1, 7, 100}, {1, 1, 1000}};
  for (const auto& s : shapes) {
    INFO("batch " << s[0] << ", rows " << s[1] << ", cols " << s[2]);
    k::force_optimizer_isa(ElementwiseIsa::portable);
    const Outputs<T> ref = run_all<T>(s[0], s[1], s[2]);
    k::force_optimizer_isa(isa);
    CHECK(k::active_optimizer_isa() == isa);
    const Outputs<T> got = run_all<T>(s[0], s[1], s[2]);
    REQUIRE(got.arrays.size() == ref.arrays.size());
    for (size_t i = 0; i < ref.arrays.size(); ++i) {
      INFO("array " << i);
      CHECK(same_bits(got.arrays[i], ref.arrays[i]));
    }
    for (size_t i = 0; i < ref.sums.size(); ++i) {
      INFO("sum " << i);
      CHECK(got.sums[i] == ref.sums[i]);
    }
  }
}

}  // namespace

TEST_CASE("Optimizer loops give the same bits on every instruction-set variant") {
  IsaGuard guard;
  for (ElementwiseIsa isa : {ElementwiseIsa::portable, ElementwiseIsa::avx2, ElementwiseIsa::avx512}) {
    if (!k::elementwise_isa_supported(isa)) {
      MESSAGE("skipping " << std::string(k::elementwise_isa_name(isa)) << ": not supported by this CPU");
      CHECK_THROWS_AS(k::force_optimizer_isa(isa), ctrax::Error);
      continue;
    }
    INFO("isa " << std::string(k::elementwise_isa_name(isa)));
    check_variant<float>(isa);
    check_variant<double>(isa);
  }
}

TEST_CASE("Optimizer sums of squares are exact on small integers and zero for empty input") {
  const std::vector<double> x = {1, -2, 3, 4, 0, -5, 6, 7, 8, 9, 10, -11, 12, 13, 14, 15, 16, 17};
  double expected = 0;
  for (double v : x) expected += v * v;
  CHECK(k::sum_of_squares(x.data(), static_cast<int64_t>(x.size())) == expected);
  const std::vector<float> xf(x.begin(), x.end());
  CHECK(k::sum_of_squares(xf.data(), static_cast<int64_t>(xf.size())) == expected);
  CHECK(k::sum_of_squares(xf.data(), 0) == 0.0);
}

TEST_CASE("Optimizer loops without the weights' sum update the same bits and return 0") {
  IsaGuard guard;
  const auto check = [](auto tag) {
    using T = decltype(tag);
    for (const int64_t n : {1, 16, 17, 100, 1000}) {
      INFO("n " << n);
      k::force_optimizer_isa(ElementwiseIsa::portable);
      const Outputs<T> ref = run_all<T>(1, 1, n);
      for (ElementwiseIsa isa : {ElementwiseIsa::portable, ElementwiseIsa::avx2, ElementwiseIsa::avx512}) {
        if (!k::elementwise_isa_supported(isa)) continue;
        INFO("isa " << std::string(k::elementwise_isa_name(isa)));
        k::force_optimizer_isa(isa);
        const Outputs<T> got = run_all<T>(1, 1, n, false);
        REQUIRE(got.arrays.size() == ref.arrays.size());
        for (size_t i = 0; i < ref.arrays.size(); ++i) CHECK(same_bits(got.arrays[i], ref.arrays[i]));
        CHECK(got.sums[0] == ref.sums[0]);  // sum_of_squares itself
        for (size_t i = 1; i <= 5; ++i) {
          INFO("sum " << i);
          CHECK(ref.sums[i] > 0);
          CHECK(got.sums[i] == 0.0);
        }
        for (size_t i = 6; i < ref.sums.size(); ++i) CHECK(got.sums[i] == ref.sums[i]);  // Adafactor's
      }
    }
  };
  check(float{});
  check(double{});
}
