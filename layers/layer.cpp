// Layer: init, apply, weight sharing and error paths (see layer.h).
#include "layer.h"

#include <sstream>

#include "../autograd/tape.h"
#include "../base/error.h"
#include "../tensor/ops.h"

namespace ctrax {

const char* mode_name(Mode mode) {
  switch (mode) {
    case Mode::train: return "train";
    case Mode::eval: return "eval";
    case Mode::predict: return "predict";
    case Mode::collect: return "collect";
  }
  return "?";
}

std::string to_string(const Signature& signature) {
  std::ostringstream out;
  out << "(";
  for (size_t i = 0; i < signature.size(); ++i) out << (i ? ", " : "") << signature[i].dtype << signature[i].shape;
  out << ")";
  return out.str();
}

Signature signature_of(const std::vector<Tensor>& items) {
  Signature s;
  s.reserve(items.size());
  for (const Tensor& t : items) s.push_back(ShapeDtype::of(t));
  return s;
}

Layer::Layer(std::string name, int n_in, int n_out, std::vector<LayerPtr> sublayers)
    : name_(std::move(name)), n_in_(n_in), n_out_(n_out), sublayers_(std::move(sublayers)) {
  CTRAX_REQUIRE(n_in_ >= 0 && n_out_ >= 0, "Layer ", name_, ": n_in and n_out must be >= 0, got ", n_in_, " and ",
                n_out_);
  for (size_t i = 0; i < sublayers_.size(); ++i)
    CTRAX_REQUIRE(sublayers_[i] != nullptr, "Layer ", name_, ": sublayer ", i, " is null");
}

std::pair<Tree, Tree> Layer::init_weights_and_state(const Signature&, Key, LayerPass&) { return {Tree(), Tree()}; }

void Layer::fail(const std::string& what) const { CTRAX_THROW(what); }

namespace {
std::string join_path(const std::vector<std::string>& path) {
  std::string s;
  for (size_t i = 0; i < path.size(); ++i) {
    if (i) s += " > ";
    s += path[i];
  }
  return s;
}

// Runs f; the first ctrax::Error raised inside is rethrown once with the path to the layer
// and the signature it got.
template <typename F>
auto annotate_errors(LayerPass& pass, const Signature& got, F&& f) {
  try {
    return f();
  } catch (const Error& e) {
    if (pass.error_annotated) throw;
    pass.error_annotated = true;
    CTRAX_THROW(join_path(pass.path), ": ", e.what(), " (inputs ", to_string(got), ")");
  }
}
}  // namespace

LayerPass LayerPass::over(const Layer& root) {
  // Count every instance in the tree; those met twice or more are shared.
  std::unordered_set<const Layer*> seen;
  LayerPass pass;
  std::vector<const Layer*> todo{&root};
  while (!todo.empty()) {
    const Layer* l = todo.back();
    todo.pop_back();
    if (!seen.insert(l).second) {
      pass.shared.insert(l);
      continue;  // its subtree was counted the first time
    }
    for (const LayerPtr& sub : l->sublayers()) todo.push_back(sub.get());
  }
  return pass;
}

std::pair<Tree, Tree> Layer::init_in_pass(Layer& layer, const Signature& input, Key rng, LayerPass& pass,
                                          const std::string& label) {
  pass.path.push_back(label);
  auto result = annotate_errors(pass, input, [&]() -> std::pair<Tree, Tree> {
    CTRAX_REQUIRE(static_cast<int>(input.size()) == layer.n_in(), "expected ", layer.n_in(), " input",
                  layer.n_in() == 1 ? "" : "s", ", got ", input.size());
    if (!pass.shared.count(&layer)) return layer.init_weights_and_state(input, rng, pass);
    if (pass.shared_weights.count(&layer)) return {Tree(), Tree()};  // the first occurrence holds them
    auto ws = layer.init_weights_and_state(input, rng, pass);
    pass.shared_weights.emplace(&layer, ws.first);
    return ws;
  });
  pass.path.pop_back();
  return result;
}

LayerResult Layer::apply_in_pass(const Layer& layer, const Stack& inputs, const Tree& weights, const Tree& state,
                                 Key rng, Mode mode, LayerPass& pass, const std::string& label, bool state_only) {
  pass.path.push_back(label);
  LayerResult result = annotate_errors(pass, signature_of(inputs), [&]() -> LayerResult {
    CTRAX_REQUIRE(static_cast<int>(inputs.size()) == layer.n_in(), "expected ", layer.n_in(), " input",
                  layer.n_in() == 1 ? "" : "s", ", got ", inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) CTRAX_REQUIRE(inputs[i].defined(), "input ", i, " is undefined");
    // A shared instance's later occurrences carry an empty tree: use the first one's weights.
    // Only instances that occur more than once are looked up (a plain model pays nothing).
    bool first = true;
    const Tree* w_ptr = &weights;
    if (pass.shared.count(&layer)) {
      const auto it = pass.shared_weights.find(&layer);
      first = it == pass.shared_weights.end();
      if (first) pass.shared_weights.emplace(&layer, weights);
      else w_ptr = &it->second;
    }
    const Tree& w = *w_ptr;
    size_t row = 0;
    if (pass.summary) {
      row = pass.summary->size();
      pass.summary->push_back({static_cast<int>(pass.path.size()) - 1, label, signature_of(inputs), {},
                               first ? count_parameters(weights) : 0});
    }
    LayerResult r = state_only ? layer.forward_state_only(inputs, w, state, rng, mode, pass)
                               : layer.forward(inputs, w, state, rng, mode, pass);
    if (pass.summary) (*pass.summary)[row].output = signature_of(r.outputs);
    CTRAX_CHECK(state_only || static_cast<int>(r.outputs.size()) == layer.n_out(), "layer ", layer.name(),
                " returned ", r.outputs.size(), " outputs, declared ", layer.n_out());
    return r;
  });
  pass.path.pop_back();
  return result;
}

std::pair<Tree, Tree> Layer::init(const Signature& input, Key rng) {
  LayerPass pass = LayerPass::over(*this);
  auto ws = init_in_pass(*this, input, rng, pass, name_);
  weights_ = ws.first;
  state_ = ws.second;
  initialized_ = true;
  return ws;
}

Signature Layer::output_signature(const Signature& input) {
  const Tree saved_w = weights_, saved_s = state_;
  const bool saved_init = initialized_;
  NoGradScope no_grad;
  LayerPass pass = LayerPass::over(*this);
  auto [w, s] = init_in_pass(*this, input, Key(), pass, name_);
  Stack zeros_in;
  for (const ShapeDtype& sd : input) zeros_in.push_back(zeros(sd.shape, sd.dtype));
  LayerPass apply_pass = LayerPass::over(*this);
  const LayerResult r = apply_in_pass(*this, zeros_in, w, s, Key(), Mode::eval, apply_pass, name_);
  weights_ = saved_w;
  state_ = saved_s;
  initialized_ = saved_init;
  return signature_of(r.outputs);
}

LayerResult Layer::apply(const Stack& inputs, const Tree& weights, const Tree& state, Key rng, Mode mode) const {
  LayerPass pass = LayerPass::over(*this);
  return apply_in_pass(*this, inputs, weights, state, rng, mode, pass, name_);
}

bool Layer::may_change_state(const Tree& state, Mode) const { return state.num_leaves() > 0; }

Tree Layer::updated_state(const Stack& inputs, const Tree& weights, const Tree& state, Key rng, Mode mode) const {
  LayerPass pass = LayerPass::over(*this);
  return apply_in_pass(*this, inputs, weights, state, rng, mode, pass, name_, /*state_only=*/true).state;
}

Stack Layer::operator()(const Stack& inputs, Key rng, Mode mode) {
  if (!initialized_) init(signature_of(inputs), rng);
  LayerResult r = apply(inputs, weights_, state_, rng, mode);
  state_ = std::move(r.state);
  return std::move(r.outputs);
}

Tensor Layer::operator()(const Tensor& x, Key rng, Mode mode) {
  CTRAX_REQUIRE(n_in_ == 1 && n_out_ == 1, "Layer ", name_, ": the single-tensor call needs n_in = n_out = 1, the layer has n_in = ",
                n_in_, ", n_out = ", n_out_, "; pass a Stack");
  return (*this)(Stack{x}, rng, mode)[0];
}

int64_t Layer::count_parameters(const Tree& weights) {
  int64_t n = 0;
  for (const Tensor& t : weights.leaves()) n += t.numel();
  return n;
}

}  // namespace ctrax
