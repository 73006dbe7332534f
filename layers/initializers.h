// Weight initializers: functions (rng, shape, dtype) -> tensor, as Trax's layers/initializers.py.
//
// Fans of a shape [..., fan_in, fan_out] (a Dense kernel is [in, out]; leading axes, as in
// convolution kernels, multiply both as the receptive field):
//   glorot (Xavier):  variance 2 / (fan_in + fan_out)   uniform limit sqrt(6 / (fan_in + fan_out))
//   he (Kaiming):     variance 2 / fan_in               uniform limit sqrt(6 / fan_in)
//   lecun:            variance 1 / fan_in               uniform limit sqrt(3 / fan_in)
// The normal variants draw N(0, variance) (untruncated).
//
// What it is not for: truncated normals (none is built) or data-dependent schemes (LSUV and
// the like): an initializer sees only (rng, shape, dtype).
#pragma once

#include <functional>

#include "../tensor/random.h"
#include "../tensor/tensor.h"

namespace ctrax {

using Initializer = std::function<Tensor(Key rng, const Shape& shape, DType dtype)>;

Initializer glorot_uniform();
Initializer glorot_normal();
Initializer he_uniform();
Initializer he_normal();
Initializer lecun_uniform();
Initializer lecun_normal();
// A (semi-)orthogonal matrix times `gain`: for a shape [..., rows, cols] flattened to
// [prod(...) * rows, cols], the columns (if rows >= cols) or rows are orthonormal. Made by
// Gram-Schmidt (each vector orthogonalised twice, for stability) on a normal sample: that is the
// Q of a QR factorisation with a positive diagonal, which is uniformly (Haar) distributed
// (Saxe et al. 2014; Trax's orthogonal_init does the same with a library QR).
Initializer orthogonal(double gain = 1.0);
Initializer constant_init(double value);
Initializer uniform_init(double lo, double hi);
Initializer normal_init(double stddev);

// (fan_in, fan_out) of a shape as above; rank-1 shapes have fan_in = fan_out = size.
std::pair<double, double> fans(const Shape& shape);

}  // namespace ctrax
