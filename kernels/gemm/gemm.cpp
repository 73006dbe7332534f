// The public GEMM entry points: argument checks, backend and micro-kernel selection.
#include "../../base/error.h"
#include "../cpu_features.h"
#include "../gemm.h"

#include "driver.h"
#include "microkernel.h"
#include "openblas_backend.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <type_traits>

namespace ctrax::kernels {

namespace {

using gemm_detail::KernelSpec;

constexpr int kUnset = -1;
std::atomic<int> g_backend{kUnset};     // a GemmBackend once chosen
std::atomic<int> g_forced_isa{kUnset};  // a GemmIsa, or kUnset for automatic

GemmBackend backend_from_environment() {
  const char* env = std::getenv("CTRAX_GEMM_BACKEND");
  if (env == nullptr || *env == '\0') return GemmBackend::native;
  const GemmBackend backend = parse_gemm_backend(env);
  CTRAX_REQUIRE(backend != GemmBackend::openblas || openblas_available(),
                "CTRAX_GEMM_BACKEND=openblas, but the openblas backend is not available: ",
                openblas_backend::unavailable_reason());
  return backend;
}

GemmIsa best_isa() {
  const CpuFeatures& f = cpu_features();
  if (f.can_run_avx512()) return GemmIsa::avx512;
  if (f.can_run_avx2_fma()) return GemmIsa::avx2;
  return GemmIsa::portable;
}

template <typename T>
KernelSpec<T> make_spec(GemmIsa isa);

template <>
KernelSpec<float> make_spec<float>(GemmIsa isa) {
  switch (isa) {
    case GemmIsa::avx512: return gemm_detail::avx512_sgemm_kernel();
    case GemmIsa::avx2: return gemm_detail::avx2_sgemm_kernel();
    case GemmIsa::portable: break;
  }
  return gemm_detail::portable_sgemm_kernel();
}

template <>
KernelSpec<double> make_spec<double>(GemmIsa isa) {
  switch (isa) {
    case GemmIsa::avx512: return gemm_detail::avx512_dgemm_kernel();
    case GemmIsa::avx2: return gemm_detail::avx2_dgemm_kernel();
    case GemmIsa::portable: break;
  }
  return gemm_detail::portable_dgemm_kernel();
}

template <typename T>
KernelSpec<T> checked_spec(GemmIsa isa) {
  const KernelSpec<T> s = make_spec<T>(isa);
  // The driver relies on cache blocks being whole tiles (see driver.h on determinism).
  CTRAX_CHECK(s.isa == isa && s.mr > 0 && s.nr > 0 && s.mc % s.mr == 0 && s.nc % s.nr == 0 && s.kc > 0 &&
                  s.kernel != nullptr && s.narrow != nullptr && s.small_k != nullptr,
              "inconsistent GEMM kernel spec for ", gemm_isa_name(isa));
  return s;
}

// Each spec is built on first use only, so a kernel this build or CPU lacks is never touched.
template <typename T>
const KernelSpec<T>& active_spec() {
  switch (active_gemm_isa()) {
    case GemmIsa::avx512: {
      static const KernelSpec<T> spec = checked_spec<T>(GemmIsa::avx512);
      return spec;
    }
    case GemmIsa::avx2: {
      static const KernelSpec<T> spec = checked_spec<T>(GemmIsa::avx2);
      return spec;
    }
    case GemmIsa::portable: break;
  }
  static const KernelSpec<T> spec = checked_spec<T>(GemmIsa::portable);
  return spec;
}

}  // namespace

namespace {
std::atomic<uint64_t> g_flops{0};  // relaxed: a statistic, read after the work it counts
void count_flops(int64_t m, int64_t n, int64_t k) {
  g_flops.fetch_add(2 * static_cast<uint64_t>(m) * static_cast<uint64_t>(n) * static_cast<uint64_t>(k),
                    std::memory_order_relaxed);
}
}  // namespace

uint64_t gemm_flop_count() { return g_flops.load(std::memory_order_relaxed); }

void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  check_gemm_arguments("sgemm", trans_a, trans_b, m, n, k, lda, ldb, ldc);
  count_flops(m, n, k);
  if (gemm_backend() == GemmBackend::openblas) {
    openblas_backend::sgemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  gemm_detail::native_gemm(active_spec<float>(), trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c,
                           ldc);
}

void dgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
           int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  check_gemm_arguments("dgemm", trans_a, trans_b, m, n, k, lda, ldb, ldc);
  count_flops(m, n, k);
  if (gemm_backend() == GemmBackend::openblas) {
    openblas_backend::dgemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  gemm_detail::native_gemm(active_spec<double>(), trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c,
                           ldc);
}

namespace gemm_detail {
// The epilogue as separate passes over C, for the backends and paths without it in the tile:
// the same operations, element by element, as the fused tile epilogue.
template <typename T>
void apply_epilogue_rows(int64_t m, int64_t n, T* c, int64_t ldc, const GemmEpilogue<T>& epilogue) {
  if (ldc == n) {
    // C (and the mask, which has C's layout) is one block of m * n: flat passes the compiler
    // vectorises, where a [256, 1] head's rows would be 256 loops of one element. Each element
    // still gets the bias, then the relu, then the mask.
    const int64_t total = m * n;
    if (epilogue.bias != nullptr) {
      if (n == 1) {
        const T b = epilogue.bias[0];
        for (int64_t i = 0; i < total; ++i) c[i] = c[i] + b;
      } else {
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) c[i * n + j] = c[i * n + j] + epilogue.bias[j];
      }
    }
    if (epilogue.relu)
      for (int64_t i = 0; i < total; ++i) c[i] = c[i] <= T(0) ? T(0) : c[i];
    if (epilogue.mask != nullptr)
      for (int64_t i = 0; i < total; ++i) c[i] = epilogue.mask[i] > T(0) ? c[i] : T(0);
    return;
  }
  for (int64_t i = 0; i < m; ++i) {
    T* row = c + i * ldc;
    if (epilogue.bias != nullptr)
      for (int64_t j = 0; j < n; ++j) row[j] = row[j] + epilogue.bias[j];
    if (epilogue.relu)
      for (int64_t j = 0; j < n; ++j) row[j] = row[j] <= T(0) ? T(0) : row[j];
    if (epilogue.mask != nullptr) {
      const T* mask = epilogue.mask + i * ldc;
      for (int64_t j = 0; j < n; ++j) row[j] = mask[j] > T(0) ? row[j] : T(0);
    }
  }
}
template void apply_epilogue_rows<float>(int64_t, int64_t, float*, int64_t, const GemmEpilogue<float>&);
template void apply_epilogue_rows<double>(int64_t, int64_t, double*, int64_t, const GemmEpilogue<double>&);
}  // namespace gemm_detail

namespace {
template <typename T>
void gemm_fused(const char* name, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const T* a,
                int64_t lda, const T* b, int64_t ldb, T* c, int64_t ldc, const GemmEpilogue<T>& epilogue) {
  check_gemm_arguments(name, trans_a, trans_b, m, n, k, lda, ldb, ldc);
  count_flops(m, n, k);
  if (gemm_backend() == GemmBackend::openblas) {
    if constexpr (std::is_same_v<T, float>)
      openblas_backend::sgemm(trans_a, trans_b, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
    else
      openblas_backend::dgemm(trans_a, trans_b, m, n, k, 1.0, a, lda, b, ldb, 0.0, c, ldc);
    gemm_detail::apply_epilogue_rows(m, n, c, ldc, epilogue);
    return;
  }
  gemm_detail::native_gemm(active_spec<T>(), trans_a, trans_b, m, n, k, T(1), a, lda, b, ldb, T(0), c, ldc,
                           epilogue);
}
}  // namespace

void sgemm_fused(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                 const float* b, int64_t ldb, float* c, int64_t ldc, const GemmEpilogue<float>& epilogue) {
  gemm_fused("sgemm_fused", trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc, epilogue);
}

void dgemm_fused(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda,
                 const double* b, int64_t ldb, double* c, int64_t ldc, const GemmEpilogue<double>& epilogue) {
  gemm_fused("dgemm_fused", trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc, epilogue);
}

void set_gemm_backend(GemmBackend backend) {
  CTRAX_REQUIRE(backend != GemmBackend::openblas || openblas_available(),
                "set_gemm_backend: the openblas backend is not available: ", openblas_backend::unavailable_reason());
  g_backend.store(static_cast<int>(backend), std::memory_order_release);
}

GemmBackend gemm_backend() {
  int backend = g_backend.load(std::memory_order_acquire);
  if (backend == kUnset) {
    int expected = kUnset;
    g_backend.compare_exchange_strong(expected, static_cast<int>(backend_from_environment()));
    backend = g_backend.load(std::memory_order_acquire);
  }
  return static_cast<GemmBackend>(backend);
}

bool openblas_available() { return openblas_backend::available(); }
std::string openblas_corename() { return openblas_backend::corename(); }
std::string openblas_config() { return openblas_backend::config(); }

const char* gemm_backend_name(GemmBackend backend) {
  switch (backend) {
    case GemmBackend::native: return "native";
    case GemmBackend::openblas: return "openblas";
  }
  return "unknown";
}

GemmBackend parse_gemm_backend(const std::string& name) {
  if (name == "native") return GemmBackend::native;
  if (name == "openblas") return GemmBackend::openblas;
  CTRAX_THROW("unknown GEMM backend \"", name, "\" (CTRAX_GEMM_BACKEND / parse_gemm_backend): allowed values are "
              "\"native\" and \"openblas\"");
}

bool gemm_isa_supported(GemmIsa isa) {
  switch (isa) {
    case GemmIsa::portable: return true;
    case GemmIsa::avx2: return cpu_features().can_run_avx2_fma();
    case GemmIsa::avx512: return cpu_features().can_run_avx512();
  }
  return false;
}

void force_gemm_isa(std::optional<GemmIsa> isa) {
  if (!isa) {
    g_forced_isa.store(kUnset, std::memory_order_release);
    return;
  }
  CTRAX_REQUIRE(gemm_isa_supported(*isa), "force_gemm_isa: this CPU cannot run the ", gemm_isa_name(*isa),
                " micro-kernel (it has: ", cpu_features_string(), ")");
  g_forced_isa.store(static_cast<int>(*isa), std::memory_order_release);
}

GemmIsa active_gemm_isa() {
  const int forced = g_forced_isa.load(std::memory_order_acquire);
  if (forced != kUnset) return static_cast<GemmIsa>(forced);
  static const GemmIsa best = best_isa();
  return best;
}

const char* gemm_isa_name(GemmIsa isa) {
  switch (isa) {
    case GemmIsa::portable: return "portable";
    case GemmIsa::avx2: return "avx2";
    case GemmIsa::avx512: return "avx512";
  }
  return "unknown";
}

}  // namespace ctrax::kernels
