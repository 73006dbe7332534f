// Pictures through gnuplot (tools/gnuplot.h): reading metrics.csv; learning-curve PNGs and SVGs
// of several runs (signature, pixel size, the legend naming the runs); animations as GIFs (one
// image per frame, the delay from fps, looping) and PNG strips (the grid's pixel size); output
// replaced atomically (a failing gnuplot leaves the old file and no temporaries); and every
// refusal. Tests that need gnuplot skip with a message when it is not on PATH (CI installs
// gnuplot-nox); the input checks run before gnuplot and are tested either way.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include <ctrax/base/error.h>
#include <ctrax/optim/metrics_log.h>
#include <ctrax/rl/environments/env.h>
#include <ctrax/rl/environments/env_registry.h>
#include <ctrax/rl/environments/render.h>
#include <ctrax/tensor/tensor.h>
#include <gnuplot.h>

#include "io/temp_dir.h"

using ctrax::Error;
using ctrax::render::Frame;
using ctrax::test::list_dir;
using ctrax::test::read_bytes;
using ctrax::test::TempDir;
using ctrax::test::write_bytes;
namespace tools = ctrax::tools;
namespace fs = std::filesystem;

namespace {

bool have_gnuplot() {
  if (tools::gnuplot_available()) return true;
  MESSAGE("gnuplot is not on PATH: skipping (install gnuplot-nox)");
  return false;
}

uint32_t be32(const std::string& b, size_t at) {
  return (uint32_t(uint8_t(b[at])) << 24) | (uint32_t(uint8_t(b[at + 1])) << 16) |
         (uint32_t(uint8_t(b[at + 2])) << 8) | uint32_t(uint8_t(b[at + 3]));
}
uint32_t le16(const std::string& b, size_t at) { return uint32_t(uint8_t(b[at])) | (uint32_t(uint8_t(b[at + 1])) << 8); }

const std::string kPngSignature("\x89PNG\r\n\x1a\n", 8);

// A PNG's width and height from its IHDR chunk (the first, right after the signature).
std::pair<uint32_t, uint32_t> png_size(const std::string& png) {
  REQUIRE(png.size() > 24);
  REQUIRE(png.substr(0, 8) == kPngSignature);
  REQUIRE(png.substr(12, 4) == "IHDR");
  return {be32(png, 16), be32(png, 20)};
}

struct GifInfo {
  uint32_t width = 0, height = 0;
  int images = 0;
  std::vector<uint32_t> delays;  // per graphic control extension, hundredths of a second
  bool loops = false;            // the NETSCAPE2.0 application extension
};

// Walks a GIF's blocks (GIF89a: header, logical screen, global colour table, then extensions
// and images up to the trailer) and counts its images.
GifInfo parse_gif(const std::string& g) {
  GifInfo info;
  REQUIRE(g.size() > 13);
  REQUIRE(g.substr(0, 6) == "GIF89a");
  info.width = le16(g, 6);
  info.height = le16(g, 8);
  size_t at = 13;
  const uint8_t flags = uint8_t(g[10]);
  if (flags & 0x80) at += 3u * (1u << ((flags & 7) + 1));
  auto skip_sub_blocks = [&] {
    while (at < g.size() && g[at] != 0) at += 1 + uint8_t(g[at]);
    ++at;
  };
  while (at < g.size()) {
    const uint8_t block = uint8_t(g[at]);
    if (block == 0x3B) return info;  // trailer
    if (block == 0x21) {
      const uint8_t label = uint8_t(g[at + 1]);
      if (label == 0xF9) info.delays.push_back(le16(g, at + 4));
      if (label == 0xFF && g.compare(at + 3, 11, "NETSCAPE2.0") == 0) info.loops = true;
      at += 2;
      skip_sub_blocks();
    } else if (block == 0x2C) {
      ++info.images;
      const uint8_t local = uint8_t(g[at + 9]);
      at += 10;
      if (local & 0x80) at += 3u * (1u << ((local & 7) + 1));
      ++at;  // LZW minimum code size
      skip_sub_blocks();
    } else {
      FAIL("unexpected GIF block " << int(block) << " at byte " << at);
    }
  }
  FAIL("GIF without a trailer");
  return info;
}

// A metrics.csv as an RL agent writes it (optim/metrics_log.h), with `epochs` rows of phase rl.
void write_run(const fs::path& dir, int epochs, double offset) {
  fs::create_directories(dir);
  ctrax::CsvMetricsSink sink(dir / "metrics.csv", {"entropy", "eval_return_T0", "n_interactions", "return"});
  for (int e = 1; e <= epochs; ++e) {
    ctrax::Metrics row{{"entropy", 0.6}, {"n_interactions", 200.0 * e}, {"return", offset + 10.0 * e}};
    if (e % 2 == 0) row["eval_return_T0"] = offset + 12.0 * e;  // evaluated every other epoch
    sink.write(e, "rl", row);
  }
}

// Frames of a CartPole episode, pushing right until it ends.
std::vector<Frame> cartpole_frames(int max_steps) {
  ctrax::EnvPtr env = ctrax::make_env("CartPole-v1");
  env->reset(1);
  std::vector<Frame> frames{ctrax::render_frame(*env)};
  for (int i = 0; i < max_steps; ++i) {
    const ctrax::StepResult r = env->step(ctrax::from_vector(std::vector<int64_t>{i % 3 == 0 ? 0 : 1}, ctrax::Shape{}));
    frames.push_back(ctrax::render_frame(*env));
    if (r.terminated || r.truncated) break;
  }
  return frames;
}

}  // namespace

TEST_CASE("Plot metrics.csv reading: empty cells, nan and inf, a torn last line, bad files") {
  TempDir dir;
  write_bytes(dir / "m.csv", "step,phase,return,loss\n1,rl,5,\n2,rl,nan,-inf\n3,train,,0.5\n4,rl,7,");
  const tools::MetricsTable t = tools::read_metrics_csv(dir / "m.csv");
  CHECK(t.columns == std::vector<std::string>{"return", "loss"});
  REQUIRE(t.rows.size() == 3);  // the last line has no newline yet: ignored
  CHECK(t.rows[0].step == 1);
  CHECK(t.rows[0].phase == "rl");
  CHECK(t.rows[0].values[0] == 5.0);
  CHECK(std::isnan(t.rows[0].values[1]));
  CHECK(std::isnan(t.rows[1].values[0]));
  CHECK(t.rows[1].values[1] == -std::numeric_limits<double>::infinity());
  CHECK(t.rows[2].phase == "train");
  CHECK(t.column_index("loss") == 1);
  CHECK(t.column_index("nope") == -1);

  CHECK_THROWS_WITH_AS(tools::read_metrics_csv(dir / "absent.csv"), doctest::Contains("absent.csv: no such file"),
                       Error);
  write_bytes(dir / "empty.csv", "");
  CHECK_THROWS_WITH_AS(tools::read_metrics_csv(dir / "empty.csv"), doctest::Contains("the file is empty"), Error);
  write_bytes(dir / "header.csv", "epoch,return\n1,2\n");
  CHECK_THROWS_WITH_AS(tools::read_metrics_csv(dir / "header.csv"), doctest::Contains("must start with step,phase"),
                       Error);
  write_bytes(dir / "cells.csv", "step,phase,return\n1,rl,2,3\n");
  CHECK_THROWS_WITH_AS(tools::read_metrics_csv(dir / "cells.csv"),
                       doctest::Contains("cells.csv:2: 4 cells, but the header has 3"), Error);
  write_bytes(dir / "number.csv", "step,phase,return\n1,rl,abc\n");
  CHECK_THROWS_WITH_AS(tools::read_metrics_csv(dir / "number.csv"),
                       doctest::Contains("column return: 'abc' is not a number"), Error);
  write_bytes(dir / "step.csv", "step,phase,return\n1.5,rl,2\n");
  CHECK_THROWS_WITH_AS(tools::read_metrics_csv(dir / "step.csv"), doctest::Contains("the step '1.5' is not an integer"),
                       Error);
}

TEST_CASE("Plot learning curves: two runs overlaid in a PNG of the requested size") {
  if (!have_gnuplot()) return;
  TempDir dir;
  write_run(dir / "ppo_seed0", 12, 0.0);
  write_run(dir / "ppo_seed1", 8, 30.0);
  tools::PlotOptions options;
  options.width = 800;
  options.height = 500;
  options.title = "CartPole-v1: PPO";
  tools::plot_learning_curves({dir / "ppo_seed0", dir / "ppo_seed1" / "metrics.csv"}, dir / "curves.png", options);
  const std::string png = read_bytes(dir / "curves.png");
  CHECK(png_size(png) == std::pair<uint32_t, uint32_t>{800, 500});
  CHECK(png.size() > 5000);  // axes, labels and four curves, not an empty canvas
  // Nothing but the image is left next to it.
  CHECK(list_dir(dir.path()) == std::vector<std::string>{"curves.png", "ppo_seed0", "ppo_seed1"});
}

TEST_CASE("Plot learning curves: the legend names each run by its directory, and each column") {
  if (!have_gnuplot()) return;
  TempDir dir;
  write_run(dir / "a2c_run", 5, 0.0);
  write_run(dir / "awr_run", 1, 5.0);  // a single row: drawn as a point
  tools::plot_learning_curves({dir / "a2c_run", dir / "awr_run/"}, dir / "curves.svg");
  const std::string svg = read_bytes(dir / "curves.svg");
  CHECK(svg.find("<svg") != std::string::npos);
  CHECK(svg.find("a2c_run return") != std::string::npos);
  CHECK(svg.find("a2c_run eval_return_T0") != std::string::npos);
  CHECK(svg.find("awr_run return") != std::string::npos);
  CHECK(svg.find("environment steps") != std::string::npos);
  // The awr run never evaluated (one epoch, evaluations every other): no curve for it.
  CHECK(svg.find("awr_run eval_return_T0") == std::string::npos);

  // One chosen column: the legend is the run's name alone.
  tools::PlotOptions options;
  options.y_columns = {"entropy"};
  tools::plot_learning_curves({dir / "a2c_run"}, dir / "entropy.svg", options);
  const std::string entropy = read_bytes(dir / "entropy.svg");
  CHECK(entropy.find("a2c_run") != std::string::npos);
  CHECK(entropy.find("a2c_run entropy") == std::string::npos);

  // Runs of the same name in different places are told apart by their paths.
  write_run(dir / "x" / "seed0", 3, 0.0);
  write_run(dir / "y" / "seed0", 3, 1.0);
  tools::plot_learning_curves({dir / "x" / "seed0", dir / "y" / "seed0"}, dir / "same.svg", options);
  const std::string same = read_bytes(dir / "same.svg");
  CHECK(same.find((dir / "x" / "seed0").string()) != std::string::npos);
  CHECK(same.find((dir / "y" / "seed0").string()) != std::string::npos);
}

TEST_CASE("Plot learning curves errors: no runs, extension, missing metrics.csv, no rl rows, unknown columns") {
  // All of these are found before gnuplot runs.
  TempDir dir;
  write_run(dir / "run", 3, 0.0);
  CHECK_THROWS_WITH_AS(tools::plot_learning_curves({}, dir / "c.png"), doctest::Contains("no runs given"), Error);
  CHECK_THROWS_WITH_AS(tools::plot_learning_curves({dir / "run"}, dir / "c.jpg"),
                       doctest::Contains("must end in .png or .svg"), Error);
  fs::create_directories(dir / "empty_run");
  CHECK_THROWS_WITH_AS(tools::plot_learning_curves({dir / "run", dir / "empty_run"}, dir / "c.png"),
                       doctest::Contains("empty_run/metrics.csv does not exist"), Error);
  CHECK_THROWS_WITH_AS(tools::plot_learning_curves({dir / "nowhere"}, dir / "c.png"),
                       doctest::Contains("neither a run directory nor a metrics.csv file"), Error);

  fs::create_directories(dir / "supervised");
  {
    ctrax::CsvMetricsSink sink(dir / "supervised" / "metrics.csv", {"loss", "n_interactions", "return"});
    sink.write(1, "train", {{"loss", 0.5}});
  }
  CHECK_THROWS_WITH_AS(tools::plot_learning_curves({dir / "supervised"}, dir / "c.png"),
                       doctest::Contains("has no rows of phase \"rl\""), Error);

  tools::PlotOptions options;
  options.y_columns = {"return", "kl"};
  CHECK_THROWS_WITH_AS(tools::plot_learning_curves({dir / "run"}, dir / "c.png", options),
                       doctest::Contains("has no column kl; its columns are: entropy, eval_return_T0, n_interactions, return"),
                       Error);
  options = {};
  options.x_column = "wall_time";
  CHECK_THROWS_WITH_AS(tools::plot_learning_curves({dir / "run"}, dir / "c.png", options),
                       doctest::Contains("has no column wall_time (the x axis)"), Error);

  fs::create_directories(dir / "odd");
  {
    ctrax::CsvMetricsSink sink(dir / "odd" / "metrics.csv", {"loss", "n_interactions"});
    sink.write(1, "rl", {{"loss", 0.5}, {"n_interactions", 10}});
  }
  CHECK_THROWS_WITH_AS(tools::plot_learning_curves({dir / "odd"}, dir / "c.png"),
                       doctest::Contains("has no train/episode_return_mean, eval*/return_mean or confirm/return_mean column"), Error);
  fs::create_directories(dir / "blank");
  {
    ctrax::CsvMetricsSink sink(dir / "blank" / "metrics.csv", {"n_interactions", "return"});
    sink.write(1, "rl", {{"n_interactions", 10}, {"return", std::numeric_limits<double>::quiet_NaN()}});
  }
  CHECK_THROWS_WITH_AS(tools::plot_learning_curves({dir / "blank"}, dir / "c.png"),
                       doctest::Contains("nothing to draw"), Error);
  CHECK(!fs::exists(dir / "c.png"));
}

TEST_CASE("Plot animation: a GIF with one image per frame at the frame rate, looping") {
  if (!have_gnuplot()) return;
  TempDir dir;
  const std::vector<Frame> frames = cartpole_frames(30);
  REQUIRE(frames.size() >= 5);
  tools::write_animation(frames, dir / "episode.gif", 50.0);
  const std::string gif = read_bytes(dir / "episode.gif");
  const GifInfo info = parse_gif(gif);
  CHECK(info.width == 600);
  CHECK(info.height == 400);
  CHECK(info.images == static_cast<int>(frames.size()));
  CHECK(info.loops);
  REQUIRE(!info.delays.empty());
  for (uint32_t d : info.delays) CHECK(d == 2);  // 50 fps: 2 hundredths of a second
  CHECK(list_dir(dir.path()) == std::vector<std::string>{"episode.gif"});

  // Every built-in environment, at another size and speed (other tests may register their own).
  for (const std::string id : {"Acrobot-v1", "CartPole-v0", "CartPole-v1", "MountainCar-v0",
                               "MountainCarContinuous-v0", "Pendulum-v1"}) {
    CAPTURE(id);
    ctrax::EnvPtr env = ctrax::make_env(id);
    env->reset(2);
    std::vector<Frame> episode;
    for (int i = 0; i < 4; ++i) {
      episode.push_back(ctrax::render_frame(*env));
      env->step(env->action_space().sample(ctrax::Key(static_cast<uint64_t>(i))));
    }
    const fs::path out = dir / (id + ".gif");
    tools::AnimationOptions options;
    options.frame_width = 300;
    tools::write_animation(episode, out, ctrax::render_fps(id), options);
    const GifInfo g = parse_gif(read_bytes(out));
    CHECK(g.width == 300);
    CHECK(g.images == 4);
    CHECK(g.delays.front() == static_cast<uint32_t>(std::lround(100 / ctrax::render_fps(id))));
  }
}

TEST_CASE("Plot animation: a PNG strip of evenly spaced frames in a grid") {
  if (!have_gnuplot()) return;
  TempDir dir;
  const std::vector<Frame> frames = cartpole_frames(19);
  REQUIRE(frames.size() == 20);
  tools::AnimationOptions options;
  options.frame_width = 200;
  options.strip_frames = 6;
  options.strip_columns = 3;
  tools::write_animation(frames, dir / "strip.png", 50.0, options);
  // 3 columns and 2 rows of 200 x 133 px frames, 4 px apart and from the edges.
  const std::string png = read_bytes(dir / "strip.png");
  CHECK(png_size(png) == std::pair<uint32_t, uint32_t>{3 * 204 + 4, 2 * 137 + 4});
  // Fewer frames than strip_frames: one row of all of them.
  const std::vector<Frame> two(frames.begin(), frames.begin() + 2);
  tools::write_animation(two, dir / "two.png", 50.0, options);
  CHECK(png_size(read_bytes(dir / "two.png")) == std::pair<uint32_t, uint32_t>{2 * 204 + 4, 137 + 4});
}

TEST_CASE("Plot animation errors: no frames, extension, fps, aspect ratios, shapes") {
  TempDir dir;
  const Frame cart = ctrax::render_state("CartPole-v1", {0, 0, 0.1, 0});
  const Frame pendulum = ctrax::render_state("Pendulum-v1", {0, 0});
  CHECK_THROWS_WITH_AS(tools::write_animation({}, dir / "a.gif", 30), doctest::Contains("no frames"), Error);
  CHECK_THROWS_WITH_AS(tools::write_animation({cart}, dir / "a.mp4", 30),
                       doctest::Contains("must end in .gif (an animation) or .png"), Error);
  CHECK_THROWS_WITH_AS(tools::write_animation({cart}, dir / "a.gif", 0), doctest::Contains("fps must be in (0, 100]"),
                       Error);
  CHECK_THROWS_WITH_AS(tools::write_animation({cart, pendulum}, dir / "a.gif", 30),
                       doctest::Contains("every frame of an animation must have the same"), Error);
  Frame bad = cart;
  bad.shapes.push_back(ctrax::render::Polygon{"sliver", {{0, 0}, {1, 1}}, {}});
  CHECK_THROWS_WITH_AS(tools::write_animation({cart, bad}, dir / "a.gif", 30),
                       doctest::Contains("frame 1, polygon 'sliver': a polygon needs at least 3 points, got 2"), Error);
  bad = cart;
  bad.shapes.push_back(ctrax::render::Circle{"ghost", {std::nan(""), 0}, 1, {}});
  CHECK_THROWS_WITH_AS(tools::write_animation({bad}, dir / "a.png", 30),
                       doctest::Contains("frame 0, shape 'ghost': a point (nan, 0) is not finite"), Error);
  bad = cart;
  bad.view.x_max = bad.view.x_min;
  CHECK_THROWS_WITH_AS(tools::write_animation({bad}, dir / "a.png", 30), doctest::Contains("expected finite bounds"),
                       Error);
  tools::AnimationOptions options;
  options.frame_width = 5;
  CHECK_THROWS_WITH_AS(tools::write_animation({cart}, dir / "a.png", 30, options),
                       doctest::Contains("frame_width must be in [16, 4096]"), Error);
  CHECK(list_dir(dir.path()).empty());
}

TEST_CASE("Plot gnuplot runs: data files, failures keep the old output, gnuplot missing") {
  TempDir dir;
  // A missing gnuplot is reported as such, with what to install.
  tools::GnuplotOptions missing;
  missing.executable = (dir / "no-such-gnuplot").string();
  CHECK_FALSE(tools::gnuplot_available(missing.executable));
  CHECK_FALSE(tools::gnuplot_available("ctrax-no-such-program"));
  CHECK_THROWS_WITH_AS(tools::run_gnuplot("plot x", {}, dir / "x.png", missing),
                       doctest::Contains("gnuplot was not found"), Error);
  tools::AnimationOptions animation;
  animation.gnuplot = missing;
  CHECK_THROWS_WITH_AS(
      tools::write_animation({ctrax::render_state("Pendulum-v1", {0, 0})}, dir / "p.gif", 30, animation),
      doctest::Contains("install it (Debian/Ubuntu: apt-get install gnuplot-nox)"), Error);
  CHECK(list_dir(dir.path()).empty());

  if (!have_gnuplot()) return;
  // A script reads its data files by their bare names and writes to OUTPUT.
  tools::run_gnuplot("set terminal pngcairo size 320,240\nset output OUTPUT\nplot 'points.dat' using 1:2 with lines",
                     {{"points.dat", "0 0\n1 1\n2 4\n"}}, dir / "it's here.png");
  CHECK(png_size(read_bytes(dir / "it's here.png")) == std::pair<uint32_t, uint32_t>{320, 240});

  // A failing script: the error carries gnuplot's message, the old file stays, no temporaries.
  write_bytes(dir / "old.png", "old contents");
  CHECK_THROWS_WITH_AS(
      tools::run_gnuplot("set terminal pngcairo\nset output OUTPUT\nplot no_such_function(x)", {}, dir / "old.png"),
      doctest::Contains("undefined function: no_such_function"), Error);
  CHECK(read_bytes(dir / "old.png") == "old contents");
  // Success without an image is a failure too.
  CHECK_THROWS_WITH_AS(tools::run_gnuplot("print 1", {}, dir / "old.png"), doctest::Contains("wrote nothing"), Error);
  CHECK(read_bytes(dir / "old.png") == "old contents");
  CHECK(list_dir(dir.path()) == std::vector<std::string>{"it's here.png", "old.png"});
  CHECK_THROWS_WITH_AS(tools::run_gnuplot("print 1", {{"../escape.dat", "1"}}, dir / "old.png"),
                       doctest::Contains("must be a plain file name"), Error);
}
