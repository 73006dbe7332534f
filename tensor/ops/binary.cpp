// The binary elementwise ops of tensor/ops.h (add ... logical_or), where(), and their forms
// with a C++ scalar.
//
// What it is for: each op's dtype rule and per-element formula. Operands broadcast with
// NumPy's rules (broadcast_shapes) and are promoted with promote_types() (dtype.h) to one
// computation dtype; the loop is ops_detail::map_binary (elementwise_util.h), which sends
// contiguous or scalar-broadcast float runs of add, sub, mul, div, maximum and minimum to the
// vectorised kernels. A C++ scalar operand is read from a local variable with zero strides,
// so `x * 0.5` allocates nothing but its output. On CUDA tensors the same dtype rules and
// checks run, then kernels/cuda/elementwise.h does the loop (the scalar passed by value).
//
// Dtype rules beyond promote_types:
//   add, sub, mul, pow on two bools throw (cast first); a bool mixed with a number is fine
//     (it is promoted). Integer add/sub/mul wrap modulo 2^bits (NumPy's behaviour).
//   div is true division: integer and bool operands compute in float32.
//   pow on integers stays integer: exponentiation by squaring, wrapping modulo 2^bits on
//     overflow; a negative integer exponent throws ctrax::Error (its result is not an
//     integer), as in NumPy. pow(0, 0) = 1.
//   maximum/minimum propagate NaN and accept bool (or/and). Comparisons and logical ops
//     give bool; logical ops treat nonzero (and NaN) as true.
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "../../kernels/elementwise/elementwise_math.h"
#include "../ops.h"
#include "../trace.h"
#include "elementwise_util.h"
#include "op_kinds.h"

namespace ctrax {

namespace {

namespace kc = kernels::cuda;


// ---- dtype rules ------------------------------------------------------------------------------

enum class Rule { arithmetic, true_division, any, to_bool };

DType compute_dtype(Rule rule, DType a, DType b, const char* op) {
  const DType d = promote_types(a, b);
  switch (rule) {
    case Rule::arithmetic:
      CTRAX_REQUIRE(!is_bool(d), op, ": arithmetic on bool tensors is not supported (got ", a, " and ", b,
                    "); cast an operand first, e.g. x.to(DType::int32)");
      return d;
    case Rule::true_division: return is_floating(d) ? d : DType::float32;
    case Rule::any:
    case Rule::to_bool: return d;
  }
  return d;
}

DType result_dtype(Rule rule, DType compute) { return rule == Rule::to_bool ? DType::boolean : compute; }

// ---- the ops, as (op, dtype rule, per-element function); backends follow from the op ----------------------------------------

struct Add {
  static constexpr OpId op = OpId::add;
  static constexpr Rule rule = Rule::arithmetic;
  template <typename T>
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) return ops_detail::wrap_add(a, b);
    else return ops_detail::vector_formula<OpId::add>(a, b);
  }
};
struct Sub {
  static constexpr OpId op = OpId::sub;
  static constexpr Rule rule = Rule::arithmetic;
  template <typename T>
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) return ops_detail::wrap_sub(a, b);
    else return ops_detail::vector_formula<OpId::sub>(a, b);
  }
};
struct Mul {
  static constexpr OpId op = OpId::mul;
  static constexpr Rule rule = Rule::arithmetic;
  template <typename T>
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) return ops_detail::wrap_mul(a, b);
    else return ops_detail::vector_formula<OpId::mul>(a, b);
  }
};
struct Div {
  static constexpr OpId op = OpId::div;
  static constexpr Rule rule = Rule::true_division;
  template <typename T>
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) return b == T(0) ? T(0) : T(a / b);  // never runs: div computes in float
    else return ops_detail::vector_formula<OpId::div>(a, b);
  }
};
struct Pow {
  static constexpr OpId op = OpId::pow;
  static constexpr Rule rule = Rule::arithmetic;
  template <typename T>
  static T apply(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
      return std::pow(a, b);
    } else {
      // Exponentiation by squaring in unsigned arithmetic (wraps; b >= 0 was checked).
      using U = std::make_unsigned_t<T>;
      U result = 1, base = static_cast<U>(a), e = static_cast<U>(b);
      while (e != 0) {
        if (e & 1u) result = static_cast<U>(result * base);
        base = static_cast<U>(base * base);
        e >>= 1;
      }
      return static_cast<T>(result);
    }
  }
};
struct Maximum {
  static constexpr OpId op = OpId::maximum;
  static constexpr Rule rule = Rule::any;
  template <typename T>
  static T apply(T a, T b) { return ops_detail::vector_formula<OpId::maximum>(a, b); }
};
struct Minimum {
  static constexpr OpId op = OpId::minimum;
  static constexpr Rule rule = Rule::any;
  template <typename T>
  static T apply(T a, T b) { return ops_detail::vector_formula<OpId::minimum>(a, b); }
};

#define CTRAX_BOOL_BINARY(Name, op_id, expression) \
  struct Name {                                    \
    static constexpr OpId op = OpId::op_id;        \
    static constexpr Rule rule = Rule::to_bool;    \
    template <typename T>                          \
    static uint8_t apply(T a, T b) {               \
      return (expression) ? 1 : 0;                 \
    }                                              \
  };
CTRAX_BOOL_BINARY(Eq, eq, a == b)
CTRAX_BOOL_BINARY(Ne, ne, a != b)
CTRAX_BOOL_BINARY(Lt, lt, a < b)
CTRAX_BOOL_BINARY(Le, le, a <= b)
CTRAX_BOOL_BINARY(Gt, gt, a > b)
CTRAX_BOOL_BINARY(Ge, ge, a >= b)
CTRAX_BOOL_BINARY(LogicalAnd, logical_and, a != T(0) && b != T(0))
CTRAX_BOOL_BINARY(LogicalOr, logical_or, a != T(0) || b != T(0))
#undef CTRAX_BOOL_BINARY

// ---- drivers ----------------------------------------------------------------------------------

// True when some element of the integer tensor t is negative (serial: this is a rare path).
template <typename T>
bool any_negative(const Tensor& t) {
  if (t.device().is_cuda()) return ops_detail::cuda_any_negative(t);
  bool found = false;
  std::array<char*, 1> base{static_cast<char*>(t.raw_data())};
  std::array<Shape, 1> strides{detail::broadcast_byte_strides(t, t.shape())};
  detail::strided_loop<1>(
      t.shape(), base, strides,
      [&found](std::array<char*, 1> p, std::array<int64_t, 1> st, int64_t n) {
        for (int64_t i = 0; i < n; ++i) found = found || *reinterpret_cast<const T*>(p[0] + i * st[0]) < T(0);
      },
      INT64_MAX);
  return found;
}

template <typename Op, typename T>
void require_valid_exponent(const Tensor& exponent) {
  if constexpr (std::is_same_v<Op, Pow> && std::is_integral_v<T>) {
    CTRAX_REQUIRE(!any_negative<T>(exponent), "pow: integer tensors cannot be raised to negative integer powers (",
                  "the exponent of dtype ", exponent.dtype(), " has a negative element); cast to float first");
  }
}

template <typename Op>
Tensor binary_op(const Tensor& a, const Tensor& b) {
  ops_detail::require_defined_input(a, op_name(Op::op), "a");
  ops_detail::require_defined_input(b, op_name(Op::op), "b");
  ops_detail::require_same_device(op_name(Op::op), a.device(), b, "b");
  const Shape shape = broadcast_shapes(a.shape(), b.shape(), op_name(Op::op));
  const DType dtype = compute_dtype(Op::rule, a.dtype(), b.dtype(), op_name(Op::op));
  const Tensor ac = a.to(dtype);
  const Tensor bc = b.to(dtype);
  if (a.device().is_cuda()) {
    dispatch_dtype(dtype, [&](auto tag) { require_valid_exponent<Op, decltype(tag)>(bc); });
    return ops_detail::cuda_binary(ops_detail::cuda_binary_op(Op::op), ac, bc, shape, dtype, result_dtype(Op::rule, dtype));
  }
  Tensor out(shape, result_dtype(Op::rule, dtype));
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    using Out = decltype(Op::apply(T{}, T{}));
    require_valid_exponent<Op, T>(bc);
    detail::KernelScope scope;
    ops_detail::map_binary<T, Out, ops_detail::vector_kernel(Op::op)>(out, static_cast<const char*>(ac.raw_data()),
                                               detail::broadcast_byte_strides(ac, shape),
                                               static_cast<const char*>(bc.raw_data()),
                                               detail::broadcast_byte_strides(bc, shape),
                                               [](T x, T y) { return Op::apply(x, y); });
  });
  return out;
}

// t (op) s, or s (op) t when scalar_first. The scalar is weak: it takes t's dtype when their
// categories agree (ops_detail::weak_scalar_dtype).
template <typename Op>
Tensor binary_scalar_op(const Tensor& t, Scalar s, bool scalar_first) {
  ops_detail::require_defined_input(t, op_name(Op::op), scalar_first ? "b" : "a");
  const DType sd = ops_detail::weak_scalar_dtype(t.dtype(), s.is_floating);
  const DType dtype = scalar_first ? compute_dtype(Op::rule, sd, t.dtype(), op_name(Op::op))
                                   : compute_dtype(Op::rule, t.dtype(), sd, op_name(Op::op));
  const Tensor tc = t.to(dtype);
  const bool on_cuda = tc.device().is_cuda();
  Tensor out = on_cuda ? Tensor() : Tensor(t.shape(), result_dtype(Op::rule, dtype));
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    using Out = decltype(Op::apply(T{}, T{}));
    const T value = ops_detail::saturate_cast<T>(s.value);
    if constexpr (std::is_same_v<Op, Pow> && std::is_integral_v<T>) {
      if (!scalar_first) {
        CTRAX_REQUIRE(value >= T(0), "pow: integer tensors cannot be raised to negative integer powers (got exponent ",
                      s.value, "); cast to float first");
      } else {
        require_valid_exponent<Op, T>(tc);
      }
    }
    if (on_cuda) {
      out = ops_detail::cuda_binary_scalar(ops_detail::cuda_binary_op(Op::op), tc, dtype, result_dtype(Op::rule, dtype), s.value, scalar_first);
      return;
    }
    detail::KernelScope scope;
    const char* tp = static_cast<const char*>(tc.raw_data());
    const char* sp = reinterpret_cast<const char*>(&value);
    const Shape ts = detail::broadcast_byte_strides(tc, t.shape());
    const Shape zero = Shape::filled(t.rank(), 0);
    const auto f = [](T x, T y) { return Op::apply(x, y); };
    using ops_detail::ScalarOperand;
    if (scalar_first) ops_detail::map_binary<T, Out, ops_detail::vector_kernel(Op::op)>(out, sp, zero, tp, ts, f, ScalarOperand::a);
    else ops_detail::map_binary<T, Out, ops_detail::vector_kernel(Op::op)>(out, tp, ts, sp, zero, f, ScalarOperand::b);
  });
  return out;
}

}  // namespace

// ---- tensor (op) tensor -----------------------------------------------------------------------

Tensor add(const Tensor& a, const Tensor& b) {
  return traced_op(OpId::add, {&a, &b}, [&] { return binary_op<Add>(a, b); });
}
Tensor sub(const Tensor& a, const Tensor& b) {
  return traced_op(OpId::sub, {&a, &b}, [&] { return binary_op<Sub>(a, b); });
}
Tensor mul(const Tensor& a, const Tensor& b) {
  return traced_op(OpId::mul, {&a, &b}, [&] { return binary_op<Mul>(a, b); });
}
Tensor div(const Tensor& a, const Tensor& b) {
  return traced_op(OpId::div, {&a, &b}, [&] { return binary_op<Div>(a, b); });
}
Tensor pow(const Tensor& a, const Tensor& b) {
  return traced_op(OpId::pow, {&a, &b}, [&] { return binary_op<Pow>(a, b); });
}
Tensor maximum(const Tensor& a, const Tensor& b) {
  return traced_op(OpId::maximum, {&a, &b}, [&] { return binary_op<Maximum>(a, b); });
}
Tensor minimum(const Tensor& a, const Tensor& b) {
  return traced_op(OpId::minimum, {&a, &b}, [&] { return binary_op<Minimum>(a, b); });
}
Tensor eq(const Tensor& a, const Tensor& b) { return binary_op<Eq>(a, b); }
Tensor ne(const Tensor& a, const Tensor& b) { return binary_op<Ne>(a, b); }
Tensor lt(const Tensor& a, const Tensor& b) { return binary_op<Lt>(a, b); }
Tensor le(const Tensor& a, const Tensor& b) { return binary_op<Le>(a, b); }
Tensor gt(const Tensor& a, const Tensor& b) { return binary_op<Gt>(a, b); }
Tensor ge(const Tensor& a, const Tensor& b) { return binary_op<Ge>(a, b); }
Tensor logical_and(const Tensor& a, const Tensor& b) { return binary_op<LogicalAnd>(a, b); }
Tensor logical_or(const Tensor& a, const Tensor& b) { return binary_op<LogicalOr>(a, b); }

// ---- with a scalar ----------------------------------------------------------------------------
// Under autodiff a traced operand goes through the tensor form (the scalar as a rank-0 constant),
// so the tape records the same node either way.

Tensor add(const Tensor& a, Scalar b) {
  if (detail::is_traced(a)) return add(a, scalar_like(b, a));
  return binary_scalar_op<Add>(a, b, false);
}
Tensor sub(const Tensor& a, Scalar b) {
  if (detail::is_traced(a)) return sub(a, scalar_like(b, a));
  return binary_scalar_op<Sub>(a, b, false);
}
Tensor sub(Scalar a, const Tensor& b) {
  if (detail::is_traced(b)) return sub(scalar_like(a, b), b);
  return binary_scalar_op<Sub>(b, a, true);
}
Tensor mul(const Tensor& a, Scalar b) {
  if (detail::is_traced(a)) return mul(a, scalar_like(b, a));
  return binary_scalar_op<Mul>(a, b, false);
}
Tensor div(const Tensor& a, Scalar b) {
  if (detail::is_traced(a)) return div(a, scalar_like(b, a));
  return binary_scalar_op<Div>(a, b, false);
}
Tensor div(Scalar a, const Tensor& b) {
  if (detail::is_traced(b)) return div(scalar_like(a, b), b);
  return binary_scalar_op<Div>(b, a, true);
}
Tensor pow(const Tensor& a, Scalar b) {
  if (detail::is_traced(a)) return pow(a, scalar_like(b, a));
  return binary_scalar_op<Pow>(a, b, false);
}
Tensor maximum(const Tensor& a, Scalar b) {
  if (detail::is_traced(a)) return maximum(a, scalar_like(b, a));
  return binary_scalar_op<Maximum>(a, b, false);
}
Tensor minimum(const Tensor& a, Scalar b) {
  if (detail::is_traced(a)) return minimum(a, scalar_like(b, a));
  return binary_scalar_op<Minimum>(a, b, false);
}

Tensor scalar_like(Scalar s, const Tensor& like) {
  ops_detail::require_defined_input(like, "scalar_like", "like");
  // On like's device, so that the tensor form of the op sees operands on one device.
  const Tensor t = scalar_tensor(s.value, ops_detail::weak_scalar_dtype(like.dtype(), s.is_floating));
  return like.device().is_cpu() ? t : t.to(like.device());
}

// ---- where ------------------------------------------------------------------------------------

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  return traced_op(OpId::where, {&cond, &a, &b}, [&] {
    ops_detail::require_defined_input(cond, "where", "cond");
    ops_detail::require_defined_input(a, "where", "a");
    ops_detail::require_defined_input(b, "where", "b");
    ops_detail::require_same_device("where", cond.device(), a, "a");
    ops_detail::require_same_device("where", cond.device(), b, "b");
    CTRAX_REQUIRE(is_bool(cond.dtype()), "where: cond must be a bool tensor, got dtype ", cond.dtype(),
                  " (shape ", cond.shape(), "); compare first, e.g. gt(x, 0)");
    const Shape shape = broadcast_shapes(broadcast_shapes(cond.shape(), a.shape(), "where"), b.shape(), "where");
    const DType dtype = promote_types(a.dtype(), b.dtype());
    const Tensor ac = a.to(dtype);
    const Tensor bc = b.to(dtype);
    if (cond.device().is_cuda()) return ops_detail::cuda_where(cond, ac, bc, shape, dtype);
    Tensor out(shape, dtype);
    dispatch_dtype(dtype, [&](auto tag) {
      using T = decltype(tag);
      detail::KernelScope scope;
      std::array<char*, 4> base{static_cast<char*>(out.raw_data()), static_cast<char*>(cond.raw_data()),
                                static_cast<char*>(ac.raw_data()), static_cast<char*>(bc.raw_data())};
      std::array<Shape, 4> strides{detail::broadcast_byte_strides(out, shape), detail::broadcast_byte_strides(cond, shape),
                                   detail::broadcast_byte_strides(ac, shape), detail::broadcast_byte_strides(bc, shape)};
      detail::run_kernel([shape, base, strides] {
        detail::strided_loop<4>(shape, base, strides, [](std::array<char*, 4> p, std::array<int64_t, 4> st, int64_t n) {
          T* o = reinterpret_cast<T*>(p[0]);
          constexpr auto kSize = static_cast<int64_t>(sizeof(T));
          if (st[0] == kSize && st[1] == 1 && (st[2] == kSize || st[2] == 0) && (st[3] == kSize || st[3] == 0)) {
            // A contiguous run with contiguous or single-value operands: both operands are read
            // and one kept, a select the compiler vectorises (the strided loop below is not).
            const auto* c = reinterpret_cast<const uint8_t*>(p[1]);
            const T* x = reinterpret_cast<const T*>(p[2]);
            const T* y = reinterpret_cast<const T*>(p[3]);
            // One loop per operand layout, each with its strides known at compile time: with the
            // strides as runtime multipliers the compiler kept the loop scalar. In a PPO step's
            // plan on Zen 4 the [256, 1] selects went from 0.23-0.34 us to 0.06-0.14 us.
            const auto select = [&](auto x_step, auto y_step) {
              for (int64_t i = 0; i < n; ++i) {
                const T xv = x[i * decltype(x_step)::value], yv = y[i * decltype(y_step)::value];
                o[i] = c[i] != 0 ? xv : yv;
              }
            };
            using Zero = std::integral_constant<int64_t, 0>;
            using One = std::integral_constant<int64_t, 1>;
            const bool x_run = st[2] != 0, y_run = st[3] != 0;
            if (x_run && y_run) select(One{}, One{});
            else if (x_run) select(One{}, Zero{});
            else if (y_run) select(Zero{}, One{});
            else select(Zero{}, Zero{});
            return;
          }
          // Any strides (a column of short rows under RunOrder::any, a strided view): the same
          // select with both values read at fixed strides, rather than an address picked by the
          // condition, which made every element wait on its condition's load.
          const auto* c = reinterpret_cast<const uint8_t*>(p[1]);
          const T* x = reinterpret_cast<const T*>(p[2]);
          const T* y = reinterpret_cast<const T*>(p[3]);
          const int64_t os = st[0] / kSize, xs = st[2] / kSize, ys = st[3] / kSize;
          for (int64_t i = 0; i < n; ++i) {
            const T xv = x[i * xs], yv = y[i * ys];
            o[i * os] = c[i * st[1]] != 0 ? xv : yv;
          }
        }, detail::kElementwiseGrain, detail::RunOrder::any);
      });
    });
    return out;
  });
}

}  // namespace ctrax
