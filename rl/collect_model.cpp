// CollectModel and train_in_chunks: see collect_model.h.
#include "collect_model.h"

#include <algorithm>

#include "../autograd/tape.h"
#include "../kernels/check.h"

namespace ctrax {

CollectModel::CollectModel(const Trainer& trainer, std::string checkpoint_name, std::string who, Device device)
    : trainer_(trainer),
      checkpoint_name_(std::move(checkpoint_name)),
      who_(std::move(who)),
      device_(device),
      state_(trainer.state()) {}

namespace {

// [N, ...] -> [N, 1, ...]: one step of N sequences.
Tensor one_step(const Tensor& t, const std::string& who) {
  CTRAX_REQUIRE(t.rank() >= 1, who, ": inputs must be [N, ...], got ", to_string(t.shape()));
  std::vector<int64_t> dims{t.shape()[0], 1};
  for (int64_t i = 1; i < t.rank(); ++i) dims.push_back(t.shape()[i]);
  return t.contiguous().reshape(Shape(dims));
}

}  // namespace

Stack CollectModel::act(const Tensor& observations, bool evaluating, const Stack& more) {
  NoGradScope no_grad;
  // Converted on the host first: float32 is what crosses to the device (once).
  Stack inputs{one_step(observations.to(DType::float32).to(device_), who_)};
  for (const Tensor& t : more) inputs.push_back(one_step(t.to(device_), who_));
  const Mode mode = evaluating ? Mode::eval : Mode::collect;
  LayerResult r = trainer_.model().apply(inputs, trainer_.weights(), state_, Key(), mode);
  if (mode == Mode::collect) state_ = std::move(r.state);
  Stack out;
  for (const Tensor& t : r.outputs) out.push_back(t.select(1, 0).contiguous());
  return out;
}

Stack CollectModel::outputs(const Tensor& observations) const {
  NoGradScope no_grad;
  return trainer_.model()
      .apply({observations.to(DType::float32).to(device_)}, trainer_.weights(), state_, Key(), Mode::eval)
      .outputs;
}

std::string CollectModel::tensor_name(const std::string& path) const {
  return path.empty() ? checkpoint_name_ : checkpoint_name_ + "/" + path;
}

void CollectModel::export_state(std::map<std::string, Tensor>& tensors) const {
  const std::vector<Tensor> leaves = state_.leaves();
  const std::vector<std::string> paths = state_.paths();
  for (size_t i = 0; i < leaves.size(); ++i) tensors.emplace(tensor_name(paths[i]), leaves[i]);
}

Tree CollectModel::checked_import(const io::Checkpoint& checkpoint) const {
  const std::vector<Tensor> like = state_.leaves();
  const std::vector<std::string> paths = state_.paths();
  std::vector<Tensor> leaves;
  for (size_t i = 0; i < like.size(); ++i) {
    const Tensor& t = checkpoint.tensor(tensor_name(paths[i]));
    CTRAX_REQUIRE(t.shape() == like[i].shape() && t.dtype() == like[i].dtype(), who_, ": checkpoint ",
                  checkpoint.manifest_path.string(), ": collect state ", paths[i], " is ", dtype_name(t.dtype()),
                  to_string(t.shape()), ", the model has ", dtype_name(like[i].dtype()), to_string(like[i].shape()));
    leaves.push_back(t);
  }
  return state_.with_leaves(leaves);
}

Metrics train_in_chunks(Trainer& trainer, int64_t n_steps, int64_t n_evals, int64_t eval_steps,
                        const std::string& prefix, const std::function<void()>& after_chunk) {
  Metrics out;
  if (n_steps == 0) return out;
  const int64_t chunks = std::max<int64_t>(n_evals, 1);
  Metrics train, eval;
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t steps = n_steps / chunks + (c < n_steps % chunks);
    for (int64_t s = 0; s < steps; ++s) train = trainer.train_step(/*with_metrics=*/s + 1 == steps);
    if (n_evals > 0) eval = trainer.evaluate(eval_steps);
    if (after_chunk) after_chunk();
  }
  for (const auto& [name, value] : train) out[prefix + name] = value;
  for (const auto& [name, value] : eval) out[prefix + name] = value;
  return out;
}

}  // namespace ctrax
