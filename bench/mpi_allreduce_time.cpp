// The data-parallel allreduce's time on this machine (docs/scaling.md uses the figures): run it
// under `mpirun -np N`. For each size, every rank times dist::allreduce_sum of that many floats
// (what the Trainer sends per step: every gradient, widened to float64, gathered, added in rank
// order) over many repetitions; rank 0 prints the medians as a markdown table (the times are
// the slowest rank's per repetition). Not a test: nothing is asserted.
// Usage: mpirun -np N bench/mpi_allreduce_time [repetitions]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <ctrax/dist/communicator.h>
#include <ctrax/dist/mpi_communicator.h>

int main(int argc, char** argv) {
  using Clock = std::chrono::steady_clock;
  ctrax::dist::MpiCommunicator comm;
  const int repetitions = argc > 1 ? std::atoi(argv[1]) : 300;
  // Parameter counts: the 64-64 tanh Pendulum policy with a learned std (4546) and value network
  // (4481), CartPole's 64-64 joint network (4675), then larger networks.
  const std::vector<size_t> sizes{1000, 4481, 4546, 4675, 20000, 100000, 1000000};
  if (comm.rank() == 0)
    std::printf("| floats | bytes sent per rank | median us | p90 us |\n|---:|---:|---:|---:|\n");
  for (size_t n : sizes) {
    std::vector<float> values(n, 1.0f);
    const int reps = n >= 1000000 ? std::max(10, repetitions / 30) : repetitions;
    std::vector<double> times;
    for (int i = 0; i < reps + 10; ++i) {
      comm.barrier();
      const auto start = Clock::now();
      ctrax::dist::allreduce_sum(comm, std::span<float>(values), /*divide_by_size=*/true);
      double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
      // The slowest rank's time is the step's.
      const std::vector<double> all = comm.allgather(std::span<const double>(&us, 1));
      us = *std::max_element(all.begin(), all.end());
      if (i >= 10) times.push_back(us);  // the first ten warm the transport up
    }
    std::sort(times.begin(), times.end());
    if (comm.rank() == 0)
      std::printf("| %zu | %zu | %.1f | %.1f |\n", n, n * sizeof(double), times[times.size() / 2],
                  times[times.size() * 9 / 10]);
  }
  return 0;
}
