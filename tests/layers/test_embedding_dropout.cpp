// Embedding and Dropout: forward against references, gradients by gradcheck through apply, Dropout's modes
// and statistics with fixed keys, and bad inputs.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include <ctrax/autograd/gradcheck.h>
#include <ctrax/layers/embedding_dropout.h>
#include <ctrax/tensor/ops.h>

#include "../test_util.h"

using namespace ctrax;
using test::check_close;
using test::check_error;

namespace {
const test::Tolerance kExact{0.0, 0.0};
}  // namespace

// ---- Embedding -------------------------------------------------------------------------------

TEST_CASE("layers: Embedding looks up one table row per id, for any shape of int32 or int64 ids") {
  LayerPtr emb = Embedding(10, 4);
  CHECK(emb->name() == "Embedding_10_4");
  const Tensor ids = tensor<int64_t>({3, 0, 9, 3, 7, 1}, Shape{2, 3});
  auto [w, s] = emb->init({ShapeDtype::of(ids)}, Key(5));
  const Tensor& table = w["embedding"].leaf();
  REQUIRE(table.shape() == Shape{10, 4});
  CHECK(table.dtype() == DType::float32);
  // Deterministic for the key, and drawn from normal(1.0): rows are not all equal.
  CHECK(emb->init({ShapeDtype::of(ids)}, Key(5)).first["embedding"].leaf().to_vector<float>() ==
        table.to_vector<float>());
  CHECK(table.select(0, 0).to_vector<float>() != table.select(0, 1).to_vector<float>());
  const std::vector<double> t = table.to_vector<double>();
  const std::vector<int64_t> idv = ids.to_vector<int64_t>();
  std::vector<double> want;
  for (int64_t id : idv)
    for (int j = 0; j < 4; ++j) want.push_back(t[static_cast<size_t>(id * 4 + j)]);
  check_close(emb->apply({ids}, w, s).outputs[0], Shape{2, 3, 4}, want, kExact);
  check_close(emb->apply({ids.to(DType::int32)}, w, s).outputs[0], Shape{2, 3, 4}, want, kExact, "int32 ids");
  // A rank-0 id gives one row; no ids give no rows.
  check_close(emb->apply({scalar_tensor(9, DType::int64)}, w, s).outputs[0], Shape{4},
              table.select(0, 9).to_vector<double>(), kExact);
  CHECK(emb->apply({zeros({0, 2}, DType::int64)}, w, s).outputs[0].shape() == Shape{0, 2, 4});
  // The table dtype is an option.
  const Tree w64 = Embedding(3, 2, normal_init(1.0), DType::float64)->init({ShapeDtype::of(ids)}).first;
  CHECK(w64["embedding"].leaf().dtype() == DType::float64);
}

TEST_CASE("layers: Embedding gradient reaches the table by gradcheck, repeated ids summing") {
  LayerPtr emb = Embedding(5, 3, normal_init(1.0), DType::float64);
  const Tensor ids = tensor<int64_t>({4, 1, 4, 0, 1, 4}, Shape{3, 2});
  auto initialized = emb->init({ShapeDtype::of(ids)}, Key(2));
  Tree& w = initialized.first;
  Tree& s = initialized.second;
  const GradcheckResult r = gradcheck([&](const std::vector<Tensor>& in) {
    return emb->apply({ids}, w.with_leaves(in), s).outputs[0];
  }, {w["embedding"].leaf()});
  CHECK_MESSAGE(r.ok, r.message);
}

TEST_CASE("layers: Embedding rejects out-of-range and non-integer ids") {
  LayerPtr emb = Embedding(10, 4);
  auto initialized = emb->init({{Shape{3}, DType::int64}});
  Tree& w = initialized.first;
  Tree& s = initialized.second;
  check_error([&] { emb->apply({tensor<int64_t>({1, 10, 2})}, w, s); },
              {"Embedding_10_4: id 10 is out of range for a vocabulary of 10 (ids must be in [0, 10))"});
  check_error([&] { emb->apply({tensor<int32_t>({-1, 2})}, w, s); }, {"id -1 is out of range"});
  check_error([&] { emb->apply({tensor({1.0f, 2.0f})}, w, s); }, {"ids have dtype float32, expected an integer dtype"});
  check_error([&] { Embedding(10, 4)->init({{Shape{3}, DType::boolean}}); }, {"ids have dtype bool"});
  check_error([&] { Embedding(0, 4); }, {"vocab_size must be >= 1"});
  check_error([&] { Embedding(10, 0); }, {"d_feature must be >= 1"});
}

// ---- Dropout ---------------------------------------------------------------------------------

TEST_CASE("layers: Dropout in train mode zeroes elements and scales the rest by 1 / (1 - rate)") {
  const double rate = 0.3;
  LayerPtr drop = Dropout(rate);
  CHECK(drop->name() == "Dropout");
  const int64_t n = 200000;
  const Tensor x = test::random_tensor(Shape{n}, DType::float64, 71, 0.5, 1.5);
  const Tensor y = drop->apply({x}, Tree(), Tree(), Key(9), Mode::train).outputs[0];
  const std::vector<double> xv = x.to_vector<double>(), yv = y.to_vector<double>();
  int64_t kept = 0;
  double sum_x = 0, sum_y = 0;
  bool each_ok = true;
  for (int64_t i = 0; i < n; ++i) {
    if (yv[i] != 0.0) {
      ++kept;
      each_ok = each_ok && std::fabs(yv[i] - xv[i] / (1 - rate)) <= 1e-15 * std::fabs(yv[i]);
    }
    sum_x += xv[i];
    sum_y += yv[i];
  }
  CHECK(each_ok);
  // Kept fraction: Binomial(n, 0.7) has sd sqrt(n 0.7 0.3) / n ~ 0.001; 0.005 is 5 sd.
  CHECK(std::fabs(static_cast<double>(kept) / n - (1 - rate)) < 0.005);
  // The mean is preserved: per element sd of y - x is at most 1.5 sqrt(rate / (1 - rate)) ~ 1, so the mean's
  // sd is ~0.0022; 0.01 is over 4 sd.
  CHECK(std::fabs(sum_y / n - sum_x / n) < 0.01);
  // Same key, same mask; another key, another mask.
  CHECK(drop->apply({x}, Tree(), Tree(), Key(9), Mode::train).outputs[0].to_vector<double>() == yv);
  CHECK(drop->apply({x}, Tree(), Tree(), Key(10), Mode::train).outputs[0].to_vector<double>() != yv);
  // float32 stays float32.
  CHECK(drop->apply({ones({8})}, Tree(), Tree(), Key(1), Mode::train).outputs[0].dtype() == DType::float32);
}

TEST_CASE("layers: Dropout is the identity outside train mode and at rate 0") {
  const Tensor x = test::random_tensor(Shape{4, 5}, DType::float32, 72);
  LayerPtr drop = Dropout(0.5);
  for (Mode mode : {Mode::eval, Mode::predict, Mode::collect}) {
    INFO("mode " << mode_name(mode));
    check_close(drop->apply({x}, Tree(), Tree(), Key(3), mode).outputs[0], x, kExact);
  }
  check_close(Dropout(0.0)->apply({x}, Tree(), Tree(), Key(3), Mode::train).outputs[0], x, kExact);
  // In train mode at rate 0.5 some elements of these 20 are dropped (fails with probability 2^-20).
  CHECK(drop->apply({x}, Tree(), Tree(), Key(3), Mode::train).outputs[0].to_vector<float>() != x.to_vector<float>());
}

TEST_CASE("layers: Dropout gradient by gradcheck is the scaled mask") {
  LayerPtr drop = Dropout(0.25);
  const Tensor x = test::random_tensor(Shape{6, 7}, DType::float64, 73);
  const GradcheckResult r = gradcheck([&](const std::vector<Tensor>& in) {
    return drop->apply({in[0]}, Tree(), Tree(), Key(4), Mode::train).outputs[0];
  }, {x});
  CHECK_MESSAGE(r.ok, r.message);
}

TEST_CASE("layers: Dropout rejects rates outside 0 to 1 (1 excluded) and integer inputs") {
  check_error([&] { Dropout(1.0); }, {"Dropout: rate must be in [0, 1), got 1"});
  check_error([&] { Dropout(-0.1); }, {"Dropout: rate must be in [0, 1)"});
  check_error([&] { Dropout(std::nan("")); }, {"Dropout: rate must be in [0, 1)"});
  check_error([&] { (*Dropout(0.1))(zeros({3}, DType::int32)); }, {"Dropout: input dtype int32 is not a float dtype"});
  check_error([&] { Dropout(0.1)->apply({zeros({3}, DType::int64)}, Tree(), Tree(), Key(), Mode::eval); },
              {"int64 is not a float dtype"});
}
