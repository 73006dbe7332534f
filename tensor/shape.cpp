#include "shape.h"

#include <sstream>

#include "../base/error.h"

namespace ctrax {

Shape::Shape(std::initializer_list<int64_t> dims) {
  CTRAX_REQUIRE(dims.size() <= kMaxRank, "Shape: rank ", dims.size(), " exceeds the maximum rank ", kMaxRank);
  for (int64_t d : dims) dims_[rank_++] = d;
}

Shape::Shape(const std::vector<int64_t>& dims) : Shape(dims.data(), static_cast<int>(dims.size())) {}

Shape::Shape(const int64_t* dims, int rank) {
  CTRAX_REQUIRE(rank >= 0 && rank <= kMaxRank, "Shape: rank ", rank, " is outside [0, ", kMaxRank, "]");
  for (int i = 0; i < rank; ++i) dims_[i] = dims[i];
  rank_ = rank;
}

void Shape::throw_bad_rank(int rank) {
  CTRAX_THROW("Shape: rank ", rank, " is outside [0, ", kMaxRank, "]");
}

void Shape::push_back(int64_t d) {
  CTRAX_REQUIRE(rank_ < kMaxRank, "Shape: cannot grow beyond the maximum rank ", kMaxRank);
  dims_[rank_++] = d;
}

void Shape::insert(int position, int64_t d) {
  CTRAX_REQUIRE(rank_ < kMaxRank, "Shape: cannot grow beyond the maximum rank ", kMaxRank);
  CTRAX_CHECK(position >= 0 && position <= rank_);
  for (int i = rank_; i > position; --i) dims_[i] = dims_[i - 1];
  dims_[position] = d;
  ++rank_;
}

void Shape::erase(int position) {
  CTRAX_CHECK(position >= 0 && position < rank_);
  for (int i = position; i + 1 < rank_; ++i) dims_[i] = dims_[i + 1];
  --rank_;
}

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int i = 0; i < rank_; ++i) n *= dims_[i];
  return n;
}

bool Shape::operator==(const Shape& other) const {
  if (rank_ != other.rank_) return false;
  for (int i = 0; i < rank_; ++i)
    if (dims_[i] != other.dims_[i]) return false;
  return true;
}

std::ostream& operator<<(std::ostream& out, const Shape& shape) {
  out << '[';
  for (int i = 0; i < shape.rank(); ++i) out << (i ? ", " : "") << shape[i];
  return out << ']';
}

std::string to_string(const Shape& shape) {
  std::ostringstream out;
  out << shape;
  return out.str();
}

int normalize_axis(int axis, int rank, const char* op) {
  // A rank-0 tensor accepts axis 0 and -1 only where an op treats it as one element; the
  // callers that allow that pass rank = max(rank, 1).
  CTRAX_REQUIRE(axis >= -rank && axis < rank, op, ": axis ", axis, " is out of range for a tensor of rank ",
                rank, " (expected an axis in [", -rank, ", ", rank - 1, "])");
  return axis < 0 ? axis + rank : axis;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const int rank = a.rank() > b.rank() ? a.rank() : b.rank();
  Shape out = Shape::filled(rank, 1);
  for (int i = 0; i < rank; ++i) {
    const int ia = a.rank() - rank + i, ib = b.rank() - rank + i;
    const int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    CTRAX_REQUIRE(da == db || da == 1 || db == 1, op, ": shapes ", a, " and ", b,
                  " cannot be broadcast together (dimension ", i - rank, " is ", da, " vs ", db,
                  "; expected equal sizes or 1)");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

}  // namespace ctrax
