// NCCL for data-parallel training on GPUs: the gradients' allgather between ranks that each
// train on a GPU of their own (optim/nccl_allreduce.h builds the rank-ordered mean on it).
//
// What it is for: moving gradients GPU to GPU (NVLink, InfiniBand with GPUDirect) instead of
// through host memory. Plain C++ over raw device pointers, like the other kernels/cuda headers;
// no NCCL type appears here. In the CUDA module only when it was built with NCCL (CTRAX_NCCL);
// the core's forwarders throw otherwise, and nccl_built_in() says which. Every NCCL call is
// checked: a failure throws ctrax::Error naming the call and NCCL's message.
//
// What it is not for: the reduction itself. NCCL's allreduce leaves the order of the additions
// to its algorithm; ctrax gathers every rank's values and adds them in rank order (the same bits
// as dist/communicator.h on the host).
#pragma once

#include <cstddef>
#include <cstdint>

namespace ctrax::kernels::cuda {

// The size of an NCCL unique id (ncclUniqueId), shared from rank 0 to the others.
inline constexpr size_t kNcclIdBytes = 128;

// Whether the loaded CUDA module was built with NCCL (false without a module).
bool nccl_built_in();
// ncclGetUniqueId into id[kNcclIdBytes]: rank 0 makes it, every rank passes it to nccl_init.
void nccl_unique_id(unsigned char* id);
// ncclCommInitRank on `device` for rank `rank` of n_ranks; a collective of every rank. Returns the
// communicator (nccl_destroy frees it).
void* nccl_init(const unsigned char* id, int n_ranks, int rank, int device);
// ncclAllGather of `count` float64 values per rank from `send` into `recv` (count * n_ranks, in
// rank order), on `device`'s current stream; returns once they are there.
void nccl_allgather(void* comm, const void* send, void* recv, int64_t count, int device);
void nccl_destroy(void* comm);

}  // namespace ctrax::kernels::cuda
