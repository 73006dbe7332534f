// The data-parallel gradient mean on GPUs through NCCL (kernels/cuda/nccl.h), for the Trainer.
//
// What it is for: ranks that each train on a GPU of their own exchange their gradients GPU to
// GPU. Every rank's float64 gradients are gathered on every GPU (ncclAllGather) and added there
// in rank order, then scaled by 1 / N: IEEE float64 additions and one multiplication, so the
// result is the same bits as the host path (dist::allreduce_sum) and as N virtual ranks.
// What it is not for: ranks that share a GPU (NCCL refuses them) or train on the CPU: create()
// then returns null and the Trainer exchanges through host memory.
#pragma once

#include <memory>

#include "../dist/communicator.h"
#include "../tensor/device.h"
#include "../tensor/tensor.h"

namespace ctrax {

class NcclAllreduce {
 public:
  // A collective of every rank of `comm` (each passing the device it trains on): an NCCL group
  // when the CUDA module has NCCL and every rank is on a GPU no other rank uses (host name and
  // device index compared), else null on every rank.
  static std::unique_ptr<NcclAllreduce> create(dist::Communicator& comm, Device device);
  ~NcclAllreduce();
  NcclAllreduce(const NcclAllreduce&) = delete;
  NcclAllreduce& operator=(const NcclAllreduce&) = delete;

  // flat: float64 [P], contiguous, on this rank's GPU. Returns the mean over the ranks, [P] on
  // the same GPU, the same bits on every rank.
  Tensor mean(const Tensor& flat);

 private:
  NcclAllreduce(void* comm, int n_ranks, Device device) : comm_(comm), n_(n_ranks), device_(device) {}
  void* comm_;
  int n_;
  Device device_;
};

}  // namespace ctrax
