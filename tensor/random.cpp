// Random numbers: the Philox-4x32-10 block function, key derivation and the samplers.
// See random.h for the design (counter layout, why counter-based) and each sampler's maths.
//
// Device outputs: each sampler checks its arguments once, then fills the output either with
// the CPU loops below or, for a tensor on a GPU, with the kernels of kernels/cuda/random.h
// (the same Philox counters and formulas), reached through the CUDA module's loader
// (kernels/cuda/module.h). Without a module no GPU output can be allocated, so those branches
// are never reached there.
#include "random.h"

#include <algorithm>
#include <array>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <type_traits>

#include "../kernels/cuda/random.h"
#include "../kernels/parallel.h"
#include "ops.h"
#include "plan.h"
#include "strided_loop.h"
#include "trace.h"
#include "cuda_arg.h"

namespace ctrax {

// ---------------------------------------------------------------------------------------------
// Philox-4x32-10
// ---------------------------------------------------------------------------------------------
//
// One round maps the counter (x0, x1, x2, x3) under round key (k0, k1) to
//   (hi(M1 * x2) ^ x1 ^ k0,  lo(M1 * x2),  hi(M0 * x0) ^ x3 ^ k1,  lo(M0 * x0))
// where hi/lo are the upper/lower 32 bits of the 64-bit product. Between rounds the key is
// bumped by the Weyl constants (k0 += W0, k1 += W1, mod 2^32). Ten rounds, the paper's
// recommended count with a safety margin over the 7 that already pass BigCrush.
//
// Constants from the paper: the multipliers were chosen by the authors for good avalanche;
// the Weyl increments are the first 32 bits of the golden ratio (0x9E3779B9) and of
// sqrt(3) - 1 (0xBB67AE85).
namespace {
constexpr uint32_t kPhiloxM0 = 0xD2511F53u;
constexpr uint32_t kPhiloxM1 = 0xCD9E8D57u;
constexpr uint32_t kPhiloxW0 = 0x9E3779B9u;
constexpr uint32_t kPhiloxW1 = 0xBB67AE85u;
constexpr int kPhiloxRounds = 10;

// Purposes (counter word 3); see random.h.
constexpr uint32_t kPurposeSample = 0;
constexpr uint32_t kPurposeSplit = 1;
constexpr uint32_t kPurposeFoldIn = 2;

// Elements per parallel chunk: one Philox block costs ~20 multiplies for 4 words, so a
// chunk this size amortises the wake-up of a worker thread many times over.
constexpr int64_t kRandomGrain = 1 << 14;
}  // namespace

std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> x, std::array<uint32_t, 2> k) {
  for (int round = 0; round < kPhiloxRounds; ++round) {
    if (round > 0) {
      k[0] += kPhiloxW0;
      k[1] += kPhiloxW1;
    }
    const uint64_t p0 = uint64_t{kPhiloxM0} * x[0];
    const uint64_t p1 = uint64_t{kPhiloxM1} * x[2];
    x = {static_cast<uint32_t>(p1 >> 32) ^ x[1] ^ k[0], static_cast<uint32_t>(p1),
         static_cast<uint32_t>(p0 >> 32) ^ x[3] ^ k[1], static_cast<uint32_t>(p0)};
  }
  return x;
}

std::ostream& operator<<(std::ostream& out, const Key& key) {
  char text[40];
  std::snprintf(text, sizeof text, "Key(0x%08" PRIx32 ", 0x%08" PRIx32 ")", key.words()[0], key.words()[1]);
  return out << text;
}

// ---------------------------------------------------------------------------------------------
// Key derivation
// ---------------------------------------------------------------------------------------------

// Keys a recording follows (plan.h): a traced key names the active recorder's serial and an id
// whose derivation from the compiled call's key the recorder holds.
struct KeyTrace {
  // The recorder tracing `key`, or null (no recording, or a key from outside this recording).
  static PlanRecorder* recorder_of(const Key& key) {
    PlanRecorder* recorder = detail::t_capture_state.recorder;
    if (recorder == nullptr || key.trace_id_ == 0 || key.trace_serial_ != recorder->serial()) return nullptr;
    return recorder;
  }
  static uint32_t id(const Key& key) { return key.trace_id_; }
  static Key traced(Key key, PlanRecorder& recorder, std::vector<KeyDerivation> path) {
    key.trace_serial_ = recorder.serial();
    key.trace_id_ = recorder.add_key_path(std::move(path));
    return key;
  }
};

namespace {
Key derive_words(Key parent, uint64_t index, uint32_t purpose) {
  const auto out = philox4x32_10(
      {static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32), 0u, purpose}, parent.words());
  return Key(out[0], out[1]);
}

// A derived key; traced when its parent is, one step further from the call's key.
Key derive(Key parent, uint64_t index, uint32_t purpose) {
  const Key child = derive_words(parent, index, purpose);
  PlanRecorder* recorder = KeyTrace::recorder_of(parent);
  if (recorder == nullptr) return child;
  std::vector<KeyDerivation> path = recorder->key_path(KeyTrace::id(parent));
  path.push_back(KeyDerivation{index, purpose});
  return KeyTrace::traced(child, *recorder, std::move(path));
}

// Where a sampler's kernel gets its key when it runs: the key itself, or, in a plan, the
// compiled call's key (the slot a replay writes) followed by the derivation the recording saw.
class KeySource {
 public:
  // While recording, a key the recording cannot follow (made outside the compiled call, e.g.
  // captured from the caller) would be baked into the plan: that makes the recording
  // unplannable, and the call runs eagerly.
  KeySource(Key key, const char* sampler) : key_(key) {
    PlanRecorder* active = detail::t_capture_state.recorder;
    if (active == nullptr) return;
    PlanRecorder* recorder = KeyTrace::recorder_of(key);
    if (recorder == nullptr) {
      active->mark_unplannable(std::string("a random draw (") + sampler +
                               ") from a key the compiled function did not receive as its call's key");
      return;
    }
    call_key_ = recorder->call_key();
    path_ = recorder->key_path(KeyTrace::id(key));
  }
  Key resolve() const {
    if (call_key_ == nullptr) return key_;
    Key k((*call_key_)[0], (*call_key_)[1]);
    for (const KeyDerivation& step : path_) k = derive_words(k, step.index, step.purpose);
    return k;
  }

 private:
  Key key_;
  std::shared_ptr<const KeyWords> call_key_;
  std::vector<KeyDerivation> path_;
};

// Runs a sampler's CPU fill as a kernel (plan.h): fill(key) with the key the source resolves to
// when it runs. Take the output's pointers inside a detail::KernelScope.
template <typename Fill>
void run_sampler(const KeySource& source, Fill fill) {
  detail::run_kernel([source, fill] { fill(source.resolve()); });
}
}  // namespace

Key detail::trace_call_key(Key key) {
  PlanRecorder* recorder = t_capture_state.recorder;
  if (recorder == nullptr) return key;
  *recorder->call_key() = key.words();
  return KeyTrace::traced(key, *recorder, {});
}

std::vector<Key> split(Key key, int n) {
  CTRAX_REQUIRE(n >= 1, "split: n = ", n, " keys requested (expected n >= 1)");
  std::vector<Key> children;
  children.reserve(static_cast<size_t>(n));
  for (int j = 0; j < n; ++j) children.push_back(derive(key, static_cast<uint64_t>(j), kPurposeSplit));
  return children;
}

std::pair<Key, Key> split(Key key) {
  return {derive(key, 0, kPurposeSplit), derive(key, 1, kPurposeSplit)};
}

Key fold_in(Key key, uint64_t data) { return derive(key, data, kPurposeFoldIn); }

// ---------------------------------------------------------------------------------------------
// The sample stream
// ---------------------------------------------------------------------------------------------

namespace {

// Block b of the sample bits of `key` at `attempt`: Philox at counter {b, attempt, purpose 0}.
inline std::array<uint32_t, 4> sample_block(Key key, uint64_t b, uint32_t attempt) {
  return philox4x32_10({static_cast<uint32_t>(b), static_cast<uint32_t>(b >> 32), attempt, kPurposeSample},
                       key.words());
}

// 64-bit draw i from its block (block i / 2): words 2 (i % 2) and 2 (i % 2) + 1, high word first.
inline uint64_t word64_of(const std::array<uint32_t, 4>& block, uint64_t i) {
  const size_t first = 2 * (i % 2);
  return (uint64_t{block[first]} << 32) | block[first + 1];
}

// Sample bits of one key at one `attempt`: 32-bit draw i is word i % 4 of block i / 4, 64-bit
// draw i is words 2(i % 2) and 2(i % 2) + 1 of block i / 2 (high word first). The last
// block is cached, so walking consecutive draws costs one Philox call per block.
class SampleBits {
 public:
  explicit SampleBits(Key key, uint32_t attempt = 0) : key_(key), attempt_(attempt) {}

  uint32_t word32(uint64_t i) { return block(i / 4)[i % 4]; }
  uint64_t word64(uint64_t i) { return word64_of(block(i / 2), i); }

 private:
  const std::array<uint32_t, 4>& block(uint64_t b) {
    if (!valid_ || b != cached_index_) {
      words_ = sample_block(key_, b, attempt_);
      cached_index_ = b;
      valid_ = true;
    }
    return words_;
  }

  Key key_;
  uint32_t attempt_;
  bool valid_ = false;
  uint64_t cached_index_ = 0;
  std::array<uint32_t, 4> words_{};
};

// 2^-bits, exact (bits <= 63).
constexpr double two_pow_minus(int bits) { return 1.0 / static_cast<double>(uint64_t{1} << bits); }

// u = k * 2^-bits for the top `bits` of a word: exactly representable, in [0, 1).
inline double top_bits_unit(uint64_t word, int word_bits, int bits) {
  return static_cast<double>(word >> (word_bits - bits)) * two_pow_minus(bits);
}

// Unbiased integer in [0, range) (range >= 1) from 64-bit draw `i`, Lemire's method: the high
// half of w * range is floor(w * range / 2^64); the low half l tells whether w fell in one of
// the 2^64 mod range "extra" slots (l < 2^64 mod range), which are redrawn at the next
// attempt of the same draw index.
__extension__ typedef unsigned __int128 uint128;
// From draw i's first-attempt word w.
uint64_t bounded_from(Key key, uint64_t w, uint64_t i, uint64_t range) {
  uint128 m = static_cast<uint128>(w) * range;
  uint64_t low = static_cast<uint64_t>(m);
  if (low < range) {
    const uint64_t threshold = (0 - range) % range;  // 2^64 mod range
    for (uint32_t attempt = 1; low < threshold; ++attempt) {
      w = SampleBits(key, attempt).word64(i);
      m = static_cast<uint128>(w) * range;
      low = static_cast<uint64_t>(m);
    }
  }
  return static_cast<uint64_t>(m >> 64);
}

uint64_t bounded(Key key, SampleBits& first_attempt, uint64_t i, uint64_t range) {
  return bounded_from(key, first_attempt.word64(i), i, range);
}

// The first-attempt sample words of blocks [first, first + count) (4 words each), computed in
// one loop: a block's ten rounds are one dependency chain, and a loop of independent blocks lets
// the core overlap several of them, where SampleBits asks for each as it is needed.
void sample_blocks(Key key, uint64_t first, int64_t count, std::array<uint32_t, 4>* out) {
  for (int64_t b = 0; b < count; ++b) out[b] = sample_block(key, first + static_cast<uint64_t>(b), 0);
}

void require_valid_shape(const Shape& shape, const char* op) {
  for (int i = 0; i < shape.rank(); ++i)
    CTRAX_REQUIRE(shape[i] >= 0, op, ": shape ", shape, " has a negative dimension ", shape[i],
                  " (expected sizes >= 0)");
}

void require_defined_tensor(const Tensor& t, const char* op, const char* what) {
  CTRAX_REQUIRE(t.defined(), op, ": ", what, " is an undefined tensor");
}

kernels::cuda::PhiloxKey philox_key(Key key) { return {key.words()[0], key.words()[1]}; }

// Throws the CPU's message for the first probability outside [0, 1] of `probs` (float64,
// contiguous, on any device), if any. On a GPU a kernel finds whether there is one, and only
// then are the values copied back for the message.
void require_unit_probabilities(const Tensor& probs, const Shape& p_shape) {
  if (probs.device().is_cuda()) {
    cuda_detail::use_device_of(probs);
    const int64_t first = 
        kernels::cuda::first_outside_unit_interval(static_cast<const double*>(probs.device_data()), probs.numel());
    if (first < 0) return;
  }
  const std::vector<double> values = probs.to(Device::cpu()).to_vector<double>();
  for (size_t i = 0; i < values.size(); ++i)
    CTRAX_REQUIRE(values[i] >= 0.0 && values[i] <= 1.0, "bernoulli: probability p = ", values[i],
                  " at flat index ", i, " of p (shape ", p_shape, ") is outside [0, 1]");
}

// Fills [0, n) by fill(begin, end), split across the pool for large n. Correct for any split
// because every sampler computes element i from (key, i) alone.
template <typename Fill>
void fill_elements(int64_t n, Fill&& fill) {
  if (n <= kRandomGrain) {
    fill(0, n);
  } else {
    kernels::parallel_for(n, kRandomGrain, fill);
  }
}

// double -> T without undefined behaviour: values beyond T's range become +-inf.
template <typename T>
T narrow_float(double x) {
  if constexpr (std::is_same_v<T, float>) {
    constexpr double kMax = std::numeric_limits<float>::max();
    if (x > kMax) return std::numeric_limits<float>::infinity();
    if (x < -kMax) return -std::numeric_limits<float>::infinity();
  }
  return static_cast<T>(x);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Samplers
// ---------------------------------------------------------------------------------------------

Tensor uniform(Key key, const Shape& shape, DType dtype, double lo, double hi, Device device) {
  require_valid_shape(shape, "uniform");
  CTRAX_REQUIRE(is_floating(dtype), "uniform: dtype ", dtype, " is not floating (expected float32 or float64)");
  CTRAX_REQUIRE(std::isfinite(lo) && std::isfinite(hi) && lo < hi, "uniform: got lo = ", lo, ", hi = ", hi,
                " (expected finite lo < hi)");
  Tensor out(shape, dtype, device);
  dispatch_floating(dtype, [&](auto tag) {
    using T = decltype(tag);
    const T lo_t = narrow_float<T>(lo), hi_t = narrow_float<T>(hi);
    CTRAX_REQUIRE(std::isfinite(static_cast<double>(lo_t)) && std::isfinite(static_cast<double>(hi_t)) &&
                      lo_t < hi_t,
                  "uniform: lo = ", lo, ", hi = ", hi, " are not finite with lo < hi once rounded to ", dtype);
    const double lo_d = lo_t, hi_d = hi_t;
    const double range = hi_d - lo_d;  // may overflow to inf for float64 near +-max
    const T below_hi = std::nextafter(hi_t, lo_t);
    if (device.is_cuda()) {
      detail::mark_unplannable("a random draw (uniform) on a GPU (plans are CPU-only)");
      cuda_detail::use_device_of(out);
      kernels::cuda::random_uniform(philox_key(key), out.device_data(), cuda_detail::element_type(dtype),
                                                    out.numel(), lo_d, hi_d, static_cast<double>(below_hi));
      return;
    }
    const KeySource source(key, "uniform");
    detail::KernelScope scope;
    run_sampler(source, [data = out.data<T>(), n = out.numel(), lo_t, hi_t, lo_d, hi_d, range, below_hi](Key k) {
      fill_elements(n, [&](int64_t begin, int64_t end) {
        SampleBits bits(k);
        for (int64_t i = begin; i < end; ++i) {
          const double u = std::is_same_v<T, float> ? top_bits_unit(bits.word32(i), 32, 24)
                                                    : top_bits_unit(bits.word64(i), 64, 53);
          // The affine form is monotone in u; the convex form only serves when hi - lo overflows.
          const double x = std::isfinite(range) ? lo_d + u * range : lo_d * (1.0 - u) + hi_d * u;
          T v = static_cast<T>(x);  // |x| <= max(|lo|, |hi|): in range
          if (v >= hi_t) v = below_hi;
          if (v < lo_t) v = lo_t;
          data[i] = v;
        }
      });
    });
  });
  return out;
}

namespace {

// The byte step between consecutive elements (in row-major order) of an operand with these
// byte strides at `shape`, when it has one (one evenly spaced run); nullopt otherwise.
std::optional<int64_t> flat_byte_step(const Shape& shape, const Shape& byte_strides) {
  std::optional<int64_t> step;
  int64_t span = 1;  // elements spanned by the dimensions after d
  for (int d = shape.rank() - 1; d >= 0; --d) {
    if (shape[d] == 1) continue;
    if (!step) step = byte_strides[d];
    else if (byte_strides[d] != *step * span) return std::nullopt;
    span *= shape[d];
  }
  return step.value_or(0);
}

// Elements [begin, end) of normal(k, ..., mean, stddev) into out[0 .. end - begin): one
// logarithm and one sine-cosine per pair; a range may start or end in the middle of a pair, and
// then that element alone is written (the same value either way).
template <typename T>
void normal_range(Key k, int64_t begin, int64_t end, double mean, double stddev, T* out) {
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  SampleBits bits(k);
  T* data = out - begin;
  for (int64_t i = begin; i < end;) {
    const uint64_t pair = static_cast<uint64_t>(i) / 2;
    double u1, u2;  // u1 in (0, 1], u2 in [0, 1)
    if constexpr (std::is_same_v<T, float>) {
      u1 = (static_cast<double>(bits.word32(2 * pair)) + 1.0) * two_pow_minus(32);
      u2 = top_bits_unit(bits.word32(2 * pair + 1), 32, 32);
    } else {
      u1 = (static_cast<double>(bits.word64(2 * pair) >> 11) + 1.0) * two_pow_minus(53);
      u2 = top_bits_unit(bits.word64(2 * pair + 1), 64, 53);
    }
    const double r = std::sqrt(-2.0 * std::log(u1));
    const double angle = kTwoPi * u2;
    if (i % 2 == 1) {
      data[i++] = narrow_float<T>(mean + stddev * (r * std::sin(angle)));
    } else if (i + 1 == end) {
      data[i++] = narrow_float<T>(mean + stddev * (r * std::cos(angle)));
    } else {
      data[i] = narrow_float<T>(mean + stddev * (r * std::cos(angle)));
      data[i + 1] = narrow_float<T>(mean + stddev * (r * std::sin(angle)));
      i += 2;
    }
  }
}

}  // namespace

Tensor normal(Key key, const Shape& shape, DType dtype, double mean, double stddev, Device device) {
  require_valid_shape(shape, "normal");
  CTRAX_REQUIRE(is_floating(dtype), "normal: dtype ", dtype, " is not floating (expected float32 or float64)");
  CTRAX_REQUIRE(std::isfinite(mean) && std::isfinite(stddev) && stddev >= 0, "normal: got mean = ", mean,
                ", stddev = ", stddev, " (expected finite values with stddev >= 0)");
  Tensor out(shape, dtype, device);
  if (device.is_cuda()) {
    detail::mark_unplannable("a random draw (normal) on a GPU (plans are CPU-only)");
    cuda_detail::use_device_of(out);
    kernels::cuda::random_normal(philox_key(key), out.device_data(), cuda_detail::element_type(dtype),
                                                 out.numel(), mean, stddev);
    return out;
  }
  const KeySource source(key, "normal");
  dispatch_floating(dtype, [&](auto tag) {
    using T = decltype(tag);
    detail::KernelScope scope;
    run_sampler(source, [data = out.data<T>(), n = out.numel(), mean, stddev](Key k) {
      fill_elements(n, [&](int64_t begin, int64_t end) { normal_range(k, begin, end, mean, stddev, data + begin); });
    });
  });
  return out;
}

Tensor normal(Key key, const Tensor& mean, const Tensor& stddev) {
  require_defined_tensor(mean, "normal", "mean");
  require_defined_tensor(stddev, "normal", "stddev");
  CTRAX_REQUIRE(is_floating(mean.dtype()) && stddev.dtype() == mean.dtype(), "normal: mean (", mean.dtype(),
                ") and stddev (", stddev.dtype(), ") must be float tensors of one dtype");
  CTRAX_REQUIRE(stddev.shape() == mean.shape(), "normal: stddev of shape ", stddev.shape(),
                " does not match mean of shape ", mean.shape());
  CTRAX_REQUIRE(stddev.device() == mean.device(), "normal: mean is on ", mean.device(), " but stddev on ",
                stddev.device());
  CTRAX_REQUIRE(!detail::is_traced(mean) && !detail::is_traced(stddev),
                "normal(key, mean, stddev) is not differentiable, and autodiff traces its ",
                detail::is_traced(mean) ? "mean" : "stddev",
                "; write add(mean, mul(stddev, normal(key, shape))) for a reparameterised sample, or "
                "stop_gradient the parameters");
  if (!mean.device().is_cpu())
    return add(mean, mul(stddev, normal(key, mean.shape(), mean.dtype()).to(mean.device())));
  Tensor out(mean.shape(), mean.dtype());
  const KeySource source(key, "normal");
  dispatch_floating(mean.dtype(), [&](auto tag) {
    using T = decltype(tag);
    detail::KernelScope scope;
    const Shape& shape = out.shape();
    std::array<char*, 3> base{static_cast<char*>(out.raw_data()), static_cast<char*>(mean.raw_data()),
                              static_cast<char*>(stddev.raw_data())};
    std::array<Shape, 3> strides{contiguous_strides(shape), detail::broadcast_byte_strides(mean, shape),
                                 detail::broadcast_byte_strides(stddev, shape)};
    for (int d = 0; d < shape.rank(); ++d) strides[0][d] *= static_cast<int64_t>(sizeof(T));
    // A run of n elements from flat index `first`: z for up to 64 at a time, then the product
    // and the sum in T, each rounded as mul and add round them (separate statements, and no FMA
    // in this file's code).
    const auto run = [](Key k, int64_t first, std::array<char*, 3> p, std::array<int64_t, 3> st, int64_t n) {
      T z[64];
      for (int64_t done = 0; done < n; done += 64) {
        const int64_t len = std::min<int64_t>(64, n - done);
        normal_range(k, first + done, first + done + len, 0.0, 1.0, z);
        for (int64_t j = 0; j < len; ++j) {
          const int64_t i = done + j;
          const T spread = *reinterpret_cast<const T*>(p[2] + i * st[2]) * z[j];
          reinterpret_cast<T*>(p[0])[i] = *reinterpret_cast<const T*>(p[1] + i * st[1]) + spread;
        }
      }
    };
    // Parameters that are each one evenly spaced run (a policy's [B, 1] slice of its outputs) are
    // read directly; others go through strided_loop, in row-major order over the contiguous
    // output, so that a run's first element is its flat index.
    const std::optional<int64_t> mean_step = flat_byte_step(shape, strides[1]);
    const std::optional<int64_t> std_step = flat_byte_step(shape, strides[2]);
    if (mean_step && std_step) {
      run_sampler(source, [run, base, st = std::array<int64_t, 3>{sizeof(T), *mean_step, *std_step},
                           n = shape.numel()](Key k) { run(k, 0, base, st, n); });
    } else {
      run_sampler(source, [run, shape, base, strides](Key k) {
        const auto piece = [&](std::array<char*, 3> p, std::array<int64_t, 3> st, int64_t n) {
          run(k, (p[0] - base[0]) / static_cast<int64_t>(sizeof(T)), p, st, n);
        };
        detail::strided_loop<3>(shape, base, strides, piece);
      });
    }
  });
  return out;
}

Tensor bernoulli(Key key, const Shape& shape, double p, Device device) {
  require_valid_shape(shape, "bernoulli");
  CTRAX_REQUIRE(p >= 0.0 && p <= 1.0, "bernoulli: probability p = ", p, " is outside [0, 1]");
  Tensor out(shape, DType::boolean, device);
  if (device.is_cuda()) {
    detail::mark_unplannable("a random draw (bernoulli) on a GPU (plans are CPU-only)");
    cuda_detail::use_device_of(out);
    kernels::cuda::random_bernoulli(philox_key(key), static_cast<uint8_t*>(out.device_data()),
                                                    out.numel(), p);
    return out;
  }
  const KeySource source(key, "bernoulli");
  detail::KernelScope scope;
  run_sampler(source, [data = out.data<uint8_t>(), n = out.numel(), p](Key k) {
    fill_elements(n, [&](int64_t begin, int64_t end) {
      SampleBits bits(k);
      for (int64_t i = begin; i < end; ++i) data[i] = top_bits_unit(bits.word32(i), 32, 32) < p ? 1 : 0;
    });
  });
  return out;
}

Tensor bernoulli(Key key, const Shape& shape, const Tensor& p) {
  require_valid_shape(shape, "bernoulli");
  require_defined_tensor(p, "bernoulli", "the probability tensor p");
  const Shape joint = broadcast_shapes(p.shape(), shape, "bernoulli");
  CTRAX_REQUIRE(joint == shape, "bernoulli: probabilities of shape ", p.shape(), " do not broadcast to shape ",
                shape);
  const Tensor probs = p.to(DType::float64).contiguous();
  if (p.device().is_cuda()) require_unit_probabilities(probs, p.shape());
  const Tensor expanded = probs.expand(shape).contiguous();
  Tensor out(shape, DType::boolean, p.device());
  if (p.device().is_cuda()) {
    detail::mark_unplannable("a random draw (bernoulli) on a GPU (plans are CPU-only)");
    cuda_detail::use_device_of(out);
    kernels::cuda::random_bernoulli(philox_key(key), static_cast<uint8_t*>(out.device_data()),
                                                    out.numel(), 0.0, static_cast<const double*>(expanded.device_data()));
    return out;
  }
  // The probabilities are checked when the kernel runs (so a plan checks each call's).
  const KeySource source(key, "bernoulli");
  detail::KernelScope scope;
  run_sampler(source, [checked = probs.data<double>(), n_checked = probs.numel(), p_shape = p.shape(),
                       pd = expanded.data<double>(), data = out.data<uint8_t>(), n = out.numel()](Key k) {
    for (int64_t i = 0; i < n_checked; ++i)
      CTRAX_REQUIRE(checked[i] >= 0.0 && checked[i] <= 1.0, "bernoulli: probability p = ", checked[i],
                    " at flat index ", i, " of p (shape ", p_shape, ") is outside [0, 1]");
    fill_elements(n, [&](int64_t begin, int64_t end) {
      SampleBits bits(k);
      for (int64_t i = begin; i < end; ++i) data[i] = top_bits_unit(bits.word32(i), 32, 32) < pd[i] ? 1 : 0;
    });
  });
  return out;
}

Tensor bernoulli(Key key, const Tensor& p) {
  require_defined_tensor(p, "bernoulli", "the probability tensor p");
  return bernoulli(key, p.shape(), p);
}

namespace {

// categorical's logits as rows (the category axis moved last, float64), and where each sample's
// row is: sample o reads row sum_d index_d(o) row_strides[d] (zero strides on new or size-1 dims).
struct CategoricalRows {
  Tensor table;  // [rows, categories]
  int64_t row_count = 0, categories = 0;
  Shape out_shape, row_strides;
};

CategoricalRows categorical_rows(const Tensor& logits, int axis, const std::optional<Shape>& shape) {
  require_defined_tensor(logits, "categorical", "logits");
  CTRAX_REQUIRE(is_floating(logits.dtype()), "categorical: logits have dtype ", logits.dtype(),
                " (expected float32 or float64 unnormalised log-probabilities)");
  CTRAX_REQUIRE(logits.rank() >= 1, "categorical: logits have rank 0 (expected rank >= 1 with a category axis)");
  const int ax = normalize_axis(axis, logits.rank(), "categorical");
  CategoricalRows r;
  r.categories = logits.shape()[ax];
  CTRAX_REQUIRE(r.categories >= 1, "categorical: logits of shape ", logits.shape(),
                " have no categories along axis ", axis);
  std::vector<int> order;
  for (int d = 0; d < logits.rank(); ++d)
    if (d != ax) order.push_back(d);
  order.push_back(ax);
  r.table = logits.permute(order).to(DType::float64).contiguous();
  Shape batch = r.table.shape();
  batch.erase(batch.rank() - 1);
  r.row_count = batch.numel();
  r.out_shape = batch;
  if (shape) {
    require_valid_shape(*shape, "categorical");
    const Shape joint = broadcast_shapes(batch, *shape, "categorical");
    CTRAX_REQUIRE(joint == *shape, "categorical: the batch shape ", batch, " of logits ", logits.shape(),
                  " (axis ", axis, " removed) does not broadcast to the requested shape ", *shape);
    r.out_shape = *shape;
  }
  r.row_strides = Shape::filled(r.out_shape.rank(), 0);
  const Shape batch_strides = contiguous_strides(batch);
  const int shift = r.out_shape.rank() - batch.rank();
  for (int d = 0; d < batch.rank(); ++d) r.row_strides[d + shift] = batch[d] == 1 ? 0 : batch_strides[d];
  return r;
}

// Every row needs a distribution: no NaN, and at least one logit above -inf.
void check_categorical_rows(const double* rows, int64_t row_count, int64_t categories) {
  for (int64_t r = 0; r < row_count; ++r) {
    bool has_mass = false;
    for (int64_t j = 0; j < categories; ++j) {
      const double v = rows[r * categories + j];
      CTRAX_REQUIRE(!std::isnan(v), "categorical: logits contain NaN (row ", r, ", category ", j, ")");
      has_mass = has_mass || v > -std::numeric_limits<double>::infinity();
    }
    CTRAX_REQUIRE(has_mass, "categorical: every logit of row ", r, " is -inf (no category can be sampled)");
  }
}

// Sample o's category: the Gumbel-max draw over its row.
int64_t gumbel_argmax(const double* logit, int64_t categories, SampleBits& bits, int64_t o) {
  double best = -std::numeric_limits<double>::infinity();
  int64_t best_index = -1;
  for (int64_t j = 0; j < categories; ++j) {
    // u in (0, 1): the +0.5 keeps both log()s finite.
    const double u =
        (static_cast<double>(bits.word64(static_cast<uint64_t>(o * categories + j)) >> 11) + 0.5) * two_pow_minus(53);
    const double score = logit[j] - std::log(-std::log(u));
    if (score > best) {
      best = score;
      best_index = j;
    }
  }
  CTRAX_CHECK(best_index >= 0, "a row had no finite logit after validation");
  return best_index;
}

void categorical_on_cuda(Key key, const CategoricalRows& r, Tensor& out) {
  cuda_detail::use_device_of(r.table);
  const auto problem = kernels::cuda::first_invalid_categorical_row(static_cast<const double*>(r.table.device_data()),
                                                                    r.row_count, r.categories);
  CTRAX_REQUIRE(problem.row < 0 || problem.nan_category < 0, "categorical: logits contain NaN (row ", problem.row,
                ", category ", problem.nan_category, ")");
  CTRAX_REQUIRE(problem.row < 0, "categorical: every logit of row ", problem.row,
                " is -inf (no category can be sampled)");
  detail::mark_unplannable("a random draw (categorical) on a GPU (plans are CPU-only)");
  CTRAX_REQUIRE(r.out_shape.rank() <= kernels::cuda::kMaxRank, "categorical: output shape ", r.out_shape,
                " has rank ", r.out_shape.rank(), " (the CUDA kernels take at most ", kernels::cuda::kMaxRank, ")");
  kernels::cuda::StridedArg rows_of_samples;  // sample o -> its row of the table
  rows_of_samples.rank = r.out_shape.rank();
  for (int d = 0; d < r.out_shape.rank(); ++d) {
    rows_of_samples.shape[d] = r.out_shape[d];
    rows_of_samples.strides[d] = r.row_strides[d];
  }
  kernels::cuda::random_categorical(philox_key(key), static_cast<const double*>(r.table.device_data()), r.categories,
                                    rows_of_samples, static_cast<int64_t*>(out.device_data()), out.numel());
}

}  // namespace

Tensor categorical(Key key, const Tensor& logits, int axis, std::optional<Shape> shape) {
  const CategoricalRows r = categorical_rows(logits, axis, shape);
  Tensor out(r.out_shape, DType::int64, logits.device());
  const int64_t n = out.numel();
  CTRAX_REQUIRE(n == 0 || n <= std::numeric_limits<int64_t>::max() / r.categories, "categorical: ", n,
                " samples of ", r.categories, " categories overflow the draw counter");
  if (out.device().is_cuda()) {
    categorical_on_cuda(key, r, out);
    return out;
  }
  // The rows are checked when the kernel runs (so a plan checks each call's logits).
  const KeySource source(key, "categorical");
  detail::KernelScope scope;
  run_sampler(source, [rows = r.table.data<double>(), row_count = r.row_count, categories = r.categories,
                       data = out.data<int64_t>(), n, out_shape = r.out_shape, row_strides = r.row_strides](Key k) {
    check_categorical_rows(rows, row_count, categories);
    fill_elements(n, [&](int64_t begin, int64_t end) {
      SampleBits bits(k);
      for (int64_t o = begin; o < end; ++o) {
        int64_t row = 0;
        for (int64_t d = out_shape.rank() - 1, rest = o; d >= 0; --d) {
          row += (rest % out_shape[d]) * row_strides[d];
          rest /= out_shape[d];
        }
        data[o] = gumbel_argmax(rows + row * categories, categories, bits, o);
      }
    });
  });
  return out;
}

Tensor permutation(Key key, int64_t n) {
  CTRAX_REQUIRE(n >= 0, "permutation: n = ", n, " (expected n >= 0)");
  Tensor out(Shape{n}, DType::int64);
  const KeySource source(key, "permutation");
  detail::KernelScope scope;
  run_sampler(source, [data = out.data<int64_t>(), n](Key k) {
    std::iota(data, data + n, int64_t{0});
    // Fisher-Yates is sequential, but still a pure function of (key, n). Draw i is 64-bit word
    // i (words 2 (i % 2) and 2 (i % 2) + 1 of block i / 2); the blocks are made kChunk at a
    // time, from the top down as the draws are used.
    constexpr int64_t kChunk = 128;
    std::array<uint32_t, 4> blocks[kChunk];
    for (int64_t i = n - 1; i >= 1;) {
      const int64_t top = i / 2, bottom = std::max<int64_t>(0, top - kChunk + 1);
      sample_blocks(k, static_cast<uint64_t>(bottom), top - bottom + 1, blocks);
      for (; i >= 1 && i / 2 >= bottom; --i) {
        const uint64_t word = word64_of(blocks[i / 2 - bottom], static_cast<uint64_t>(i));
        const auto u = static_cast<uint64_t>(i);
        const auto j = static_cast<int64_t>(bounded_from(k, word, u, u + 1));
        std::swap(data[i], data[j]);
      }
    }
  });
  return out;
}

Tensor randint(Key key, const Shape& shape, int64_t lo, int64_t hi, DType dtype, Device device) {
  require_valid_shape(shape, "randint");
  CTRAX_REQUIRE(is_integer(dtype), "randint: dtype ", dtype, " is not an integer dtype (expected int32 or int64)");
  CTRAX_REQUIRE(lo < hi, "randint: got lo = ", lo, ", hi = ", hi, " (expected lo < hi)");
  if (dtype == DType::int32)
    CTRAX_REQUIRE(lo >= std::numeric_limits<int32_t>::min() && hi - 1 <= std::numeric_limits<int32_t>::max(),
                  "randint: [", lo, ", ", hi, ") does not fit in int32");
  // Wrapping unsigned arithmetic gives the exact width even for [INT64_MIN, INT64_MAX).
  const uint64_t range = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
  Tensor out(shape, dtype, device);
  if (device.is_cuda()) {
    detail::mark_unplannable("a random draw (randint) on a GPU (plans are CPU-only)");
    cuda_detail::use_device_of(out);
    kernels::cuda::random_randint(philox_key(key), out.device_data(), cuda_detail::element_type(dtype),
                                                  out.numel(), lo, range);
    return out;
  }
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>) {
      const KeySource source(key, "randint");
      detail::KernelScope scope;
      run_sampler(source, [data = out.data<T>(), n = out.numel(), lo, range](Key k) {
        fill_elements(n, [&](int64_t begin, int64_t end) {
          SampleBits bits(k);
          for (int64_t i = begin; i < end; ++i) {
            const uint64_t offset = bounded(k, bits, static_cast<uint64_t>(i), range);
            // lo + offset < hi fits in T; the unsigned sum converts back modulo 2^64 (C++20).
            data[i] = static_cast<T>(static_cast<int64_t>(static_cast<uint64_t>(lo) + offset));
          }
        });
      });
    }
  });
  return out;
}

}  // namespace ctrax
