// The fused optimizer updates on a CUDA device (optimizer_steps.h).
#include "optimizer_steps.h"

#include "cuda_check.h"
#include "group_reduce.cuh"
#include "indexing.cuh"
#include "runtime.h"

namespace ctrax::kernels::cuda {

namespace {

constexpr int kThreads = 256;

// Adds the block's threads' `value`s into *total: the block sums them (group_reduce.cuh) and
// one atomic per block lands in global memory. Every thread of the block must call.
__device__ void block_sum_into(double value, double* total) {
  __shared__ double warp_sums[kThreads / device::kWarpSize];
  const double block_total = device::group_reduce<kThreads>(value, [](double a, double b) { return a + b; }, warp_sums);
  if (threadIdx.x == 0) atomicAdd(total, block_total);
}

// Runs update(i) -> old w[i] over [0, n) with a grid-stride loop and sums the squares.
template <typename Update>
__global__ void summed_update_kernel(int64_t n, Update update, double* total) {
  double sum = 0;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    const double w = static_cast<double>(update(i));
    sum += w * w;
  }
  block_sum_into(sum, total);
}

// Launches the update on the current stream and returns the sum of squares (waits for it).
template <typename Update>
double run_summed(int64_t n, const Update& update) {
  if (n <= 0) return 0.0;
  const auto stream = static_cast<cudaStream_t>(current_stream());
  const int device = current_device();
  double* total = static_cast<double*>(allocate(sizeof(double), device));
  double result = 0;
  try {
    CTRAX_CUDA_CHECK(cudaMemsetAsync(total, 0, sizeof(double), stream));
    // Enough blocks to fill the GPU several times over; the grid-stride loop covers the rest.
    const unsigned blocks = device::blocks_for(n, kThreads) < 1024 ? device::blocks_for(n, kThreads) : 1024;
    summed_update_kernel<<<blocks, kThreads, 0, stream>>>(n, update, total);
    CTRAX_CUDA_CHECK_LAUNCH("summed_update_kernel");
    copy_device_to_host(&result, total, sizeof(double), device);
  } catch (...) {
    deallocate(total, sizeof(double), device);
    throw;
  }
  deallocate(total, sizeof(double), device);
  return result;
}

// Each update is a small functor holding device pointers and the factors in T; its operator()
// applies the step to element i and returns the old weight. The formulas are the CPU loops'.
template <typename T>
struct SquareOnly {
  const T* x;
  __device__ T operator()(int64_t i) const { return x[i]; }
};

template <typename T>
struct Sgd {
  const T* g;
  T* w;
  T lr, gs;
  __device__ T operator()(int64_t i) const {
    const T wi = w[i];
    w[i] = wi - lr * (gs * g[i]);
    return wi;
  }
};

template <typename T>
struct Momentum {
  const T* g;
  T* w;
  T* vel;
  T lr, gs, mass, decay;
  bool nesterov;
  __device__ T operator()(int64_t i) const {
    const T wi = w[i], gi = gs * g[i];
    const T v = mass * vel[i] + gi;
    vel[i] = v;
    w[i] = nesterov ? decay * wi - lr * (mass * v + gi) : decay * wi - lr * v;
    return wi;
  }
};

template <typename T>
struct Adam {
  const T* g;
  T* w;
  T* m;
  T* v;
  T step_size, gs, b1, one_minus_b1, b2, one_minus_b2, inv_sqrt_c2, eps, decay;
  __device__ T operator()(int64_t i) const {
    const T wi = w[i], gi = gs * g[i];
    const T mi = b1 * m[i] + one_minus_b1 * gi;
    const T vi = b2 * v[i] + one_minus_b2 * (gi * gi);
    m[i] = mi;
    v[i] = vi;
    w[i] = decay * wi - step_size * mi / (sqrt(vi) * inv_sqrt_c2 + eps);
    return wi;
  }
};

template <typename T>
struct RmsProp {
  const T* g;
  T* w;
  T* a;
  T lr, gs, gamma, one_minus_gamma, eps;
  __device__ T operator()(int64_t i) const {
    const T wi = w[i], gi = gs * g[i];
    const T ai = gamma * a[i] + one_minus_gamma * (gi * gi);
    a[i] = ai;
    w[i] = wi - lr * gi / (sqrt(ai) + eps);
    return wi;
  }
};

template <typename T>
double sgd(const SgdStep& p, const T* g, T* w, int64_t n) {
  return run_summed(n, Sgd<T>{g, w, static_cast<T>(p.learning_rate), static_cast<T>(p.grad_scale)});
}
template <typename T>
double momentum(const MomentumStep& p, const T* g, T* w, T* vel, int64_t n) {
  return run_summed(n, Momentum<T>{g, w, vel, static_cast<T>(p.learning_rate), static_cast<T>(p.grad_scale),
                                   static_cast<T>(p.mass), static_cast<T>(p.decay), p.nesterov});
}
template <typename T>
double adam(const AdamStep& p, const T* g, T* w, T* m, T* v, int64_t n) {
  return run_summed(n, Adam<T>{g, w, m, v, static_cast<T>(p.step_size), static_cast<T>(p.grad_scale),
                               static_cast<T>(p.b1), static_cast<T>(1.0 - p.b1), static_cast<T>(p.b2),
                               static_cast<T>(1.0 - p.b2), static_cast<T>(p.inv_sqrt_c2), static_cast<T>(p.eps),
                               static_cast<T>(p.decay)});
}
template <typename T>
double rmsprop(const RmsPropStep& p, const T* g, T* w, T* a, int64_t n) {
  return run_summed(n, RmsProp<T>{g, w, a, static_cast<T>(p.learning_rate), static_cast<T>(p.grad_scale),
                                  static_cast<T>(p.gamma), static_cast<T>(1.0 - p.gamma), static_cast<T>(p.eps)});
}

}  // namespace

double sum_of_squares(const float* x, int64_t n) { return run_summed(n, SquareOnly<float>{x}); }
double sum_of_squares(const double* x, int64_t n) { return run_summed(n, SquareOnly<double>{x}); }
double sgd_step(const SgdStep& p, const float* g, float* w, int64_t n) { return sgd(p, g, w, n); }
double sgd_step(const SgdStep& p, const double* g, double* w, int64_t n) { return sgd(p, g, w, n); }
double momentum_step(const MomentumStep& p, const float* g, float* w, float* v, int64_t n) {
  return momentum(p, g, w, v, n);
}
double momentum_step(const MomentumStep& p, const double* g, double* w, double* v, int64_t n) {
  return momentum(p, g, w, v, n);
}
double adam_step(const AdamStep& p, const float* g, float* w, float* m, float* v, int64_t n) {
  return adam(p, g, w, m, v, n);
}
double adam_step(const AdamStep& p, const double* g, double* w, double* m, double* v, int64_t n) {
  return adam(p, g, w, m, v, n);
}
double rmsprop_step(const RmsPropStep& p, const float* g, float* w, float* a, int64_t n) {
  return rmsprop(p, g, w, a, n);
}
double rmsprop_step(const RmsPropStep& p, const double* g, double* w, double* a, int64_t n) {
  return rmsprop(p, g, w, a, n);
}

}  // namespace ctrax::kernels::cuda
