// Printing tensors: Tensor::to_string() and operator<<.
//
// What it is for: a NumPy-repr-like, human-readable picture of a tensor for logs, test
// failures and the REPL-style examples:
//
//   tensor([[1.0000, 2.5000],
//           [3.0000, 4.0000]], dtype=float32, shape=[2, 2])
//
// The format (one rule set for every tensor):
//   - floats: 4 decimals, fixed ("%.4f"), or scientific ("%.4e") when the finite nonzero
//     magnitudes span a range fixed notation would garble: max >= 1e8, min < 1e-4 or
//     max / min > 1e3 (NumPy's rule). Non-finite values are nan, inf and -inf.
//   - integers plain; bools true / false.
//   - every element is right-aligned to the widest one shown, so columns line up.
//   - rows wider than 80 columns wrap; sub-arrays are separated by one line per level
//     of nesting beyond the innermost (as NumPy).
//   - more than 1000 elements: each axis longer than 6 shows its first and last 3 entries
//     with "..." between (NumPy's summarisation); the format is chosen from the shown values.
//   - rank 0 prints the bare value, an empty tensor prints [], an undefined one
//     tensor(undefined).
//
// What it is not for: serialisation (values are rounded; nothing parses this back).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

#include "tensor.h"

namespace ctrax {

namespace {

constexpr int64_t kSummariseAbove = 1000;  // elements
constexpr int64_t kEdgeItems = 3;          // shown at each end of a summarised axis
constexpr int kLineWidth = 80;
constexpr int kPrefixWidth = 7;  // "tensor("

// Indices of `size` shown along an axis; -1 stands for the "..." gap.
std::vector<int64_t> shown_indices(int64_t size, bool summarise) {
  std::vector<int64_t> indices;
  if (summarise && size > 2 * kEdgeItems) {
    for (int64_t i = 0; i < kEdgeItems; ++i) indices.push_back(i);
    indices.push_back(-1);
    for (int64_t i = size - kEdgeItems; i < size; ++i) indices.push_back(i);
  } else {
    for (int64_t i = 0; i < size; ++i) indices.push_back(i);
  }
  return indices;
}

// Appends, in row-major order, the flat (contiguous) index of every shown element.
void collect_shown(const Shape& shape, const std::vector<std::vector<int64_t>>& shown, int dim, int64_t base,
                   std::vector<int64_t>& flat) {
  if (dim == shape.rank()) {
    flat.push_back(base);
    return;
  }
  for (int64_t i : shown[dim])
    if (i >= 0) collect_shown(shape, shown, dim + 1, base * shape[dim] + i, flat);
}

std::string format_number(const char* format, double value) {
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

// Formats the values with one shared notation (see the top of the file).
std::vector<std::string> format_floats(const std::vector<double>& values) {
  double max_abs = 0.0, min_nonzero = 0.0;
  bool any_nonzero = false;
  for (double v : values) {
    if (!std::isfinite(v) || v == 0.0) continue;
    const double a = std::fabs(v);
    max_abs = std::max(max_abs, a);
    min_nonzero = any_nonzero ? std::min(min_nonzero, a) : a;
    any_nonzero = true;
  }
  const bool scientific = any_nonzero && (max_abs >= 1e8 || min_nonzero < 1e-4 || max_abs / min_nonzero > 1e3);
  std::vector<std::string> out;
  out.reserve(values.size());
  for (double v : values) {
    if (std::isnan(v)) out.push_back("nan");
    else if (std::isinf(v)) out.push_back(v > 0 ? "inf" : "-inf");
    else out.push_back(format_number(scientific ? "%.4e" : "%.4f", v));
  }
  return out;
}

// The shown elements of contiguous tensor `t`, formatted, in row-major order.
std::vector<std::string> format_elements(const Tensor& t, const std::vector<int64_t>& flat) {
  std::vector<std::string> out;
  out.reserve(flat.size());
  dispatch_dtype(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* data = static_cast<const T*>(t.raw_data());
    if constexpr (std::is_floating_point_v<T>) {
      std::vector<double> values;
      values.reserve(flat.size());
      for (int64_t i : flat) values.push_back(static_cast<double>(data[i]));
      out = format_floats(values);
    } else if constexpr (std::is_same_v<T, uint8_t>) {  // bool
      for (int64_t i : flat) out.push_back(data[i] ? "true" : "false");
    } else {
      for (int64_t i : flat) out.push_back(std::to_string(data[i]));
    }
  });
  return out;
}

// Writes the nested brackets. `next` walks the formatted elements in row-major order.
struct Layout {
  const Shape& shape;
  const std::vector<std::vector<int64_t>>& shown;
  const std::vector<std::string>& elements;
  size_t width;
  size_t next = 0;

  std::string pad(const std::string& e) const { return std::string(width - e.size(), ' ') + e; }

  void write(int dim, std::string& out) {
    const int rank = shape.rank();
    const int indent = kPrefixWidth + dim + 1;  // column of the first character after '['
    out += '[';
    if (dim == rank - 1) {
      // Wrap before an item that would end past the line width (keeping room for the ',').
      size_t column = static_cast<size_t>(indent);
      bool first = true;
      for (int64_t i : shown[dim]) {
        const std::string item = i < 0 ? "..." : pad(elements[next++]);
        if (!first) {
          if (column + 2 + item.size() + 1 > static_cast<size_t>(kLineWidth)) {
            out += ",\n" + std::string(static_cast<size_t>(indent), ' ');
            column = static_cast<size_t>(indent);
          } else {
            out += ", ";
            column += 2;
          }
        }
        first = false;
        out += item;
        column += item.size();
      }
    } else {
      std::string separator(1, ',');
      separator.append(static_cast<size_t>(rank - dim - 1), '\n');
      separator.append(static_cast<size_t>(indent), ' ');
      bool first = true;
      for (int64_t i : shown[dim]) {
        if (!first) out += separator;
        first = false;
        if (i < 0) out += "...";
        else write(dim + 1, out);
      }
    }
    out += ']';
  }
};

}  // namespace

std::string Tensor::to_string() const {
  if (!defined()) return "tensor(undefined)";
  const std::string suffix = std::string(", dtype=") + dtype_name(dtype_) + ", shape=" + ctrax::to_string(shape_);
  if (numel() == 0) return "tensor([]" + suffix + ")";

  const Tensor c = to(Device::cpu()).contiguous();
  const bool summarise = numel() > kSummariseAbove;
  std::vector<std::vector<int64_t>> shown;
  for (int d = 0; d < rank(); ++d) shown.push_back(shown_indices(shape_[d], summarise));
  std::vector<int64_t> flat;
  collect_shown(shape_, shown, 0, 0, flat);
  const std::vector<std::string> elements = format_elements(c, flat);

  if (rank() == 0) return "tensor(" + elements[0] + suffix + ")";
  size_t width = 0;
  for (const std::string& e : elements) width = std::max(width, e.size());
  Layout layout{shape_, shown, elements, width};
  std::string body;
  layout.write(0, body);
  return "tensor(" + body + suffix + ")";
}

std::ostream& operator<<(std::ostream& out, const Tensor& t) { return out << t.to_string(); }

}  // namespace ctrax
