// GEMM epilogues (kernels/gemm.h: sgemm_fused, dgemm_fused): bit for bit the GEMM (alpha 1,
// beta 0) followed by the separate bias add, relu and relu-backward mask, in every combination,
// on every micro-kernel the CPU runs and on OpenBLAS, through the register-tile path (full and
// partial tiles, several k blocks, threads) and the narrow-C path, with NaN, infinite, negative
// and signed-zero values; and the small-k path (k <= 4, row by row) against the register tile.
#include <ctrax/base/error.h>
#include <ctrax/kernels/gemm.h>
#include <ctrax/kernels/gemm/driver.h>
#include <ctrax/kernels/parallel.h>
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gemm_test_util.h"

using namespace ctrax::kernels;
using ctrax::kernels::test::GemmStateGuard;
using ctrax::kernels::test::supported_isas;

namespace {

int64_t g_negative_zeros = 0;

template <typename T>
void plain_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb,
                T* c, int64_t ldc) {
  if constexpr (std::is_same_v<T, float>)
    sgemm(ta, tb, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
  else
    dgemm(ta, tb, m, n, k, 1.0, a, lda, b, ldb, 0.0, c, ldc);
}

template <typename T>
void fused_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb,
                T* c, int64_t ldc, const GemmEpilogue<T>& epilogue) {
  if constexpr (std::is_same_v<T, float>)
    sgemm_fused(ta, tb, m, n, k, a, lda, b, ldb, c, ldc, epilogue);
  else
    dgemm_fused(ta, tb, m, n, k, a, lda, b, ldb, c, ldc, epilogue);
}

template <typename T>
uint64_t bits(T x) {
  if constexpr (std::is_same_v<T, float>)
    return std::bit_cast<uint32_t>(x);
  else
    return std::bit_cast<uint64_t>(x);
}

// One problem: random operands (a few NaN, inf and huge values in A so some sums are NaN or
// inf), a bias with negative zeros, and C filled with garbage the fused call must overwrite.
// C's rows padded by `pad` (0: C is one block, which the narrow path's epilogue passes treat as flat).
template <typename T>
void check_problem(const std::string& what, bool ta, bool tb, int64_t m, int64_t n, int64_t k, int64_t pad,
                   uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  const int64_t lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 2, ldc = n + pad;
  std::vector<T> a((ta ? k : m) * lda), b((tb ? n : k) * ldb), bias(n);
  for (T& x : a) x = static_cast<T>(u(rng));
  for (T& x : b) x = static_cast<T>(u(rng));
  for (int64_t j = 0; j < n; ++j) bias[j] = j % 7 == 3 ? T(-0.0) : static_cast<T>(u(rng));
  // Row 0 of op(A) tiny and negative, column 3 of op(B) tiny: their products round to -0, so
  // with FMA C(0, 3) is -0 and, with the bias's -0 there, so is the value relu sees (relu(-0) = +0).
  for (int64_t p = 0; p < k; ++p) {
    a[ta ? p * lda : p] = -std::numeric_limits<T>::min();
    if (n > 3) b[tb ? 3 * ldb + p : p * ldb + 3] = T(1e-20);
  }
  if (a.size() > 10 && m > 1) {
    a[ta ? 1 : lda + 1] = std::numeric_limits<T>::quiet_NaN();
    a[a.size() - 1] = std::numeric_limits<T>::infinity();
  }
  // The mask (relu's output in a backward): positive, zero, -0, negative and NaN entries.
  std::vector<T> mask(m * ldc);
  for (size_t i = 0; i < mask.size(); ++i) {
    const int kind = static_cast<int>(i % 5);
    mask[i] = kind == 0 ? T(0) : kind == 1 ? T(-0.0) : kind == 2 ? std::numeric_limits<T>::quiet_NaN()
                                                                 : static_cast<T>(u(rng));
  }
  for (int combination = 1; combination < 8; ++combination) {
    const bool with_bias = combination & 1, relu = combination & 2, with_mask = combination & 4;
      std::vector<T> expected(m * ldc, T(7)), got(m * ldc, std::numeric_limits<T>::quiet_NaN());
      plain_gemm<T>(ta, tb, m, n, k, a.data(), lda, b.data(), ldb, expected.data(), ldc);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          T& x = expected[i * ldc + j];
          if (with_bias) x = x + bias[j];
          if (relu) x = x <= T(0) ? T(0) : x;
          if (with_mask) x = mask[i * ldc + j] > T(0) ? x : T(0);
        }
      fused_gemm<T>(ta, tb, m, n, k, a.data(), lda, b.data(), ldb, got.data(), ldc,
                    GemmEpilogue<T>{with_bias ? bias.data() : nullptr, relu, with_mask ? mask.data() : nullptr});
      // How often relu met a -0 (see above; FMA kernels only: without FMA the first product's -0
      // plus the accumulator's +0 is +0).
      if (n > 3 && with_bias && !relu && !with_mask && expected[3] == T(0) && std::signbit(expected[3])) ++g_negative_zeros;
      int64_t wrong = 0;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) wrong += bits(got[i * ldc + j]) != bits(expected[i * ldc + j]);
      // Outside the m x n block (the ldc padding) nothing is written.
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = n; j < ldc; ++j) wrong += !std::isnan(got[i * ldc + j]);
      INFO(what, " ta=", ta, " tb=", tb, " m=", m, " n=", n, " k=", k, " ldc=", ldc, " bias=", with_bias, " relu=", relu,
           " mask=", with_mask);
      CHECK(wrong == 0);
    }
}

template <typename T>
void check_shapes(const std::string& what) {
  struct Size {
    int64_t m, n, k;
  };
  // Full and partial register tiles, n past one tile, k over one cache block (kc = 256), the
  // narrow path (n <= 4), one row, and one big enough to be split over threads. The 12-row
  // ones give full-height tiles (whose epilogue runs in registers) of every width in vectors:
  // 1, 2 and 3 full vectors of 16 floats (2 and 3 of 8 doubles are 16 and 24 columns too).
  const Size sizes[] = {{1, 64, 3},  {7, 17, 5},   {13, 64, 64}, {64, 33, 300}, {6, 2, 40},   {37, 1, 64},
                        {5, 4, 1},   {200, 100, 260}, {12, 16, 9},  {12, 32, 9},   {12, 48, 9},  {24, 8, 9}};
  uint32_t seed = 1;
  for (const Size& s : sizes)
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (int64_t pad : {5, 0}) check_problem<T>(what, ta, tb, s.m, s.n, s.k, pad, seed++);
}

}  // namespace

TEST_CASE("gemm epilogue: bias, relu and mask give the bits of the separate ops, every micro-kernel") {
  GemmStateGuard guard;
  set_gemm_backend(GemmBackend::native);
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    for (GemmIsa isa : supported_isas()) {
      force_gemm_isa(isa);
      check_shapes<float>(std::string("sgemm_fused ") + gemm_isa_name(isa));
      check_shapes<double>(std::string("dgemm_fused ") + gemm_isa_name(isa));
    }
  }
  if (gemm_isa_supported(GemmIsa::avx2)) CHECK(g_negative_zeros > 0);
}

namespace {

// Restores the small-k path (on by default) even when a check fails.
struct SmallKPathGuard {
  ~SmallKPathGuard() { gemm_detail::set_small_k_path(true); }
};

// C = alpha op(A) op(B) + beta C, then the epilogue (alpha 1, beta 0 only), through the small-k
// path and through the register tile: the same bits, NaN and signed zeros included.
template <typename T>
void check_small_k(const std::string& what, bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, T beta,
                   int combination, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  const int64_t lda = (ta ? m : k) + 1, ldb = (tb ? k : n) + 3, ldc = n + 2;
  std::vector<T> a((ta ? k : m) * lda), b((tb ? n : k) * ldb), bias(n), mask(m * ldc), c0(m * ldc);
  for (T& x : a) x = static_cast<T>(u(rng));
  for (T& x : b) x = static_cast<T>(u(rng));
  for (T& x : c0) x = static_cast<T>(u(rng));
  for (int64_t j = 0; j < n; ++j) bias[j] = j % 5 == 2 ? T(-0.0) : static_cast<T>(u(rng));
  for (size_t i = 0; i < mask.size(); ++i)
    mask[i] = i % 4 == 0 ? T(-0.0) : i % 7 == 1 ? std::numeric_limits<T>::quiet_NaN() : static_cast<T>(u(rng));
  // Products that round to -0 (row 0 of op(A) tiny and negative), a NaN and an infinity.
  for (int64_t p = 0; p < k; ++p) a[ta ? p * lda : p] = -std::numeric_limits<T>::min();
  if (m > 2) {
    a[ta ? 1 : lda] = std::numeric_limits<T>::quiet_NaN();
    a[ta ? 2 : 2 * lda] = -std::numeric_limits<T>::infinity();
  }
  const GemmEpilogue<T> epilogue{combination & 1 ? bias.data() : nullptr, (combination & 2) != 0,
                                 combination & 4 ? mask.data() : nullptr};
  const auto run = [&](bool small_k) {
    gemm_detail::set_small_k_path(small_k);
    std::vector<T> c = c0;
    if (combination != 0) {
      fused_gemm<T>(ta, tb, m, n, k, a.data(), lda, b.data(), ldb, c.data(), ldc, epilogue);
    } else if constexpr (std::is_same_v<T, float>) {
      sgemm(ta, tb, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, c.data(), ldc);
    } else {
      dgemm(ta, tb, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, c.data(), ldc);
    }
    return c;
  };
  const std::vector<T> tile = run(false), rows = run(true);
  int64_t wrong = 0;
  for (size_t i = 0; i < tile.size(); ++i) wrong += bits(tile[i]) != bits(rows[i]);
  INFO(what, " ta=", ta, " tb=", tb, " m=", m, " n=", n, " k=", k, " alpha=", double(alpha), " beta=", double(beta),
       " epilogue=", combination);
  CHECK(wrong == 0);
}

template <typename T>
void check_small_k_shapes(const std::string& what) {
  struct Size {
    int64_t m, n, k;
  };
  // One row, partial last vectors, the RL shapes ([256, 3] x [3, 64], [256, 1] x [1, 64]^T),
  // and one big enough to be split over threads (m n k >= 2^22).
  const Size sizes[] = {{1, 5, 1}, {3, 17, 2}, {13, 64, 3}, {256, 64, 3}, {256, 64, 1}, {37, 100, 4}, {1030, 1030, 4}};
  uint32_t seed = 7;
  for (const Size& s : sizes)
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        for (int combination = 0; combination < 8; ++combination)
          check_small_k<T>(what, ta, tb, s.m, s.n, s.k, T(1), T(0), combination, seed++);
        check_small_k<T>(what, ta, tb, s.m, s.n, s.k, T(0.5), T(1), 0, seed++);
        check_small_k<T>(what, ta, tb, s.m, s.n, s.k, T(-1.5), T(0.25), 0, seed++);
      }
}

}  // namespace

TEST_CASE("gemm: the small-k path (k <= 4) gives the register tile's bits, every micro-kernel and thread count") {
  GemmStateGuard guard;
  SmallKPathGuard small_k_guard;
  set_gemm_backend(GemmBackend::native);
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    for (GemmIsa isa : supported_isas()) {
      force_gemm_isa(isa);
      check_small_k_shapes<float>(std::string("sgemm ") + gemm_isa_name(isa) + " threads " + std::to_string(threads));
      check_small_k_shapes<double>(std::string("dgemm ") + gemm_isa_name(isa) + " threads " + std::to_string(threads));
    }
  }
}

TEST_CASE("gemm epilogue: the openblas backend applies it after cblas") {
  if (!openblas_available()) return;
  GemmStateGuard guard;
  set_gemm_backend(GemmBackend::openblas);
  check_shapes<float>("sgemm_fused openblas");
  check_shapes<double>("dgemm_fused openblas");
}

TEST_CASE("gemm epilogue: k = 0 gives the epilogue of zeros") {
  GemmStateGuard guard;
  set_gemm_backend(GemmBackend::native);
  const std::vector<float> bias{-1.0f, 2.0f, -0.0f};
  std::vector<float> c(6, 5.0f);
  sgemm_fused(false, false, 2, 3, 0, nullptr, 1, nullptr, 3, c.data(), 3, GemmEpilogue<float>{bias.data(), true});
  const std::vector<float> expected{0.0f, 2.0f, 0.0f, 0.0f, 2.0f, 0.0f};
  for (size_t i = 0; i < c.size(); ++i) CHECK(bits(c[i]) == bits(expected[i]));
}

TEST_CASE("gemm epilogue: sgemm_fused and dgemm_fused reject bad arguments as sgemm does") {
  float af[4] = {}, bf[4] = {}, cf[4] = {}, biasf[2] = {};
  double ad[4] = {}, bd[4] = {}, cd[4] = {};
  const GemmEpilogue<float> with_bias{biasf, true, nullptr};
  CHECK_THROWS_WITH_AS(sgemm_fused(false, false, -1, 2, 2, af, 2, bf, 2, cf, 2, with_bias),
                       doctest::Contains("sgemm_fused: sizes must be >= 0"), ctrax::Error);
  CHECK_THROWS_WITH_AS(sgemm_fused(false, false, 2, 2, 2, af, 1, bf, 2, cf, 2, with_bias),
                       doctest::Contains("sgemm_fused: lda=1"), ctrax::Error);
  CHECK_THROWS_WITH_AS(sgemm_fused(true, false, 2, 2, 2, af, 2, bf, 1, cf, 2, with_bias),
                       doctest::Contains("sgemm_fused: ldb=1"), ctrax::Error);
  CHECK_THROWS_WITH_AS(dgemm_fused(false, false, 2, 2, 2, ad, 2, bd, 2, cd, 1, GemmEpilogue<double>{}),
                       doctest::Contains("dgemm_fused: ldc=1"), ctrax::Error);
  CHECK_THROWS_WITH_AS(dgemm_fused(false, false, 2, -3, 2, ad, 2, bd, 2, cd, 2, GemmEpilogue<double>{}),
                       doctest::Contains("dgemm_fused: sizes must be >= 0"), ctrax::Error);
  // Nothing was written.
  for (float v : cf) CHECK(v == 0.0f);
}
