// Policy networks sized by their action space or distribution (see policy_models.h).
#include "policy_models.h"

#include <utility>

namespace ctrax {

namespace {
int64_t width_for(const Space& actions) { return create_distribution(actions)->n_inputs(); }
}  // namespace

LayerPtr Policy(const Space& actions, LayerFactory body, LayerFactory normalizer, double head_init_range) {
  return Policy(width_for(actions), std::move(body), std::move(normalizer), head_init_range);
}
LayerPtr Policy(const Space& actions, LayerFactory body, LayerFactory normalizer, const Initializer& head_init) {
  return Policy(width_for(actions), std::move(body), std::move(normalizer), head_init);
}
LayerPtr Policy(const Distribution& distribution, LayerFactory body, LayerFactory normalizer, double head_init_range) {
  return Policy(distribution.n_inputs(), std::move(body), std::move(normalizer), head_init_range);
}
LayerPtr Policy(const Distribution& distribution, LayerFactory body, LayerFactory normalizer,
                const Initializer& head_init) {
  return Policy(distribution.n_inputs(), std::move(body), std::move(normalizer), head_init);
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
  return PolicyAndValue(distribution.n_inputs(), std::move(body), std::move(normalizer), head_init_range, joint);
}
LayerPtr PolicyAndValue(const Distribution& distribution, LayerFactory body, LayerFactory normalizer,
                        const Initializer& policy_head_init, const Initializer& value_head_init) {
  return PolicyAndValue(distribution.n_inputs(), std::move(body), std::move(normalizer), policy_head_init,
                        value_head_init);
}

}  // namespace ctrax
