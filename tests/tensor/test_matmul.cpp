// matmul against a plain double-precision triple loop, on both GEMM backends: every
// combination of transposed (.mT()) operands, awkward sizes, batch broadcasting, 1-D
// operands, zero-sized dimensions, strided operands that need packing, float64, and errors.
#include <ctrax/kernels/gemm.h>

#include "test_util.h"

using namespace ctrax;
using namespace ctrax::test;

CTRAX_OPS_TESTED(matmul);

namespace {

// Runs f once per available GEMM backend, restoring the caller's backend afterwards.
struct BackendRestore {
  kernels::GemmBackend previous = kernels::gemm_backend();
  ~BackendRestore() { kernels::set_gemm_backend(previous); }
};

template <typename F>
void for_each_backend(F&& f) {
  BackendRestore restore;
  std::vector<kernels::GemmBackend> backends{kernels::GemmBackend::native};
  if (kernels::openblas_available()) backends.push_back(kernels::GemmBackend::openblas);
  for (kernels::GemmBackend backend : backends) {
    kernels::set_gemm_backend(backend);
    INFO("backend " << kernels::gemm_backend_name(backend));
    f();
  }
}

// NumPy matmul semantics written out directly, in double.
std::vector<double> ref_matmul(const Tensor& a, const Tensor& b, Shape& out_shape) {
  const Shape as = a.rank() == 1 ? Shape{1, a.size(0)} : a.shape();
  const Shape bs = b.rank() == 1 ? Shape{b.size(0), 1} : b.shape();
  const std::vector<double> av = a.to_vector<double>(), bv = b.to_vector<double>();
  const int64_t m = as[as.rank() - 2], k = as[as.rank() - 1], n = bs[bs.rank() - 1];
  Shape batch;
  const int nb = std::max(as.rank(), bs.rank()) - 2;
  for (int d = 0; d < nb; ++d) {
    const int da = d - (nb - (as.rank() - 2)), db = d - (nb - (bs.rank() - 2));
    const int64_t sa = da >= 0 ? as[da] : 1, sb = db >= 0 ? bs[db] : 1;
    batch.push_back(std::max(sa, sb) == 0 || sa == 0 || sb == 0 ? 0 : std::max(sa, sb));
  }
  out_shape = batch;
  if (a.rank() > 1) out_shape.push_back(m);
  if (b.rank() > 1) out_shape.push_back(n);
  std::vector<double> out;
  for (int64_t bi = 0; bi < batch.numel(); ++bi) {
    std::vector<int64_t> idx = unravel(bi, batch);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p) {
          std::vector<int64_t> ia = idx, ib = idx;
          ia.push_back(i), ia.push_back(p), ib.push_back(p), ib.push_back(j);
          s += av[static_cast<size_t>(ravel_broadcast(ia, as))] * bv[static_cast<size_t>(ravel_broadcast(ib, bs))];
        }
        out.push_back(s);
      }
    }
  }
  return out;
}

Tolerance matmul_tolerance(DType dtype, int64_t k) {
  const double kk = static_cast<double>(std::max<int64_t>(k, 1));
  return dtype == DType::float32 ? Tolerance{1e-5 * kk, 1e-5} : Tolerance{1e-13 * kk, 1e-12};
}

void check_matmul(const Tensor& a, const Tensor& b, const std::string& what) {
  Shape shape;
  const std::vector<double> ref = ref_matmul(a, b, shape);
  const Tensor got = matmul(a, b);
  CHECK(got.dtype() == promote_types(a.dtype(), b.dtype()));
  check_close(got, shape, ref, matmul_tolerance(got.dtype(), a.size(-1)), what);
}

// An (rows, cols) operand, optionally stored transposed and read through .mT().
Tensor operand(int64_t rows, int64_t cols, bool transposed, DType dtype, uint64_t seed) {
  return transposed ? random_tensor(Shape{cols, rows}, dtype, seed).mT() : random_tensor(Shape{rows, cols}, dtype, seed);
}

}  // namespace

TEST_CASE("matmul: transposed operands and awkward sizes on both backends") {
  for_each_backend([] {
    const int64_t sizes[][3] = {{1, 1, 1}, {7, 5, 3}, {1, 63, 7}, {63, 65, 7}, {65, 63, 64}, {7, 1, 65}};
    for (DType dtype : {DType::float32, DType::float64}) {
      for (const auto& s : sizes) {
        for (bool ta : {false, true}) {
          for (bool tb : {false, true}) {
            const Tensor a = operand(s[0], s[1], ta, dtype, 1), b = operand(s[1], s[2], tb, dtype, 2);
            check_matmul(a, b, std::string(dtype_name(dtype)) + " " + std::to_string(s[0]) + "x" +
                                   std::to_string(s[1]) + "x" + std::to_string(s[2]) + (ta ? " A^T" : "") +
                                   (tb ? " B^T" : ""));
          }
        }
      }
    }
  });
}

TEST_CASE("matmul: batch broadcasting") {
  for_each_backend([] {
    for (DType dtype : {DType::float32, DType::float64}) {
      const Tensor a = random_tensor(Shape{2, 1, 3, 4}, dtype, 3), b = random_tensor(Shape{5, 4, 2}, dtype, 4);
      CHECK(matmul(a, b).shape() == Shape{2, 5, 3, 2});
      check_matmul(a, b, "(2,1,3,4)@(5,4,2)");
      check_matmul(random_tensor(Shape{3, 4}, dtype, 5), random_tensor(Shape{2, 4, 5}, dtype, 6), "(3,4)@(2,4,5)");
      // a shared right operand: the batch folds into the rows of one GEMM
      check_matmul(random_tensor(Shape{2, 3, 4, 5}, dtype, 7), random_tensor(Shape{5, 6}, dtype, 8), "fold");
      check_matmul(random_tensor(Shape{2, 3, 4, 5}, dtype, 7), random_tensor(Shape{6, 5}, dtype, 8).mT(), "fold B^T");
      // transposed batches cannot fold
      check_matmul(random_tensor(Shape{3, 5, 4}, dtype, 9).mT(), random_tensor(Shape{5, 6}, dtype, 10), "batch A^T");
      check_matmul(random_tensor(Shape{3, 4, 5}, dtype, 11), random_tensor(Shape{3, 6, 5}, dtype, 12).mT(), "batch B^T");
      // zero-stride (expanded) batches reuse one matrix
      check_matmul(random_tensor(Shape{1, 3, 4}, dtype, 13).expand(Shape{4, 3, 4}), random_tensor(Shape{4, 4, 2}, dtype, 14),
                   "expanded A");
      check_matmul(random_tensor(Shape{4, 3, 4}, dtype, 15), random_tensor(Shape{4, 2}, dtype, 16).expand(Shape{4, 4, 2}),
                   "expanded B");
      // a batch axis that is itself strided (every other matrix)
      check_matmul(random_tensor(Shape{6, 3, 4}, dtype, 17).slice(0, 0, 6, 2), random_tensor(Shape{4, 2}, dtype, 18),
                   "step-sliced batch");
      // single-row batches whose rows are further apart than their length (folds with lda 8)
      check_matmul(random_tensor(Shape{3, 8}, dtype, 21).slice(1, 0, 4).unsqueeze(1), random_tensor(Shape{4, 2}, dtype, 22),
                   "spaced single rows");
      check_matmul(random_tensor(Shape{3, 8}, dtype, 23).slice(1, 0, 4).unsqueeze(1).mT().mT(),
                   random_tensor(Shape{4, 2}, dtype, 24).unsqueeze(0), "spaced single rows, unit batch of b");
      // many tiny matrices (the RL case)
      check_matmul(random_tensor(Shape{64, 1, 4}, dtype, 19), random_tensor(Shape{64, 4, 1}, dtype, 20), "64 dots");
    }
  });
}

TEST_CASE("matmul: operands that need packing") {
  for_each_backend([] {
    // unit stride in neither matrix axis: packed with a copy, results unchanged
    const Tensor a = random_tensor(Shape{6, 10}, DType::float32, 21).slice(1, 0, 10, 2);  // (6, 5), strides (10, 2)
    const Tensor b = random_tensor(Shape{10, 12}, DType::float32, 22).slice(0, 0, 10, 2).slice(1, 0, 12, 3);
    check_matmul(a, b, "both strided");
    check_matmul(a.mT().contiguous().mT(), b, "A column-major, B strided");
    // a row-major matrix whose rows overlap (expanded rows) is not a valid GEMM layout
    check_matmul(random_tensor(Shape{1, 5}, DType::float32, 23).expand(Shape{4, 5}), random_tensor(Shape{5, 3}, DType::float32, 24),
                 "expanded rows");
  });
}

TEST_CASE("matmul: 1-D operands") {
  for_each_backend([] {
    for (DType dtype : {DType::float32, DType::float64}) {
      const Tensor v = random_tensor(Shape{5}, dtype, 30), w = random_tensor(Shape{5}, dtype, 31);
      const Tensor m = random_tensor(Shape{5, 3}, dtype, 32), mt = random_tensor(Shape{3, 5}, dtype, 33);
      CHECK(matmul(v, m).shape() == Shape{3});
      check_matmul(v, m, "vector@matrix");
      CHECK(matmul(mt, v).shape() == Shape{3});
      check_matmul(mt, v, "matrix@vector");
      CHECK(matmul(v, w).shape() == Shape{});
      check_matmul(v, w, "vector@vector");
      check_matmul(non_contiguous(v), non_contiguous(w), "strided vectors");
      check_matmul(v, random_tensor(Shape{2, 5, 3}, dtype, 34), "vector@batch");
      check_matmul(random_tensor(Shape{2, 3, 5}, dtype, 35), v, "batch@vector");
      check_matmul(m.mT(), v, "transposed matrix@vector");
    }
  });
}

TEST_CASE("matmul: zero-sized dimensions") {
  for_each_backend([] {
    Tensor c = matmul(random_tensor(Shape{3, 0}, DType::float32, 40), random_tensor(Shape{0, 4}, DType::float32, 41));
    check_close(c, Shape{3, 4}, std::vector<double>(12, 0.0), {0, 0}, "k = 0 gives zeros");
    c = matmul(zeros(Shape{2, 3, 0}, DType::float64), zeros(Shape{0, 2}, DType::float64));
    check_close(c, Shape{2, 3, 2}, std::vector<double>(12, 0.0), {0, 0}, "batched k = 0");
    CHECK(matmul(zeros(Shape{0, 4}), zeros(Shape{4, 5})).shape() == Shape{0, 5});
    CHECK(matmul(zeros(Shape{3, 4}), zeros(Shape{4, 0})).shape() == Shape{3, 0});
    CHECK(matmul(zeros(Shape{0, 2, 3}), zeros(Shape{3, 4})).shape() == Shape{0, 2, 4});
    CHECK(matmul(zeros(Shape{0}), zeros(Shape{0})).item<float>() == 0.0f);
  });
}

TEST_CASE("matmul: dtype promotion") {
  const Tensor a = random_tensor(Shape{3, 4}, DType::float32, 50), b = random_tensor(Shape{4, 2}, DType::float64, 51);
  CHECK(matmul(a, b).dtype() == DType::float64);
  check_matmul(a, b, "float32 @ float64");
}

TEST_CASE("matmul: bad arguments throw with a clear message") {
  const Tensor f = zeros(Shape{2, 3});
  check_error([&] { matmul(zeros(Shape{2, 3}, DType::int32), zeros(Shape{3, 2})); },
              {"matmul", "floating", "int32"});
  check_error([&] { matmul(f, zeros(Shape{3, 2}, DType::boolean)); }, {"matmul", "floating", "bool"});
  check_error([&] { matmul(scalar_tensor(1.0f), f); }, {"matmul", "rank", "[]"});
  check_error([&] { matmul(f, scalar_tensor(1.0f)); }, {"matmul", "rank"});
  check_error([&] { matmul(f, zeros(Shape{4, 2})); }, {"matmul", "[2, 3]", "[4, 2]", "3", "4"});
  check_error([&] { matmul(zeros(Shape{3}), zeros(Shape{4})); }, {"matmul", "[3]", "[4]"});
  check_error([&] { matmul(zeros(Shape{2, 2, 3}), zeros(Shape{3, 3, 2})); },
              {"matmul", "[2, 2, 3]", "[3, 3, 2]", "broadcast"});
  check_error([&] { matmul(Tensor{}, f); }, {"matmul", "undefined"});
  check_error([&] { matmul(f, Tensor{}); }, {"matmul", "undefined"});
}
