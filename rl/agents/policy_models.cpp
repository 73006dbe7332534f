// Policy networks sized by their action space or distribution (see policy_models.h).
#include "policy_models.h"

#include <string>
#include <utility>
#include <vector>

#include "../../layers/combinators.h"
#include "../../layers/core.h"

namespace ctrax {

namespace {
int64_t width_for(const Space& actions) { return create_distribution(actions)->n_inputs(); }

// The head's outputs: the distribution's inputs less those it learns independently of the state.
int64_t head_width(const Distribution& distribution) {
  return distribution.n_inputs() - distribution.n_state_independent_inputs();
}

// The model, with the state-independent inputs appended after the distribution inputs (the
// first output) as one learned vector, zeros at the start. A Serial (Policy, the joint
// PolicyAndValue) gets it as one more item of its own list, so its top-level items stay the
// normaliser, the body and the heads, in that order (n_shared_layers copies them by position);
// the separate PolicyAndValue (a Branch) is wrapped.
LayerPtr with_state_independent_inputs(LayerPtr model, const Distribution& distribution, bool two_outputs,
                                       bool is_serial) {
  const int64_t n = distribution.n_state_independent_inputs();
  if (n == 0) return model;
  LayerPtr columns = two_outputs ? Parallel({LearnedColumns(n), nullptr}) : LearnedColumns(n);
  std::vector<LayerPtr> items;
  if (is_serial) items = model->sublayers();
  else items.push_back(model);
  items.push_back(std::move(columns));
  return Serial(std::move(items), model->name());
}
}  // namespace

LayerPtr Policy(const Space& actions, LayerFactory body, LayerFactory normalizer, double head_init_range) {
  return Policy(width_for(actions), std::move(body), std::move(normalizer), head_init_range);
}
LayerPtr Policy(const Space& actions, LayerFactory body, LayerFactory normalizer, const Initializer& head_init) {
  return Policy(width_for(actions), std::move(body), std::move(normalizer), head_init);
}
LayerPtr Policy(const Distribution& distribution, LayerFactory body, LayerFactory normalizer, double head_init_range) {
  return with_state_independent_inputs(
      Policy(head_width(distribution), std::move(body), std::move(normalizer), head_init_range), distribution, false,
      true);
}
LayerPtr Policy(const Distribution& distribution, LayerFactory body, LayerFactory normalizer,
                const Initializer& head_init) {
  return with_state_independent_inputs(
      Policy(head_width(distribution), std::move(body), std::move(normalizer), head_init), distribution, false, true);
}

LayerPtr PolicyAndValue(const Space& actions, LayerFactory body, LayerFactory normalizer, double head_init_range,
                        bool joint) {
  return PolicyAndValue(width_for(actions), std::move(body), std::move(normalizer), head_init_range, joint);
}
LayerPtr PolicyAndValue(const Space& actions, LayerFactory body, LayerFactory normalizer,
                        const Initializer& policy_head_init, const Initializer& value_head_init) {
  return PolicyAndValue(width_for(actions), std::move(body), std::move(normalizer), policy_head_init, value_head_init);
}
LayerPtr PolicyAndValue(const Distribution& distribution, LayerFactory body, LayerFactory normalizer,
                        double head_init_range, bool joint) {
  return with_state_independent_inputs(
      PolicyAndValue(head_width(distribution), std::move(body), std::move(normalizer), head_init_range, joint),
      distribution, true, joint);
}
LayerPtr PolicyAndValue(const Distribution& distribution, LayerFactory body, LayerFactory normalizer,
                        const Initializer& policy_head_init, const Initializer& value_head_init) {
  return with_state_independent_inputs(PolicyAndValue(head_width(distribution), std::move(body), std::move(normalizer),
                                                      policy_head_init, value_head_init),
                                       distribution, true, true);
}

}  // namespace ctrax
