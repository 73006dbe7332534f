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

int main(int argc, char** argv) { return ctrax::tools::run_cli(argc, argv); }
