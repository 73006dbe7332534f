// Layer: the unit models are built from, with Trax's stack semantics. A model is a tree of
// layers; each takes n_in items from the top of a data stack (a Stack, top first) and puts back
// n_out. The forward is a pure function
//     apply(inputs, weights, state, rng, mode) -> (outputs, new state)
// over explicit weight and state trees (tensor/tree.h), so value_and_grad differentiates it with
// respect to the weights; init(input_signature, rng) makes weights and state with inferred
// shapes. Trained weights live in the trees, not in the layer. Design: layers/README.md.
//
// Weight sharing: the same LayerPtr placed twice owns one set of weights; later occurrences get
// an empty tree at init and use the first occurrence's weights, so their gradients add up.
// Errors: a layer that rejects its inputs throws ctrax::Error naming the path to it from the
// model's root, e.g. "Serial > Branch[1] > Dense_64: input has last dimension 3, expected 4",
// and the signature it got.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "../tensor/random.h"
#include "../tensor/tensor.h"
#include "../tensor/tree.h"

namespace ctrax {

// train: dropout and batch-norm updates on; eval: frozen; predict: step-by-step inference
// (caches, Scan carries); collect: RL data collection (observation normalisation updates).
enum class Mode : uint8_t { train, eval, predict, collect };
const char* mode_name(Mode mode);

struct ShapeDtype {
  Shape shape;
  DType dtype = DType::float32;
  static ShapeDtype of(const Tensor& t) { return {t.shape(), t.dtype()}; }
  bool operator==(const ShapeDtype& o) const { return shape == o.shape && dtype == o.dtype; }
};
using Signature = std::vector<ShapeDtype>;
std::string to_string(const Signature& signature);
Signature signature_of(const std::vector<Tensor>& items);

// The items a layer takes or gives, top of the stack first.
using Stack = std::vector<Tensor>;

class Layer;
using LayerPtr = std::shared_ptr<Layer>;

struct LayerResult {
  Stack outputs;
  Tree state;
};

// One line of a model summary (layers/summary.h): a layer met during an apply pass.
struct LayerSummaryRow {
  int depth = 0;
  std::string label;
  Signature input, output;
  int64_t parameters = 0;  // 0 for later occurrences of a shared instance
};

// Bookkeeping of one init or apply pass over a model: the path to the current layer (for
// error messages), the instances that occur more than once and the weights their first
// occurrence got, and optionally the rows of a summary. Start one with LayerPass::over(root).
struct LayerPass {
  std::vector<std::string> path;
  std::unordered_set<const Layer*> shared;  // instances met more than once in the model's tree
  std::unordered_map<const Layer*, Tree> shared_weights;
  bool error_annotated = false;
  std::vector<LayerSummaryRow>* summary = nullptr;

  static LayerPass over(const Layer& root);
};

class Layer {
 public:
  virtual ~Layer() = default;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  const std::string& name() const { return name_; }
  int n_in() const { return n_in_; }
  int n_out() const { return n_out_; }
  const std::vector<LayerPtr>& sublayers() const { return sublayers_; }

  // ---- The functional interface -------------------------------------------------------------
  // Weights and state for inputs of `input`'s signature; the rng is split once per sublayer.
  // Also stored as this layer's own weights and state (for the convenience calls below).
  std::pair<Tree, Tree> init(const Signature& input, Key rng = Key());
  // The signature of the outputs for inputs of `input`'s signature (runs init and a forward
  // pass on zeros, recording nothing; the layer's own weights are left as they were).
  Signature output_signature(const Signature& input);
  // The pure forward.
  LayerResult apply(const Stack& inputs, const Tree& weights, const Tree& state, Key rng = Key(),
                    Mode mode = Mode::eval) const;
  // apply()'s new state without its outputs, for callers that only keep statistics (an RL agent's
  // value network follows the collected observations this way). The same bits as apply().state;
  // a Serial stops after its last sublayer that holds state, since the layers after it cannot
  // change any (other layers run whole).
  Tree updated_state(const Stack& inputs, const Tree& weights, const Tree& state, Key rng = Key(),
                     Mode mode = Mode::collect) const;
  // Whether apply() in `mode` could return a state other than `state` (its structure and values as
  // init or apply made them). Conservative: true for any layer that holds state, unless the layer
  // knows better (Normalize: only in Mode::collect and below its sample_limit; Serial and Parallel:
  // when a sublayer may). It speaks of the state only: an RL agent's collection steps stop copying
  // back statistics that can no longer move once this is false for Mode::collect, and skip the
  // value network's statistics update (rl/agents/collect_model.h). A layer whose state a step can
  // change must not say false. Reads nothing from a GPU (a Normalize there says true).
  virtual bool may_change_state(const Tree& state, Mode mode) const;

  // ---- The convenience interface: the layer's own weights and state --------------------------
  const Tree& weights() const { return weights_; }
  const Tree& state() const { return state_; }
  void set_weights(Tree weights) { weights_ = std::move(weights); }
  void set_state(Tree state) { state_ = std::move(state); }
  bool initialized() const { return initialized_; }
  // apply with the layer's own weights and state; keeps the new state.
  Stack operator()(const Stack& inputs, Key rng = Key(), Mode mode = Mode::eval);
  Tensor operator()(const Tensor& x, Key rng = Key(), Mode mode = Mode::eval);

  // Number of weight elements in a weights tree (shared weights counted once).
  static int64_t count_parameters(const Tree& weights);

  // ---- For combinators and layer authors -----------------------------------------------------
  // init/apply of a sublayer inside a pass: tracks the path and shared instances.
  static std::pair<Tree, Tree> init_in_pass(Layer& layer, const Signature& input, Key rng, LayerPass& pass,
                                            const std::string& label);
  // state_only: forward_state_only() instead of forward() (the outputs may be left out).
  static LayerResult apply_in_pass(const Layer& layer, const Stack& inputs, const Tree& weights, const Tree& state,
                                   Key rng, Mode mode, LayerPass& pass, const std::string& label,
                                   bool state_only = false);

 protected:
  Layer(std::string name, int n_in, int n_out, std::vector<LayerPtr> sublayers = {});

  // Makes the weights and state for inputs of this signature (default: none).
  virtual std::pair<Tree, Tree> init_weights_and_state(const Signature& input, Key rng, LayerPass& pass);
  // The forward: `inputs` has exactly n_in items.
  virtual LayerResult forward(const Stack& inputs, const Tree& weights, const Tree& state, Key rng, Mode mode,
                              LayerPass& pass) const = 0;
  // The new state of forward(); the outputs may be left out (empty). Default: the whole forward.
  virtual LayerResult forward_state_only(const Stack& inputs, const Tree& weights, const Tree& state, Key rng,
                                         Mode mode, LayerPass& pass) const {
    return forward(inputs, weights, state, rng, mode, pass);
  }

  // Throws ctrax::Error "<what>" for this layer (the pass adds the path and the signature).
  [[noreturn]] void fail(const std::string& what) const;

  void set_arity(int n_in, int n_out) {
    n_in_ = n_in;
    n_out_ = n_out;
  }

 private:
  std::string name_;
  int n_in_;
  int n_out_;
  std::vector<LayerPtr> sublayers_;
  Tree weights_;
  Tree state_;
  bool initialized_ = false;
};

}  // namespace ctrax
