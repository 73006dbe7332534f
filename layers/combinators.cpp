// Combinators (see combinators.h).
#include "combinators.h"

#include <algorithm>

#include "../base/error.h"
#include "../tensor/ops.h"

namespace ctrax {

namespace {

// How a sublayer appears in error paths: its name and its index in the parent, e.g. Dense_64[1].
std::string item_label(const Layer& sub, size_t i) { return sub.name() + "[" + std::to_string(i) + "]"; }

// Serial: the stack machine.
// A list state with one entry per sublayer (Serial's and Parallel's) may change when one of
// them may; any other state is judged as a leaf layer's.
bool sublayers_may_change_state(const std::vector<LayerPtr>& sublayers, const Tree& state, Mode mode) {
  if (!state.is_list() || state.size() != sublayers.size()) return state.num_leaves() > 0;
  for (size_t k = 0; k < sublayers.size(); ++k)
    if (sublayers[k]->may_change_state(state[k], mode)) return true;
  return false;
}

class SerialLayer final : public Layer {
 public:
  SerialLayer(std::vector<LayerPtr> layers, std::string name)
      : Layer(std::move(name), 1, 1, std::move(layers)) {
    // n_in = max over k of (items consumed net before k) + n_in_k; n_out = n_in - net consumed.
    int net = 0, need = 0;
    for (const LayerPtr& l : sublayers()) {
      need = std::max(need, net + l->n_in());
      net += l->n_in() - l->n_out();
    }
    if (sublayers().empty()) set_arity(1, 1);  // the identity
    else set_arity(need, need - net);
  }

  bool may_change_state(const Tree& state, Mode mode) const override {
    return sublayers_may_change_state(sublayers(), state, mode);
  }

 protected:
  std::pair<Tree, Tree> init_weights_and_state(const Signature& input, Key rng, LayerPass& pass) override {
    Tree::List weights, state;
    const std::vector<Key> keys = sublayers().empty() ? std::vector<Key>{} : split(rng, static_cast<int>(sublayers().size()));
    Signature stack = input;
    for (size_t k = 0; k < sublayers().size(); ++k) {
      Layer& l = *sublayers()[k];
      const Signature in(stack.begin(), stack.begin() + l.n_in());
      auto [w, s] = Layer::init_in_pass(l, in, keys[k], pass, item_label(l, k));
      // The outputs' signature: a forward pass on zeros of the inputs' signature.
      Stack zeros_in;
      for (const ShapeDtype& sd : in) zeros_in.push_back(zeros(sd.shape, sd.dtype));
      LayerPass probe = pass;  // the same path and shared instances, its own error flag
      probe.error_annotated = false;
      const LayerResult r = Layer::apply_in_pass(l, zeros_in, w, s, keys[k], Mode::eval, probe, item_label(l, k));
      Signature out = signature_of(r.outputs);
      out.insert(out.end(), stack.begin() + l.n_in(), stack.end());
      stack = std::move(out);
      weights.push_back(std::move(w));
      state.push_back(std::move(s));
    }
    return {Tree(std::move(weights)), Tree(std::move(state))};
  }

  LayerResult forward(const Stack& inputs, const Tree& weights, const Tree& state, Key rng, Mode mode,
                      LayerPass& pass) const override {
    if (sublayers().empty()) return {inputs, Tree()};
    const std::vector<Key> keys = split(rng, static_cast<int>(sublayers().size()));
    Stack stack = inputs;
    Tree::List new_state;
    for (size_t k = 0; k < sublayers().size(); ++k) {
      const Layer& l = *sublayers()[k];
      const Stack in(stack.begin(), stack.begin() + l.n_in());
      LayerResult r = Layer::apply_in_pass(l, in, weights[k], state[k], keys[k], mode, pass,
                                           item_label(l, k));
      r.outputs.insert(r.outputs.end(), stack.begin() + l.n_in(), stack.end());
      stack = std::move(r.outputs);
      new_state.push_back(std::move(r.state));
    }
    return {std::move(stack), Tree(std::move(new_state))};
  }

  // The sublayers up to the last one that holds state, that one itself state-only; those after it have
  // none to change. Same keys as forward(), so the state is the same bits.
  LayerResult forward_state_only(const Stack& inputs, const Tree& weights, const Tree& state, Key rng, Mode mode,
                                 LayerPass& pass) const override {
    if (sublayers().empty()) return {Stack{}, Tree()};
    size_t n_run = 0;  // sublayers to run: through the last with state
    for (size_t k = 0; k < sublayers().size(); ++k)
      if (state[k].num_leaves() > 0) n_run = k + 1;
    const std::vector<Key> keys = split(rng, static_cast<int>(sublayers().size()));
    Stack stack = inputs;
    Tree::List new_state;
    for (size_t k = 0; k < n_run; ++k) {
      const Layer& l = *sublayers()[k];
      const Stack in(stack.begin(), stack.begin() + l.n_in());
      const bool last = k + 1 == n_run;
      LayerResult r = Layer::apply_in_pass(l, in, weights[k], state[k], keys[k], mode, pass, item_label(l, k), last);
      new_state.push_back(std::move(r.state));
      if (last) break;
      r.outputs.insert(r.outputs.end(), stack.begin() + l.n_in(), stack.end());
      stack = std::move(r.outputs);
    }
    for (size_t k = n_run; k < sublayers().size(); ++k) new_state.push_back(state[k]);
    return {Stack{}, Tree(std::move(new_state))};
  }
};


// Parallel: consecutive input spans to successive sublayers (null = identity on one item).
class ParallelLayer final : public Layer {
 public:
  ParallelLayer(std::vector<LayerPtr> layers, std::string name) : Layer(std::move(name), 0, 0, fill(std::move(layers))) {
    int n_in = 0, n_out = 0;
    for (const LayerPtr& l : sublayers()) {
      n_in += l->n_in();
      n_out += l->n_out();
    }
    set_arity(n_in, n_out);
  }

  bool may_change_state(const Tree& state, Mode mode) const override {
    return sublayers_may_change_state(sublayers(), state, mode);
  }

 protected:
  std::pair<Tree, Tree> init_weights_and_state(const Signature& input, Key rng, LayerPass& pass) override {
    Tree::List weights, state;
    const std::vector<Key> keys = split(rng, static_cast<int>(std::max<size_t>(1, sublayers().size())));
    size_t at = 0;
    for (size_t k = 0; k < sublayers().size(); ++k) {
      Layer& l = *sublayers()[k];
      const Signature in(input.begin() + at, input.begin() + at + l.n_in());
      at += l.n_in();
      auto [w, s] = Layer::init_in_pass(l, in, keys[k], pass, item_label(l, k));
      weights.push_back(std::move(w));
      state.push_back(std::move(s));
    }
    return {Tree(std::move(weights)), Tree(std::move(state))};
  }

  LayerResult forward(const Stack& inputs, const Tree& weights, const Tree& state, Key rng, Mode mode,
                      LayerPass& pass) const override {
    const std::vector<Key> keys = split(rng, static_cast<int>(std::max<size_t>(1, sublayers().size())));
    Stack out;
    Tree::List new_state;
    size_t at = 0;
    for (size_t k = 0; k < sublayers().size(); ++k) {
      const Layer& l = *sublayers()[k];
      const Stack in(inputs.begin() + at, inputs.begin() + at + l.n_in());
      at += l.n_in();
      LayerResult r = Layer::apply_in_pass(l, in, weights[k], state[k], keys[k], mode, pass,
                                           item_label(l, k));
      out.insert(out.end(), r.outputs.begin(), r.outputs.end());
      new_state.push_back(std::move(r.state));
    }
    return {std::move(out), Tree(std::move(new_state))};
  }

 private:
  static std::vector<LayerPtr> fill(std::vector<LayerPtr> layers) {
    for (LayerPtr& l : layers)
      if (!l) l = Serial({}, "Identity");
    return layers;
  }
};

// A layer without weights given by a function of its popped items.
class FnLayer final : public Layer {
 public:
  FnLayer(std::string name, StackFn f, int n_in, int n_out) : Layer(std::move(name), n_in, n_out), f_(std::move(f)) {
    CTRAX_REQUIRE(f_ != nullptr, "Fn ", this->name(), ": the function is empty");
  }

 protected:
  LayerResult forward(const Stack& inputs, const Tree&, const Tree& state, Key, Mode, LayerPass&) const override {
    Stack out = f_(inputs);
    if (static_cast<int>(out.size()) != n_out())
      fail("the function returned " + std::to_string(out.size()) + " items, expected " + std::to_string(n_out()));
    return {std::move(out), state};
  }

 private:
  StackFn f_;
};


// Scan: the sublayer over slices along an axis, threading a carry.
class ScanLayer final : public Layer {
 public:
  ScanLayer(LayerPtr layer, int axis, int n_carry)
      : Layer("Scan", layer ? layer->n_in() : 0, layer ? layer->n_out() : 0, {layer}), axis_(axis), n_carry_(n_carry) {
    CTRAX_REQUIRE(n_carry >= 0 && n_carry <= layer->n_in() && n_carry <= layer->n_out(), "Scan: n_carry = ", n_carry,
                  " does not fit a layer with n_in = ", layer->n_in(), ", n_out = ", layer->n_out());
  }

 protected:
  std::pair<Tree, Tree> init_weights_and_state(const Signature& input, Key rng, LayerPass& pass) override {
    Signature step = input;
    const int n_x = n_in() - n_carry_;
    for (int i = 0; i < n_x; ++i) {
      if (step[i].shape.rank() < 1) fail("scanned input " + std::to_string(i) + " is rank 0");
      step[i].shape.erase(normalize_axis(axis_, step[i].shape.rank(), "Scan"));
    }
    auto [w, s] = Layer::init_in_pass(*sublayers()[0], step, rng, pass, item_label(*sublayers()[0], 0));
    // Tree::List{...}, not Tree{w}: a braced Tree of one Tree is a one-item list under GCC but a
    // copy under clang 14 (the compilers differ on CWG 2137), and Scan's trees are one-item lists.
    return {Tree(Tree::List{std::move(w)}), Tree(Tree::List{std::move(s)})};
  }

  LayerResult forward(const Stack& inputs, const Tree& weights, const Tree& state, Key rng, Mode mode,
                      LayerPass& pass) const override {
    const Layer& l = *sublayers()[0];
    const int n_x = n_in() - n_carry_, n_y = n_out() - n_carry_;
    int64_t length = -1;
    std::vector<int> axes(static_cast<size_t>(n_x));
    for (int i = 0; i < n_x; ++i) {
      if (inputs[i].rank() < 1) fail("scanned input " + std::to_string(i) + " is rank 0");
      axes[i] = normalize_axis(axis_, inputs[i].rank(), "Scan");
      const int64_t n = inputs[i].size(axes[i]);
      if (length >= 0 && n != length)
        fail("scanned inputs differ in length along axis " + std::to_string(axis_) + ": " + std::to_string(length) +
             " and " + std::to_string(n));
      length = n;
    }
    if (length < 0) fail("Scan needs at least one scanned input");
    Stack carry(inputs.begin() + n_x, inputs.end());
    Tree step_state = state[0];
    std::vector<std::vector<Tensor>> ys(static_cast<size_t>(n_y));
    for (int64_t t = 0; t < length; ++t) {
      Stack in;
      for (int i = 0; i < n_x; ++i) in.push_back(inputs[i].select(axes[i], t));
      in.insert(in.end(), carry.begin(), carry.end());
      LayerResult r = Layer::apply_in_pass(l, in, weights[0], step_state, fold_in(rng, static_cast<uint64_t>(t)), mode,
                                           pass, item_label(l, 0));
      for (int j = 0; j < n_y; ++j) ys[j].push_back(r.outputs[j]);
      carry.assign(r.outputs.begin() + n_y, r.outputs.end());
      step_state = std::move(r.state);
    }
    Stack out;
    for (int j = 0; j < n_y; ++j) {
      if (ys[j].empty()) fail("Scan over an empty axis has no outputs to stack");
      const int rank = ys[j][0].rank() + 1;
      out.push_back(stack(ys[j], axis_ < 0 ? axis_ + rank : axis_));
    }
    out.insert(out.end(), carry.begin(), carry.end());
    return {std::move(out), Tree(Tree::List{std::move(step_state)})};
  }

 private:
  int axis_;
  int n_carry_;
};

// Cond: runs one of two branches on the items after the condition's inputs.
class CondLayer final : public Layer {
 public:
  CondLayer(LayerPtr condition, LayerPtr if_true, LayerPtr if_false)
      : Layer("Cond", condition->n_in() + if_true->n_in(), if_true->n_out(), {condition, if_true, if_false}) {
    CTRAX_REQUIRE(condition->n_out() >= 1, "Cond: the condition layer must have an output");
    CTRAX_REQUIRE(if_true->n_in() == if_false->n_in() && if_true->n_out() == if_false->n_out(),
                  "Cond: the branches differ in arity: true has n_in = ", if_true->n_in(), ", n_out = ",
                  if_true->n_out(), "; false has n_in = ", if_false->n_in(), ", n_out = ", if_false->n_out());
  }

 protected:
  std::pair<Tree, Tree> init_weights_and_state(const Signature& input, Key rng, LayerPass& pass) override {
    const std::vector<Key> keys = split(rng, 3);
    const int n_c = sublayers()[0]->n_in();
    const Signature cond_in(input.begin(), input.begin() + n_c), branch_in(input.begin() + n_c, input.end());
    Tree::List w, s;
    for (int k = 0; k < 3; ++k) {
      auto [wk, sk] = Layer::init_in_pass(*sublayers()[k], k == 0 ? cond_in : branch_in, keys[k], pass,
                                          item_label(*sublayers()[k], k));
      w.push_back(std::move(wk));
      s.push_back(std::move(sk));
    }
    return {Tree(std::move(w)), Tree(std::move(s))};
  }

  LayerResult forward(const Stack& inputs, const Tree& weights, const Tree& state, Key rng, Mode mode,
                      LayerPass& pass) const override {
    const std::vector<Key> keys = split(rng, 3);
    const int n_c = sublayers()[0]->n_in();
    const Stack cond_in(inputs.begin(), inputs.begin() + n_c), branch_in(inputs.begin() + n_c, inputs.end());
    LayerResult c = Layer::apply_in_pass(*sublayers()[0], cond_in, weights[0], state[0], keys[0], mode, pass,
                                         item_label(*sublayers()[0], 0));
    const Tensor& flag = c.outputs[0];
    if (flag.numel() != 1) fail("the condition gave " + std::to_string(flag.numel()) + " elements, expected one");
    const int k = flag.item<double>() != 0.0 ? 1 : 2;
    LayerResult r = Layer::apply_in_pass(*sublayers()[k], branch_in, weights[k], state[k], keys[k], mode, pass,
                                         item_label(*sublayers()[k], k));
    Tree::List new_state{std::move(c.state), state[1], state[2]};
    new_state[static_cast<size_t>(k)] = std::move(r.state);
    return {std::move(r.outputs), Tree(std::move(new_state))};
  }
};

}  // namespace

LayerPtr Serial(std::vector<LayerPtr> layers, std::string name) {
  return std::make_shared<SerialLayer>(std::move(layers), std::move(name));
}

}  // namespace ctrax

namespace ctrax {

LayerPtr Parallel(std::vector<LayerPtr> layers, std::string name) {
  return std::make_shared<ParallelLayer>(std::move(layers), std::move(name));
}

LayerPtr Fn(std::string name, StackFn f, int n_in, int n_out) {
  return std::make_shared<FnLayer>(std::move(name), std::move(f), n_in, n_out);
}


LayerPtr Select(std::vector<int> indices, int n_in) {
  int max_index = -1;
  for (int i : indices) {
    CTRAX_REQUIRE(i >= 0, "Select: indices must be >= 0, got ", i);
    max_index = std::max(max_index, i);
  }
  if (n_in < 0) n_in = max_index + 1;
  CTRAX_REQUIRE(max_index < n_in, "Select: index ", max_index, " is out of range for n_in = ", n_in);
  std::string name = "Select[";
  for (size_t k = 0; k < indices.size(); ++k) {
    if (k) name += ',';
    name += std::to_string(indices[k]);
  }
  name += "]";
  const int n_out = static_cast<int>(indices.size());
  return Fn(std::move(name), [indices = std::move(indices)](const Stack& in) {
    Stack out;
    out.reserve(indices.size());
    for (int i : indices) out.push_back(in[static_cast<size_t>(i)]);
    return out;
  }, n_in, n_out);
}

LayerPtr Dup() { return Fn("Dup", [](const Stack& in) { return Stack{in[0], in[0]}; }, 1, 2); }
LayerPtr Drop() { return Fn("Drop", [](const Stack&) { return Stack{}; }, 1, 0); }
LayerPtr Swap() { return Fn("Swap", [](const Stack& in) { return Stack{in[1], in[0]}; }, 2, 2); }
LayerPtr Add() { return Fn("Add", [](const Stack& in) { return Stack{add(in[0], in[1])}; }, 2, 1); }
LayerPtr SubtractTop() { return Fn("SubtractTop", [](const Stack& in) { return Stack{sub(in[1], in[0])}; }, 2, 1); }
LayerPtr Multiply() { return Fn("Multiply", [](const Stack& in) { return Stack{mul(in[0], in[1])}; }, 2, 1); }

LayerPtr Branch(std::vector<LayerPtr> layers, std::string name) {
  for (LayerPtr& l : layers)
    if (!l) l = Serial({}, "Identity");
  if (layers.size() == 1) return layers[0];  // Trax: Branch(x) is x
  std::vector<int> indices;
  for (const LayerPtr& l : layers)
    for (int i = 0; i < l->n_in(); ++i) indices.push_back(i);
  return Serial({Select(indices), Parallel(std::move(layers))}, std::move(name));
}

LayerPtr Gate() {
  return Fn("Gate", [](const Stack& in) { return Stack{add(mul(in[0], in[1]), mul(sub(1.0, in[0]), in[2]))}; }, 3, 1);
}

LayerPtr Concatenate(int n_items, int axis) {
  CTRAX_REQUIRE(n_items >= 1, "Concatenate: n_items must be >= 1, got ", n_items);
  return Fn("Concatenate", [axis](const Stack& in) { return Stack{concatenate(in, axis)}; }, n_items, 1);
}

LayerPtr Split(int n_items, int axis) {
  CTRAX_REQUIRE(n_items >= 1, "Split: n_items must be >= 1, got ", n_items);
  return Fn("Split", [n_items, axis](const Stack& in) { return split(in[0], n_items, axis); }, 1, n_items);
}

LayerPtr Scan(LayerPtr layer, int axis, int n_carry) {
  CTRAX_REQUIRE(layer != nullptr, "Scan: the layer is null");
  return std::make_shared<ScanLayer>(std::move(layer), axis, n_carry);
}

LayerPtr Cond(LayerPtr condition, LayerPtr true_branch, LayerPtr false_branch) {
  CTRAX_REQUIRE(condition != nullptr && true_branch != nullptr, "Cond: the condition and the true branch must be set");
  if (!false_branch) {
    CTRAX_REQUIRE(true_branch->n_in() == true_branch->n_out(), "Cond: without a false branch (the identity) the true "
                  "branch must have n_in == n_out, got ", true_branch->n_in(), " and ", true_branch->n_out());
    std::vector<int> all(static_cast<size_t>(true_branch->n_in()));
    for (int i = 0; i < true_branch->n_in(); ++i) all[static_cast<size_t>(i)] = i;
    false_branch = Select(all, true_branch->n_in());
  }
  return std::make_shared<CondLayer>(std::move(condition), std::move(true_branch), std::move(false_branch));
}

LayerPtr Residual(std::vector<LayerPtr> layers, LayerPtr shortcut) {
  LayerPtr body = Serial(std::move(layers));
  return Serial({Branch({std::move(shortcut), std::move(body)}), Add()}, "Residual");
}

}  // namespace ctrax
