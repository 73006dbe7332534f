// Combinators: layers made of layers, with Trax's stack semantics (layers/combinators.py). A
// combinator has no weights of its own: its weights and state are lists with one entry per
// sublayer (Trax's tuples), and the rng is split once per sublayer. Stack semantics and Serial's
// arity: layers/README.md, "A layer".
//
//   Serial(a, b, ...)     each sublayer pops its n_in items and pushes its n_out. Empty: identity.
//   Parallel(a, b, ...)   consecutive input spans to successive sublayers, outputs concatenated;
//                         a null sublayer is the identity.
//   Branch(a, b, ...)     every branch sees copies of the top of the stack:
//                         Serial(Select(0..a.n_in-1, 0..b.n_in-1, ...), Parallel(a, b, ...)).
//   Select(indices, n_in) pops n_in items (default max index + 1), pushes items[i] for each i.
//   Dup, Drop, Swap       x -> (x, x);  x -> ();  (a, b) -> (b, a).
//   Residual(layers..., shortcut)  Serial(Branch(shortcut or identity, Serial(layers)), Add()).
//   Add, SubtractTop, Multiply     x0 + x1;  x1 - x0 (Trax's order);  x0 * x1.
//   Gate                  (g, m, c) -> g m + (1 - g) c.
//   Concatenate(n, axis)  n items joined along an axis; Split(n, axis): one into n equal parts.
//   Scan(layer, axis, n_carry)     (xs..., carry...) -> (ys..., carry...): layer on slice i along
//                         `axis` with the carry threaded through, rng fold_in(rng, i).
//   Cond(cond, true, false)        cond's one-element bool output picks the branch; only it runs.
//   Fn(name, f[, n_in, n_out])     a user function: n_in from f's arity, or f over a Stack.
#pragma once

#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../base/error.h"

#include "layer.h"

namespace ctrax {

LayerPtr Serial(std::vector<LayerPtr> layers, std::string name = "Serial");
LayerPtr Parallel(std::vector<LayerPtr> layers, std::string name = "Parallel");
LayerPtr Branch(std::vector<LayerPtr> layers, std::string name = "Branch");
LayerPtr Select(std::vector<int> indices, int n_in = -1);
LayerPtr Dup();
LayerPtr Drop();
LayerPtr Swap();
LayerPtr Residual(std::vector<LayerPtr> layers, LayerPtr shortcut = nullptr);
LayerPtr Add();
LayerPtr SubtractTop();
LayerPtr Multiply();
LayerPtr Gate();
LayerPtr Concatenate(int n_items = 2, int axis = -1);
LayerPtr Split(int n_items = 2, int axis = -1);
LayerPtr Scan(LayerPtr layer, int axis = 0, int n_carry = 1);
// false_branch null: the identity (then true_branch must have n_in == n_out).
LayerPtr Cond(LayerPtr condition, LayerPtr true_branch, LayerPtr false_branch = nullptr);
// f maps the popped items (top first) to exactly n_out items.
using StackFn = std::function<Stack(const Stack&)>;
LayerPtr Fn(std::string name, StackFn f, int n_in = 1, int n_out = 1);

namespace layers_detail {
// The parameter count and result type of a callable (a lambda, a function object or a function
// pointer with a fixed signature; generic lambdas have no single arity).
template <typename T>
struct CallTraits : CallTraits<decltype(&T::operator())> {};
template <typename C, typename R, typename... A>
struct CallTraits<R (C::*)(A...) const> {
  using Result = R;
  static constexpr int arity = sizeof...(A);
};
template <typename C, typename R, typename... A>
struct CallTraits<R (C::*)(A...)> : CallTraits<R (C::*)(A...) const> {};
template <typename R, typename... A>
struct CallTraits<R (*)(A...)> {
  using Result = R;
  static constexpr int arity = sizeof...(A);
};

template <typename F, size_t... I>
Stack call_on_items(F& f, const Stack& in, std::index_sequence<I...>) {
  if constexpr (std::is_same_v<std::decay_t<decltype(f(in[I]...))>, Tensor>) return Stack{f(in[I]...)};
  else return Stack(f(in[I]...));
}
}  // namespace layers_detail

// Fn(name, f) with f taking k tensors: n_in = k, from f's arity (as Trax's Fn). f returns a
// Tensor (one output) or a Stack of n_out tensors.
//   Fn("AddThenDouble", [](const Tensor& a, const Tensor& b) { return (a + b) * 2.0; })  // n_in 2
template <typename F>
  requires(!std::is_invocable_v<F&, const Stack&>)
LayerPtr Fn(std::string name, F f, int n_out = 1) {
  using Traits = layers_detail::CallTraits<std::decay_t<F>>;
  constexpr int n_in = Traits::arity;
  if constexpr (std::is_same_v<std::decay_t<typename Traits::Result>, Tensor>) {
    CTRAX_REQUIRE(n_out == 1, "Fn ", name, ": a function returning one Tensor has n_out = 1, got ", n_out);
  }
  return Fn(std::move(name), StackFn([f = std::move(f)](const Stack& in) mutable {
              return layers_detail::call_on_items(f, in, std::make_index_sequence<n_in>{});
            }),
            n_in, n_out);
}

}  // namespace ctrax
