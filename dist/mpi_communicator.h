// The MPI group (MPI_COMM_WORLD) as a dist::Communicator: built with CTRAX_MPI into the separate
// library ctrax::mpi, so only programs that link it load MPI.
//
// Errors: MPI's calls return their codes (MPI_ERRORS_RETURN) and become ctrax::Error with MPI's
// message. allgather sends the doubles' bytes as they are, so the rank-ordered sums of
// dist/communicator.h are the same bits on every rank.
#pragma once

#include "communicator.h"

namespace ctrax::dist {

class MpiCommunicator final : public Communicator {
 public:
  // Initialises MPI unless the program already did; then finalises it in the destructor.
  MpiCommunicator();
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::vector<double> allgather(std::span<const double> local) override;
  void barrier() override;

 private:
  int rank_ = 0, size_ = 1;
  bool finalize_ = false;
};

}  // namespace ctrax::dist
