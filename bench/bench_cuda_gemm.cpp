// Every CUDA SGEMM version (kernels/cuda/gemm.h) against cuBLAS on square row-major products
// C = A * B, N = 128 ... 8192: a markdown table of GFLOP/s and the share of cuBLAS's rate.
//
// A standalone program (no Google Benchmark: GPU timing needs events on ctrax's stream, not host
// clocks). For each size it first checks every version against cuBLAS (version 0) and reports
// the error, so a fast wrong kernel cannot go unnoticed; then, per version, one warm-up run and
// a median over repeated timed runs, with L2 flushed before each (cuda_bench_util.h).
//
// Usage: bench_cuda_gemm [--out results.md] [--sizes 128,256,...] [--repeats N] [--versions 0,5,6]
// Exits with status 2 and a message when there is no GPU.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <ctrax/base/error.h>
#include <ctrax/kernels/cuda/gemm.h>
#include <ctrax/kernels/cuda/runtime.h>

#include "cuda_bench_util.h"

namespace {

namespace kc = ctrax::kernels::cuda;
using ctrax::bench_cuda::DeviceFloats;
using ctrax::bench_cuda::format;
using ctrax::bench_cuda::parse_list;
using ctrax::bench_cuda::random_floats;

struct Options {
  std::string out;
  std::vector<int64_t> sizes{128, 256, 512, 1024, 2048, 4096, 8192};
  std::vector<int64_t> versions;  // empty: all
  int repeats = 20;               // at most; fewer for slow runs (see time_version)
};

Options parse_options(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--out" && has_value) options.out = argv[++i];
    else if (arg == "--sizes" && has_value) options.sizes = parse_list(argv[++i]);
    else if (arg == "--versions" && has_value) options.versions = parse_list(argv[++i]);
    else if (arg == "--repeats" && has_value) options.repeats = std::max(1, std::atoi(argv[++i]));
    else {
      std::fprintf(stderr,
                   "usage: bench_cuda_gemm [--out FILE] [--sizes N,N,...] [--repeats N] [--versions V,V,...]\n");
      std::exit(2);
    }
  }
  if (options.versions.empty())
    for (int v = 0; v < kc::sgemm_version_count(); ++v) options.versions.push_back(v);
  return options;
}

// max |C - C_ref| / max |C_ref|: relative to the scale of the result, since single elements
// near zero would make an elementwise ratio meaningless.
double max_relative_error(const std::vector<float>& got, const std::vector<float>& want) {
  double max_diff = 0.0, max_ref = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double diff = std::abs(static_cast<double>(got[i]) - want[i]);
    max_diff = std::isnan(diff) ? INFINITY : std::max(max_diff, diff);
    max_ref = std::max(max_ref, std::abs(static_cast<double>(want[i])));
  }
  return max_ref > 0.0 ? max_diff / max_ref : max_diff;
}

struct Timing {
  bool ok = false;
  std::string error;  // when !ok
  double seconds = 0.0;
  double max_rel_error = 0.0;
};

void run_sgemm(int version, int64_t n, const DeviceFloats& a, const DeviceFloats& b, const DeviceFloats& c) {
  kc::sgemm(version, false, false, n, n, n, 1.0f, a.get(), n, b.get(), n, 0.0f, c.get(), n);
}

Timing time_version(ctrax::bench_cuda::EventTimer& timer, int version, int64_t n, int repeats, const DeviceFloats& a,
                    const DeviceFloats& b, const DeviceFloats& c) {
  Timing timing;
  try {
    timing.seconds = timer.median_seconds([&] { run_sgemm(version, n, a, b, c); }, repeats);
    timing.ok = true;
  } catch (const ctrax::Error& e) {
    timing.error = e.what();
  }
  return timing;
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse_options(argc, argv);
  if (!kc::available()) {
    std::fprintf(stderr, "bench_cuda_gemm: no CUDA device, nothing to measure: %s\n",
                 kc::unavailable_reason().c_str());
    return 2;
  }
  try {
    const int device = kc::current_device();
    ctrax::bench_cuda::EventTimer timer;

    std::ostringstream out;
    out << "# CUDA SGEMM versions vs cuBLAS\n\n";
    out << ctrax::bench_cuda::describe_device(device) << "\n\n";
    out << "C = A * B, square, row-major, float32 (version 7: TF32 inputs), beta = 0. Median of up to "
        << options.repeats << " runs after a warm-up, L2 flushed before each run (" << (timer.flush_bytes() >> 20)
        << " MiB memset). Cell: GFLOP/s (% of cuBLAS). Error: max|C - C_cublas| / max|C_cublas|.\n\n";
    std::printf("%s", out.str().c_str());
    std::fflush(stdout);

    // results[v][s]
    std::vector<std::vector<Timing>> results(options.versions.size(), std::vector<Timing>(options.sizes.size()));
    for (size_t s = 0; s < options.sizes.size(); ++s) {
      const int64_t n = options.sizes[s];
      const size_t count = static_cast<size_t>(n * n);
      DeviceFloats a(count), b(count), c(count), c_ref(count);
      kc::copy_host_to_device(a.get(), random_floats(count, 2 * n).data(), a.bytes(), device);
      kc::copy_host_to_device(b.get(), random_floats(count, 2 * n + 1).data(), b.bytes(), device);
      run_sgemm(kc::kSgemmCublas, n, a, b, c_ref);
      std::vector<float> want(count), got(count);
      kc::copy_device_to_host(want.data(), c_ref.get(), c_ref.bytes(), device);
      for (size_t v = 0; v < options.versions.size(); ++v) {
        const int version = static_cast<int>(options.versions[v]);
        Timing& t = results[v][s];
        try {
          run_sgemm(version, n, a, b, c);
          kc::copy_device_to_host(got.data(), c.get(), c.bytes(), device);
          t = time_version(timer, version, n, options.repeats, a, b, c);
          t.max_rel_error = max_relative_error(got, want);
        } catch (const ctrax::Error& e) {
          t.ok = false;
          t.error = e.what();
        }
        std::fprintf(stderr, "N=%lld %-15s %s\n", static_cast<long long>(n), kc::sgemm_version_name(version),
                     t.ok ? format("%.1f GFLOP/s", 2.0 * n * n * n / t.seconds * 1e-9).c_str() : t.error.c_str());
      }
    }

    // The cuBLAS row, for the percentages: version 0 if it was run.
    const auto cublas_it = std::find(options.versions.begin(), options.versions.end(), int64_t{kc::kSgemmCublas});
    const std::vector<Timing>* cublas = cublas_it == options.versions.end()
                                            ? nullptr
                                            : &results[static_cast<size_t>(cublas_it - options.versions.begin())];

    std::ostringstream table;
    table << "| version |";
    for (int64_t n : options.sizes) table << " " << n << " |";
    table << "\n|---|";
    for (size_t s = 0; s < options.sizes.size(); ++s) table << "---:|";
    table << "\n";
    for (size_t v = 0; v < options.versions.size(); ++v) {
      table << "| " << options.versions[v] << " " << kc::sgemm_version_name(static_cast<int>(options.versions[v]))
            << " |";
      for (size_t s = 0; s < options.sizes.size(); ++s) {
        const Timing& t = results[v][s];
        const double n = static_cast<double>(options.sizes[s]);
        if (!t.ok) {
          table << " n/a |";
          continue;
        }
        const double gflops = 2.0 * n * n * n / t.seconds * 1e-9;
        table << " " << format("%.0f", gflops);
        if (cublas != nullptr && (*cublas)[s].ok)
          table << format(" (%.0f%%)", 100.0 * (*cublas)[s].seconds / t.seconds);
        table << " |";
      }
      table << "\n";
    }
    table << "\nMax relative error against cuBLAS:\n\n| version |";
    for (int64_t n : options.sizes) table << " " << n << " |";
    table << "\n|---|";
    for (size_t s = 0; s < options.sizes.size(); ++s) table << "---:|";
    table << "\n";
    for (size_t v = 0; v < options.versions.size(); ++v) {
      table << "| " << options.versions[v] << " " << kc::sgemm_version_name(static_cast<int>(options.versions[v]))
            << " |";
      for (size_t s = 0; s < options.sizes.size(); ++s) {
        const Timing& t = results[v][s];
        table << " " << (t.ok ? format("%.1e", t.max_rel_error) : std::string("n/a")) << " |";
      }
      table << "\n";
    }
    // Why a version could not run, once each.
    for (size_t v = 0; v < options.versions.size(); ++v)
      for (size_t s = 0; s < options.sizes.size(); ++s)
        if (!results[v][s].ok) {
          table << "\nn/a for version " << options.versions[v] << ": " << results[v][s].error << "\n";
          break;
        }

    std::printf("%s", table.str().c_str());
    if (!options.out.empty()) {
      std::ofstream file(options.out);
      file << out.str() << table.str();
      if (!file) {
        std::fprintf(stderr, "bench_cuda_gemm: could not write %s\n", options.out.c_str());
        return 1;
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_cuda_gemm: %s\n", e.what());
    return 1;
  }
  return 0;
}
