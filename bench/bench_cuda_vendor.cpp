// Hand-written CUDA kernels against the vendor libraries on the same call: a markdown table of
// the time of softmax, relu, a Conv2D forward (and forward + backward) with each backend of
// kernels/cuda/backend.h, and a float32 matmul with the default SGEMM version and cuBLAS.
//
// Every case goes through the public API (tensor ops, the Conv2D layer, matmul) exactly as a
// model calls it; only the backend switch changes between the two columns, so the difference
// is the kernel's (the surrounding permutes, allocations and bias adds are the same). Timing:
// bench/cuda_bench_util.h (median of up to --repeats runs after a warm-up, L2 flushed first).
// cuDNN's convolution algorithm is chosen on the warm-up call and remembered per shape.
//
// Usage: bench_cuda_vendor [--out results.md] [--repeats N]
// Exits with status 2 and a message when there is no GPU; the cuDNN column reads "n/a" when
// this build has no cuDNN.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <ctrax/autograd/tape.h>
#include <ctrax/kernels/cuda/backend.h>
#include <ctrax/kernels/cuda/gemm.h>
#include <ctrax/kernels/cuda/runtime.h>
#include <ctrax/layers/conv.h>
#include <ctrax/tensor/ops.h>
#include <ctrax/tensor/tensor.h>
#include <ctrax/tensor/tree.h>

#include "cuda_bench_util.h"

namespace {

namespace kc = ctrax::kernels::cuda;
namespace bc = ctrax::bench_cuda;
using ctrax::Device;
using ctrax::Shape;
using ctrax::Tensor;

struct Options {
  std::string out;
  int repeats = 50;
};

Options parse_options(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--out" && has_value) options.out = argv[++i];
    else if (arg == "--repeats" && has_value) options.repeats = std::max(1, std::atoi(argv[++i]));
    else {
      std::fprintf(stderr, "usage: bench_cuda_vendor [--out FILE] [--repeats N]\n");
      std::exit(2);
    }
  }
  return options;
}

// A device tensor of generic float32 values.
Tensor device_tensor(const Shape& shape, uint64_t seed, Device device) {
  return ctrax::from_vector(bc::random_floats(static_cast<size_t>(shape.numel()), seed), shape).to(device);
}

// One row: what runs, its shape, and how to select the hand-written or the vendor code for it.
struct Case {
  std::string name, shape;
  std::function<void()> run;
  std::function<void(bool vendor)> select;
  bool vendor_available;
};

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse_options(argc, argv);
  if (!kc::available()) {
    std::fprintf(stderr, "bench_cuda_vendor: no CUDA device, nothing to measure: %s\n",
                 kc::unavailable_reason().c_str());
    return 2;
  }
  try {
    const int device_index = kc::current_device();
    const Device device = Device::cuda(device_index);
    bc::EventTimer timer;
    const bool cudnn = kc::cudnn_available();
    if (!cudnn) std::fprintf(stderr, "bench_cuda_vendor: cuDNN column skipped: %s\n", kc::cudnn_unavailable_reason().c_str());

    std::ostringstream out;
    out << "# Hand-written CUDA kernels vs cuDNN / cuBLAS\n\n" << bc::describe_device(device_index) << "\n\n";
    out << "float32, called through the tensor API and the Conv2D layer; the backend switch "
           "(kernels/cuda/backend.h, set_sgemm_version for GEMM) is the only difference between the columns. "
           "Median of up to "
        << options.repeats << " runs after a warm-up, L2 flushed before each run. Convolutions are SAME, "
        << "channels-last, cuDNN in true FP32 (no TF32).\n\n";
    std::printf("%s", out.str().c_str());
    std::fflush(stdout);

    auto select_backend = [](kc::CudaOp op) {
      return [op](bool vendor) { kc::set_backend(op, vendor ? kc::CudaBackend::cudnn : kc::CudaBackend::handwritten); };
    };
    const int default_sgemm = kc::sgemm_version();
    auto select_sgemm = [default_sgemm](bool vendor) {
      kc::set_sgemm_version(vendor ? static_cast<int>(kc::kSgemmCublas) : default_sgemm);
    };

    const Tensor rows = device_tensor(Shape{16384, 1024}, 1, device);
    const Tensor wide = device_tensor(Shape{4096, 4096}, 2, device);
    const Tensor big = device_tensor(Shape{1 << 26}, 3, device);

    // The convolution: batch 64, 32x32x32 -> 64 filters of 3x3.
    const ctrax::LayerPtr conv = ctrax::Conv2D(64, {3, 3}, {1, 1}, ctrax::Padding::same);
    const Tensor image = device_tensor(Shape{64, 32, 32, 32}, 4, device);
    const auto initialised = conv->init({ctrax::ShapeDtype{image.shape(), image.dtype()}}, ctrax::Key(1));
    const ctrax::Tree& weights_cpu = initialised.first;
    const ctrax::Tree& state = initialised.second;
    ctrax::Tree::Dict w;
    w["kernel"] = weights_cpu["kernel"].leaf().to(device);
    w["bias"] = weights_cpu["bias"].leaf().to(device);
    const ctrax::Tree weights(std::move(w));
    auto conv_step = [&] {
      ctrax::GradientTape tape;
      const Tensor x = tape.watch(image);
      const Tensor k = tape.watch(weights["kernel"].leaf());
      ctrax::Tree::Dict wd;
      wd["kernel"] = k;
      wd["bias"] = weights["bias"].leaf();
      const Tensor y = conv->apply({x}, ctrax::Tree(std::move(wd)), state).outputs[0];
      (void)tape.gradient(ctrax::sum(y), {x, k});
    };
    const Tensor a = device_tensor(Shape{4096, 4096}, 5, device), b = device_tensor(Shape{4096, 4096}, 6, device);

    std::vector<Case> cases = {
        {"softmax over rows", "16384 x 1024", [&] { (void)ctrax::softmax(rows, 1); },
         select_backend(kc::CudaOp::softmax), cudnn},
        {"log_softmax over rows", "16384 x 1024", [&] { (void)ctrax::log_softmax(rows, 1); },
         select_backend(kc::CudaOp::softmax), cudnn},
        {"softmax over rows", "4096 x 4096", [&] { (void)ctrax::softmax(wide, 1); },
         select_backend(kc::CudaOp::softmax), cudnn},
        {"relu", "2^26", [&] { (void)ctrax::relu(big); }, select_backend(kc::CudaOp::activation), cudnn},
        {"tanh", "2^26", [&] { (void)ctrax::tanh(big); }, select_backend(kc::CudaOp::activation), cudnn},
        {"sigmoid", "2^26", [&] { (void)ctrax::sigmoid(big); }, select_backend(kc::CudaOp::activation), cudnn},
        {"Conv2D 3x3 forward", "64x32x32x32 -> 64",
         [&] { (void)conv->apply({image}, weights, state); }, select_backend(kc::CudaOp::convolution), cudnn},
        {"Conv2D 3x3 forward + backward", "64x32x32x32 -> 64", conv_step, select_backend(kc::CudaOp::convolution),
         cudnn},
        {"matmul (default sgemm vs cuBLAS)", "4096^3", [&] { (void)ctrax::matmul(a, b); }, select_sgemm, true},
    };

    std::ostringstream table;
    table << "| op | shape | hand-written ms | vendor ms | vendor speed-up |\n|---|---|---:|---:|---:|\n";
    for (const Case& c : cases) {
      c.select(false);
      const double hand = timer.median_seconds(c.run, options.repeats);
      double vendor = 0.0;
      if (c.vendor_available) {
        c.select(true);
        vendor = timer.median_seconds(c.run, options.repeats);
        c.select(false);
      }
      std::fprintf(stderr, "%-34s %-20s hand %.3f ms, vendor %s ms\n", c.name.c_str(), c.shape.c_str(), hand * 1e3,
                   c.vendor_available ? bc::format("%.3f", vendor * 1e3).c_str() : "n/a");
      table << "| " << c.name << " | " << c.shape << " | " << bc::format("%.3f", hand * 1e3) << " | "
            << (c.vendor_available ? bc::format("%.3f", vendor * 1e3) : std::string("n/a")) << " | "
            << (c.vendor_available ? bc::format("%.2fx", hand / vendor) : std::string("n/a")) << " |\n";
    }
    std::printf("%s", table.str().c_str());
    if (!options.out.empty()) {
      std::ofstream file(options.out);
      file << out.str() << table.str();
      if (!file) {
        std::fprintf(stderr, "bench_cuda_vendor: could not write %s\n", options.out.c_str());
        return 1;
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_cuda_vendor: %s\n", e.what());
    return 1;
  }
  return 0;
}
