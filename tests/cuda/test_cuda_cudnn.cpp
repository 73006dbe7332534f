// The cuDNN backend (kernels/cuda/backend.h) against the hand-written CUDA kernels and the CPU:
// softmax and log_softmax, relu, tanh and sigmoid, and Conv1D/Conv2D forward with the gradients
// of input, kernel and bias. Each comparison runs once per backend, so both GPU paths are held
// to the same CPU reference; the cuDNN runs are skipped (with a message) where the build has no
// cuDNN.
//
// Tolerances: cuDNN sums softmax rows and convolution taps in float32 (the CPU sums softmax rows
// in double), so float32 results agree to a few ulp times the sum's length: rtol 2e-5 for
// softmax and the activations, and atol = rtol = 1e-4 for convolutions of up to 288 taps of
// magnitude <= 2. float64 is within 1e-10. Layouts cuDNN does not take (strided inputs, integer
// dtypes, float64 convolution) must still give the CPU's result through the hand-written kernels.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <ctrax/autograd/tape.h>
#include <ctrax/kernels/cuda/backend.h>
#include <ctrax/layers/conv.h>
#include <ctrax/tensor/ops.h>
#include <ctrax/tensor/tensor.h>
#include <ctrax/tensor/tree.h>

#include "test_util.h"

namespace ctrax {
namespace {

namespace kc = kernels::cuda;

const Device kGpu = Device::cuda(0);
constexpr kc::CudaBackend kBackends[] = {kc::CudaBackend::handwritten, kc::CudaBackend::cudnn};

// Selects `backend` for `op` and restores the hand-written kernels afterwards. active() is
// false when cuDNN was asked for but is not available, and the caller skips that run.
class BackendScope {
 public:
  BackendScope(kc::CudaOp op, kc::CudaBackend backend) : op_(op) {
    if (backend == kc::CudaBackend::cudnn && !kc::cudnn_available()) {
      MESSAGE("cuDNN run skipped: " << kc::cudnn_unavailable_reason());
      active_ = false;
      return;
    }
    kc::set_backend(op_, backend);
  }
  ~BackendScope() { kc::set_backend(op_, kc::CudaBackend::handwritten); }
  BackendScope(const BackendScope&) = delete;
  BackendScope& operator=(const BackendScope&) = delete;
  bool active() const { return active_; }

 private:
  kc::CudaOp op_;
  bool active_ = true;
};

test::Tolerance tolerance(DType dtype) {
  return dtype == DType::float64 ? test::Tolerance{1e-12, 1e-10} : test::Tolerance{1e-6, 2e-5};
}

TEST_CASE("cuda cudnn: softmax and log_softmax equal the cpu with each backend") {
  struct Case {
    Shape shape;
    int axis;
    bool transposed;  // a strided input: made contiguous before either backend runs
  };
  const std::vector<Case> cases = {
      {Shape{4, 7}, -1, false}, {Shape{3, 5, 6}, 1, false}, {Shape{2, 1000}, -1, false}, {Shape{33}, 0, false},
      {Shape{5, 9}, -1, true},  {Shape{0, 5}, -1, false},   {Shape{6, 3}, 0, false},
  };
  for (kc::CudaBackend backend : kBackends) {
    BackendScope scope(kc::CudaOp::softmax, backend);
    if (!scope.active()) continue;
    for (DType dtype : {DType::float32, DType::float64, DType::int32}) {
      for (size_t i = 0; i < cases.size(); ++i) {
        const Case& c = cases[i];
        INFO("backend " << kc::cuda_backend_name(backend) << ", dtype " << dtype_name(dtype) << ", case " << i);
        Tensor x = test::random_tensor(c.shape, dtype, 10 + i, -6.0, 6.0);
        if (c.transposed) x = test::non_contiguous(x);
        const Tensor g = c.transposed ? test::non_contiguous(x.contiguous().to(kGpu)) : x.to(kGpu);
        const DType out = is_floating(dtype) ? dtype : DType::float32;
        test::check_close(softmax(g, c.axis), softmax(x, c.axis), tolerance(out), "softmax");
        test::check_close(log_softmax(g, c.axis), log_softmax(x, c.axis), tolerance(out), "log_softmax");
      }
    }
  }
}

TEST_CASE("cuda cudnn: relu, tanh and sigmoid equal the cpu with each backend") {
  using Unary = Tensor (*)(const Tensor&);
  const std::vector<std::pair<const char*, Unary>> ops = {{"relu", relu}, {"tanh", tanh}, {"sigmoid", sigmoid}};
  for (kc::CudaBackend backend : kBackends) {
    BackendScope scope(kc::CudaOp::activation, backend);
    if (!scope.active()) continue;
    for (DType dtype : {DType::float32, DType::float64, DType::int32}) {
      for (const Shape& shape : {Shape{1000}, Shape{7, 13}, Shape{}, Shape{0, 4}, Shape{3, 4, 5}}) {
        const Tensor x = test::random_tensor(shape, dtype, 77, -5.0, 5.0);
        for (const auto& [name, f] : ops) {
          INFO("backend " << kc::cuda_backend_name(backend) << ", " << name << ", dtype " << dtype_name(dtype)
                          << ", shape " << shape);
          const Tensor expected = f(x);
          const test::Tolerance tol = tolerance(expected.dtype());
          test::check_close(f(x.to(kGpu)), expected, tol, "contiguous");
          if (x.rank() >= 2) {
            // Strided: the hand-written kernel runs whatever the backend.
            test::check_close(f(test::non_contiguous(x).to(kGpu)), f(test::non_contiguous(x)), tol, "transposed");
            test::check_close(f(x.to(kGpu).transpose(0, 1)), f(x.transpose(0, 1)), tol, "transposed view");
          }
          CHECK(f(x.to(kGpu)).dtype() == expected.dtype());
        }
      }
    }
  }
}

Tree conv_weights(const Tensor& kernel, const Tensor& bias) {
  Tree::Dict w;
  w["kernel"] = kernel;
  w["bias"] = bias;
  return Tree(std::move(w));
}

// y = layer(x) and the gradients of sum(cotangent * y) with respect to x, kernel and bias,
// computed on `device` and returned on the CPU.
struct ConvRun {
  Tensor y, dx, dkernel, dbias;
};
ConvRun run_conv(const LayerPtr& layer, const Tensor& x, const Tree& weights, const Tree& state,
                 const Tensor& cotangent, Device device) {
  GradientTape tape;
  const Tensor xd = tape.watch(x.to(device));
  const Tensor k = tape.watch(weights["kernel"].leaf().to(device));
  const Tensor b = tape.watch(weights["bias"].leaf().to(device));
  const Tensor y = layer->apply({xd}, conv_weights(k, b), state).outputs[0];
  const std::vector<Tensor> g = tape.gradient(y, {xd, k, b}, cotangent.to(device));
  return {y.to(Device::cpu()), g[0].to(Device::cpu()), g[1].to(Device::cpu()), g[2].to(Device::cpu())};
}

TEST_CASE("cuda cudnn: Conv2D and Conv1D forward and gradients equal the hand-written path and the cpu") {
  struct Case {
    int64_t B, H, W, C, F, kh, kw, sh, sw;
    Padding padding;
    bool one_d;  // Conv1D over [B, W, C] (H, kh, sh ignored)
  };
  const std::vector<Case> cases = {
      {2, 8, 8, 3, 4, 3, 3, 1, 1, Padding::same, false},   {2, 8, 8, 3, 4, 3, 3, 1, 1, Padding::valid, false},
      {2, 9, 7, 5, 8, 3, 3, 2, 2, Padding::same, false},   {2, 8, 8, 4, 6, 3, 3, 2, 2, Padding::same, false},
      {1, 7, 6, 16, 32, 3, 2, 2, 2, Padding::valid, false}, {3, 5, 5, 1, 2, 1, 1, 1, 1, Padding::valid, false},
      {2, 6, 6, 32, 16, 3, 3, 1, 1, Padding::same, false},  {1, 4, 5, 2, 3, 4, 2, 1, 2, Padding::same, false},
      {2, 1, 11, 3, 5, 1, 3, 1, 2, Padding::same, true},    {2, 1, 9, 4, 2, 1, 4, 1, 1, Padding::valid, true},
  };
  for (DType dtype : {DType::float32, DType::float64}) {  // float64 falls back to im2col under cuDNN
    for (size_t i = 0; i < cases.size(); ++i) {
      const Case& c = cases[i];
      const LayerPtr layer = c.one_d ? Conv1D(c.F, c.kw, c.sw, c.padding)
                                     : Conv2D(c.F, {c.kh, c.kw}, {c.sh, c.sw}, c.padding);
      const Tensor x = c.one_d ? test::random_tensor(Shape{c.B, c.W, c.C}, dtype, 500 + i)
                               : test::random_tensor(Shape{c.B, c.H, c.W, c.C}, dtype, 500 + i);
      auto [weights, state] = layer->init({ShapeDtype::of(x)}, Key(i));
      // A visible bias (the default initialiser's is ~1e-6) so its gradient and addition count.
      const Tree w = conv_weights(weights["kernel"].leaf(),
                                  test::random_tensor(weights["bias"].leaf().shape(), dtype, 900 + i));
      const Shape y_shape = layer->apply({x}, w, state).outputs[0].shape();
      const Tensor cotangent = test::random_tensor(y_shape, dtype, 700 + i);
      const ConvRun cpu = run_conv(layer, x, w, state, cotangent, Device::cpu());
      ConvRun handwritten;
      for (kc::CudaBackend backend : kBackends) {
        BackendScope scope(kc::CudaOp::convolution, backend);
        if (!scope.active()) continue;
        INFO("backend " << kc::cuda_backend_name(backend) << ", dtype " << dtype_name(dtype) << ", case " << i << " ("
                        << layer->name() << ", " << padding_name(c.padding) << ")");
        const ConvRun gpu = run_conv(layer, x, w, state, cotangent, kGpu);
        const test::Tolerance tol = dtype == DType::float64 ? test::Tolerance{1e-10, 1e-10} : test::Tolerance{1e-4, 1e-4};
        test::check_close(gpu.y, cpu.y, tol, "y vs cpu");
        test::check_close(gpu.dx, cpu.dx, tol, "dx vs cpu");
        test::check_close(gpu.dkernel, cpu.dkernel, tol, "dkernel vs cpu");
        test::check_close(gpu.dbias, cpu.dbias, tol, "dbias vs cpu");
        if (backend == kc::CudaBackend::handwritten) {
          handwritten = gpu;
        } else {
          test::check_close(gpu.y, handwritten.y, tol, "y vs handwritten");
          test::check_close(gpu.dx, handwritten.dx, tol, "dx vs handwritten");
          test::check_close(gpu.dkernel, handwritten.dkernel, tol, "dkernel vs handwritten");
        }
      }
    }
  }
}

TEST_CASE("cuda cudnn: Conv with leading batch axes, no bias and an empty batch under cuDNN") {
  BackendScope scope(kc::CudaOp::convolution, kc::CudaBackend::cudnn);
  if (!scope.active()) return;
  const LayerPtr conv = Conv2D(3, {3, 3}, {1, 1}, Padding::same, false);
  const Tensor x = test::random_tensor(Shape{2, 3, 5, 5, 2}, DType::float32, 41);
  auto [w, s] = conv->init({ShapeDtype::of(x)}, Key(2));
  const Tensor expected = conv->apply({x}, w, s).outputs[0];
  Tree::Dict wg;
  wg["kernel"] = w["kernel"].leaf().to(kGpu);
  const Tensor got = conv->apply({x.to(kGpu)}, Tree(std::move(wg)), s).outputs[0];
  test::check_close(got, expected, {1e-4, 1e-4}, "rank-5 input");
  const Tensor empty_x(Shape{0, 5, 5, 2}, DType::float32, kGpu);
  Tree::Dict we;
  we["kernel"] = w["kernel"].leaf().to(kGpu);
  CHECK(conv->apply({empty_x}, Tree(std::move(we)), s).outputs[0].shape() == Shape{0, 5, 5, 3});
}

TEST_CASE("cuda cudnn: set_backend reports unknown values and reads back its choice") {
  test::check_error([] { kc::set_backend(static_cast<kc::CudaOp>(9), kc::CudaBackend::cudnn); }, {"unknown CudaOp"});
  for (kc::CudaOp op : {kc::CudaOp::softmax, kc::CudaOp::activation, kc::CudaOp::convolution}) {
    CHECK(kc::backend(op) == kc::CudaBackend::handwritten);
    if (kc::cudnn_available()) {
      BackendScope scope(op, kc::CudaBackend::cudnn);
      CHECK(kc::backend(op) == kc::CudaBackend::cudnn);
    } else {
      test::check_error([&] { kc::set_backend(op, kc::CudaBackend::cudnn); },
                        {std::string("set_backend(") + kc::cuda_op_name(op) + ", cudnn)", "cuDNN is not available"});
    }
    CHECK(kc::backend(op) == kc::CudaBackend::handwritten);
  }
}

}  // namespace
}  // namespace ctrax
