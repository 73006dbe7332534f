// Combinators: Trax's stack semantics, weight sharing, error paths.
#include <doctest/doctest.h>

#include <ctrax/autograd/grad.h>
#include <ctrax/layers/combinators.h>
#include <ctrax/layers/core.h>
#include <ctrax/layers/normalization.h>
#include <ctrax/layers/summary.h>
#include <ctrax/autograd/gradcheck.h>

#include <memory>
#include <sstream>
#include <ctrax/tensor/ops.h>

#include "../test_util.h"

using namespace ctrax;
using test::check_close;
using test::check_error;

namespace {
const test::Tolerance kExact{1e-12, 1e-12};
Tensor vec(std::initializer_list<double> v) { return tensor(v); }
}  // namespace

TEST_CASE("layers: n_in and n_out of nested combinators follow Trax's rule") {
  struct Expect {
    LayerPtr layer;
    int n_in, n_out;
  };
  const std::vector<Expect> cases = {
      {Serial({}), 1, 1},
      {Serial({Dup(), Add()}), 1, 1},
      {Serial({Add(), Add()}), 3, 1},      // needs 2, then 1 + 2 = 3 deep; 3 - 2 consumed
      {Serial({Dup(), Dup()}), 1, 3},
      {Serial({Drop(), Drop()}), 2, 0},
      {Serial({Swap(), Drop()}), 2, 1},
      {Serial({Dup(), Swap(), Add(), Drop()}), 1, 0},
      {Parallel({Dup(), Drop()}), 2, 2},
      {Parallel({Add(), nullptr, Dup()}), 4, 4},
      {Branch({Relu(), Tanh()}), 1, 2},
      {Branch({Add(), Relu()}), 2, 2},     // Select(0, 1, 0) then Parallel(Add, Relu)
      {Residual({Dense(3)}), 1, 1},
      {Select({2, 0}), 3, 2},
      {Select({1, 1, 1}, 4), 4, 3},
      {Serial({Select({0, 0}), Serial({Add(), Dup()}), Multiply()}), 1, 1},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    INFO("case " << i << ": " << cases[i].layer->name());
    CHECK(cases[i].layer->n_in() == cases[i].n_in);
    CHECK(cases[i].layer->n_out() == cases[i].n_out);
  }
}

TEST_CASE("layers: Select, Swap, Dup, Drop and SubtractTop order the stack as Trax does") {
  const Stack in{vec({1.0}), vec({2.0}), vec({3.0})};
  auto values = [](const Stack& s) {
    std::vector<double> v;
    for (const Tensor& t : s) v.push_back(t.item<double>());
    return v;
  };
  CHECK(values((*Select({2, 0, 0}))(in)) == std::vector<double>{3.0, 1.0, 1.0});
  CHECK(values((*Serial({Swap()}))(Stack{in[0], in[1]})) == std::vector<double>{2.0, 1.0});
  CHECK(values((*Dup())(Stack{in[0]})) == std::vector<double>{1.0, 1.0});
  CHECK((*Drop())(Stack{in[0]}).empty());
  CHECK(values((*SubtractTop())(Stack{in[0], in[1]})) == std::vector<double>{1.0});  // x1 - x0
  // Serial passes the untouched rest of the stack through, below the outputs.
  CHECK(values((*Serial({Select({0, 1, 2}), Add()}))(in)) == std::vector<double>{3.0, 3.0});
  // A layer takes exactly n_in items.
  check_error([&] { (*Serial({Add()}))(in); }, {"Serial: expected 2 inputs, got 3"});
  CHECK(values((*Branch({Add(), Multiply()}))(Stack{in[1], in[2]})) == std::vector<double>{5.0, 6.0});
  CHECK(values((*Parallel({Dup(), nullptr}))(Stack{in[0], in[2]})) == std::vector<double>{1.0, 1.0, 3.0});
}

TEST_CASE("layers: Residual adds its body to the input, or to a shortcut") {
  LayerPtr r = Residual({Fn("Double", [](const Tensor& x) { return mul(x, 2.0); })});
  check_close((*r)(vec({1.0, 3.0})), Shape{2}, {3.0, 9.0}, kExact);
  LayerPtr with_shortcut = Residual({Fn("Double", [](const Tensor& x) { return mul(x, 2.0); })},
                                    Fn("Negate", [](const Tensor& x) { return neg(x); }));
  check_close((*with_shortcut)(vec({1.0, 3.0})), Shape{2}, {1.0, 3.0}, kExact);
}

TEST_CASE("layers: init splits the rng per sublayer and is deterministic") {
  LayerPtr model = Serial({Dense(4), Relu(), Dense(2)});
  auto [w1, s1] = model->init({{Shape{5, 3}, DType::float32}}, Key(7));
  auto [w2, s2] = model->init({{Shape{5, 3}, DType::float32}}, Key(7));
  auto [w3, s3] = model->init({{Shape{5, 3}, DType::float32}}, Key(8));
  REQUIRE(w1.num_leaves() == 4);
  CHECK(w1.paths() == std::vector<std::string>{"0/bias", "0/kernel", "2/bias", "2/kernel"});
  CHECK(w1[0]["kernel"].leaf().shape() == Shape{3, 4});
  CHECK(w1[2]["kernel"].leaf().shape() == Shape{4, 2});
  CHECK(w1[0]["kernel"].leaf().to_vector<float>() == w2[0]["kernel"].leaf().to_vector<float>());
  CHECK(w1[0]["kernel"].leaf().to_vector<float>() != w3[0]["kernel"].leaf().to_vector<float>());
  // The two Dense layers get different keys.
  CHECK(w1[0]["kernel"].leaf().to_vector<float>()[0] != w1[2]["kernel"].leaf().to_vector<float>()[0]);
  CHECK(model->output_signature({{Shape{5, 3}, DType::float32}}) == Signature{{Shape{5, 2}, DType::float32}});
  CHECK(Layer::count_parameters(w1) == 3 * 4 + 4 + 4 * 2 + 2);
}

TEST_CASE("layers: a shared instance has one set of weights and their gradients add up") {
  LayerPtr shared = Dense(2, DenseOptions{glorot_uniform(), normal_init(0.1), true});
  LayerPtr model = Serial({shared, Tanh(), shared});
  auto initialized = model->init({{Shape{3, 2}, DType::float64}}, Key(1));
  Tree& w = initialized.first;
  Tree& s = initialized.second;
  REQUIRE(w[0].num_leaves() == 2);
  CHECK(w[2].num_leaves() == 0);  // the second occurrence carries no weights of its own
  const Tensor x = test::random_tensor(Shape{3, 2}, DType::float64, 5);
  auto loss = [&](const Tree& weights) {
    return sum(square(model->apply({x}, weights, s).outputs[0]));
  };
  // The same function written out: the one kernel and bias used twice.
  auto reference = [&](const Tree& weights) {
    const Tensor& k = weights[0]["kernel"].leaf();
    const Tensor& b = weights[0]["bias"].leaf();
    return sum(square(add(matmul(tanh(add(matmul(x, k), b)), k), b)));
  };
  auto got = value_and_grad(loss)(w);
  auto want = value_and_grad(reference)(w);
  CHECK(got.value.item<double>() == doctest::Approx(want.value.item<double>()).epsilon(1e-14));
  check_close(got.grad[0]["kernel"].leaf(), want.grad[0]["kernel"].leaf(), kExact);
  check_close(got.grad[0]["bias"].leaf(), want.grad[0]["bias"].leaf(), kExact);
}

TEST_CASE("layers: bad input names the path to the failing layer and the signature") {
  LayerPtr model = Serial({Dense(4), Branch({Dense(2), Serial({Dense(64)}, "Tower")}, "Heads")}, "Model");
  auto initialized = model->init({{Shape{2, 5}, DType::float32}}, Key(0));
  Tree& w = initialized.first;
  Tree& s = initialized.second;
  check_error([&] { model->apply({zeros({2, 3})}, w, s); },
              {"Model > Dense_4[0]: input has last dimension 3, expected 5", "(inputs (float32[2, 3]))"});
  // A deeper failure: weights of the wrong shape for one head.
  Tree bad = w;
  bad[1][1][1][0]["kernel"].leaf() = zeros({3, 64});
  check_error([&] { model->apply({zeros({2, 5})}, bad, s); },
              {"Model > Heads[1] > Parallel[1] > Tower[1] > Dense_64[0]: input has last dimension 4, expected 3"});
  check_error([&] { (*Add())(Stack{zeros({2})}); }, {"Add: expected 2 inputs, got 1"});
  check_error([&] { Select({0, -1}); }, {"Select: indices must be >= 0"});
  check_error([&] { Fn("Broken", [](const Stack&) { return Stack{}; }, 1, 1)->apply({zeros({1})}, Tree(), Tree()); },
              {"Broken: the function returned 0 items, expected 1"});
  check_error([&] { (*Serial({Dense(2)}))(zeros({3}, DType::int32)); }, {"Dense_2", "int32 is not a float dtype"});
}

TEST_CASE("layers: Gate, Concatenate and Split") {
  const Tensor g = tensor({0.25, 1.0}), m = tensor({4.0, 4.0}), c = tensor({8.0, 8.0});
  check_close((*Gate())(Stack{g, m, c})[0], Shape{2}, {7.0, 4.0}, kExact);
  const Stack parts = (*Split(2, -1))(Stack{tensor({1.0, 2.0, 3.0, 4.0}, {1, 4})});
  REQUIRE(parts.size() == 2);
  check_close(parts[1], Shape{1, 2}, {3.0, 4.0}, kExact);
  check_close((*Concatenate(2, -1))(parts)[0], Shape{1, 4}, {1.0, 2.0, 3.0, 4.0}, kExact);
  check_error([] { Concatenate(0); }, {"n_items must be >= 1"});
}

TEST_CASE("layers: Scan threads a carry over an axis, with gradients") {
  // step(x_t, h) = (y_t, h') with h' = tanh(x_t W + h) and y_t = h'.
  LayerPtr step = Serial({Parallel({Dense(3, DenseOptions{glorot_uniform(), nullptr, false}), nullptr}), Add(), Tanh(),
                          Dup()});
  LayerPtr scan = Scan(step, 1, 1);  // xs [batch, time, features], carry [batch, 3]
  CHECK(scan->n_in() == 2);
  CHECK(scan->n_out() == 2);
  const Tensor xs = test::random_tensor(Shape{2, 4, 5}, DType::float64, 3);
  const Tensor h0 = zeros({2, 3}, DType::float64);
  auto initialized = scan->init(signature_of({xs, h0}), Key(4));
  Tree& w = initialized.first;
  Tree& s = initialized.second;
  const LayerResult r = scan->apply({xs, h0}, w, s);
  REQUIRE(r.outputs.size() == 2);
  CHECK(r.outputs[0].shape() == Shape{2, 4, 3});
  // The same recurrence written out.
  const Tensor& kernel = w[0][0][0]["kernel"].leaf();
  Tensor h = h0;
  for (int64_t t = 0; t < 4; ++t) {
    h = tanh(add(matmul(xs.select(1, t), kernel), h));
    check_close(r.outputs[0].select(1, t), h, kExact);
  }
  check_close(r.outputs[1], h, kExact);
  const GradcheckResult gc = gradcheck(
      [&](const std::vector<Tensor>& in) {
        Tree wk = w;
        wk[0][0][0]["kernel"].leaf() = in[2];
        return scan->apply({in[0], in[1]}, wk, s).outputs[0];
      },
      {xs, test::random_tensor(Shape{2, 3}, DType::float64, 5), kernel});
  INFO(gc.message);
  CHECK(gc.ok);
  check_error([&] { scan->apply({zeros({2}, DType::float64), h0}, w, s); }, {"Scan"});
}

TEST_CASE("layers: Cond runs only the branch its condition picks") {
  int true_runs = 0, false_runs = 0;
  LayerPtr cond = Cond(Fn("Positive", [](const Tensor& x) { return gt(sum(x), scalar_tensor(0.0, DType::float64)); }),
                       Fn("Double", [&true_runs](const Tensor& x) { ++true_runs; return mul(x, 2.0); }),
                       Fn("Halve", [&false_runs](const Tensor& x) { ++false_runs; return mul(x, 0.5); }));
  CHECK(cond->n_in() == 2);
  check_close((*cond)(Stack{tensor({1.0}), tensor({3.0})})[0], Shape{1}, {6.0}, kExact);
  check_close((*cond)(Stack{tensor({-1.0}), tensor({3.0})})[0], Shape{1}, {1.5}, kExact);
  CHECK(true_runs == 1);
  CHECK(false_runs == 1);
  LayerPtr identity_else = Cond(Fn("Positive", [](const Tensor& x) { return gt(sum(x), scalar_tensor(0.0, DType::float64)); }),
                                Fn("Double", [](const Tensor& x) { return mul(x, 2.0); }));
  check_close((*identity_else)(Stack{tensor({-1.0}), tensor({3.0})})[0], Shape{1}, {3.0}, kExact);
  check_error([] { Cond(Dup(), Add(), Dup()); }, {"Cond: the branches differ in arity"});
}

TEST_CASE("layers: a summary lists every layer with shapes and parameter counts") {
  LayerPtr shared = Dense(4);
  LayerPtr model = Serial({shared, Relu(), shared, Dense(2)}, "Net");
  const std::string text = summary(*model, {{Shape{8, 4}, DType::float32}});
  const std::string expected =
      "Net           (float32[8, 4]) -> (float32[8, 2])  30\n"
      "  Dense_4[0]  (float32[8, 4]) -> (float32[8, 4])  20\n"
      "  Relu[1]     (float32[8, 4]) -> (float32[8, 4])  0\n"
      "  Dense_4[2]  (float32[8, 4]) -> (float32[8, 4])  0\n"
      "  Dense_2[3]  (float32[8, 4]) -> (float32[8, 2])  10\n"
      "total parameters: 30\n";
  CHECK(text == expected);
  std::ostringstream structure;
  structure << *Residual({Dense(3)});
  CHECK(structure.str().find("Residual  (in 1, out 1)") == 0);
  CHECK(structure.str().find("      Dense_3  (in 1, out 1)") != std::string::npos);
}

TEST_CASE("layers: Fn takes n_in from the function's arity") {
  LayerPtr two = Fn("AddThenDouble", [](const Tensor& a, const Tensor& b) { return mul(add(a, b), 2.0); });
  CHECK(two->n_in() == 2);
  CHECK(two->n_out() == 1);
  check_close((*two)(Stack{tensor({1.0}), tensor({2.0})})[0], Shape{1}, {6.0}, kExact);
  LayerPtr three_to_two = Fn(
      "SumAndProduct", [](const Tensor& a, const Tensor& b, const Tensor& c) { return Stack{add(add(a, b), c), mul(mul(a, b), c)}; },
      2);
  CHECK(three_to_two->n_in() == 3);
  CHECK(three_to_two->n_out() == 2);
  const Stack out = (*three_to_two)(Stack{tensor({1.0}), tensor({2.0}), tensor({3.0})});
  check_close(out[1], Shape{1}, {6.0}, kExact);
  LayerPtr none = Fn("Constant", []() { return tensor({7.0}); });
  CHECK(none->n_in() == 0);
  check_error([] { Fn("Twice", [](const Tensor& a) { return mul(a, 2.0); }, 2); },
              {"a function returning one Tensor has n_out = 1, got 2"});
}

TEST_CASE("layers: gradients flow through nested combinators") {
  // Residual(Branch(Dense, Tanh) -> Concatenate -> Dense), then a Gate against two more heads.
  LayerPtr model = Serial({Residual({Branch({Dense(3), Tanh()}), Concatenate(2, -1), Dense(3)}),
                           Branch({Fn("Gate_input", [](const Tensor& x) { return sigmoid(x); }), Dense(3), Swish()}),
                           Gate(), Select({0, 0}), Multiply()},
                          "Nested");
  const Tensor x = test::random_tensor(Shape{2, 3}, DType::float64, 21);
  auto initialized = model->init({ShapeDtype::of(x)}, Key(5));
  Tree& w = initialized.first;
  Tree& s = initialized.second;
  const Tree structure = w;
  std::vector<Tensor> inputs{x};
  for (const Tensor& t : w.leaves()) inputs.push_back(t);
  const GradcheckResult r = gradcheck(
      [&](const std::vector<Tensor>& in) {
        const std::vector<Tensor> leaves(in.begin() + 1, in.end());
        return model->apply({in[0]}, structure.with_leaves(leaves), s).outputs[0];
      },
      inputs);
  INFO(r.message);
  CHECK(r.ok);
  CHECK(model->n_in() == 1);
  CHECK(model->n_out() == 1);
}

TEST_CASE("combinators: updated_state equals apply's state bit for bit, a Serial stopping after its last stateful sublayer") {
  const Tensor x = test::random_tensor(Shape{5, 2, 3}, DType::float32, 91);
  auto check = [&](const LayerPtr& model, const char* what) {
    INFO(what);
    auto [w, s] = model->init(Signature(static_cast<size_t>(model->n_in()), ShapeDtype::of(x)));
    Tree state = s;
    for (int step = 0; step < 3; ++step) {  // statistics that have moved, too
      const Stack in(static_cast<size_t>(model->n_in()), add(x, static_cast<double>(step)));
      const Tree want = model->apply(in, w, state, Key(4), Mode::collect).state;
      const Tree got = model->updated_state(in, w, state, Key(4), Mode::collect);
      REQUIRE(got.same_structure(want));
      const std::vector<Tensor> a = got.leaves(), b = want.leaves();
      for (size_t i = 0; i < a.size(); ++i) CHECK(test::bitwise_equal(a[i], b[i]));
      state = want;
    }
  };
  check(Serial({Normalize(), Dense(8), Relu(), Dense(2)}), "Normalize first");
  check(Serial({Dense(4), Serial({Normalize(), Dense(3)}), Relu(), Dense(2)}), "Normalize in a nested Serial");
  check(Serial({Dense(4), Relu(), Dense(2)}), "no state at all");
  check(Serial({Normalize(), Dense(4), Normalize(), Dense(2)}), "two Normalize layers");
  check(Parallel({Normalize(), Dense(2)}), "a Parallel (runs whole)");
  // The suffix after the last stateful layer is not run: a Dense that would fail on its input is never reached.
  auto armed = std::make_shared<bool>(false);  // init runs every layer once
  const LayerPtr tail_fails = Serial({Normalize(), Dense(3), Fn("Fails", [armed](const Tensor& t) -> Tensor {
                                         if (*armed) throw Error("not expected to run, got " + to_string(t.shape()));
                                         return t;
                                       })});
  auto [w, s] = tail_fails->init({ShapeDtype::of(x)});
  *armed = true;
  CHECK(tail_fails->updated_state({x}, w, s, Key(), Mode::collect)[0].num_leaves() == 3);
  CHECK_THROWS_AS(tail_fails->apply({x}, w, s, Key(), Mode::collect), Error);
}

TEST_CASE("combinators: updated_state refuses what apply refuses, naming the layer") {
  const LayerPtr model = Serial({Normalize(), Dense(2)});
  const Tensor x = test::random_tensor(Shape{3, 1, 4}, DType::float32, 95);
  const std::pair<Tree, Tree> ws = model->init({ShapeDtype::of(x)});
  const Tree& w = ws.first;  // named: lambdas may not capture structured bindings (clang)
  const Tree& s = ws.second;
  check_error([&] { model->updated_state({x, x}, w, s); }, {"Serial: expected 1 input, got 2"});
  check_error([&] { model->updated_state({zeros({3, 1, 5})}, w, s); }, {"Normalize", "expected [batch, time] followed by the features [4]"});
}
