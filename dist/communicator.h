// Ranks of a data-parallel job and the one collective they need, with a fixed reduction order.
//
// Data-parallel training (issue 24, docs/scaling.md when it lands) sums every rank's gradients.
// MPI_Allreduce leaves the order of the additions to the implementation, so its result may
// change with the network or the rank count's layout; here every rank receives every rank's
// values (allgather) and adds them in rank order 0, 1, ..., N-1 itself. The result is the same
// bits on every rank and equals what one process computes for N virtual ranks with
// sum_in_rank_order, which is how a single-machine test checks an N-rank run.
// Communicator is the interface; SingleProcess is the one-rank group; dist/mpi_communicator.h
// (built with CTRAX_MPI, linked only by programs that ask for it) is the MPI one.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ctrax::dist {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Every rank's `local` (the same length on every rank, else ctrax::Error on every rank),
  // concatenated in rank order, on every rank.
  virtual std::vector<double> allgather(std::span<const double> local) = 0;
  // Returns once every rank has called it.
  virtual void barrier() = 0;
  // Every rank's `local` bytes (lengths may differ) at rank 0, in rank order; the other ranks get
  // an empty vector. The default is allgather_bytes (everything sent everywhere); MPI sends each
  // rank's bytes to rank 0 only (what checkpoints of the whole job need).
  virtual std::vector<std::string> gather_bytes_at_root(std::string_view local);
};

// The group of one rank (a plain single-process run).
std::vector<std::string> allgather_bytes(Communicator& comm, std::string_view local);

class SingleProcess final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::vector<double> allgather(std::span<const double> local) override { return {local.begin(), local.end()}; }
  void barrier() override {}
};

// gathered = N rank-ordered blocks of equal length: their elementwise sum, added in rank order.
// Throws ctrax::Error when gathered.size() is not a multiple of n_ranks >= 1.
std::vector<double> sum_in_rank_order(std::span<const double> gathered, int n_ranks);

// In place: `values` becomes the sum over the ranks of every rank's `values` (sum_in_rank_order
// of the allgather), the same bits on every rank. divide_by_size: the mean instead.
void allreduce_sum(Communicator& comm, std::span<double> values, bool divide_by_size = false);
void allreduce_sum(Communicator& comm, std::span<float> values, bool divide_by_size = false);

// A 64-bit hash of `bytes` equal on every rank, checked: throws ctrax::Error naming the ranks
// whose hash differs from rank 0's (e.g. weights that drifted apart).
void check_same_on_every_rank(Communicator& comm, std::span<const unsigned char> bytes, const char* what);

// Every rank's `local` bytes (lengths may differ), in rank order, on every rank: the lengths are
// gathered first, then the bytes packed eight to a double (copied, never computed with).
// (Declared above, before Communicator's default gather_bytes_at_root uses it.)

// The mean over the ranks of one number, the same bits on every rank.
double mean_over_ranks(Communicator& comm, double value);

// Rank `rank`'s share of `total` >= 0 items split over `size` ranks: total / size, one more for
// the first total % size ranks (so the shares add up to total). ctrax::Error for a bad rank.
int64_t rank_share(int64_t total, int rank, int size);

}  // namespace ctrax::dist
