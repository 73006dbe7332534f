// Spaces (rl/environments/space.h): construction and its errors, sampling (in bounds, reproducible, every
// value reachable, Gymnasium's choice of distribution per kind of bound), contains, printing
// and equality.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <sstream>
#include <vector>

#include <ctrax/rl/environments/space.h>
#include <ctrax/tensor/random.h>

namespace {

using ctrax::DType;
using ctrax::Error;
using ctrax::Key;
using ctrax::Shape;
using ctrax::Space;
using ctrax::Tensor;

constexpr double kInf = std::numeric_limits<double>::infinity();

Tensor f32(std::vector<double> values) { return ctrax::from_vector(values).to(DType::float32); }

}  // namespace

TEST_CASE("Discrete space: properties, samples in range and reproducible") {
  const Space s = Space::discrete(3);
  CHECK(s.kind() == Space::Kind::discrete);
  CHECK(s.shape() == Shape{});
  CHECK(s.dtype() == DType::int64);
  CHECK(s.n() == 3);

  const Tensor one = s.sample(Key(1));
  CHECK(one.shape() == Shape{});
  CHECK(one.dtype() == DType::int64);
  CHECK(s.contains(one));

  const Tensor many = s.sample(Key(1), 300);
  CHECK(many.shape() == Shape{300});
  const std::vector<int64_t> v = many.to_vector<int64_t>();
  const std::set<int64_t> seen(v.begin(), v.end());
  CHECK(seen == std::set<int64_t>{0, 1, 2});
  // The single sample is the first of the batch from the same key, and keys reproduce.
  CHECK(one.item<int64_t>() == v[0]);
  CHECK(s.sample(Key(1), 300).to_vector<int64_t>() == v);
  CHECK(s.sample(Key(2), 300).to_vector<int64_t>() != v);
  CHECK(s.sample(Key(1), 0).shape() == Shape{0});
}

TEST_CASE("Discrete space: contains checks dtype, shape and range") {
  const Space s = Space::discrete(2);
  CHECK(s.contains(ctrax::scalar_tensor(0, DType::int64)));
  CHECK(s.contains(ctrax::scalar_tensor(1, DType::int32)));
  CHECK_FALSE(s.contains(ctrax::scalar_tensor(2, DType::int64)));
  CHECK_FALSE(s.contains(ctrax::scalar_tensor(-1, DType::int64)));
  CHECK_FALSE(s.contains(ctrax::scalar_tensor(1, DType::float32)));
  CHECK_FALSE(s.contains(ctrax::scalar_tensor(1, DType::boolean)));
  CHECK_FALSE(s.contains(ctrax::tensor<int64_t>({1})));  // shape [1], not []
  CHECK_FALSE(s.contains(Tensor()));
}

TEST_CASE("Discrete space: bad arguments and wrong-kind accessors throw") {
  CHECK_THROWS_WITH_AS(Space::discrete(0), doctest::Contains("n must be >= 1, got 0"), Error);
  CHECK_THROWS_WITH_AS(Space::discrete(-3), doctest::Contains("n must be >= 1"), Error);
  const Space s = Space::discrete(4);
  CHECK_THROWS_WITH_AS(s.nvec(), doctest::Contains("only a MultiDiscrete space has nvec; this is Discrete(4)"),
                       Error);
  CHECK_THROWS_WITH_AS(s.low(), doctest::Contains("only a Box has bounds"), Error);
  CHECK_THROWS_WITH_AS(s.high(), doctest::Contains("only a Box has bounds"), Error);
  CHECK_THROWS_WITH_AS(s.is_bounded(), doctest::Contains("only a Box has bounds"), Error);
  CHECK_THROWS_WITH_AS(s.sample(Key(0), -1), doctest::Contains("count must be >= 0, got -1"), Error);
}

TEST_CASE("MultiDiscrete space: each entry sampled in its own range") {
  const Space s = Space::multi_discrete({2, 5, 1});
  CHECK(s.kind() == Space::Kind::multi_discrete);
  CHECK(s.shape() == Shape{3});
  CHECK(s.dtype() == DType::int64);
  CHECK(s.nvec() == std::vector<int64_t>{2, 5, 1});
  CHECK_THROWS_WITH_AS(s.n(), doctest::Contains("only a Discrete space has n"), Error);

  const Tensor many = s.sample(Key(3), 400);
  CHECK(many.shape() == Shape{400, 3});
  const std::vector<int64_t> v = many.to_vector<int64_t>();
  std::vector<std::set<int64_t>> seen(3);
  for (size_t i = 0; i < v.size(); ++i) seen[i % 3].insert(v[i]);
  CHECK(seen[0] == std::set<int64_t>{0, 1});
  CHECK(seen[1] == std::set<int64_t>{0, 1, 2, 3, 4});
  CHECK(seen[2] == std::set<int64_t>{0});
  const Tensor one = s.sample(Key(3));
  CHECK(one.shape() == Shape{3});
  CHECK(one.to_vector<int64_t>() == std::vector<int64_t>(v.begin(), v.begin() + 3));
  CHECK(s.contains(one));

  CHECK(s.contains(ctrax::tensor<int32_t>({1, 4, 0})));
  CHECK_FALSE(s.contains(ctrax::tensor<int64_t>({1, 5, 0})));
  CHECK_FALSE(s.contains(ctrax::tensor<int64_t>({1, 4})));
  CHECK_FALSE(s.contains(ctrax::tensor<float>({1, 4, 0})));

  CHECK_THROWS_WITH_AS(Space::multi_discrete({}), doctest::Contains("nvec is empty"), Error);
  CHECK_THROWS_WITH_AS(Space::multi_discrete({3, 0}), doctest::Contains("nvec[1] must be >= 1, got 0"), Error);
}

TEST_CASE("Box space: bounded samples are uniform within the bounds") {
  const Space s = Space::box(f32({-1.0, 0.0}), f32({1.0, 10.0}));
  CHECK(s.kind() == Space::Kind::box);
  CHECK(s.shape() == Shape{2});
  CHECK(s.dtype() == DType::float32);
  CHECK(s.is_bounded());
  const Tensor many = s.sample(Key(5), 2000);
  CHECK(many.shape() == Shape{2000, 2});
  CHECK(many.dtype() == DType::float32);
  const std::vector<float> v = many.to_vector<float>();
  double sum0 = 0, sum1 = 0, min1 = kInf, max1 = -kInf;
  for (size_t i = 0; i < v.size(); i += 2) {
    REQUIRE(v[i] >= -1.0f);
    REQUIRE(v[i] <= 1.0f);
    REQUIRE(v[i + 1] >= 0.0f);
    REQUIRE(v[i + 1] <= 10.0f);
    sum0 += v[i];
    sum1 += v[i + 1];
    min1 = std::min(min1, static_cast<double>(v[i + 1]));
    max1 = std::max(max1, static_cast<double>(v[i + 1]));
  }
  // Uniform: means 0 and 5 (standard errors 0.013 and 0.065), the range nearly covered.
  CHECK(std::abs(sum0 / 2000) < 0.06);
  CHECK(std::abs(sum1 / 2000 - 5.0) < 0.3);
  CHECK(min1 < 0.1);
  CHECK(max1 > 9.9);
  CHECK(s.contains(s.sample(Key(9))));
  CHECK(s.sample(Key(9)).to_vector<float>() == s.sample(Key(9), 1).to_vector<float>());
}

TEST_CASE("Box space: half-bounded and unbounded dimensions follow Gymnasium's distributions") {
  // [2, inf): 2 + Exp(1); (-inf, -3]: -3 - Exp(1); (-inf, inf): N(0, 1).
  const Space s = Space::box(ctrax::tensor<double>({2.0, -kInf, -kInf}), ctrax::tensor<double>({kInf, -3.0, kInf}));
  CHECK_FALSE(s.is_bounded());
  CHECK(s.dtype() == DType::float64);
  const std::vector<double> v = s.sample(Key(11), 4000).to_vector<double>();
  double sum_low = 0, sum_high = 0, sum_free = 0, sq_free = 0;
  for (size_t i = 0; i < v.size(); i += 3) {
    REQUIRE(v[i] >= 2.0);
    REQUIRE(v[i + 1] <= -3.0);
    sum_low += v[i];
    sum_high += v[i + 1];
    sum_free += v[i + 2];
    sq_free += v[i + 2] * v[i + 2];
  }
  const double n = 4000;
  CHECK(std::abs(sum_low / n - 3.0) < 0.08);   // 2 + mean of Exp(1)
  CHECK(std::abs(sum_high / n + 4.0) < 0.08);  // -3 - 1
  CHECK(std::abs(sum_free / n) < 0.08);
  CHECK(std::abs(sq_free / n - 1.0) < 0.1);
}

TEST_CASE("Box space: contains checks shape, float dtype and bounds") {
  const Space s = Space::box(Shape{2}, -1.0, 1.0);
  CHECK(s.contains(ctrax::tensor<float>({-1.0f, 1.0f})));
  CHECK(s.contains(ctrax::tensor<double>({0.5, -0.5})));  // any float dtype
  CHECK_FALSE(s.contains(ctrax::tensor<float>({-1.5f, 0.0f})));
  CHECK_FALSE(s.contains(ctrax::tensor<float>({0.0f, 1.01f})));
  CHECK_FALSE(s.contains(ctrax::tensor<float>({0.0f, std::nanf("")})));
  CHECK_FALSE(s.contains(ctrax::tensor<int64_t>({0, 0})));
  CHECK_FALSE(s.contains(ctrax::tensor<float>({0.0f})));
  CHECK_FALSE(s.contains(ctrax::tensor<float>({0.0f, 0.0f}, Shape{1, 2})));
  CHECK_FALSE(s.contains(Tensor()));
}

TEST_CASE("Box space: invalid bounds throw with the reason") {
  CHECK_THROWS_WITH_AS(Space::box(f32({0, 0}), f32({1})), doctest::Contains("low has shape [2] but high has shape [1]"),
                       Error);
  CHECK_THROWS_WITH_AS(Space::box(f32({0}), ctrax::tensor<double>({1.0})),
                       doctest::Contains("low has dtype float32 but high has dtype float64"), Error);
  CHECK_THROWS_WITH_AS(Space::box(ctrax::tensor<int64_t>({0}), ctrax::tensor<int64_t>({1})),
                       doctest::Contains("expected float32 or float64"), Error);
  CHECK_THROWS_WITH_AS(Space::box(f32({0, 2}), f32({1, 1})), doctest::Contains("low[1] = 2 > high[1] = 1"), Error);
  CHECK_THROWS_WITH_AS(Space::box(f32({std::nan("")}), f32({1})), doctest::Contains("bound 0 is NaN"), Error);
  CHECK_THROWS_WITH_AS(Space::box(f32({kInf}), f32({kInf})), doctest::Contains("contain no finite value"), Error);
  CHECK_THROWS_WITH_AS(Space::box(Tensor(), f32({1})), doctest::Contains("undefined"), Error);
  CHECK_THROWS_WITH_AS(Space::box(Shape{2}, 0.0, 1.0, DType::int32), doctest::Contains("is not float32 or float64"),
                       Error);
  CHECK_THROWS_WITH_AS(Space::box(Shape{2}, 1.0, 0.0), doctest::Contains("> high"), Error);
}

TEST_CASE("Box space: the bounds are copied, not shared with the caller") {
  Tensor low = f32({0.0}), high = f32({1.0});
  const Space s = Space::box(low, high);
  high.fill_(5.0);
  CHECK(s.high().item<double>() == 1.0);
  CHECK_FALSE(s.contains(ctrax::tensor<float>({3.0f})));
}

TEST_CASE("Spaces print like Gymnasium's and compare by value") {
  CHECK(Space::discrete(2).to_string() == "Discrete(2)");
  CHECK(Space::multi_discrete({3, 3}).to_string() == "MultiDiscrete([3, 3])");
  CHECK(Space::box(Shape{1}, -2.0, 2.0).to_string() == "Box(float32[1], low -2, high 2)");
  CHECK(Space::box(f32({-1, -kInf}), f32({1, kInf})).to_string() == "Box(float32[2], low [-1, -inf], high [1, inf])");
  std::ostringstream out;
  out << Space::discrete(5);
  CHECK(out.str() == "Discrete(5)");

  CHECK(Space::discrete(2) == Space::discrete(2));
  CHECK_FALSE(Space::discrete(2) == Space::discrete(3));
  CHECK_FALSE(Space::discrete(2) == Space::multi_discrete({2}));
  CHECK(Space::box(Shape{2}, -1.0, 1.0) == Space::box(f32({-1, -1}), f32({1, 1})));
  CHECK_FALSE(Space::box(Shape{2}, -1.0, 1.0) == Space::box(Shape{2}, -1.0, 2.0));
  CHECK_FALSE(Space::box(Shape{2}, -1.0, 1.0) == Space::box(Shape{2}, -1.0, 1.0, DType::float64));
}
