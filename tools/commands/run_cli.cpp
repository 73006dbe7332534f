// run_cli: the `ctrax` command line (see commands.h).
#include <cstdio>
#include <exception>

#include "commands.h"

namespace ctrax::tools {

int run_cli(int argc, char** argv) {
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

}  // namespace ctrax::tools
