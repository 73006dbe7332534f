// ctrax: the command line. `ctrax --help` and `ctrax COMMAND --help` describe everything.
//
//   ctrax train [CONFIG] [--set key=value ...] [--output-dir DIR] [--device cpu|cuda|cuda:N] [--seed N]
//               [--epochs N] [--threads N]
//   ctrax resume RUN_DIR [--epochs N] [--checkpoint latest|best|N] [--device cpu|cuda|cuda:N]
//   ctrax eval RUN_DIR [--episodes N] [--checkpoint latest|best|N] [--seed N] [--output FILE] [--render FILE]
//   ctrax sweep CONFIG [--seeds N] [--first-seed S] [--jobs K] [--threads T] [--set key=value ...]
//   ctrax report RUN... [--output FILE.md] [--plot FILE.png]
//   ctrax plot RUN_DIR... [-o FILE]
//   ctrax rollout ENV (--seed N | --state ...) (--actions ... | --actions-file FILE)
//   ctrax list [environments|algorithms|layers|optimizers|schedules]
//   ctrax bench
//
// Each command lives in tools/commands/; run_cli (commands.h) parses and runs them. Exit status: 0 on success, 2 for bad input (one line
// on stderr says what and where; nothing is half-written), 130 when training was interrupted
// (its checkpoint is saved; `ctrax resume` continues).
#include "commands/commands.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace {

// Training frees and allocates the same few hundred KiB every epoch (the rollout's rows, the
// advantages); glibc would hand the freed top of its heap back to the kernel whenever it passes
// 128 KiB and fault the pages in again in the next epoch (a Pendulum PPO run: 4,900 minor page
// faults and 0.03 s of system time, 2,000 and none with this). Up to 64 MiB stay in the
// process. Setting the trim threshold turns off glibc's adaptive mmap threshold, so that one is
// set too, to the adaptive one's ceiling (32 MiB): blocks below it come from the heap, as they
// would once glibc had adapted. A program embedding ctrax may do the same (docs/compile.md).
void keep_freed_heap() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
#endif
}

}  // namespace

int main(int argc, char** argv) {
  keep_freed_heap();
  return ctrax::tools::run_cli(argc, argv);
}
