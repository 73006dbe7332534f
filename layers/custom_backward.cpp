// WithCustomBackward (see custom_backward.h), built on autograd's custom_gradient.
#include "custom_backward.h"

#include "../autograd/custom.h"
#include "../base/error.h"

namespace ctrax {

namespace {

class CustomBackwardLayer final : public Layer {
 public:
  CustomBackwardLayer(LayerPtr layer, LayerBackward backward)
      : Layer(layer->name(), layer->n_in(), layer->n_out(), {layer}), backward_(std::move(backward)) {}

 protected:
  std::pair<Tree, Tree> init_weights_and_state(const Signature& input, Key rng, LayerPass& pass) override {
    return Layer::init_in_pass(*sublayers()[0], input, rng, pass, sublayers()[0]->name() + "[0]");
  }

  LayerResult forward(const Stack& inputs, const Tree& weights, const Tree& state, Key rng, Mode mode,
                      LayerPass& pass) const override {
    const Layer& inner = *sublayers()[0];
    const size_t n_in = inputs.size();
    std::vector<Tensor> all = inputs;
    const std::vector<Tensor> leaves = weights.leaves();
    all.insert(all.end(), leaves.begin(), leaves.end());
    Tree new_state;
    const std::vector<Tensor> outputs = custom_gradient(
        all,
        [&](const std::vector<Tensor>& in) {
          const Stack x(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(n_in));
          const std::vector<Tensor> w(in.begin() + static_cast<std::ptrdiff_t>(n_in), in.end());
          LayerResult r = Layer::apply_in_pass(inner, x, weights.with_leaves(w), state, rng, mode, pass,
                                               inner.name() + "[0]");
          new_state = std::move(r.state);
          return std::move(r.outputs);
        },
        [backward = backward_, weights, n_in](const CustomGradContext& c) {
          const Stack x(c.inputs.begin(), c.inputs.begin() + static_cast<std::ptrdiff_t>(n_in));
          const std::vector<Tensor> w(c.inputs.begin() + static_cast<std::ptrdiff_t>(n_in), c.inputs.end());
          const Tree w_tree = weights.with_leaves(w);
          const Stack outs(c.outputs.begin(), c.outputs.end()), grads(c.output_grads.begin(), c.output_grads.end());
          LayerGrads g = backward(LayerGradContext{x, w_tree, outs, grads});
          CTRAX_REQUIRE(g.inputs.size() == n_in, "WithCustomBackward: the backward returned ", g.inputs.size(),
                        " input gradients for ", n_in, " inputs");
          std::vector<Tensor> flat = g.inputs;
          if (g.weights.num_leaves() == 0 && w.empty()) return flat;
          require_same_structure(g.weights, w_tree, "WithCustomBackward: the weights' gradient");
          const std::vector<Tensor> gw = g.weights.leaves();
          flat.insert(flat.end(), gw.begin(), gw.end());
          return flat;
        });
    return {outputs, new_state};
  }

 private:
  LayerBackward backward_;
};

}  // namespace

LayerPtr WithCustomBackward(LayerPtr layer, LayerBackward backward) {
  CTRAX_REQUIRE(layer != nullptr && backward != nullptr, "WithCustomBackward: the layer and the backward must be set");
  return std::make_shared<CustomBackwardLayer>(std::move(layer), std::move(backward));
}

}  // namespace ctrax
