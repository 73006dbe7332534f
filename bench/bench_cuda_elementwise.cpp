// Memory-bound CUDA ops against a measured device-to-device copy: a markdown table of the
// effective bandwidth of each op and its share of the copy's.
//
// Elementwise ops, reductions, softmax and the fused Adam update do O(1) arithmetic per byte,
// so their speed limit is the device memory bandwidth. The fair reference is therefore not
// the data sheet's peak but what cudaMemcpyAsync device-to-device reaches on the same buffers
// (it reads n and writes n elements). Each op is called through the tensor API, as a user
// would, on contiguous float32 tensors; its bandwidth counts the bytes it must move at the
// least: every operand read once and the result written once (a broadcast row or a scalar
// adds nothing). The goal: elementwise at 85% or more of the copy.
//
// Usage: bench_cuda_elementwise [--out results.md] [--sizes 1048576,67108864] [--repeats N]
// Sizes are element counts; the default has one size that fits in L2 and one that does not
// (L2 is flushed before every run anyway, see cuda_bench_util.h). Exits with status 2 and a
// message when there is no GPU.
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

#include <ctrax/kernels/cuda/optimizer_steps.h>
#include <ctrax/kernels/cuda/runtime.h>
#include <ctrax/tensor/ops.h>
#include <ctrax/tensor/tensor.h>

#include "cuda_bench_util.h"

namespace {

namespace kc = ctrax::kernels::cuda;
namespace bc = ctrax::bench_cuda;
using ctrax::Device;
using ctrax::Shape;
using ctrax::Tensor;

struct Options {
  std::string out;
  std::vector<int64_t> sizes{1 << 20, 1 << 26};
  int repeats = 50;
};

Options parse_options(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--out" && has_value) options.out = argv[++i];
    else if (arg == "--sizes" && has_value) options.sizes = bc::parse_list(argv[++i]);
    else if (arg == "--repeats" && has_value) options.repeats = std::max(1, std::atoi(argv[++i]));
    else {
      std::fprintf(stderr, "usage: bench_cuda_elementwise [--out FILE] [--sizes N,N,...] [--repeats N]\n");
      std::exit(2);
    }
  }
  return options;
}

// One row of the table: what runs, and how many float32 elements it must move per element of
// the input (reads + writes).
struct Case {
  std::string name;
  double words_per_element;
  std::function<void()> run;
};

// A device tensor of n generic float32 values shaped [n / cols, cols].
Tensor device_tensor(int64_t n, int64_t cols, uint64_t seed, Device device) {
  return ctrax::from_vector(bc::random_floats(static_cast<size_t>(n), seed), Shape{n / cols, cols}).to(device);
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse_options(argc, argv);
  if (!kc::available()) {
    std::fprintf(stderr, "bench_cuda_elementwise: no CUDA device, nothing to measure: %s\n",
                 kc::unavailable_reason().c_str());
    return 2;
  }
  try {
    const int device_index = kc::current_device();
    const Device device = Device::cuda(device_index);
    bc::EventTimer timer;

    std::ostringstream out;
    out << "# CUDA memory-bound ops vs device-to-device copy\n\n" << bc::describe_device(device_index) << "\n\n";
    out << "float32, contiguous, called through the tensor API ([n / 1024, 1024] tensors; softmax and the "
           "reductions over the last axis). Median of up to "
        << options.repeats << " runs after a warm-up, L2 flushed before each run. GB/s counts the bytes each op "
        << "must move (every operand read once, the result written once); % is of the copy's GB/s at the "
        << "same size.\n\n";
    std::printf("%s", out.str().c_str());
    std::fflush(stdout);

    constexpr int64_t kCols = 1024;
    std::ostringstream table;
    table << "| op | bytes moved per element |";
    for (int64_t n : options.sizes) table << " n = " << n << ": GB/s (% of copy) |";
    table << "\n|---|---:|";
    for (size_t s = 0; s < options.sizes.size(); ++s) table << "---:|";
    table << "\n";

    // rows[c][s] = seconds
    std::vector<std::string> names;
    std::vector<double> words;
    std::vector<std::vector<double>> seconds;
    for (size_t s = 0; s < options.sizes.size(); ++s) {
      const int64_t n = options.sizes[s] / kCols * kCols;
      const Tensor a = device_tensor(n, kCols, 1, device), b = device_tensor(n, kCols, 2, device);
      const Tensor row = device_tensor(kCols, kCols, 3, device);  // [1, cols]: broadcast over rows
      const Tensor cond = ctrax::gt(a, ctrax::scalar_like(0.0, a));
      Tensor w = a.clone(), g = b.clone(), m = ctrax::zeros_like(a), v = ctrax::zeros_like(a);
      Tensor dst = ctrax::empty(a.shape(), a.dtype(), device);
      const size_t bytes = static_cast<size_t>(n) * sizeof(float);
      const ctrax::kernels::AdamStep adam{1e-3, 1.0, 0.9, 0.999, 1.0, 1e-8, 0.0};
      const auto stream = static_cast<cudaStream_t>(kc::current_stream());
      std::vector<Case> cases = {
          {"copy (cudaMemcpyAsync D2D)", 2,
           [&] {
             bc::check(cudaMemcpyAsync(dst.device_data(), a.device_data(), bytes, cudaMemcpyDeviceToDevice, stream),
                       "cudaMemcpyAsync");
           }},
          {"clone", 2, [&] { (void)a.clone(); }},
          {"neg", 2, [&] { (void)ctrax::neg(a); }},
          {"relu", 2, [&] { (void)ctrax::relu(a); }},
          {"exp", 2, [&] { (void)ctrax::exp(a); }},
          {"tanh", 2, [&] { (void)ctrax::tanh(a); }},
          {"mul by a scalar", 2, [&] { (void)ctrax::mul(a, 0.5); }},
          {"add", 3, [&] { (void)ctrax::add(a, b); }},
          {"add a broadcast row", 2, [&] { (void)ctrax::add(a, row); }},
          {"where (bool cond)", 3.25, [&] { (void)ctrax::where(cond, a, b); }},
          {"sum over rows", 1, [&] { (void)ctrax::sum(a, {1}); }},
          {"max over rows", 1, [&] { (void)ctrax::max(a, {1}); }},
          {"softmax over rows", 2, [&] { (void)ctrax::softmax(a, 1); }},
          {"log_softmax over rows", 2, [&] { (void)ctrax::log_softmax(a, 1); }},
          {"Adam update (fused)", 7,
           [&] {
             (void)kc::adam_step(adam, static_cast<const float*>(g.device_data()), static_cast<float*>(w.device_data()),
                                 static_cast<float*>(m.device_data()), static_cast<float*>(v.device_data()), n);
           }},
      };
      if (s == 0) {
        seconds.assign(cases.size(), std::vector<double>(options.sizes.size(), 0.0));
        for (const Case& c : cases) {
          names.push_back(c.name);
          words.push_back(c.words_per_element);
        }
      }
      for (size_t c = 0; c < cases.size(); ++c) {
        seconds[c][s] = timer.median_seconds(cases[c].run, options.repeats);
        std::fprintf(stderr, "n=%lld %-28s %.1f GB/s\n", static_cast<long long>(n), cases[c].name.c_str(),
                     cases[c].words_per_element * n * sizeof(float) / seconds[c][s] * 1e-9);
      }
    }

    for (size_t c = 0; c < names.size(); ++c) {
      table << "| " << names[c] << " | " << bc::format("%.2f", words[c] * sizeof(float)) << " |";
      for (size_t s = 0; s < options.sizes.size(); ++s) {
        const double n = static_cast<double>(options.sizes[s] / kCols * kCols);
        const double gbs = words[c] * n * sizeof(float) / seconds[c][s] * 1e-9;
        const double copy_gbs = words[0] * n * sizeof(float) / seconds[0][s] * 1e-9;
        table << " " << bc::format("%.0f", gbs) << bc::format(" (%.0f%%)", 100.0 * gbs / copy_gbs) << " |";
      }
      table << "\n";
    }
    std::printf("%s", table.str().c_str());
    if (!options.out.empty()) {
      std::ofstream file(options.out);
      file << out.str() << table.str();
      if (!file) {
        std::fprintf(stderr, "bench_cuda_elementwise: could not write %s\n", options.out.c_str());
        return 1;
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_cuda_elementwise: %s\n", e.what());
    return 1;
  }
  return 0;
}
