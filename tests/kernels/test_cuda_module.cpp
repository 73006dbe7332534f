// kernels/cuda/loader.cpp: the core finds the CUDA module (libctrax_cuda.so) on first use and
// forwards every kernels::cuda call through its table. In a CPU-only build there is no module and
// every call says so; in a CUDA build the module loads (and, without a GPU, says why it cannot run).
// That a CPU program loads no CUDA library at all is checked from outside the process, where
// nothing else has asked for a GPU first (tests/tools/no_cuda_loaded.sh, tests/install).
#include <ctrax/kernels/cuda/module.h>
#include <ctrax/kernels/cuda/runtime.h>
#include <doctest/doctest.h>

#include <string>

#include "../test_util.h"

using namespace ctrax::kernels::cuda;

TEST_CASE("cuda module: every call without a usable GPU throws the reason, or runs") {
  const std::string reason = unavailable_reason();
  if (available()) {
    CHECK(reason.empty());
    CHECK(device_count() > 0);
    return;
  }
  CHECK_FALSE(reason.empty());
  CHECK(device_count() == 0);
  ctrax::test::check_error([] { set_device(0); }, {"CUDA"});
  ctrax::test::check_error([] { (void)allocate(64, 0); }, {"CUDA"});
  release_cached_memory();  // nothing cached: never throws
#ifdef CTRAX_USE_CUDA
  // A CUDA build: the module itself loaded, and the reason is the driver's or the device's.
  CHECK(module_loaded());
  CHECK(module_path().find("libctrax_cuda") != std::string::npos);
#else
  CHECK_FALSE(module_loaded());
  CHECK(module_path().empty());
  CHECK(reason.find("has no CUDA backend") != std::string::npos);
  ctrax::test::check_error([] { set_device(0); }, {"no CUDA backend", "has no CUDA backend"});
  ctrax::test::check_error([] { (void)sgemm_version_count(); }, {"no CUDA backend"});
#endif
}

TEST_CASE("cuda module: the loader refuses a missing file, a library that is not a module and another ABI") {
  std::string why;
  CHECK(detail::open_module("/nonexistent/libctrax_cuda.so.0", why) == nullptr);
  CHECK(why.find("No such file") != std::string::npos);
  why.clear();
  CHECK(detail::open_module("libm.so.6", why) == nullptr);
  CHECK(why.find("not a ctrax CUDA module") != std::string::npos);
  why.clear();
  CHECK(detail::open_module(CTRAX_FAKE_CUDA_MODULE, why) == nullptr);
  CHECK(why.find("another version of ctrax (module ABI 999, expected " + std::to_string(kModuleAbiVersion)) !=
        std::string::npos);
}

#ifdef CTRAX_CUDA_MODULE_FILE
TEST_CASE("cuda module: the built module hands over a complete table") {
  std::string why;
  const ModuleTable* table = detail::open_module(CTRAX_CUDA_MODULE_FILE, why);
  REQUIRE_MESSAGE(table != nullptr, why);
  CHECK(table->abi_version == kModuleAbiVersion);
  CHECK(table->table_size == sizeof(ModuleTable));
  // (As bools: doctest cannot print a function pointer.)
  CHECK(static_cast<bool>(table->available));
  CHECK(static_cast<bool>(table->unavailable_reason));
  CHECK(static_cast<bool>(table->device_count));
  CHECK(static_cast<bool>(table->release_cached_memory));
#define CTRAX_CHECK_ROW(member, function, ret, params, args) CHECK_MESSAGE(static_cast<bool>(table->member), #member);
  CTRAX_CUDA_MODULE_FUNCTIONS(CTRAX_CHECK_ROW)
  if (table->cudnn_built_in) {
    CTRAX_CUDA_MODULE_CUDNN_FUNCTIONS(CTRAX_CHECK_ROW)
  }
#undef CTRAX_CHECK_ROW
  // The same answers through the table as through the forwarders.
  CHECK(table->available() == available());
  CHECK(table->sgemm_version_count() == sgemm_version_count());
}
#endif
