// Run-time CPU feature detection and a readable CPU name.
//
// What it is for: the library is compiled for baseline x86-64 so that one binary runs on any
// x86-64 machine; the kernels that need AVX2+FMA or AVX-512 live in their own translation
// units and are only called after these checks say the CPU (and the OS, which must save the
// wider registers on a context switch) can run them. Benchmarks print cpu_model_name().
//
// What it is not for: tuning decisions beyond "which instruction set" (cache sizes are fixed
// per kernel and chosen by benchmark).
#pragma once

#include <string>

namespace ctrax::kernels {

struct CpuFeatures {
  bool avx2 = false;
  bool fma = false;
  bool avx512f = false;
  bool avx512vl = false;
  bool avx512dq = false;
  bool avx512bw = false;

  // What the micro-kernels need: AVX2 kernels use FMA too; the AVX-512 kernels use F, VL and
  // DQ instructions (and FMA, which every AVX-512 CPU has).
  bool can_run_avx2_fma() const { return avx2 && fma; }
  bool can_run_avx512() const { return avx512f && avx512vl && avx512dq && fma; }
};

// Detected once; __builtin_cpu_supports also checks (via XGETBV) that the OS enabled the
// AVX / AVX-512 register state, so a feature reported here is safe to use.
const CpuFeatures& cpu_features();

// The "model name" line of /proc/cpuinfo, else the CPUID brand string, else "unknown CPU".
std::string cpu_model_name();

// "avx512f avx512vl avx512dq avx512bw avx2 fma" style list of what cpu_features() found.
std::string cpu_features_string();

}  // namespace ctrax::kernels
