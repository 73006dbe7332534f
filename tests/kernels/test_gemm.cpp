// GEMM: native micro-kernels (every ISA the CPU runs) and the OpenBLAS backend against a naive
// double-accumulating reference, at awkward sizes, all transposes, alpha/beta, padded leading
// dimensions; the narrow-C path (n <= 4) and its boundary; thread-count independence; backend
// and ISA selection.
#include <ctrax/base/error.h>
#include <ctrax/kernels/gemm.h>
#include <ctrax/kernels/parallel.h>
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gemm_test_util.h"

using namespace ctrax::kernels;
using ctrax::kernels::test::GemmStateGuard;
using ctrax::kernels::test::supported_isas;

namespace {

template <typename T>
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b,
          int64_t ldb, T beta, T* c, int64_t ldc) {
  if constexpr (std::is_same_v<T, float>) {
    sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  } else {
    dgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
}

struct Shape {
  int64_t m, n, k;
};

struct Scalars {
  double alpha, beta;
};

// One GEMM problem with random operands stored with padded leading dimensions.
template <typename T>
struct Problem {
  bool ta, tb;
  int64_t m, n, k, lda, ldb, ldc;
  T alpha, beta;
  std::vector<T> a, b, c0;

  Problem(bool ta_, bool tb_, Shape s, Scalars sc, int64_t pad, uint32_t seed)
      : ta(ta_), tb(tb_), m(s.m), n(s.n), k(s.k), alpha(T(sc.alpha)), beta(T(sc.beta)) {
    const int64_t a_rows = ta ? k : m, a_cols = ta ? m : k;
    const int64_t b_rows = tb ? n : k, b_cols = tb ? k : n;
    lda = std::max<int64_t>(1, a_cols + pad);
    ldb = std::max<int64_t>(1, b_cols + pad);
    ldc = std::max<int64_t>(1, n + pad);
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> dist(-1.0, 1.0);
    a.resize(static_cast<size_t>(a_rows * lda));
    b.resize(static_cast<size_t>(b_rows * ldb));
    c0.resize(static_cast<size_t>(std::max<int64_t>(m, 1) * ldc));
    for (auto& x : a) x = T(dist(rng));
    for (auto& x : b) x = T(dist(rng));
    for (auto& x : c0) x = beta == T(0) ? std::numeric_limits<T>::quiet_NaN() : T(dist(rng));
    // Columns past n in each row of C are a sentinel GEMM must leave alone.
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = n; j < ldc; ++j) c0[static_cast<size_t>(i * ldc + j)] = T(1234.5);
  }

  T op_a(int64_t i, int64_t p) const { return ta ? a[size_t(p * lda + i)] : a[size_t(i * lda + p)]; }
  T op_b(int64_t p, int64_t j) const { return tb ? b[size_t(j * ldb + p)] : b[size_t(p * ldb + j)]; }

  std::vector<T> run() const {
    std::vector<T> c = c0;
    gemm<T>(ta, tb, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, c.data(), ldc);
    return c;
  }

  // Checks c against a double-accumulating reference with the forward error bound of a
  // length-k dot product: |err| <= atol + rtol * |ref| where atol scales with k and with the
  // sum of |terms| (so cancellation does not make the test flaky).
  void check(const std::vector<T>& c, const std::string& what) const {
    const double eps = std::numeric_limits<T>::epsilon();
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < ldc; ++j) {
        const T got = c[size_t(i * ldc + j)];
        if (j >= n) {
          REQUIRE_MESSAGE(got == T(1234.5), what, ": wrote outside C at (", i, ", ", j, ")");
          continue;
        }
        double sum = 0, magnitude = 0;
        for (int64_t p = 0; p < k; ++p) {
          const double term = double(op_a(i, p)) * double(op_b(p, j));
          sum += term;
          magnitude += std::fabs(term);
        }
        double ref = double(alpha) * sum;
        magnitude *= std::fabs(double(alpha));
        if (beta != T(0)) {
          const double old = double(c0[size_t(i * ldc + j)]);
          ref += double(beta) * old;
          magnitude += std::fabs(double(beta) * old);
        }
        const double atol = 2.0 * double(k + 2) * eps * magnitude + std::numeric_limits<T>::min();
        const double rtol = 4.0 * eps;
        const double err = std::fabs(double(got) - ref);
        if (!(err <= atol + rtol * std::fabs(ref))) {
          FAIL_CHECK(what, " m=", m, " n=", n, " k=", k, " ta=", ta, " tb=", tb, " alpha=", double(alpha),
                     " beta=", double(beta), ": C(", i, ",", j, ") = ", double(got), ", expected ", ref,
                     " (bound ", atol + rtol * std::fabs(ref), ")");
          return;
        }
      }
    }
  }
};

const Scalars kScalars[] = {{1.0, 0.0}, {0.5, 1.0}, {-1.5, 0.25}, {2.0, -1.0}};

// Small sizes: every combination (with every transpose).
const int64_t kSmallMN[] = {0, 1, 2, 7, 15, 16, 17, 31, 33};
const int64_t kSmallK[] = {0, 1, 7, 17};

// Larger sizes that cross the tile, cache-block (mc, kc) and thread-split boundaries.
const Shape kLargeShapes[] = {{64, 64, 64},  {63, 65, 64},  {65, 63, 129}, {257, 129, 65},
                              {129, 257, 63}, {31, 65, 257}, {1, 257, 129}, {257, 1, 65},
                              {16, 17, 300},  {2, 4100, 3},  {64, 2, 64},   {64, 64, 4},
                              {256, 64, 64},  {241, 33, 15}};

template <typename T>
void check_small_sizes(const std::string& what) {
  uint32_t seed = 1;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (int64_t m : kSmallMN)
        for (int64_t n : kSmallMN)
          for (int64_t k : kSmallK) {
            const Scalars sc = kScalars[seed % 4];
            Problem<T> problem(ta, tb, {m, n, k}, sc, /*pad=*/seed % 3 == 0 ? 3 : 0, seed);
            problem.check(problem.run(), what);
            ++seed;
          }
}

template <typename T>
void check_large_sizes(const std::string& what) {
  uint32_t seed = 1000;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (const Shape& shape : kLargeShapes) {
        const Scalars sc = kScalars[seed % 4];
        Problem<T> problem(ta, tb, shape, sc, /*pad=*/seed % 2 == 0 ? 5 : 0, seed);
        problem.check(problem.run(), what);
        ++seed;
      }
}

// The narrow-C path (n <= 4, and n = 5 just past it): both of its forms (op(A) = A, dot products
// along k; op(A) = A^T, vectors along m) with every op(B), k around the vector widths (the
// masked tail of the dot form), m around the row groups and vector blocks (the tails of both),
// every alpha/beta (beta = 0 over NaN C), and leading dimensions far past the matrix widths.
template <typename T>
void check_narrow(const std::string& what) {
  const int64_t ms[] = {1, 4, 5, 9, 17, 65, 130};
  const int64_t ks[] = {1, 3, 8, 15, 17, 33, 100};
  uint32_t seed = 5000;
  for (int64_t n = 1; n <= 5; ++n)
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (int64_t m : ms)
          for (int64_t k : ks) {
            const Scalars sc = kScalars[seed % 4];
            const int64_t pad = seed % 3 == 0 ? 0 : (seed % 3 == 1 ? 3 : 67);
            Problem<T> problem(ta, tb, {m, n, k}, sc, pad, seed);
            problem.check(problem.run(), what + " narrow");
            ++seed;
          }
}

}  // namespace

TEST_CASE("gemm: narrow C (n <= 4) matches the reference with every supported micro-kernel") {
  GemmStateGuard guard;
  set_gemm_backend(GemmBackend::native);
  for (GemmIsa isa : supported_isas()) {
    force_gemm_isa(isa);
    const std::string name = gemm_isa_name(isa);
    SUBCASE(("float " + name).c_str()) { check_narrow<float>("sgemm " + name); }
    SUBCASE(("double " + name).c_str()) { check_narrow<double>("dgemm " + name); }
  }
}

TEST_CASE("gemm: native matches the reference with every supported micro-kernel") {
  GemmStateGuard guard;
  set_gemm_backend(GemmBackend::native);
  for (GemmIsa isa : supported_isas()) {
    force_gemm_isa(isa);
    REQUIRE(active_gemm_isa() == isa);
    const std::string name = gemm_isa_name(isa);
    SUBCASE(("float " + name).c_str()) {
      check_small_sizes<float>("sgemm " + name);
      check_large_sizes<float>("sgemm " + name);
    }
    SUBCASE(("double " + name).c_str()) {
      check_small_sizes<double>("dgemm " + name);
      check_large_sizes<double>("dgemm " + name);
    }
  }
}

TEST_CASE("gemm: openblas backend matches the reference") {
  if (!openblas_available()) {
    CHECK_THROWS_AS(set_gemm_backend(GemmBackend::openblas), ctrax::Error);
    return;
  }
  GemmStateGuard guard;
  set_gemm_backend(GemmBackend::openblas);
  check_large_sizes<float>("sgemm openblas");
  check_large_sizes<double>("dgemm openblas");
}

TEST_CASE("gemm: native and openblas agree") {
  if (!openblas_available()) return;
  GemmStateGuard guard;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      Problem<float> problem(ta, tb, {129, 65, 257}, {0.75, 0.5}, 2, 77);
      set_gemm_backend(GemmBackend::native);
      const auto native = problem.run();
      set_gemm_backend(GemmBackend::openblas);
      const auto reference = problem.run();
      for (size_t i = 0; i < native.size(); ++i) {
        const double tol = 1e-4 * (1.0 + std::fabs(double(reference[i])));
        REQUIRE(std::fabs(double(native[i]) - double(reference[i])) <= tol);
      }
    }
}

TEST_CASE("gemm: native is bitwise independent of the thread count") {
  GemmStateGuard guard;
  set_gemm_backend(GemmBackend::native);
  // The first three take the register-tile path; the last two the narrow-C path (both of its
  // forms, by transpose) with m * n * k past the threading threshold (2^22).
  const Shape shapes[] = {{257, 129, 300}, {100, 333, 70}, {520, 40, 90}, {1037, 2, 2100}, {4500, 1, 1000}};
  for (const Shape& shape : shapes) {
    for (int transposes = 0; transposes < 4; ++transposes) {
      const bool ta = transposes & 1, tb = transposes & 2;
      const Problem<float> fp(ta, tb, shape, {1.0, 0.5}, 1, 5);
      const Problem<double> dp(tb, ta, shape, {1.0, 0.0}, 0, 6);
      for (GemmIsa isa : supported_isas()) {
        force_gemm_isa(isa);
        set_num_threads(1);
        const auto f1 = fp.run();
        const auto d1 = dp.run();
        for (int threads : {2, 3}) {
          set_num_threads(threads);
          const auto fn = fp.run();
          const auto dn = dp.run();
          CHECK_MESSAGE(std::memcmp(f1.data(), fn.data(), f1.size() * sizeof(float)) == 0, gemm_isa_name(isa),
                        " sgemm ", shape.m, "x", shape.n, "x", shape.k, " ta=", ta, " tb=", tb,
                        " threads=", threads);
          CHECK_MESSAGE(std::memcmp(d1.data(), dn.data(), d1.size() * sizeof(double)) == 0, gemm_isa_name(isa),
                        " dgemm ", shape.m, "x", shape.n, "x", shape.k, " ta=", tb, " tb=", ta,
                        " threads=", threads);
        }
      }
    }
  }
}

TEST_CASE("gemm: micro-kernel selection") {
  GemmStateGuard guard;
  CHECK(gemm_isa_supported(GemmIsa::portable));
  // Every AVX-512 CPU has AVX2 and FMA; a detection that says otherwise is broken.
  if (gemm_isa_supported(GemmIsa::avx512)) CHECK(gemm_isa_supported(GemmIsa::avx2));
  force_gemm_isa(std::nullopt);
  const GemmIsa best = active_gemm_isa();
  CHECK(gemm_isa_supported(best));
  for (GemmIsa isa : {GemmIsa::portable, GemmIsa::avx2, GemmIsa::avx512}) {
    if (gemm_isa_supported(isa)) {
      force_gemm_isa(isa);
      CHECK(active_gemm_isa() == isa);
      CHECK(static_cast<int>(isa) <= static_cast<int>(best));  // auto picks the widest
    } else {
      CHECK_THROWS_AS(force_gemm_isa(isa), ctrax::Error);
    }
  }
  force_gemm_isa(std::nullopt);
  CHECK(active_gemm_isa() == best);
  CHECK(std::string(gemm_isa_name(GemmIsa::avx512)) == "avx512");
}

TEST_CASE("gemm: backend selection") {
  GemmStateGuard guard;
  CHECK(parse_gemm_backend("native") == GemmBackend::native);
  CHECK(parse_gemm_backend("openblas") == GemmBackend::openblas);
  for (const char* bad : {"", "Native", "blas", "mkl"}) {
    try {
      parse_gemm_backend(bad);
      FAIL("parse_gemm_backend accepted \"", bad, "\"");
    } catch (const ctrax::Error& e) {
      const std::string message = e.what();
      CHECK(message.find("native") != std::string::npos);
      CHECK(message.find("openblas") != std::string::npos);
    }
  }
  CHECK(std::string(gemm_backend_name(GemmBackend::native)) == "native");
  CHECK(std::string(gemm_backend_name(GemmBackend::openblas)) == "openblas");
  set_gemm_backend(GemmBackend::native);
  CHECK(gemm_backend() == GemmBackend::native);
  if (openblas_available()) {
    set_gemm_backend(GemmBackend::openblas);
    CHECK(gemm_backend() == GemmBackend::openblas);
    CHECK(openblas_corename() != "none");
  } else {
    CHECK_THROWS_AS(set_gemm_backend(GemmBackend::openblas), ctrax::Error);
    CHECK(openblas_corename() == "none");
  }
}

TEST_CASE("gemm: rejects bad arguments") {
  float a[4] = {}, b[4] = {}, c[4] = {};
  CHECK_THROWS_AS(sgemm(false, false, -1, 2, 2, 1.f, a, 2, b, 2, 0.f, c, 2), ctrax::Error);
  CHECK_THROWS_AS(sgemm(false, false, 2, 2, 2, 1.f, a, 1, b, 2, 0.f, c, 2), ctrax::Error);  // lda < k
  CHECK_THROWS_AS(sgemm(false, false, 2, 2, 2, 1.f, a, 2, b, 2, 0.f, c, 1), ctrax::Error);  // ldc < n
}

TEST_CASE("gemm: the flop count adds 2 m n k per call, from every thread, exited ones included") {
  std::vector<float> a(6 * 5, 1.f), b(5 * 7, 1.f), c(6 * 7);
  std::vector<double> ad(3 * 4, 1.0), bd(4 * 2, 1.0), cd(3 * 2);
  const uint64_t before = gemm_flop_count();
  sgemm(false, false, 6, 7, 5, 1.f, a.data(), 5, b.data(), 7, 0.f, c.data(), 7);
  CHECK(gemm_flop_count() - before == 2 * 6 * 7 * 5);
  std::thread worker([&] {
    dgemm(false, false, 3, 2, 4, 1.0, ad.data(), 4, bd.data(), 2, 0.0, cd.data(), 2);
    sgemm_fused(false, false, 6, 7, 5, a.data(), 5, b.data(), 7, c.data(), 7, GemmEpilogue<float>{});
  });
  worker.join();  // its counter is retired into the total
  CHECK(gemm_flop_count() - before == 2 * (6 * 7 * 5 + 3 * 2 * 4 + 6 * 7 * 5));
  // Rejected calls and empty ones count nothing (k = 0 does no multiply).
  CHECK_THROWS_AS(sgemm(false, false, -1, 2, 2, 1.f, a.data(), 2, b.data(), 2, 0.f, c.data(), 2), ctrax::Error);
  sgemm(false, false, 6, 7, 0, 1.f, a.data(), 1, b.data(), 7, 0.f, c.data(), 7);
  CHECK(gemm_flop_count() - before == 2 * (6 * 7 * 5 + 3 * 2 * 4 + 6 * 7 * 5));
}
