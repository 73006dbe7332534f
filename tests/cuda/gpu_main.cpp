// The doctest runner for ctrax_gpu_tests (tests/cuda/test_*.cpp).
//
// Without a usable GPU every test is skipped, never passed: main prints why and exits with 77,
// which ctest (SKIP_RETURN_CODE) reports as "Not Run". Listing the tests (ctest's discovery at
// build time) works everywhere.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>

#include <ctrax/kernels/cuda/runtime.h>

int main(int argc, char** argv) {
  bool listing = false;
  for (int i = 1; i < argc; ++i)
    if (std::strstr(argv[i], "list-test") != nullptr || std::strstr(argv[i], "-ltc") != nullptr) listing = true;
  if (!listing && !ctrax::kernels::cuda::available()) {
    std::printf("SKIPPED: no CUDA device: %s\n", ctrax::kernels::cuda::unavailable_reason().c_str());
    return 77;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
