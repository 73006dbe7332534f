// compile (tensor/compile.h): a recorded plan replays the eager function bit for bit, allocates
// nothing, sees in-place updates of the tensors it reads, and falls back to eager (said once)
// for a function that reads tensor memory on the host.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <ctrax/tensor/compile.h>
#include <ctrax/tensor/ops.h>
#include <ctrax/tensor/random.h>

#include "test_util.h"

using namespace ctrax;

namespace {

using test::bitwise_equal;

// A small layer: tanh(x @ w + b), its sum of squares, and a constant made inside.
std::vector<Tensor> layer(const std::vector<Tensor>& in, const Tensor& w, const Tensor& b) {
  const Tensor h = tanh(add(matmul(in[0], w), b));
  const Tensor scale = from_vector<float>({0.5f, 2.0f, -1.0f}, {3});
  return {mul(h, scale), sum(square(h)), mul(sub(1.0, h), 3.0)};
}

struct LogCapture {
  std::vector<std::string> lines;
  CompileLogSink previous;
  LogCapture() {
    previous = set_compile_log_sink([this](const std::string& line) { lines.push_back(line); });
  }
  ~LogCapture() { set_compile_log_sink(previous); }
};

}  // namespace

TEST_CASE("compile: a replay equals eager bit for bit on new inputs and allocates nothing") {
  const Tensor w = test::random_tensor({4, 3}, DType::float32, 1);
  const Tensor b = test::random_tensor({3}, DType::float32, 2);
  CompiledFunction f([&](const std::vector<Tensor>& in) { return layer(in, w, b); });
  const Tensor x0 = test::random_tensor({5, 4}, DType::float32, 3);
  const std::vector<Tensor> first = f({x0});
  CHECK(f.stats().recordings == 1);
  CHECK(f.stats().kernels > 0);
  for (uint64_t seed = 10; seed < 13; ++seed) {
    const Tensor x = test::random_tensor({5, 4}, DType::float32, seed);
    const std::vector<Tensor> want = layer({x}, w, b);
    const AllocationStats before = allocation_stats();
    const std::vector<Tensor>& got = f({x});
    const AllocationStats after = allocation_stats();
    CHECK(after.storages_allocated == before.storages_allocated);
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) CHECK(bitwise_equal(got[i], want[i]));
  }
  CHECK(f.stats().replays == 3);
  CHECK(f.stats().recordings == 1);
}

TEST_CASE("compile: a replay reads the current values of tensors updated in place") {
  Tensor w = test::random_tensor({4, 3}, DType::float32, 1);
  const Tensor b = zeros({3});
  CompiledFunction f([&](const std::vector<Tensor>& in) { return layer(in, w, b); });
  const Tensor x = test::random_tensor({2, 4}, DType::float32, 3);
  f({x});
  w.copy_(test::random_tensor({4, 3}, DType::float32, 7));  // in place, as an optimizer does
  const std::vector<Tensor> want = layer({x}, w, b);
  const std::vector<Tensor>& got = f({x});
  CHECK(f.stats().replays == 1);
  for (size_t i = 0; i < got.size(); ++i) CHECK(bitwise_equal(got[i], want[i]));
}

TEST_CASE("compile: each signature and guard gets its own plan, and the cache is bounded") {
  const Tensor w = test::random_tensor({4, 3}, DType::float32, 1);
  const Tensor b = zeros({3});
  CompileOptions options;
  options.max_plans = 2;
  CompiledFunction f([&](const std::vector<Tensor>& in) { return layer(in, w, b); }, options);
  for (int64_t rows : {1, 2, 3, 1}) f({test::random_tensor({rows, 4}, DType::float32, 5)});
  CHECK(f.stats().recordings == 4);  // rows = 1 was dropped when rows = 3 came
  CHECK(f.stats().plans == 2);
  f({test::random_tensor({1, 4}, DType::float32, 6)});
  CHECK(f.stats().replays == 1);
  f({test::random_tensor({1, 4}, DType::float32, 6)}, /*guard=*/7);
  CHECK(f.stats().recordings == 5);
  // float64 inputs are another signature, and give float64 results.
  const std::vector<Tensor>& r = f({test::random_tensor({1, 4}, DType::float64, 6)});
  CHECK(r[1].dtype() == DType::float64);
}

TEST_CASE("compile: a function that reads a value on the host runs eagerly and says so once") {
  LogCapture log;
  const Tensor w = test::random_tensor({4, 3}, DType::float32, 1);
  CompileOptions options;
  options.name = "branchy";
  CompiledFunction f(
      [&](const std::vector<Tensor>& in) {
        const Tensor s = sum(in[0]);
        // A branch on a value: a plan could not follow it.
        return std::vector<Tensor>{s.item<float>() > 0 ? mul(in[0], 2.0) : neg(in[0])};
      },
      options);
  for (uint64_t seed = 1; seed < 6; ++seed) {
    const Tensor x = test::random_tensor({3, 4}, DType::float32, seed);
    const Tensor want = sum(x).item<float>() > 0 ? mul(x, 2.0) : neg(x);
    CHECK(bitwise_equal(f({x})[0], want));
  }
  CHECK(f.stats().replays == 0);
  CHECK(f.stats().recordings == 1);
  CHECK(f.stats().eager_calls == 4);
  REQUIRE(log.lines.size() == 1);
  CHECK(log.lines[0].find("branchy runs eagerly") != std::string::npos);
}

TEST_CASE("compile: random draws inside the function are not baked into a plan") {
  LogCapture log;
  CompiledFunction f([&](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{add(in[0], normal(Key(3), in[0].shape()))};
  });
  const Tensor x = zeros({4});
  f({x});
  f({x});
  CHECK(f.stats().replays == 0);
  CHECK(log.lines.size() == 1);
}

TEST_CASE("compile: draws from the call's key replay with each call's key, bit for bit as eager") {
  // Every sampler, from the call's key and from keys split and folded from it.
  auto draws = [](const std::vector<Tensor>& in, Key key) {
    const auto [a, b] = split(key);
    const std::vector<Key> three = split(fold_in(b, 7), 3);
    const Tensor logits = from_vector<float>({0.1f, -0.4f, 2.0f, 0.0f, 1.0f, -1.0f}, {2, 3});
    return std::vector<Tensor>{add(in[0], normal(a, in[0].shape())),
                               uniform(three[0], {5}, DType::float64, -2.0, 3.0),
                               bernoulli(three[1], {6}, 0.3),
                               bernoulli(three[2], {2, 3}, sigmoid(in[0].slice(0, 0, 2).slice(1, 0, 3))),
                               categorical(key, logits, -1, Shape{4, 2}),
                               randint(fold_in(key, 3), {7}, -5, 9),
                               permutation(fold_in(key, 4), 6),
                               normal(key, {3}, DType::float64, 1.0, 2.0),
                               normal(fold_in(key, 5), in[0].slice(1, 1, 2), abs(in[0].slice(1, 2, 3)))};
  };
  LogCapture log;
  CompiledFunction f(draws, CompileOptions{"draws"});
  const Tensor x = test::random_tensor({3, 4}, DType::float32, 1);
  for (uint64_t seed = 0; seed < 4; ++seed) {
    const Key key = fold_in(Key(11), seed);
    const std::vector<Tensor> want = draws({x}, key);
    const AllocationStats before = allocation_stats();
    const std::vector<Tensor>& got = f({x}, key);
    if (seed > 0) CHECK(allocation_stats().storages_allocated == before.storages_allocated);
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) CHECK(bitwise_equal(got[i], want[i]));
  }
  CHECK(f.stats().recordings == 1);
  CHECK(f.stats().replays == 3);
  CHECK(log.lines.empty());
  // Different keys really draw different numbers.
  const Tensor one = f({x}, Key(1))[0].clone();
  CHECK_FALSE(bitwise_equal(one, f({x}, Key(2))[0]));
}

TEST_CASE("compile: a draw from a key the call did not pass runs eagerly and says so once") {
  LogCapture log;
  const Key captured(5);
  CompiledFunction f([&](const std::vector<Tensor>& in, Key key) {
    return std::vector<Tensor>{add(normal(key, in[0].shape()), normal(captured, in[0].shape()))};
  }, CompileOptions{"captured"});
  const Tensor x = zeros({4});
  const Tensor first = f({x}, Key(1))[0].clone();
  CHECK(bitwise_equal(f({x}, Key(1))[0], first));
  CHECK(f.stats().replays == 0);
  CHECK(f.stats().eager_calls == 1);
  REQUIRE(log.lines.size() == 1);
  CHECK(log.lines[0].find("did not receive as its call's key") != std::string::npos);
  // A traced key kept past its recording is a plain key afterwards.
  Key kept;
  CompiledFunction g([&](const std::vector<Tensor>& in, Key key) {
    kept = key;
    return std::vector<Tensor>{add(in[0], 1.0)};
  });
  g({x}, Key(9));
  CHECK(kept == Key(9));
  CHECK(bitwise_equal(normal(kept, {3}), normal(Key(9), {3})));
  CompiledFunction h([&](const std::vector<Tensor>& in) { return std::vector<Tensor>{add(in[0], normal(kept, {4}))}; });
  h({x});
  CHECK(h.stats().replays == 0);
  h({x});
  CHECK(h.stats().eager_calls == 1);
}

TEST_CASE("compile: a sampler's value checks run on every replay") {
  CompiledFunction f([](const std::vector<Tensor>& in, Key key) {
    return std::vector<Tensor>{bernoulli(key, in[0]), categorical(key, in[1])};
  });
  const Tensor p = from_vector<float>({0.2f, 0.9f}, {2});
  const Tensor logits = from_vector<float>({0.0f, 1.0f, 2.0f, 3.0f}, {2, 2});
  f({p, logits}, Key(1));
  f({p, logits}, Key(2));
  CHECK(f.stats().replays == 1);
  CHECK_THROWS_WITH_AS(f({from_vector<float>({0.2f, 1.5f}, {2}), logits}, Key(3)),
                       doctest::Contains("probability p = 1.5 at flat index 1"), Error);
  const float inf = std::numeric_limits<float>::infinity();
  CHECK_THROWS_WITH_AS(f({p, from_vector<float>({0.0f, 1.0f, -inf, -inf}, {2, 2})}, Key(3)),
                       doctest::Contains("every logit of row 1 is -inf"), Error);
  CHECK_THROWS_WITH_AS(f({p, from_vector<float>({NAN, 1.0f, 0.0f, 0.0f}, {2, 2})}, Key(3)),
                       doctest::Contains("logits contain NaN (row 0, category 0)"), Error);
  // The errors came from the plan's kernels: no new recording, and the plan still serves.
  CHECK(f.stats().recordings == 1);
  const Tensor again = f({p, logits}, Key(2))[1].clone();
  CHECK(f.stats().replays == 2);
  CHECK(bitwise_equal(again, categorical(Key(2), logits)));
}

TEST_CASE("compile: an error inside the function propagates and leaves no plan") {
  CompiledFunction f([&](const std::vector<Tensor>& in) { return std::vector<Tensor>{matmul(in[0], in[0])}; });
  CHECK_THROWS_AS(f({zeros({2, 3})}), Error);
  CHECK(f.stats().plans == 0);
  CHECK(f({zeros({3, 3})})[0].shape() == Shape{3, 3});
}

TEST_CASE("compile: bad options are refused") {
  CHECK_THROWS_WITH_AS(CompiledFunction{CompiledFunction::Function{}}, doctest::Contains("the function is empty"), Error);
  CHECK_THROWS_WITH_AS(CompiledFunction{CompiledFunction::KeyedFunction{}}, doctest::Contains("the function is empty"),
                       Error);
  CompileOptions options;
  options.max_plans = 0;
  CHECK_THROWS_WITH_AS(CompiledFunction([](const std::vector<Tensor>& in) { return in; }, options),
                       doctest::Contains("max_plans"), Error);
}

TEST_CASE("compile: disabled runs every call eagerly") {
  CompileOptions options;
  options.enabled = false;
  CompiledFunction f([](const std::vector<Tensor>& in) { return std::vector<Tensor>{exp(in[0])}; }, options);
  f({ones({2})});
  f({ones({2})});
  CHECK(f.stats().eager_calls == 2);
  CHECK(f.stats().recordings == 0);
}

TEST_CASE("compile: a host value the function depends on records the plan again when it changes") {
  auto scale = std::make_shared<double>(0.5);
  CompiledFunction f([&](const std::vector<Tensor>& in) {
    depend_on_value(scale);
    return std::vector<Tensor>{mul(in[0], *scale)};
  });
  const Tensor x = ones({3});
  CHECK(f({x})[0].to_vector<float>() == std::vector<float>{0.5f, 0.5f, 0.5f});
  CHECK(f({x})[0].to_vector<float>() == std::vector<float>{0.5f, 0.5f, 0.5f});
  CHECK(f.stats().replays == 1);
  *scale = 2.0;
  CHECK(f({x})[0].to_vector<float>() == std::vector<float>{2.0f, 2.0f, 2.0f});
  CHECK(f.stats().recordings == 2);
  CHECK(f({x})[0].to_vector<float>() == std::vector<float>{2.0f, 2.0f, 2.0f});
  CHECK(f.stats().replays == 2);
  CHECK_THROWS_WITH_AS(depend_on_value(nullptr), doctest::Contains("null"), Error);
}

TEST_CASE("compile: plans of alternating signatures share their buffers and each replays correctly") {
  const Tensor w = test::random_tensor({4, 3}, DType::float32, 1);
  const Tensor b = test::random_tensor({3}, DType::float32, 2);
  CompiledFunction f([&](const std::vector<Tensor>& in) { return layer(in, w, b); });
  uint64_t seed = 20;
  for (int round = 0; round < 4; ++round) {
    for (int64_t rows : {3, 17, 1}) {
      const Tensor x = test::random_tensor({rows, 4}, DType::float32, seed++);
      const std::vector<Tensor> want = layer({x}, w, b);
      const std::vector<Tensor>& got = f({x});
      for (size_t i = 0; i < want.size(); ++i) CHECK(bitwise_equal(got[i], want[i]));
    }
  }
  CHECK(f.stats().recordings == 3);
  CHECK(f.stats().replays == 9);
  // One arena for the three plans: no more than the largest plan's buffers twice over.
  CompiledFunction single([&](const std::vector<Tensor>& in) { return layer(in, w, b); });
  single({test::random_tensor({17, 4}, DType::float32, 1)});
  CHECK(f.stats().arena_bytes <= 2 * single.stats().arena_bytes);
}

TEST_CASE("compile: check_value refuses a tensor of several elements and an empty check") {
  const auto ok = [](double) { return std::string(); };
  CHECK_THROWS_WITH_AS(check_value(ones({2}), ok), doctest::Contains("expected a one-element tensor, got 2"), Error);
  CHECK_THROWS_WITH_AS(check_value(Tensor(), ok), doctest::Contains("one-element"), Error);
  CHECK_THROWS_WITH_AS(check_value(ones({1}), nullptr), doctest::Contains("the check is empty"), Error);
  CHECK_THROWS_WITH_AS(check_value(zeros({}), [](double v) { return v > 0 ? std::string() : std::string("not positive"); }),
                       doctest::Contains("not positive"), Error);
}

namespace {

bool has_label(const std::vector<KernelTiming>& profile, const std::string& label) {
  for (const KernelTiming& t : profile)
    if (t.label == label) return true;
  return false;
}

// relu(x @ w), a where on it and a scalar add: four kernels unfused.
std::vector<Tensor> profiled_step(const std::vector<Tensor>& in, const Tensor& w) {
  const Tensor h = relu(matmul(in[0], w));
  return {add(where(gt(h, scalar_like(0.25, h)), h, mul(h, in[1])), 1.0)};
}

}  // namespace

TEST_CASE("compile: the kernel profile times every replayed kernel, names its op, and survives clear()") {
  const Tensor w = normal(Key(3), {3, 8});
  const auto step = [&](const std::vector<Tensor>& in) { return profiled_step(in, w); };
  CompileOptions options;
  options.profile = true;
  options.fuse = false;
  CompiledFunction f(step, options);
  const Tensor x = normal(Key(4), {5, 3}), y = normal(Key(5), {5, 8});
  f({x, y});  // records
  CHECK(f.kernel_profile().size() == static_cast<size_t>(f.stats().kernels));
  for (int i = 0; i < 3; ++i) f({x, y});
  std::vector<KernelTiming> profile = f.kernel_profile();
  REQUIRE(profile.size() == static_cast<size_t>(f.stats().kernels));
  double total = 0;
  for (size_t i = 0; i < profile.size(); ++i) {
    CHECK(profile[i].plan == 1);
    CHECK(profile[i].kernel == static_cast<int64_t>(i));
    CHECK(profile[i].calls == 3);
    CHECK(profile[i].seconds >= 0.0);
    CHECK_FALSE(profile[i].label.empty());
    total += profile[i].seconds;
  }
  CHECK(total > 0.0);
  for (const char* label : {"matmul", "relu", "where", "mul", "add (scalar)"}) {
    INFO(label);
    CHECK(has_label(profile, label));
  }

  // Another signature is plan 2, timed on its own; clear() drops plans, not what they measured.
  f({normal(Key(6), {2, 3}), normal(Key(7), {2, 8})});
  f({normal(Key(6), {2, 3}), normal(Key(7), {2, 8})});
  f.clear();
  profile = f.kernel_profile();
  int64_t plan_two = 0;
  for (const KernelTiming& t : profile) {
    if (t.plan != 2) continue;
    ++plan_two;
    CHECK(t.calls == 1);
  }
  CHECK(plan_two == f.stats().kernels);
  CHECK(profile.size() == static_cast<size_t>(2 * f.stats().kernels));

  // The fused plan names its GEMM with the epilogue.
  options.fuse = true;
  CompiledFunction fused(step, options);
  fused({x, y});
  fused({x, y});
  CHECK(has_label(fused.kernel_profile(), "matmul_with_epilogue<float>"));
}

TEST_CASE("compile: no kernel profile unless asked for, and the profile table") {
  CompiledFunction f([](const std::vector<Tensor>& in) { return std::vector<Tensor>{exp(in[0])}; });
  const Tensor x = normal(Key(8), {4, 4});
  f({x});
  f({x});
  CHECK(f.kernel_profile().empty());

  std::vector<KernelTiming> timings;
  for (int i = 0; i < 5; ++i) timings.push_back({1, i, "op" + std::to_string(i), 2, 1e-6 * (i + 1)});
  const std::string table = format_kernel_profile(timings, 3);
  CHECK(table.find("label") != std::string::npos);
  CHECK(table.find("op4") != std::string::npos);   // the slowest first
  CHECK(table.find("op2") != std::string::npos);
  CHECK(table.find("op1") == std::string::npos);   // past the top 3
  CHECK(table.find("(2 more kernels)") != std::string::npos);
  CHECK(table.find("33.3%") != std::string::npos);  // op4: 5 of 15 us
  CHECK(table.find("over 5 kernels") != std::string::npos);
  CHECK(format_kernel_profile({}).find("over 0 kernels") != std::string::npos);
}
