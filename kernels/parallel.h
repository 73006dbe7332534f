// A small persistent thread pool and parallel_for.
//
// What it is for: splitting a loop over [0, n) across cores for GEMM, elementwise and
// reduction kernels. Work that is small (n * cost below a grain) stays on the calling
// thread: for RL-sized tensors waking a thread costs more than the arithmetic.
//
// What it is not for: nested parallelism. A parallel_for called from inside a worker runs
// serially on that worker.
//
// The thread count defaults to the CTRAX_NUM_THREADS environment variable, else the
// number of hardware threads, and is changed with set_num_threads(). Results never depend
// on the thread count: callers split work so that each output element is computed by
// exactly one chunk in a fixed order.
#pragma once

#include <cstdint>
#include <functional>

namespace ctrax::kernels {

void set_num_threads(int n);  // n >= 1, else ctrax::Error
int num_threads();

// Calls fn(begin, end) on disjoint chunks covering [0, n). Chunks hold at least `grain`
// iterations; with n <= grain or one thread, fn(0, n) runs inline on the caller.
// An exception thrown by fn is rethrown on the calling thread after all chunks finish.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

// True while running inside a parallel_for chunk on a pool worker.
bool in_parallel_region();

}  // namespace ctrax::kernels
