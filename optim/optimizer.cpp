// Optimizer: the tree walk, validation, global-norm clipping and statistics (see optimizer.h).
//
// An update walks the three trees (weights, gradients, slots) three times, recursing over
// Tree::list() and Tree::dict() by reference: once to check everything, once for the
// gradients' global norm, once to update each weight. The walks build no paths and copy no
// trees: the path of a node is a chain of PathLinks on the stack, turned into a string only
// when an error is reported. The slots of one weight are handed to update_weight in a
// thread-local vector whose capacity survives between calls, so a steady-state update
// allocates nothing (tensor handles are copied into it, which costs a reference count each).
// So an update_weight must not itself run an update on the same thread.
//
// update_from_tensors checks the same way, then runs the last two walks as one recorded kernel
// (tensor/plan.h) that holds the trees and each weight's slot list: a replay walks the trees by
// reference and copies no handle.
#include "optimizer.h"

#include <cmath>
#include <functional>
#include <limits>
#include <sstream>

#include "../kernels/cuda/optimizer_steps.h"
#include "../kernels/optimizer_steps.h"
#include "../tensor/plan.h"
#include "device_step.h"

namespace ctrax {

namespace {

// One step of a path: a list index or a dict key, and the step before it.
struct PathLink {
  const PathLink* parent;
  size_t index;
  const std::string* key;  // null for a list index
};

void append_path(std::ostringstream& out, const PathLink* link) {
  if (link == nullptr) return;
  if (link->parent) {
    append_path(out, link->parent);
    out << '/';
  }
  if (link->key) out << *link->key;
  else out << link->index;
}

// "'0/encoder/kernel'", or "the root" for a tree that is a single leaf.
std::string where(const PathLink* link) {
  if (link == nullptr) return "the root";
  std::ostringstream out;
  out << '\'';
  append_path(out, link);
  out << '\'';
  return out.str();
}

// "a tensor float32[3, 4]", "a list of 2 items", "a dict with keys (a, b)".
std::string describe(const Tree& t) {
  std::ostringstream out;
  if (t.is_leaf()) {
    if (t.leaf().defined()) out << "a tensor " << t.leaf().dtype() << t.leaf().shape();
    else out << "an undefined tensor";
  } else if (t.is_list()) {
    out << "a list of " << t.list().size() << (t.list().size() == 1 ? " item" : " items");
  } else {
    out << "a dict with keys (";
    bool first = true;
    for (const auto& [key, child] : t.dict()) {
      out << (first ? "" : ", ") << key;
      first = false;
    }
    out << ")";
  }
  return out.str();
}

bool same_kind(const Tree& a, const Tree& b) {
  return a.is_leaf() == b.is_leaf() && a.is_list() == b.is_list() && a.is_dict() == b.is_dict();
}

// True when both dicts have the same keys (std::map keeps them sorted, so in the same order).
bool same_keys(const Tree::Dict& a, const Tree::Dict& b) {
  if (a.size() != b.size()) return false;
  for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib)
    if (ia->first != ib->first) return false;
  return true;
}

bool is_float(DType dtype) { return dtype == DType::float32 || dtype == DType::float64; }

double sum_of_squares(const Tensor& g) {
  if (!g.is_contiguous()) return sum_of_squares(g.contiguous());  // a view: a copy (allocates)
  return optim_detail::run_step(g, [&](auto tag, bool on_gpu) {
    using T = decltype(tag);
    return on_gpu ? kernels::cuda::sum_of_squares(g.device_data<T>(), g.numel())
                  : kernels::sum_of_squares(g.data<T>(), g.numel());
  });
}

double gradient_sum_of_squares(const Tree& g) {
  if (g.is_leaf()) return sum_of_squares(g.leaf());
  double sum = 0;
  if (g.is_list()) {
    for (const Tree& child : g.list()) sum += gradient_sum_of_squares(child);
  } else {
    for (const auto& [key, child] : g.dict()) sum += gradient_sum_of_squares(child);
  }
  return sum;
}

// The slot vector handed to update_weight, reused between calls (see the file comment).
std::vector<Tensor>& slot_scratch() {
  thread_local std::vector<Tensor> scratch;
  return scratch;
}

// Empties the scratch even when update_weight throws, so it holds no tensor between updates.
struct ScratchGuard {
  std::vector<Tensor>& slots;
  ~ScratchGuard() { slots.clear(); }
};

// The slots of each weight, in leaf order (the trees were checked to match).
void collect_slot_lists(const Tree& w, const Tree& s, std::vector<std::vector<Tensor>>& out) {
  if (w.is_leaf()) {
    std::vector<Tensor>& leaf = out.emplace_back();
    for (const Tree& slot : s.list()) leaf.push_back(slot.leaf());
  } else if (w.is_list()) {
    for (size_t i = 0; i < w.list().size(); ++i) collect_slot_lists(w.list()[i], s.list()[i], out);
  } else {
    auto is = s.dict().begin();
    for (const auto& [key, child] : w.dict()) collect_slot_lists(child, (is++)->second, out);
  }
}

void init_walk(const Tree& w, Tree& out, const PathLink* path, const Optimizer& opt,
               const std::function<std::vector<Tensor>(const Tensor&)>& init_slots) {
  if (w.is_leaf()) {
    const Tensor& weight = w.leaf();
    CTRAX_REQUIRE(weight.defined(), opt.name(), ".init: the weight at ", where(path), " is undefined");
    CTRAX_REQUIRE(is_float(weight.dtype()), opt.name(), ".init: the weight at ", where(path), " has dtype ",
                  weight.dtype(), "; weights must be float32 or float64");
    Tree::List slots;
    for (Tensor& s : init_slots(weight)) slots.emplace_back(std::move(s));
    out = Tree(std::move(slots));
  } else if (w.is_list()) {
    Tree::List items(w.list().size());
    for (size_t i = 0; i < items.size(); ++i) {
      const PathLink link{path, i, nullptr};
      init_walk(w.list()[i], items[i], &link, opt, init_slots);
    }
    out = Tree(std::move(items));
  } else {
    Tree::Dict items;
    for (const auto& [key, child] : w.dict()) {
      const PathLink link{path, 0, &key};
      init_walk(child, items[key], &link, opt, init_slots);
    }
    out = Tree(std::move(items));
  }
}

}  // namespace

Optimizer::Optimizer(LearningRate learning_rate, std::optional<double> clip_grad_norm)
    : learning_rate_(std::move(learning_rate)), clip_grad_norm_(clip_grad_norm) {
  CTRAX_REQUIRE(!clip_grad_norm || (std::isfinite(*clip_grad_norm) && *clip_grad_norm > 0),
                "Optimizer: clip_grad_norm must be > 0 and finite when set, got ", clip_grad_norm.value_or(0));
}

void Optimizer::require_hyperparameter(bool ok, const char* what, const char* rule, double value) const {
  CTRAX_REQUIRE(ok, name(), ": ", what, " must be ", rule, ", got ", value);
}

size_t Optimizer::num_slots(const Tensor& weight) const { return init_slots(weight).size(); }

Shape Optimizer::slot_shape(const Tensor& weight, size_t index) const {
  const std::vector<Tensor> slots = init_slots(weight);
  CTRAX_CHECK(index < slots.size(), "slot ", index, " of ", slots.size());
  return slots[index].shape();
}

Tree Optimizer::init(const Tree& weights) const {
  Tree out;
  init_walk(weights, out, nullptr, *this, [this](const Tensor& w) { return init_slots(w); });
  return out;
}

void Optimizer::check_step_and_rate(int64_t step, double learning_rate) const {
  CTRAX_REQUIRE(step >= 0, name(), ".update: step must be >= 0 (steps count from 0), got ", step);
  require_hyperparameter(std::isfinite(learning_rate) && learning_rate >= 0, "learning_rate", ">= 0 and finite",
                         learning_rate);
  check_learning_rate(learning_rate);
}

void Optimizer::check_trees(const Tree& gradients, const Tree& weights, const Tree& slots) const {
  // (The walks are lambdas so that they may call the protected virtuals.)
  const auto check_leaf = [this](const Tensor& g, const Tensor& w, const Tree& s, const PathLink* path) {
    CTRAX_REQUIRE(w.defined(), name(), ".update: the weight at ", where(path), " is undefined");
    CTRAX_REQUIRE(is_float(w.dtype()), name(), ".update: the weight at ", where(path), " has dtype ", w.dtype(),
                  "; weights must be float32 or float64");
    CTRAX_REQUIRE(w.device().is_cpu() || supports_cuda(), name(), ".update: the weight at ", where(path), " is on ",
                  w.device(), "; ", name(), " updates CPU weights only (SGD, Momentum, Adam, AdamW and RMSProp "
                  "also run on CUDA)");
    CTRAX_REQUIRE(w.is_contiguous(), name(), ".update: the weight at ", where(path), " (", w.dtype(), w.shape(),
                  ") is not contiguous; weights are updated in place and must be contiguous");
    CTRAX_REQUIRE(g.defined(), name(), ".update: the gradient at ", where(path), " is undefined");
    CTRAX_REQUIRE(g.shape() == w.shape(), name(), ".update: the gradient at ", where(path), " has shape ", g.shape(),
                  ", the weight ", w.shape());
    CTRAX_REQUIRE(g.dtype() == w.dtype(), name(), ".update: the gradient at ", where(path), " has dtype ", g.dtype(),
                  ", the weight ", w.dtype());
    CTRAX_REQUIRE(g.device() == w.device(), name(), ".update: the gradient at ", where(path), " is on ", g.device(),
                  ", the weight on ", w.device());
    const size_t n = num_slots(w);
    CTRAX_REQUIRE(s.is_list() && s.list().size() == n, name(), ".update: the slots of the weight at ", where(path),
                  " must be a list of ", n, n == 1 ? " tensor" : " tensors", ", got ", describe(s));
    for (size_t k = 0; k < n; ++k) {
      const Tree& node = s.list()[k];
      CTRAX_REQUIRE(node.is_leaf() && node.leaf().defined(), name(), ".update: slot ", k, " of the weight at ",
                    where(path), " must be a tensor, got ", describe(node));
      const Tensor& slot = node.leaf();
      const Shape expected = slot_shape(w, k);
      CTRAX_REQUIRE(slot.shape() == expected && slot.dtype() == w.dtype(), name(), ".update: slot ", k,
                    " of the weight at ", where(path), " is ", slot.dtype(), slot.shape(), ", expected ", w.dtype(),
                    expected);
      CTRAX_REQUIRE(slot.device() == w.device() && slot.is_contiguous(), name(), ".update: slot ", k,
                    " of the weight at ", where(path), " must be a contiguous tensor on ", w.device());
    }
  };
  const auto check = [&](const auto& self, const Tree& g, const Tree& w, const Tree& s, const PathLink* path) -> void {
    if (!same_kind(w, g) || (w.is_list() && w.list().size() != g.list().size()) ||
        (w.is_dict() && !same_keys(w.dict(), g.dict())))
      CTRAX_THROW(name(), ".update: the gradients do not match the weights at ", where(path), ": the weights have ",
                  describe(w), ", the gradients ", describe(g));
    if (w.is_leaf()) return check_leaf(g.leaf(), w.leaf(), s, path);
    if (!same_kind(w, s) || (w.is_list() && w.list().size() != s.list().size()) ||
        (w.is_dict() && !same_keys(w.dict(), s.dict())))
      CTRAX_THROW(name(), ".update: the slots do not match the weights at ", where(path), ": the weights have ",
                  describe(w), ", the slots ", describe(s), " (each weight's slots are a list in its place)");
    if (w.is_list()) {
      for (size_t i = 0; i < w.list().size(); ++i) {
        const PathLink link{path, i, nullptr};
        self(self, g.list()[i], w.list()[i], s.list()[i], &link);
      }
    } else {
      auto ig = g.dict().begin(), is = s.dict().begin();
      for (const auto& [key, child] : w.dict()) {
        const PathLink link{path, 0, &key};
        self(self, (ig++)->second, child, (is++)->second, &link);
      }
    }
  };
  check(check, gradients, weights, slots, nullptr);
}

OptimizerStats Optimizer::apply(int64_t step, double learning_rate, const Tree& gradients, Tree& weights,
                                const Tree& slots, std::vector<std::vector<Tensor>>* slot_lists,
                                bool with_stats) const {
  // The global norm (when wanted, or needed for clipping), and the clipping factor.
  constexpr double kNotComputed = std::numeric_limits<double>::quiet_NaN();
  OptimizerStats stats;
  stats.gradients_l2 =
      with_stats || clip_grad_norm_ ? std::sqrt(gradient_sum_of_squares(gradients)) : kNotComputed;
  double scale = 1.0;
  if (clip_grad_norm_ && stats.gradients_l2 > *clip_grad_norm_) {
    scale = *clip_grad_norm_ / stats.gradients_l2;
    stats.clipped = true;
  }

  // One fused pass per weight.
  std::vector<Tensor>& scratch = slot_scratch();
  const ScratchGuard guard{scratch};
  size_t leaf = 0;
  const auto apply_walk = [&](const auto& self, const Tree& g, Tree& w, const Tree& s) -> double {
    if (w.is_leaf()) {
      std::vector<Tensor>* leaf_slots = slot_lists ? &(*slot_lists)[leaf++] : &scratch;
      if (!slot_lists) {
        scratch.clear();
        for (const Tree& slot : s.list()) scratch.push_back(slot.leaf());
      }
      const Tensor& gradient = g.leaf();
      if (gradient.is_contiguous())
        return update_weight(step, learning_rate, scale, gradient, w.leaf(), *leaf_slots, with_stats);
      return update_weight(step, learning_rate, scale, gradient.contiguous(), w.leaf(), *leaf_slots, with_stats);
    }
    double sum = 0;
    if (w.is_list()) {
      Tree::List& ws = w.list();
      for (size_t i = 0; i < ws.size(); ++i) sum += self(self, g.list()[i], ws[i], s.list()[i]);
    } else {
      auto ig = g.dict().begin();
      auto is = s.dict().begin();
      for (auto& [key, child] : w.dict()) sum += self(self, (ig++)->second, child, (is++)->second);
    }
    return sum;
  };
  const double weights_sum = apply_walk(apply_walk, gradients, weights, slots);
  stats.weights_l2 = with_stats ? std::sqrt(weights_sum) : kNotComputed;
  return stats;
}

OptimizerStats Optimizer::update(int64_t step, double learning_rate, const Tree& gradients, Tree& weights,
                                 Tree& slots, bool with_stats) const {
  // Everything is checked before anything is modified.
  check_step_and_rate(step, learning_rate);
  check_trees(gradients, weights, slots);
  return apply(step, learning_rate, gradients, weights, slots, nullptr, with_stats);
}

Tensor Optimizer::update_from_tensors(const Tensor& step, const Tensor& learning_rate, const Tree& gradients,
                                      Tree& weights, Tree& slots, bool with_stats) const {
  CTRAX_REQUIRE(runs_in_plans(), name(), ".update_from_tensors: this optimizer does not say that its update may run "
                "as a kernel (runs_in_plans()); use update()");
  CTRAX_REQUIRE(step.defined() && step.dtype() == DType::int64 && step.numel() == 1 && step.device().is_cpu(),
                name(), ".update_from_tensors: step must be a one-element int64 CPU tensor, got ",
                step.defined() ? describe(Tree(step)) : std::string("an undefined tensor"));
  CTRAX_REQUIRE(learning_rate.defined() && learning_rate.dtype() == DType::float64 && learning_rate.numel() == 1 &&
                    learning_rate.device().is_cpu(),
                name(), ".update_from_tensors: learning_rate must be a one-element float64 CPU tensor, got ",
                learning_rate.defined() ? describe(Tree(learning_rate)) : std::string("an undefined tensor"));
  check_trees(gradients, weights, slots);
  for (const Tensor& w : weights.leaves())
    CTRAX_REQUIRE(w.device().is_cpu(), name(), ".update_from_tensors: the weights must be on the CPU, got one on ",
                  w.device(), "; use update()");

  // The kernel holds contiguous gradients and each weight's slots in leaf order, so a replay
  // copies no tensor handle.
  const Tree contiguous = gradients.map([](const Tensor& g) { return g.contiguous(); });
  std::vector<std::vector<Tensor>> slot_lists;
  collect_slot_lists(weights, slots, slot_lists);
  Tensor stats = empty({3}, DType::float64);
  detail::KernelScope scope;
  detail::run_kernel([this, step_value = static_cast<const int64_t*>(step.raw_data()),
                      rate = static_cast<const double*>(learning_rate.raw_data()),
                      out = static_cast<double*>(stats.raw_data()), gradients = contiguous, weights, slots,
                      slot_lists, with_stats]() mutable {
    check_step_and_rate(*step_value, *rate);
    const OptimizerStats s = apply(*step_value, *rate, gradients, weights, slots, &slot_lists, with_stats);
    out[0] = s.gradients_l2;
    out[1] = s.weights_l2;
    out[2] = s.clipped ? 1.0 : 0.0;
  });
  return stats;
}

}  // namespace ctrax
