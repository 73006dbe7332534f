// Model builders (see models.h).
#include "models.h"

#include "../base/error.h"
#include "../tensor/ops.h"
#include "combinators.h"
#include "core.h"
#include "embedding_dropout.h"

namespace ctrax {

LayerPtr MLP(const std::vector<int64_t>& widths, LayerFactory activation, const MLPOptions& options) {
  if (!activation) activation = [] { return Relu(); };
  CTRAX_REQUIRE(options.kernel_init && options.bias_init, "MLP: the kernel and bias initializers must be set");
  DenseOptions dense;
  dense.kernel_init = options.kernel_init;
  dense.bias_init = options.bias_init;
  std::vector<LayerPtr> layers;
  for (size_t i = 0; i < widths.size(); ++i) {
    CTRAX_REQUIRE(widths[i] >= 1, "MLP: width ", i, " is ", widths[i], " (expected >= 1)");
    layers.push_back(Dense(widths[i], dense));
    if (i + 1 < widths.size() || options.out_activation) layers.push_back(activation());
  }
  return Serial(std::move(layers), "MLP");
}

namespace {
LayerPtr head(int64_t n, const Initializer& kernel_init) {
  DenseOptions options;
  CTRAX_REQUIRE(static_cast<bool>(kernel_init), "the head's kernel initializer is empty");
  options.kernel_init = kernel_init;
  options.bias_init = constant_init(0.0);
  return Dense(n, options);
}
LayerPtr head(int64_t n, double init_range) {
  DenseOptions options;
  if (init_range > 0.0) options.kernel_init = uniform_init(-init_range, init_range);
  return Dense(n, options);
}
void add_front(std::vector<LayerPtr>& layers, const LayerFactory& normalizer, const LayerFactory& body) {
  if (normalizer) layers.push_back(normalizer());
  if (body) layers.push_back(body());
}
LayerPtr value_head(LayerPtr dense) {
  return Serial({std::move(dense), Fn("SqueezeLast", [](const Tensor& x) { return x.squeeze(-1); })}, "ValueHead");
}
LayerPtr value_head(double init_range) { return value_head(head(1, init_range)); }
}  // namespace

LayerPtr Policy(int64_t n_distribution_inputs, LayerFactory body, LayerFactory normalizer, double head_init_range) {
  CTRAX_REQUIRE(n_distribution_inputs >= 1, "Policy: n_distribution_inputs must be >= 1, got ", n_distribution_inputs);
  std::vector<LayerPtr> layers;
  add_front(layers, normalizer, body);
  layers.push_back(head(n_distribution_inputs, head_init_range));
  return Serial(std::move(layers), "Policy");
}

LayerPtr Policy(int64_t n_distribution_inputs, LayerFactory body, LayerFactory normalizer,
                const Initializer& head_init) {
  CTRAX_REQUIRE(n_distribution_inputs >= 1, "Policy: n_distribution_inputs must be >= 1, got ", n_distribution_inputs);
  std::vector<LayerPtr> layers;
  add_front(layers, normalizer, body);
  layers.push_back(head(n_distribution_inputs, head_init));
  return Serial(std::move(layers), "Policy");
}

LayerPtr Value(LayerFactory body, LayerFactory normalizer, const Initializer& head_init) {
  std::vector<LayerPtr> layers;
  add_front(layers, normalizer, body);
  layers.push_back(value_head(head(1, head_init)));
  return Serial(std::move(layers), "Value");
}

LayerPtr Value(LayerFactory body, LayerFactory normalizer, double head_init_range) {
  std::vector<LayerPtr> layers;
  add_front(layers, normalizer, body);
  layers.push_back(value_head(head_init_range));
  return Serial(std::move(layers), "Value");
}

LayerPtr ActionValue(LayerFactory body, bool is_discrete, int64_t vocab_size, int64_t injection_dim,
                     LayerFactory normalizer, double head_init_range, int64_t injection_layers) {
  CTRAX_REQUIRE(!is_discrete || vocab_size >= 1, "ActionValue: vocab_size must be >= 1, got ", vocab_size);
  CTRAX_REQUIRE(injection_dim >= 1, "ActionValue: injection_dim must be >= 1, got ", injection_dim);
  CTRAX_REQUIRE(injection_layers >= 1, "ActionValue: injection_layers must be >= 1, got ", injection_layers,
                " (without a layer after the sum, Q(s, a) = f(s) + g(a) ranks the actions alike in every state)");
  std::vector<LayerPtr> layers;
  add_front(layers, normalizer, body);
  LayerPtr encoder = is_discrete ? Embedding(vocab_size, injection_dim) : Dense(injection_dim);
  layers.push_back(Parallel({Dense(injection_dim), std::move(encoder)}, "Encode"));
  // Plain addition would broadcast [B, L, dim] against, say, [B, L, 1, dim] (continuous actions
  // given one axis too many) into a silently wrong Q; the shapes must agree exactly.
  layers.push_back(Fn("InjectActions", [is_discrete](const Tensor& s, const Tensor& a) -> Tensor {
    CTRAX_REQUIRE(s.shape() == a.shape(), "ActionValue: the observation features are ", to_string(s.shape()),
                  " but the action features are ", to_string(a.shape()), "; actions must be ",
                  is_discrete ? "[B, L] integer ids" : "[B, L, d] floats", " for observations [B, L, ...]");
    return s + a;
  }));
  const std::vector<int64_t> widths(static_cast<size_t>(injection_layers), injection_dim);
  layers.push_back(MLP(widths, [] { return Relu(); }, {.out_activation = true}));
  layers.push_back(value_head(head_init_range));
  return Serial(std::move(layers), "ActionValue");
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

LayerPtr PolicyAndValue(int64_t n_distribution_inputs, LayerFactory body, LayerFactory normalizer,
                        const Initializer& policy_head_init, const Initializer& value_head_init) {
  CTRAX_REQUIRE(n_distribution_inputs >= 1, "PolicyAndValue: n_distribution_inputs must be >= 1, got ",
                n_distribution_inputs);
  std::vector<LayerPtr> layers;
  add_front(layers, normalizer, body);
  layers.push_back(Branch({head(n_distribution_inputs, policy_head_init), value_head(head(1, value_head_init))},
                          "Heads"));
  return Serial(std::move(layers), "PolicyAndValue");
}

}  // namespace ctrax
