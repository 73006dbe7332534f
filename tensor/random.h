// Random numbers: splittable keys and the tensors drawn from them, as in JAX: no hidden generator
// state. A Key is a plain value; each function draws from the key it is given, new independent
// keys come from split() and fold_in(), and reusing a key gives the same numbers again. Not for
// cryptography (Philox is not a secure cipher). Why counter-based: docs/tour.md, "Random numbers".
//
// Philox-4x32-10 makes element i of every output a pure function of (key, i): results do not
// depend on the thread count, the chunking or any other random call. Counter layout (checkpoints
// and tests depend on it):
//   counter = (index low 32 bits, index high 32 bits, attempt, purpose)
//   purpose 0: samples (index = Philox block number; `attempt` > 0 only for redraws of
//              rejection sampling in randint/permutation);
//   purpose 1: split  (index = child number);
//   purpose 2: fold_in (index = the folded-in 64-bit data).
// The purpose word keeps key derivation and sampling apart: the bits of a child key never
// reappear as sample bits of its parent.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <ostream>
#include <utility>
#include <vector>

#include "tensor.h"

namespace ctrax {

// A 64-bit Philox key held as two 32-bit words. A value type: cheap to copy, compare, print
// and store (raw words) in a checkpoint.
class Key {
 public:
  // The key of seed 0.
  Key() = default;
  // words = {low 32 bits of seed, high 32 bits of seed}.
  explicit Key(uint64_t seed) : words_{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)} {}
  // A key from its raw words (as returned by words()), e.g. when restoring a checkpoint.
  Key(uint32_t word0, uint32_t word1) : words_{word0, word1} {}
  static Key from_seed(uint64_t seed) { return Key(seed); }

  const std::array<uint32_t, 2>& words() const { return words_; }

  bool operator==(const Key& other) const { return words_ == other.words_; }
  bool operator!=(const Key& other) const { return !(*this == other); }

 private:
  friend struct KeyTrace;
  std::array<uint32_t, 2> words_{0, 0};
  // Set only while a compiled function is recorded (tensor/compile.h), for keys derived from
  // its call's key: the recording's serial and the key's id in it. Not part of the value.
  uint64_t trace_serial_ = 0;
  uint32_t trace_id_ = 0;
};

namespace detail {
// For tensor/compile.cpp: the call's key, traced by the active recording (if any), so that draws
// from it and from keys derived from it replay with each call's key.
Key trace_call_key(Key key);
}  // namespace detail

// Prints Key(0x0000002a, 0x00000000).
std::ostream& operator<<(std::ostream& out, const Key& key);

// The raw Philox-4x32-10 block function: four 32-bit outputs for a 128-bit counter under a
// 64-bit key. Exposed for the known-answer tests and for code that needs raw bits.
std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> counter, std::array<uint32_t, 2> key);

// ---- Key derivation ---------------------------------------------------------------------------
// Child j of split(key, n) is the key (out[0], out[1]) where
//   out = philox4x32_10(counter = {j, 0, 0, 1}, key);
// so children are distinct generator outputs of the parent at distinct counters (what JAX
// does with threefry), and split(key, n)[j] does not depend on n. split(key) is
// {split(key, 2)[0], split(key, 2)[1]}. n >= 1, else ctrax::Error.
std::pair<Key, Key> split(Key key);
std::vector<Key> split(Key key, int n);
// The key (out[0], out[1]) with out = philox4x32_10({data low, data high, 0, 2}, key): a key
// for "this key, specialised to `data`" (an episode number, a step, a layer id).
Key fold_in(Key key, uint64_t data);

// ---- Sampling ---------------------------------------------------------------------------------
// All outputs are fresh contiguous tensors. Element i is a pure function of (key, i)
// (see the top of this file), so large outputs are filled in parallel with identical results
// for any thread count. Shapes must have no negative dimension.
//
// Devices: functions that take only a shape draw on `device` (the CPU by default); functions
// that take a tensor (bernoulli with tensor p, categorical) draw on that tensor's device. A
// GPU draws the same numbers as the CPU (kernels/cuda/random.h): uniform, bernoulli, randint
// bit for bit, categorical the same samples (the device's log can differ from glibc's in the
// last ulp, which could only matter for scores tied to ~1e-16), normal to a few ulps (the
// device's log, cos and sin). permutation is CPU only.

// Uniform in [lo, hi): float32 from the top 24 bits of one 32-bit word (u = k * 2^-24),
// float64 from the top 53 bits of a 64-bit draw (u = k * 2^-53); x = lo + u * (hi - lo)
// computed in double, then (for float32) rounded. Rounding can land on hi when hi - lo is
// tiny relative to hi; such values become the largest representable value below hi, so hi is
// never returned. lo < hi, both finite in the requested dtype; floating dtypes only.
Tensor uniform(Key key, const Shape& shape, DType dtype = DType::float32, double lo = 0.0, double hi = 1.0,
               Device device = Device::cpu());

// Normal(mean, stddev^2) by Box-Muller: pair p of elements (2p, 2p+1) comes from two
// uniforms u1 in (0, 1] and u2 in [0, 1): r = sqrt(-2 log u1), element 2p = r cos(2 pi u2),
// element 2p+1 = r sin(2 pi u2). u1 excludes 0 so log never sees 0. float32 uses 32-bit
// uniforms (tails reach 6.6 sigma), float64 53-bit ones (8.6 sigma). stddev >= 0, both finite.
Tensor normal(Key key, const Shape& shape, DType dtype = DType::float32, double mean = 0.0, double stddev = 1.0,
              Device device = Device::cpu());
// Per-element parameters (torch.normal(mean, std)): x = mean + stddev z, z = normal(key,
// mean.shape(), mean.dtype()) and the product and sum rounded in that dtype, so the value of
// add(mean, mul(stddev, normal(key, mean.shape(), mean.dtype()))) bit for bit, in one kernel (a
// Gaussian policy samples its actions this way every step). mean and stddev: float tensors of one
// dtype, shape and device (any strides); stddev is not checked (a negative one mirrors the draw,
// NaN gives NaN, as the formula does). Not differentiable: it throws when autodiff traces either
// input (reparameterised sampling is that formula written with add and mul). On a GPU z is drawn
// on the CPU and moved, as Gaussian sampling does.
Tensor normal(Key key, const Tensor& mean, const Tensor& stddev);

// Bool tensor, true with probability p: element i is (u_i < p) with u_i = w_i * 2^-32 from
// one 32-bit word, so p = 0 never and p = 1 always gives true. p in [0, 1].
Tensor bernoulli(Key key, const Shape& shape, double p, Device device = Device::cpu());
// The same with per-element probabilities `p` (any real dtype) broadcast to `shape`; every
// probability must lie in [0, 1]. The result is on p's device.
Tensor bernoulli(Key key, const Shape& shape, const Tensor& p);
// Shape (and device) of p.
Tensor bernoulli(Key key, const Tensor& p);

// Samples category indices (int64) from unnormalised log-probabilities along `axis` by the
// Gumbel-max trick: argmax_j (logits_j + g_j) with g_j = -log(-log u_j) standard Gumbel noise,
// u_j in (0, 1) from 53-bit draws. P(choose j) = softmax(logits)_j exactly, with no
// normalisation or exp (so no overflow for large logits).
//   - The output has shape logits.shape with `axis` removed (the batch shape), or `shape`
//     when given: then the batch shape must broadcast to `shape` (leading dims draw more
//     samples per row, as jax.random.categorical).
//   - Sample o, category j uses draw index o * K + j (K = number of categories).
//   - A -inf logit is never chosen. A row whose logits are all -inf has no distribution:
//     ctrax::Error (rather than silently returning 0). NaN logits are an error too. With
//     +inf logits the first +inf wins.
//   - logits must be floating, rank >= 1, with at least one category. The result is on
//     logits' device.
Tensor categorical(Key key, const Tensor& logits, int axis = -1, std::optional<Shape> shape = std::nullopt);

// A random permutation of [0, n) (int64) by Fisher-Yates: for i = n-1 down to 1, swap
// element i with element j uniform in [0, i], j drawn unbiasedly (as randint) from draw
// index i. n >= 0. CPU only: Fisher-Yates is sequential (move the result with .to(device)).
Tensor permutation(Key key, int64_t n);

// Integers uniform in [lo, hi), exactly unbiased: a 64-bit draw w maps to
// floor(w * (hi - lo) / 2^64) (Lemire's multiply-shift); the few w that would make some
// values more likely are rejected and redrawn at counter word `attempt` + 1, so every
// element still depends only on (key, i). dtype int32 (then lo, hi - 1 must fit in int32)
// or int64; lo < hi.
Tensor randint(Key key, const Shape& shape, int64_t lo, int64_t hi, DType dtype = DType::int64,
               Device device = Device::cpu());

}  // namespace ctrax
