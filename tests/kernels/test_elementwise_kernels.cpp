// Tests of the vectorised elementwise kernels (kernels/elementwise/): every ISA variant the
// CPU supports against the portable one, on lengths around the vector widths and with each
// broadcast pattern, and the accuracy of the float32 exp / tanh / sigmoid / softplus against double
// precision std:: functions over their whole range, including extremes, infinities, NaN and
// denormals.
#include <ctrax/kernels/cpu_features.h>
#include <ctrax/kernels/elementwise/activation_backward.h>
#include <ctrax/kernels/elementwise/elementwise.h>
#include <ctrax/kernels/elementwise/elementwise_math.h>
#include <ctrax/kernels/elementwise/vec_math.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "test_util.h"

namespace ctrax::test {

namespace {

using kernels::BinaryKernel;
using kernels::ElementwiseIsa;
using kernels::UnaryKernel;

constexpr float kNaNf = std::numeric_limits<float>::quiet_NaN();
constexpr float kInff = std::numeric_limits<float>::infinity();

const std::vector<ElementwiseIsa> kIsas = {ElementwiseIsa::portable, ElementwiseIsa::avx2, ElementwiseIsa::avx512};
const std::vector<BinaryKernel> kBinary = {BinaryKernel::add, BinaryKernel::sub, BinaryKernel::mul,
                                           BinaryKernel::div, BinaryKernel::maximum, BinaryKernel::minimum,
                                           BinaryKernel::relu_backward};
const std::vector<UnaryKernel> kUnary = {UnaryKernel::neg, UnaryKernel::relu, UnaryKernel::square,
                                         UnaryKernel::exp, UnaryKernel::tanh, UnaryKernel::sigmoid,
                                         UnaryKernel::softplus, UnaryKernel::log};
const std::vector<int64_t> kLengths = {0, 1, 2, 3, 5, 6, 7, 8, 9, 14, 15, 16, 17, 31, 33, 64, 100, 257, 1000};

// Restores automatic ISA choice when a test ends, even on failure.
struct IsaGuard {
  ~IsaGuard() { kernels::force_elementwise_isa(std::nullopt); }
};

// Values with NaN, infinities, signed zeros and denormals sprinkled among random ones.
template <typename T>
std::vector<T> test_values(int64_t n, uint64_t seed, double lo, double hi) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> real(lo, hi);
  const T specials[] = {std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::infinity(),
                        -std::numeric_limits<T>::infinity(), T(0), -T(0), std::numeric_limits<T>::denorm_min(),
                        -std::numeric_limits<T>::min() / T(3)};
  std::vector<T> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = (i % 5 == 3) ? specials[(i / 5) % 7] : static_cast<T>(real(gen));
  return v;
}

// Bitwise equality, with any NaN matching any NaN.
template <typename T>
bool same(T a, T b) {
  if (std::isnan(a) && std::isnan(b)) return true;
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// Within `ulps` units in the last place of b (and NaN with NaN, equal infinities).
template <typename T>
bool close_ulps(T a, T b, double ulps) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (std::isinf(a) || std::isinf(b)) return a == b;
  const double spacing = std::max(double(std::numeric_limits<T>::denorm_min()),
                                  std::ldexp(1.0, std::ilogb(std::max(double(std::fabs(b)), double(std::numeric_limits<T>::min()))) -
                                                      std::numeric_limits<T>::digits + 1));
  return std::fabs(double(a) - double(b)) <= ulps * spacing;
}

template <typename T>
void check_variant_matches_portable(ElementwiseIsa isa) {
  for (int64_t n : kLengths) {
    const std::vector<T> a = test_values<T>(n, 1 + n, -20, 20), b = test_values<T>(n, 1000 + n, -20, 20);
    // the binary ops are single IEEE operations: every variant must match bit for bit
    for (BinaryKernel op : kBinary) {
      for (int64_t as : {1, 0}) {
        for (int64_t bs : {1, 0}) {
          if (n == 0 && (as == 0 || bs == 0)) continue;  // a broadcast operand needs one element
          std::vector<T> ref(n), got(n);
          kernels::force_elementwise_isa(ElementwiseIsa::portable);
          kernels::binary_kernel(op, a.data(), as, b.data(), bs, ref.data(), n);
          kernels::force_elementwise_isa(isa);
          kernels::binary_kernel(op, a.data(), as, b.data(), bs, got.data(), n);
          for (int64_t i = 0; i < n; ++i) {
            INFO("op " << int(op) << " n " << n << " steps " << as << bs << " i " << i << " a " << a[i * as] << " b "
                       << b[i * bs]);
            REQUIRE(same(got[i], ref[i]));
          }
        }
      }
    }
    for (UnaryKernel op : kUnary) {
      std::vector<T> ref(n), got(n), in_place = a;
      kernels::force_elementwise_isa(ElementwiseIsa::portable);
      kernels::unary_kernel(op, a.data(), ref.data(), n);
      kernels::force_elementwise_isa(isa);
      kernels::unary_kernel(op, a.data(), got.data(), n);
      kernels::unary_kernel(op, in_place.data(), in_place.data(), n);
      // FMA contraction in the wide variants may move exp/tanh/sigmoid by an ulp or two
      const bool exact = op == UnaryKernel::neg || op == UnaryKernel::relu || op == UnaryKernel::square;
      for (int64_t i = 0; i < n; ++i) {
        INFO("op " << int(op) << " n " << n << " i " << i << " x " << a[i] << " got " << got[i] << " ref " << ref[i]);
        if (exact) REQUIRE(same(got[i], ref[i]));
        else REQUIRE(close_ulps(got[i], ref[i], 2));
        REQUIRE(same(in_place[i], got[i]));
      }
    }
  }
}

// accumulate_rows: column sums in double, in row order, against a plain loop (bit for bit: the
// same additions in the same order), with strided rows and a nonzero starting accumulator.
template <typename T>
void check_accumulate_rows(ElementwiseIsa isa) {
  kernels::force_elementwise_isa(isa);
  for (int64_t n : kLengths) {
    for (int64_t rows : {0, 1, 3, 17}) {
      const int64_t stride = n + 5;
      std::vector<T> x = test_values<T>(rows * stride, 7 + n + rows, -1e3, 1e3);
      for (T& v : x)
        if (!std::isfinite(v)) v = T(0.5);  // infinities would make every sum inf or NaN
      std::vector<double> ref(static_cast<size_t>(n)), got(static_cast<size_t>(n));
      for (int64_t j = 0; j < n; ++j) ref[j] = got[j] = 0.25 * static_cast<double>(j);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < n; ++j) ref[j] += static_cast<double>(x[r * stride + j]);
      kernels::accumulate_rows(x.data(), rows, stride, got.data(), n);
      for (int64_t j = 0; j < n; ++j) {
        INFO("n " << n << " rows " << rows << " j " << j);
        REQUIRE(same(got[j], ref[j]));
      }
    }
  }
}

// Largest error in ulps of f32 against ref (double) over xs, for results above the
// denormal range; denormal results must be within `denormal_ulps` of 2^-149.
template <typename F, typename R>
double max_ulp_error(const std::vector<float>& xs, F f32, R ref, double denormal_ulps) {
  double worst = 0;
  for (float x : xs) {
    const float got = f32(x);
    const double want = ref(double(x));
    const double rounded = double(float(want));
    bool ok = true;
    if (std::isnan(want)) ok = std::isnan(got);
    else if (std::isinf(rounded)) ok = got == float(rounded);
    else if (std::fabs(want) < std::numeric_limits<float>::min())
      ok = std::fabs(double(got) - want) <= denormal_ulps * std::numeric_limits<float>::denorm_min();
    else ok = std::isfinite(got);
    if (!ok) {
      FAIL_CHECK("x = " << x << ": got " << got << ", want " << want);
      return 1e9;
    }
    if (std::isnan(want) || std::isinf(rounded) || std::fabs(want) < std::numeric_limits<float>::min()) continue;
    const double spacing = std::ldexp(1.0, std::ilogb(rounded) - 23);
    worst = std::max(worst, std::fabs(double(got) - want) / spacing);
  }
  return worst;
}

std::vector<float> sweep(float lo, float hi, int count) {
  std::vector<float> xs;
  for (int i = 0; i <= count; ++i) xs.push_back(lo + (hi - lo) * float(i) / float(count));
  // plus the specials and the denormal and tiny inputs
  for (float v : {0.0f, -0.0f, 1e-40f, -1e-40f, 1e-30f, -1e-30f, 1e-8f, -1e-8f, kInff, -kInff, kNaNf,
                  std::numeric_limits<float>::max(), std::numeric_limits<float>::lowest(),
                  std::numeric_limits<float>::denorm_min()})
    xs.push_back(v);
  return xs;
}

}  // namespace

// Runs check(isa) with each ISA variant this CPU supports forced (the others are reported as
// skipped), restoring the automatic choice afterwards.
template <typename Check>
void for_each_supported_isa(Check check) {
  IsaGuard guard;
  for (ElementwiseIsa isa : kIsas) {
    if (!kernels::elementwise_isa_supported(isa)) {
      MESSAGE("skipping " << std::string(kernels::elementwise_isa_name(isa)) << ": not supported by this CPU");
      continue;
    }
    INFO("isa " << std::string(kernels::elementwise_isa_name(isa)));
    kernels::force_elementwise_isa(isa);
    CHECK(kernels::active_elementwise_isa() == isa);
    check(isa);
  }
}

TEST_CASE("elementwise kernels: each supported ISA variant matches the portable one") {
  for_each_supported_isa([](ElementwiseIsa isa) {
    check_variant_matches_portable<float>(isa);
    check_variant_matches_portable<double>(isa);
    check_accumulate_rows<float>(isa);
    check_accumulate_rows<double>(isa);
  });
}

TEST_CASE("elementwise kernels: ISA selection") {
  IsaGuard guard;
  CHECK(kernels::elementwise_isa_supported(ElementwiseIsa::portable));
  const auto& f = kernels::cpu_features();
  CHECK(kernels::elementwise_isa_supported(ElementwiseIsa::avx512) == f.can_run_avx512());
  CHECK(kernels::elementwise_isa_supported(ElementwiseIsa::avx2) == f.can_run_avx2_fma());
  for (ElementwiseIsa isa : kIsas) {
    if (kernels::elementwise_isa_supported(isa)) continue;
    check_error([&] { kernels::force_elementwise_isa(isa); },
                {"force_elementwise_isa", kernels::elementwise_isa_name(isa)});
  }
  kernels::force_elementwise_isa(std::nullopt);
  // automatic choice is the widest supported variant
  const ElementwiseIsa best = f.can_run_avx512()     ? ElementwiseIsa::avx512
                              : f.can_run_avx2_fma() ? ElementwiseIsa::avx2
                                                     : ElementwiseIsa::portable;
  CHECK(kernels::active_elementwise_isa() == best);
  CHECK(std::string(kernels::elementwise_isa_name(ElementwiseIsa::avx2)) == "avx2");
}

TEST_CASE("elementwise kernels: float32 exp, tanh, sigmoid, softplus and log accuracy on every variant") {
  IsaGuard guard;
  const std::vector<float> exp_xs = sweep(-110.0f, 90.0f, 100000);
  // log's arguments: every binade from the smallest subnormal to the largest float (4,000 points
  // spread over each power of two's range), and a dense sweep around 1, where the result is small.
  std::vector<float> log_xs;
  for (int e = -149; e <= 127; ++e)
    for (int i = 0; i < 4000; ++i) log_xs.push_back(std::ldexp(1.0f + static_cast<float>(i) / 4000.0f, e));
  const std::vector<float> near_one = sweep(0.5f, 2.0f, 100000);
  const std::vector<float> small_xs = sweep(-1.0f, 1.0f, 50000);
  const std::vector<float> wide_xs = sweep(-30.0f, 30.0f, 100000);
  for (ElementwiseIsa isa : kIsas) {
    if (!kernels::elementwise_isa_supported(isa)) continue;
    kernels::force_elementwise_isa(isa);
    INFO("isa " << std::string(kernels::elementwise_isa_name(isa)));
    // run through the kernel (vectorised) rather than the scalar function
    bool lanes_agree = true;
    auto through_kernel = [&lanes_agree](UnaryKernel op) {
      return [op, &lanes_agree](float x) {
        float in[19], out[19];  // the value in every lane of a vector plus a scalar tail
        for (float& v : in) v = x;
        kernels::unary_kernel(op, in, out, 19);
        for (float v : out) lanes_agree = lanes_agree && same(v, out[0]);
        return out[0];
      };
    };
    const double exp_err =
        max_ulp_error(exp_xs, through_kernel(UnaryKernel::exp), [](double x) { return std::exp(x); }, 1.0);
    const double tanh_err = std::max(
        max_ulp_error(wide_xs, through_kernel(UnaryKernel::tanh), [](double x) { return std::tanh(x); }, 1.0),
        max_ulp_error(small_xs, through_kernel(UnaryKernel::tanh), [](double x) { return std::tanh(x); }, 1.0));
    const auto sigmoid_ref = [](double x) { return x >= 0 ? 1 / (1 + std::exp(-x)) : std::exp(x) / (1 + std::exp(x)); };
    const double sigmoid_err =
        std::max(max_ulp_error(exp_xs, through_kernel(UnaryKernel::sigmoid), sigmoid_ref, 1.0),
                 max_ulp_error(small_xs, through_kernel(UnaryKernel::sigmoid), sigmoid_ref, 1.0));
    // softplus against log(1 + e^x) in double (log1p(e^x) for x < 0, x + log1p(e^-x) above):
    // from deep underflow (-110) through the crossover to where it equals x.
    const auto softplus_ref = [](double x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); };
    const double softplus_err =
        std::max(max_ulp_error(exp_xs, through_kernel(UnaryKernel::softplus), softplus_ref, 1.0),
                 max_ulp_error(small_xs, through_kernel(UnaryKernel::softplus), softplus_ref, 1.0));
    const auto log_ref = [](double x) { return std::log(x); };
    const double log_err = std::max(max_ulp_error(log_xs, through_kernel(UnaryKernel::log), log_ref, 1.0),
                                    max_ulp_error(near_one, through_kernel(UnaryKernel::log), log_ref, 1.0));
    MESSAGE(std::string(kernels::elementwise_isa_name(isa)) << ": max error exp " << exp_err << " ulp, tanh " << tanh_err
                                               << " ulp, sigmoid " << sigmoid_err << " ulp, softplus " << softplus_err
                                               << " ulp, log " << log_err << " ulp");
    CHECK(lanes_agree);
    CHECK(exp_err <= 1.5);
    CHECK(tanh_err <= 3.0);
    CHECK(sigmoid_err <= 3.0);
    CHECK(softplus_err <= 3.0);
    CHECK(log_err <= 1.5);
  }
  // exact special values
  using namespace kernels::vec_math;
  CHECK(exp_f32(0.0f) == 1.0f);
  CHECK(exp_f32(-kInff) == 0.0f);
  CHECK(exp_f32(kInff) == kInff);
  CHECK(exp_f32(89.0f) == kInff);
  CHECK(exp_f32(-104.0f) == 0.0f);
  CHECK(std::isnan(exp_f32(kNaNf)));
  CHECK(tanh_f32(kInff) == 1.0f);
  CHECK(tanh_f32(-kInff) == -1.0f);
  CHECK(std::isnan(tanh_f32(kNaNf)));
  CHECK(std::signbit(tanh_f32(-0.0f)));
  CHECK(tanh_f32(1e-40f) == 1e-40f);  // tanh x = x for denormal x
  CHECK(sigmoid_f32(kInff) == 1.0f);
  CHECK(sigmoid_f32(-kInff) == 0.0f);
  CHECK(sigmoid_f32(0.0f) == 0.5f);
  CHECK(std::isnan(sigmoid_f32(kNaNf)));
  CHECK(softplus_f32(kInff) == kInff);
  CHECK(softplus_f32(-kInff) == 0.0f);
  CHECK(softplus_f32(100.0f) == 100.0f);
  CHECK(std::fabs(double(softplus_f32(0.0f)) - 0.6931471805599453) < 1e-7);  // log 2
  CHECK(std::isnan(softplus_f32(kNaNf)));
  CHECK(std::isnan(softplus_f32(-kNaNf)));
  CHECK(log_f32(1.0f) == 0.0f);
  CHECK(!std::signbit(log_f32(1.0f)));
  CHECK(log_f32(0.0f) == -kInff);
  CHECK(log_f32(-0.0f) == -kInff);
  CHECK(log_f32(kInff) == kInff);
  CHECK(std::isnan(log_f32(-kInff)));
  CHECK(std::isnan(log_f32(-1.0f)));
  CHECK(std::isnan(log_f32(-std::numeric_limits<float>::denorm_min())));
  CHECK(std::isnan(log_f32(kNaNf)));
  CHECK(log_f32(std::numeric_limits<float>::denorm_min()) == std::log(std::numeric_limits<float>::denorm_min()));
  CHECK(log_f32(std::numeric_limits<float>::max()) == std::log(std::numeric_limits<float>::max()));
  CHECK(log1p_unit_f32(1e-40f) == 1e-40f);  // log1p z = z for denormal z
  CHECK(log1p_unit_f32(0.0f) == 0.0f);
}

}  // namespace ctrax::test

namespace ctrax::test {

namespace {

// The plain expressions the activation backward kernels must reproduce bit for bit (this file
// is compiled for the baseline ISA, which has no FMA to contract them into).
template <typename T>
T tanh_backward_reference(T g, T y) {
  return g * (T(1) - y * y);
}
template <typename T>
T sigmoid_backward_reference(T g, T y) {
  return g * y * (T(1) - y);
}
// softplus' = sigmoid(x): float32 through vec_math's sigmoid, float64 through std::exp.
template <typename T>
T softplus_backward_reference(T g, T x) {
  if constexpr (std::is_same_v<T, float>) {
    return g * kernels::vec_math::sigmoid_f32(x);
  } else {
    const T e = std::exp(-std::fabs(x));
    return g * (x >= 0 ? T(1) / (1 + e) : e / (1 + e));
  }
}

template <typename T>
void check_activation_backward(ElementwiseIsa isa) {
  for (int64_t n : kLengths) {
    const std::vector<T> g = test_values<T>(n, 7 + static_cast<uint64_t>(n), -3.0, 3.0);
    const std::vector<T> outputs = test_values<T>(n, 9 + static_cast<uint64_t>(n), -1.0, 1.0);
    const std::vector<T> inputs = test_values<T>(n, 11 + static_cast<uint64_t>(n), -30.0, 30.0);
    for (const auto op : {kernels::ActivationBackward::tanh, kernels::ActivationBackward::sigmoid,
                          kernels::ActivationBackward::softplus}) {
      // tanh and sigmoid read the op's output, softplus its input
      const std::vector<T>& y = op == kernels::ActivationBackward::softplus ? inputs : outputs;
      std::vector<T> out(static_cast<size_t>(n), T(-7));
      kernels::activation_backward(op, g.data(), y.data(), out.data(), n);
      std::vector<T> in_place = g;  // out may be g
      kernels::activation_backward(op, in_place.data(), y.data(), in_place.data(), n);
      bool all_same = true;
      for (int64_t i = 0; i < n; ++i) {
        const T want = op == kernels::ActivationBackward::tanh      ? tanh_backward_reference(g[i], y[i])
                       : op == kernels::ActivationBackward::sigmoid ? sigmoid_backward_reference(g[i], y[i])
                                                                    : softplus_backward_reference(g[i], y[i]);
        all_same = all_same && same(out[i], want) && same(in_place[i], want);
      }
      CHECK_MESSAGE(all_same, "n = " << n << ", op " << static_cast<int>(op));
    }
  }
}

}  // namespace

TEST_CASE("elementwise kernels: tanh, sigmoid and softplus backward equal the plain expression bit for bit on every ISA") {
  for_each_supported_isa([](ElementwiseIsa isa) {
    check_activation_backward<float>(isa);
    check_activation_backward<double>(isa);
  });
}

}  // namespace ctrax::test

// unary_kernel_baseline, the short runs' loop: every element exactly unary_value's scalar result
// (this file is compiled for baseline x86-64 like the portable variant, and neither has FMA),
// whatever the CPU's best variant and whatever the length, for every op and both dtypes,
// specials and subnormals included; a NaN result is a NaN (its sign is not compared).
TEST_CASE("elementwise kernels: the baseline unary loop gives the scalar formula's bits at every length") {
  using ctrax::kernels::UnaryKernel;
  const auto check = [](auto tag) {
    using T = decltype(tag);
    std::mt19937_64 gen(77);
    std::uniform_real_distribution<double> real(-30.0, 30.0);
    std::vector<T> x(64);
    for (T& v : x) v = static_cast<T>(real(gen));
    const T specials[] = {T(0), -T(0), std::numeric_limits<T>::infinity(), -std::numeric_limits<T>::infinity(),
                          std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::denorm_min(),
                          -std::numeric_limits<T>::min() / T(8), T(1e-30), T(88.5), T(-104.5)};
    for (size_t i = 0; i < std::size(specials); ++i) x[3 * i + 1] = specials[i];
    for (const UnaryKernel op : {UnaryKernel::neg, UnaryKernel::relu, UnaryKernel::square, UnaryKernel::exp,
                                 UnaryKernel::tanh, UnaryKernel::sigmoid, UnaryKernel::softplus, UnaryKernel::log}) {
      std::vector<T> want(x.size());
      for (size_t i = 0; i < x.size(); ++i) {
        switch (op) {
          case UnaryKernel::neg: want[i] = ctrax::kernels::unary_value<UnaryKernel::neg>(x[i]); break;
          case UnaryKernel::relu: want[i] = ctrax::kernels::unary_value<UnaryKernel::relu>(x[i]); break;
          case UnaryKernel::square: want[i] = ctrax::kernels::unary_value<UnaryKernel::square>(x[i]); break;
          case UnaryKernel::exp: want[i] = ctrax::kernels::unary_value<UnaryKernel::exp>(x[i]); break;
          case UnaryKernel::tanh: want[i] = ctrax::kernels::unary_value<UnaryKernel::tanh>(x[i]); break;
          case UnaryKernel::sigmoid: want[i] = ctrax::kernels::unary_value<UnaryKernel::sigmoid>(x[i]); break;
          case UnaryKernel::softplus: want[i] = ctrax::kernels::unary_value<UnaryKernel::softplus>(x[i]); break;
          case UnaryKernel::log: want[i] = ctrax::kernels::unary_value<UnaryKernel::log>(x[i]); break;
        }
      }
      for (int64_t n = 1; n <= 40; ++n) {
        for (int64_t offset : {0, 3}) {
          INFO("op " << static_cast<int>(op) << ", n " << n << ", offset " << offset);
          std::vector<T> out(static_cast<size_t>(n), T(7));
          ctrax::kernels::unary_kernel_baseline(op, x.data() + offset, out.data(), n);
          // The same bits, except that a NaN may come out with the other sign (x86 keeps the
          // sign of whichever NaN operand an instruction reads first, and compilers order
          // commutative operands differently; a sanitizer build does for exp(NaN)).
          for (int64_t i = 0; i < n; ++i) {
            const T got = out[static_cast<size_t>(i)], ref = want[static_cast<size_t>(offset + i)];
            if (std::isnan(ref)) CHECK(std::isnan(got));
            else CHECK(std::memcmp(&got, &ref, sizeof(T)) == 0);
          }
        }
      }
    }
  };
  check(float{});
  check(double{});
}
