// kernels/cuda/gemm.h: every SGEMM version against the CPU kernels::sgemm and against cuBLAS
// (version 0), at awkward sizes, all four transpose combinations, padded and misaligned
// operands, alpha and beta away from 0 and 1, and beta == 0 over a C full of NaN; dgemm
// against kernels::dgemm; and the argument checks.
//
// Tolerance. An element of C is a sum of k products, so its rounding error scales with the
// magnitudes summed, not with the (possibly cancelled) result:
//   |got - want| <= rtol * (|alpha| * sum_p |op(A)_ip op(B)_pj| + |beta C_ij|) + 1e-30.
// FP32 versions: rtol = 1e-4 (a wrong index or a dropped edge gives errors of order 1).
// TF32 (version 7): inputs keep 10 mantissa bits, a relative error up to 2^-11 per input and
// so about 2^-10 per product; rtol = 1e-2 covers that with room, and is far below the error of
// a missing or misplaced term.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <ctrax/base/error.h>
#include <ctrax/kernels/cuda/gemm.h>
#include <ctrax/kernels/cuda/runtime.h>
#include <ctrax/kernels/gemm.h>

namespace {

namespace kc = ctrax::kernels::cuda;

// Device memory from ctrax's allocator, filled and read back on current_stream(), so the
// copies are ordered with the kernels (cudaMemcpy on the legacy stream would not be: ctrax's
// stream does not synchronise with it).
template <typename T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t count) : count_(count < 1 ? 1 : count), device_(kc::current_device()) {
    data_ = static_cast<T*>(kc::allocate(count_ * sizeof(T), device_));
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { kc::deallocate(data_, count_ * sizeof(T), device_); }
  void upload(const std::vector<T>& host) {
    REQUIRE(host.size() <= count_);
    kc::copy_host_to_device(data_, host.data(), host.size() * sizeof(T), device_);
  }
  std::vector<T> download(size_t count) const {
    std::vector<T> host(count);
    kc::copy_device_to_host(host.data(), data_, count * sizeof(T), device_);
    return host;
  }
  T* get() { return data_; }

 private:
  size_t count_;
  int device_;
  T* data_ = nullptr;
};

template <typename T>
std::vector<T> random_values(size_t count, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<T> v(count);
  for (T& x : v) x = static_cast<T>(dist(gen));
  return v;
}

// How the operands are laid out in memory.
enum class Layout {
  tight,       // ld = number of stored columns, base aligned: the float4 paths where ld % 4 == 0
  padded,      // ld rounded up to a multiple of 4, plus 4: float4 paths with gaps between rows
  misaligned,  // ld + 3 and the base one element into the buffer: only the scalar paths
};
const char* layout_name(Layout layout) {
  switch (layout) {
    case Layout::tight: return "tight";
    case Layout::padded: return "padded";
    case Layout::misaligned: return "misaligned";
  }
  return "?";
}
int64_t leading_dim(int64_t cols, Layout layout) {
  const int64_t tight = cols < 1 ? 1 : cols;
  switch (layout) {
    case Layout::tight: return tight;
    case Layout::padded: return (tight + 3) / 4 * 4 + 4;
    case Layout::misaligned: return tight + 3;
  }
  return tight;
}

// One problem: host operands in their stored layout, with the matrices starting at `offset`.
template <typename T>
struct Problem {
  bool trans_a, trans_b;
  int64_t m, n, k;
  T alpha, beta;
  int64_t lda, ldb, ldc, offset;
  std::vector<T> a, b, c;  // c: C before the call

  Problem(bool ta, bool tb, int64_t m_, int64_t n_, int64_t k_, T alpha_, T beta_, Layout layout, bool nan_c,
          uint64_t seed)
      : trans_a(ta), trans_b(tb), m(m_), n(n_), k(k_), alpha(alpha_), beta(beta_) {
    const int64_t a_rows = ta ? k : m, a_cols = ta ? m : k;
    const int64_t b_rows = tb ? n : k, b_cols = tb ? k : n;
    lda = leading_dim(a_cols, layout);
    ldb = leading_dim(b_cols, layout);
    ldc = leading_dim(n, layout);
    offset = layout == Layout::misaligned ? 1 : 0;
    a = random_values<T>(static_cast<size_t>(offset + a_rows * lda), seed);
    b = random_values<T>(static_cast<size_t>(offset + b_rows * ldb), seed + 1);
    c = random_values<T>(static_cast<size_t>(offset + m * ldc), seed + 2);
    if (nan_c) std::fill(c.begin(), c.end(), std::numeric_limits<T>::quiet_NaN());
    compute_scales();
  }

  // Again after a test overwrites the operands.
  void compute_scales() {
    scales.assign(static_cast<size_t>(m * n), 0.0);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0.0;
        for (int64_t p = 0; p < k; ++p) s += std::abs(static_cast<double>(a_at(i, p)) * b_at(p, j));
        s *= std::abs(static_cast<double>(alpha));
        if (beta != T(0)) s += std::abs(static_cast<double>(beta) * c[offset + i * ldc + j]);
        scales[static_cast<size_t>(i * n + j)] = s;
      }
  }

  T a_at(int64_t i, int64_t p) const { return a[offset + (trans_a ? p * lda + i : i * lda + p)]; }
  T b_at(int64_t p, int64_t j) const { return b[offset + (trans_b ? j * ldb + p : p * ldb + j)]; }

  // The error scale of each element of C (see the top of the file), row-major m x n.
  std::vector<double> scales;
  double scale(int64_t i, int64_t j) const { return scales[static_cast<size_t>(i * n + j)]; }

  std::string describe() const {
    return "m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k) +
           " trans_a=" + std::to_string(trans_a) + " trans_b=" + std::to_string(trans_b) +
           " lda=" + std::to_string(lda) + " ldb=" + std::to_string(ldb) + " ldc=" + std::to_string(ldc) +
           " offset=" + std::to_string(offset) + " alpha=" + std::to_string(alpha) + " beta=" + std::to_string(beta);
  }
};

template <typename T>
std::vector<T> cpu_result(const Problem<T>& p) {
  std::vector<T> c = p.c;
  if constexpr (std::is_same_v<T, float>)
    ctrax::kernels::sgemm(p.trans_a, p.trans_b, p.m, p.n, p.k, p.alpha, p.a.data() + p.offset, p.lda,
                          p.b.data() + p.offset, p.ldb, p.beta, c.data() + p.offset, p.ldc);
  else
    ctrax::kernels::dgemm(p.trans_a, p.trans_b, p.m, p.n, p.k, p.alpha, p.a.data() + p.offset, p.lda,
                          p.b.data() + p.offset, p.ldb, p.beta, c.data() + p.offset, p.ldc);
  return c;
}

// Runs version `version` (-1: dgemm) on the device and returns all of C's buffer.
template <typename T>
std::vector<T> gpu_result(const Problem<T>& p, int version) {
  DeviceBuffer<T> a(p.a.size()), b(p.b.size()), c(p.c.size());
  a.upload(p.a);
  b.upload(p.b);
  c.upload(p.c);
  if constexpr (std::is_same_v<T, float>)
    kc::sgemm(version, p.trans_a, p.trans_b, p.m, p.n, p.k, p.alpha, a.get() + p.offset, p.lda, b.get() + p.offset,
              p.ldb, p.beta, c.get() + p.offset, p.ldc);
  else
    kc::dgemm(p.trans_a, p.trans_b, p.m, p.n, p.k, p.alpha, a.get() + p.offset, p.lda, b.get() + p.offset, p.ldb,
              p.beta, c.get() + p.offset, p.ldc);
  kc::synchronize();  // a kernel's asynchronous error surfaces here, as ctrax::Error
  return c.download(p.c.size());
}

// Compares two results of `p`: the m x n block within tolerance (NaN never passes), and every
// padding element outside it untouched (equal to the input bits, NaN included).
template <typename T>
void check_close(const Problem<T>& p, const std::vector<T>& got, const std::vector<T>& want, double rtol,
                 const std::string& what) {
  REQUIRE(got.size() == want.size());
  int64_t bad = 0;
  double worst = 0.0;
  std::string worst_at;
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t j = 0; j < p.n; ++j) {
      const size_t idx = static_cast<size_t>(p.offset + i * p.ldc + j);
      const double err = std::abs(static_cast<double>(got[idx]) - static_cast<double>(want[idx]));
      const double tol = rtol * p.scale(i, j) + 1e-30;
      if (!(err <= tol)) {
        ++bad;
        if (!(err <= worst)) {  // also records a NaN
          worst = err;
          worst_at = "C(" + std::to_string(i) + "," + std::to_string(j) + ") got " + std::to_string(got[idx]) +
                     " want " + std::to_string(want[idx]) + " tol " + std::to_string(tol);
        }
      }
    }
  int64_t clobbered = 0;
  for (size_t idx = 0; idx < got.size(); ++idx) {
    const int64_t rel = static_cast<int64_t>(idx) - p.offset;
    const bool inside = rel >= 0 && rel / p.ldc < p.m && rel % p.ldc < p.n;
    if (!inside && !(got[idx] == p.c[idx] || (std::isnan(got[idx]) && std::isnan(p.c[idx])))) ++clobbered;
  }
  INFO(what, ": ", p.describe());
  INFO("worst: ", worst_at);
  CHECK(bad == 0);
  CHECK(clobbered == 0);
}

double rtol_for(int version) { return version == kc::kSgemmTf32 ? 1e-2 : 1e-4; }

struct Size {
  int64_t m, n, k;
};
const Size kSizes[] = {{1, 1, 1},       {7, 13, 5},      {33, 65, 17}, {127, 129, 131}, {256, 256, 256},
                       {1, 512, 3},     {0, 5, 3},       {5, 0, 3},    {4, 6, 0},       {130, 3, 257},
                       // Few tiles and a long k: version 8 splits k (11, 8 and 8 slices on a 132-SM
                       // GPU); whole tiles (tight layout) take its unchecked loop, split or not.
                       {40, 70, 3001},  {130, 70, 2051}, {128, 128, 2048}, {256, 384, 64}};

// Restores the selected version whatever a test does.
struct VersionGuard {
  int saved = kc::sgemm_version();
  ~VersionGuard() { kc::set_sgemm_version(saved); }
};

}  // namespace

TEST_CASE("cuda sgemm: every version matches the CPU sgemm and cuBLAS") {
  uint64_t seed = 1;
  for (const Size& size : kSizes)
    for (int t = 0; t < 4; ++t)
      for (Layout layout : {Layout::tight, Layout::padded, Layout::misaligned}) {
        const bool ta = (t & 1) != 0, tb = (t & 2) != 0;
        const Problem<float> p(ta, tb, size.m, size.n, size.k, 1.5f, -0.75f, layout, false, seed++);
        const std::vector<float> cpu = cpu_result(p);
        const std::vector<float> cublas = gpu_result(p, kc::kSgemmCublas);
        check_close(p, cublas, cpu, rtol_for(kc::kSgemmCublas), std::string("cublas vs cpu, ") + layout_name(layout));
        for (int v = 1; v < kc::sgemm_version_count(); ++v) {
          const std::vector<float> got = gpu_result(p, v);
          const std::string name = kc::sgemm_version_name(v);
          check_close(p, got, cpu, rtol_for(v), name + " vs cpu, " + layout_name(layout));
          check_close(p, got, cublas, rtol_for(v), name + " vs cublas, " + layout_name(layout));
        }
      }
}

TEST_CASE("cuda sgemm: beta 0 does not read C, even when it holds NaN") {
  uint64_t seed = 1000;
  for (const Size& size : kSizes)
    for (int t = 0; t < 4; ++t) {
      const Problem<float> p((t & 1) != 0, (t & 2) != 0, size.m, size.n, size.k, -0.5f, 0.0f, Layout::padded, true,
                             seed++);
      const std::vector<float> cpu = cpu_result(p);
      for (int v = 0; v < kc::sgemm_version_count(); ++v)
        check_close(p, gpu_result(p, v), cpu, rtol_for(v), kc::sgemm_version_name(v));
    }
}

TEST_CASE("cuda sgemm: alpha 0 scales C by beta without reading A or B") {
  for (const float beta : {0.0f, 2.0f}) {
    Problem<float> p(false, true, 37, 41, 19, 0.0f, beta, Layout::tight, false, 77);
    std::fill(p.a.begin(), p.a.end(), std::numeric_limits<float>::quiet_NaN());
    std::fill(p.b.begin(), p.b.end(), std::numeric_limits<float>::infinity());
    const std::vector<float> cpu = cpu_result(p);
    for (int v = 0; v < kc::sgemm_version_count(); ++v) {
      const std::vector<float> got = gpu_result(p, v);
      // Exact: beta * c is one rounding, the same on both sides; NaN anywhere fails.
      for (int64_t i = 0; i < p.m; ++i)
        for (int64_t j = 0; j < p.n; ++j) {
          const size_t idx = static_cast<size_t>(i * p.ldc + j);
          INFO(kc::sgemm_version_name(v), " beta=", beta, " C(", i, ",", j, ")");
          REQUIRE(got[idx] == cpu[idx]);
        }
    }
  }
}

TEST_CASE("cuda sgemm: large square product with every version, tight layout") {
  // Several full tiles in both directions plus a partial edge, on the float4 paths.
  const Problem<float> p(false, false, 515, 389, 300, 1.0f, 1.0f, Layout::tight, false, 4242);
  const std::vector<float> cpu = cpu_result(p);
  for (int v = 0; v < kc::sgemm_version_count(); ++v)
    check_close(p, gpu_result(p, v), cpu, rtol_for(v), kc::sgemm_version_name(v));
}

TEST_CASE("cuda sgemm: the selected version is used and can be changed") {
  VersionGuard guard;
  CHECK(kc::default_sgemm_version() == kc::kSgemmDoubleBuffered);
  CHECK(kc::sgemm_version_count() == 9);
  CHECK(std::string(kc::sgemm_version_name(0)) == "cublas");
  CHECK(std::string(kc::sgemm_version_name(7)) == "tf32_wmma");
  const Problem<float> p(true, false, 45, 67, 23, 0.5f, 0.25f, Layout::tight, false, 9);
  const std::vector<float> cpu = cpu_result(p);
  for (int v = 0; v < kc::sgemm_version_count(); ++v) {
    kc::set_sgemm_version(v);
    CHECK(kc::sgemm_version() == v);
    DeviceBuffer<float> a(p.a.size()), b(p.b.size()), c(p.c.size());
    a.upload(p.a);
    b.upload(p.b);
    c.upload(p.c);
    kc::sgemm(p.trans_a, p.trans_b, p.m, p.n, p.k, p.alpha, a.get(), p.lda, b.get(), p.ldb, p.beta, c.get(), p.ldc);
    kc::synchronize();
    check_close(p, c.download(p.c.size()), cpu, rtol_for(v), kc::sgemm_version_name(v));
  }
}

TEST_CASE("cuda dgemm: matches the CPU dgemm") {
  uint64_t seed = 500;
  for (const Size& size : kSizes)
    for (int t = 0; t < 4; ++t)
      for (const bool nan_c : {false, true}) {
        const Problem<double> p((t & 1) != 0, (t & 2) != 0, size.m, size.n, size.k, 1.25, nan_c ? 0.0 : 0.5,
                                nan_c ? Layout::padded : Layout::misaligned, nan_c, seed++);
        check_close(p, gpu_result(p, -1), cpu_result(p), 1e-12, "dgemm");
      }
}

TEST_CASE("cuda sgemm: bad arguments throw ctrax::Error") {
  VersionGuard guard;
  float* none = nullptr;
  // Checks run before anything touches the pointers, so null ones are fine here.
  for (int v = 0; v < kc::sgemm_version_count(); ++v) {
    CAPTURE(v);
    CHECK_THROWS_WITH_AS(kc::sgemm(v, false, false, -1, 2, 2, 1.0f, none, 2, none, 2, 0.0f, none, 2),
                         doctest::Contains("sizes must be >= 0"), ctrax::Error);
    CHECK_THROWS_WITH_AS(kc::sgemm(v, false, false, 2, 2, 3, 1.0f, none, 2, none, 2, 0.0f, none, 2),
                         doctest::Contains("lda=2 is less than the 3 columns of A"), ctrax::Error);
    CHECK_THROWS_WITH_AS(kc::sgemm(v, true, false, 4, 2, 3, 1.0f, none, 3, none, 2, 0.0f, none, 2),
                         doctest::Contains("lda=3 is less than the 4 columns of A"), ctrax::Error);
    CHECK_THROWS_WITH_AS(kc::sgemm(v, false, true, 2, 2, 3, 1.0f, none, 3, none, 2, 0.0f, none, 2),
                         doctest::Contains("ldb=2 is less than the 3 columns of B"), ctrax::Error);
    CHECK_THROWS_WITH_AS(kc::sgemm(v, false, false, 2, 5, 3, 1.0f, none, 3, none, 5, 0.0f, none, 4),
                         doctest::Contains("ldc=4 is less than n=5"), ctrax::Error);
    CHECK_THROWS_WITH_AS(kc::sgemm(v, false, false, 0, 0, 0, 1.0f, none, 0, none, 1, 0.0f, none, 1),
                         doctest::Contains("lda=0"), ctrax::Error);
  }
  for (const int v : {-1, kc::sgemm_version_count(), 1000}) {
    CAPTURE(v);
    CHECK_THROWS_WITH_AS(kc::sgemm(v, false, false, 1, 1, 1, 1.0f, none, 1, none, 1, 0.0f, none, 1),
                         doctest::Contains("unknown sgemm version"), ctrax::Error);
    CHECK_THROWS_WITH_AS(kc::set_sgemm_version(v), doctest::Contains("unknown sgemm version"), ctrax::Error);
    CHECK_THROWS_WITH_AS(kc::sgemm_version_name(v), doctest::Contains("unknown sgemm version"), ctrax::Error);
  }
  CHECK(kc::sgemm_version() == guard.saved);  // a refused set_sgemm_version changes nothing
  double* dnone = nullptr;
  CHECK_THROWS_WITH_AS(kc::dgemm(false, false, 2, -3, 2, 1.0, dnone, 2, dnone, 2, 0.0, dnone, 2),
                       doctest::Contains("sizes must be >= 0"), ctrax::Error);
  CHECK_THROWS_WITH_AS(kc::dgemm(false, false, 2, 2, 2, 1.0, dnone, 2, dnone, 1, 0.0, dnone, 2),
                       doctest::Contains("ldb=1"), ctrax::Error);
}

TEST_CASE("cuda sgemm: empty products leave C alone or scale it") {
  // m == 0 or n == 0: nothing to write. k == 0: C = beta * C, covered with NaN in the beta == 0
  // case by the tests above; here the exact values.
  Problem<float> p(false, false, 3, 4, 0, 2.0f, 3.0f, Layout::tight, false, 31);
  const std::vector<float> cpu = cpu_result(p);
  for (int v = 0; v < kc::sgemm_version_count(); ++v) {
    const std::vector<float> got = gpu_result(p, v);
    for (size_t i = 0; i < got.size(); ++i) {
      INFO(kc::sgemm_version_name(v), " element ", i);
      REQUIRE(got[i] == cpu[i]);
    }
  }
}
