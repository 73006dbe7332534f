// CollectModel: the network an RL agent acts with while it collects and evaluates, shared by
// PolicyAgent (rl/agents/policy_agent.h) and ActorCriticJointAgent (rl/agents/actor_critic_joint.h).
// It runs the Trainer's model with its current weights but keeps its own copy of the model's state
// (a Normalize layer's statistics): collecting (Mode::collect) updates it, evaluating (Mode::eval)
// leaves it alone, training starts from it (to_trainer) and hands it back (from_trainer). The copy
// is part of the agent's checkpoint, under "<name>/<path>" ("<name>" alone for a state that is one
// tensor). The model runs on `device`, where the trainer's weights are (AgentOptions::device):
// inputs move there (once each, none for those already there) and outputs stay there. Not for
// training, losses or the value network. Why: docs/algorithms.md, "Acting".
#pragma once

#include <map>
#include <string>

#include "../../io/checkpoint.h"
#include "../../layers/layer.h"
#include "../../optim/trainer.h"
#include "../learning/distributions.h"

namespace ctrax {

class CollectModel {
 public:
  // trainer must outlive this object; checkpoint_name e.g. "policy_collect_state"; who names
  // the agent in error messages.
  CollectModel(const Trainer& trainer, std::string checkpoint_name, std::string who, Device device = Device::cpu());
  CollectModel(const CollectModel&) = delete;
  CollectModel& operator=(const CollectModel&) = delete;

  // One step for N environments: observations [N, ...] (any real dtype; made float32) and the
  // further inputs `more` ([N, ...] each, e.g. a Q-network's actions; unconverted) run as
  // [N, 1, ...]; returns every output as [N, ...], contiguous, on the device. evaluating: Mode::eval
  // (statistics unchanged), else Mode::collect (once the statistics cannot move any more,
  // Layer::may_change_state, the step's unchanged statistics are not copied back). Runs compiled when the trainer's steps do
  // (tensor/compile.h): no tape and no allocation. The returned tensors are copies the caller
  // owns; once the caller has let go of them (and of every view of them), the next call copies
  // its results into the same storages instead of allocating new ones, so a collection loop
  // that keeps only the values allocates nothing per step.
  Stack act(const Tensor& observations, bool evaluating, const Stack& more = {});
  // act() for a policy whose first output is the distribution's inputs, then
  // distribution.sample(inputs, key, temperature) on the CPU: {actions, distribution inputs}, bit
  // for bit act() then sample() (on the CPU the sampling runs inside the compiled forward).
  std::pair<Tensor, Tensor> act_and_sample(const Tensor& observations, bool evaluating, const Distribution& distribution,
                                           Key key, double temperature);
  // Only the collected statistics move: the model's state after a Mode::collect step on observations
  // (and `more`), without computing what no statistic depends on (Layer::updated_state). For a network
  // whose outputs the agent does not use while collecting (ActorCriticAgent's value network). The same
  // state as act(observations, false, more); compiled like act().
  void update_state(const Tensor& observations, const Stack& more = {});
  // How the compiled forward ran.
  const CompileStats& compile_stats() const { return compiled_.stats(); }
  // The model's outputs for observations [B, L, ...] in Mode::eval (statistics unchanged).
  Stack outputs(const Tensor& observations) const;

  const Tree& state() const { return state_; }
  Device device() const { return device_; }
  // Training starts from the collected statistics; the copy is refreshed after training.
  void to_trainer(Trainer& trainer) const {
    trainer.set_state(state_);
    owned_leaves_.clear();  // shared with the trainer now: the next collection step copies it
  }
  void from_trainer(const Trainer& trainer) {
    state_ = trainer.state();
    owned_leaves_.clear();
    state_frozen_ = false;
    steps_to_check_ = 0;
  }

  void export_state(std::map<std::string, Tensor>& tensors) const;
  // Checks every tensor's shape and dtype before changing anything; ctrax::Error naming the
  // checkpoint, the path and both shapes otherwise.
  Tree checked_import(const io::Checkpoint& checkpoint) const;
  void set_state(Tree state) {
    state_ = std::move(state);
    owned_leaves_.clear();
    state_frozen_ = false;
    steps_to_check_ = 0;
  }

 private:
  std::string tensor_name(const std::string& path) const;
  // The forward on (observations, more..., state leaves...): the outputs, then in Mode::collect
  // the new state's leaves.
  std::vector<Tensor> forward(const std::vector<Tensor>& inputs, Key key);
  const std::vector<Tensor>& run(const Tensor& observations, bool evaluating, const Stack& more, Key key);
  // Whether a collection step can still change the state (Layer::may_change_state, asked every
  // kFrozenCheckInterval calls): once it cannot, a collection step's statistics are not copied
  // back and update_state does nothing.
  bool state_may_move() const;
  // A copy of `source` for the caller, in returned_[slot]'s storage when nothing but this object
  // holds it any more (the caller dropped the previous result), else in a new one.
  Tensor returned_copy(size_t slot, const Tensor& source);

  const Trainer& trainer_;
  std::string checkpoint_name_;
  std::string who_;
  Device device_;
  Tree state_;
  // state_'s leaves when this object made them (keep_owned_leaves) and nobody else holds them: a
  // collection step then copies the new statistics into them instead of rebuilding the tree.
  mutable std::vector<Tensor> owned_leaves_;
  mutable bool state_frozen_ = false;  // state_may_move() found it cannot move (until replaced)
  mutable int steps_to_check_ = 0;     // calls of state_may_move() before it asks the model again
  static constexpr int kFrozenCheckInterval = 64;
  CompiledFunction compiled_;  // runs forward
  bool evaluating_ = false;    // read by forward (part of the plan's guard)
  // The sampling forward runs after outputs: read by forward, part of the plan's guard.
  const Distribution* sampler_ = nullptr;
  double temperature_ = 1.0;
  bool state_only_ = false;    // read by forward (part of the plan's guard): update_state()
  size_t n_more_ = 0;
  size_t n_outputs_ = 0;       // set by forward (the model's outputs; none returned by update_state)
  Tree new_state_structure_;   // set by forward
  std::vector<Tensor> returned_;  // what act() / act_and_sample() returned last, per slot
  std::vector<Tensor> inputs_;    // run()'s inputs while it runs (empty between calls)
};

// Trax's supervised part of an RL epoch for one network: n_steps steps of `trainer` spread evenly
// over max(n_evals, 1) chunks (the remainder in the first), each followed by an evaluation of
// eval_steps batches when n_evals > 0, then after_chunk (if set). Returns the last step's row with
// the last evaluation's loss and metrics in place of its own, names prefixed ("policy/loss");
// nothing when n_steps is 0. Only a chunk's last step computes the metric layers.
Metrics train_in_chunks(Trainer& trainer, int64_t n_steps, int64_t n_evals, int64_t eval_steps,
                        const std::string& prefix, const std::function<void()>& after_chunk = {});

}  // namespace ctrax
