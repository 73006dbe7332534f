// One data-parallel training run, shared by the in-process test (test_data_parallel.cpp) and
// the MPI program (mpi_trainer.cpp): a small regression model trained by every rank on its own
// batches, the gradients averaged through `comm`.
#pragma once

#include <cstring>
#include <memory>

#include <ctrax/ctrax.h>

namespace test_dist {

// Rank r's batch `index`: y = x W* + b* + noise, drawn from (r, index) only.
inline ctrax::BatchStream rank_batches(int rank) {
  using namespace ctrax;
  return [rank](int64_t index) {
    const Key key = fold_in(fold_in(Key(42), static_cast<uint64_t>(rank)), static_cast<uint64_t>(index));
    auto [xk, nk] = split(key);
    const Tensor w_true = from_vector(std::vector<float>{2.0f, -1.0f, 0.5f}, {3, 1});
    const Tensor x = normal(xk, {16, 3});
    const Tensor y = matmul(x, w_true) + 0.25 + normal(nk, {16, 1}, DType::float32, 0.0, 0.1);
    return Batch{x, y};
  };
}

// `steps` training steps of rank `rank` (comm: null for a plain run); returns the weights.
inline ctrax::Tree train_rank(std::shared_ptr<ctrax::dist::Communicator> comm, int rank, int steps,
                              bool compile = true) {
  using namespace ctrax;
  TrainerOptions o;
  o.model = Serial({Dense(8), Tanh(), Dense(1)});
  o.loss = L2Loss();
  o.optimizer = std::make_shared<Adam>(AdamOptions{.learning_rate = 1e-2});
  o.train_stream = rank_batches(rank);
  o.seed = 5;  // the same initial weights on every rank
  o.compile = compile;
  o.communicator = std::move(comm);
  Trainer trainer(std::move(o));
  for (int s = 0; s < steps; ++s) trainer.train_step(false);
  return trainer.weights();
}

// The weights' bytes, leaf after leaf.
inline std::vector<unsigned char> weight_bytes(const ctrax::Tree& weights) {
  std::vector<unsigned char> out;
  for (const ctrax::Tensor& leaf : weights.leaves()) {
    const ctrax::Tensor t = leaf.contiguous();
    const auto* p = static_cast<const unsigned char*>(t.raw_data());
    out.insert(out.end(), p, p + static_cast<size_t>(t.numel()) * ctrax::dtype_size(t.dtype()));
  }
  return out;
}

// A non-owning pointer to a communicator that outlives its use (an InProcessGroup's member).
inline std::shared_ptr<ctrax::dist::Communicator> borrowed(ctrax::dist::Communicator& comm) {
  return std::shared_ptr<ctrax::dist::Communicator>(std::shared_ptr<void>(), &comm);
}

}  // namespace test_dist
