// Run under mpirun (tests/CMakeLists.txt registers it when CTRAX_MPI): every rank contributes
// values drawn from its rank, allreduces them through MPI, and checks the result bit for bit
// against what one process computes for the same number of virtual ranks (sum_in_rank_order of
// every rank's contribution, made locally). Exit status 0 when every check passes on this rank.
#include <cstdio>
#include <exception>
#include <vector>

#include <ctrax/base/error.h>
#include <ctrax/dist/mpi_communicator.h>
#include <ctrax/tensor/random.h>
#include <ctrax/tensor/ops.h>

namespace {

// Rank r's contribution: n pseudo-random doubles of widely different magnitudes.
std::vector<double> contribution(int rank, int64_t n) {
  const ctrax::Tensor u = ctrax::normal(ctrax::Key(1000 + static_cast<uint64_t>(rank)), ctrax::Shape{n},
                                        ctrax::DType::float64);
  std::vector<double> v = u.to_vector<double>();
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] *= (i % 7 == 0) ? 1e12 : 1.0;
  return v;
}

}  // namespace

int main() {
  try {
    ctrax::dist::MpiCommunicator comm;
    const int64_t n = 1000;
    std::vector<double> mine = contribution(comm.rank(), n);
    std::vector<double> gathered;
    for (int r = 0; r < comm.size(); ++r) {
      const std::vector<double> c = contribution(r, n);
      gathered.insert(gathered.end(), c.begin(), c.end());
    }
    const std::vector<double> virtual_sum = ctrax::dist::sum_in_rank_order(gathered, comm.size());
    ctrax::dist::allreduce_sum(comm, mine);
    int mismatches = 0;
    for (size_t i = 0; i < mine.size(); ++i) mismatches += mine[i] != virtual_sum[i];
    // The result is the same bits on every rank too.
    ctrax::dist::check_same_on_every_rank(
        comm, {reinterpret_cast<const unsigned char*>(mine.data()), mine.size() * sizeof(double)}, "allreduce results");
    // Unequal lengths are refused on every rank, not a hang or a corrupted buffer.
    bool refused = false;
    try {
      std::vector<double> uneven(static_cast<size_t>(comm.rank() + 1), 1.0);
      comm.allgather(uneven);
    } catch (const ctrax::Error&) {
      refused = true;
    }
    comm.barrier();
    // Bytes of every rank's own length (rank r: r + 1 copies of 'a' + r, an empty one for rank 1)
    // arrive at rank 0 in rank order, allgathered and gathered alike; the others get nothing.
    auto bytes_of = [](int r) { return r == 1 ? std::string() : std::string(static_cast<size_t>(r + 1), char('a' + r)); };
    const std::vector<std::string> at_root = comm.gather_bytes_at_root(bytes_of(comm.rank()));
    const std::vector<std::string> everywhere = ctrax::dist::allgather_bytes(comm, bytes_of(comm.rank()));
    bool gathered_ok = comm.rank() == 0 ? at_root == everywhere : at_root.empty();
    for (int r = 0; r < comm.size(); ++r) gathered_ok = gathered_ok && everywhere[static_cast<size_t>(r)] == bytes_of(r);
    std::printf("rank %d of %d: %d mismatches against %d virtual ranks, uneven lengths %s, bytes %s\n", comm.rank(),
                comm.size(), mismatches, comm.size(), refused ? "refused" : "NOT refused",
                gathered_ok ? "gathered" : "NOT gathered");
    return mismatches == 0 && (refused || comm.size() == 1) && gathered_ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mpi_allreduce: %s\n", e.what());
    return 1;
  }
}
