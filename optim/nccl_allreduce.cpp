// NcclAllreduce: see nccl_allreduce.h.
#include "nccl_allreduce.h"

#include <unistd.h>

#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "../base/error.h"
#include "../base/hash.h"
#include "../kernels/cuda/nccl.h"
#include "../kernels/cuda/runtime.h"
#include "../tensor/ops.h"

namespace ctrax {

namespace {

// This host's name, hashed (FNV-1a) into two exact 32-bit halves.
std::array<double, 2> host_words() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  const uint64_t h = fnv1a64(name, std::strlen(name));
  return {static_cast<double>(h >> 32), static_cast<double>(h & 0xffffffffULL)};
}

}  // namespace

std::unique_ptr<NcclAllreduce> NcclAllreduce::create(dist::Communicator& comm, Device device) {
  // Every rank says where it trains: (host, device index, NCCL there?), -1 for the CPU.
  const std::array<double, 2> host = host_words();
  const bool usable_here = device.is_cuda() && kernels::cuda::available() && kernels::cuda::nccl_built_in();
  const double mine[4] = {host[0], host[1], device.is_cuda() ? static_cast<double>(device.index) : -1.0,
                          usable_here ? 1.0 : 0.0};
  const std::vector<double> all = comm.allgather(mine);
  bool usable = true;
  for (int r = 0; r < comm.size() && usable; ++r) {
    const double* a = &all[4 * static_cast<size_t>(r)];
    usable = a[3] == 1.0;
    for (int s = 0; s < r && usable; ++s) {
      const double* b = &all[4 * static_cast<size_t>(s)];
      usable = !(a[0] == b[0] && a[1] == b[1] && a[2] == b[2]);  // two ranks on one GPU
    }
  }
  if (!usable) return nullptr;
  // Rank 0's unique id to every rank, then the group.
  std::string id(kernels::cuda::kNcclIdBytes, '\0');
  if (comm.rank() == 0) kernels::cuda::nccl_unique_id(reinterpret_cast<unsigned char*>(id.data()));
  id = dist::allgather_bytes(comm, id).front();
  void* handle =
      kernels::cuda::nccl_init(reinterpret_cast<const unsigned char*>(id.data()), comm.size(), comm.rank(), device.index);
  return std::unique_ptr<NcclAllreduce>(new NcclAllreduce(handle, comm.size(), device));
}

NcclAllreduce::~NcclAllreduce() { kernels::cuda::nccl_destroy(comm_); }

Tensor NcclAllreduce::mean(const Tensor& flat) {
  CTRAX_REQUIRE(flat.dtype() == DType::float64 && flat.rank() == 1 && flat.is_contiguous() && flat.device() == device_,
                "NcclAllreduce::mean: expected a contiguous float64 vector on ", device_, ", got ", dtype_name(flat.dtype()),
                " ", flat.shape(), " on ", flat.device());
  const int64_t p = flat.shape()[0];
  const Tensor gathered = empty(Shape{p * n_}, DType::float64, device_);
  kernels::cuda::nccl_allgather(comm_, flat.device_data(), gathered.device_data(), p, device_.index);
  // Rank order, as dist::sum_in_rank_order adds on the host.
  Tensor sum = gathered.slice(0, 0, p);
  for (int r = 1; r < n_; ++r) sum = add(sum, gathered.slice(0, r * p, (r + 1) * p));
  return mul(sum, 1.0 / n_);
}

}  // namespace ctrax
