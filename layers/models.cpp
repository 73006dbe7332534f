// Model builders (see models.h).
#include "models.h"

#include "../kernels/check.h"
#include "combinators.h"
#include "core.h"

namespace ctrax {

LayerPtr MLP(const std::vector<int64_t>& widths, LayerFactory activation, bool out_activation) {
  if (!activation) activation = [] { return Relu(); };
  std::vector<LayerPtr> layers;
  for (size_t i = 0; i < widths.size(); ++i) {
    CTRAX_REQUIRE(widths[i] >= 1, "MLP: width ", i, " is ", widths[i], " (expected >= 1)");
    layers.push_back(Dense(widths[i]));
    if (i + 1 < widths.size() || out_activation) layers.push_back(activation());
  }
  return Serial(std::move(layers), "MLP");
}

namespace {
LayerPtr head(int64_t n, double init_range) {
  DenseOptions options;
  if (init_range > 0.0) options.kernel_init = uniform_init(-init_range, init_range);
  return Dense(n, options);
}
void add_front(std::vector<LayerPtr>& layers, const LayerFactory& normalizer, const LayerFactory& body) {
  if (normalizer) layers.push_back(normalizer());
  if (body) layers.push_back(body());
}
LayerPtr value_head(double init_range) {
  return Serial({head(1, init_range), Fn("SqueezeLast", [](const Tensor& x) { return x.squeeze(-1); })}, "ValueHead");
}
}  // namespace

LayerPtr Policy(int64_t n_distribution_inputs, LayerFactory body, LayerFactory normalizer, double head_init_range) {
  CTRAX_REQUIRE(n_distribution_inputs >= 1, "Policy: n_distribution_inputs must be >= 1, got ", n_distribution_inputs);
  std::vector<LayerPtr> layers;
  add_front(layers, normalizer, body);
  layers.push_back(head(n_distribution_inputs, head_init_range));
  return Serial(std::move(layers), "Policy");
}

LayerPtr Value(LayerFactory body, LayerFactory normalizer, double head_init_range) {
  std::vector<LayerPtr> layers;
  add_front(layers, normalizer, body);
  layers.push_back(value_head(head_init_range));
  return Serial(std::move(layers), "Value");
}

LayerPtr PolicyAndValue(int64_t n_distribution_inputs, LayerFactory body, LayerFactory normalizer,
                        double head_init_range, bool joint) {
  CTRAX_REQUIRE(n_distribution_inputs >= 1, "PolicyAndValue: n_distribution_inputs must be >= 1, got ",
                n_distribution_inputs);
  if (!joint)
    return Branch({Policy(n_distribution_inputs, body, normalizer, head_init_range),
                   Value(body, normalizer, head_init_range)},
                  "PolicyAndValue");
  std::vector<LayerPtr> layers;
  add_front(layers, normalizer, body);
  layers.push_back(Branch({head(n_distribution_inputs, head_init_range), value_head(head_init_range)}, "Heads"));
  return Serial(std::move(layers), "PolicyAndValue");
}

}  // namespace ctrax
