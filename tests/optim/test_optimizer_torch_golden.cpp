// ctrax's optimizers against PyTorch's: five steps of fixed gradients through Adam, AdamW,
// RMSprop, SGD with momentum (Nesterov and not) and plain SGD, comparing the weights after
// every step. The fixture tests/fixtures/optimizers_golden.json is written by
// tests/fixtures/torch_optimizers.py (run by hand), which also documents which ctrax options
// make each rule PyTorch's; the options are read from the fixture.
//
// float64 must agree to 1e-9 relative: the formulas are the same up to the order of a few
// roundings (ctrax multiplies by 1 / sqrt(c2) where PyTorch divides by sqrt(c2)). float32 runs
// the same steps from the rounded inputs and must stay within 1e-5 relative (plus 1e-6 absolute).
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <ctrax/optim/adam.h>
#include <ctrax/optim/momentum.h>
#include <ctrax/optim/rmsprop.h>
#include <ctrax/optim/sgd.h>
#include <ctrax/tensor/ops.h>

#include "../test_util.h"

namespace {

using ctrax::DType;
using ctrax::Shape;
using ctrax::Tensor;
using ctrax::Tree;
using nlohmann::json;

const std::string kFixturePath = std::string(CTRAX_FIXTURES_DIR) + "/optimizers_golden.json";

// The parsed fixture; a missing or unreadable file is a failure, never a skip.
const json& fixture() {
  static const json doc = [] {
    std::ifstream in(kFixturePath);
    if (!in) return json();
    return json::parse(in, nullptr, /*allow_exceptions=*/false);
  }();
  return doc;
}

Shape shape_of(const json& j) {
  std::vector<int64_t> dims;
  for (const json& d : j) dims.push_back(d.get<int64_t>());
  return Shape(dims);
}

// {bias, kernel} from a fixture object of flat value lists.
Tree tree_of(const json& values, DType dtype) {
  const json& shapes = fixture().at("shapes");
  Tree::Dict d;
  for (const auto& [name, shape] : shapes.items())
    d[name] = Tree(ctrax::from_vector(values.at(name).get<std::vector<double>>(), shape_of(shape)).to(dtype));
  return Tree(std::move(d));
}

std::unique_ptr<ctrax::Optimizer> make_optimizer(const std::string& kind, const json& o) {
  if (kind == "Adam") {
    ctrax::AdamOptions a;
    a.learning_rate = o.at("learning_rate").get<double>();
    a.b1 = o.at("b1");
    a.b2 = o.at("b2");
    a.eps = o.at("eps");
    a.weight_decay_rate = o.at("weight_decay_rate");
    return std::make_unique<ctrax::Adam>(a);
  }
  if (kind == "AdamW") {
    ctrax::AdamWOptions a;
    a.learning_rate = o.at("learning_rate").get<double>();
    a.b1 = o.at("b1");
    a.b2 = o.at("b2");
    a.eps = o.at("eps");
    a.weight_decay = o.at("weight_decay");
    return std::make_unique<ctrax::AdamW>(a);
  }
  if (kind == "RMSProp") {
    ctrax::RMSPropOptions r;
    r.learning_rate = o.at("learning_rate").get<double>();
    r.gamma = o.at("gamma");
    r.eps = o.at("eps");
    r.initial_mean_square = o.at("initial_mean_square");
    return std::make_unique<ctrax::RMSProp>(r);
  }
  if (kind == "Momentum") {
    ctrax::MomentumOptions m;
    m.learning_rate = o.at("learning_rate").get<double>();
    m.mass = o.at("mass");
    m.weight_decay_rate = o.at("weight_decay_rate");
    m.nesterov = o.at("nesterov");
    return std::make_unique<ctrax::Momentum>(m);
  }
  REQUIRE_MESSAGE(kind == "SGD", "unknown optimizer in the fixture: " << kind);
  ctrax::SGDOptions s;
  s.learning_rate = o.at("learning_rate").get<double>();
  return std::make_unique<ctrax::SGD>(s);
}

void replay(const std::string& name, DType dtype) {
  const json& doc = fixture();
  const bool valid = doc.is_object() && doc.contains("cases");
  REQUIRE_MESSAGE(valid,
                  "the golden fixture " << kFixturePath
                                        << " is missing or invalid: regenerate it with python3 tests/fixtures/torch_optimizers.py");
  const json& c = doc.at("cases").at(name);
  INFO("case " << name << " in " << dtype);
  const std::unique_ptr<ctrax::Optimizer> opt = make_optimizer(c.at("optimizer"), c.at("options"));
  const double lr = c.at("options").at("learning_rate");
  const ctrax::test::Tolerance tol =
      dtype == DType::float64 ? ctrax::test::Tolerance{1e-12, 1e-9} : ctrax::test::Tolerance{1e-6, 1e-5};
  Tree weights = tree_of(doc.at("initial"), dtype);
  Tree slots = opt->init(weights);
  const json& steps = c.at("weights");
  REQUIRE(steps.size() == doc.at("gradients").size());
  for (size_t t = 0; t < steps.size(); ++t) {
    INFO("step " << t);
    opt->update(static_cast<int64_t>(t), lr, tree_of(doc.at("gradients")[t], dtype), weights, slots);
    for (const auto& [leaf, values] : steps[t].items())
      ctrax::test::check_close(weights[leaf].leaf(), weights[leaf].leaf().shape(), values.get<std::vector<double>>(),
                               tol, leaf);
  }
}

const char* const kCases[] = {"adam_trax_eps", "adam_torch_eps", "adamw",          "rmsprop",
                              "momentum_nesterov", "momentum_plain", "sgd"};

}  // namespace

TEST_CASE("Optimizers replay PyTorch's steps in float64") {
  for (const char* name : kCases) replay(name, DType::float64);
}

TEST_CASE("Optimizers replay PyTorch's steps in float32 within float32 rounding") {
  for (const char* name : kCases) replay(name, DType::float32);
}

TEST_CASE("The PyTorch fixture covers every case the test replays") {
  const json& doc = fixture();
  REQUIRE(doc.is_object());
  CHECK(doc.at("cases").size() == std::size(kCases));
  for (const char* name : kCases) CHECK(doc.at("cases").contains(name));
}
