// Subnormal floats: computed exactly (the default, as in PyTorch and NumPy) or flushed to zero.
//
// What it is for: speed where training makes numbers so small they are subnormal (below 1.2e-38
// in float32): x86 cores take a microcode assist, about a hundred cycles, for each operation
// that reads or writes one. A ReLU network trained with Adam keeps some: the first moments of
// weights behind units that rarely fire decay through the subnormal range, and on the
// 4-64-64-2 MLP of bench/bench_train_step.cpp they cost a third of a training step. Flushing
// (x86's FTZ and DAZ modes: subnormal results and inputs read as zero) is what XLA, and so
// JAX, does on the CPU; PyTorch offers it as torch.set_flush_denormal.
//
// The contract: the mode belongs to the calling thread (it is a CPU register), and parallel_for
// (parallel.h) runs every chunk in the mode of the thread that called it, so results never
// depend on the thread count. Flushing changes results wherever a subnormal occurs (the same
// bits on every run with the same mode).
#pragma once

namespace ctrax::kernels {

// Turns flushing on or off for the calling thread. Returns false, changing nothing, where the
// CPU has no such mode (ctrax knows x86-64's).
bool set_flush_denormals(bool on);
// Whether the calling thread flushes subnormals now.
bool flush_denormals();

}  // namespace ctrax::kernels

namespace ctrax::kernels::detail {

// The calling thread's floating-point mode bits that change results (flushing and rounding),
// and a setter for them: parallel_for copies the caller's to its workers.
unsigned floating_point_mode();
void set_floating_point_mode(unsigned mode);

}  // namespace ctrax::kernels::detail
