// The NCCL calls of kernels/cuda/nccl.h (CTRAX_USE_NCCL builds of the CUDA module only).
#include "nccl.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstring>

#include "../../base/error.h"
#include "runtime.h"

namespace ctrax::kernels::cuda {

namespace {

void check(ncclResult_t result, const char* call) {
  CTRAX_REQUIRE(result == ncclSuccess, "NCCL: ", call, " failed: ", ncclGetErrorString(result));
}

}  // namespace

void nccl_unique_id(unsigned char* id) {
  static_assert(sizeof(ncclUniqueId) == kNcclIdBytes, "kNcclIdBytes must be NCCL's id size");
  ncclUniqueId unique;
  check(ncclGetUniqueId(&unique), "ncclGetUniqueId");
  std::memcpy(id, &unique, kNcclIdBytes);
}

void* nccl_init(const unsigned char* id, int n_ranks, int rank, int device) {
  set_device(device);
  ncclUniqueId unique;
  std::memcpy(&unique, id, kNcclIdBytes);
  ncclComm_t comm = nullptr;
  check(ncclCommInitRank(&comm, n_ranks, unique, rank), "ncclCommInitRank");
  return comm;
}

void nccl_allgather(void* comm, const void* send, void* recv, int64_t count, int device) {
  set_device(device);
  auto stream = static_cast<cudaStream_t>(current_stream());
  check(ncclAllGather(send, recv, static_cast<size_t>(count), ncclFloat64, static_cast<ncclComm_t>(comm), stream),
        "ncclAllGather");
  synchronize();
}

void nccl_destroy(void* comm) {
  if (comm != nullptr) ncclCommDestroy(static_cast<ncclComm_t>(comm));
}

}  // namespace ctrax::kernels::cuda
