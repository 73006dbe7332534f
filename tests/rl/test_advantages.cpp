// Advantage estimators and discounted returns (rl/learning/advantages.h) against values computed by hand
// (the arithmetic is written next to each expectation): plain rows, an episode boundary inside
// a row, terminated against truncated ends laid out as rl/learning/trajectory.h lays them out, the
// discount mask, margins, and bad inputs; plus identities that hold for any inputs.
#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <vector>

#include <ctrax/rl/learning/advantages.h>
#include <ctrax/tensor/tensor.h>

namespace {

using ctrax::AdvantageInputs;
using ctrax::DType;
using ctrax::Error;
using ctrax::Shape;
using ctrax::Tensor;

Tensor rows(const std::vector<std::vector<double>>& values) {
  std::vector<double> flat;
  for (const auto& row : values) flat.insert(flat.end(), row.begin(), row.end());
  const auto b = static_cast<int64_t>(values.size());
  const auto l = static_cast<int64_t>(values.front().size());
  return ctrax::from_vector(flat, Shape{b, l}).to(DType::float32);
}

Tensor flags(const std::vector<std::vector<double>>& values) { return rows(values).to(DType::boolean); }

void check_rows(const Tensor& actual, const std::vector<std::vector<double>>& expected) {
  const auto b = static_cast<int64_t>(expected.size());
  const auto l = static_cast<int64_t>(expected.front().size());
  REQUIRE(actual.shape() == Shape{b, l});
  CHECK(actual.dtype() == DType::float32);
  const std::vector<double> got = actual.to_vector<double>();
  for (int64_t i = 0; i < b; ++i)
    for (int64_t t = 0; t < l; ++t) {
      INFO("row ", i, " column ", t);
      CHECK(got[static_cast<size_t>(i * l + t)] ==
            doctest::Approx(expected[static_cast<size_t>(i)][static_cast<size_t>(t)]).epsilon(1e-6));
    }
}

// r = [1, 2, 3, 4], V = [0.5, 1, 1.5, 2], no dones, gamma = lambda = 0.5.
AdvantageInputs plain_row() {
  AdvantageInputs in;
  in.rewards = rows({{1, 2, 3, 4}});
  in.values = rows({{0.5, 1, 1.5, 2}});
  in.dones = flags({{0, 0, 0, 0}});
  in.returns = rows({{10, 9, 7, 4}});
  return in;
}

}  // namespace

TEST_CASE("td_lambda and gae on a plain row: hand-computed values") {
  const AdvantageInputs in = plain_row();
  // G_3 = V_3 = 2 (last column); G_2 = 3 + .5 (.5 * 2 + .5 * 2) = 4;
  // G_1 = 2 + .5 (.5 * 1.5 + .5 * 4) = 3.375; G_0 = 1 + .5 (.5 * 1 + .5 * 3.375) = 2.09375.
  check_rows(ctrax::td_lambda_advantages(in, 0.5, 1, 0.5), {{2.09375 - 0.5, 3.375 - 1, 4 - 1.5}});
  // delta = [1 + .5 - .5, 2 + .75 - 1, 3 + 1 - 1.5] = [1, 1.75, 2.5]; A_2 = 2.5,
  // A_1 = 1.75 + .25 * 2.5 = 2.375, A_0 = 1 + .25 * 2.375 = 1.59375.
  check_rows(ctrax::gae_advantages(in, 0.5, 1, 0.5), {{1.59375, 2.375, 2.5}});
  // margin 0 keeps the last column, where nothing follows: A = 0.
  check_rows(ctrax::gae_advantages(in, 0.5, 0, 0.5), {{1.59375, 2.375, 2.5, 0.0}});
  check_rows(ctrax::td_lambda_advantages(in, 0.5, 0, 0.5), {{1.59375, 2.375, 2.5, 0.0}});
}

TEST_CASE("td_k and monte_carlo on a plain row: hand-computed values") {
  const AdvantageInputs in = plain_row();
  // k = 1: the one-step TD errors.
  check_rows(ctrax::td_k_advantages(in, 0.5, 1), {{1.0, 1.75, 2.5}});
  // k = 2: A_0 = 1 + .5 * 2 + .25 * 1.5 - .5 = 1.875; A_1 = 2 + .5 * 3 + .25 * 2 - 1 = 3.
  check_rows(ctrax::td_k_advantages(in, 0.5, 2), {{1.875, 3.0}});
  // k = 3: A_0 = 1 + 1 + .75 + .125 * 2 - .5 = 2.5.
  check_rows(ctrax::td_k_advantages(in, 0.5, 3), {{2.5}});
  // R - V on the first L - margin columns.
  check_rows(ctrax::monte_carlo_advantages(in, 0.5, 1), {{9.5, 8.0, 5.5}});
  check_rows(ctrax::monte_carlo_advantages(in, 0.5, 0), {{9.5, 8.0, 5.5, 2.0}});
}

TEST_CASE("Estimators across an episode boundary inside a row") {
  // The first episode terminates after step 1; the second starts at step 2.
  AdvantageInputs in;
  in.rewards = rows({{1, 1, 1, 1, 1}});
  in.values = rows({{2, 3, 4, 5, 6}});
  in.dones = flags({{0, 1, 0, 0, 0}});
  const double g = 0.9;
  // discounted_returns stops at the terminal step: R = [1.9, 1, 2.71, 1.9, 1].
  check_rows(ctrax::discounted_returns(in.rewards, g, Tensor(), in.dones), {{1.9, 1.0, 2.71, 1.9, 1.0}});
  in.returns = ctrax::discounted_returns(in.rewards, g, Tensor(), in.dones);
  // lambda = 1: G_4 = V_4 = 6, G_3 = 1 + .9 * 6 = 6.4, G_2 = 1 + .9 * 6.4 = 6.76, G_1 = r_1 = 1
  // (terminated: V_2 belongs to the next episode), G_0 = 1 + .9 * 1 = 1.9.
  check_rows(ctrax::td_lambda_advantages(in, g, 1, 1.0), {{1.9 - 2, 1.0 - 3, 6.76 - 4, 6.4 - 5}});
  check_rows(ctrax::gae_advantages(in, g, 1, 1.0), {{1.9 - 2, 1.0 - 3, 6.76 - 4, 6.4 - 5}});
  // td_k with k = 2 stops at the terminal step: A_0 = 1 + .9 * 1 - 2 (no V_2; Trax would add
  // .81 * V_2 here), A_1 = 1 - 3, A_2 = 1 + .9 + .81 * 6 - 4.
  check_rows(ctrax::td_k_advantages(in, g, 2), {{1.9 - 2, 1.0 - 3, 1.9 + 0.81 * 6 - 4}});
  // monte_carlo: R - V, and r at the terminal step (Trax sets V = 0 there).
  check_rows(ctrax::monte_carlo_advantages(in, g, 1), {{1.9 - 2, 1.0, 2.71 - 4, 1.9 - 5}});
}

TEST_CASE("Terminated ends do not bootstrap, truncated ends bootstrap from the final observation") {
  // Two pieces of 3 steps laid out with margin 1 (rl/learning/trajectory.h): entry 3 is the final
  // observation (mask 0, done true, value 7). Row 0 terminated after step 2, row 1 was
  // truncated there.
  AdvantageInputs in;
  in.rewards = rows({{1, 1, 1, 0}, {1, 1, 1, 0}});
  in.values = rows({{5, 5, 5, 7}, {5, 5, 5, 7}});
  in.dones = flags({{0, 0, 1, 1}, {0, 0, 0, 1}});
  in.mask = rows({{1, 1, 1, 0}, {1, 1, 1, 0}});
  // Row 0: G_2 = 1, G_1 = 1 + .5 (.5 * 5 + .5 * 1) = 2.5, G_0 = 1 + .5 (2.5 + .5 * 2.5) = 2.875.
  // Row 1: G_3 = V_3 = 7, G_2 = 1 + .5 * 7 = 4.5, G_1 = 1 + .5 (2.5 + 2.25) = 3.375,
  //        G_0 = 1 + .5 (2.5 + 1.6875) = 3.09375.
  const std::vector<std::vector<double>> lambda_expected = {{2.875 - 5, 2.5 - 5, 1 - 5},
                                                            {3.09375 - 5, 3.375 - 5, 4.5 - 5}};
  check_rows(ctrax::td_lambda_advantages(in, 0.5, 1, 0.5), lambda_expected);
  check_rows(ctrax::gae_advantages(in, 0.5, 1, 0.5), lambda_expected);
  // One-step TD: only row 1's last step sees V = 7.
  check_rows(ctrax::td_k_advantages(in, 0.5, 1), {{-1.5, -1.5, -4.0}, {-1.5, -1.5, 1 + 3.5 - 5}});

  // Margin 2 adds a padding entry (value 100, never to be read). td_k with k = 2 stops before
  // the final observation and bootstraps from it: A_2 = 1 + .5 * 7 - 5, A_1 = 1 + .5 + .25 * 7 - 5,
  // A_0 = 1 + .5 + .25 * 5 - 5.
  AdvantageInputs padded;
  padded.rewards = rows({{1, 1, 1, 0, 0}});
  padded.values = rows({{5, 5, 5, 7, 100}});
  padded.dones = flags({{0, 0, 0, 1, 1}});
  padded.mask = rows({{1, 1, 1, 0, 0}});
  check_rows(ctrax::td_k_advantages(padded, 0.5, 2), {{-2.25, -1.75, -0.5}});
  check_rows(ctrax::gae_advantages(padded, 0.5, 2, 0.5), {{3.09375 - 5, 3.375 - 5, 4.5 - 5}});
  // Masked entries get no advantage.
  check_rows(ctrax::gae_advantages(padded, 0.5, 0, 0.5), {{3.09375 - 5, 3.375 - 5, 4.5 - 5, 0, 0}});
  padded.returns = rows({{3, 2, 1, 0, 0}});
  check_rows(ctrax::monte_carlo_advantages(padded, 0.5, 0), {{-2, -3, -4, 0, 0}});
}

TEST_CASE("A terminated step in the last column is scored with its reward") {
  AdvantageInputs in;
  in.rewards = rows({{1, 2}});
  in.values = rows({{0.5, 3}});
  in.dones = flags({{0, 1}});
  // G_1 = 2, G_0 = 1 + (.5 * 3 + .5 * 2) = 3.5 (gamma = 1).
  check_rows(ctrax::td_lambda_advantages(in, 1.0, 0, 0.5), {{3.0, -1.0}});
  check_rows(ctrax::gae_advantages(in, 1.0, 0, 0.5), {{3.0, -1.0}});
}

TEST_CASE("The discount mask turns gamma and lambda into 1 where it is not set") {
  AdvantageInputs in = plain_row();
  in.discount_mask = flags({{1, 0, 1, 1}});
  // gamma_t = [.5, 1, .5, .5], lambda_t = [.5, 1, .5, .5]. delta_2 = 2.5, delta_1 = 2 + 1.5 - 1 = 2.5,
  // delta_0 = 1; A_2 = 2.5, A_1 = 2.5 + 2.5 = 5, A_0 = 1 + .25 * 5 = 2.25.
  check_rows(ctrax::gae_advantages(in, 0.5, 1, 0.5), {{2.25, 5.0, 2.5}});
  check_rows(ctrax::td_lambda_advantages(in, 0.5, 1, 0.5), {{2.25, 5.0, 2.5}});
  // td_k, k = 2: A_0 = 1 + .5 * 2 + .5 * 1 * 1.5 - .5 = 2.25; A_1 = 2 + 1 * 3 + .5 * 2 - 1 = 5.
  check_rows(ctrax::td_k_advantages(in, 0.5, 2), {{2.25, 5.0}});
  // R_3 = 4, R_2 = 3 + .5 * 4 = 5, R_1 = 2 + 5 = 7, R_0 = 1 + .5 * 7 = 4.5.
  check_rows(ctrax::discounted_returns(in.rewards, 0.5, in.discount_mask), {{4.5, 7, 5, 4}});
}

TEST_CASE("discounted_returns over a batch of rows and over a single trajectory") {
  check_rows(ctrax::discounted_returns(rows({{1, 1, 1}, {0, 0, 2}}), 0.5), {{1.75, 1.5, 1}, {0.5, 1, 2}});
  const Tensor one = ctrax::discounted_returns(ctrax::from_vector(std::vector<double>{1, 2}), 1.0);
  CHECK(one.shape() == Shape{2});
  CHECK(one.to_vector<double>() == std::vector<double>{3, 2});
}

TEST_CASE("Identities for random rows: gae equals td_lambda, td_lambda at 0 equals td_k at 1") {
  std::mt19937 gen(7);
  std::uniform_real_distribution<double> real(-2.0, 2.0);
  std::bernoulli_distribution coin(0.2);
  const int64_t b = 6;
  const int64_t l = 9;
  std::vector<std::vector<double>> r(b), v(b), d(b), m(b), dm(b);
  for (int64_t i = 0; i < b; ++i)
    for (int64_t t = 0; t < l; ++t) {
      r[i].push_back(real(gen));
      v[i].push_back(real(gen));
      d[i].push_back(coin(gen) ? 1 : 0);
      m[i].push_back(coin(gen) ? 0 : 1);
      dm[i].push_back(coin(gen) ? 0 : 1);
    }
  AdvantageInputs in;
  in.rewards = rows(r);
  in.values = rows(v);
  in.dones = flags(d);
  in.mask = rows(m);
  in.discount_mask = flags(dm);
  for (double lambda : {0.0, 0.3, 0.95, 1.0}) {
    const std::vector<double> a = ctrax::gae_advantages(in, 0.9, 2, lambda).to_vector<double>();
    const std::vector<double> b2 = ctrax::td_lambda_advantages(in, 0.9, 2, lambda).to_vector<double>();
    REQUIRE(a.size() == b2.size());
    for (size_t i = 0; i < a.size(); ++i) CHECK(a[i] == doctest::Approx(b2[i]).epsilon(1e-5));
  }
  // (Without a discount mask: where it is unset lambda_t is 1, not 0.)
  AdvantageInputs discounted = in;
  discounted.discount_mask = Tensor();
  const std::vector<double> td0 = ctrax::td_lambda_advantages(discounted, 0.9, 1, 0.0).to_vector<double>();
  const std::vector<double> td1 = ctrax::td_k_advantages(discounted, 0.9, 1).to_vector<double>();
  for (size_t i = 0; i < td0.size(); ++i) CHECK(td0[i] == doctest::Approx(td1[i]).epsilon(1e-5));
  // The bound estimators are the functions above.
  CHECK(ctrax::gae(0.3)(in, 0.9, 2).to_vector<double>() == ctrax::gae_advantages(in, 0.9, 2, 0.3).to_vector<double>());
  CHECK(ctrax::td_lambda(0.3)(in, 0.9, 2).to_vector<double>() ==
        ctrax::td_lambda_advantages(in, 0.9, 2, 0.3).to_vector<double>());
  CHECK(ctrax::td_k()(in, 0.9, 2).to_vector<double>() == ctrax::td_k_advantages(in, 0.9, 2).to_vector<double>());
  in.returns = in.values;
  CHECK(ctrax::monte_carlo()(in, 0.9, 2).to_vector<double>() ==
        ctrax::monte_carlo_advantages(in, 0.9, 2).to_vector<double>());
}

TEST_CASE("Advantage estimators: bad inputs") {
  AdvantageInputs in = plain_row();
  CHECK_THROWS_WITH_AS(ctrax::gae_advantages(in, 1.5, 1), doctest::Contains("gamma must be in [0, 1]"), Error);
  CHECK_THROWS_WITH_AS(ctrax::td_lambda_advantages(in, 0.9, 1, -0.1), doctest::Contains("lambda must be in [0, 1]"),
                       Error);
  CHECK_THROWS_WITH_AS(ctrax::gae(1.1), doctest::Contains("lambda must be in [0, 1]"), Error);
  CHECK_THROWS_WITH_AS(ctrax::gae_advantages(in, 0.9, 4), doctest::Contains("margin must be in [0, L)"), Error);
  CHECK_THROWS_WITH_AS(ctrax::gae_advantages(in, 0.9, -1), doctest::Contains("margin must be in [0, L)"), Error);
  CHECK_THROWS_WITH_AS(ctrax::td_k_advantages(in, 0.9, 0), doctest::Contains("k = margin must be >= 1"), Error);
  AdvantageInputs no_returns = in;
  no_returns.returns = Tensor();
  CHECK_THROWS_WITH_AS(ctrax::monte_carlo_advantages(no_returns, 0.9, 1), doctest::Contains("returns is undefined"),
                       Error);
  CHECK_NOTHROW(ctrax::gae_advantages(no_returns, 0.9, 1));  // only monte_carlo reads returns
  AdvantageInputs bad_values = in;
  bad_values.values = rows({{1, 2, 3}});
  CHECK_THROWS_WITH_AS(ctrax::gae_advantages(bad_values, 0.9, 1), doctest::Contains("values has shape [1, 3]"), Error);
  AdvantageInputs no_dones = in;
  no_dones.dones = Tensor();
  CHECK_THROWS_WITH_AS(ctrax::td_k_advantages(no_dones, 0.9, 1), doctest::Contains("dones is undefined"), Error);
  AdvantageInputs flat = in;
  flat.rewards = ctrax::from_vector(std::vector<double>{1, 2, 3, 4});
  CHECK_THROWS_WITH_AS(ctrax::gae_advantages(flat, 0.9, 1), doctest::Contains("expected [B, L]"), Error);
  AdvantageInputs bad_mask = in;
  bad_mask.mask = rows({{1, 1}});
  CHECK_THROWS_WITH_AS(ctrax::gae_advantages(bad_mask, 0.9, 1), doctest::Contains("mask has shape"), Error);
  CHECK_THROWS_WITH_AS(ctrax::discounted_returns(in.rewards, 0.9, rows({{1, 1}})),
                       doctest::Contains("discount_mask has shape"), Error);
  CHECK_THROWS_WITH_AS(ctrax::discounted_returns(Tensor(), 0.9), doctest::Contains("rewards are undefined"), Error);
}
