// matmul on a CUDA device against the CPU result: every layout the CPU path accepts (row- and
// column-major operands, strided views, 1-D promotion, broadcast batches, folded batches),
// both dtypes, every hand-written SGEMM version and cuBLAS.
#include <string>
#include <vector>

#include <ctrax/kernels/cuda/gemm.h>
#include <ctrax/tensor/ops.h>
#include <ctrax/tensor/tensor.h>

#include "test_util.h"

namespace ctrax {
namespace {

const Device kGpu = Device::cuda(0);

struct MatmulCase {
  Shape a, b;
  bool transpose_a = false, transpose_b = false;  // operand stored transposed (a .mT() view)
};

const std::vector<MatmulCase> kCases = {
    {{1, 1}, {1, 1}},        {{7, 5}, {5, 13}},        {{33, 17}, {17, 65}, true, false},
    {{33, 17}, {17, 65}, false, true}, {{64, 64}, {64, 64}, true, true}, {{5}, {5, 3}},
    {{4, 5}, {5}},           {{5}, {5}},               {{3, 1, 6, 4}, {2, 4, 7}},
    {{2, 3, 9, 8}, {8, 10}}, {{0, 4}, {4, 3}},         {{3, 0}, {0, 5}},
    {{129, 131}, {131, 127}},
};

Tensor make(const Shape& shape, bool transposed, DType dtype, uint64_t seed) {
  if (!transposed || shape.rank() < 2) return test::random_tensor(shape, dtype, seed);
  Shape swapped = shape;
  std::swap(swapped[shape.rank() - 1], swapped[shape.rank() - 2]);
  return test::random_tensor(swapped, dtype, seed).mT();
}

void check_all_cases(DType dtype, const std::string& label) {
  uint64_t seed = 1;
  for (const MatmulCase& c : kCases) {
    CAPTURE(label);
    CAPTURE(c.a);
    CAPTURE(c.b);
    const Tensor a = make(c.a, c.transpose_a, dtype, seed++), b = make(c.b, c.transpose_b, dtype, seed++);
    const Tensor expected = matmul(a, b);
    const Tensor got = matmul(a.to(kGpu), b.to(kGpu));
    CHECK(got.device() == kGpu);
    const int64_t k = c.a[c.a.rank() - 1];
    // The TF32 tensor-core version rounds operands to 10 mantissa bits.
    const bool tf32 = dtype == DType::float32 &&
                      std::string(kernels::cuda::sgemm_version_name(kernels::cuda::sgemm_version())).find("tf32") !=
                          std::string::npos;
    const double tol = dtype == DType::float64 ? 1e-12 : tf32 ? 2e-3 * std::sqrt(double(k) + 1) : 1e-5 * (k + 1);
    test::check_close(got.to(Device::cpu()), expected, {tol, tol}, label);
  }
}

TEST_CASE("cuda matmul: every layout against the cpu, float32 and float64") {
  check_all_cases(DType::float32, "default sgemm");
  check_all_cases(DType::float64, "dgemm");
}

TEST_CASE("cuda matmul: every sgemm version gives the cpu result") {
  const int saved = kernels::cuda::sgemm_version();
  for (int v = 0; v < kernels::cuda::sgemm_version_count(); ++v) {
    kernels::cuda::set_sgemm_version(v);
    check_all_cases(DType::float32, kernels::cuda::sgemm_version_name(v));
  }
  kernels::cuda::set_sgemm_version(saved);
}

TEST_CASE("cuda matmul: operands on different devices are refused") {
  const Tensor a = ones(Shape{2, 3}), b = ones(Shape{3, 4});
  test::check_error([&] { matmul(a.to(kGpu), b); }, {"matmul", "cuda:0", "cpu"});
  test::check_error([&] { matmul(a, b.to(kGpu)); }, {"matmul", "cuda:0", "cpu"});
  test::check_error([&] { matmul(a.to(kGpu), ones(Shape{4, 4}, DType::float32, kGpu)); }, {"contracted"});
  test::check_error([&] { matmul(a.to(DType::int32).to(kGpu), b.to(kGpu)); }, {"floating"});
}

}  // namespace
}  // namespace ctrax
