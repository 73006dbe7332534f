// dist::MpiCommunicator: see mpi_communicator.h.
#include "mpi_communicator.h"

#include <mpi.h>

#include <string>

#include "../base/error.h"

namespace ctrax::dist {

namespace {

void check(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  CTRAX_THROW("MPI: ", call, " failed: ", std::string(text, static_cast<size_t>(length)));
}

}  // namespace

MpiCommunicator::MpiCommunicator() {
  int initialized = 0;
  check(MPI_Initialized(&initialized), "MPI_Initialized");
  if (!initialized) {
    int provided = 0;
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    finalize_ = true;
  }
  check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  check(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
  check(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
}

MpiCommunicator::~MpiCommunicator() {
  if (finalize_) MPI_Finalize();
}

std::vector<double> MpiCommunicator::allgather(std::span<const double> local) {
  // The lengths first, so that a mismatch is reported on every rank instead of corrupting memory.
  const auto length = static_cast<long long>(local.size());
  std::vector<long long> lengths(static_cast<size_t>(size_));
  check(MPI_Allgather(&length, 1, MPI_LONG_LONG, lengths.data(), 1, MPI_LONG_LONG, MPI_COMM_WORLD), "MPI_Allgather");
  for (int r = 0; r < size_; ++r)
    CTRAX_REQUIRE(lengths[static_cast<size_t>(r)] == length, "MPI allgather: rank ", r, " gives ",
                  lengths[static_cast<size_t>(r)], " values, rank ", rank_, " ", length,
                  " (every rank must give the same number)");
  CTRAX_REQUIRE(length <= (1LL << 30), "MPI allgather: ", length, " values per rank exceed MPI's int counts");
  std::vector<double> out(local.size() * static_cast<size_t>(size_));
  check(MPI_Allgather(local.data(), static_cast<int>(length), MPI_DOUBLE, out.data(), static_cast<int>(length),
                      MPI_DOUBLE, MPI_COMM_WORLD),
        "MPI_Allgather");
  return out;
}

void MpiCommunicator::barrier() { check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }

}  // namespace ctrax::dist
