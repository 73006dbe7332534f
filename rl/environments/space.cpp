// Spaces (see space.h).
#include "space.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <ostream>
#include <sstream>

#include "../../base/error.h"

namespace ctrax {

namespace {

constexpr double kFloat32Max = std::numeric_limits<float>::max();

const char* kind_name(Space::Kind kind) {
  switch (kind) {
    case Space::Kind::discrete: return "Discrete";
    case Space::Kind::multi_discrete: return "MultiDiscrete";
    case Space::Kind::box: return "Box";
  }
  return "?";
}

// Bounds as one line: a single number when every entry is the same, else the list.
std::string bounds_string(const std::vector<double>& values) {
  std::ostringstream out;
  bool all_same = true;
  for (double v : values) all_same = all_same && v == values.front();
  if (all_same && !values.empty()) {
    out << values.front();
    return out.str();
  }
  out << '[';
  for (size_t i = 0; i < values.size(); ++i) out << (i ? ", " : "") << values[i];
  out << ']';
  return out.str();
}

}  // namespace

Space Space::discrete(int64_t n) {
  CTRAX_REQUIRE(n >= 1, "Space::discrete: n must be >= 1, got ", n);
  Space s;
  s.kind_ = Kind::discrete;
  s.shape_ = Shape{};
  s.dtype_ = DType::int64;
  s.nvec_ = {n};
  return s;
}

Space Space::multi_discrete(std::vector<int64_t> nvec) {
  CTRAX_REQUIRE(!nvec.empty(), "Space::multi_discrete: nvec is empty (expected at least one entry)");
  for (size_t i = 0; i < nvec.size(); ++i)
    CTRAX_REQUIRE(nvec[i] >= 1, "Space::multi_discrete: nvec[", i, "] must be >= 1, got ", nvec[i]);
  Space s;
  s.kind_ = Kind::multi_discrete;
  s.shape_ = Shape{static_cast<int64_t>(nvec.size())};
  s.dtype_ = DType::int64;
  s.nvec_ = std::move(nvec);
  return s;
}

Space Space::box(Tensor low, Tensor high) {
  CTRAX_REQUIRE(low.defined() && high.defined(), "Space::box: a bound is an undefined tensor");
  CTRAX_REQUIRE(low.shape() == high.shape(), "Space::box: low has shape ", low.shape(), " but high has shape ",
                high.shape(), " (expected the same)");
  CTRAX_REQUIRE(low.dtype() == high.dtype(), "Space::box: low has dtype ", low.dtype(), " but high has dtype ",
                high.dtype(), " (expected the same)");
  CTRAX_REQUIRE(is_floating(low.dtype()), "Space::box: bounds have dtype ", low.dtype(),
                " (expected float32 or float64)");
  const std::vector<double> lo = low.to_vector<double>(), hi = high.to_vector<double>();
  for (size_t i = 0; i < lo.size(); ++i) {
    CTRAX_REQUIRE(!std::isnan(lo[i]) && !std::isnan(hi[i]), "Space::box: bound ", i, " is NaN");
    CTRAX_REQUIRE(lo[i] <= hi[i], "Space::box: low[", i, "] = ", lo[i], " > high[", i, "] = ", hi[i]);
    // A box whose only "element" is +inf or -inf holds no float.
    CTRAX_REQUIRE(lo[i] < std::numeric_limits<double>::infinity() &&
                      hi[i] > -std::numeric_limits<double>::infinity(),
                  "Space::box: dimension ", i, " has bounds [", lo[i], ", ", hi[i], "], which contain no finite value");
  }
  Space s;
  s.kind_ = Kind::box;
  s.shape_ = low.shape();
  s.dtype_ = low.dtype();
  // Own contiguous CPU copies, so later writes to the caller's tensors cannot change the space.
  s.low_ = low.to(Device::cpu()).clone();
  s.high_ = high.to(Device::cpu()).clone();
  return s;
}

Space Space::box(const Shape& shape, double low, double high, DType dtype) {
  CTRAX_REQUIRE(is_floating(dtype), "Space::box: dtype ", dtype, " is not float32 or float64");
  for (int64_t d : shape) CTRAX_REQUIRE(d >= 0, "Space::box: shape ", shape, " has a negative dimension");
  return box(full(shape, low, dtype), full(shape, high, dtype));
}

int64_t Space::n() const {
  CTRAX_REQUIRE(kind_ == Kind::discrete, "Space::n: only a Discrete space has n; this is ", to_string());
  return nvec_.front();
}

const std::vector<int64_t>& Space::nvec() const {
  CTRAX_REQUIRE(kind_ == Kind::multi_discrete, "Space::nvec: only a MultiDiscrete space has nvec; this is ",
                to_string());
  return nvec_;
}

const Tensor& Space::low() const {
  CTRAX_REQUIRE(kind_ == Kind::box, "Space::low: only a Box has bounds; this is ", to_string());
  return low_;
}

const Tensor& Space::high() const {
  CTRAX_REQUIRE(kind_ == Kind::box, "Space::high: only a Box has bounds; this is ", to_string());
  return high_;
}

bool Space::is_bounded() const {
  CTRAX_REQUIRE(kind_ == Kind::box, "Space::is_bounded: only a Box has bounds; this is ", to_string());
  for (double v : low_.to_vector<double>())
    if (!std::isfinite(v)) return false;
  for (double v : high_.to_vector<double>())
    if (!std::isfinite(v)) return false;
  return true;
}

Tensor Space::sample(Key key) const { return sample(key, 1).reshape(shape_); }

Tensor Space::sample(Key key, int64_t count) const {
  CTRAX_REQUIRE(count >= 0, "Space::sample: count must be >= 0, got ", count);
  Shape out_shape = shape_;
  out_shape.insert(0, count);
  switch (kind_) {
    case Kind::discrete: return randint(key, out_shape, 0, nvec_.front());
    case Kind::multi_discrete: {
      // Entry i of every sample comes from its own key, so each is exactly uniform on [0, nvec[i]).
      Tensor out(out_shape, DType::int64);
      int64_t* data = out.data<int64_t>();
      const int64_t k = static_cast<int64_t>(nvec_.size());
      for (int64_t i = 0; i < k; ++i) {
        const std::vector<int64_t> column =
            randint(fold_in(key, static_cast<uint64_t>(i)), Shape{count}, 0, nvec_[static_cast<size_t>(i)])
                .to_vector<int64_t>();
        for (int64_t j = 0; j < count; ++j) data[j * k + i] = column[static_cast<size_t>(j)];
      }
      return out;
    }
    case Kind::box: {
      // Gymnasium's Box.sample: uniform on [low, high) where both bounds are finite,
      // low + Exp(1) or high - Exp(1) where one is, N(0, 1) where neither is. One uniform u
      // per element serves both the uniform and (as -log(1 - u)) the exponential draws.
      const auto [k_uniform, k_normal] = split(key);
      const std::vector<double> u = uniform(k_uniform, out_shape, DType::float64).to_vector<double>();
      const std::vector<double> z = normal(k_normal, out_shape, DType::float64).to_vector<double>();
      const std::vector<double> lo = low_.to_vector<double>(), hi = high_.to_vector<double>();
      std::vector<double> values(u.size());
      const size_t per_sample = lo.size();
      for (size_t e = 0; e < values.size(); ++e) {
        const size_t d = e % per_sample;
        const bool has_lo = std::isfinite(lo[d]), has_hi = std::isfinite(hi[d]);
        if (has_lo && has_hi) values[e] = lo[d] + u[e] * (hi[d] - lo[d]);
        else if (has_lo) values[e] = lo[d] - std::log1p(-u[e]);
        else if (has_hi) values[e] = hi[d] + std::log1p(-u[e]);
        else values[e] = z[e];
        // Rounding can step just past a bound; the element must stay in the space (and, for
        // float32, in its finite range). Rounding to float32 is monotone and both bounds are
        // float32 values, so the rounded element stays inside as well.
        values[e] = std::min(std::max(values[e], lo[d]), hi[d]);
        if (dtype_ == DType::float32)
          values[e] = std::min(std::max(values[e], -kFloat32Max), kFloat32Max);
      }
      Tensor out = from_vector(values, out_shape).to(dtype_);
      return out;
    }
  }
  CTRAX_CHECK(false, "unknown space kind");
  return Tensor();
}

bool Space::contains(const Tensor& x) const {
  if (!x.defined() || x.shape() != shape_) return false;
  switch (kind_) {
    case Kind::discrete: {
      if (!is_integer(x.dtype())) return false;
      const int64_t v = x.item<int64_t>();
      return v >= 0 && v < nvec_.front();
    }
    case Kind::multi_discrete: {
      if (!is_integer(x.dtype())) return false;
      const std::vector<int64_t> v = x.to_vector<int64_t>();
      for (size_t i = 0; i < v.size(); ++i)
        if (v[i] < 0 || v[i] >= nvec_[i]) return false;
      return true;
    }
    case Kind::box: {
      if (!is_floating(x.dtype())) return false;
      const std::vector<double> v = x.to_vector<double>();
      const std::vector<double> lo = low_.to_vector<double>(), hi = high_.to_vector<double>();
      for (size_t i = 0; i < v.size(); ++i)
        if (!(v[i] >= lo[i] && v[i] <= hi[i])) return false;  // NaN fails both
      return true;
    }
  }
  return false;
}

std::string Space::to_string() const {
  std::ostringstream out;
  out << kind_name(kind_) << '(';
  switch (kind_) {
    case Kind::discrete: out << nvec_.front(); break;
    case Kind::multi_discrete:
      out << '[';
      for (size_t i = 0; i < nvec_.size(); ++i) out << (i ? ", " : "") << nvec_[i];
      out << ']';
      break;
    case Kind::box:
      out << dtype_name(dtype_) << shape_ << ", low " << bounds_string(low_.to_vector<double>()) << ", high "
          << bounds_string(high_.to_vector<double>());
      break;
  }
  out << ')';
  return out.str();
}

bool Space::operator==(const Space& other) const {
  if (kind_ != other.kind_ || shape_ != other.shape_ || dtype_ != other.dtype_ || nvec_ != other.nvec_) return false;
  if (kind_ != Kind::box) return true;
  return low_.to_vector<double>() == other.low_.to_vector<double>() &&
         high_.to_vector<double>() == other.high_.to_vector<double>();
}

std::ostream& operator<<(std::ostream& out, const Space& space) { return out << space.to_string(); }

}  // namespace ctrax
