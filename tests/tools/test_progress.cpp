// tools/progress.h: the live line on a terminal and the plain lines elsewhere.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include <progress.h>

namespace {

// Everything written to a temporary FILE*.
struct Captured {
  std::FILE* file = std::tmpfile();
  ~Captured() { std::fclose(file); }
  std::string text() const {
    std::fflush(file);
    std::rewind(file);
    std::string out;
    for (int c; (c = std::fgetc(file)) != EOF;) out.push_back(static_cast<char>(c));
    return out;
  }
};

ctrax::Metrics row(double steps, double ret, double eval) {
  return {{"n_interactions", steps},
          {"train/episode_return_mean", ret},
          {"eval/return_mean", eval},
          {"time/env_steps_per_second", 1000.0}};
}

}  // namespace

TEST_CASE("Progress: on a terminal one line is rewritten in place and ended at the last epoch") {
  Captured out;
  ctrax::tools::Progress progress(out.file, /*terminal=*/true, 0, 3, "eval/return_mean");
  progress.epoch(1, row(100, 10.5, 20.0), false);
  progress.epoch(2, row(200, 11.5, 21.0), false);
  progress.epoch(3, row(300, 12.5, 22.0), true);
  const std::string text = out.text();
  CHECK(text.find("\r\033[Kepoch 1/3  steps 100  return 10.5  eval 20.0  1000 steps/s  ETA ") == 0);
  CHECK(text.find("\r\033[Kepoch 3/3  steps 300  return 12.5  eval 22.0  1000 steps/s\n") != std::string::npos);
  // One line in all: only the last epoch ends it.
  CHECK(std::count(text.begin(), text.end(), '\n') == 1);
}

TEST_CASE("Progress: elsewhere plain lines, the first and the last, at most one per interval between") {
  Captured out;
  ctrax::tools::Progress progress(out.file, /*terminal=*/false, 4, 8, "", /*plain_interval_seconds=*/3600.0);
  for (int64_t e = 5; e <= 8; ++e) progress.epoch(e, row(100.0 * e, 1.0, 0.0), e == 8);
  progress.end_line();  // nothing to end
  CHECK(out.text() ==
        "epoch 5/8  steps 500  return 1.0  1000 steps/s  ETA 0s\n"
        "epoch 8/8  steps 800  return 1.0  1000 steps/s\n");
}
