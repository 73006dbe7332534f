// Pictures through gnuplot: learning curves of runs, and animations of rendered episodes.
//
// What it is for: `ctrax plot` (learning curves from runs' metrics.csv) and `ctrax eval --render`
// (an episode's frames, rl/environments/render.h, as an animated GIF or a PNG strip). Every image is drawn by
// the gnuplot program (Debian: gnuplot-nox), run on a generated script; ctrax writes no pixels
// itself. What it is not for: interactive windows, or plotting anything but these two things
// (run_gnuplot is the general entry point for another script).
//
// Files: the script and its data go to a fresh scratch directory under the system's temporary
// directory, removed afterwards. gnuplot writes the image to a temporary name next to the
// destination (io/atomic_file.h's ".<name>.tmp.<pid>.<n>"), which is renamed over it only after
// gnuplot has exited successfully: a failed or interrupted run never leaves a torn or partial
// image under the destination's name, and an old image stays as it was.
//
// Errors (ctrax::Error): gnuplot missing ("gnuplot was not found ..., install gnuplot-nox"),
// gnuplot failing (its exit status and the end of its stderr, which names the script line), and
// the input errors each function lists.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <ctrax/rl/environments/render.h>

namespace ctrax::tools {

struct GnuplotOptions {
  // The program: a name looked up on PATH, or a path (containing a '/').
  std::string executable = "gnuplot";
};

// Whether `executable` names an executable file (on PATH when it has no '/').
bool gnuplot_available(const std::string& executable = "gnuplot");

// Runs `script` with gnuplot. The script runs in a scratch directory holding `data_files`
// (file name -> contents; plain names, no '/'), so it names them bare; the gnuplot string
// variable OUTPUT holds the path it must write its one image to (`set output OUTPUT`). On
// success `output` is replaced atomically by what gnuplot wrote; an empty output is an error.
void run_gnuplot(const std::string& script, const std::map<std::string, std::string>& data_files,
                 const std::filesystem::path& output, const GnuplotOptions& options = {});

// ---- Learning curves ----------------------------------------------------------------------

// A metrics.csv as optim/metrics_log.h's CsvMetricsSink writes it: header "step,phase,<columns>",
// one row per line. An empty cell reads as NaN (the metric was absent from that row). A last
// line without its newline is ignored: the run may be writing it right now.
struct MetricsTable {
  std::vector<std::string> columns;  // without step and phase
  struct Row {
    int64_t step = 0;
    std::string phase;
    std::vector<double> values;  // one per column
  };
  std::vector<Row> rows;
  // The index of a column, or -1.
  int64_t column_index(const std::string& name) const;
};

// Throws ctrax::Error naming the file for a missing or unreadable file, a header that does not
// start with step,phase, or a row with the wrong number of cells or a cell that is not a number.
MetricsTable read_metrics_csv(const std::filesystem::path& path);

struct PlotOptions {
  // The x axis: the RL trainers' total environment steps (rl/agents/agent.h).
  std::string x_column = "n_interactions";
  // The curves per run. Empty: train/episode_return_mean, every eval*/return_mean and
  // confirm/return_mean column the file has (those present; at least one must be; files written
  // before these names existed: return and eval_return_T<temperature>).
  std::vector<std::string> y_columns;
  // The rows plotted: the RL trainers write phase "rl".
  std::string phase = "rl";
  std::string title;  // empty: none
  int width = 960, height = 600;  // pixels
  GnuplotOptions gnuplot;
};

// Draws the learning curves of `runs` into `output` (.png, or .svg), all runs overlaid, one
// colour per run and one dash pattern per y column, the legend naming each run by its
// directory's name (its path where two names clash), followed by the column when there are
// several. A run is a directory holding metrics.csv (or that file itself). Each curve goes
// through the rows of `phase` whose x and y cells are finite. Throws ctrax::Error for no runs,
// another file extension, a missing metrics.csv, a run without rows of that phase, a column that
// is not in a run's file (naming the columns it has), or nothing at all to draw.
void plot_learning_curves(const std::vector<std::filesystem::path>& runs, const std::filesystem::path& output,
                          const PlotOptions& options = {});

// ---- Animations ---------------------------------------------------------------------------

struct AnimationOptions {
  // Pixels across one frame; the height follows the view box's aspect ratio.
  int frame_width = 600;
  // A PNG strip shows at most this many frames, evenly spaced from the first to the last, in
  // rows of strip_columns, each captioned with its frame number.
  int strip_frames = 8;
  int strip_columns = 4;
  GnuplotOptions gnuplot;
};

// Writes `frames` (rl/environments/render.h) to `output`: an animated GIF looping forever at `fps` frames per
// second when it ends in .gif (GIF delays are whole hundredths of a second: 100/fps rounded, at
// least 1), a PNG strip of frames when it ends in .png. Throws ctrax::Error for no frames, another
// extension, fps not in (0, 100], frames whose view boxes differ in aspect ratio, and a shape
// that cannot be drawn (too few points, a non-finite coordinate, a negative width or radius),
// naming the frame and the shape.
void write_animation(const std::vector<render::Frame>& frames, const std::filesystem::path& output, double fps,
                     const AnimationOptions& options = {});

}  // namespace ctrax::tools
