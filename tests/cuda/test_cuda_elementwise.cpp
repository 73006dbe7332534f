// CUDA elementwise ops (kernels/cuda/elementwise.h through tensor/ops/unary.cpp, binary.cpp)
// against the CPU path: every unary op, binary op (tensor and C++-scalar forms) and where, on
// every dtype, on contiguous (aligned or not, any length), transposed, stepped, broadcast,
// rank-0 and empty operands. The CPU result is the reference: the GPU result must have its
// dtype and shape, equal integer and bool values, and floating values within a few ulp (the
// device's libm differs from glibc's).
// Where the CPU refuses (bool arithmetic, negative integer exponents) the GPU must refuse too.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <ctrax/base/op_list.h>
#include <ctrax/tensor/ops.h>
#include <ctrax/tensor/tensor.h>

#include "test_util.h"

namespace ctrax {
namespace {

const Device kGpu = Device::cuda();

// Values for `shape`: uniform in [lo, hi) (floored for integers, coin flips for bool), with the
// edge values of the dtype at the first positions when `specials` (NaN, +-inf, -0, halves for
// round-half-even, huge values; INT_MIN/INT_MAX for integers, whose neg/abs/square wrap).
Tensor make_input(const Shape& shape, DType dtype, uint64_t seed, double lo, double hi, bool specials) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> real(lo, hi);
  std::vector<double> values(static_cast<size_t>(shape.numel()));
  for (double& v : values) {
    if (is_floating(dtype)) v = real(gen);
    else if (is_bool(dtype)) v = static_cast<double>(gen() & 1);
    else v = std::floor(real(gen));
  }
  if (specials) {
    std::vector<double> edge;
    if (is_floating(dtype)) {
      const double inf = std::numeric_limits<double>::infinity();
      edge = {std::nan(""), inf, -inf, -0.0, 0.0, 0.5, 1.5, 2.5, -2.5, -0.5, 1e30, -1e30, 1e-30};
    } else if (dtype == DType::int32) {
      edge = {static_cast<double>(INT32_MIN), static_cast<double>(INT32_MAX), 0.0, -1.0};
    } else if (dtype == DType::int64) {
      edge = {static_cast<double>(INT64_MIN), 4.0e18, 0.0, -1.0};
    }
    for (size_t i = 0; i < edge.size() && i < values.size(); ++i) values[i] = edge[i];
  }
  return from_vector(values, shape).to(dtype);
}

// How an operand is laid out: a base tensor of base_shape, made on each device, then viewed.
struct Layout {
  const char* name;
  Shape base_shape;
  std::function<Tensor(const Tensor&)> view;
};

Tensor identity(const Tensor& t) { return t; }

std::vector<Layout> unary_layouts() {
  return {
      {"contiguous", Shape{3, 5}, identity},
      {"transposed", Shape{5, 3}, [](const Tensor& t) { return t.transpose(0, 1); }},
      {"stepped", Shape{6, 5}, [](const Tensor& t) { return t.slice(0, 0, 6, 2); }},
      {"broadcast", Shape{1, 5}, [](const Tensor& t) { return t.expand(Shape{3, 5}); }},
      {"rank3 permuted", Shape{2, 3, 4}, [](const Tensor& t) { return t.permute({2, 0, 1}); }},
      {"rank0", Shape{}, identity},
      {"empty", Shape{0, 4}, identity},
      {"large", Shape{256, 257}, identity},
      // Contiguous views at an offset: one element in (not 16-byte aligned, so the kernels'
      // one-element path) and four in (aligned for float32: the packed path, whose leftover
      // n % 4 elements go one per thread).
      {"offset by one", Shape{23}, [](const Tensor& t) { return t.slice(0, 1, 23); }},
      {"offset by four", Shape{23}, [](const Tensor& t) { return t.slice(0, 4, 23); }},
  };
}

// Checks the GPU result against the CPU one: same dtype and shape, values within tolerance.
void check_same(const Tensor& cpu, const Tensor& gpu, bool loose, const std::string& what) {
  INFO(what);
  REQUIRE(gpu.device() == kGpu);
  REQUIRE(gpu.dtype() == cpu.dtype());
  test::Tolerance tol = test::default_tolerance(cpu.dtype());
  // Transcendental functions: the device libm is within 2 ulp, glibc within 1, so allow a few
  // float32 ulps (1.2e-7 each) and float64 ulps (2.2e-16 each).
  if (loose && cpu.dtype() == DType::float32) tol = {1e-6, 2e-6};
  if (loose && cpu.dtype() == DType::float64) tol = {1e-14, 4e-15};
  test::check_close(gpu.to(Device::cpu()), cpu, tol, what);
}

// Runs f on the CPU inputs and on their GPU copies; either both throw ctrax::Error or both
// give results that check_same accepts.
void run_both(const std::function<Tensor(const std::vector<Tensor>&)>& f, const std::vector<Tensor>& cpu_inputs,
              const std::vector<Tensor>& gpu_inputs, bool loose, const std::string& what) {
  Tensor expected;
  bool cpu_threw = false;
  try {
    expected = f(cpu_inputs);
  } catch (const Error&) {
    cpu_threw = true;
  }
  if (cpu_threw) {
    INFO(what);
    CHECK_THROWS_AS(f(gpu_inputs), Error);
    return;
  }
  Tensor got;
  try {
    got = f(gpu_inputs);
  } catch (const Error& e) {
    FAIL_CHECK(what << ": GPU threw but CPU did not: " << std::string(e.what()));
    return;
  }
  check_same(expected, got, loose, what);
}

// ---- the op tables ------------------------------------------------------------------------------

struct UnaryEntry {
  const char* op;  // name in base/op_list.h
  const char* variant;
  std::function<Tensor(const Tensor&)> f;
  bool loose;  // transcendental: compare floats with a few ulps
};

std::vector<UnaryEntry> unary_table() {
  return {
      {"neg", "", [](const Tensor& x) { return neg(x); }, false},
      {"abs", "", [](const Tensor& x) { return abs(x); }, false},
      {"sign", "", [](const Tensor& x) { return sign(x); }, false},
      {"exp", "", [](const Tensor& x) { return exp(x); }, true},
      {"log", "", [](const Tensor& x) { return log(x); }, true},
      {"log1p", "", [](const Tensor& x) { return log1p(x); }, true},
      {"expm1", "", [](const Tensor& x) { return expm1(x); }, true},
      {"sqrt", "", [](const Tensor& x) { return sqrt(x); }, false},
      {"rsqrt", "", [](const Tensor& x) { return rsqrt(x); }, false},
      {"square", "", [](const Tensor& x) { return square(x); }, false},
      {"reciprocal", "", [](const Tensor& x) { return reciprocal(x); }, false},
      {"tanh", "", [](const Tensor& x) { return tanh(x); }, true},
      {"sigmoid", "", [](const Tensor& x) { return sigmoid(x); }, true},
      {"softplus", "", [](const Tensor& x) { return softplus(x); }, true},
      {"relu", "", [](const Tensor& x) { return relu(x); }, false},
      {"gelu", "exact", [](const Tensor& x) { return gelu(x, false); }, true},
      {"gelu", "approximate", [](const Tensor& x) { return gelu(x, true); }, true},
      {"sin", "", [](const Tensor& x) { return sin(x); }, true},
      {"cos", "", [](const Tensor& x) { return cos(x); }, true},
      {"floor", "", [](const Tensor& x) { return floor(x); }, false},
      {"ceil", "", [](const Tensor& x) { return ceil(x); }, false},
      {"round", "", [](const Tensor& x) { return round(x); }, false},
      {"clip", "int bounds", [](const Tensor& x) { return clip(x, -1, 1); }, false},
      {"clip", "float bounds", [](const Tensor& x) { return clip(x, -0.75, 1.5); }, false},
      {"clip", "huge bounds", [](const Tensor& x) { return clip(x, -1e20, 1e20); }, false},
      {"isnan", "", [](const Tensor& x) { return isnan(x); }, false},
      {"isfinite", "", [](const Tensor& x) { return isfinite(x); }, false},
      {"logical_not", "", [](const Tensor& x) { return logical_not(x); }, false},
  };
}

struct BinaryEntry {
  const char* op;
  std::function<Tensor(const Tensor&, const Tensor&)> f;
  std::function<Tensor(const Tensor&, Scalar)> with_scalar;        // t (op) s, or null
  std::function<Tensor(Scalar, const Tensor&)> scalar_first;       // s (op) t, or null
  double b_lo, b_hi;  // range of the second operand (pow's integer exponents must be >= 0)
  bool loose;
};

std::vector<BinaryEntry> binary_table() {
  using TT = std::function<Tensor(const Tensor&, const Tensor&)>;
  using TS = std::function<Tensor(const Tensor&, Scalar)>;
  using ST = std::function<Tensor(Scalar, const Tensor&)>;
  return {
      {"add", TT([](const Tensor& a, const Tensor& b) { return add(a, b); }),
       TS([](const Tensor& a, Scalar s) { return add(a, s); }), nullptr, -3, 3, false},
      {"sub", TT([](const Tensor& a, const Tensor& b) { return sub(a, b); }),
       TS([](const Tensor& a, Scalar s) { return sub(a, s); }), ST([](Scalar s, const Tensor& b) { return sub(s, b); }),
       -3, 3, false},
      {"mul", TT([](const Tensor& a, const Tensor& b) { return mul(a, b); }),
       TS([](const Tensor& a, Scalar s) { return mul(a, s); }), nullptr, -3, 3, false},
      {"div", TT([](const Tensor& a, const Tensor& b) { return div(a, b); }),
       TS([](const Tensor& a, Scalar s) { return div(a, s); }), ST([](Scalar s, const Tensor& b) { return div(s, b); }),
       -3, 3, false},
      {"pow", TT([](const Tensor& a, const Tensor& b) { return pow(a, b); }),
       TS([](const Tensor& a, Scalar s) { return pow(a, s); }), nullptr, 0, 5, true},
      {"maximum", TT([](const Tensor& a, const Tensor& b) { return maximum(a, b); }),
       TS([](const Tensor& a, Scalar s) { return maximum(a, s); }), nullptr, -3, 3, false},
      {"minimum", TT([](const Tensor& a, const Tensor& b) { return minimum(a, b); }),
       TS([](const Tensor& a, Scalar s) { return minimum(a, s); }), nullptr, -3, 3, false},
      {"eq", TT([](const Tensor& a, const Tensor& b) { return eq(a, b); }), nullptr, nullptr, -2, 2, false},
      {"ne", TT([](const Tensor& a, const Tensor& b) { return ne(a, b); }), nullptr, nullptr, -2, 2, false},
      {"lt", TT([](const Tensor& a, const Tensor& b) { return lt(a, b); }), nullptr, nullptr, -2, 2, false},
      {"le", TT([](const Tensor& a, const Tensor& b) { return le(a, b); }), nullptr, nullptr, -2, 2, false},
      {"gt", TT([](const Tensor& a, const Tensor& b) { return gt(a, b); }), nullptr, nullptr, -2, 2, false},
      {"ge", TT([](const Tensor& a, const Tensor& b) { return ge(a, b); }), nullptr, nullptr, -2, 2, false},
      {"logical_and", TT([](const Tensor& a, const Tensor& b) { return logical_and(a, b); }), nullptr, nullptr, -2, 2,
       false},
      {"logical_or", TT([](const Tensor& a, const Tensor& b) { return logical_or(a, b); }), nullptr, nullptr, -2, 2,
       false},
  };
}

// Operand pairs for the binary ops: both views are applied to bases made on each device.
struct PairLayout {
  const char* name;
  Layout a, b;
};

std::vector<PairLayout> pair_layouts() {
  return {
      {"same shape", {"", Shape{3, 5}, identity}, {"", Shape{3, 5}, identity}},
      {"row broadcast", {"", Shape{3, 5}, identity}, {"", Shape{5}, identity}},
      {"outer broadcast", {"", Shape{3, 1}, identity}, {"", Shape{1, 5}, identity}},
      {"transposed and stepped",
       {"", Shape{5, 3}, [](const Tensor& t) { return t.transpose(0, 1); }},
       {"", Shape{6, 5}, [](const Tensor& t) { return t.slice(0, 0, 6, 2); }}},
      {"expanded", {"", Shape{1, 5}, [](const Tensor& t) { return t.expand(Shape{3, 5}); }}, {"", Shape{3, 5}, identity}},
      {"rank0 and matrix", {"", Shape{}, identity}, {"", Shape{3, 5}, identity}},
      {"matrix and rank0", {"", Shape{4, 2}, identity}, {"", Shape{}, identity}},
      {"rank0 both", {"", Shape{}, identity}, {"", Shape{}, identity}},
      {"empty", {"", Shape{0, 4}, identity}, {"", Shape{4}, identity}},
      {"large", {"", Shape{256, 257}, identity}, {"", Shape{257}, identity}},
      // Repeated rows (a bias): 8 is a whole number of packs (the packed path), the offset row
      // is not aligned (the one-element path), and a rank-3 left operand.
      {"row broadcast, whole packs", {"", Shape{6, 8}, identity}, {"", Shape{8}, identity}},
      {"row broadcast, unaligned row",
       {"", Shape{6, 8}, identity},
       {"", Shape{9}, [](const Tensor& t) { return t.slice(0, 1, 9); }}},
      {"rank3 and a row", {"", Shape{2, 3, 8}, identity}, {"", Shape{1, 8}, identity}},
      {"offsets one and four",
       {"", Shape{23}, [](const Tensor& t) { return t.slice(0, 1, 23); }},
       {"", Shape{26}, [](const Tensor& t) { return t.slice(0, 4, 26); }}},
      {"offset four and tight",
       {"", Shape{26}, [](const Tensor& t) { return t.slice(0, 4, 26); }},
       {"", Shape{22}, identity}},
  };
}

std::string describe(const char* op, const char* variant, const char* layout, DType a, DType b) {
  return std::string(op) + (variant[0] ? std::string(" (") + variant + ")" : "") + " on " + layout + ", " +
         dtype_name(a) + " / " + dtype_name(b);
}

}  // namespace

TEST_CASE("cuda elementwise: unary ops match the cpu on every dtype and layout") {
  uint64_t seed = 1;
  for (const UnaryEntry& e : unary_table()) {
    for (DType dtype : test::kAllDTypes) {
      for (const Layout& layout : unary_layouts()) {
        const Tensor base = make_input(layout.base_shape, dtype, seed++, -2.5, 2.5, true);
        const Tensor x_cpu = layout.view(base);
        const Tensor x_gpu = layout.view(base.to(kGpu));
        run_both([&e](const std::vector<Tensor>& in) { return e.f(in[0]); }, {x_cpu}, {x_gpu}, e.loose,
                 describe(e.op, e.variant, layout.name, dtype, dtype));
      }
    }
  }
}

TEST_CASE("cuda elementwise: binary ops match the cpu on every dtype pair and broadcast") {
  uint64_t seed = 1000;
  for (const BinaryEntry& e : binary_table()) {
    for (DType da : test::kAllDTypes) {
      for (DType db : test::kAllDTypes) {
        for (const PairLayout& layout : pair_layouts()) {
          const Tensor a_base = make_input(layout.a.base_shape, da, seed++, -3, 3, true);
          const Tensor b_base = make_input(layout.b.base_shape, db, seed++, e.b_lo, e.b_hi, false);
          const std::vector<Tensor> cpu{layout.a.view(a_base), layout.b.view(b_base)};
          const std::vector<Tensor> gpu{layout.a.view(a_base.to(kGpu)), layout.b.view(b_base.to(kGpu))};
          run_both([&e](const std::vector<Tensor>& in) { return e.f(in[0], in[1]); }, cpu, gpu, e.loose,
                   describe(e.op, "", layout.name, da, db));
        }
      }
    }
  }
}

TEST_CASE("cuda elementwise: integer pow refuses negative exponents on the gpu as on the cpu") {
  for (DType dtype : {DType::int32, DType::int64}) {
    const Tensor a = from_vector(std::vector<double>{2, 3, 4}).to(dtype).to(kGpu);
    const Tensor b = from_vector(std::vector<double>{1, -1, 2}).to(dtype).to(kGpu);
    test::check_error([&] { pow(a, b); }, {"negative"});
    test::check_error([&] { pow(a, -2); }, {"negative"});
    // Wrap-around modulo 2^bits: 3^40 overflows both widths.
    const Tensor big = pow(from_vector(std::vector<double>{3}).to(dtype).to(kGpu), 40);
    check_same(pow(from_vector(std::vector<double>{3}).to(dtype), 40), big, false, "3^40 wraps");
  }
}

TEST_CASE("cuda elementwise: scalar forms match the cpu") {
  uint64_t seed = 5000;
  const std::vector<std::pair<const char*, Scalar>> scalars = {
      {"int 2", Scalar(2)}, {"int -3", Scalar(-3)}, {"double 0.5", Scalar(0.5)}, {"double -1e20", Scalar(-1e20)},
      {"bool true", Scalar(true)}, {"int64 big", Scalar(int64_t{1} << 40)}};
  for (const BinaryEntry& e : binary_table()) {
    if (!e.with_scalar && !e.scalar_first) continue;
    for (DType dtype : test::kAllDTypes) {
      for (const Layout& layout : unary_layouts()) {
        const Tensor base = make_input(layout.base_shape, dtype, seed++, e.b_lo, e.b_hi, false);
        const Tensor x_cpu = layout.view(base);
        const Tensor x_gpu = layout.view(base.to(kGpu));
        for (const auto& [sname, s] : scalars) {
          if (e.with_scalar) {
            run_both([&](const std::vector<Tensor>& in) { return e.with_scalar(in[0], s); }, {x_cpu}, {x_gpu}, e.loose,
                     describe(e.op, sname, layout.name, dtype, dtype) + " (tensor op scalar)");
          }
          if (e.scalar_first) {
            run_both([&](const std::vector<Tensor>& in) { return e.scalar_first(s, in[0]); }, {x_cpu}, {x_gpu},
                     e.loose, describe(e.op, sname, layout.name, dtype, dtype) + " (scalar op tensor)");
          }
        }
      }
    }
  }
}

TEST_CASE("cuda elementwise: where matches the cpu with broadcasting and promotion") {
  uint64_t seed = 9000;
  for (DType da : test::kAllDTypes) {
    for (DType db : test::kAllDTypes) {
      for (const PairLayout& layout : pair_layouts()) {
        const Shape cond_shape = layout.b.base_shape;  // cond broadcasts like b
        const Tensor c_base = make_input(cond_shape, DType::boolean, seed++, 0, 2, false);
        const Tensor a_base = make_input(layout.a.base_shape, da, seed++, -3, 3, true);
        const Tensor b_base = make_input(layout.b.base_shape, db, seed++, -3, 3, true);
        const std::vector<Tensor> cpu{c_base, layout.a.view(a_base), layout.b.view(b_base)};
        const std::vector<Tensor> gpu{c_base.to(kGpu), layout.a.view(a_base.to(kGpu)),
                                      layout.b.view(b_base.to(kGpu))};
        run_both([](const std::vector<Tensor>& in) { return where(in[0], in[1], in[2]); }, cpu, gpu, false,
                 describe("where", "", layout.name, da, db));
      }
    }
  }
  // A non-bool cond is refused on the gpu as on the cpu.
  const Tensor x = ones(Shape{3}).to(kGpu);
  test::check_error([&] { where(x, x, x); }, {"cond must be a bool"});
}

TEST_CASE("cuda elementwise: mixing cpu and cuda operands throws naming both devices") {
  const Tensor c = ones(Shape{2, 3});
  const Tensor g = c.to(kGpu);
  const Tensor cond_c = gt(c, zeros(Shape{2, 3}));
  const Tensor cond_g = cond_c.to(kGpu);
  for (const BinaryEntry& e : binary_table()) {
    INFO(e.op);
    test::check_error([&] { e.f(c, g); }, {e.op, "cpu", "cuda"});
    test::check_error([&] { e.f(g, c); }, {e.op, "cpu", "cuda"});
  }
  test::check_error([&] { where(cond_g, c, g); }, {"where", "cpu", "cuda"});
  test::check_error([&] { where(cond_c, g, g); }, {"where", "cpu", "cuda"});
  test::check_error([&] { where(cond_g, g, c); }, {"where", "cpu", "cuda"});
  // A rank-0 cpu tensor is an operand like any other: moving it is the caller's choice.
  test::check_error([&] { add(g, scalar_tensor(1.0)); }, {"add", "cpu", "cuda"});
}

TEST_CASE("cuda elementwise: exact edge semantics") {
  // relu(-0) = +0, NaN propagates through maximum/minimum from either side, round is half to
  // even, integer neg/abs of INT_MIN wrap: compared bit for bit where it matters.
  const Tensor xf = from_vector(std::vector<double>{-0.0, std::nan(""), 0.5, 1.5, 2.5, -2.5, -0.3}).to(DType::float32);
  const Tensor r = relu(xf.to(kGpu)).to(Device::cpu());
  CHECK_FALSE(std::signbit(r.to_vector<float>()[0]));
  const std::vector<float> rounded = round(xf.to(kGpu)).to(Device::cpu()).to_vector<float>();
  CHECK(rounded[2] == 0.0f);
  CHECK(rounded[3] == 2.0f);
  CHECK(rounded[4] == 2.0f);
  CHECK(rounded[5] == -2.0f);
  CHECK(std::signbit(rounded[6]));
  const Tensor nan_first = from_vector(std::vector<double>{std::nan(""), 1.0}).to(kGpu);
  const Tensor nan_second = from_vector(std::vector<double>{1.0, std::nan("")}).to(kGpu);
  for (const Tensor& m : {maximum(nan_first, nan_second), minimum(nan_first, nan_second)}) {
    const std::vector<double> v = m.to(Device::cpu()).to_vector<double>();
    CHECK(std::isnan(v[0]));
    CHECK(std::isnan(v[1]));
  }
  const Tensor imin = from_vector(std::vector<double>{static_cast<double>(INT32_MIN)}).to(DType::int32).to(kGpu);
  CHECK(neg(imin).item<int32_t>() == INT32_MIN);
  CHECK(abs(imin).item<int32_t>() == INT32_MIN);
}

// Every op of the elementwise family (base/op_list.h lists it first, from neg to where) must
// have an entry in the tables above, so a new elementwise op cannot land without a CUDA test.
TEST_CASE("cuda elementwise: every elementwise op of op_list.h has a cuda test entry") {
  std::set<std::string> covered{"where"};
  for (const UnaryEntry& e : unary_table()) covered.insert(e.op);
  for (const BinaryEntry& e : binary_table()) covered.insert(e.op);
  bool in_family = true;
  int checked = 0;
  for (const char* name : kOpNames) {
    if (!in_family) break;
    INFO("op " << name);
    CHECK_MESSAGE(covered.count(name) == 1, "elementwise op " << name << " has no CUDA test entry");
    ++checked;
    if (std::string(name) == "where") in_family = false;
  }
  CHECK_FALSE(in_family);  // where is still in the table
  CHECK(checked == static_cast<int>(covered.size()));
}

}  // namespace ctrax
