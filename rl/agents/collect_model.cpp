// CollectModel and train_in_chunks: see collect_model.h.
#include "collect_model.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>

#include "../../autograd/tape.h"
#include "../../base/error.h"
#include "../../tensor/trace.h"

namespace ctrax {

CollectModel::CollectModel(const Trainer& trainer, std::string checkpoint_name, std::string who, Device device)
    : trainer_(trainer),
      checkpoint_name_(std::move(checkpoint_name)),
      who_(std::move(who)),
      device_(device),
      state_(trainer.state()),
      compiled_([this](const std::vector<Tensor>& in, Key key) { return forward(in, key); }, [&] {
        CompileOptions o;
        o.name = who_ + "'s collection forward";
        o.enabled = trainer.options().compile;
        return o;
      }()) {}

namespace {

// [N, ...] -> [N, 1, ...]: one step of N sequences.
Tensor one_step(const Tensor& t, const std::string& who) {
  CTRAX_REQUIRE(t.rank() >= 1, who, ": inputs must be [N, ...], got ", to_string(t.shape()));
  std::vector<int64_t> dims{t.shape()[0], 1};
  for (int64_t i = 1; i < t.rank(); ++i) dims.push_back(t.shape()[i]);
  return t.contiguous().reshape(Shape(dims));
}

}  // namespace

std::vector<Tensor> CollectModel::forward(const std::vector<Tensor>& in, Key key) {
  NoGradScope no_grad;
  Stack inputs;
  for (size_t k = 0; k <= n_more_; ++k) inputs.push_back(one_step(in[k], who_));
  const Tree state = state_.with_leaves(std::span<const Tensor>(in).subspan(1 + n_more_));
  const Mode mode = evaluating_ ? Mode::eval : Mode::collect;
  if (state_only_) {
    new_state_structure_ = trainer_.model().updated_state(inputs, trainer_.weights(), state, Key(), Mode::collect);
    return new_state_structure_.leaves();
  }
  LayerResult r = trainer_.model().apply(inputs, trainer_.weights(), state, Key(), mode);
  std::vector<Tensor> out;
  for (const Tensor& t : r.outputs) out.push_back(t.select(1, 0).contiguous());
  n_outputs_ = out.size();
  if (sampler_ != nullptr) out.push_back(sampler_->sample(out[0], key, temperature_));
  if (mode == Mode::collect) {
    for (const Tensor& t : r.state.leaves()) out.push_back(t);
    new_state_structure_ = r.state;
  }
  return out;
}

const std::vector<Tensor>& CollectModel::run(const Tensor& observations, bool evaluating, const Stack& more, Key key) {
  // Converted on the host first: float32 is what crosses to the device (once). The vector is a
  // member so that a step allocates nothing; it is emptied after the call (it must not keep the
  // caller's tensors alive).
  std::vector<Tensor>& inputs = inputs_;
  inputs.clear();
  struct Release {
    std::vector<Tensor>& inputs;
    ~Release() { inputs.clear(); }
  } release{inputs};
  if (observations.dtype() == DType::float32 && observations.device() == device_) inputs.push_back(observations);
  else inputs.push_back(observations.to(DType::float32).to(device_));
  for (const Tensor& t : more) inputs.push_back(t.to(device_));
  if (!owned_leaves_.empty()) inputs.insert(inputs.end(), owned_leaves_.begin(), owned_leaves_.end());
  else
    for (const Tensor& t : state_.leaves()) inputs.push_back(t);
  evaluating_ = evaluating;
  n_more_ = more.size();
  if (!evaluating && steps_to_check_ > 0) --steps_to_check_;
  // A plan reads the trainer's weight storages and bakes in the mode and the sampler.
  const std::vector<Tensor>& out =
      compiled_(inputs, key,
                {trainer_.weights_generation(), evaluating ? 1u : 0u, reinterpret_cast<uintptr_t>(sampler_),
                 std::bit_cast<uint64_t>(temperature_), state_only_ ? 1u : 0u});
  const size_t n_results = state_only_ ? 0 : n_outputs_ + (sampler_ != nullptr ? 1 : 0);
  // A model without collected statistics returns no state leaves: its (empty) state stays as it is.
  // The new statistics are in the plan's output buffers, which the next call of any of this
  // function's plans may overwrite (an evaluation step's plan shares them): they are kept in
  // tensors of this object's own, in place after the first step.
  // Statistics that can no longer move (a Normalize past its sample_limit) come back as they went
  // in: nothing to keep.
  if (!evaluating && out.size() > n_results && state_may_move())
    keep_owned_leaves(state_, owned_leaves_, new_state_structure_, std::span<const Tensor>(out).subspan(n_results));
  return out;
}

bool CollectModel::state_may_move() const {
  // Asked on the first step after the state was replaced and then every kFrozenCheckInterval
  // steps (run() counts them down), not on every one (the walk over the model costs some 50 ns,
  // as much as a small kernel): a step on frozen statistics returns them unchanged, so noticing
  // a few steps late changes no result.
  if (state_frozen_) return false;
  if (steps_to_check_ > 0) return true;
  steps_to_check_ = kFrozenCheckInterval;
  state_frozen_ = !trainer_.model().may_change_state(state_, Mode::collect);
  return !state_frozen_;
}

Tensor CollectModel::returned_copy(size_t slot, const Tensor& source) {
  if (returned_.size() <= slot) returned_.resize(slot + 1);
  Tensor& kept = returned_[slot];
  // A use count of 1: no tensor but `kept` refers to the storage (a view would hold it too).
  const bool reusable = kept.defined() && kept.storage().use_count() == 1 && kept.shape() == source.shape() &&
                        kept.dtype() == source.dtype() && kept.device() == source.device();
  if (reusable && kept.device().is_cpu() && source.is_contiguous() && !detail::is_traced(kept)) {
    // The copy a collection step makes twice: the bytes, without copy_'s general checks (kept
    // is this object's own contiguous tensor of the same shape and dtype).
    std::memcpy(kept.raw_data(), source.raw_data(), static_cast<size_t>(kept.numel()) * kept.element_size());
  } else if (reusable) {
    kept.copy_(source);
  } else {
    kept = source.clone();
  }
  return kept;
}

Stack CollectModel::act(const Tensor& observations, bool evaluating, const Stack& more) {
  sampler_ = nullptr;
  const std::vector<Tensor>& out = run(observations, evaluating, more, Key());
  // Copies: the caller keeps them (a trajectory stores the distribution inputs) and the plan's
  // buffers change on the next call.
  Stack result;
  for (size_t i = 0; i < n_outputs_; ++i) result.push_back(returned_copy(i, out[i]));
  return result;
}

void CollectModel::update_state(const Tensor& observations, const Stack& more) {
  if (!state_may_move()) return;  // nothing to update
  sampler_ = nullptr;
  state_only_ = true;
  try {
    run(observations, /*evaluating=*/false, more, Key());
  } catch (...) {
    state_only_ = false;
    throw;
  }
  state_only_ = false;
}

std::pair<Tensor, Tensor> CollectModel::act_and_sample(const Tensor& observations, bool evaluating,
                                                       const Distribution& distribution, Key key, double temperature) {
  if (!device_.is_cpu()) {  // the model on the device, the draws on the CPU (no plan on a GPU anyway)
    const Tensor inputs = act(observations, evaluating)[0].to(Device::cpu());
    return {distribution.sample(inputs, key, temperature), inputs};
  }
  sampler_ = &distribution;
  temperature_ = temperature;
  const std::vector<Tensor>& out = run(observations, evaluating, {}, key);
  sampler_ = nullptr;
  return {returned_copy(0, out[n_outputs_]), returned_copy(1, out[0])};
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
