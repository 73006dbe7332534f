// Run directories: see run_dir.h.
#include "run_dir.h"

#include <unistd.h>

#include <sstream>

#include <ctrax/io/atomic_file.h>
#include <ctrax/base/error.h>

#include "config.h"

namespace ctrax::tools {

namespace fs = std::filesystem;

namespace {

bool writable_directory(const fs::path& dir) {
  std::error_code error;
  return fs::is_directory(dir, error) && ::access(dir.c_str(), W_OK | X_OK) == 0;
}

}  // namespace

void check_new_run_directory(const fs::path& dir) {
  std::error_code error;
  if (fs::exists(dir, error)) {
    CTRAX_REQUIRE(fs::is_directory(dir, error), "the output directory ", dir.string(), " is a file, not a directory");
    CTRAX_REQUIRE(!fs::exists(dir / "run.toml", error), "the output directory ", dir.string(),
                  " already holds a run; continue it with `ctrax resume ", dir.string(),
                  "` or choose another --output-dir");
    CTRAX_REQUIRE(writable_directory(dir), "the output directory ", dir.string(), " is not writable");
    return;
  }
  // The nearest existing ancestor must be a writable directory.
  fs::path ancestor = fs::absolute(dir, error).parent_path();
  while (!ancestor.empty() && !fs::exists(ancestor, error) && ancestor != ancestor.root_path())
    ancestor = ancestor.parent_path();
  CTRAX_REQUIRE(writable_directory(ancestor), "cannot create the output directory ", dir.string(), ": ",
                ancestor.string(), fs::is_directory(ancestor, error) ? " is not writable" : " is not a directory");
}

void create_run_directory(const fs::path& dir, const RunConfig& config) {
  check_new_run_directory(dir);
  std::error_code error;
  fs::create_directories(dir, error);
  CTRAX_REQUIRE(!error, "cannot create the output directory ", dir.string(), ": ", error.message());
  io::remove_stale_temporaries(dir);  // of an earlier creation that crashed
  std::ostringstream resolved;
  resolved << format_config(config.resolved) << "\n";
  io::write_file_atomically(dir / "config.toml", resolved.str());
  toml::table run{{"format", "ctrax-run"},
                  {"version", kRunFormatVersion},
                  {"algorithm", config.algorithm},
                  {"env", config.env}};
  std::ostringstream text;
  text << "# A ctrax run directory (tools/run_dir.h); config.toml holds its configuration.\n" << run << "\n";
  io::write_file_atomically(dir / "run.toml", text.str());
}

RunConfig open_run_directory(const fs::path& dir) {
  std::error_code error;
  const fs::file_status status = fs::status(dir, error);
  // A path that cannot be followed (a symbolic link loop, a permission) says why; only a path
  // that is not there is "no run directory".
  CTRAX_REQUIRE(!error || error == std::errc::no_such_file_or_directory, "cannot open the run directory ", dir.string(),
                ": ", error.message());
  CTRAX_REQUIRE(fs::is_directory(status), "no run directory at ", dir.string());
  const fs::path marker = dir / "run.toml";
  CTRAX_REQUIRE(fs::exists(marker, error), dir.string(), " is not a ctrax run directory (no run.toml)");
  toml::table run = parse_config_file(marker);
  const std::string format = run["format"].value_or(std::string());
  CTRAX_REQUIRE(format == "ctrax-run", marker.string(), ": format is \"", format, "\", expected \"ctrax-run\"");
  const int64_t version = run["version"].value_or(int64_t{-1});
  CTRAX_REQUIRE(version == kRunFormatVersion, dir.string(), " is a run directory of format version ", version,
                "; this ctrax reads version ", kRunFormatVersion);
  const fs::path config = dir / "config.toml";
  return read_run_config(parse_config_file(config), config.string());
}

}  // namespace ctrax::tools
