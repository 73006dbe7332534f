// Shared by the GEMM tests: a guard restoring the GEMM backend, forced ISA and thread count a
// test changes, and the micro-kernel ISAs this CPU runs.
#pragma once

#include <ctrax/kernels/gemm.h>
#include <ctrax/kernels/parallel.h>

#include <optional>
#include <vector>

namespace ctrax::kernels::test {

struct GemmStateGuard {
  GemmBackend backend = gemm_backend();
  int threads = num_threads();
  ~GemmStateGuard() {
    set_gemm_backend(backend);
    force_gemm_isa(std::nullopt);
    set_num_threads(threads);
  }
};

inline std::vector<GemmIsa> supported_isas() {
  std::vector<GemmIsa> isas;
  for (GemmIsa isa : {GemmIsa::portable, GemmIsa::avx2, GemmIsa::avx512})
    if (gemm_isa_supported(isa)) isas.push_back(isa);
  return isas;
}

}  // namespace ctrax::kernels::test
