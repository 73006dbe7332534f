// Spaces: the sets observations and actions live in (Gymnasium's spaces).
//
// What it is for: describing an environment's observations and actions, so that trainers pick
// a distribution (rl/learning/distributions.h: Discrete -> Categorical, Box -> Gaussian), random
// policies sample actions, and environments check the actions they are given.
// What it is not for: Gymnasium's composite spaces (Dict, Tuple, Sequence, Graph) or Text;
// ctrax's built-in environments and trainers need none of them.
//
//   Discrete(n)            integers {0, ..., n - 1}; a sample is an int64 scalar.
//   MultiDiscrete(nvec)    integer vectors x with 0 <= x[i] < nvec[i]; int64 of shape [k].
//   Box(low, high)         float tensors with low <= x <= high elementwise (bounds may be
//                          infinite); the dtype and shape of the bounds.
//
// Sampling follows Gymnasium's Box.sample: uniform on dimensions bounded on both sides, a
// shifted exponential on half-bounded ones and a standard normal on unbounded ones; it draws
// from a ctrax Key, so it is reproducible but not the same numbers as NumPy's generator.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../../tensor/random.h"
#include "../../tensor/tensor.h"

namespace ctrax {

class Space {
 public:
  enum class Kind { discrete, multi_discrete, box };

  // n >= 1.
  static Space discrete(int64_t n);
  // Every nvec[i] >= 1; at least one entry.
  static Space multi_discrete(std::vector<int64_t> nvec);
  // low and high: same shape, the same float dtype, low <= high, no NaN.
  static Space box(Tensor low, Tensor high);
  // Bounds low and high broadcast to `shape`.
  static Space box(const Shape& shape, double low, double high, DType dtype = DType::float32);

  Kind kind() const { return kind_; }
  // Shape of one element: [] for Discrete, [k] for MultiDiscrete, the bounds' shape for Box.
  const Shape& shape() const { return shape_; }
  // int64 for the discrete kinds, the bounds' dtype for Box.
  DType dtype() const { return dtype_; }
  // Discrete: the number of values (ctrax::Error for other kinds).
  int64_t n() const;
  // MultiDiscrete: the number of values of each entry (ctrax::Error for other kinds).
  const std::vector<int64_t>& nvec() const;
  // Box: the bounds (ctrax::Error for other kinds).
  const Tensor& low() const;
  const Tensor& high() const;
  // Box: whether every dimension is bounded on both sides.
  bool is_bounded() const;

  // One random element.
  Tensor sample(Key key) const;
  // `count` random elements stacked on a new leading axis.
  Tensor sample(Key key, int64_t count) const;
  // Whether x is an element: the shape and the kind of dtype match (any integer dtype for the
  // discrete kinds, any float dtype for Box) and every entry is within bounds.
  bool contains(const Tensor& x) const;

  // "Discrete(2)", "MultiDiscrete([3, 3])", "Box(float32[4], low -4.8..., high ...)".
  std::string to_string() const;
  bool operator==(const Space& other) const;

 private:
  Space() = default;
  Kind kind_ = Kind::discrete;
  Shape shape_;
  DType dtype_ = DType::int64;
  std::vector<int64_t> nvec_;  // Discrete: {n}
  Tensor low_, high_;
};

std::ostream& operator<<(std::ostream& out, const Space& space);

}  // namespace ctrax
