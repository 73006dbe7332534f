// Device tensors: moving to and from the GPU, copies with conversion and broadcasting, fill,
// the caching allocator and the refusals (tensor/tensor.cpp, kernels/cuda/runtime.h, copy.h).
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <ctrax/kernels/cuda/runtime.h>
#include <ctrax/tensor/tensor.h>

#include "test_util.h"

namespace ctrax {
namespace {

const Device kGpu = Device::cuda(0);

// Exact comparison (same dtype, shape and bits for every element; NaN equal to NaN).
void check_identical(const Tensor& actual, const Tensor& expected) {
  REQUIRE(actual.device().is_cpu());
  REQUIRE(actual.dtype() == expected.dtype());
  REQUIRE(actual.shape() == expected.shape());
  const std::vector<double> a = actual.to_vector<double>(), e = expected.to_vector<double>();
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(e[i])) {
      CHECK(std::isnan(a[i]));
    } else {
      CHECK(a[i] == e[i]);
    }
  }
}

TEST_CASE("cuda tensor: to(cuda) and back keeps every dtype and shape") {
  for (DType dtype : test::kAllDTypes) {
    for (const Shape& shape : {Shape{}, Shape{0}, Shape{1}, Shape{7}, Shape{3, 5}, Shape{2, 3, 4}, Shape{1000, 33}}) {
      const Tensor x = test::random_tensor(shape, dtype, 7);
      const Tensor g = x.to(kGpu);
      CHECK(g.device() == kGpu);
      CHECK(g.shape() == shape);
      check_identical(g.to(Device::cpu()), x);
    }
  }
}

TEST_CASE("cuda tensor: a non-contiguous view moves as its values") {
  const Tensor x = test::random_tensor(Shape{4, 6, 5}, DType::float32, 3);
  check_identical(x.permute({2, 0, 1}).to(kGpu).to(Device::cpu()), x.permute({2, 0, 1}).contiguous());
  // A view made on the device is made contiguous there before the transfer.
  const Tensor g = x.to(kGpu);
  check_identical(g.permute({1, 2, 0}).to(Device::cpu()), x.permute({1, 2, 0}).contiguous());
  check_identical(g.slice(1, 1, 6, 2).to(Device::cpu()), x.slice(1, 1, 6, 2).contiguous());
  check_identical(g.permute({2, 0, 1}).contiguous().to(Device::cpu()), x.permute({2, 0, 1}).contiguous());
  CHECK(g.permute({2, 0, 1}).contiguous().is_contiguous());
}

TEST_CASE("cuda tensor: to(dtype) converts with the cpu rule") {
  const std::vector<double> values = {0.0, -0.0, 1.5, -1.5, 2.5, -7.9, 3e9, -3e9, 1e20,
                                      std::numeric_limits<double>::infinity(),
                                      -std::numeric_limits<double>::infinity(),
                                      std::numeric_limits<double>::quiet_NaN()};
  for (DType from : test::kAllDTypes) {
    const Tensor x = from_vector(values).to(from);
    const Tensor g = x.to(kGpu);
    for (DType to : test::kAllDTypes) check_identical(g.to(to).to(Device::cpu()), x.to(to));
  }
}

TEST_CASE("cuda tensor: copy_ broadcasts, converts and accepts the other device") {
  Tensor dst = zeros(Shape{3, 4}, DType::float64, kGpu);
  const Tensor row = from_vector<int32_t>({1, 2, 3, 4}, Shape{4});
  dst.copy_(row.to(kGpu));
  check_identical(dst.to(Device::cpu()), row.expand(Shape{3, 4}).to(DType::float64).contiguous());
  // A CPU source is moved to the device first.
  dst.copy_(from_vector<float>({5, 6, 7}, Shape{3, 1}));
  check_identical(dst.to(Device::cpu()), from_vector<double>({5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7}, Shape{3, 4}));
  // Into a strided destination.
  Tensor big = zeros(Shape{4, 6}, DType::float32, kGpu);
  big.slice(1, 0, 6, 2).copy_(ones(Shape{4, 3}));
  Tensor expected = zeros(Shape{4, 6});
  expected.slice(1, 0, 6, 2).copy_(ones(Shape{4, 3}));
  check_identical(big.to(Device::cpu()), expected);
  // A copy of a tensor onto an overlapping view of itself reads everything first.
  Tensor overlap = arange(0.0, 8.0, 1.0, DType::float32).to(kGpu);
  overlap.slice(0, 1, 8).copy_(overlap.slice(0, 0, 7));
  check_identical(overlap.to(Device::cpu()), from_vector<float>({0, 0, 1, 2, 3, 4, 5, 6}));
  test::check_error([&] { dst.copy_(zeros(Shape{5}, DType::float32, kGpu)); }, {"[5]", "[3, 4]"});
}

TEST_CASE("cuda tensor: fill_, full and item") {
  for (DType dtype : test::kAllDTypes) {
    const Tensor g = full(Shape{3, 70}, 2.75, dtype, kGpu);
    check_identical(g.to(Device::cpu()), full(Shape{3, 70}, 2.75, dtype));
    CHECK(g.slice(1, 5, 6).slice(0, 1, 2).item<double>() == full(Shape{1}, 2.75, dtype).item<double>());
  }
  Tensor g = zeros(Shape{4, 5}, DType::int32, kGpu);
  g.slice(1, 1, 5, 3).fill_(-9.7);
  Tensor c = zeros(Shape{4, 5}, DType::int32);
  c.slice(1, 1, 5, 3).fill_(-9.7);
  check_identical(g.to(Device::cpu()), c);
  CHECK(g.to_vector<int32_t>() == c.to_vector<int32_t>());
}

TEST_CASE("cuda tensor: the caching allocator reuses freed blocks") {
  kernels::cuda::synchronize();
  const auto before = kernels::cuda::allocator_stats(0);
  { const Tensor a = empty(Shape{1000}, DType::float32, kGpu); }
  const auto middle = kernels::cuda::allocator_stats(0);
  CHECK(middle.allocated_bytes == before.allocated_bytes);
  CHECK(middle.cached_bytes >= 4096);
  { const Tensor b = empty(Shape{1000}, DType::float32, kGpu); }
  const auto after = kernels::cuda::allocator_stats(0);
  CHECK(after.cache_hits > middle.cache_hits);
  CHECK(after.cuda_malloc_calls == middle.cuda_malloc_calls);
  CHECK(after.peak_allocated_bytes >= 4000);
  kernels::cuda::release_cached_memory();
  CHECK(kernels::cuda::allocator_stats(0).cached_bytes == 0);
}

TEST_CASE("cuda tensor: device facts and refusals") {
  CHECK(kernels::cuda::device_count() >= 1);
  const auto info = kernels::cuda::device_info(0);
  CHECK(!info.name.empty());
  CHECK(info.compute_major >= 5);
  CHECK(info.driver_version > 0);
  const int missing = kernels::cuda::device_count();
  test::check_error([&] { empty(Shape{2}, DType::float32, Device::cuda(missing)); },
                    {"cuda:" + std::to_string(missing), "does not exist"});
  test::check_error([&] { kernels::cuda::set_device(missing); }, {"does not exist"});
  // An absurd size is refused before reaching the driver; an allocation beyond the device's
  // memory is an error naming the sizes, not a crash.
  test::check_error([] { empty(Shape{int64_t{1} << 45}, DType::float32, kGpu); }, {"refusing"});
  test::check_error([&] { empty(Shape{static_cast<int64_t>(info.total_memory)}, DType::float64, kGpu); },
                    {"out of memory", "cuda:0"});
}

}  // namespace
}  // namespace ctrax
