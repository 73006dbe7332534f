// Shape: the dimensions (or strides) of a tensor, held inline.
//
// What it is for: a small fixed-capacity vector of int64 (rank 0 to 8) so that making a
// tensor or a view never allocates for its shape, plus the shape arithmetic every op
// needs: element counts, contiguous strides, axis normalisation and NumPy broadcasting.
//
// What it is not for: anything about data. Strides are counted in elements, not bytes.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <string>
#include <vector>

namespace ctrax {

inline constexpr int kMaxRank = 8;

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims);
  explicit Shape(const std::vector<int64_t>& dims);
  Shape(const int64_t* dims, int rank);
  static Shape filled(int rank, int64_t value) {
    if (rank < 0 || rank > kMaxRank) throw_bad_rank(rank);
    Shape s;
    for (int i = 0; i < rank; ++i) s.dims_[i] = value;
    s.rank_ = rank;
    return s;
  }

  int rank() const { return rank_; }
  int size() const { return rank_; }
  bool empty() const { return rank_ == 0; }
  int64_t operator[](int i) const { return dims_[i]; }
  int64_t& operator[](int i) { return dims_[i]; }
  const int64_t* begin() const { return dims_.data(); }
  const int64_t* end() const { return dims_.data() + rank_; }
  int64_t* begin() { return dims_.data(); }
  int64_t* end() { return dims_.data() + rank_; }
  const int64_t* data() const { return dims_.data(); }
  int64_t back() const { return dims_[rank_ - 1]; }

  void push_back(int64_t d);  // throws ctrax::Error beyond kMaxRank
  void insert(int position, int64_t d);
  void erase(int position);
  std::vector<int64_t> vec() const { return {begin(), end()}; }

  // Product of the dimensions (1 for rank 0).
  int64_t numel() const;

  bool operator==(const Shape& other) const;
  bool operator!=(const Shape& other) const { return !(*this == other); }

 private:
  [[noreturn]] static void throw_bad_rank(int rank);
  std::array<int64_t, kMaxRank> dims_{};
  int rank_ = 0;
};

std::ostream& operator<<(std::ostream& out, const Shape& shape);
std::string to_string(const Shape& shape);

// Row-major strides (in elements) of a contiguous tensor of this shape.
inline Shape contiguous_strides(const Shape& shape) {
  Shape strides = Shape::filled(shape.rank(), 1);
  int64_t running = 1;
  for (int i = shape.rank() - 1; i >= 0; --i) {
    strides[i] = running;
    running *= shape[i] > 0 ? shape[i] : 1;
  }
  return strides;
}

// Maps axis in [-rank, rank) to [0, rank); throws ctrax::Error naming `op` otherwise.
int normalize_axis(int axis, int rank, const char* op);

// NumPy broadcasting of two shapes: align on the right; each pair of dims must be equal
// or one of them 1. Throws ctrax::Error naming `op` and both shapes otherwise.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

}  // namespace ctrax
