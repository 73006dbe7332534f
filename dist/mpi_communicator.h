// The MPI group (MPI_COMM_WORLD) as a dist::Communicator, for jobs started with mpirun.
//
// The calls into MPI live in the module libctrax_mpi.so (built with CTRAX_MPI; dist/mpi_module.h),
// which the first MpiCommunicator opens with dlopen: a program that never makes one never loads
// MPI. The module is looked for in $CTRAX_MPI_MODULE, beside libctrax (or the program, for a
// static libctrax) and its ../lib, by the dynamic loader, then in the install and build trees.
// Errors: MPI's calls return their codes (MPI_ERRORS_RETURN) and become ctrax::Error with MPI's
// message. allgather sends the doubles' bytes as they are, so the rank-ordered sums of
// dist/communicator.h are the same bits on every rank.
#pragma once

#include "communicator.h"

struct CtraxMpiModule;

namespace ctrax::dist {

class MpiCommunicator final : public Communicator {
 public:
  // Opens the module and initialises MPI unless the program already did (then the destructor
  // finalises it). ctrax::Error saying why when there is no module (a build without CTRAX_MPI)
  // or MPI fails.
  MpiCommunicator();
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::vector<double> allgather(std::span<const double> local) override;
  void barrier() override;
  std::vector<std::string> gather_bytes_at_root(std::string_view local) override;
  // Ends every rank of the job now (MPI_Abort), for a program's last error handler: the other
  // ranks, waiting in a collective, would otherwise wait for ever.
  [[noreturn]] void abort_job(int exit_code);

  // Whether this process was started by mpirun or mpiexec (from the environment of OpenMPI,
  // MPICH or PMIx; MPI is not loaded to tell).
  static bool launched_by_mpirun();

 private:
  const CtraxMpiModule* module_ = nullptr;
  int rank_ = 0, size_ = 1;
  bool finalize_ = false;
};

}  // namespace ctrax::dist
