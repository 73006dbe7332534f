// Data-parallel training in one process (dist/in_process_group.h, TrainerOptions::communicator):
// the ranks' weights stay identical bit for bit, the run is a pure function of the data (not of
// thread timing), one rank equals a plain run, and a failing rank ends the others' waits.
#include <doctest/doctest.h>

#include <thread>

#include <ctrax/ctrax.h>
#include <ctrax/dist/in_process_group.h>

#include "data_parallel_case.h"

using namespace ctrax;

namespace {

// N virtual ranks as threads; each returns its weights' bytes.
std::vector<std::vector<unsigned char>> run_virtual_ranks(int n, int steps, bool compile = true) {
  dist::InProcessGroup group(n);
  std::vector<std::vector<unsigned char>> out(static_cast<size_t>(n));
  std::vector<std::string> errors(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        out[static_cast<size_t>(r)] =
            test_dist::weight_bytes(test_dist::train_rank(test_dist::borrowed(group.rank(r)), r, steps, compile));
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();
        group.fail(e.what());
      }
    });
  for (std::thread& t : threads) t.join();
  for (const std::string& e : errors) CHECK(e.empty());
  return out;
}

}  // namespace

TEST_CASE("Virtual ranks train identical weights, reproducibly, and one rank is a plain run") {
  const auto two = run_virtual_ranks(2, 6);
  CHECK(two[0] == two[1]);
  CHECK(run_virtual_ranks(2, 6) == two);                     // not a function of thread timing
  CHECK(run_virtual_ranks(2, 6, /*compile=*/false) == two);  // eager steps give the same bits
  const auto three = run_virtual_ranks(3, 6);
  CHECK(three[0] == three[2]);
  CHECK(three[0] != two[0]);  // a third rank's data changes the averaged gradients
  // Averaging over ranks is not training on rank 0's data alone.
  CHECK(test_dist::weight_bytes(test_dist::train_rank(nullptr, 0, 6)) != two[0]);
  // One rank: the same bits as a Trainer without a communicator.
  CHECK(run_virtual_ranks(1, 6)[0] == test_dist::weight_bytes(test_dist::train_rank(nullptr, 0, 6)));
}

TEST_CASE("A rank that fails ends the other ranks' collectives with its message, not a hang") {
  dist::InProcessGroup group(2);
  std::string waiting_error;
  std::thread waiter([&] {
    try {
      std::vector<double> v{1.0};
      dist::allreduce_sum(group.rank(1), v);
    } catch (const Error& e) {
      waiting_error = e.what();
    }
  });
  group.fail("rank 0: the environment threw");
  waiter.join();
  CHECK(waiting_error.find("rank 0: the environment threw") != std::string::npos);
  std::vector<double> v{1.0};
  CHECK_THROWS_WITH_AS(dist::allreduce_sum(group.rank(0), v), doctest::Contains("the environment threw"), Error);
  CHECK_THROWS_WITH_AS(dist::InProcessGroup(0), doctest::Contains("n_ranks must be >= 1"), Error);
  CHECK_THROWS_WITH_AS(group.rank(2), doctest::Contains("rank 2 is not in [0, 2)"), Error);
}

TEST_CASE("Unequal allgather lengths are refused on every virtual rank") {
  dist::InProcessGroup group(2);
  std::vector<std::string> errors(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      try {
        std::vector<double> v(static_cast<size_t>(r + 1), 1.0);
        group.rank(r).allgather(v);
      } catch (const Error& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  for (std::thread& t : threads) t.join();
  CHECK(errors[0].find("different numbers of values") != std::string::npos);
  CHECK(errors[1].find("different numbers of values") != std::string::npos);
}

TEST_CASE("Virtual ranks hold the same weights after every step, and a drift is caught") {
  dist::run_virtual_ranks(2, [](std::shared_ptr<dist::Communicator> comm) {
    TrainerOptions o;
    o.model = Serial({Dense(8), Tanh(), Dense(1)});
    o.loss = L2Loss();
    o.optimizer = std::make_shared<Adam>(AdamOptions{.learning_rate = 1e-2});
    o.train_stream = test_dist::rank_batches(comm->rank());
    o.seed = 5;
    o.communicator = comm;
    Trainer trainer(std::move(o));
    for (int step = 0; step < 6; ++step) {
      trainer.train_step(false);
      check_replicated(*comm, trainer.weights(), "the weights after step " + std::to_string(step));
    }
    // Rank 1's weights nudged: the next check names it.
    if (comm->rank() == 1) trainer.set_weights(trainer.weights().map([](const Tensor& w) { return w + 1e-6; }));
    CHECK_THROWS_WITH_AS(check_replicated(*comm, trainer.weights(), "the nudged weights"),
                         doctest::Contains("the nudged weights differ between ranks: rank(s) 1 do not match rank 0"),
                         Error);
  });
}

TEST_CASE("NcclAllreduce: ranks that train on the CPU get no NCCL group, all of them alike") {
  std::vector<int> made(2, -1);
  dist::run_virtual_ranks(2, [&](std::shared_ptr<dist::Communicator> comm) {
    made[static_cast<size_t>(comm->rank())] = NcclAllreduce::create(*comm, Device::cpu()) != nullptr;
  });
  CHECK(made == std::vector<int>{0, 0});
}
