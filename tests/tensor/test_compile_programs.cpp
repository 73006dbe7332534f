// compile (tensor/compile.h) on random programs: chains of the ops a training step is made of
// (Dense layers with and without bias and activation, unary and binary maps, row and column
// broadcasts, transposed and sliced views, concatenation, reductions, selects, products of a
// transpose), differentiated with respect to every input and recorded once. Each program is
// replayed on new values, on the first values again and on another batch size (a second plan),
// and every output must equal eager's bit for bit. What this covers that the single-op gradient
// table does not: buffers reused by liveness across many kernels, GEMM epilogues fused inside
// longer chains (and the chains that must stay unfused because a buffer is still read), views
// of arena buffers, steps that allocate nothing, and replays on two threads. The programs come
// from fixed seeds (150 float32, 50 float64). Checked against mutations: fusing a GEMM whose
// output a later step reads, and handing out an arena block that is still live, both fail it.
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include <ctrax/autograd/grad.h>
#include <ctrax/tensor/compile.h>
#include <ctrax/tensor/ops.h>

#include "test_util.h"

using namespace ctrax;

namespace {

using test::bitwise_equal;

enum class Kind { dense, unary, binary, scalar, row_broadcast, column_broadcast, transpose, slice, concat, select,
                  transposed_product, reduce };

// One step: reads values[a] (and values[b]) and appends one value. A dense step also reads its
// weight inputs and appends its product and biased product too when an epilogue follows them.
struct Step {
  Kind kind;
  int a = 0, b = 0;
  int op = 0;          // which unary / binary map, activation or reduction
  int weight = -1;     // dense: input index of W (the bias is weight + 1 when bias is set)
  bool bias = false;
  int64_t start = 0, stop = 0, stride = 1;  // slice
  int axis = 0;
};

struct Program {
  std::vector<Step> steps;
  std::vector<Shape> weight_shapes;  // inputs 1.. (input 0 is the batch)
  std::vector<int> losses;           // values whose sum of squares is the loss
  int64_t features = 0;
};

struct Generator {
  std::mt19937_64 gen;
  explicit Generator(uint64_t seed) : gen(seed) {}
  int pick(int n) { return static_cast<int>(gen() % static_cast<uint64_t>(n)); }
  template <typename T>
  T choose(std::initializer_list<T> xs) { return *(xs.begin() + pick(static_cast<int>(xs.size()))); }
};

// A value's shape while a program is made: each dimension a size or kBatch, the batch's rows
// (a program fixes every size but the batch's, so another batch size is another valid call).
constexpr int64_t kBatch = -1;
struct Sym {
  int64_t rows;
  int64_t cols;
};

Program make_program(uint64_t seed) {
  Generator g(seed);
  Program p;
  p.features = g.choose<int64_t>({1, 3, 4, 17});
  std::vector<Sym> values{{kBatch, p.features}};
  const int n_steps = 4 + g.pick(9);
  for (int s = 0; s < n_steps; ++s) {
    Step st;
    st.a = g.pick(static_cast<int>(values.size()));
    const Sym va = values[static_cast<size_t>(st.a)];
    Sym out = va;
    // A partner for the steps that read two values: a random value of the shape `same` accepts
    // (-1 when there is none).
    const auto partner = [&](auto same) {
      std::vector<int> ok;
      for (size_t i = 0; i < values.size(); ++i)
        if (same(values[i])) ok.push_back(static_cast<int>(i));
      return ok.empty() ? -1 : ok[static_cast<size_t>(g.pick(static_cast<int>(ok.size())))];
    };
    st.kind = static_cast<Kind>(g.pick(12));
    // A weight's shape and a concatenation's width must not depend on the batch (another batch
    // size must stay a valid call); such steps on a batch-wide value become unary maps.
    const bool batch_cols = va.cols == kBatch;
    if (batch_cols && (st.kind == Kind::dense || st.kind == Kind::concat)) st.kind = Kind::unary;
    switch (st.kind) {
      case Kind::dense: {
        const int64_t width = g.choose<int64_t>({1, 2, 3, 16, 64, 65});
        st.weight = 1 + static_cast<int>(p.weight_shapes.size());
        p.weight_shapes.push_back({va.cols, width});
        st.bias = g.pick(3) != 0;
        if (st.bias) p.weight_shapes.push_back({width});
        st.op = g.pick(3);  // none, relu, tanh
        out = {va.rows, width};
        // The product and the biased product are values too, which later steps may read: then
        // the epilogue must not skip them.
        if (st.bias || st.op != 0) values.push_back(out);
        if (st.bias && st.op != 0) values.push_back(out);
        break;
      }
      case Kind::unary: st.op = g.pick(7); break;
      case Kind::binary: {
        st.b = partner([&](const Sym& v) { return v.rows == va.rows && v.cols == va.cols; });
        if (st.b < 0) st.b = st.a;  // the value with itself
        st.op = g.pick(5);
        break;
      }
      case Kind::scalar: st.op = g.pick(3); break;
      case Kind::row_broadcast: {  // v op (a [1, cols] row made from a partner by a sum over rows)
        st.b = partner([&](const Sym& v) { return v.cols == va.cols; });
        st.op = g.pick(3);
        break;
      }
      case Kind::column_broadcast: st.op = g.pick(3); break;  // v op mean(v, axis 1)
      case Kind::transpose: out = {va.cols, va.rows}; break;
      case Kind::slice: {
        st.axis = va.cols != kBatch ? 1 : 0;
        const int64_t size = st.axis == 1 ? va.cols : va.rows;
        if (size == kBatch || size < 2) {
          st.kind = Kind::unary;
          st.op = g.pick(7);
          break;
        }
        st.start = g.pick(static_cast<int>(size / 2));
        st.stride = g.choose<int64_t>({1, 2});
        st.stop = st.start + 1 + g.pick(static_cast<int>(size - st.start));
        const int64_t kept = (st.stop - st.start + st.stride - 1) / st.stride;
        out = st.axis == 1 ? Sym{va.rows, kept} : Sym{kept, va.cols};
        break;
      }
      case Kind::concat: {
        st.b = partner([&](const Sym& v) { return v.rows == va.rows && v.cols != kBatch; });
        out = {va.rows, va.cols + values[static_cast<size_t>(st.b)].cols};
        break;
      }
      case Kind::select: break;  // where(v > 0, v, 0.1 v)
      case Kind::transposed_product: {  // v^T @ u, a weight gradient's shape
        st.b = partner([&](const Sym& v) { return v.rows == va.rows; });
        out = {va.cols, values[static_cast<size_t>(st.b)].cols};
        break;
      }
      case Kind::reduce: {
        st.axis = g.pick(2);
        st.op = g.pick(2);  // sum, mean (keepdims)
        out = st.axis == 0 ? Sym{1, va.cols} : Sym{va.rows, 1};
        break;
      }
    }
    p.steps.push_back(st);
    values.push_back(out);
  }
  // The loss: the last value and a few others.
  p.losses.push_back(static_cast<int>(values.size()) - 1);
  for (int i = 0; i < 2; ++i) p.losses.push_back(1 + g.pick(static_cast<int>(values.size()) - 1));
  return p;
}

Tensor unary(int op, const Tensor& x) {
  switch (op) {
    case 0: return relu(x);
    case 1: return tanh(x);
    case 2: return sigmoid(x);
    case 3: return square(x);
    case 4: return neg(x);
    case 5: return exp(tanh(x));
    default: return softplus(x);
  }
}

Tensor binary(int op, const Tensor& x, const Tensor& y) {
  switch (op) {
    case 0: return add(x, y);
    case 1: return sub(x, y);
    case 2: return mul(x, y);
    case 3: return maximum(x, y);
    default: return minimum(x, y);
  }
}

// The program's values from its inputs (input 0 the batch, the rest its weights).
std::vector<Tensor> run_program(const Program& p, const std::vector<Tensor>& in) {
  std::vector<Tensor> v{in[0]};
  for (const Step& s : p.steps) {
    const Tensor& a = v[static_cast<size_t>(s.a)];
    switch (s.kind) {
      case Kind::dense: {
        Tensor y = matmul(a, in[static_cast<size_t>(s.weight)]);
        if (s.bias) {
          v.push_back(y);
          y = add(y, in[static_cast<size_t>(s.weight) + 1]);
        }
        if (s.op != 0) {
          v.push_back(y);
          y = s.op == 1 ? relu(y) : tanh(y);
        }
        v.push_back(y);
        break;
      }
      case Kind::unary: v.push_back(unary(s.op, a)); break;
      case Kind::binary: v.push_back(binary(s.op, a, v[static_cast<size_t>(s.b)])); break;
      case Kind::scalar: v.push_back(s.op == 0 ? mul(a, 0.5) : s.op == 1 ? add(a, 1.5) : sub(2.0, a)); break;
      case Kind::row_broadcast:
        v.push_back(binary(s.op, a, sum(v[static_cast<size_t>(s.b)], {0}, true)));
        break;
      case Kind::column_broadcast: v.push_back(binary(s.op, a, mean(a, {1}, true))); break;
      case Kind::transpose: v.push_back(a.transpose(0, 1)); break;
      case Kind::slice: v.push_back(a.slice(s.axis, s.start, s.stop, s.stride)); break;
      case Kind::concat: v.push_back(concatenate({a, v[static_cast<size_t>(s.b)]}, 1)); break;
      case Kind::select: v.push_back(where(gt(a, scalar_like(0.0, a)), a, mul(a, 0.1))); break;
      case Kind::transposed_product: v.push_back(matmul(a.transpose(0, 1), v[static_cast<size_t>(s.b)])); break;
      case Kind::reduce:
        v.push_back(s.op == 0 ? sum(a, {s.axis}, true) : mean(a, {s.axis}, true));
        break;
    }
  }
  return v;
}

// The step a Trainer would compile: the loss, its gradient with respect to every input, and the
// program's last value.
std::vector<Tensor> step(const Program& p, const std::vector<Tensor>& in) {
  std::vector<Tensor> last;
  const auto loss = [&](const std::vector<Tensor>& xs) {
    const std::vector<Tensor> v = run_program(p, xs);
    Tensor total = sum(square(v[static_cast<size_t>(p.losses[0])]));
    for (size_t i = 1; i < p.losses.size(); ++i)
      total = add(total, mul(sum(square(v[static_cast<size_t>(p.losses[i])])), 0.25 * static_cast<double>(i)));
    last = {v.back()};
    return total;
  };
  auto [value, grads, aux] = value_and_grad(loss)(in);
  std::vector<Tensor> out{value};
  for (const Tensor& g : grads) out.push_back(g);
  out.push_back(last[0].contiguous());
  return out;
}

std::vector<Tensor> inputs(const Program& p, int64_t rows, uint64_t seed, DType dtype) {
  std::vector<Tensor> in{test::random_tensor({rows, p.features}, dtype, seed)};
  for (size_t i = 0; i < p.weight_shapes.size(); ++i)
    in.push_back(test::random_tensor(p.weight_shapes[i], dtype, seed * 100 + i, -0.7, 0.7));
  return in;
}

std::string describe(const Program& p) {
  std::string s;
  for (const Step& st : p.steps) s += std::to_string(static_cast<int>(st.kind)) + ":" + std::to_string(st.op) + " ";
  return s;
}

}  // namespace

TEST_CASE("compile: random training-step programs replay eager bit for bit and allocate nothing") {
  CompileLogSink quiet = set_compile_log_sink(nullptr);
  int64_t fused = 0, recorded_kernels = 0;
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    const Program p = make_program(seed);
    const DType dtype = seed <= 150 ? DType::float32 : DType::float64;
    CAPTURE(seed);
    CAPTURE(describe(p));
    CompiledFunction compiled([&p](const std::vector<Tensor>& in) { return step(p, in); });
    const int64_t rows = seed % 3 == 0 ? 64 : seed % 3 == 1 ? 5 : 1;
    // Every fourth program records and replays on two threads, against eager on one: results
    // must not depend on the thread count (its second batch size is large enough to split).
    const int threads = seed % 4 == 0 ? 2 : 1;
    const int64_t other_rows = threads == 2 ? 1024 : rows == 64 ? 7 : 64;
    const std::vector<std::vector<Tensor>> calls{inputs(p, rows, seed, dtype), inputs(p, rows, seed + 1000, dtype),
                                                 inputs(p, rows, seed, dtype), inputs(p, other_rows, seed + 2000, dtype),
                                                 inputs(p, rows, seed + 3000, dtype)};
    for (size_t c = 0; c < calls.size(); ++c) {
      CAPTURE(c);
      const test::ThreadCountGuard restore;
      kernels::set_num_threads(1);
      const std::vector<Tensor> want = step(p, calls[c]);
      kernels::set_num_threads(threads);
      const AllocationStats before = allocation_stats();
      const std::vector<Tensor>& got = compiled(calls[c]);
      const AllocationStats after = allocation_stats();
      if (c == 1 || c == 2 || c == 4) CHECK(after.storages_allocated == before.storages_allocated);  // replays
      REQUIRE(got.size() == want.size());
      for (size_t i = 0; i < got.size(); ++i) {
        CAPTURE(i);
        REQUIRE(got[i].defined() == want[i].defined());
        if (want[i].defined()) CHECK(bitwise_equal(got[i], want[i]));
      }
      if (c == 0) {
        fused += compiled.stats().fused_epilogues;
        recorded_kernels += compiled.stats().kernels;
      }
    }
    CHECK(compiled.stats().recordings == 2);
    CHECK(compiled.stats().replays == 3);
    CHECK(compiled.stats().eager_calls == 0);
  }
  // The programs exercise the fusions, not only plain kernels.
  CHECK(fused > 40);
  CHECK(recorded_kernels > 5000);
}
