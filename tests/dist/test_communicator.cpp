// dist/communicator.h: the rank-ordered sum, the one-rank group, and the drift check. The MPI
// group is tested by tests/dist/mpi_allreduce.cpp under mpirun (registered when CTRAX_MPI).
#include <doctest/doctest.h>

#include <cmath>

#include <ctrax/ctrax.h>

using namespace ctrax;

namespace {

// N virtual ranks in one process: each "rank" gathers from the shared contributions.
class VirtualGroup final : public dist::Communicator {
 public:
  VirtualGroup(int rank, const std::vector<std::vector<double>>* contributions)
      : rank_(rank), contributions_(contributions) {}
  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(contributions_->size()); }
  std::vector<double> allgather(std::span<const double> local) override {
    CHECK(std::vector<double>(local.begin(), local.end()) == (*contributions_)[static_cast<size_t>(rank_)]);
    std::vector<double> out;
    for (const auto& c : *contributions_) out.insert(out.end(), c.begin(), c.end());
    return out;
  }
  void barrier() override {}

 private:
  int rank_;
  const std::vector<std::vector<double>>* contributions_;
};

}  // namespace

TEST_CASE("sum_in_rank_order adds the blocks in rank order, the same bits for every rank") {
  // 1e16 + 1 - 1e16 is 0 in this order and 1 in another: the order is part of the result.
  const std::vector<double> gathered{1e16, 2.0, 1.0, 3.0, -1e16, 4.0};
  const std::vector<double> sum = dist::sum_in_rank_order(gathered, 3);
  REQUIRE(sum.size() == 2);
  CHECK(sum[0] == (1e16 + 1.0) + -1e16);
  CHECK(sum[1] == 9.0);
  CHECK(dist::sum_in_rank_order(std::vector<double>{}, 4).empty());
  CHECK_THROWS_WITH_AS(dist::sum_in_rank_order(gathered, 4), doctest::Contains("do not split into 4 equal blocks"),
                       Error);
  CHECK_THROWS_WITH_AS(dist::sum_in_rank_order(gathered, 0), doctest::Contains("n_ranks must be >= 1"), Error);
}

TEST_CASE("allreduce_sum gives every virtual rank the same bits, the mean on request, floats summed in double") {
  const std::vector<std::vector<double>> contributions{{0.1, -2.5, 1e-300}, {0.2, 2.5, 3.0}, {0.3, 1e-17, -3.0}};
  std::vector<std::vector<double>> results;
  for (int r = 0; r < 3; ++r) {
    VirtualGroup group(r, &contributions);
    std::vector<double> mine = contributions[static_cast<size_t>(r)];
    dist::allreduce_sum(group, mine, /*divide_by_size=*/true);
    results.push_back(mine);
  }
  CHECK(results[0] == results[1]);
  CHECK(results[1] == results[2]);
  CHECK(results[0][0] == ((0.1 + 0.2) + 0.3) * (1.0 / 3));
  // float32: summed in double, rounded once.
  const std::vector<std::vector<double>> floats{{static_cast<double>(1.0f)}, {static_cast<double>(1e-8f)}};
  VirtualGroup first(0, &floats);
  std::vector<float> value{1.0f};
  dist::allreduce_sum(first, value);
  CHECK(value[0] == static_cast<float>(1.0 + static_cast<double>(1e-8f)));
  // One rank: nothing changes.
  dist::SingleProcess single;
  std::vector<double> alone{1.5, -2.0};
  dist::allreduce_sum(single, alone);
  CHECK(alone == std::vector<double>{1.5, -2.0});
}

TEST_CASE("check_same_on_every_rank names the ranks whose bytes differ from rank 0's") {
  dist::SingleProcess single;
  const std::vector<unsigned char> bytes{1, 2, 3};
  CHECK_NOTHROW(dist::check_same_on_every_rank(single, bytes, "weights"));
  // Rank 1's hash differs: the gathered (high, low) words of two ranks.
  class Drifted final : public dist::Communicator {
   public:
    int rank() const override { return 0; }
    int size() const override { return 2; }
    std::vector<double> allgather(std::span<const double> local) override {
      return {local[0], local[1], local[0], local[1] + 1.0};
    }
    void barrier() override {}
  } drifted;
  CHECK_THROWS_WITH_AS(dist::check_same_on_every_rank(drifted, bytes, "weights"),
                       doctest::Contains("weights differ between ranks: rank(s) 1 do not match rank 0"), Error);
}

TEST_CASE("allgather_bytes and gather_bytes_at_root carry bytes of any length in rank order") {
  auto bytes_of = [](int r) { return r == 1 ? std::string() : std::string(static_cast<size_t>(3 * r + 5), char('a' + r)); };
  std::vector<std::vector<std::string>> everywhere(3), at_root(3);
  std::vector<double> means(3);
  std::vector<int64_t> shares(3);
  dist::run_virtual_ranks(3, [&](std::shared_ptr<dist::Communicator> comm) {
    const int r = comm->rank();
    everywhere[r] = dist::allgather_bytes(*comm, bytes_of(r));
    at_root[r] = comm->gather_bytes_at_root(bytes_of(r));
    means[r] = dist::mean_over_ranks(*comm, r + 0.5);
    shares[r] = dist::rank_share(7, r, comm->size());
  });
  for (int r = 0; r < 3; ++r) {
    REQUIRE(everywhere[r].size() == 3);
    for (int s = 0; s < 3; ++s) CHECK(everywhere[r][s] == bytes_of(s));
    CHECK(means[r] == 1.5);
  }
  CHECK(at_root[0] == everywhere[0]);
  CHECK(at_root[1].empty());
  CHECK(at_root[2].empty());
  CHECK(shares == std::vector<int64_t>{3, 2, 2});
  CHECK_THROWS_WITH_AS(dist::rank_share(7, 3, 3), doctest::Contains("rank 3 is not in a group of 3"), Error);
  CHECK_THROWS_WITH_AS(dist::rank_share(-1, 0, 1), doctest::Contains("total must be >= 0"), Error);
}
