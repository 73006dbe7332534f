// Golden values and gradients from PyTorch: composite functions (an MLP loss, cross-entropy,
// layer norm, GAE returns, the PPO objective, ...) built with ctrax ops and differentiated with
// value_and_grad, against torch.autograd on the same float64 inputs.
//
// gradcheck (test_op_gradients.cpp) checks each op against finite differences to ~1e-6; this
// checks whole functions against an independent implementation to ~1e-10, which catches what
// finite differences cannot: a subgradient convention that differs from PyTorch's, a gradient
// accumulated twice (or not at all) for a reused value, a wrong broadcast reduction.
//
// The fixture tests/fixtures/autograd_golden.json is written by tests/fixtures/torch_autograd.py
// (run by hand; the constants below are repeated there). Each function here must match the one
// of the same name in that script.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <ctrax/autograd/grad.h>
#include <ctrax/tensor/ops.h>

namespace {

using ctrax::Shape;
using ctrax::Tensor;
using Inputs = std::map<std::string, Tensor>;
using Function = Tensor (*)(const Inputs& floats, const Inputs& constants);

constexpr double kLayerNormEps = 1e-5;
constexpr double kGaeDiscount = 0.97;
constexpr double kPpoClip = 0.2;
constexpr double kRtol = 1e-10;
constexpr double kAtol = 1e-12;

// ---- the functions (same names and formulas as torch_autograd.py) ------------------------------

Tensor mlp_mse(const Inputs& p, const Inputs&) {
  const Tensor h = ctrax::tanh(ctrax::matmul(p.at("x"), p.at("w1")) + p.at("b1"));
  return ctrax::mean(ctrax::square(ctrax::matmul(h, p.at("w2")) + p.at("b2") - p.at("y")));
}

Tensor softmax_cross_entropy(const Inputs& p, const Inputs& c) {
  const Tensor picked = ctrax::take_along_axis(ctrax::log_softmax(p.at("logits"), -1), c.at("labels").unsqueeze(1), 1);
  return -ctrax::mean(picked);
}

Tensor reused_value(const Inputs& p, const Inputs&) {
  const Tensor& x = p.at("x");
  return ctrax::sum(x * x + ctrax::exp(x) * x);
}

Tensor layer_norm(const Inputs& p, const Inputs&) {
  const Tensor& x = p.at("x");
  const Tensor m = ctrax::mean(x, {-1}, true);
  const Tensor v = ctrax::var(x, {-1}, true, 0);
  const Tensor y = (x - m) / ctrax::sqrt(v + kLayerNormEps) * p.at("g") + p.at("b");
  return ctrax::sum(y * p.at("c"));
}

Tensor logsumexp_matmul(const Inputs& p, const Inputs&) {
  return ctrax::sum(ctrax::logsumexp(ctrax::matmul(p.at("a"), p.at("b")), {1}));
}

Tensor gae_returns(const Inputs& p, const Inputs&) {
  const Tensor returns = ctrax::discounted_cumsum(p.at("rewards"), 1, kGaeDiscount);
  return ctrax::mean(ctrax::square(returns - p.at("values")));
}

Tensor ppo_clip(const Inputs& p, const Inputs&) {
  const Tensor ratio = ctrax::exp(p.at("logp") - p.at("old_logp"));
  const Tensor clipped = ctrax::clip(ratio, 1.0 - kPpoClip, 1.0 + kPpoClip);
  const Tensor& adv = p.at("adv");
  return -ctrax::mean(ctrax::minimum(ratio * adv, clipped * adv));
}

Tensor gelu_softplus_sigmoid(const Inputs& p, const Inputs&) {
  const Tensor &x = p.at("x"), &w = p.at("w"), &b = p.at("b");
  const Tensor z = ctrax::gelu(x) * ctrax::sigmoid(w) + ctrax::softplus(x * w + b) - ctrax::gelu(x + b, true);
  return ctrax::mean(z);
}

Tensor max_min_reductions(const Inputs& p, const Inputs&) {
  const Tensor& x = p.at("x");
  return ctrax::sum(ctrax::max(x, {1})) - 0.5 * ctrax::sum(ctrax::min(x, {0})) + ctrax::max(x);
}

const std::map<std::string, Function>& functions() {
  static const std::map<std::string, Function> table = {
      {"mlp_mse", mlp_mse},
      {"softmax_cross_entropy", softmax_cross_entropy},
      {"reused_value", reused_value},
      {"layer_norm", layer_norm},
      {"logsumexp_matmul", logsumexp_matmul},
      {"gae_returns", gae_returns},
      {"ppo_clip", ppo_clip},
      {"gelu_softplus_sigmoid", gelu_softplus_sigmoid},
      {"max_min_reductions", max_min_reductions},
  };
  return table;
}

// ---- the fixture --------------------------------------------------------------------------------

const std::string kFixturePath = std::string(CTRAX_FIXTURES_DIR) + "/autograd_golden.json";

// The parsed fixture; a missing or unreadable file is a failure, never a skip.
const nlohmann::json& fixture() {
  static const nlohmann::json doc = [] {
    std::ifstream in(kFixturePath);
    if (!in) return nlohmann::json();
    return nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  }();
  return doc;
}

bool require_fixture() {
  const nlohmann::json& doc = fixture();
  const bool ok = doc.is_object() && doc.contains("functions");
  INFO("fixture " << kFixturePath);
  REQUIRE_MESSAGE(std::filesystem::exists(kFixturePath),
                  "the golden fixture is missing: regenerate it with python3 tests/fixtures/torch_autograd.py");
  REQUIRE_MESSAGE(ok, "the golden fixture is not valid JSON with a \"functions\" object: regenerate it with "
                      "python3 tests/fixtures/torch_autograd.py");
  return ok;
}

Shape shape_of(const nlohmann::json& j) {
  Shape s;
  for (const auto& d : j) s.push_back(d.get<int64_t>());
  return s;
}

Tensor tensor_of(const nlohmann::json& input) {
  const Shape shape = shape_of(input.at("shape"));
  const std::string dtype = input.at("dtype").get<std::string>();
  if (dtype == "float64") return ctrax::from_vector(input.at("values").get<std::vector<double>>(), shape);
  REQUIRE_MESSAGE(dtype == "int64", "unexpected input dtype in the fixture: " << dtype);
  return ctrax::from_vector(input.at("values").get<std::vector<int64_t>>(), shape);
}

// |actual - expected| <= atol + rtol |expected| for every element, and equal shapes.
void check_matches(const std::string& what, const Tensor& actual, const Shape& shape,
                   const std::vector<double>& expected) {
  INFO(what);
  REQUIRE(actual.defined());
  CHECK(actual.dtype() == ctrax::DType::float64);
  REQUIRE(actual.shape() == shape);
  const std::vector<double> got = actual.to_vector<double>();
  REQUIRE(got.size() == expected.size());
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::abs(got[i] - expected[i]);
    if (!(err <= kAtol + kRtol * std::abs(expected[i])) && bad++ < 5) {
      std::ostringstream msg;
      msg << std::setprecision(17) << "element " << i << ": ctrax " << got[i] << ", torch " << expected[i] << " (error "
          << err << ")";
      FAIL_CHECK(msg.str());
    }
  }
  CHECK_MESSAGE(bad == 0, bad << " of " << got.size() << " elements differ beyond " << kRtol << " relative, " << kAtol
                              << " absolute");
}

void check_function(const std::string& name) {
  if (!require_fixture()) return;
  const nlohmann::json& functions_json = fixture().at("functions");
  REQUIRE_MESSAGE(functions_json.contains(name),
                  "the fixture has no function " << name
                                                 << ": regenerate it with python3 tests/fixtures/torch_autograd.py");
  const nlohmann::json& spec = functions_json.at(name);
  Inputs floats, constants;
  std::map<std::string, Shape> shapes;
  for (const auto& input : spec.at("inputs")) {
    const std::string key = input.at("name").get<std::string>();
    Tensor t = tensor_of(input);
    shapes[key] = t.shape();
    (ctrax::is_floating(t.dtype()) ? floats : constants)[key] = t;
  }
  const Function f = functions().at(name);
  const auto result = ctrax::value_and_grad(f)(floats, constants);
  check_matches(name + ": value", result.value, shape_of(spec.at("output").at("shape")),
                spec.at("output").at("values").get<std::vector<double>>());
  const nlohmann::json& grads = spec.at("grads");
  CHECK(grads.size() == floats.size());
  for (const auto& entry : result.grad) {
    const std::string& key = entry.first;
    const Tensor& g = entry.second;
    REQUIRE_MESSAGE(grads.contains(key), "the fixture has no gradient for input " << key);
    check_matches(name + ": d/d" + key, g, shapes.at(key), grads.at(key).get<std::vector<double>>());
  }
}

}  // namespace

TEST_CASE("autograd golden: the fixture and this file list the same functions") {
  if (!require_fixture()) return;
  std::set<std::string> in_fixture, here;
  for (const auto& [name, spec] : fixture().at("functions").items()) in_fixture.insert(name);
  for (const auto& [name, f] : functions()) here.insert(name);
  CHECK(in_fixture == here);
  const nlohmann::json& c = fixture().at("constants");
  CHECK(c.at("layer_norm_eps").get<double>() == kLayerNormEps);
  CHECK(c.at("gae_discount").get<double>() == kGaeDiscount);
  CHECK(c.at("ppo_clip").get<double>() == kPpoClip);
}

TEST_CASE("autograd golden: MLP mean squared error") { check_function("mlp_mse"); }
TEST_CASE("autograd golden: softmax cross-entropy with integer labels") { check_function("softmax_cross_entropy"); }
TEST_CASE("autograd golden: a value used three times") { check_function("reused_value"); }
TEST_CASE("autograd golden: layer norm written out") { check_function("layer_norm"); }
TEST_CASE("autograd golden: logsumexp of a matmul") { check_function("logsumexp_matmul"); }
TEST_CASE("autograd golden: discounted returns regression") { check_function("gae_returns"); }
TEST_CASE("autograd golden: PPO clipped objective") { check_function("ppo_clip"); }
TEST_CASE("autograd golden: gelu, softplus and sigmoid with broadcasting") { check_function("gelu_softplus_sigmoid"); }
TEST_CASE("autograd golden: max and min reductions") { check_function("max_min_reductions"); }
