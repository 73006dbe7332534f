// Random numbers on the GPU (random.h). The maths of every sampler is documented in
// tensor/random.h and tensor/random.cpp; the kernels repeat the CPU's expressions operation by
// operation so that the results agree as random.h states.
#include "random.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "cuda_check.h"
#include "indexing.cuh"
#include "runtime.h"

namespace ctrax::kernels::cuda {

namespace {

constexpr int kThreads = 256;

// Philox-4x32-10 constants (tensor/random.cpp explains them).
constexpr uint32_t kPhiloxM0 = 0xD2511F53u;
constexpr uint32_t kPhiloxM1 = 0xCD9E8D57u;
constexpr uint32_t kPhiloxW0 = 0x9E3779B9u;
constexpr uint32_t kPhiloxW1 = 0xBB67AE85u;
constexpr int kPhiloxRounds = 10;
constexpr uint32_t kPurposeSample = 0;

// 2^-32 and 2^-53 (and 2^-24): exact powers of two, so the scalings below are exact.
constexpr double kTwoPowMinus24 = 1.0 / 16777216.0;
constexpr double kTwoPowMinus32 = 1.0 / 4294967296.0;
constexpr double kTwoPowMinus53 = 1.0 / 9007199254740992.0;

struct Block {
  uint32_t w[4];
};

// The sample block `b` at `attempt`: philox4x32_10({b low, b high, attempt, 0}, key).
__device__ __forceinline__ Block sample_block(PhiloxKey key, uint32_t attempt, uint64_t b) {
  uint32_t x0 = static_cast<uint32_t>(b), x1 = static_cast<uint32_t>(b >> 32), x2 = attempt, x3 = kPurposeSample;
  uint32_t k0 = key.word0, k1 = key.word1;
#pragma unroll
  for (int round = 0; round < kPhiloxRounds; ++round) {
    if (round > 0) {
      k0 += kPhiloxW0;
      k1 += kPhiloxW1;
    }
    const uint32_t hi0 = __umulhi(kPhiloxM0, x0), lo0 = kPhiloxM0 * x0;
    const uint32_t hi1 = __umulhi(kPhiloxM1, x2), lo1 = kPhiloxM1 * x2;
    x0 = hi1 ^ x1 ^ k0;
    x1 = lo1;
    x2 = hi0 ^ x3 ^ k1;
    x3 = lo0;
  }
  return Block{{x0, x1, x2, x3}};
}

// 32-bit draw i: word i % 4 of block i / 4. 64-bit draw i: words 2(i % 2) (high) and
// 2(i % 2) + 1 (low) of block i / 2. As SampleBits in tensor/random.cpp.
__device__ __forceinline__ uint32_t word32(PhiloxKey key, uint64_t i) { return sample_block(key, 0, i / 4).w[i % 4]; }
__device__ __forceinline__ uint64_t word64(PhiloxKey key, uint64_t i, uint32_t attempt = 0) {
  const Block b = sample_block(key, attempt, i / 2);
  const int first = 2 * static_cast<int>(i % 2);
  return (static_cast<uint64_t>(b.w[first]) << 32) | b.w[first + 1];
}

// double -> T like the CPU's narrow_float: beyond float's range becomes +-inf.
template <typename T>
__device__ __forceinline__ T narrow_float(double x) {
  if constexpr (std::is_same_v<T, float>) {
    constexpr double kMax = 3.4028234663852886e+38;  // FLT_MAX
    if (x > kMax) return __int_as_float(0x7f800000);
    if (x < -kMax) return -__int_as_float(0x7f800000);
  }
  return static_cast<T>(x);
}

template <typename T>
__global__ void uniform_kernel(PhiloxKey key, T* out, int64_t n, double lo, double hi, double below_hi) {
  const double range = __dsub_rn(hi, lo);  // may overflow to inf for float64 near +-max
  const bool affine = isfinite(range);
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    const double u = std::is_same_v<T, float>
                         ? static_cast<double>(word32(key, static_cast<uint64_t>(i)) >> 8) * kTwoPowMinus24
                         : static_cast<double>(word64(key, static_cast<uint64_t>(i)) >> 11) * kTwoPowMinus53;
    const double x = affine ? __dadd_rn(lo, __dmul_rn(u, range))
                            : __dadd_rn(__dmul_rn(lo, __dsub_rn(1.0, u)), __dmul_rn(hi, u));
    T v = static_cast<T>(x);
    if (v >= static_cast<T>(hi)) v = static_cast<T>(below_hi);
    if (v < static_cast<T>(lo)) v = static_cast<T>(lo);
    out[i] = v;
  }
}

template <typename T>
__global__ void normal_kernel(PhiloxKey key, T* out, int64_t n, double mean, double stddev) {
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    const uint64_t pair = static_cast<uint64_t>(i) / 2;
    double u1, u2;  // u1 in (0, 1], u2 in [0, 1)
    if constexpr (std::is_same_v<T, float>) {
      u1 = (static_cast<double>(word32(key, 2 * pair)) + 1.0) * kTwoPowMinus32;
      u2 = static_cast<double>(word32(key, 2 * pair + 1)) * kTwoPowMinus32;
    } else {
      u1 = (static_cast<double>(word64(key, 2 * pair) >> 11) + 1.0) * kTwoPowMinus53;
      u2 = static_cast<double>(word64(key, 2 * pair + 1) >> 11) * kTwoPowMinus53;
    }
    const double r = sqrt(__dmul_rn(-2.0, log(u1)));
    const double angle = __dmul_rn(kTwoPi, u2);
    const double z = __dmul_rn(r, (i % 2 == 0) ? cos(angle) : sin(angle));
    out[i] = narrow_float<T>(__dadd_rn(mean, __dmul_rn(stddev, z)));
  }
}

__global__ void bernoulli_kernel(PhiloxKey key, uint8_t* out, int64_t n, double p, const double* p_values) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    const double u = static_cast<double>(word32(key, static_cast<uint64_t>(i))) * kTwoPowMinus32;
    out[i] = u < (p_values ? p_values[i] : p) ? 1 : 0;
  }
}

// Unbiased integer in [0, range) from 64-bit draw i (Lemire; tensor/random.cpp's bounded).
__device__ __forceinline__ uint64_t bounded(PhiloxKey key, uint64_t i, uint64_t range) {
  uint64_t w = word64(key, i);
  uint64_t low = w * range;
  if (low < range) {
    const uint64_t threshold = (0 - range) % range;  // 2^64 mod range
    for (uint32_t attempt = 1; low < threshold; ++attempt) {
      w = word64(key, i, attempt);
      low = w * range;
    }
  }
  return __umul64hi(w, range);
}

template <typename T>
__global__ void randint_kernel(PhiloxKey key, T* out, int64_t n, int64_t lo, uint64_t range) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    const uint64_t offset = bounded(key, static_cast<uint64_t>(i), range);
    out[i] = static_cast<T>(static_cast<int64_t>(static_cast<uint64_t>(lo) + offset));
  }
}

__global__ void categorical_kernel(PhiloxKey key, const double* table, int64_t categories, StridedArg rows_of_samples,
                                   int64_t* out, int64_t n) {
  for (int64_t o = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; o < n; o += int64_t{gridDim.x} * blockDim.x) {
    const double* logit = table + device::strided_offset(rows_of_samples, o) * categories;
    double best = -INFINITY;
    int64_t best_index = -1;
    for (int64_t j = 0; j < categories; ++j) {
      // u in (0, 1): the +0.5 keeps both log()s finite.
      const double u =
          (static_cast<double>(word64(key, static_cast<uint64_t>(o * categories + j)) >> 11) + 0.5) * kTwoPowMinus53;
      const double score = __dsub_rn(logit[j], log(-log(u)));
      if (score > best) {
        best = score;
        best_index = j;
      }
    }
    out[o] = best_index;  // >= 0: the tensor layer checked that every row has a finite logit
  }
}

__global__ void outside_unit_interval_kernel(const double* p, int64_t n, unsigned long long* first) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    if (!(p[i] >= 0.0 && p[i] <= 1.0)) atomicMin(first, static_cast<unsigned long long>(i));
}

// Row r's problem is encoded as r * (categories + 1) + c, c = first NaN category or
// `categories` for "all -inf", so the minimum over rows is the CPU's first error.
__global__ void categorical_rows_kernel(const double* table, int64_t rows, int64_t categories,
                                        unsigned long long* first) {
  for (int64_t r = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; r < rows; r += int64_t{gridDim.x} * blockDim.x) {
    bool has_mass = false;
    int64_t code = -1;
    for (int64_t j = 0; j < categories; ++j) {
      const double v = table[r * categories + j];
      if (v != v) {
        code = j;
        break;
      }
      has_mass = has_mass || v > -INFINITY;
    }
    if (code < 0 && !has_mass) code = categories;
    if (code >= 0) atomicMin(first, static_cast<unsigned long long>(r * (categories + 1) + code));
  }
}

// Runs `launch(flag)` with a device word set to all ones, and returns the word's final value.
template <typename Launch>
unsigned long long min_flag(Launch&& launch) {
  const auto stream = static_cast<cudaStream_t>(current_stream());
  const int device_index = current_device();
  auto* flag = static_cast<unsigned long long*>(allocate(sizeof(unsigned long long), device_index));
  unsigned long long host = 0;
  try {
    CTRAX_CUDA_CHECK(cudaMemsetAsync(flag, 0xFF, sizeof(unsigned long long), stream));
    launch(flag, stream);
    copy_device_to_host(&host, flag, sizeof(unsigned long long), device_index);
  } catch (...) {
    deallocate(flag, sizeof(unsigned long long), device_index);
    throw;
  }
  deallocate(flag, sizeof(unsigned long long), device_index);
  return host;
}

constexpr unsigned long long kNone = ~0ull;

}  // namespace

void random_uniform(PhiloxKey key, void* out, ElementType type, int64_t n, double lo, double hi, double below_hi) {
  if (n == 0) return;
  const auto stream = static_cast<cudaStream_t>(current_stream());
  if (type == ElementType::float32) {
    uniform_kernel<float><<<device::blocks_for(n, kThreads), kThreads, 0, stream>>>(key, static_cast<float*>(out), n,
                                                                                   lo, hi, below_hi);
  } else {
    CTRAX_CHECK(type == ElementType::float64, "random_uniform: unsupported element type ", static_cast<int>(type));
    uniform_kernel<double><<<device::blocks_for(n, kThreads), kThreads, 0, stream>>>(key, static_cast<double*>(out),
                                                                                    n, lo, hi, below_hi);
  }
  CTRAX_CUDA_CHECK_LAUNCH("uniform_kernel");
}

void random_normal(PhiloxKey key, void* out, ElementType type, int64_t n, double mean, double stddev) {
  if (n == 0) return;
  const auto stream = static_cast<cudaStream_t>(current_stream());
  if (type == ElementType::float32) {
    normal_kernel<float><<<device::blocks_for(n, kThreads), kThreads, 0, stream>>>(key, static_cast<float*>(out), n,
                                                                                  mean, stddev);
  } else {
    CTRAX_CHECK(type == ElementType::float64, "random_normal: unsupported element type ", static_cast<int>(type));
    normal_kernel<double><<<device::blocks_for(n, kThreads), kThreads, 0, stream>>>(key, static_cast<double*>(out),
                                                                                   n, mean, stddev);
  }
  CTRAX_CUDA_CHECK_LAUNCH("normal_kernel");
}

void random_bernoulli(PhiloxKey key, uint8_t* out, int64_t n, double p, const double* p_values) {
  if (n == 0) return;
  const auto stream = static_cast<cudaStream_t>(current_stream());
  bernoulli_kernel<<<device::blocks_for(n, kThreads), kThreads, 0, stream>>>(key, out, n, p, p_values);
  CTRAX_CUDA_CHECK_LAUNCH("bernoulli_kernel");
}

void random_randint(PhiloxKey key, void* out, ElementType type, int64_t n, int64_t lo, uint64_t range) {
  if (n == 0) return;
  const auto stream = static_cast<cudaStream_t>(current_stream());
  if (type == ElementType::int32) {
    randint_kernel<int32_t><<<device::blocks_for(n, kThreads), kThreads, 0, stream>>>(
        key, static_cast<int32_t*>(out), n, lo, range);
  } else {
    CTRAX_CHECK(type == ElementType::int64, "random_randint: unsupported element type ", static_cast<int>(type));
    randint_kernel<int64_t><<<device::blocks_for(n, kThreads), kThreads, 0, stream>>>(
        key, static_cast<int64_t*>(out), n, lo, range);
  }
  CTRAX_CUDA_CHECK_LAUNCH("randint_kernel");
}

void random_categorical(PhiloxKey key, const double* table, int64_t categories, const StridedArg& rows_of_samples,
                        int64_t* out, int64_t n) {
  if (n == 0) return;
  const auto stream = static_cast<cudaStream_t>(current_stream());
  categorical_kernel<<<device::blocks_for(n, kThreads), kThreads, 0, stream>>>(key, table, categories,
                                                                               rows_of_samples, out, n);
  CTRAX_CUDA_CHECK_LAUNCH("categorical_kernel");
}

int64_t first_outside_unit_interval(const double* p, int64_t n) {
  if (n == 0) return -1;
  const unsigned long long first = min_flag([&](unsigned long long* flag, cudaStream_t stream) {
    outside_unit_interval_kernel<<<device::blocks_for(n, kThreads), kThreads, 0, stream>>>(p, n, flag);
    CTRAX_CUDA_CHECK_LAUNCH("outside_unit_interval_kernel");
  });
  return first == kNone ? -1 : static_cast<int64_t>(first);
}

CategoricalRowProblem first_invalid_categorical_row(const double* table, int64_t rows, int64_t categories) {
  CategoricalRowProblem problem;
  if (rows == 0 || categories == 0) return problem;
  const unsigned long long first = min_flag([&](unsigned long long* flag, cudaStream_t stream) {
    categorical_rows_kernel<<<device::blocks_for(rows, kThreads), kThreads, 0, stream>>>(table, rows, categories,
                                                                                         flag);
    CTRAX_CUDA_CHECK_LAUNCH("categorical_rows_kernel");
  });
  if (first == kNone) return problem;
  const auto per_row = static_cast<unsigned long long>(categories) + 1;
  problem.row = static_cast<int64_t>(first / per_row);
  const auto code = static_cast<int64_t>(first % per_row);
  problem.nan_category = code == categories ? -1 : code;
  return problem;
}

}  // namespace ctrax::kernels::cuda
