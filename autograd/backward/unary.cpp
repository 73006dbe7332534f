// Backward of the unary ops and clip (forwards: tensor/ops/unary.cpp).
//
// Each gradient is written as the chain rule on the op's formula, dx = g * dy/dx, using the
// saved input x or output y, whichever makes it cheaper (exp saves y: dy/dx = y).
//
// Subgradients at kinks (documented choices, the same as PyTorch):
//   relu:  0 at x = 0 (and below);   abs: 0 at x = 0 (sign(0) = 0);
//   clip:  1 on the closed interval [lo, hi], 0 outside.
#include <cmath>

#include "../../base/error.h"
#include "../../kernels/elementwise/activation_backward.h"
#include "../../kernels/elementwise/elementwise.h"
#include "../../tensor/ops.h"
#include "../../tensor/plan_fusion.h"
#include "../derivatives.h"

namespace ctrax::autograd_detail {

namespace {
thread_local bool t_device_formulas_on_cpu = false;
}  // namespace

bool device_formulas_on_cpu() { return t_device_formulas_on_cpu; }
DeviceFormulasOnCpu::DeviceFormulasOnCpu() : saved_(t_device_formulas_on_cpu) { t_device_formulas_on_cpu = true; }
DeviceFormulasOnCpu::~DeviceFormulasOnCpu() { t_device_formulas_on_cpu = saved_; }

namespace {

// 1.0 where cond, else 0.0, in dtype like t's.
Tensor mask_like(const Tensor& cond, const Tensor& like) { return cond.to(like.dtype()); }

const Tensor& g0(const BackwardContext& c) { return c.output_grads[0]; }
const Tensor& x0(const BackwardContext& c) { return c.inputs[0]; }
const Tensor& y0(const BackwardContext& c) { return c.outputs[0]; }

// ---- unary ----------------------------------------------------------------------------------
// dx = g * f'(x or y), in one pass over memory: the derivative is evaluated inside the loop
// instead of being built from separate ops (relu's mask alone would be a compare, a cast and a
// multiply, each writing a temporary).
template <typename F>
Tensor fused_on_host(const Tensor& g, const Tensor& saved, F dydx_times_g) {
  // g has the output's shape and dtype, which for these ops are the input's; gradients that
  // arrive as broadcast views (from sum or mean) are materialised first.
  const Tensor gc = g.contiguous(), sc = saved.contiguous();
  CTRAX_CHECK(gc.shape() == sc.shape() && gc.dtype() == sc.dtype(), "autodiff: unary backward got g ", gc.dtype(),
              gc.shape(), " for a value ", sc.dtype(), sc.shape());
  Tensor out(gc.shape(), gc.dtype());
  dispatch_floating(gc.dtype(), [&](auto tag) {
    using T = decltype(tag);
    detail::KernelScope scope;
    const T* gp = gc.data<T>();
    const T* sp = sc.data<T>();
    T* o = out.data<T>();
    detail::run_kernel([gp, sp, o, n = gc.numel(), dydx_times_g] {
      for (int64_t i = 0; i < n; ++i) o[i] = dydx_times_g(gp[i], sp[i]);
    });
  });
  return out;
}

// On the CPU the one-pass loop above; on another device the same derivative built from ops
// (`on_device(g, saved)`), so no host code touches device memory.
template <typename F, typename D>
Tensor fused(const Tensor& g, const Tensor& saved, F dydx_times_g, D on_device) {
  if (g.device().is_cpu() && !device_formulas_on_cpu()) return fused_on_host(g, saved, dydx_times_g);
  return on_device(g, saved);
}

// The vectorised kernel of kernels/elementwise/activation_backward.h for contiguous CPU
// gradients (the same bits as fused_on_host's loop); an undefined tensor when it does not apply.
Tensor activation_backward_kernel(kernels::ActivationBackward op, const Tensor& g, const Tensor& y) {
  if (!g.device().is_cpu() || device_formulas_on_cpu() || !g.is_contiguous() || !y.is_contiguous() ||
      g.dtype() != y.dtype() || g.shape() != y.shape() || !is_floating(g.dtype()))
    return Tensor();
  Tensor out(g.shape(), g.dtype());
  dispatch_floating(g.dtype(), [&](auto tag) {
    using T = decltype(tag);
    detail::KernelScope scope;
    detail::run_kernel([op, gp = g.data<T>(), yp = y.data<T>(), o = out.data<T>(), n = g.numel()] {
      kernels::activation_backward(op, gp, yp, o, n);
    });
  });
  return out;
}

// fused() for an activation that has a vectorised backward kernel: that kernel when it applies.
template <typename F, typename D>
Tensor fused(const Tensor& g, const Tensor& saved, F dydx_times_g, D on_device, kernels::ActivationBackward kernel) {
  if (Tensor out = activation_backward_kernel(kernel, g, saved); out.defined()) return out;
  return fused(g, saved, dydx_times_g, on_device);
}

// For the few derivatives without ops for their formula on a device (the exact gelu's erf):
// computed on the CPU and moved back.
template <typename F>
Tensor fused_through_host(const Tensor& g, const Tensor& saved, F dydx_times_g) {
  if (g.device().is_cpu()) return fused_on_host(g, saved, dydx_times_g);
  return fused_on_host(g.to(Device::cpu()), saved.to(Device::cpu()), dydx_times_g).to(g.device());
}

void neg_backward(const BackwardContext& c, std::span<Tensor> dx) { dx[0] = neg(g0(c)); }
void abs_backward(const BackwardContext& c, std::span<Tensor> dx) {
  dx[0] = fused(g0(c), x0(c), [](auto g, auto x) { return x > 0 ? g : (x < 0 ? -g : decltype(g)(0)); },
                [](const Tensor& g, const Tensor& x) { return g * sign(x); });
}
void exp_backward(const BackwardContext& c, std::span<Tensor> dx) {
  dx[0] = fused(g0(c), y0(c), [](auto g, auto y) { return g * y; },
                [](const Tensor& g, const Tensor& y) { return g * y; });
}
void log_backward(const BackwardContext& c, std::span<Tensor> dx) {
  dx[0] = fused(g0(c), x0(c), [](auto g, auto x) { return g / x; },
                [](const Tensor& g, const Tensor& x) { return g / x; });
}
void log1p_backward(const BackwardContext& c, std::span<Tensor> dx) {
  dx[0] = fused(g0(c), x0(c), [](auto g, auto x) { return g / (x + 1); },
                [](const Tensor& g, const Tensor& x) { return g / (x + 1.0); });
}
void expm1_backward(const BackwardContext& c, std::span<Tensor> dx) {
  dx[0] = fused(g0(c), y0(c), [](auto g, auto y) { return g * (y + 1); },
                [](const Tensor& g, const Tensor& y) { return g * (y + 1.0); });
}
// y = sqrt(x): dy/dx = 1 / (2 y).
void sqrt_backward(const BackwardContext& c, std::span<Tensor> dx) {
  dx[0] = fused(g0(c), y0(c), [](auto g, auto y) { return g * decltype(g)(0.5) / y; },
                [](const Tensor& g, const Tensor& y) { return g * 0.5 / y; });
}
// y = x^(-1/2): dy/dx = -x^(-3/2) / 2 = -y^3 / 2.
void rsqrt_backward(const BackwardContext& c, std::span<Tensor> dx) {
  dx[0] = fused(g0(c), y0(c), [](auto g, auto y) { return g * decltype(g)(-0.5) * y * y * y; },
                [](const Tensor& g, const Tensor& y) { return g * -0.5 * y * y * y; });
}
void square_backward(const BackwardContext& c, std::span<Tensor> dx) {
  dx[0] = fused(g0(c), x0(c), [](auto g, auto x) { return g * (x + x); },
                [](const Tensor& g, const Tensor& x) { return g * (x + x); });
}
// y = 1/x: dy/dx = -1/x^2 = -y^2.
void reciprocal_backward(const BackwardContext& c, std::span<Tensor> dx) {
  dx[0] = fused(g0(c), y0(c), [](auto g, auto y) { return -g * y * y; },
                [](const Tensor& g, const Tensor& y) { return -g * y * y; });
}
// tanh' = 1 - y^2.
void tanh_backward(const BackwardContext& c, std::span<Tensor> dx) {
  dx[0] = fused(g0(c), y0(c), [](auto g, auto y) { return g * (1 - y * y); },
                [](const Tensor& g, const Tensor& y) { return g * (1.0 - y * y); }, kernels::ActivationBackward::tanh);
}
// sigmoid' = y (1 - y).
void sigmoid_backward(const BackwardContext& c, std::span<Tensor> dx) {
  dx[0] = fused(g0(c), y0(c), [](auto g, auto y) { return g * y * (1 - y); },
                [](const Tensor& g, const Tensor& y) { return g * y * (1.0 - y); }, kernels::ActivationBackward::sigmoid);
}
// softplus' = sigmoid(x), written so that exp never overflows (kernels::softplus_derivative:
// the vectorised kernel's formula, float32 through vec_math as softplus itself).
void softplus_backward(const BackwardContext& c, std::span<Tensor> dx) {
  dx[0] = fused(g0(c), x0(c), [](auto g, auto x) { return g * kernels::softplus_derivative(x); },
                [](const Tensor& g, const Tensor& x) { return g * sigmoid(x); }, kernels::ActivationBackward::softplus);
}
// relu passes g where the output is positive (0 at x = 0). The hottest backward of small
// networks, so it runs on the vectorised kernel (kernels/elementwise) when both are contiguous.
void relu_backward(const BackwardContext& c, std::span<Tensor> dx) {
  const Tensor &g = g0(c), &y = y0(c);
  if (g.device().is_cpu() && !device_formulas_on_cpu() && g.is_contiguous() && y.is_contiguous() && g.dtype() == y.dtype() && g.shape() == y.shape()) {
    Tensor out(g.shape(), g.dtype());
    dispatch_floating(g.dtype(), [&](auto tag) {
      using T = decltype(tag);
      detail::KernelScope scope;
      const T* gp = g.data<T>();
      const T* yp = y.data<T>();
      T* o = out.data<T>();
      detail::run_kernel([gp, yp, o, n = g.numel()] {
        kernels::binary_kernel(kernels::BinaryKernel::relu_backward, gp, 1, yp, 1, o, n);
      });
      // A compiled plan may fold this into the GEMM that computed g (tensor/plan_fusion.h).
      detail::note_relu_backward(gp, yp, o, out);
    });
    dx[0] = out;
    return;
  }
  dx[0] = fused(g, y, [](auto gv, auto yv) { return yv > 0 ? gv : decltype(gv)(0); },
                [](const Tensor& gv, const Tensor& yv) { return where(gt(yv, scalar_like(0.0, yv)), gv, zeros_like(gv)); });
}
// Exact: d/dx [x Phi(x)] = Phi(x) + x phi(x).
// Tanh form: with u = sqrt(2/pi) (x + 0.044715 x^3) and t = tanh(u),
//   d/dx [x (1 + t) / 2] = (1 + t) / 2 + x (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2) / 2.
void gelu_backward(const BackwardContext& c, std::span<Tensor> dx) {
  if (c.attr<GeluAttrs>().approximate) {
    dx[0] = fused(g0(c), x0(c), [](auto g, auto xt) {
      const double x = xt, k = 0.79788456080286535588;
      const double t = std::tanh(k * (x + 0.044715 * x * x * x));
      return g * static_cast<decltype(g)>(0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * k * (1.0 + 3.0 * 0.044715 * x * x));
    }, [](const Tensor& g, const Tensor& x) {
      const double k = 0.79788456080286535588;
      const Tensor t = tanh(k * (x + 0.044715 * x * x * x));
      return g * (0.5 * (1.0 + t) + 0.5 * k * x * (1.0 - t * t) * (1.0 + 3.0 * 0.044715 * x * x));
    });
    return;
  }
  // No erf op yet: on a device, through the host.
  dx[0] = fused_through_host(g0(c), x0(c), [](auto g, auto xt) {
    const double x = xt;
    const double cdf = 0.5 * (1.0 + std::erf(x * 0.70710678118654752440));
    const double pdf = 0.39894228040143267794 * std::exp(-0.5 * x * x);
    return g * static_cast<decltype(g)>(cdf + x * pdf);
  });
}
void sin_backward(const BackwardContext& c, std::span<Tensor> dx) {
  dx[0] = fused(g0(c), x0(c), [](auto g, auto x) { return g * std::cos(x); },
                [](const Tensor& g, const Tensor& x) { return g * cos(x); });
}
void cos_backward(const BackwardContext& c, std::span<Tensor> dx) {
  dx[0] = fused(g0(c), x0(c), [](auto g, auto x) { return -g * std::sin(x); },
                [](const Tensor& g, const Tensor& x) { return -g * sin(x); });
}
void clip_backward(const BackwardContext& c, std::span<Tensor> dx) {
  const ScalarAttrs& a = c.attr<ScalarAttrs>();
  const Tensor& x = x0(c);
  const Tensor inside = logical_and(ge(x, scalar_like(a.lo, x)), le(x, scalar_like(a.hi, x)));
  dx[0] = mul(g0(c), mask_like(inside, g0(c)));
}

constexpr OpDerivative kTable[] = {
    {OpId::neg, kSavesNothing, neg_backward},
    {OpId::abs, kSavesInputs, abs_backward},
    {OpId::exp, kSavesOutputs, exp_backward},
    {OpId::log, kSavesInputs, log_backward},
    {OpId::log1p, kSavesInputs, log1p_backward},
    {OpId::expm1, kSavesOutputs, expm1_backward},
    {OpId::sqrt, kSavesOutputs, sqrt_backward},
    {OpId::rsqrt, kSavesOutputs, rsqrt_backward},
    {OpId::square, kSavesInputs, square_backward},
    {OpId::reciprocal, kSavesOutputs, reciprocal_backward},
    {OpId::tanh, kSavesOutputs, tanh_backward},
    {OpId::sigmoid, kSavesOutputs, sigmoid_backward},
    {OpId::softplus, kSavesInputs, softplus_backward},
    {OpId::relu, kSavesOutputs, relu_backward},
    {OpId::gelu, kSavesInputs, gelu_backward},
    {OpId::sin, kSavesInputs, sin_backward},
    {OpId::cos, kSavesInputs, cos_backward},
    {OpId::clip, kSavesInputs, clip_backward},
};

}  // namespace

std::span<const OpDerivative> unary_derivatives() { return kTable; }

}  // namespace ctrax::autograd_detail
