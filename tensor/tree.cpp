// Tree: nested lists and dicts of tensors (see tree.h).
#include "tree.h"

#include <sstream>

namespace ctrax {

namespace {
const char* kind_name(const Tree& t) { return t.is_leaf() ? "a leaf" : t.is_list() ? "a list" : "a dict"; }

void collect(const Tree& t, std::vector<Tensor>& out) {
  if (t.is_leaf()) out.push_back(t.leaf());
  else if (t.is_list())
    for (const Tree& c : t.list()) collect(c, out);
  else
    for (const auto& [k, c] : t.dict()) collect(c, out);
}

std::string join(const std::string& prefix, const std::string& part) { return prefix.empty() ? part : prefix + "/" + part; }

void collect_paths(const Tree& t, const std::string& prefix, std::vector<std::string>& out) {
  if (t.is_leaf()) {
    out.push_back(prefix);
  } else if (t.is_list()) {
    for (size_t i = 0; i < t.list().size(); ++i) collect_paths(t.list()[i], join(prefix, std::to_string(i)), out);
  } else {
    for (const auto& [k, c] : t.dict()) collect_paths(c, join(prefix, k), out);
  }
}

Tree rebuild(const Tree& t, std::span<const Tensor> leaves, size_t& pos) {
  if (t.is_leaf()) return Tree(leaves[pos++]);
  if (t.is_list()) {
    Tree::List items;
    items.reserve(t.list().size());
    for (const Tree& c : t.list()) items.push_back(rebuild(c, leaves, pos));
    return Tree(std::move(items));
  }
  Tree::Dict items;
  for (const auto& [k, c] : t.dict()) items.emplace(k, rebuild(c, leaves, pos));
  return Tree(std::move(items));
}

// The first path at which a and b differ, with what differs; empty when they match.
std::string first_difference(const Tree& a, const Tree& b, const std::string& path) {
  const std::string where = path.empty() ? "the root" : "'" + path + "'";
  if (a.is_leaf() != b.is_leaf() || a.is_list() != b.is_list())
    return "at " + where + " one is " + kind_name(a) + " and the other " + kind_name(b);
  if (a.is_leaf()) return "";
  if (a.is_list()) {
    if (a.list().size() != b.list().size())
      return "at " + where + " lists of " + std::to_string(a.list().size()) + " and " +
             std::to_string(b.list().size()) + " items";
    for (size_t i = 0; i < a.list().size(); ++i) {
      std::string d = first_difference(a.list()[i], b.list()[i], join(path, std::to_string(i)));
      if (!d.empty()) return d;
    }
    return "";
  }
  auto ia = a.dict().begin(), ib = b.dict().begin();
  for (; ia != a.dict().end() && ib != b.dict().end(); ++ia, ++ib) {
    if (ia->first != ib->first) return "at " + where + " keys '" + ia->first + "' and '" + ib->first + "'";
    std::string d = first_difference(ia->second, ib->second, join(path, ia->first));
    if (!d.empty()) return d;
  }
  if (ia != a.dict().end()) return "at " + where + " key '" + ia->first + "' is only in the first";
  if (ib != b.dict().end()) return "at " + where + " key '" + ib->first + "' is only in the second";
  return "";
}

void print(std::ostream& out, const Tree& t) {
  if (t.is_leaf()) {
    const Tensor& x = t.leaf();
    if (!x.defined()) out << "undefined";
    else out << x.dtype() << x.shape();
  } else if (t.is_list()) {
    out << "(";
    for (size_t i = 0; i < t.list().size(); ++i) {
      if (i) out << ", ";
      print(out, t.list()[i]);
    }
    out << ")";
  } else {
    out << "{";
    bool first = true;
    for (const auto& [k, c] : t.dict()) {
      if (!first) out << ", ";
      first = false;
      out << k << ": ";
      print(out, c);
    }
    out << "}";
  }
}
}  // namespace

size_t Tree::size() const {
  if (is_leaf()) return 1;
  return is_list() ? list().size() : dict().size();
}

const Tensor& Tree::leaf() const {
  CTRAX_REQUIRE(is_leaf(), "Tree::leaf: the tree is ", kind_name(*this), ", not a leaf");
  return std::get<Tensor>(node_);
}
Tensor& Tree::leaf() {
  CTRAX_REQUIRE(is_leaf(), "Tree::leaf: the tree is ", kind_name(*this), ", not a leaf");
  return std::get<Tensor>(node_);
}
const Tree::List& Tree::list() const {
  CTRAX_REQUIRE(is_list(), "Tree::list: the tree is ", kind_name(*this), ", not a list");
  return std::get<List>(node_);
}
Tree::List& Tree::list() {
  CTRAX_REQUIRE(is_list(), "Tree::list: the tree is ", kind_name(*this), ", not a list");
  return std::get<List>(node_);
}
const Tree::Dict& Tree::dict() const {
  CTRAX_REQUIRE(is_dict(), "Tree::dict: the tree is ", kind_name(*this), ", not a dict");
  return std::get<Dict>(node_);
}
Tree::Dict& Tree::dict() {
  CTRAX_REQUIRE(is_dict(), "Tree::dict: the tree is ", kind_name(*this), ", not a dict");
  return std::get<Dict>(node_);
}

const Tree& Tree::operator[](size_t index) const {
  const List& l = list();
  CTRAX_REQUIRE(index < l.size(), "Tree: index ", index, " is out of range for a list of ", l.size(), " items");
  return l[index];
}
Tree& Tree::operator[](size_t index) {
  List& l = list();
  CTRAX_REQUIRE(index < l.size(), "Tree: index ", index, " is out of range for a list of ", l.size(), " items");
  return l[index];
}
const Tree& Tree::operator[](const std::string& key) const {
  const Dict& d = dict();
  const auto it = d.find(key);
  CTRAX_REQUIRE(it != d.end(), "Tree: no key '", key, "' in ", *this);
  return it->second;
}
Tree& Tree::operator[](const std::string& key) {
  if (is_list() && list().empty()) node_ = Dict{};  // an empty tree becomes a dict on first insert
  return dict()[key];
}
bool Tree::contains(const std::string& key) const { return is_dict() && dict().count(key) > 0; }

size_t Tree::num_leaves() const {
  if (is_leaf()) return 1;
  size_t n = 0;
  if (is_list())
    for (const Tree& c : list()) n += c.num_leaves();
  else
    for (const auto& [k, c] : dict()) n += c.num_leaves();
  return n;
}

std::vector<Tensor> Tree::leaves() const {
  std::vector<Tensor> out;
  collect(*this, out);
  return out;
}

std::vector<std::string> Tree::paths() const {
  std::vector<std::string> out;
  collect_paths(*this, "", out);
  return out;
}

Tree Tree::with_leaves(std::span<const Tensor> leaves) const {
  const size_t n = num_leaves();
  CTRAX_REQUIRE(leaves.size() == n, "Tree::with_leaves: the tree has ", n, " leaves, got ", leaves.size(),
                " tensors");
  size_t pos = 0;
  return rebuild(*this, leaves, pos);
}

bool Tree::same_structure(const Tree& other) const { return first_difference(*this, other, "").empty(); }

Tree Tree::map(const std::function<Tensor(const Tensor&)>& f) const {
  std::vector<Tensor> ls = leaves();
  for (Tensor& t : ls) t = f(t);
  return with_leaves(ls);
}

std::string Tree::to_string() const {
  std::ostringstream out;
  print(out, *this);
  return out.str();
}

void require_same_structure(const Tree& a, const Tree& b, const char* what) {
  const std::string d = first_difference(a, b, "");
  CTRAX_REQUIRE(d.empty(), what, ": the trees differ in structure: ", d, " (", a, " vs ", b, ")");
}

Tree tree_map(const std::function<Tensor(const Tensor&, const Tensor&)>& f, const Tree& a, const Tree& b) {
  require_same_structure(a, b, "tree_map");
  std::vector<Tensor> la = a.leaves();
  const std::vector<Tensor> lb = b.leaves();
  for (size_t i = 0; i < la.size(); ++i) la[i] = f(la[i], lb[i]);
  return a.with_leaves(la);
}

bool keep_owned_leaves(Tree& tree, std::vector<Tensor>& owned, const Tree& structure, std::span<const Tensor> leaves) {
  bool in_place = owned.size() == leaves.size();
  for (size_t i = 0; in_place && i < leaves.size(); ++i)
    in_place = owned[i].shape() == leaves[i].shape() && owned[i].dtype() == leaves[i].dtype() &&
               owned[i].device() == leaves[i].device();
  if (in_place) {
    for (size_t i = 0; i < leaves.size(); ++i) owned[i].copy_(leaves[i]);
    return false;
  }
  std::vector<Tensor> copies;
  copies.reserve(leaves.size());
  for (const Tensor& t : leaves) copies.push_back(t.clone());
  tree = structure.with_leaves(copies);
  owned = std::move(copies);
  return true;
}

std::ostream& operator<<(std::ostream& out, const Tree& tree) {
  print(out, tree);
  return out;
}

}  // namespace ctrax
