// concatenate, stack, split, pad and flip on a CUDA device against the CPU op on the same data:
// every dtype, dtype promotion across inputs, every axis (negative ones too), contiguous,
// transposed, stepped and broadcast (stride-0) inputs, empty tensors and empty parts, the same
// error text for misuse, mixed-device operands refused, and the gradients.
//
// These ops only move elements, so results are compared exactly.
#include <functional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <ctrax/autograd/grad.h>
#include <ctrax/tensor/ops.h>
#include <ctrax/tensor/tensor.h>

#include "test_util.h"

namespace ctrax {
namespace {

const Device kGpu = Device::cuda(0);

// The message f throws, or "" when it returns.
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ctrax::Error& e) {
    return e.what();
  }
  return "";
}

// got (on the GPU) has expected's dtype, shape and exactly its values.
void check_same(const Tensor& got_gpu, const Tensor& expected, const std::string& what) {
  INFO(what);
  CHECK(got_gpu.device() == kGpu);
  const Tensor got = got_gpu.to(Device::cpu());
  REQUIRE(got.dtype() == expected.dtype());
  REQUIRE(got.shape() == expected.shape());
  if (is_floating(expected.dtype())) {
    test::check_close(got, expected, {0.0, 0.0}, what);
    return;
  }
  const std::vector<int64_t> a = got.to(DType::int64).to_vector<int64_t>();
  const std::vector<int64_t> b = expected.to(DType::int64).to_vector<int64_t>();
  int reported = 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i] && reported++ < 5) FAIL_CHECK("element " << i << ": got " << a[i] << ", expected " << b[i]);
}

using ListFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

// Runs f on the cpu operands and on their GPU copies: the same error text, or the same results.
void compare(const ListFn& f, const std::vector<Tensor>& cpu, const std::vector<Tensor>& gpu, const std::string& what) {
  std::vector<Tensor> expected;
  const std::string cpu_error = error_of([&] { expected = f(cpu); });
  if (!cpu_error.empty()) {
    INFO(what);
    CHECK(error_of([&] { f(gpu); }) == cpu_error);
    return;
  }
  const std::vector<Tensor> got = f(gpu);
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) check_same(got[i], expected[i], what + " part " + std::to_string(i));
}
ListFn one(std::function<Tensor(const std::vector<Tensor>&)> f) {
  return [f = std::move(f)](const std::vector<Tensor>& in) { return std::vector<Tensor>{f(in)}; };
}

// The same values as t on `device`: contiguous, stored transposed (rank >= 2), every other row
// of a larger buffer, or (layout 3, rank >= 1) the first row broadcast along axis 0.
Tensor laid_out(const Tensor& t, Device device, int layout) {
  const Tensor d = t.to(device);
  if (layout == 1 && d.rank() >= 2) return d.transpose(-1, -2).contiguous().transpose(-1, -2);
  if (layout == 2 && d.rank() >= 1) {
    Shape big = d.shape();
    big[0] = 2 * d.shape()[0] + 1;
    Tensor view = full(big, 7.0, d.dtype(), device).slice(0, 1, 2 * d.shape()[0] + 1, 2);
    view.copy_(d);
    return view;
  }
  if (layout == 3 && d.rank() >= 1 && d.shape()[0] > 0) return d.slice(0, 0, 1).expand(d.shape());
  return d;
}
constexpr const char* kLayoutNames[] = {"contiguous", "transposed", "stepped", "broadcast"};

std::vector<Tensor> on(const std::vector<Tensor>& xs, Device device, int layout) {
  std::vector<Tensor> out;
  for (const Tensor& x : xs) out.push_back(laid_out(x, device, layout));
  return out;
}

TEST_CASE("cuda concatenate and stack: every dtype, promotion, axis and layout against the cpu") {
  uint64_t seed = 1;
  for (DType dtype : test::kAllDTypes) {
    for (DType other : {dtype, DType::float32, DType::int64}) {
      // concatenate: lengths 2, 0 and 3 on the joined axis.
      for (int axis : {0, 1, 2, -1, -3}) {
        const int a = axis < 0 ? axis + 3 : axis;
        std::vector<Tensor> xs;
        for (int64_t len : {2, 0, 3}) {
          Shape shape{2, 3, 4};
          shape[a] = len;
          xs.push_back(test::random_tensor(shape, xs.size() == 1 ? other : dtype, seed++));
        }
        for (int layout = 0; layout < 4; ++layout) {
          std::ostringstream what;
          what << "concatenate " << dtype << "+" << other << " axis " << axis << " " << kLayoutNames[layout];
          compare(one([&](const std::vector<Tensor>& in) { return concatenate(in, axis); }), on(xs, Device::cpu(), layout),
                  on(xs, kGpu, layout), what.str());
        }
      }
      // stack: three of shape {3, 4}, on each of the three new positions.
      std::vector<Tensor> ys;
      for (int i = 0; i < 3; ++i) ys.push_back(test::random_tensor(Shape{3, 4}, i == 1 ? other : dtype, seed++));
      for (int axis : {0, 1, 2, -1}) {
        for (int layout = 0; layout < 4; ++layout) {
          std::ostringstream what;
          what << "stack " << dtype << "+" << other << " axis " << axis << " " << kLayoutNames[layout];
          compare(one([&](const std::vector<Tensor>& in) { return stack(in, axis); }), on(ys, Device::cpu(), layout),
                  on(ys, kGpu, layout), what.str());
        }
      }
    }
  }
  // Empty results, rank 0 stacking and misuse (mismatched shapes, bad axis, empty list).
  const Tensor e = zeros(Shape{0, 3});
  compare(one([](const std::vector<Tensor>& in) { return concatenate(in, 0); }), {e, e}, {e.to(kGpu), e.to(kGpu)}, "empty");
  const Tensor s0 = full(Shape{}, 2.5), s1 = full(Shape{}, -1.0);
  compare(one([](const std::vector<Tensor>& in) { return stack(in, 0); }), {s0, s1}, {s0.to(kGpu), s1.to(kGpu)}, "scalars");
  const Tensor a = zeros(Shape{2, 3}), b = zeros(Shape{2, 4});
  const std::vector<Tensor> ab{a, b}, gab{a.to(kGpu), b.to(kGpu)};
  compare(one([](const std::vector<Tensor>& in) { return concatenate(in, 0); }), ab, gab, "concatenate mismatch");
  compare(one([](const std::vector<Tensor>& in) { return concatenate(in, 2); }), ab, gab, "concatenate bad axis");
  compare(one([](const std::vector<Tensor>& in) { return stack(in, 0); }), ab, gab, "stack mismatch");
  CHECK(error_of([] { concatenate({}, 0); }) != "");
}

TEST_CASE("cuda split: sizes and sections, every dtype and layout against the cpu") {
  uint64_t seed = 100;
  for (DType dtype : test::kAllDTypes) {
    const Tensor x = test::random_tensor(Shape{6, 4}, dtype, seed++);
    for (int layout = 0; layout < 4; ++layout) {
      const Tensor c = laid_out(x, Device::cpu(), layout), g = laid_out(x, kGpu, layout);
      std::ostringstream what;
      what << "split " << dtype << " " << kLayoutNames[layout];
      for (int axis : {0, 1, -1}) {
        compare([&](const std::vector<Tensor>& in) { return split(in[0], int64_t{2}, axis); }, {c}, {g},
                what.str() + " 2 sections axis " + std::to_string(axis));
        compare([&](const std::vector<Tensor>& in) { return split(in[0], std::vector<int64_t>{1, 0, 3}, axis); }, {c},
                {g}, what.str() + " sizes 1,0,3 axis " + std::to_string(axis));
      }
      // Misuse: sections that do not divide, sizes that do not sum.
      compare([&](const std::vector<Tensor>& in) { return split(in[0], int64_t{4}, 0); }, {c}, {g}, what.str() + " 4 of 6");
      compare([&](const std::vector<Tensor>& in) { return split(in[0], std::vector<int64_t>{2, 3}, 0); }, {c}, {g},
              what.str() + " sizes 2,3 of 6");
    }
  }
  const Tensor e = zeros(Shape{0, 2}, DType::int32);
  compare([](const std::vector<Tensor>& in) { return split(in[0], int64_t{3}, 0); }, {e}, {e.to(kGpu)}, "empty axis");
}

TEST_CASE("cuda pad and flip: every dtype, width, axis set and layout against the cpu") {
  uint64_t seed = 200;
  const std::vector<std::vector<std::pair<int64_t, int64_t>>> widths = {
      {{0, 0}, {0, 0}, {0, 0}}, {{1, 2}, {0, 3}, {2, 0}}, {{0, 0}, {4, 4}, {0, 1}}};
  const std::vector<std::vector<int>> axis_sets = {{}, {0}, {1}, {2}, {-1}, {0, 2}, {2, 0, 1}, {-3, -2}};
  for (DType dtype : test::kAllDTypes) {
    for (const Shape& shape : {Shape{2, 3, 4}, Shape{3, 0, 2}, Shape{1, 5, 1}}) {
      const Tensor x = test::random_tensor(shape, dtype, seed++);
      for (int layout = 0; layout < 4; ++layout) {
        const Tensor c = laid_out(x, Device::cpu(), layout), g = laid_out(x, kGpu, layout);
        std::ostringstream what;
        what << dtype << shape << " " << kLayoutNames[layout];
        for (size_t w = 0; w < widths.size(); ++w)
          for (double value : {0.0, -1.5, 3.0})
            compare(one([&](const std::vector<Tensor>& in) { return pad(in[0], widths[w], value); }), {c}, {g},
                    "pad " + what.str() + " widths " + std::to_string(w) + " value " + std::to_string(value));
        for (size_t s = 0; s < axis_sets.size(); ++s)
          compare(one([&](const std::vector<Tensor>& in) { return flip(in[0], axis_sets[s]); }), {c}, {g},
                  "flip " + what.str() + " axes " + std::to_string(s));
      }
    }
  }
  // Rank 0 and rank 1, a view with an offset, and misuse (duplicate axis, wrong pad arity).
  const Tensor s = full(Shape{}, 4.0, DType::int32);
  compare(one([](const std::vector<Tensor>& in) { return flip(in[0], {}); }), {s}, {s.to(kGpu)}, "flip rank 0");
  compare(one([](const std::vector<Tensor>& in) { return pad(in[0], {}, 1.0); }), {s}, {s.to(kGpu)}, "pad rank 0");
  const Tensor v = test::random_tensor(Shape{9}, DType::float64, seed++);
  compare(one([](const std::vector<Tensor>& in) { return flip(in[0].slice(0, 2, 9, 3), {0}); }), {v}, {v.to(kGpu)},
          "flip of an offset view");
  const Tensor m = zeros(Shape{2, 3});
  compare(one([](const std::vector<Tensor>& in) { return flip(in[0], {1, -1}); }), {m}, {m.to(kGpu)}, "duplicate axis");
  compare(one([](const std::vector<Tensor>& in) { return pad(in[0], {{1, 1}}, 0.0); }), {m}, {m.to(kGpu)}, "pad arity");
  compare(one([](const std::vector<Tensor>& in) { return pad(in[0], {{1, 1}, {-1, 0}}, 0.0); }), {m}, {m.to(kGpu)},
          "negative width");
}

TEST_CASE("cuda join ops: operands on different devices are refused, naming both") {
  const Tensor a = zeros(Shape{2, 3});
  const Tensor g = a.to(kGpu);
  test::check_error([&] { concatenate({g, a}, 0); }, {"concatenate", "tensor 1 is on cpu", "cuda:0"});
  test::check_error([&] { concatenate({a, a, g}, 0); }, {"concatenate", "tensor 2 is on cuda:0", "on cpu"});
  test::check_error([&] { stack({g, a}, 0); }, {"stack", "tensor 1 is on cpu", "cuda:0"});
}

// The gradient of sum(f(x, y) * w) on the GPU against the CPU: the backward of each op (slices,
// selects, concatenations, a flip) must stay on the device.
TEST_CASE("cuda join ops: gradients against the cpu") {
  const Tensor x = test::random_tensor(Shape{4, 3}, DType::float64, 300);
  const Tensor y = test::random_tensor(Shape{4, 3}, DType::float64, 301);
  using Fn = std::function<Tensor(const Tensor&, const Tensor&)>;
  const std::vector<std::pair<const char*, Fn>> cases = {
      // b as a transposed (column-major) view of the same values: a strided operand.
      {"concatenate", [](const Tensor& a, const Tensor& b) { return concatenate({a, b.mT().contiguous().mT()}, 1); }},
      {"stack", [](const Tensor& a, const Tensor& b) { return stack({a, b, a}, -1); }},
      {"split, one part unused", [](const Tensor& a, const Tensor& b) {
         const std::vector<Tensor> parts = split(a * b, std::vector<int64_t>{1, 2, 1}, 0);
         return concatenate({parts[0], parts[2]}, 0);
       }},
      {"split, every part used", [](const Tensor& a, const Tensor& b) {
         const std::vector<Tensor> parts = split(a + b, int64_t{3}, 1);
         return parts[0] * parts[1] - parts[2];
       }},
      {"pad", [](const Tensor& a, const Tensor& b) { return pad(a * b, {{1, 0}, {2, 3}}, 1.5); }},
      {"flip", [](const Tensor& a, const Tensor& b) { return flip(a, {0, 1}) * b; }},
  };
  for (const auto& [name, f] : cases) {
    INFO(name);
    const Tensor w = test::random_tensor(f(x, y).shape(), DType::float64, 302);
    const Tensor gw = w.to(kGpu);
    auto cpu_loss = [&](const Tensor& a, const Tensor& b) { return sum(f(a, b) * w); };
    auto gpu_loss = [&](const Tensor& a, const Tensor& b) { return sum(f(a, b) * gw); };
    const auto [cpu_dx, cpu_dy] = grad<0, 1>(cpu_loss)(x, y);
    const auto [gpu_dx, gpu_dy] = grad<0, 1>(gpu_loss)(x.to(kGpu), y.to(kGpu));
    check_same(gpu_dx, cpu_dx, std::string(name) + " dx");
    check_same(gpu_dy, cpu_dy, std::string(name) + " dy");
  }
}

}  // namespace
}  // namespace ctrax
