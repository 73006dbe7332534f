// ctrax plot RUN_DIR... [-o FILE]: learning curves (return and evaluation return against
// environment steps) of one or several runs, overlaid, through gnuplot (tools/gnuplot.h).
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <ctrax/base/error.h>

#include "../gnuplot.h"
#include "commands.h"

namespace ctrax::tools {

namespace fs = std::filesystem;

void add_plot_command(CLI::App& app, int& status) {
  auto runs = std::make_shared<std::vector<std::string>>();
  auto output = std::make_shared<std::string>();
  auto columns = std::make_shared<std::vector<std::string>>();
  auto title = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("plot", "draw the learning curves of one or more runs into a PNG (or SVG)");
  cmd->add_option("run_dirs", *runs, "run directories (or metrics.csv files)")->required();
  cmd->add_option("-o,--output", *output, "the image (default: learning_curves.png, or RUN_DIR/learning_curve.png for one run)");
  cmd->add_option("--y", *columns, "metrics to draw (default: return and the evaluation returns)");
  cmd->add_option("--title", *title, "the plot's title");
  cmd->callback([=, &status] {
    CTRAX_REQUIRE(gnuplot_available(), "ctrax plot needs gnuplot (Debian: apt-get install gnuplot-nox)");
    std::vector<fs::path> paths(runs->begin(), runs->end());
    fs::path out = *output;
    if (out.empty()) {
      const bool one_dir = paths.size() == 1 && fs::is_directory(paths[0]);
      out = one_dir ? paths[0] / "learning_curve.png" : fs::path("learning_curves.png");
    }
    PlotOptions options;
    options.y_columns = *columns;
    options.title = *title;
    plot_learning_curves(paths, out, options);
    std::printf("wrote %s\n", out.c_str());
    status = 0;
  });
}

}  // namespace ctrax::tools
