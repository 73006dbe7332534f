// Random numbers drawn on a CUDA device against the CPU's draws from the same key: uniform,
// bernoulli (scalar and tensor p), categorical and randint must be identical bit for bit;
// normal agrees to a few ulps (the device's log, cos and sin differ from glibc's in the last
// ulp or two; kernels/cuda/random.h). Sizes cross several Philox blocks and odd counts (the
// last pair of normal, the last word of a block), and empty outputs are included. The CPU's
// refusals apply on the GPU with the same messages.
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <ctrax/tensor/ops.h>
#include <ctrax/tensor/random.h>
#include <ctrax/tensor/tensor.h>

#include "test_util.h"

namespace ctrax {
namespace {

const Device kGpu = Device::cuda(0);

// The raw bytes of a cpu tensor, so that floats are compared bit for bit (NaN, -0 too).
std::vector<unsigned char> bytes_of(const Tensor& t) {
  const Tensor c = t.contiguous();
  const auto* p = static_cast<const unsigned char*>(c.raw_data());
  return std::vector<unsigned char>(p, p + c.numel() * dtype_size(c.dtype()));
}

void check_bitwise(const Tensor& gpu_result, const Tensor& cpu_result, const std::string& what) {
  INFO(what);
  CHECK(gpu_result.device() == kGpu);
  const Tensor got = gpu_result.to(Device::cpu());
  REQUIRE(got.dtype() == cpu_result.dtype());
  REQUIRE(got.shape() == cpu_result.shape());
  const std::vector<unsigned char> a = bytes_of(got), b = bytes_of(cpu_result);
  if (a != b) {
    const std::vector<double> x = got.to(DType::float64).to_vector<double>();
    const std::vector<double> y = cpu_result.to(DType::float64).to_vector<double>();
    int reported = 0;
    for (size_t i = 0; i < x.size() && reported < 5; ++i)
      if (!(x[i] == y[i])) {
        ++reported;
        FAIL_CHECK("element " << i << ": gpu " << x[i] << ", cpu " << y[i]);
      }
    FAIL_CHECK("the GPU's bytes differ from the CPU's");
  }
}

const std::vector<Shape> kShapes = {Shape{}, Shape{0}, Shape{1}, Shape{3}, Shape{5}, Shape{7, 3}, Shape{1001},
                                    Shape{4, 0}, Shape{64, 257}};

TEST_CASE("cuda uniform: the GPU's draws equal the CPU's bit for bit") {
  const Key key(1234);
  for (const Shape& shape : kShapes)
    for (DType dtype : {DType::float32, DType::float64}) {
      check_bitwise(uniform(key, shape, dtype, 0.0, 1.0, kGpu), uniform(key, shape, dtype), "unit");
      check_bitwise(uniform(key, shape, dtype, -3.5, 2.25, kGpu), uniform(key, shape, dtype, -3.5, 2.25), "range");
      // hi - lo tiny next to hi: rounding lands on hi, which becomes the value below hi.
      check_bitwise(uniform(key, shape, dtype, 1.0, 1.0 + 1e-6, kGpu), uniform(key, shape, dtype, 1.0, 1.0 + 1e-6),
                    "tiny range");
    }
  // hi - lo overflows double: the convex form.
  const double big = std::numeric_limits<double>::max();
  check_bitwise(uniform(key, Shape{999}, DType::float64, -big, big, kGpu),
                uniform(key, Shape{999}, DType::float64, -big, big), "huge range");
}

TEST_CASE("cuda normal: the GPU's draws equal the CPU's to a few ulps") {
  const Key key(99);
  for (const Shape& shape : kShapes)
    for (DType dtype : {DType::float32, DType::float64}) {
      const Tensor got = normal(key, shape, dtype, 0.5, 2.0, kGpu);
      CHECK(got.device() == kGpu);
      const Tensor expected = normal(key, shape, dtype, 0.5, 2.0);
      const test::Tolerance tol = dtype == DType::float32 ? test::Tolerance{1e-6, 2.5e-7}
                                                           : test::Tolerance{1e-13, 1e-14};
      test::check_close(got.to(Device::cpu()), expected, tol, "normal");
    }
}

TEST_CASE("cuda bernoulli: scalar and tensor probabilities give the CPU's bits") {
  const Key key(7);
  for (const Shape& shape : kShapes)
    for (double p : {0.0, 0.3, 0.5, 1.0})
      check_bitwise(bernoulli(key, shape, p, kGpu), bernoulli(key, shape, p), "scalar p");
  // Per-element and broadcast probabilities of every real dtype; p's device picks the result's.
  const Tensor p_row = test::random_tensor(Shape{257}, DType::float64, 3, 0.0, 1.0);
  for (DType dtype : {DType::float32, DType::float64}) {
    const Tensor p = p_row.to(dtype);
    check_bitwise(bernoulli(key, p.to(kGpu)), bernoulli(key, p), "tensor p");
    check_bitwise(bernoulli(key, Shape{9, 257}, p.to(kGpu)), bernoulli(key, Shape{9, 257}, p), "broadcast p");
    const Tensor stored = test::random_tensor(Shape{257, 3}, dtype, 4, 0.0, 1.0);  // p is its transpose
    check_bitwise(bernoulli(key, stored.to(kGpu).transpose(0, 1)), bernoulli(key, stored.transpose(0, 1)),
                  "transposed p");
  }
  const Tensor zero_one = from_vector(std::vector<double>{0.0, 1.0, 1.0, 0.0}, Shape{4});
  check_bitwise(bernoulli(key, zero_one.to(kGpu)), bernoulli(key, zero_one), "0 and 1");
  const Tensor int_p = from_vector(std::vector<double>{0, 1, 1, 0, 1}, Shape{5}).to(DType::int32);
  check_bitwise(bernoulli(key, int_p.to(kGpu)), bernoulli(key, int_p), "int32 p");
  check_bitwise(bernoulli(key, Shape{0}, zero_one.slice(0, 0, 0).to(kGpu)), bernoulli(key, Shape{0},
                zero_one.slice(0, 0, 0)), "empty p");
}

TEST_CASE("cuda categorical: the GPU's samples equal the CPU's") {
  const Key key(2024);
  for (DType dtype : {DType::float32, DType::float64}) {
    const Tensor logits = test::random_tensor(Shape{37, 6}, dtype, 11, -3.0, 3.0);
    check_bitwise(categorical(key, logits.to(kGpu)), categorical(key, logits), "rows");
    check_bitwise(categorical(key, logits.to(kGpu), 0), categorical(key, logits, 0), "axis 0");
    check_bitwise(categorical(key, logits.to(kGpu), -1, Shape{5, 37}), categorical(key, logits, -1, Shape{5, 37}),
                  "more samples per row");
    const Tensor one_row = logits.slice(0, 0, 1);
    check_bitwise(categorical(key, one_row.to(kGpu), -1, Shape{4, 3, 1}),
                  categorical(key, one_row, -1, Shape{4, 3, 1}), "broadcast one row");
    const Tensor stored = logits.transpose(0, 1).contiguous();  // logits is its transpose
    check_bitwise(categorical(key, stored.to(kGpu).transpose(0, 1)), categorical(key, stored.transpose(0, 1)),
                  "transposed logits");
    const Tensor vector_logits = logits.slice(0, 0, 1).reshape(Shape{6});
    check_bitwise(categorical(key, vector_logits.to(kGpu)), categorical(key, vector_logits), "rank-0 result");
    check_bitwise(categorical(key, logits.to(kGpu), -1, Shape{0, 37}), categorical(key, logits, -1, Shape{0, 37}),
                  "no samples");
  }
  // -inf logits are never chosen, +inf wins, many categories.
  const double inf = std::numeric_limits<double>::infinity();
  const Tensor masked = from_vector(std::vector<double>{-inf, 0.0, -inf, 1.0, inf, 2.0, inf, -inf}, Shape{2, 4});
  check_bitwise(categorical(key, masked.to(kGpu), -1, Shape{50, 2}), categorical(key, masked, -1, Shape{50, 2}),
                "inf logits");
  const Tensor wide = test::random_tensor(Shape{3, 5000}, DType::float32, 12);
  check_bitwise(categorical(key, wide.to(kGpu)), categorical(key, wide), "5000 categories");
}

TEST_CASE("cuda randint: the GPU's integers equal the CPU's, rejections included") {
  const Key key(31337);
  const int64_t lo64 = std::numeric_limits<int64_t>::min(), hi64 = std::numeric_limits<int64_t>::max();
  for (const Shape& shape : kShapes) {
    check_bitwise(randint(key, shape, 0, 10, DType::int64, kGpu), randint(key, shape, 0, 10), "[0, 10)");
    check_bitwise(randint(key, shape, -5, 3, DType::int32, kGpu), randint(key, shape, -5, 3, DType::int32),
                  "int32");
    check_bitwise(randint(key, shape, lo64, hi64, DType::int64, kGpu), randint(key, shape, lo64, hi64), "full");
    // Range 2^63 + 1: 2^64 mod range = 2^63 - 1, so about half of all draws are redrawn.
    const int64_t lo = -2;
    check_bitwise(randint(key, shape, lo, hi64, DType::int64, kGpu), randint(key, shape, lo, hi64),
                  "many rejections");
  }
}

TEST_CASE("cuda random: the CPU's refusals apply on the GPU with the same messages") {
  const Key key(81);
  const double nan = std::nan("");
  test::check_error([&] { uniform(key, {3}, DType::float32, 1.0, 1.0, kGpu); }, {"uniform", "lo = 1"});
  test::check_error([&] { uniform(key, {3}, DType::int32, 0.0, 1.0, kGpu); }, {"uniform", "int32"});
  test::check_error([&] { normal(key, {3}, DType::float32, 0.0, -1.0, kGpu); }, {"normal", "stddev = -1"});
  test::check_error([&] { bernoulli(key, {3}, 1.5, kGpu); }, {"bernoulli", "1.5"});
  test::check_error([&] { bernoulli(key, from_vector(std::vector<double>{0.5, 2.0}, Shape{2}).to(kGpu)); },
                    {"bernoulli", "p = 2", "index 1"});
  test::check_error([&] { bernoulli(key, from_vector(std::vector<double>{0.5, nan, 0.1}, Shape{3}).to(kGpu)); },
                    {"bernoulli", "nan", "index 1"});
  test::check_error([&] { bernoulli(key, {2, 3}, ones({2}).to(kGpu)); }, {"bernoulli", "[2]", "[2, 3]"});
  test::check_error([&] { randint(key, {3}, 5, 5, DType::int64, kGpu); }, {"randint", "lo = 5"});
  const double inf = std::numeric_limits<double>::infinity();
  test::check_error(
      [&] { categorical(key, from_vector(std::vector<double>{0.0, -inf, -inf, -inf}, Shape{2, 2}).to(kGpu)); },
      {"categorical", "row 1", "-inf"});
  test::check_error(
      [&] { categorical(key, from_vector(std::vector<double>{0.0, 1.0, -inf, nan, nan, 0.0}, Shape{3, 2}).to(kGpu)); },
      {"categorical", "NaN", "row 1", "category 1"});
  test::check_error([&] { categorical(key, from_vector(std::vector<double>{1.0, 2.0}, Shape{2}).to(DType::int64)
                                               .to(kGpu)); },
                    {"categorical", "int64"});
}

}  // namespace
}  // namespace ctrax
