// Tree: nested lists and string-keyed dicts of tensors (Trax's weight tuples, JAX's pytrees).
//
// What it is for: the one container in which weights, model state, gradients and optimizer
// slots travel. Autodiff differentiates with respect to a Tree and returns the gradients as a
// Tree of the same structure; optimizers walk two trees of the same structure side by side.
//
// A Tree is one of: a leaf (a Tensor), a list of Trees, or a dict of Trees keyed by string.
// The empty list () is what a layer without weights has. Leaves are visited depth-first, list
// items in order and dict items in key order (std::map, so the order never depends on how the
// dict was built); `paths()` names each leaf like "0/encoder/kernel" for error messages and
// checkpoints. Copying a Tree copies tensor handles, never tensor data.
//
// What it is not for: values other than tensors (a scalar goes in as a rank-0 tensor), or
// model structure (layers/layer.h); a Tree is data only.
#pragma once

#include <cstddef>
#include <functional>
#include <initializer_list>
#include <map>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "tensor.h"

namespace ctrax {

class Tree {
 public:
  using List = std::vector<Tree>;
  using Dict = std::map<std::string, Tree>;

  Tree() = default;                           // the empty list
  Tree(Tensor leaf) : node_(std::move(leaf)) {}  // NOLINT: a tensor is a tree
  Tree(List items) : node_(std::move(items)) {}  // NOLINT
  Tree(Dict items) : node_(std::move(items)) {}  // NOLINT
  Tree(std::initializer_list<Tree> items) : node_(List(items)) {}

  bool is_leaf() const { return std::holds_alternative<Tensor>(node_); }
  bool is_list() const { return std::holds_alternative<List>(node_); }
  bool is_dict() const { return std::holds_alternative<Dict>(node_); }
  // Items of a list or dict; 1 for a leaf.
  size_t size() const;

  // Accessors throw ctrax::Error naming what the node is when it is something else.
  const Tensor& leaf() const;
  Tensor& leaf();
  const List& list() const;
  List& list();
  const Dict& dict() const;
  Dict& dict();
  const Tree& operator[](size_t index) const;
  Tree& operator[](size_t index);
  const Tree& operator[](const std::string& key) const;
  Tree& operator[](const std::string& key);  // inserts into a dict, like std::map
  bool contains(const std::string& key) const;

  // ---- Flattening ------------------------------------------------------------------------
  size_t num_leaves() const;
  std::vector<Tensor> leaves() const;
  // One "a/b/c" path per leaf, in leaf order (a leaf at the root has path "").
  std::vector<std::string> paths() const;
  // The same structure with `leaves` (in leaf order) in place of this tree's leaves.
  Tree with_leaves(std::span<const Tensor> leaves) const;
  // True when both trees have the same lists, dict keys and number of leaves in the same
  // places (shapes and dtypes are not compared).
  bool same_structure(const Tree& other) const;

  // f applied to every leaf.
  Tree map(const std::function<Tensor(const Tensor&)>& f) const;

  // Structure with each leaf's dtype and shape, e.g. {kernel: float32[4, 64], bias: float32[64]}.
  std::string to_string() const;

 private:
  std::variant<List, Tensor, Dict> node_;
};

// f applied to matching leaves of a and b; throws ctrax::Error naming the first path where the
// structures differ.
Tree tree_map(const std::function<Tensor(const Tensor&, const Tensor&)>& f, const Tree& a, const Tree& b);
// Throws ctrax::Error naming `what` and the first place where the structures differ.
void require_same_structure(const Tree& a, const Tree& b, const char* what);

std::ostream& operator<<(std::ostream& out, const Tree& tree);

// Makes `tree` hold the values of `leaves` (in the leaf order of `structure`) in tensors its
// holder owns, listed in `owned`: copied into them in place when `owned` matches (the same count,
// each the same shape, dtype and device), else into fresh copies that `tree` and `owned` then
// hold. An empty `owned` means the holder owns none: clear it when the tree's tensors go to
// someone else, or come from someone. Returns true when the tree was rebuilt. For state that a
// compiled function returns in its output buffers, which its next call rewrites
// (tensor/compile.h): the holder keeps the values, with no allocation in steady state.
bool keep_owned_leaves(Tree& tree, std::vector<Tensor>& owned, const Tree& structure, std::span<const Tensor> leaves);

}  // namespace ctrax
