// demo: a short tour of the engine, run by the README's first command.
//
// It fits a linear model y = X w + noise by full-batch gradient descent, with the gradient
// from autodiff (value_and_grad), on both GEMM backends; checks that gradient against the
// closed form d/dw mean((Xw - y)^2) = 2/n X^T (Xw - y); and shows the printing, softmax, and
// the kernels that were picked for this CPU.
#include <chrono>
#include <cstdio>
#include <iostream>

#include <ctrax/ctrax.h>

using namespace ctrax;

namespace {

Tensor mse(const Tensor& w, const Tensor& X, const Tensor& y) { return mean(square(matmul(X, w) - y)); }

// Returns the final mean squared error.
double fit_linear_model(const Tensor& X, const Tensor& y, int steps, double learning_rate, bool verbose) {
  Tensor w = zeros(Shape{X.size(1), 1});
  const auto loss_and_gradient = value_and_grad(mse);  // differentiates with respect to w
  double loss = 0.0;
  for (int step = 0; step <= steps; ++step) {
    const auto [value, gradient, aux] = loss_and_gradient(w, X, y);
    loss = value.item<double>();
    if (verbose && step % (steps / 5) == 0) std::printf("  step %4d  mse %.6f\n", step, loss);
    w = w - gradient * learning_rate;
  }
  return loss;
}

}  // namespace

int main() {
  try {
    std::printf("ctrax demo\n");
    std::printf("  threads: %d, GEMM micro-kernel: %s, OpenBLAS: %s (%s)\n", kernels::num_threads(),
                kernels::gemm_isa_name(kernels::active_gemm_isa()),
                kernels::openblas_available() ? "available" : "not built in", kernels::openblas_corename().c_str());

    // Data: 1024 samples of 16 features, a known weight vector, Gaussian noise of std 0.01.
    Key key(42);
    auto [data_key, noise_key] = split(key);
    const Tensor X = normal(data_key, Shape{1024, 16});
    const Tensor true_w = arange(1.0, 17.0, 1.0).reshape(Shape{16, 1}) * 0.1;
    const Tensor y = matmul(X, true_w) + normal(noise_key, Shape{1024, 1}) * 0.01;

    std::printf("\nFitting y = Xw on the native GEMM backend:\n");
    const auto start = std::chrono::steady_clock::now();
    const double native_loss = fit_linear_model(X, y, 200, 0.1, true);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::printf("  200 steps in %.1f ms; final mse %.6f (the noise variance is 1e-4)\n", ms, native_loss);

    // Autodiff against the gradient written out by hand, at a random w.
    const Tensor w0 = normal(Key(7), Shape{16, 1});
    const Tensor autodiff_gradient = grad(mse)(w0, X, y);
    const Tensor closed_form = matmul(X.mT(), matmul(X, w0) - y) * (2.0 / X.size(0));  // X^T read without a copy
    const double gradient_error = max(abs(autodiff_gradient - closed_form)).item<double>();
    std::printf("  autodiff vs closed-form gradient: max difference %.2e\n", gradient_error);

    if (kernels::openblas_available()) {
      kernels::set_gemm_backend(kernels::GemmBackend::openblas);
      const double blas_loss = fit_linear_model(X, y, 200, 0.1, false);
      kernels::set_gemm_backend(kernels::GemmBackend::native);
      std::printf("  the same fit on OpenBLAS: final mse %.6f\n", blas_loss);
    }

    std::printf("\nA softmax over a batch of logits:\n");
    const Tensor logits = tensor({1.0f, 2.0f, 3.0f, 1.0f, 1.0f, 1.0f}, Shape{2, 3});
    std::cout << softmax(logits, -1) << "\n";

    std::printf("\nDiscounted returns (gamma = 0.9) of rewards [1, 0, 0, 1]:\n");
    std::cout << discounted_cumsum(tensor({1.0f, 0.0f, 0.0f, 1.0f}), 0, 0.9) << "\n";

    const bool ok = native_loss < 2e-4 && gradient_error < 1e-4;
    std::printf("\n%s\n", ok ? "demo finished: the fit recovered the weights" : "demo FAILED: the fit did not converge");
    return ok ? 0 : 1;
  } catch (const ctrax::Error& e) {
    std::fprintf(stderr, "ctrax error: %s\n", e.what());
    return 2;
  }
}
