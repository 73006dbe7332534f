// Policy heads sized by their action space or distribution (rl/agents/policy_models.h).
#include <doctest/doctest.h>

#include <ctrax/ctrax.h>

using namespace ctrax;

namespace {

// The shapes of the model's outputs on a [2, 5, 4] batch of observations.
std::vector<Shape> output_shapes(const LayerPtr& model) {
  const Tensor obs = normal(Key(1), {2, 5, 4});
  const auto [weights, state] = model->init({{obs.shape(), obs.dtype()}}, Key(2));
  std::vector<Shape> shapes;
  for (const Tensor& t : model->apply({obs}, weights, state, Key(), Mode::eval).outputs) shapes.push_back(t.shape());
  return shapes;
}

LayerFactory body() {
  return [] { return MLP({8}, Tanh, {.out_activation = true}); };
}

}  // namespace

TEST_CASE("Policy built from a Discrete(3) space has 3 outputs, from a Box(2) space 2") {
  CHECK(output_shapes(Policy(Space::discrete(3), body())) == std::vector<Shape>{Shape{2, 5, 3}});
  CHECK(output_shapes(Policy(Space::box(Shape{2}, -1.0, 1.0), body())) == std::vector<Shape>{Shape{2, 5, 2}});
  CHECK(output_shapes(Policy(Space::discrete(3), body(), nullptr, orthogonal(0.01))) ==
        std::vector<Shape>{Shape{2, 5, 3}});
}

TEST_CASE("Policy built from a distribution has its n_inputs outputs: a Gaussian that learns its std") {
  const Gaussian learned(Shape{2}, 1.0, LearnStd::separate);
  REQUIRE(learned.n_inputs() == 4);
  CHECK(output_shapes(Policy(learned, body())) == std::vector<Shape>{Shape{2, 5, 4}});
}

TEST_CASE("PolicyAndValue built from a space gives the distribution inputs and one value per step") {
  CHECK(output_shapes(PolicyAndValue(Space::discrete(3), body())) == std::vector<Shape>{Shape{2, 5, 3}, Shape{2, 5}});
  const Gaussian shared(Shape{2}, 1.0, LearnStd::shared);
  CHECK(output_shapes(PolicyAndValue(shared, body(), nullptr, orthogonal(0.01), orthogonal(1.0))) ==
        std::vector<Shape>{Shape{2, 5, 3}, Shape{2, 5}});
}

TEST_CASE("A state-independent std is one learned vector after the head, the same for every state") {
  const Gaussian independent(Shape{2}, 2.0, LearnStd::state_independent);
  REQUIRE(independent.n_inputs() == 4);
  const Tensor obs = normal(Key(1), {2, 5, 4});
  for (bool joint : {true, false}) {
    for (const LayerPtr& model : {Policy(independent, body()), Policy(independent, body(), nullptr, orthogonal(0.01)),
                                  PolicyAndValue(independent, body(), nullptr, 0.0, joint),
                                  PolicyAndValue(independent, body(), nullptr, orthogonal(0.01), orthogonal(1.0))}) {
      INFO(model->name());
      const bool two_outputs = model->n_out() == 2;
      CHECK(model->name() == (two_outputs ? "PolicyAndValue" : "Policy"));
      const auto initialized = model->init({{obs.shape(), obs.dtype()}}, Key(2));
      const Tree& weights = initialized.first;  // (not a structured binding: a lambda below captures it)
      const Tree& state = initialized.second;
      const Stack out = model->apply({obs}, weights, state, Key(), Mode::eval).outputs;
      REQUIRE(out[0].shape() == Shape{2, 5, 4});
      if (two_outputs) CHECK(out[1].shape() == Shape{2, 5});
      // The last two columns start at zero on every row, so the std starts at 2 everywhere.
      CHECK(max(abs(out[0].slice(-1, 2, 4))).item<double>() == 0.0);
      const auto [mean, stdev] = independent.mean_and_std(out[0]);
      CHECK(min(stdev).item<double>() == 2.0);
      CHECK(max(stdev).item<double>() == 2.0);
      // The means depend on the observation, the log stds on nothing: a gradient reaches the
      // learned vector as the sum over every row's.
      const auto r = value_and_grad(
          [&](const Tree& w) { return sum(model->apply({obs}, w, state, Key(), Mode::eval).outputs[0]); })(weights);
      // The last item of the top-level Serial: LearnedColumns, or Parallel(LearnedColumns, identity).
      const Tree& last = r.grad[r.grad.size() - 1];
      const Tree& columns = two_outputs ? last[0] : last;
      CHECK(columns["columns"].leaf().to_vector<double>() == std::vector<double>{10.0, 10.0});
    }
  }
}
