// gnuplot as ctrax's drawing back end (see gnuplot.h): running it, learning curves, animations.
#include "gnuplot.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <locale>
#include <set>
#include <sstream>
#include <system_error>

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ctrax/io/atomic_file.h>
#include <ctrax/base/error.h>

extern char** environ;

namespace ctrax::tools {

namespace fs = std::filesystem;
// The drawing types of rl/environments/render.h (Shape here is a drawn shape, not a tensor's).
using render::Circle;
using render::Frame;
using render::Line;
using render::Point;
using render::Polygon;
using render::Rgb;
using render::Shape;
using render::Text;
using render::ViewBox;

namespace {

// ---- Running gnuplot ----------------------------------------------------------------------

// A fresh directory under the system's temporary directory, removed with its contents.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (fs::temp_directory_path() / "ctrax-gnuplot-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr)
      CTRAX_THROW("gnuplot: cannot create a scratch directory ", pattern, ": ", std::strerror(errno));
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// A gnuplot single-quoted string: backslashes are literal there and '' stands for '.
std::string quote(const std::string& text) {
  CTRAX_REQUIRE(text.find_first_of("\n\r") == std::string::npos,
                "gnuplot: a string for the script holds a line break: ", text);
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') out += '\'';
    out += c;
  }
  return out + "'";
}

// Numbers for the script and data files, independent of the global locale.
std::string num(double value) {
  std::ostringstream out;
  out.imbue(std::locale::classic());
  out.precision(10);
  out << value;
  return out.str();
}

// A regular file's contents (io::read_file: a FIFO or device is refused, never read).
std::string read_text(const fs::path& path) { return io::read_file(path); }

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  CTRAX_REQUIRE(out.good(), "gnuplot: cannot write the scratch file ", path.string());
}

std::string missing_message(const std::string& executable) {
  return detail::cat("gnuplot was not found (looked for '", executable,
                     "' on PATH): ctrax draws plots and animations with it; install it "
                     "(Debian/Ubuntu: apt-get install gnuplot-nox)");
}

// The last `limit` characters of gnuplot's stderr, where the error is.
std::string tail(const std::string& text, size_t limit = 4000) {
  std::string t = text;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  if (t.size() <= limit) return t;
  return "..." + t.substr(t.size() - limit);
}

// Runs `executable script` with stdin from /dev/null and stdout and stderr into files; returns
// the wait status.
int run_process(const std::string& executable, const fs::path& script, const fs::path& out_path,
                const fs::path& err_path) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::string arg0 = executable, arg1 = script.string();
  char* argv[] = {arg0.data(), arg1.data(), nullptr};
  pid_t pid = 0;
  const int error = ::posix_spawnp(&pid, executable.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (error == ENOENT) throw Error(missing_message(executable));
  if (error != 0) CTRAX_THROW("gnuplot: cannot run '", executable, "': ", std::strerror(error));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) CTRAX_THROW("gnuplot: waiting for '", executable, "' failed: ", std::strerror(errno));
  }
  return status;
}

bool is_executable_file(const fs::path& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

bool has_extension(const fs::path& path, const char* extension) {
  std::string e = path.extension().string();
  std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return e == extension;
}

}  // namespace

bool gnuplot_available(const std::string& executable) {
  if (executable.empty()) return false;
  if (executable.find('/') != std::string::npos) return is_executable_file(executable);
  const char* path = std::getenv("PATH");
  // POSIX: an unset PATH means an implementation-defined default; glibc's is /bin:/usr/bin.
  const std::string dirs = path != nullptr ? path : "/bin:/usr/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    const size_t end = std::min(dirs.find(':', start), dirs.size());
    const std::string dir = dirs.substr(start, end - start);
    // An empty entry is the current directory.
    if (is_executable_file(fs::path(dir.empty() ? std::string(".") : dir) / executable)) return true;
    start = end + 1;
  }
  return false;
}

void run_gnuplot(const std::string& script, const std::map<std::string, std::string>& data_files,
                 const fs::path& output, const GnuplotOptions& options) {
  CTRAX_REQUIRE(!options.executable.empty(), "run_gnuplot: the gnuplot executable is an empty string");
  if (!gnuplot_available(options.executable)) throw Error(missing_message(options.executable));
  ScratchDir scratch;
  for (const auto& [name, contents] : data_files) {
    CTRAX_REQUIRE(!name.empty() && name.find('/') == std::string::npos && name != "." && name != "..",
                  "run_gnuplot: a data file name must be a plain file name, got '", name, "'");
    write_text(scratch.path() / name, contents);
  }
  // The image goes to the writer's temporary file next to `output` (gnuplot truncates and
  // fills it); commit() then fsyncs it and renames it over `output`. Destroying the writer
  // without a commit (any throw below) deletes it.
  io::AtomicFileWriter writer(output);
  const fs::path temporary = fs::absolute(writer.temporary_path());
  const std::string full = "cd " + quote(scratch.path().string()) + "\nOUTPUT = " + quote(temporary.string()) +
                           "\n" + script + "\n";
  const fs::path script_path = scratch.path() / "script.gp";
  write_text(script_path, full);
  const int status = run_process(options.executable, script_path, scratch.path() / "stdout.txt",
                                 scratch.path() / "stderr.txt");
  const std::string errors = read_text(scratch.path() / "stderr.txt");
  if (WIFSIGNALED(status))
    CTRAX_THROW("gnuplot was killed by signal ", WTERMSIG(status), " while writing ", output.string(),
                errors.empty() ? std::string() : ": " + tail(errors));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    CTRAX_THROW("gnuplot failed (exit status ", WEXITSTATUS(status), ") while writing ", output.string(), ": ",
                errors.empty() ? std::string("(it printed nothing on stderr)") : tail(errors));
  std::error_code ec;
  const auto size = fs::file_size(temporary, ec);
  CTRAX_REQUIRE(!ec && size > 0, "gnuplot exited successfully but wrote nothing for ", output.string(),
                errors.empty() ? std::string() : ": " + tail(errors));
  writer.commit();
}

// ---- Learning curves ----------------------------------------------------------------------

int64_t MetricsTable::column_index(const std::string& name) const {
  const auto it = std::find(columns.begin(), columns.end(), name);
  return it == columns.end() ? -1 : static_cast<int64_t>(it - columns.begin());
}

namespace {

std::vector<std::string> split_cells(const std::string& line) {
  std::vector<std::string> cells;
  size_t start = 0;
  while (true) {
    const size_t comma = line.find(',', start);
    cells.push_back(line.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return cells;
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

}  // namespace

MetricsTable read_metrics_csv(const fs::path& path) {
  std::error_code ec;
  CTRAX_REQUIRE(fs::is_regular_file(path, ec), path.string(), ": no such file");
  const std::string text = io::read_file(path);
  std::vector<std::string> lines;
  size_t start = 0;
  // Only newline-terminated lines: a last line without its newline may be half written.
  for (size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1) {
    std::string line = text.substr(start, nl - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
  }
  CTRAX_REQUIRE(!lines.empty(), path.string(), ": the file is empty: expected a header \"step,phase,...\"");
  const std::vector<std::string> header = split_cells(lines[0]);
  CTRAX_REQUIRE(header.size() >= 2 && header[0] == "step" && header[1] == "phase", path.string(),
                ": the header must start with step,phase (a metrics.csv of ctrax), got \"", lines[0], "\"");
  MetricsTable table;
  table.columns.assign(header.begin() + 2, header.end());
  for (size_t i = 1; i < lines.size(); ++i) {
    if (lines[i].empty()) continue;
    const std::vector<std::string> cells = split_cells(lines[i]);
    CTRAX_REQUIRE(cells.size() == header.size(), path.string(), ":", i + 1, ": ", cells.size(),
                  " cells, but the header has ", header.size());
    MetricsTable::Row row;
    const std::string& step = cells[0];
    const auto [step_end, step_error] = std::from_chars(step.data(), step.data() + step.size(), row.step);
    CTRAX_REQUIRE(step_error == std::errc() && step_end == step.data() + step.size(), path.string(), ":", i + 1,
                  ": the step '", step, "' is not an integer");
    row.phase = cells[1];
    row.values.reserve(table.columns.size());
    for (size_t c = 2; c < cells.size(); ++c) {
      const std::string& cell = cells[c];
      if (cell.empty()) {
        row.values.push_back(std::nan(""));
        continue;
      }
      double value = 0;
      // from_chars: locale-independent, and reads the sink's nan, inf and -inf.
      const auto [end, error] = std::from_chars(cell.data(), cell.data() + cell.size(), value);
      CTRAX_REQUIRE(error == std::errc() && end == cell.data() + cell.size(), path.string(), ":", i + 1,
                    ": column ", header[c], ": '", cell, "' is not a number");
      row.values.push_back(value);
    }
    table.rows.push_back(std::move(row));
  }
  return table;
}

namespace {

// matplotlib's tab10: distinct colours that most colour-blind readers can still tell apart.
const char* const kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

struct Run {
  fs::path csv;
  std::string name;
  MetricsTable table;
};

// A path's last component, ignoring a trailing separator and resolving "." and "..".
std::string last_name(const fs::path& path) {
  fs::path p = fs::absolute(path).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  return p.filename().string();
}

}  // namespace

namespace {

// The runs' metrics tables; two runs of the same name (runs/a/seed0, runs/b/seed0) are told
// apart by their paths.
std::vector<Run> load_runs(const std::vector<fs::path>& runs) {
  std::vector<Run> loaded;
  for (const fs::path& run : runs) {
    std::error_code ec;
    Run r;
    if (fs::is_regular_file(run, ec)) {
      r.csv = run;
      r.name = last_name(fs::absolute(run).parent_path());
    } else {
      CTRAX_REQUIRE(fs::is_directory(run, ec), "plot_learning_curves: ", run.string(),
                    " is neither a run directory nor a metrics.csv file");
      r.csv = run / "metrics.csv";
      CTRAX_REQUIRE(fs::is_regular_file(r.csv, ec), "plot_learning_curves: ", r.csv.string(),
                    " does not exist: is ", run.string(), " the output directory of a training run?");
      r.name = last_name(run);
    }
    r.table = read_metrics_csv(r.csv);
    loaded.push_back(std::move(r));
  }
  std::map<std::string, int> name_count;
  for (const Run& r : loaded) ++name_count[r.name];
  for (size_t i = 0; i < loaded.size(); ++i)
    if (name_count[loaded[i].name] > 1) loaded[i].name = runs[i].lexically_normal().string();
  return loaded;
}

// The y columns run r is drawn with: options.y_columns, or by default the training episodes'
// return first (the solid line), then the evaluations and the confirmations (and the names of
// files from before they existed: "return", "eval_return_T<t>").
std::vector<std::string> y_columns_of(const Run& r, const PlotOptions& options) {
  const MetricsTable& t = r.table;
  CTRAX_REQUIRE(t.column_index(options.x_column) >= 0, "plot_learning_curves: ", r.csv.string(), " has no column ",
                options.x_column, " (the x axis); its columns are: ", join(t.columns));
  const bool has_phase = std::any_of(t.rows.begin(), t.rows.end(),
                                     [&](const MetricsTable::Row& row) { return row.phase == options.phase; });
  CTRAX_REQUIRE(has_phase, "plot_learning_curves: ", r.csv.string(), " has no rows of phase \"", options.phase,
                "\" (", t.rows.size(), " rows in all): was it written by an RL trainer?");
  if (!options.y_columns.empty()) {
    for (const std::string& c : options.y_columns)
      CTRAX_REQUIRE(t.column_index(c) >= 0, "plot_learning_curves: ", r.csv.string(), " has no column ", c,
                    "; its columns are: ", join(t.columns));
    return options.y_columns;
  }
  std::vector<std::string> out;
  for (const char* c : {"train/episode_return_mean", "return"})
    if (t.column_index(c) >= 0) out.push_back(c);
  for (const std::string& c : t.columns) {
    const bool routine = c.rfind("eval", 0) == 0 && c.size() > 12 && c.ends_with("/return_mean");
    if (routine || c.rfind("eval_return_T", 0) == 0) out.push_back(c);
  }
  if (t.column_index("confirm/return_mean") >= 0) out.push_back("confirm/return_mean");
  CTRAX_REQUIRE(!out.empty(), "plot_learning_curves: ", r.csv.string(),
                " has no train/episode_return_mean, eval*/return_mean or confirm/return_mean column; its "
                "columns are: ", join(t.columns), "; choose the columns to draw");
  return out;
}

// The points of one curve, "x y" per line, and how many there are.
std::pair<std::string, size_t> curve_points(const MetricsTable& t, size_t x, size_t y, const std::string& phase) {
  std::string points;
  size_t n = 0;
  for (const MetricsTable::Row& row : t.rows) {
    if (row.phase != phase || !std::isfinite(row.values[x]) || !std::isfinite(row.values[y])) continue;
    points += num(row.values[x]) + " " + num(row.values[y]) + "\n";
    ++n;
  }
  return {points, n};
}

std::string curves_script_header(const PlotOptions& options, bool png, const std::vector<std::string>& all_y) {
  std::ostringstream s;
  s << "set terminal " << (png ? "pngcairo" : "svg") << " size " << options.width << "," << options.height
    << " noenhanced font ',10' background rgb '#ffffff'\n";
  s << "set output OUTPUT\n";
  if (!options.title.empty()) s << "set title " << quote(options.title) << "\n";
  s << "set xlabel " << quote(options.x_column == "n_interactions" ? std::string("environment steps")
                                                                     : options.x_column)
    << "\n";
  s << "set ylabel " << quote(all_y.size() == 1 ? all_y[0] : std::string("return")) << "\n";
  s << "set grid lc rgb '#d0d0d0'\nset key inside bottom right opaque box lc rgb '#a0a0a0'\nset autoscale fix\n"
       "set offsets 0, 0, graph 0.05, graph 0.05\n";
  return s.str();
}

}  // namespace

void plot_learning_curves(const std::vector<fs::path>& runs, const fs::path& output, const PlotOptions& options) {
  CTRAX_REQUIRE(!runs.empty(), "plot_learning_curves: no runs given");
  const bool png = has_extension(output, ".png"), svg = has_extension(output, ".svg");
  CTRAX_REQUIRE(png || svg, "plot_learning_curves: the output must end in .png or .svg, got ", output.string());
  CTRAX_REQUIRE(options.width >= 64 && options.width <= 8192 && options.height >= 64 && options.height <= 8192,
                "plot_learning_curves: width and height must be in [64, 8192] pixels, got ", options.width, " x ",
                options.height);
  const std::vector<Run> loaded = load_runs(runs);
  std::vector<std::vector<std::string>> y_columns;
  std::vector<std::string> all_y;  // in order of first appearance: one dash pattern each
  for (const Run& r : loaded) {
    y_columns.push_back(y_columns_of(r, options));
    for (const std::string& c : y_columns.back())
      if (std::find(all_y.begin(), all_y.end(), c) == all_y.end()) all_y.push_back(c);
  }
  std::map<std::string, std::string> data;
  std::vector<std::string> plots;
  for (size_t i = 0; i < loaded.size(); ++i) {
    const MetricsTable& t = loaded[i].table;
    const size_t x = static_cast<size_t>(t.column_index(options.x_column));
    for (const std::string& column : y_columns[i]) {
      const auto [points, n] = curve_points(t, x, static_cast<size_t>(t.column_index(column)), options.phase);
      if (n == 0) continue;  // e.g. an eval column of a run that never evaluated
      const std::string file = "series" + std::to_string(data.size()) + ".dat";
      data[file] = points;
      const size_t dash = static_cast<size_t>(std::find(all_y.begin(), all_y.end(), column) - all_y.begin());
      const std::string title = loaded[i].name + (all_y.size() > 1 ? " " + column : std::string());
      // A single point has no line to draw: show it as a point.
      const std::string style = n > 1 ? std::string("with lines lw 2") : std::string("with points pt 7 ps 1.2");
      plots.push_back(quote(file) + " using 1:2 " + style + " lc rgb " + quote(kPalette[i % std::size(kPalette)]) +
                      " dt " + std::to_string(dash % 5 + 1) + " title " + quote(title));
    }
  }
  CTRAX_REQUIRE(!plots.empty(), "plot_learning_curves: nothing to draw: no row of phase \"", options.phase,
                "\" has finite values in both ", options.x_column, " and a y column");
  std::string script = curves_script_header(options, png, all_y) + "plot ";
  for (size_t i = 0; i < plots.size(); ++i) script += (i ? ", \\\n     " : "") + plots[i];
  run_gnuplot(script + "\n", data, output, options.gnuplot);
}

// ---- Animations ---------------------------------------------------------------------------

namespace {

std::string hex(Rgb c) {
  char buffer[8];
  std::snprintf(buffer, sizeof buffer, "#%02x%02x%02x", c.r, c.g, c.b);
  return buffer;
}

std::string shape_name(const Shape& shape) {
  return std::visit([](const auto& s) { return s.name; }, shape);
}

void check_point(Point p, size_t frame, const Shape& shape) {
  CTRAX_REQUIRE(std::isfinite(p.x) && std::isfinite(p.y), "write_animation: frame ", frame, ", shape '",
                shape_name(shape), "': a point (", p.x, ", ", p.y, ") is not finite");
}

void check_frame(const Frame& f, size_t index) {
  const ViewBox& v = f.view;
  CTRAX_REQUIRE(std::isfinite(v.x_min) && std::isfinite(v.x_max) && std::isfinite(v.y_min) &&
                    std::isfinite(v.y_max) && v.width() > 0 && v.height() > 0,
                "write_animation: frame ", index, " has the view box [", v.x_min, ", ", v.x_max, "] x [", v.y_min,
                ", ", v.y_max, "]: expected finite bounds with min < max");
  for (const Shape& shape : f.shapes) {
    if (const auto* l = std::get_if<Line>(&shape)) {
      CTRAX_REQUIRE(l->points.size() >= 2, "write_animation: frame ", index, ", line '", l->name,
                    "': a line needs at least 2 points, got ", l->points.size());
      CTRAX_REQUIRE(std::isfinite(l->width) && l->width >= 0, "write_animation: frame ", index, ", line '",
                    l->name, "': width ", l->width, " is not a finite number >= 0");
      for (Point p : l->points) check_point(p, index, shape);
    } else if (const auto* g = std::get_if<Polygon>(&shape)) {
      CTRAX_REQUIRE(g->points.size() >= 3, "write_animation: frame ", index, ", polygon '", g->name,
                    "': a polygon needs at least 3 points, got ", g->points.size());
      for (Point p : g->points) check_point(p, index, shape);
    } else if (const auto* c = std::get_if<Circle>(&shape)) {
      CTRAX_REQUIRE(std::isfinite(c->radius) && c->radius >= 0, "write_animation: frame ", index, ", circle '",
                    c->name, "': radius ", c->radius, " is not a finite number >= 0");
      check_point(c->centre, index, shape);
    } else if (const auto* t = std::get_if<Text>(&shape)) {
      check_point(t->at, index, shape);
      CTRAX_REQUIRE(std::isfinite(t->size) && t->size > 0, "write_animation: frame ", index, ", text '", t->name,
                    "': size ", t->size, " is not a positive number");
    }
  }
}

// One frame's drawing commands: gnuplot objects in the frame's order (objects of one layer are
// drawn in order of their numbers, so shape k is object k + 2, over the background, object 1),
// then the texts as labels on top. `pixels_per_unit` decides how a Line is drawn: one thinner
// than 1.5 px becomes a polygon that goes out along the points and back, of which gnuplot draws
// only the 1 px border; a wider one becomes one filled quadrilateral per segment.
std::string frame_commands(const Frame& f, double pixels_per_unit) {
  std::ostringstream s;
  s << "unset object\nunset label\n";
  s << "set xrange [" << num(f.view.x_min) << ":" << num(f.view.x_max) << "]\n";
  s << "set yrange [" << num(f.view.y_min) << ":" << num(f.view.y_max) << "]\n";
  int object = 1, label = 1;
  s << "set object " << object++ << " rectangle from graph 0,0 to graph 1,1 fc rgb " << quote(hex(f.background))
    << " fillstyle solid 1.0 noborder behind\n";
  auto polygon = [&](const std::vector<Point>& points, Rgb color, bool fill) {
    s << "set object " << object++ << " polygon from ";
    for (size_t i = 0; i <= points.size(); ++i) {
      const Point& p = points[i % points.size()];  // gnuplot wants the first point repeated at the end
      s << (i ? " to " : "") << num(p.x) << "," << num(p.y);
    }
    s << " fc rgb " << quote(hex(color)) << " fillstyle " << (fill ? "solid 1.0" : "empty") << " border lc rgb "
      << quote(hex(color)) << " lw 1 back\n";
  };
  for (const Shape& shape : f.shapes) {
    if (const auto* l = std::get_if<Line>(&shape)) {
      if (l->width * pixels_per_unit < 1.5) {
        std::vector<Point> there_and_back = l->points;
        for (size_t i = l->points.size() - 1; i-- > 1;) there_and_back.push_back(l->points[i]);
        polygon(there_and_back, l->color, false);
      } else {
        for (size_t i = 0; i + 1 < l->points.size(); ++i) {
          const Point a = l->points[i], b = l->points[i + 1];
          const double length = std::hypot(b.x - a.x, b.y - a.y);
          if (length == 0) continue;
          // The unit normal (-dy, dx) / length times half the width.
          const double nx = -(b.y - a.y) / length * l->width / 2, ny = (b.x - a.x) / length * l->width / 2;
          polygon({{a.x + nx, a.y + ny}, {b.x + nx, b.y + ny}, {b.x - nx, b.y - ny}, {a.x - nx, a.y - ny}}, l->color,
                  true);
        }
      }
    } else if (const auto* g = std::get_if<Polygon>(&shape)) {
      polygon(g->points, g->fill, true);
    } else if (const auto* c = std::get_if<Circle>(&shape)) {
      s << "set object " << object++ << " circle at " << num(c->centre.x) << "," << num(c->centre.y) << " size "
        << num(c->radius) << " fc rgb " << quote(hex(c->fill)) << " fillstyle solid 1.0 border lc rgb "
        << quote(hex(c->fill)) << " lw 1 back\n";
    } else if (const auto* t = std::get_if<Text>(&shape)) {
      s << "set label " << label++ << " " << quote(t->text) << " at " << num(t->at.x) << "," << num(t->at.y)
        << " center tc rgb " << quote(hex(t->color)) << " font " << quote("," + num(t->size)) << " front\n";
    }
  }
  return s.str();
}

// The page setup every frame shares: no axes, no key, the plot area given by the margins.
const char* const kBareAxes = "unset border\nunset tics\nunset key\nunset title\nunset xlabel\nunset ylabel\n";

std::string margins(double left, double right, double bottom, double top) {
  return "set lmargin at screen " + num(left) + "\nset rmargin at screen " + num(right) + "\nset bmargin at screen " +
         num(bottom) + "\nset tmargin at screen " + num(top) + "\n";
}

}  // namespace

void write_animation(const std::vector<Frame>& frames, const fs::path& output, double fps,
                     const AnimationOptions& options) {
  CTRAX_REQUIRE(!frames.empty(), "write_animation: no frames to write to ", output.string());
  const bool gif = has_extension(output, ".gif"), png = has_extension(output, ".png");
  CTRAX_REQUIRE(gif || png, "write_animation: the output must end in .gif (an animation) or .png (a strip of frames), got ",
                output.string());
  CTRAX_REQUIRE(std::isfinite(fps) && fps > 0 && fps <= 100, "write_animation: fps must be in (0, 100], got ", fps);
  CTRAX_REQUIRE(options.frame_width >= 16 && options.frame_width <= 4096,
                "write_animation: frame_width must be in [16, 4096] pixels, got ", options.frame_width);
  CTRAX_REQUIRE(options.strip_frames >= 1 && options.strip_columns >= 1,
                "write_animation: strip_frames and strip_columns must be >= 1, got ", options.strip_frames, " and ",
                options.strip_columns);
  for (size_t i = 0; i < frames.size(); ++i) check_frame(frames[i], i);
  const double aspect = frames[0].view.height() / frames[0].view.width();
  for (size_t i = 1; i < frames.size(); ++i) {
    const double a = frames[i].view.height() / frames[i].view.width();
    CTRAX_REQUIRE(std::abs(a - aspect) <= 1e-9 * aspect, "write_animation: frame ", i,
                  "'s view box has the aspect ratio (height / width) ", a, " but frame 0's has ", aspect,
                  ": every frame of an animation must have the same");
  }
  const int width = options.frame_width;
  const int height = std::max(1, static_cast<int>(std::lround(width * aspect)));

  std::ostringstream s;
  if (gif) {
    // GIF delays are in hundredths of a second. No `optimize`: with it libgd drops a frame
    // identical to the one before without lengthening that one's delay, so an episode where
    // nothing visibly moves for a while would play too fast.
    const long delay = std::max(1L, std::lround(100.0 / fps));
    s << "set terminal gif animate delay " << delay << " loop 0 size " << width << "," << height
      << " background rgb " << quote(hex(frames[0].background)) << " noenhanced\n";
    s << "set output OUTPUT\n" << kBareAxes << margins(0, 1, 0, 1);
    for (const Frame& f : frames)
      s << frame_commands(f, width / f.view.width()) << "plot NaN notitle\n";
  } else {
    const size_t n = frames.size();
    const size_t k = std::min(n, static_cast<size_t>(options.strip_frames));
    std::vector<size_t> chosen;  // evenly spaced, the first and the last included
    for (size_t i = 0; i < k; ++i) chosen.push_back(k == 1 ? 0 : static_cast<size_t>(std::lround(
                                                                   static_cast<double>(i) * (n - 1) / (k - 1))));
    const size_t columns = std::min(k, static_cast<size_t>(options.strip_columns));
    const size_t rows = (k + columns - 1) / columns;
    const int gap = 4;  // pixels between frames
    const int canvas_w = static_cast<int>(columns) * (width + gap) + gap;
    const int canvas_h = static_cast<int>(rows) * (height + gap) + gap;
    s << "set terminal pngcairo size " << canvas_w << "," << canvas_h << " background rgb '#c0c0c0' noenhanced font ',"
      << std::max(8, width / 40) << "'\n";
    s << "set output OUTPUT\n" << kBareAxes << "set multiplot\n";
    for (size_t j = 0; j < k; ++j) {
      const Frame& f = frames[chosen[j]];
      const size_t r = j / columns, c = j % columns;
      const double left = (gap + static_cast<double>(c) * (width + gap)) / canvas_w;
      const double top = 1.0 - (gap + static_cast<double>(r) * (height + gap)) / canvas_h;
      s << margins(left, left + static_cast<double>(width) / canvas_w, top - static_cast<double>(height) / canvas_h,
                   top);
      s << frame_commands(f, width / f.view.width());
      s << "set label 1000 " << quote("frame " + std::to_string(chosen[j])) << " at graph 0.02, graph 0.95 left tc rgb '#404040' front\n";
      s << "plot NaN notitle\n";
    }
    s << "unset multiplot\n";
  }
  run_gnuplot(s.str(), {}, output, options.gnuplot);
}

}  // namespace ctrax::tools
