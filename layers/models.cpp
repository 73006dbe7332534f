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

}  // namespace ctrax
