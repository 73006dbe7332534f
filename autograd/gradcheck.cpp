// gradcheck (see gradcheck.h).
#include "gradcheck.h"

#include <cmath>
#include <sstream>

#include "../base/error.h"
#include "../tensor/ops.h"
#include "../tensor/random.h"
#include "tape.h"

namespace ctrax {

namespace {
// sum(v * y) in float64, y computed without recording.
double project(const GradcheckFn& f, const std::vector<Tensor>& xs, const Tensor& v) {
  NoGradScope no_grad;
  const Tensor y = f(xs);
  return sum(mul(y.to(DType::float64), v)).item<double>();
}
}  // namespace

GradcheckResult gradcheck(const GradcheckFn& f, const std::vector<Tensor>& inputs, const GradcheckOptions& options) {
  CTRAX_REQUIRE(options.eps > 0.0, "gradcheck: eps must be positive, got ", options.eps);
  std::vector<Tensor> xs;
  std::vector<size_t> checked;
  for (size_t i = 0; i < inputs.size(); ++i) {
    CTRAX_REQUIRE(inputs[i].defined(), "gradcheck: input ", i, " is undefined");
    if (is_floating(inputs[i].dtype())) {
      xs.push_back(inputs[i].to(DType::float64).clone());
      checked.push_back(i);
    } else {
      xs.push_back(inputs[i]);
    }
  }
  CTRAX_REQUIRE(!checked.empty(), "gradcheck: no float input to check");

  // Autodiff: the vector-Jacobian product with a random cotangent.
  std::vector<Tensor> analytic;
  Tensor v;
  {
    GradientTape tape;
    std::vector<Tensor> watched = xs;
    std::vector<Tensor> sources;
    for (size_t i : checked) {
      watched[i] = tape.watch(xs[i]);
      sources.push_back(watched[i]);
    }
    const Tensor y = f(watched);
    CTRAX_REQUIRE(y.defined() && is_floating(y.dtype()), "gradcheck: f must return a float tensor");
    v = normal(Key(options.seed), y.shape(), DType::float64);
    analytic = tape.gradient(y, sources, v.to(y.dtype()));
  }

  GradcheckResult result;
  for (size_t c = 0; c < checked.size(); ++c) {
    const size_t i = checked[c];
    const Tensor a = analytic[c].to(DType::float64).contiguous();
    const double* ad = a.data<double>();
    double* x = xs[i].data<double>();
    for (int64_t j = 0; j < xs[i].numel(); ++j) {
      const double saved = x[j];
      x[j] = saved + options.eps;
      const double plus = project(f, xs, v);
      x[j] = saved - options.eps;
      const double minus = project(f, xs, v);
      x[j] = saved;
      const double numeric = (plus - minus) / (2.0 * options.eps);
      const double err = std::abs(ad[j] - numeric);
      const double rel = err / std::max(std::abs(numeric), 1e-12);
      if (err > result.max_abs_error) {
        result.max_abs_error = err;
        result.max_rel_error = rel;
      }
      const bool bad = !(err <= options.atol + options.rtol * std::abs(numeric));  // NaN fails
      if (bad && result.ok) {
        result.ok = false;
        std::ostringstream m;
        m << "gradcheck: input " << i << " (" << inputs[i].dtype() << inputs[i].shape() << "), flat element " << j
          << ": autodiff gives " << ad[j] << ", central differences " << numeric << " (error " << err << ")";
        result.message = m.str();
      }
    }
  }
  if (result.ok) result.message = "ok";
  return result;
}

}  // namespace ctrax
