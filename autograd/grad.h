// value_and_grad and grad: differentiate a C++ function of tensors or weight trees; the
// functional interface the layers, optimizers and RL trainers use. Weights are passed explicitly
// and gradients come back with the same structure:
//
//   auto loss_fn = [&](const Tree& w, const Tensor& x, const Tensor& y) {
//     Tensor h = relu(matmul(x, w["w1"].leaf()) + w["b1"].leaf());
//     return mean(square(matmul(h, w["w2"].leaf()) - y));
//   };
//   auto [loss, g] = value_and_grad(loss_fn)(weights, x, y);      // g: a Tree like weights
//   auto [loss2, g2] = value_and_grad<0, 2>(f)(a, b, c);          // g2: std::tuple of two
//
// f returns the loss (a one-element float tensor), or std::pair<Tensor, Aux> whose Aux (metrics,
// new model state) comes back undifferentiated in `.aux`. Differentiable arguments: Tensor, Tree,
// std::vector<Tensor>, std::map<std::string, Tensor>; others are constants. Differentiating with
// respect to an integer or bool tensor throws ctrax::Error. No gradients of gradients (one tape
// per thread); intermediates and custom seeds need GradientTape (tape.h). Design:
// autograd/README.md.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "../tensor/tensor.h"
#include "../tensor/tree.h"
#include "tape.h"

namespace ctrax {

// How each differentiable argument type is watched and how its gradient is rebuilt.
template <typename T>
struct Differentiable;

template <>
struct Differentiable<Tensor> {
  static void leaves(const Tensor& x, std::vector<Tensor>& out) { out.push_back(x); }
  static Tensor rebuild(const Tensor&, const std::vector<Tensor>& flat, size_t& pos) { return flat[pos++]; }
};

template <>
struct Differentiable<std::vector<Tensor>> {
  static void leaves(const std::vector<Tensor>& x, std::vector<Tensor>& out) { out.insert(out.end(), x.begin(), x.end()); }
  static std::vector<Tensor> rebuild(const std::vector<Tensor>& like, const std::vector<Tensor>& flat, size_t& pos) {
    std::vector<Tensor> r(flat.begin() + static_cast<std::ptrdiff_t>(pos),
                          flat.begin() + static_cast<std::ptrdiff_t>(pos + like.size()));
    pos += like.size();
    return r;
  }
};

template <>
struct Differentiable<std::map<std::string, Tensor>> {
  using Map = std::map<std::string, Tensor>;
  static void leaves(const Map& x, std::vector<Tensor>& out) {
    for (const auto& [k, v] : x) out.push_back(v);
  }
  static Map rebuild(const Map& like, const std::vector<Tensor>& flat, size_t& pos) {
    Map r;
    for (const auto& [k, v] : like) r.emplace(k, flat[pos++]);
    return r;
  }
};

template <>
struct Differentiable<Tree> {
  static void leaves(const Tree& x, std::vector<Tensor>& out) {
    std::vector<Tensor> l = x.leaves();
    out.insert(out.end(), l.begin(), l.end());
  }
  static Tree rebuild(const Tree& like, const std::vector<Tensor>& flat, size_t& pos) {
    const size_t n = like.num_leaves();
    Tree r = like.with_leaves(std::span<const Tensor>(flat.data() + pos, n));
    pos += n;
    return r;
  }
};

// The result of value_and_grad: the loss, the gradient(s) and f's auxiliary output.
template <typename Grad, typename Aux = std::tuple<>>
struct ValueAndGrad {
  Tensor value;
  Grad grad;
  Aux aux;
};

namespace autograd_detail {

template <typename R>
struct LossAndAux {  // f returns the loss alone
  using Aux = std::tuple<>;
  static constexpr bool has_aux = false;
};
template <typename A>
struct LossAndAux<std::pair<Tensor, A>> {  // f returns (loss, aux)
  using Aux = A;
  static constexpr bool has_aux = true;
};

template <typename T>
inline constexpr bool is_differentiable_v = false;
template <>
inline constexpr bool is_differentiable_v<Tensor> = true;
template <>
inline constexpr bool is_differentiable_v<Tree> = true;
template <>
inline constexpr bool is_differentiable_v<std::vector<Tensor>> = true;
template <>
inline constexpr bool is_differentiable_v<std::map<std::string, Tensor>> = true;

void check_loss(const Tensor& loss);
void strip_traces(Tensor& t);
template <typename T>
void strip(T& value) {
  if constexpr (std::is_same_v<T, Tensor>) {
    strip_traces(value);
  } else if constexpr (std::is_same_v<T, Tree>) {
    value = value.map([](const Tensor& t) {
      Tensor c = t;
      strip_traces(c);
      return c;
    });
  } else if constexpr (std::is_same_v<T, std::vector<Tensor>>) {
    for (Tensor& t : value) strip_traces(t);
  } else if constexpr (std::is_same_v<T, std::map<std::string, Tensor>>) {
    for (auto& [k, t] : value) strip_traces(t);
  }
}

template <size_t I, size_t... Argnums>
inline constexpr bool is_chosen_v = ((I == Argnums) || ...);

// f's arguments for the traced call: the differentiated ones as owned copies (their leaves are
// replaced by watched handles), the others by reference (never copied).
template <size_t... Argnums, typename... Args, size_t... Is>
auto call_arguments(std::index_sequence<Is...>, const Args&... args) {
  using Tuple = std::tuple<std::conditional_t<is_chosen_v<Is, Argnums...>, std::decay_t<Args>, const Args&>...>;
  return Tuple(args...);
}

template <size_t... Argnums, typename F, typename... Args>
auto value_and_grad_call(const F& f, const Args&... args) {
  static_assert(sizeof...(Argnums) >= 1, "value_and_grad: name at least one argument");
  using ArgTuple = std::tuple<std::decay_t<Args>...>;
  static_assert(((Argnums < sizeof...(Args)) && ...), "value_and_grad: an argument number is out of range");
  static_assert((is_differentiable_v<std::tuple_element_t<Argnums, ArgTuple>> && ...),
                "value_and_grad: differentiated arguments must be Tensor, Tree, std::vector<Tensor> or "
                "std::map<std::string, Tensor>");
  GradientTape tape;
  auto watched = call_arguments<Argnums...>(std::index_sequence_for<Args...>{}, args...);
  // Watch every leaf of the differentiated arguments, in argument order.
  std::vector<Tensor> sources;
  (
      [&] {
        auto& arg = std::get<Argnums>(watched);
        using A = std::decay_t<decltype(arg)>;
        std::vector<Tensor> leaves;
        Differentiable<A>::leaves(arg, leaves);
        for (Tensor& t : leaves) t = tape.watch(t);
        size_t pos = 0;
        arg = Differentiable<A>::rebuild(arg, leaves, pos);
        sources.insert(sources.end(), leaves.begin(), leaves.end());
      }(),
      ...);
  auto result = std::apply(f, watched);
  using R = std::decay_t<decltype(result)>;
  using Traits = LossAndAux<R>;
  static_assert(std::is_same_v<R, Tensor> || Traits::has_aux,
                "value_and_grad: f must return a Tensor (the loss) or std::pair<Tensor, Aux>");
  Tensor loss;
  typename Traits::Aux aux{};
  if constexpr (Traits::has_aux) {
    loss = std::move(result.first);
    aux = std::move(result.second);
  } else {
    loss = std::move(result);
  }
  check_loss(loss);
  const std::vector<Tensor> flat = tape.gradient(loss, sources);
  strip(loss);
  strip(aux);
  size_t pos = 0;
  auto rebuild_one = [&](const auto& like) {
    using A = std::decay_t<decltype(like)>;
    return Differentiable<A>::rebuild(like, flat, pos);
  };
  if constexpr (sizeof...(Argnums) == 1) {
    auto g = rebuild_one(std::get<Argnums...>(std::tuple<const Args&...>(args...)));
    return ValueAndGrad<decltype(g), typename Traits::Aux>{std::move(loss), std::move(g), std::move(aux)};
  } else {
    const std::tuple<const Args&...> originals(args...);
    // Braced initialisation evaluates left to right, so the gradients are taken in order.
    using G = std::tuple<std::decay_t<std::tuple_element_t<Argnums, ArgTuple>>...>;
    G g{rebuild_one(std::get<Argnums>(originals))...};
    return ValueAndGrad<G, typename Traits::Aux>{std::move(loss), std::move(g), std::move(aux)};
  }
}

}  // namespace autograd_detail

// value_and_grad(f): a callable that returns {value, grad, aux} of f at its arguments, with
// grad taken with respect to argument 0. value_and_grad<i, j, ...>(f): with respect to those
// arguments; grad is then a std::tuple in that order.
template <size_t... Argnums, typename F>
auto value_and_grad(F f) {
  return [f = std::move(f)](const auto&... args) {
    if constexpr (sizeof...(Argnums) == 0) return autograd_detail::value_and_grad_call<0>(f, args...);
    else return autograd_detail::value_and_grad_call<Argnums...>(f, args...);
  };
}

// grad(f): the gradient alone (with aux: a std::pair of gradient and aux).
template <size_t... Argnums, typename F>
auto grad(F f) {
  return [vg = value_and_grad<Argnums...>(std::move(f))](const auto&... args) {
    auto r = vg(args...);
    if constexpr (std::is_same_v<decltype(r.aux), std::tuple<>>) return std::move(r.grad);
    else return std::make_pair(std::move(r.grad), std::move(r.aux));
  };
}

}  // namespace ctrax
