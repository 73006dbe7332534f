// The module's side of kernels/cuda/module.h: the one exported symbol of libctrax_cuda.so,
// a table pointing at this library's own definitions of the kernels::cuda functions.
#include "module.h"

namespace ctrax::kernels::cuda {
namespace {

ModuleTable make_table() {
  ModuleTable t;
  t.abi_version = kModuleAbiVersion;
  t.table_size = sizeof(ModuleTable);
  t.available = &available;
  t.unavailable_reason = &unavailable_reason;
  t.device_count = &device_count;
  t.release_cached_memory = &release_cached_memory;
#define CTRAX_CUDA_MODULE_SET(member, function, ret, params, args) t.member = static_cast<ret(*) params>(&function);
  CTRAX_CUDA_MODULE_FUNCTIONS(CTRAX_CUDA_MODULE_SET)
#ifdef CTRAX_USE_CUDNN
  t.cudnn_built_in = true;
  CTRAX_CUDA_MODULE_CUDNN_FUNCTIONS(CTRAX_CUDA_MODULE_SET)
#endif
#ifdef CTRAX_USE_NCCL
  t.nccl_built_in = true;
  CTRAX_CUDA_MODULE_NCCL_FUNCTIONS(CTRAX_CUDA_MODULE_SET)
#endif
#undef CTRAX_CUDA_MODULE_SET
  return t;
}

}  // namespace
}  // namespace ctrax::kernels::cuda

extern "C" __attribute__((visibility("default"))) const ctrax::kernels::cuda::ModuleTable* ctrax_cuda_module_table() {
  static const ctrax::kernels::cuda::ModuleTable table = ctrax::kernels::cuda::make_table();
  return &table;
}
