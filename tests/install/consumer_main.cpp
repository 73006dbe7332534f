// The program every install test builds against ctrax: installed (find_package, pkg-config) or
// as a subproject (add_subdirectory). It does one small GEMM on every backend the library was
// built with, and a small tensor matmul, and exits non-zero when a result is wrong or when any
// CUDA library is in the process: a CPU program pays nothing for a build that compiled CUDA.
#if __has_include(<ctrax/ctrax.h>)
#include <ctrax/ctrax.h>
#endif
#include <ctrax/kernels/cuda/runtime.h>
#include <ctrax/kernels/gemm.h>

#include <cstdio>
#include <exception>
#include <fstream>
#include <string>
#include <vector>

namespace {

// C = A * B for A = [[1, 2], [3, 4]], B = [[5, 6], [7, 8]], expected [[19, 22], [43, 50]].
bool check_sgemm(const char* backend) {
  const float a[4] = {1, 2, 3, 4};
  const float b[4] = {5, 6, 7, 8};
  const float expected[4] = {19, 22, 43, 50};
  float c[4] = {-1, -1, -1, -1};
  ctrax::kernels::sgemm(false, false, 2, 2, 2, 1.0f, a, 2, b, 2, 0.0f, c, 2);
  bool ok = true;
  for (int i = 0; i < 4; ++i) {
    if (c[i] != expected[i]) {
      std::fprintf(stderr, "consumer: %s sgemm: c[%d] = %g, expected %g\n", backend, i, c[i], expected[i]);
      ok = false;
    }
  }
  return ok;
}

// The CUDA libraries mapped into this process (/proc/self/maps), one line each.
std::string mapped_cuda_libraries() {
  std::ifstream maps("/proc/self/maps");
  std::string line, found;
  while (std::getline(maps, line)) {
    for (const char* name : {"libctrax_cuda", "libcudart", "libcublas", "libcudnn", "libcuda.so", "libnvrtc"}) {
      if (line.find(name) != std::string::npos && found.find(line) == std::string::npos) found += "  " + line + "\n";
    }
  }
  return found;
}

}  // namespace

int main() {
  try {
    using ctrax::kernels::GemmBackend;
    bool ok = true;
    // (Whether OpenBLAS is built in is not visible to a consumer: no public header depends on
    // the build's options. Both backends are checked when available.)
    ctrax::kernels::set_gemm_backend(GemmBackend::native);
    ok = check_sgemm("native") && ok;
    if (ctrax::kernels::openblas_available()) {
      ctrax::kernels::set_gemm_backend(GemmBackend::openblas);
      ok = check_sgemm("openblas") && ok;
    }
    std::printf("consumer: ctrax sgemm %s (openblas %s)\n", ok ? "OK" : "FAILED",
                ctrax::kernels::openblas_available() ? "on" : "off");
#if __has_include(<ctrax/ctrax.h>)
    const std::vector<float> y =
        ctrax::matmul(ctrax::ones(ctrax::Shape{2, 3}), ctrax::ones(ctrax::Shape{3, 2})).to_vector<float>();
    if (y.size() != 4 || y[3] != 3.0f) {
      std::fprintf(stderr, "consumer: matmul of ones is wrong\n");
      ok = false;
    }
#endif
    const std::string cuda = mapped_cuda_libraries();
    if (!cuda.empty() || ctrax::kernels::cuda::module_loaded()) {
      std::fprintf(stderr, "consumer: a CPU program has CUDA libraries loaded:\n%s", cuda.c_str());
      ok = false;
    } else {
      std::printf("consumer: no CUDA library loaded\n");
    }
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "consumer: exception: %s\n", e.what());
    return 1;
  }
}
