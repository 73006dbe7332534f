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
