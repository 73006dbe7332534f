// Tree: nested lists and dicts of tensors.
#include <doctest/doctest.h>

#include <ctrax/tensor/ops.h>
#include <ctrax/tensor/tree.h>

#include "../test_util.h"

using namespace ctrax;
using test::check_error;

TEST_CASE("Tree: leaves in depth-first order, dict keys sorted, paths") {
  Tree t;
  t["z"] = tensor({1.0f});
  t["a"] = Tree{tensor({2.0f}), Tree{tensor({3.0f}), Tree()}};
  CHECK(t.is_dict());
  CHECK(t.size() == 2);
  CHECK(t.num_leaves() == 3);
  const std::vector<Tensor> leaves = t.leaves();
  REQUIRE(leaves.size() == 3);
  CHECK(leaves[0].item<float>() == 2.0f);  // "a" sorts before "z"
  CHECK(leaves[1].item<float>() == 3.0f);
  CHECK(leaves[2].item<float>() == 1.0f);
  CHECK(t.paths() == std::vector<std::string>{"a/0", "a/1/0", "z"});
  CHECK(t.to_string() == "{a: (float32[1], (float32[1], ())), z: float32[1]}");
  CHECK(Tree().num_leaves() == 0);
  CHECK(Tree(tensor({1.0})).paths() == std::vector<std::string>{""});
}

TEST_CASE("Tree: with_leaves, map and tree_map keep the structure") {
  Tree t = Tree{tensor({1.0, 2.0}), Tree::Dict{{"b", tensor({3.0})}}};
  const Tree doubled = t.map([](const Tensor& x) { return mul(x, 2.0); });
  CHECK(doubled.same_structure(t));
  CHECK(doubled[1]["b"].leaf().item<double>() == 6.0);
  const Tree summed = tree_map([](const Tensor& a, const Tensor& b) { return add(a, b); }, t, doubled);
  CHECK(summed[0].leaf().to_vector<double>() == std::vector<double>{3.0, 6.0});
  const std::vector<Tensor> replacement{tensor({7.0}), tensor({8.0})};
  const Tree replaced = t.with_leaves(replacement);
  CHECK(replaced[1]["b"].leaf().item<double>() == 8.0);
  // Copies share tensor handles, not data: the original is untouched.
  CHECK(t[0].leaf().to_vector<double>() == std::vector<double>{1.0, 2.0});
}

TEST_CASE("Tree: misuse names what was wrong") {
  Tree list = Tree{tensor({1.0})};
  Tree dict;
  dict["w"] = tensor({1.0});
  check_error([&] { (void)list.leaf(); }, {"Tree::leaf", "a list"});
  check_error([&] { (void)dict.list(); }, {"Tree::list", "a dict"});
  check_error([&] { (void)list[3]; }, {"index 3", "1 items"});
  check_error([&] { (void)static_cast<const Tree&>(dict)["missing"]; }, {"no key 'missing'"});
  check_error([&] { (void)list.with_leaves(std::vector<Tensor>{}); }, {"has 1 leaves", "got 0"});
  Tree other;
  other["v"] = tensor({1.0});
  check_error([&] { tree_map([](const Tensor& a, const Tensor&) { return a; }, dict, other); },
              {"tree_map", "keys 'w' and 'v'"});
  check_error([&] { require_same_structure(list, Tree{tensor({1.0}), tensor({2.0})}, "update"); },
              {"update", "lists of 1 and 2 items"});
  check_error([&] { require_same_structure(list, dict, "update"); }, {"one is a list and the other a dict"});
  CHECK_FALSE(list.same_structure(dict));
}
