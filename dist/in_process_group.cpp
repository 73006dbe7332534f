// dist::InProcessGroup: see in_process_group.h.
#include "in_process_group.h"

#include <exception>
#include <thread>

#include "../base/error.h"

namespace ctrax::dist {

class InProcessGroup::Member final : public Communicator {
 public:
  Member(InProcessGroup& group, int rank) : group_(group), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return group_.n_; }
  std::vector<double> allgather(std::span<const double> local) override {
    {
      std::lock_guard<std::mutex> lock(group_.mutex_);
      group_.slots_[static_cast<size_t>(rank_)].assign(local.begin(), local.end());
    }
    group_.arrive_and_wait();  // every slot written
    std::vector<double> out;
    bool equal = true;
    {
      std::lock_guard<std::mutex> lock(group_.mutex_);
      for (const std::vector<double>& slot : group_.slots_) {
        equal = equal && slot.size() == local.size();
        out.insert(out.end(), slot.begin(), slot.end());
      }
    }
    group_.arrive_and_wait();  // every slot read: the next allgather may overwrite them
    CTRAX_REQUIRE(equal, "InProcessGroup allgather: the ranks gave different numbers of values (rank ", rank_,
                  " gave ", local.size(), "; every rank must give the same number)");
    return out;
  }
  void barrier() override { group_.arrive_and_wait(); }

 private:
  InProcessGroup& group_;
  int rank_;
};

InProcessGroup::InProcessGroup(int n_ranks) : n_(n_ranks) {
  CTRAX_REQUIRE(n_ranks >= 1, "InProcessGroup: n_ranks must be >= 1, got ", n_ranks);
  slots_.resize(static_cast<size_t>(n_));
  for (int r = 0; r < n_; ++r) members_.push_back(std::make_unique<Member>(*this, r));
}

InProcessGroup::~InProcessGroup() = default;

Communicator& InProcessGroup::rank(int r) {
  CTRAX_REQUIRE(r >= 0 && r < n_, "InProcessGroup::rank: rank ", r, " is not in [0, ", n_, ")");
  return *members_[static_cast<size_t>(r)];
}

void InProcessGroup::fail(const std::string& why) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (failure_.empty()) failure_ = why.empty() ? std::string("a rank failed") : why;
  arrived_.notify_all();
}

void InProcessGroup::arrive_and_wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  CTRAX_REQUIRE(failure_.empty(), "InProcessGroup: ", failure_);
  const uint64_t generation = generation_;
  if (++waiting_ == n_) {
    waiting_ = 0;
    ++generation_;
    arrived_.notify_all();
    return;
  }
  arrived_.wait(lock, [&] { return generation_ != generation || !failure_.empty(); });
  CTRAX_REQUIRE(generation_ != generation, "InProcessGroup: ", failure_);
}

void run_virtual_ranks(int n_ranks, const std::function<void(std::shared_ptr<Communicator>)>& body) {
  InProcessGroup group(n_ranks);
  std::mutex mutex;
  std::exception_ptr first;  // the first rank to fail; the others then fail in its wake
  std::vector<std::thread> threads;
  for (int r = 0; r < n_ranks; ++r)
    threads.emplace_back([&, r] {
      try {
        body(group.shared_rank(r));
      } catch (const std::exception& e) {
        {
          std::lock_guard<std::mutex> lock(mutex);
          if (!first) first = std::current_exception();
        }
        group.fail("rank " + std::to_string(r) + " failed: " + e.what());
      }
    });
  for (std::thread& t : threads) t.join();
  if (first) std::rethrow_exception(first);
}

}  // namespace ctrax::dist
