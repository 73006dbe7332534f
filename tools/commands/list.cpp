// ctrax list [environments|algorithms|layers|optimizers|schedules|keys]: what a run
// configuration can name, from the same tables the configuration reader uses (so the list
// cannot drift); `keys` prints every key as docs/configs.md (tools/config_reference.h).
#include <cstdio>
#include <string>

#include <ctrax/base/error.h>
#include <ctrax/rl/environments/env.h>
#include <ctrax/rl/environments/env_registry.h>

#include "../config_reference.h"
#include "../run_config.h"
#include "commands.h"

namespace ctrax::tools {

namespace {

void print_list(const char* title, const std::vector<std::string>& names) {
  std::printf("%s:\n", title);
  for (const std::string& n : names) std::printf("  %s\n", n.c_str());
}

int list(const std::string& what) {
  const bool all = what.empty();
  if (all || what == "environments") {
    std::printf("environments (task.env):\n");
    for (const std::string& name : env_names()) {
      const EnvPtr env = make_env(name);
      std::ostringstream line;
      line << "  " << name << "  observations " << env->observation_space() << ", actions " << env->action_space();
      std::printf("%s\n", line.str().c_str());
    }
  }
  if (all || what == "algorithms") print_list("algorithms (algorithm)", algorithm_names());
  if (all || what == "layers") {
    print_list("model layers ([<network>.model]: an MLP of widths with one of these activations)", activation_names());
    std::printf("  optional: Normalize in front (normalize = true); Q-networks: ActionValue (value.q_value = true)\n");
  }
  if (all || what == "optimizers") print_list("optimizers ([<network>.optimizer] name)", optimizer_names());
  if (what == "keys") std::printf("%s", config_reference_markdown().c_str());
  if (all || what == "schedules") print_list("learning-rate schedules ([<network>.optimizer] learning_rate = { name = ... })", schedule_names());
  return 0;
}

}  // namespace

void add_list_command(CLI::App& app, int& status) {
  auto what = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("list", "list environments, algorithms, layers, optimizers and schedules, or every config key");
  cmd->add_option("what", *what, "one of environments, algorithms, layers, optimizers, schedules (default: all), or keys (every "
                 "config key, as docs/configs.md)")
      ->check(CLI::IsMember({"environments", "algorithms", "layers", "optimizers", "schedules", "keys"}));
  cmd->callback([what, &status] { status = list(*what); });
}

}  // namespace ctrax::tools
