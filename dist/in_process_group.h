// N ranks as threads of one process: the "virtual ranks" that an N-rank MPI run must equal bit
// for bit (the reduction is the same rank-ordered one, see communicator.h).
//
// What it is for: reproducing a multi-process run on one machine, and testing it. Each thread
// takes group.rank(r) and calls the collectives as an MPI rank would. A rank's thread that
// throws must call fail(): every rank waiting in, or later entering, a collective then throws
// ctrax::Error instead of waiting for ever.
// What it is not for: speed (the ranks share this process's cores).
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "communicator.h"

namespace ctrax::dist {

class InProcessGroup {
 public:
  explicit InProcessGroup(int n_ranks);  // >= 1, else ctrax::Error
  ~InProcessGroup();
  InProcessGroup(const InProcessGroup&) = delete;
  InProcessGroup& operator=(const InProcessGroup&) = delete;

  int size() const { return n_; }
  // Rank r's communicator (0 <= r < size()); valid while the group lives.
  Communicator& rank(int r);
  // The same as a shared_ptr that owns nothing (for AgentOptions and TrainerOptions, which hold
  // one): valid while the group lives.
  std::shared_ptr<Communicator> shared_rank(int r) { return {std::shared_ptr<void>(), &rank(r)}; }
  // Marks the group failed: every collective, waiting or to come, throws `why`.
  void fail(const std::string& why);

 private:
  class Member;
  friend class Member;
  // Waits until all n ranks arrived (or the group failed: throws).
  void arrive_and_wait();

  int n_;
  std::mutex mutex_;
  std::condition_variable arrived_;
  int waiting_ = 0;
  uint64_t generation_ = 0;
  std::string failure_;
  std::vector<std::vector<double>> slots_;  // each rank's contribution to the current allgather
  std::vector<std::unique_ptr<Member>> members_;
};

// Runs body(rank r's communicator) for every rank of a new group of n_ranks, each on a thread of
// its own, and returns when all have ended. A rank that throws fails the group, so the others'
// collectives throw too; the first rank to fail has its exception rethrown here.
void run_virtual_ranks(int n_ranks, const std::function<void(std::shared_ptr<Communicator>)>& body);

}  // namespace ctrax::dist
