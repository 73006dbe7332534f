// A shared library that looks like the CUDA module but was "built for another ctrax": its table
// has another ABI version. tests/kernels/test_cuda_module.cpp checks that the loader refuses it.
#include <cstddef>

namespace {
struct OtherTable {
  int abi_version = 999;
  size_t table_size = sizeof(OtherTable);
};
}  // namespace

extern "C" __attribute__((visibility("default"))) const void* ctrax_cuda_module_table() {
  static const OtherTable table;
  return &table;
}
