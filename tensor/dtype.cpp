#include "dtype.h"

#include "../base/error.h"

namespace ctrax {

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::float32: return "float32";
    case DType::float64: return "float64";
    case DType::int32: return "int32";
    case DType::int64: return "int64";
    case DType::boolean: return "bool";
  }
  return "unknown";
}

namespace {
// Category rank then width rank; see the rules in dtype.h.
int category(DType d) { return is_bool(d) ? 0 : is_integer(d) ? 1 : 2; }
}  // namespace

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  const int ca = category(a), cb = category(b);
  if (ca != cb) return ca > cb ? a : b;
  return dtype_size(a) >= dtype_size(b) ? a : b;
}

std::ostream& operator<<(std::ostream& out, DType dtype) { return out << dtype_name(dtype); }

}  // namespace ctrax
