// Run under mpirun (tests/CMakeLists.txt): every MPI rank trains the data-parallel case of
// data_parallel_case.h through MPI, then the same number of virtual ranks (threads of this
// process) train it again; this rank's MPI weights must equal its virtual rank's bit for bit,
// and be the same on every MPI rank. Exit status 0 when they are.
#include <cstdio>
#include <exception>
#include <thread>

#include <ctrax/dist/in_process_group.h>
#include <ctrax/dist/mpi_communicator.h>

#include "data_parallel_case.h"

int main() {
  try {
    auto comm = std::make_shared<ctrax::dist::MpiCommunicator>();
    const int rank = comm->rank(), n = comm->size(), steps = 6;
    const std::vector<unsigned char> mpi = test_dist::weight_bytes(test_dist::train_rank(comm, rank, steps));
    ctrax::dist::check_same_on_every_rank(*comm, mpi, "the weights after training");

    ctrax::dist::InProcessGroup group(n);
    std::vector<std::vector<unsigned char>> virtual_weights(static_cast<size_t>(n));
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r)
      threads.emplace_back([&, r] {
        try {
          virtual_weights[static_cast<size_t>(r)] =
              test_dist::weight_bytes(test_dist::train_rank(test_dist::borrowed(group.rank(r)), r, steps));
        } catch (const std::exception& e) {
          group.fail(e.what());
        }
      });
    for (std::thread& t : threads) t.join();
    const bool equal = virtual_weights[static_cast<size_t>(rank)] == mpi;
    std::printf("rank %d of %d: MPI weights %s the virtual run's (%zu bytes)\n", rank, n,
                equal ? "equal" : "DIFFER FROM", mpi.size());
    comm->barrier();
    return equal ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mpi_trainer: %s\n", e.what());
    return 1;
  }
}
