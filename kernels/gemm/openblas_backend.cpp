// The OpenBLAS GEMM backend (see openblas_backend.h). OpenBLAS is opened with dlopen the first
// time the backend is asked for, not linked: a program that keeps the native GEMM never maps
// OpenBLAS, nor starts its thread pool.
#include "openblas_backend.h"

#include "../../base/error.h"
#include "../parallel.h"

#ifdef CTRAX_USE_OPENBLAS
#include <cblas.h>
#include <dlfcn.h>

#include <atomic>
#include <climits>
#endif

namespace ctrax::kernels::openblas_backend {

#ifdef CTRAX_USE_OPENBLAS

namespace {

// The five entry points ctrax uses, typed by OpenBLAS's own declarations (cblas.h).
struct Library {
  decltype(&cblas_sgemm) sgemm = nullptr;
  decltype(&cblas_dgemm) dgemm = nullptr;
  decltype(&openblas_set_num_threads) set_num_threads = nullptr;
  decltype(&openblas_get_corename) get_corename = nullptr;
  decltype(&openblas_get_config) get_config = nullptr;
  std::string reason;  // why it did not load
};

template <typename F>
bool find(void* handle, const char* name, F& f, std::string& missing) {
  f = reinterpret_cast<F>(dlsym(handle, name));
  if (f == nullptr) missing += std::string(missing.empty() ? "" : ", ") + name;
  return f != nullptr;
}

// The runtime package's soname first (libopenblas0 on Debian, chosen by update-alternatives),
// then the file CMake found when ctrax was configured.
Library load() {
  Library lib;
  std::string tried;
  for (const char* path : {"libopenblas.so.0", CTRAX_OPENBLAS_FILE}) {
    void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* error = dlerror();
      tried += ::ctrax::detail::cat("; ", error ? error : path);
      continue;
    }
    std::string missing;
    find(handle, "cblas_sgemm", lib.sgemm, missing);
    find(handle, "cblas_dgemm", lib.dgemm, missing);
    find(handle, "openblas_set_num_threads", lib.set_num_threads, missing);
    find(handle, "openblas_get_corename", lib.get_corename, missing);
    find(handle, "openblas_get_config", lib.get_config, missing);
    if (missing.empty()) return lib;
    tried += ::ctrax::detail::cat("; ", path, " lacks ", missing);
    lib = Library{};
    dlclose(handle);
  }
  lib.reason = "OpenBLAS could not be loaded (apt-get install libopenblas0)" + tried;
  return lib;
}

const Library& library() {
  static const Library lib = load();  // once per process, thread-safe
  return lib;
}

const Library& loaded() {
  const Library& lib = library();
  CTRAX_REQUIRE(lib.sgemm != nullptr, "gemm (openblas backend): ", lib.reason);
  return lib;
}

// cblas takes int sizes; larger ones would silently wrap.
void require_int(int64_t value, const char* what) {
  CTRAX_REQUIRE(value >= 0 && value <= INT_MAX, "gemm (openblas backend): ", what, " = ", value,
                " does not fit OpenBLAS's 32-bit int");
}

void check_sizes(int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldc) {
  require_int(m, "m");
  require_int(n, "n");
  require_int(k, "k");
  require_int(lda, "lda");
  require_int(ldb, "ldb");
  require_int(ldc, "ldc");
}

// Keeps OpenBLAS's thread count equal to ctrax's; only calls into OpenBLAS when it changes.
void sync_threads(const Library& lib) {
  static std::atomic<int> applied{0};
  const int wanted = num_threads();
  if (applied.load(std::memory_order_relaxed) != wanted) {
    lib.set_num_threads(wanted);
    applied.store(wanted, std::memory_order_relaxed);
  }
}

CBLAS_TRANSPOSE trans(bool t) { return t ? CblasTrans : CblasNoTrans; }

}  // namespace

bool available() { return library().sgemm != nullptr; }
std::string unavailable_reason() { return library().reason; }
std::string corename() { return available() ? library().get_corename() : "none"; }
std::string config() { return available() ? library().get_config() : "none"; }

void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  const Library& lib = loaded();
  check_sizes(m, n, k, lda, ldb, ldc);
  sync_threads(lib);
  lib.sgemm(CblasRowMajor, trans(trans_a), trans(trans_b), int(m), int(n), int(k), alpha, a, int(lda), b,
            int(ldb), beta, c, int(ldc));
}

void dgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
           int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  const Library& lib = loaded();
  check_sizes(m, n, k, lda, ldb, ldc);
  sync_threads(lib);
  lib.dgemm(CblasRowMajor, trans(trans_a), trans(trans_b), int(m), int(n), int(k), alpha, a, int(lda), b,
            int(ldb), beta, c, int(ldc));
}

#else  // !CTRAX_USE_OPENBLAS

bool available() { return false; }
std::string unavailable_reason() { return "ctrax was built without OpenBLAS (CTRAX_OPENBLAS=OFF)"; }
std::string corename() { return "none"; }
std::string config() { return "none"; }

void sgemm(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t, float,
           float*, int64_t) {
  CTRAX_THROW("gemm: the openblas backend is not available (", unavailable_reason(), ")");
}

void dgemm(bool, bool, int64_t, int64_t, int64_t, double, const double*, int64_t, const double*, int64_t,
           double, double*, int64_t) {
  CTRAX_THROW("gemm: the openblas backend is not available (", unavailable_reason(), ")");
}

#endif

}  // namespace ctrax::kernels::openblas_backend
