// Weight initializers (see initializers.h).
#include "initializers.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "../base/error.h"

namespace ctrax {

std::pair<double, double> fans(const Shape& shape) {
  CTRAX_REQUIRE(shape.rank() >= 1, "initializer: needs a shape of rank >= 1, got ", shape);
  if (shape.rank() == 1) return {double(shape[0]), double(shape[0])};
  double receptive = 1.0;
  for (int i = 0; i < shape.rank() - 2; ++i) receptive *= double(shape[i]);
  return {double(shape[shape.rank() - 2]) * receptive, double(shape[shape.rank() - 1]) * receptive};
}

namespace {
// Uniform on [-sqrt(3 v), sqrt(3 v)] or N(0, v), with v = scale / denominator(fans).
Initializer variance_scaling(double scale, int mode, bool uniform) {
  return [=](Key rng, const Shape& shape, DType dtype) {
    const auto [fan_in, fan_out] = fans(shape);
    const double denominator = mode == 0 ? fan_in : (fan_in + fan_out) / 2.0;
    CTRAX_REQUIRE(denominator > 0, "initializer: shape ", shape, " has a zero fan");
    const double variance = scale / denominator;
    if (uniform) {
      const double limit = std::sqrt(3.0 * variance);
      return ctrax::uniform(rng, shape, dtype, -limit, limit);
    }
    return ctrax::normal(rng, shape, dtype, 0.0, std::sqrt(variance));
  };
}
}  // namespace

// glorot: scale 1 over the average fan, i.e. 2 / (fan_in + fan_out).
Initializer glorot_uniform() { return variance_scaling(1.0, 1, true); }
Initializer glorot_normal() { return variance_scaling(1.0, 1, false); }
Initializer he_uniform() { return variance_scaling(2.0, 0, true); }
Initializer he_normal() { return variance_scaling(2.0, 0, false); }
Initializer lecun_uniform() { return variance_scaling(1.0, 0, true); }
Initializer lecun_normal() { return variance_scaling(1.0, 0, false); }

Initializer orthogonal(double gain) {
  return [gain](Key rng, const Shape& shape, DType dtype) {
    CTRAX_REQUIRE(shape.rank() >= 2, "orthogonal: needs a shape of rank >= 2, got ", shape);
    const int64_t cols = shape.back(), rows = shape.numel() / std::max<int64_t>(cols, 1);
    // Orthonormalise the vectors along the shorter side: n vectors of length m.
    const bool by_columns = rows >= cols;
    const int64_t n = by_columns ? cols : rows, m = by_columns ? rows : cols;
    const std::vector<double> a = ctrax::normal(rng, Shape{rows, cols}, DType::float64).to_vector<double>();
    std::vector<double> q(static_cast<size_t>(n * m));  // vector j is q[j * m .. j * m + m)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < m; ++i) q[j * m + i] = by_columns ? a[i * cols + j] : a[j * cols + i];
    for (int64_t j = 0; j < n; ++j) {
      double* v = &q[j * m];
      for (int pass = 0; pass < 2; ++pass) {  // "twice is enough" (Kahan, Parlett)
        for (int64_t k = 0; k < j; ++k) {
          const double* u = &q[k * m];
          double dot = 0.0;
          for (int64_t i = 0; i < m; ++i) dot += u[i] * v[i];
          for (int64_t i = 0; i < m; ++i) v[i] -= dot * u[i];
        }
      }
      double norm = 0.0;
      for (int64_t i = 0; i < m; ++i) norm += v[i] * v[i];
      norm = std::sqrt(norm);
      CTRAX_CHECK(norm > 0.0, "orthogonal: a degenerate normal sample");
      for (int64_t i = 0; i < m; ++i) v[i] /= norm;
    }
    std::vector<double> out(static_cast<size_t>(rows * cols));
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < m; ++i) (by_columns ? out[i * cols + j] : out[j * cols + i]) = gain * q[j * m + i];
    return from_vector(out, shape).to(dtype);
  };
}

Initializer constant_init(double value) {
  return [value](Key, const Shape& shape, DType dtype) { return full(shape, value, dtype); };
}

Initializer uniform_init(double lo, double hi) {
  CTRAX_REQUIRE(lo <= hi, "uniform_init: lo (", lo, ") must be <= hi (", hi, ")");
  return [lo, hi](Key rng, const Shape& shape, DType dtype) { return ctrax::uniform(rng, shape, dtype, lo, hi); };
}

Initializer normal_init(double stddev) {
  CTRAX_REQUIRE(stddev >= 0, "normal_init: stddev must be >= 0, got ", stddev);
  return [stddev](Key rng, const Shape& shape, DType dtype) { return ctrax::normal(rng, shape, dtype, 0.0, stddev); };
}

}  // namespace ctrax
