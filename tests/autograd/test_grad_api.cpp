// The autodiff interface: value_and_grad/grad over tensors and weight trees, aux outputs,
// stop_gradient, the no-grad scope, custom gradients, GradientTape, and every misuse's error.
#include <doctest/doctest.h>

#include <map>
#include <memory>
#include <thread>

#include <ctrax/autograd/custom.h>
#include <ctrax/autograd/grad.h>
#include <ctrax/autograd/tape.h>
#include <ctrax/tensor/ops.h>
#include <ctrax/tensor/tree.h>

#include "../test_util.h"

using namespace ctrax;
using test::check_close;
using test::check_error;

namespace {
const test::Tolerance kExact{1e-12, 1e-12};
}

TEST_CASE("value_and_grad: a function of one tensor") {
  const Tensor x = tensor({1.0, -2.0, 3.0});
  auto f = [](const Tensor& x) { return sum(mul(mul(x, x), x)); };  // sum x^3, d/dx = 3 x^2
  auto [value, g, aux] = value_and_grad(f)(x);
  CHECK(value.item<double>() == doctest::Approx(1.0 - 8.0 + 27.0));
  check_close(g, Shape{3}, {3.0, 12.0, 27.0}, kExact);
  CHECK(g.dtype() == DType::float64);
  CHECK(value.trace_tape() == 0);  // results come back as plain tensors
  CHECK(x.trace_tape() == 0);      // the argument itself is never marked
  check_close(grad(f)(x), Shape{3}, {3.0, 12.0, 27.0}, kExact);
}

TEST_CASE("value_and_grad: gradients of a weight tree have the tree's structure") {
  Tree w;
  w["dense"] = Tree::Dict{{"kernel", tensor({1.0, 2.0, 3.0, 4.0}, {2, 2})}, {"bias", tensor({0.5, -0.5})}};
  w["scales"] = Tree{tensor({2.0}), tensor({3.0})};
  const Tensor x = tensor({1.0, 1.0}, {1, 2});
  auto loss = [](const Tree& w, const Tensor& x) {
    const Tensor h = add(matmul(x, w["dense"]["kernel"].leaf()), w["dense"]["bias"].leaf());  // [1, 2]
    return sum(mul(mul(h, w["scales"][0].leaf()), w["scales"][1].leaf()));
  };
  auto r = value_and_grad(loss)(w, x);
  // h = [1+3+0.5, 2+4-0.5] = [4.5, 5.5]; loss = 6 * sum(h) = 60
  CHECK(r.value.item<double>() == doctest::Approx(60.0));
  REQUIRE(r.grad.same_structure(w));
  check_close(r.grad["dense"]["kernel"].leaf(), Shape{2, 2}, {6.0, 6.0, 6.0, 6.0}, kExact);
  check_close(r.grad["dense"]["bias"].leaf(), Shape{2}, {6.0, 6.0}, kExact);
  check_close(r.grad["scales"][0].leaf(), Shape{1}, {30.0}, kExact);  // 3 * sum(h)
  check_close(r.grad["scales"][1].leaf(), Shape{1}, {20.0}, kExact);
  CHECK(r.grad.paths() == std::vector<std::string>{"dense/bias", "dense/kernel", "scales/0", "scales/1"});
}

TEST_CASE("value_and_grad: std::vector and std::map arguments, several argnums, aux outputs") {
  const std::vector<Tensor> v{tensor({1.0, 2.0}), tensor({3.0})};
  const std::map<std::string, Tensor> m{{"a", tensor({2.0})}};
  const Tensor c = tensor({10.0});
  auto f = [](const std::vector<Tensor>& v, const Tensor& c, const std::map<std::string, Tensor>& m) {
    const Tensor loss = sum(mul(v[0], m.at("a"))) + sum(mul(v[1], c));
    return std::make_pair(loss, std::vector<Tensor>{mul(v[0], 2.0)});  // aux: a metric
  };
  auto r = value_and_grad<0, 2>(f)(v, c, m);
  const auto& [gv, gm] = r.grad;
  REQUIRE(gv.size() == 2);
  check_close(gv[0], Shape{2}, {2.0, 2.0}, kExact);
  check_close(gv[1], Shape{1}, {10.0}, kExact);
  check_close(gm.at("a"), Shape{1}, {3.0}, kExact);
  CHECK(r.value.item<double>() == doctest::Approx(6.0 + 30.0));
  REQUIRE(r.aux.size() == 1);
  check_close(r.aux[0], Shape{2}, {2.0, 4.0}, kExact);
  CHECK(r.aux[0].trace_tape() == 0);  // aux comes back undifferentiated and untraced
  auto [g_only, aux] = grad<1>(f)(v, c, m);  // with aux, grad gives (gradient, aux)
  check_close(g_only, Shape{1}, {3.0}, kExact);
  CHECK(aux.size() == 1);
}

TEST_CASE("value_and_grad: an unused weight gets a zero gradient of its shape and dtype") {
  const std::vector<Tensor> w{tensor({1.0f, 2.0f}), zeros({2, 3}, DType::float32)};
  auto r = value_and_grad([](const std::vector<Tensor>& w) { return sum(w[0]); })(w);
  check_close(r.grad[1], zeros({2, 3}, DType::float32), kExact);
  CHECK(r.grad[1].dtype() == DType::float32);
}

TEST_CASE("value_and_grad: a value used several times accumulates every use") {
  const Tensor x = tensor({0.5, -1.5});
  // y = x*x + exp(x)*x + x: dy/dx = 2x + exp(x)(1 + x) + 1
  auto r = value_and_grad([](const Tensor& x) { return sum(add(add(mul(x, x), mul(exp(x), x)), x)); })(x);
  std::vector<double> ref;
  for (double v : {0.5, -1.5}) ref.push_back(2 * v + std::exp(v) * (1 + v) + 1);
  check_close(r.grad, Shape{2}, ref, kExact);
}

TEST_CASE("value_and_grad: a float32 weight used in float64 maths gets a float32 gradient") {
  const Tensor w = tensor({1.0f, 2.0f});
  auto r = value_and_grad([](const Tensor& w) { return sum(mul(w.to(DType::float64), tensor({3.0, 4.0}))); })(w);
  CHECK(r.grad.dtype() == DType::float32);
  check_close(r.grad, Shape{2}, {3.0, 4.0}, kExact);
}

TEST_CASE("value_and_grad: misuse is a clear error") {
  const Tensor xi = tensor({1, 2, 3});
  check_error([&] { value_and_grad([](const Tensor& x) { return sum(x.to(DType::float32)); })(xi); },
              {"only float32 and float64 tensors can be differentiated", "int32"});
  const Tensor xb = tensor({true, false});
  check_error([&] { value_and_grad([](const Tensor& x) { return sum(x.to(DType::float32)); })(xb); },
              {"only float32 and float64", "bool"});
  const Tensor x = tensor({1.0, 2.0});
  check_error([&] { value_and_grad([](const Tensor& x) { return mul(x, 2.0); })(x); },
              {"one-element", "[2]", "reduce it"});
  check_error([&] { value_and_grad([](const Tensor& x) { return argmax(x); })(x); }, {"one-element", "int64"});
  Tree bad;
  bad["w"] = tensor({1, 2});
  check_error([&] { value_and_grad([](const Tree& t) { return sum(t["w"].leaf().to(DType::float64)); })(bad); },
              {"int32"});
}

TEST_CASE("stop_gradient and the no-grad scope cut the graph") {
  const Tensor x = tensor({2.0, 3.0});
  // x * stop_gradient(x): the second factor is a constant, so d/dx = x (not 2x).
  auto r = value_and_grad([](const Tensor& x) { return sum(mul(x, stop_gradient(x))); })(x);
  check_close(r.grad, Shape{2}, {2.0, 3.0}, kExact);
  CHECK(r.value.item<double>() == doctest::Approx(13.0));

  GradientTape tape;
  const Tensor w = tape.watch(x);
  const Tensor a = exp(w);
  const size_t before = tape.num_nodes();
  Tensor b;
  {
    NoGradScope no_grad;
    b = mul(a, 3.0);  // computed, not recorded
    CHECK(GradientTape::current() == nullptr);
  }
  CHECK(tape.num_nodes() == before);
  CHECK(GradientTape::current() == &tape);
  const Tensor loss = sum(add(a, b));  // b is a constant: d/dw = exp(w)
  const std::vector<Tensor> g = tape.gradient(loss, {w});
  check_close(g[0], Shape{2}, {std::exp(2.0), std::exp(3.0)}, kExact);
}

TEST_CASE("custom_gradient: the user's backward replaces autodiff's") {
  const Tensor x = tensor({1.0, 2.0});
  // Forward x^2, but a straight-through backward that passes 10 * g.
  auto f = [](const Tensor& x) {
    const Tensor y = custom_gradient(
        {x}, [](const std::vector<Tensor>& in) { return square(in[0]); },
        [](const CustomGradContext& c) { return std::vector<Tensor>{mul(c.output_grads[0], 10.0)}; });
    return sum(y);
  };
  auto r = value_and_grad(f)(x);
  CHECK(r.value.item<double>() == doctest::Approx(5.0));
  check_close(r.grad, Shape{2}, {10.0, 10.0}, kExact);

  // Two outputs, one input unused by the backward (undefined = zero), one output unused
  // (its gradient arrives as zeros).
  auto g2 = value_and_grad<0, 1>([](const Tensor& a, const Tensor& b) {
    const std::vector<Tensor> out = custom_gradient(
        {a, b}, [](const std::vector<Tensor>& in) { return std::vector<Tensor>{add(in[0], in[1]), mul(in[0], in[1])}; },
        [](const CustomGradContext& c) {
          CHECK(c.output_grads.size() == 2);
          CHECK(sum(abs(c.output_grads[1])).item<double>() == 0.0);
          CHECK(c.inputs.size() == 2);
          return std::vector<Tensor>{c.output_grads[0], Tensor()};
        });
    return sum(out[0]);
  })(tensor({1.0, 2.0}), tensor({3.0, 4.0}));
  check_close(std::get<0>(g2.grad), Shape{2}, {1.0, 1.0}, kExact);
  check_close(std::get<1>(g2.grad), Shape{2}, {0.0, 0.0}, kExact);
}

TEST_CASE("custom_gradient: a backward that breaks the contract is a clear error") {
  const Tensor x = tensor({1.0, 2.0});
  auto wrong_count = [](const Tensor& x) {
    return sum(custom_gradient(
        {x}, [](const std::vector<Tensor>& in) { return mul(in[0], 2.0); },
        [](const CustomGradContext&) { return std::vector<Tensor>{}; }));
  };
  check_error([&] { value_and_grad(wrong_count)(x); }, {"custom_gradient", "returned 0 gradients for 1 inputs"});
  auto wrong_shape = [](const Tensor& x) {
    return sum(custom_gradient(
        {x}, [](const std::vector<Tensor>& in) { return mul(in[0], 2.0); },
        [](const CustomGradContext&) { return std::vector<Tensor>{zeros({3}, DType::float64)}; }));
  };
  check_error([&] { value_and_grad(wrong_shape)(x); }, {"custom_gradient", "shape [3]", "input 0 of shape [2]"});
  check_error([&] { custom_gradient({x}, CustomForward(), [](const CustomGradContext&) { return std::vector<Tensor>{}; }); },
              {"custom_gradient", "callable"});
}

TEST_CASE("GradientTape: vector-Jacobian products, gradients of intermediates, and misuse") {
  GradientTape tape;
  const Tensor x = tape.watch(tensor({1.0, 2.0, 3.0}));
  const Tensor h = mul(x, 2.0);
  const Tensor y = square(h);
  // With a seed v, gradient gives v^T dy/dx = v * 2h * 2.
  const std::vector<Tensor> g = tape.gradient(y, {x, h}, tensor({1.0, 0.0, -1.0}));
  check_close(g[0], Shape{3}, {8.0, 0.0, -24.0}, kExact);
  check_close(g[1], Shape{3}, {4.0, 0.0, -12.0}, kExact);
  check_error([&] { tape.gradient(sum(y), {x}); }, {"already computed gradients"});
  check_error([&] { tape.watch(tensor({1.0})); }, {"stopped recording"});

  GradientTape t2;
  const Tensor a = t2.watch(tensor({1.0, 2.0}));
  const Tensor stranger = tensor({1.0, 2.0});
  check_error([&] { t2.gradient(sum(a), {stranger}); }, {"source 0", "not watched by this tape"});
  GradientTape t3;
  const Tensor b = t3.watch(tensor({1.0, 2.0}));
  check_error([&] { t3.gradient(b, {b}); }, {"one element", "float64[2]", "seed"});
  GradientTape t4;
  const Tensor c = t4.watch(tensor({1.0, 2.0}));
  check_error([&] { t4.gradient(c, {c}, tensor({1.0})); }, {"seed has shape [1]", "[2]"});
}

TEST_CASE("GradientTape: in-place writes into traced tensors are refused") {
  GradientTape tape;
  Tensor x = tape.watch(tensor({1.0, 2.0}));
  Tensor y = exp(x);
  check_error([&] { y.fill_(0.0); }, {"fill_", "traced by autodiff"});
  check_error([&] { x.copy_(tensor({3.0, 4.0})); }, {"copy_", "traced by autodiff"});
  Tensor detached = stop_gradient(y).clone();
  detached.fill_(1.0);  // a constant copy may be written
  CHECK(detached.to_vector<double>() == std::vector<double>{1.0, 1.0});
}

TEST_CASE("GradientTape: nested differentiation is refused, independent nesting works") {
  const Tensor x = tensor({1.0, 2.0});
  auto outer = [](const Tensor& x) {
    // An inner value_and_grad over a constant is fine...
    auto inner = value_and_grad([](const Tensor& z) { return sum(square(z)); })(tensor({3.0}));
    CHECK(inner.grad.item<double>() == doctest::Approx(6.0));
    return sum(mul(x, inner.value));
  };
  auto r = value_and_grad(outer)(x);
  check_close(r.grad, Shape{2}, {9.0, 9.0}, kExact);
  // ...but differentiating inside with respect to the outer tape's values is refused.
  auto mixing = [](const Tensor& x) {
    auto inner = value_and_grad([&x](const Tensor& z) { return sum(mul(z, x)); })(tensor({3.0, 3.0}));
    return sum(inner.grad);
  };
  check_error([&] { value_and_grad(mixing)(x); }, {"nested differentiation is not supported"});
}

TEST_CASE("GradientTape: intermediates are freed, during backward and after") {
  std::weak_ptr<Storage> late;   // saved by a node near the end of the graph
  std::weak_ptr<Storage> early;  // saved by an early node
  bool late_was_freed_before_early_backward = false;
  auto f = [&](const Tensor& x) {
    const Tensor a = exp(x);  // saves its output a
    early = a.storage();
    const Tensor b = custom_gradient(
        {a}, [](const std::vector<Tensor>& in) { return mul(in[0], 1.0); },
        [&](const CustomGradContext& c) {
          // The reverse sweep has finished every later node: what they saved is gone.
          late_was_freed_before_early_backward = late.expired();
          return std::vector<Tensor>{c.output_grads[0]};
        });
    const Tensor e = exp(b);  // saves e
    late = e.storage();
    return sum(e);
  };
  auto r = value_and_grad(f)(tensor({0.1, 0.2}));
  CHECK(late_was_freed_before_early_backward);
  CHECK(early.expired());
  CHECK(late.expired());
  check_close(r.grad, Shape{2}, {std::exp(0.1) * std::exp(std::exp(0.1)), std::exp(0.2) * std::exp(std::exp(0.2))},
              {1e-12, 1e-12});
}

TEST_CASE("GradientTape: each thread records its own tape") {
  std::vector<double> results(2, 0.0);
  auto work = [&](int i) {
    const Tensor x = full({4}, static_cast<double>(i + 1), DType::float64);
    for (int rep = 0; rep < 50; ++rep) {
      auto r = value_and_grad([](const Tensor& x) { return sum(mul(x, x)); })(x);
      results[static_cast<size_t>(i)] = r.grad.to_vector<double>()[0];
    }
  };
  std::thread t0(work, 0), t1(work, 1);
  t0.join();
  t1.join();
  CHECK(results[0] == 2.0);
  CHECK(results[1] == 4.0);
}

TEST_CASE("custom_gradient: a fused softmax cross-entropy matches autodiff of the composite") {
  // loss = mean over rows of -log softmax(z)[label]; the fused backward is (softmax(z) - onehot) / n,
  // one pass instead of differentiating log_softmax, take_along_axis and mean op by op.
  const Tensor logits = tensor({0.2, -1.0, 0.5, 1.5, 0.3, -0.7, 0.0, 2.0, -0.4}, {3, 3});
  const Tensor labels = tensor({int64_t{2}, int64_t{0}, int64_t{1}}, {3, 1});
  auto composite = [&labels](const Tensor& z) {
    return neg(mean(take_along_axis(log_softmax(z, -1), labels, -1)));
  };
  auto fused = [&labels](const Tensor& z) {
    return custom_gradient(
        {z},
        [&labels](const std::vector<Tensor>& in) {
          return neg(mean(take_along_axis(log_softmax(in[0], -1), labels, -1)));
        },
        [&labels](const CustomGradContext& c) {
          const Tensor& z = c.inputs[0];
          const Tensor onehot = one_hot(labels.reshape(Shape{3}), 3, DType::float64);
          const Tensor dz = div(sub(softmax(z, -1), onehot), static_cast<double>(z.size(0)));
          return std::vector<Tensor>{mul(dz, c.output_grads[0])};
        });
  };
  auto expected = value_and_grad(composite)(logits);
  auto got = value_and_grad(fused)(logits);
  CHECK(got.value.item<double>() == doctest::Approx(expected.value.item<double>()).epsilon(1e-14));
  check_close(got.grad, expected.grad, {1e-14, 1e-12});
  // And inside a larger function the fused node composes with recorded ops.
  auto scaled = [&fused](const Tensor& z) { return mul(fused(mul(z, 2.0)), 3.0); };
  auto scaled_ref = [&composite](const Tensor& z) { return mul(composite(mul(z, 2.0)), 3.0); };
  check_close(grad(scaled)(logits), grad(scaled_ref)(logits), {1e-14, 1e-12});
}

namespace {
// Counts its copies: value_and_grad must pass constant arguments by reference.
struct CopyCounter {
  int* copies;
  explicit CopyCounter(int* c) : copies(c) {}
  CopyCounter(const CopyCounter& other) : copies(other.copies) { ++*copies; }
  CopyCounter& operator=(const CopyCounter&) = delete;
};
}  // namespace

TEST_CASE("value_and_grad: constant arguments are passed by reference, never copied") {
  int copies = 0;
  const CopyCounter counter(&copies);
  auto f = [](const Tensor& x, const CopyCounter& c) {
    CHECK(c.copies != nullptr);
    return sum(x);
  };
  auto r = value_and_grad(f)(tensor({1.0, 2.0}), counter);
  CHECK(copies == 0);
  check_close(r.grad, Shape{2}, {1.0, 1.0}, kExact);
}
