// The rank-ordered collective of dist/communicator.h.
#include "communicator.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <string>

#include "../base/error.h"
#include "../base/hash.h"

namespace ctrax::dist {

std::vector<double> sum_in_rank_order(std::span<const double> gathered, int n_ranks) {
  CTRAX_REQUIRE(n_ranks >= 1, "sum_in_rank_order: n_ranks must be >= 1, got ", n_ranks);
  CTRAX_REQUIRE(gathered.size() % static_cast<size_t>(n_ranks) == 0, "sum_in_rank_order: ", gathered.size(),
                " values do not split into ", n_ranks, " equal blocks");
  const size_t n = gathered.size() / static_cast<size_t>(n_ranks);
  std::vector<double> out(gathered.begin(), gathered.begin() + static_cast<std::ptrdiff_t>(n));
  for (int r = 1; r < n_ranks; ++r)
    for (size_t i = 0; i < n; ++i) out[i] += gathered[static_cast<size_t>(r) * n + i];
  return out;
}

void allreduce_sum(Communicator& comm, std::span<double> values, bool divide_by_size) {
  if (comm.size() == 1 && !divide_by_size) return;
  std::vector<double> sum = sum_in_rank_order(comm.allgather(values), comm.size());
  const double scale = divide_by_size ? 1.0 / comm.size() : 1.0;
  for (size_t i = 0; i < values.size(); ++i) values[i] = divide_by_size ? sum[i] * scale : sum[i];
}

void allreduce_sum(Communicator& comm, std::span<float> values, bool divide_by_size) {
  // float32 values are summed in double (exact for a few ranks), then rounded once.
  std::vector<double> wide(values.begin(), values.end());
  allreduce_sum(comm, std::span<double>(wide), divide_by_size);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(wide[i]);
}

void check_same_on_every_rank(Communicator& comm, std::span<const unsigned char> bytes, const char* what) {
  const uint64_t h = fnv1a64(bytes.data(), bytes.size());  // a drift check (base/hash.h)
  // Carried bit for bit in two doubles of 32 bits each (exact).
  const double local[2] = {static_cast<double>(h >> 32), static_cast<double>(h & 0xffffffffULL)};
  const std::vector<double> all = comm.allgather(local);
  std::string differing;
  for (int r = 1; r < comm.size(); ++r)
    if (all[2 * static_cast<size_t>(r)] != all[0] || all[2 * static_cast<size_t>(r) + 1] != all[1])
      differing += (differing.empty() ? "" : ", ") + std::to_string(r);
  CTRAX_REQUIRE(differing.empty(), "dist: ", what, " differ between ranks: rank(s) ", differing,
                " do not match rank 0 (the ranks have drifted apart; results would no longer be reproducible)");
}

std::vector<std::string> allgather_bytes(Communicator& comm, std::string_view local) {
  const double length = static_cast<double>(local.size());
  const std::vector<double> lengths = comm.allgather(std::span<const double>(&length, 1));
  const size_t longest = static_cast<size_t>(*std::max_element(lengths.begin(), lengths.end()));
  const size_t words = (longest + sizeof(double) - 1) / sizeof(double);
  std::vector<double> packed(words, 0.0);
  if (!local.empty()) std::memcpy(packed.data(), local.data(), local.size());
  const std::vector<double> all = comm.allgather(packed);
  std::vector<std::string> out(static_cast<size_t>(comm.size()));
  for (size_t r = 0; r < out.size(); ++r) {
    out[r].resize(static_cast<size_t>(lengths[r]));
    if (!out[r].empty()) std::memcpy(out[r].data(), all.data() + r * words, out[r].size());
  }
  return out;
}

std::vector<std::string> Communicator::gather_bytes_at_root(std::string_view local) {
  std::vector<std::string> all = allgather_bytes(*this, local);
  if (rank() != 0) all.clear();
  return all;
}

double mean_over_ranks(Communicator& comm, double value) {
  allreduce_sum(comm, std::span<double>(&value, 1), /*divide_by_size=*/true);
  return value;
}

int64_t rank_share(int64_t total, int rank, int size) {
  CTRAX_REQUIRE(size >= 1 && rank >= 0 && rank < size, "rank_share: rank ", rank, " is not in a group of ", size);
  CTRAX_REQUIRE(total >= 0, "rank_share: total must be >= 0, got ", total);
  return total / size + (rank < total % size ? 1 : 0);
}

}  // namespace ctrax::dist
