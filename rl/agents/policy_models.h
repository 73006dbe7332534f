// Policy networks sized by their action space or distribution: the RL heads of layers/models.h
// (Policy, PolicyAndValue) with the distribution's n_inputs() outputs, for the distribution given
// or for create_distribution(actions) (Categorical(n) for Discrete(n), a Gaussian with a fixed std
// for a Box), so that nobody counts outputs by hand (Trax's Policy takes the distribution the same
// way, SB3 its action space). The other arguments are those of the int forms in layers/models.h,
// which stay for hand-made heads. A distribution with state-independent inputs (a Gaussian with
// LearnStd::state_independent) gets a head for the others and those as LearnedColumns after it
// (zeros at the start), inside a Serial of the same name.
#pragma once

#include "../../layers/models.h"
#include "../learning/distributions.h"
#include "../environments/space.h"

namespace ctrax {

LayerPtr Policy(const Space& actions, LayerFactory body = nullptr, LayerFactory normalizer = nullptr,
                double head_init_range = 0.0);
LayerPtr Policy(const Space& actions, LayerFactory body, LayerFactory normalizer, const Initializer& head_init);
LayerPtr Policy(const Distribution& distribution, LayerFactory body = nullptr, LayerFactory normalizer = nullptr,
                double head_init_range = 0.0);
LayerPtr Policy(const Distribution& distribution, LayerFactory body, LayerFactory normalizer,
                const Initializer& head_init);

LayerPtr PolicyAndValue(const Space& actions, LayerFactory body = nullptr, LayerFactory normalizer = nullptr,
                        double head_init_range = 0.0, bool joint = true);
LayerPtr PolicyAndValue(const Space& actions, LayerFactory body, LayerFactory normalizer,
                        const Initializer& policy_head_init, const Initializer& value_head_init);
LayerPtr PolicyAndValue(const Distribution& distribution, LayerFactory body = nullptr,
                        LayerFactory normalizer = nullptr, double head_init_range = 0.0, bool joint = true);
LayerPtr PolicyAndValue(const Distribution& distribution, LayerFactory body, LayerFactory normalizer,
                        const Initializer& policy_head_init, const Initializer& value_head_init);

}  // namespace ctrax
