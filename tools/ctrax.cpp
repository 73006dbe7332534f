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
// Each command lives in tools/commands/. Exit status: 0 on success, 2 for bad input (one line
// on stderr says what and where; nothing is half-written), 130 when training was interrupted
// (its checkpoint is saved; `ctrax resume` continues).
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>

#include "commands/commands.h"

int main(int argc, char** argv) {
  using namespace ctrax::tools;
  CLI::App app{"ctrax: train, evaluate and inspect RL agents"};
  app.require_subcommand(1);
  int status = 0;
  add_train_commands(app, status);
  add_eval_command(app, status);
  add_plot_command(app, status);
  add_rollout_command(app, status);
  add_list_command(app, status);
  add_bench_command(app, status);
  add_report_commands(app, status);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help prints and succeeds; a usage error prints CLI11's message and exits with 2.
    return app.exit(e) == 0 ? 0 : kExitBadInput;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "ctrax: %s\n", e.what());
    return kExitBadInput;
  }
  return status;
}
