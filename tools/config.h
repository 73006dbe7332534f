// Reading TOML configuration files strictly: every key is known, typed and range-checked.
//
// What it is for: the `ctrax` command's run configurations (tools/run_config.h, configs/). A
// ConfigTable wraps one TOML table; the reader asks for each key it understands with its type,
// default and allowed range, and finish() then rejects whatever was not asked for. Every error
// is a ctrax::Error that names the file, the line, the full key and what is allowed, e.g.
//   configs/ppo_cartpole.toml:14: policy.optimizer.b3: unknown key; allowed: b1, b2, eps, ...
// Defaults are written into the table as they are read, so after reading, the table is the
// resolved configuration (every effective value), which runs save beside their outputs.
//
// What it is not for: TOML parsing itself (toml++ does it) or deciding what the keys mean.
#pragma once

#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <toml++/toml.h>

namespace ctrax::tools {

// Configuration files larger than this are refused (the shipped ones are about 1 KiB).
inline constexpr uint64_t kMaxConfigBytes = uint64_t{1} << 20;
// Parses a TOML file: a regular file of at most kMaxConfigBytes. Anything else (missing, a
// directory, a FIFO or device, too large, a symbolic link loop, unreadable) or a syntax error
// throws ctrax::Error with the path and why (and the line and column of a syntax error).
toml::table parse_config_file(const std::filesystem::path& path);
// Parses TOML text (name is used in messages).
toml::table parse_config_text(const std::string& text, const std::string& name);

// "a, b, c": names as the messages and the docs list them.
std::string join_names(const std::vector<std::string>& names);

// The table as TOML text, every float written as the shortest decimal that reads back as the same
// double (0.9, not toml++'s 0.90000000000000002), so a run's config.toml reads as it was written.
std::string format_config(const toml::table& config);

// Applies "a.b.c=value" overrides (value in TOML syntax: 3e-4, true, "tanh", [64, 64]; a bare
// word that is not valid TOML is taken as a string). Tables on the way are created. Throws
// ctrax::Error for a malformed override or a path through a non-table value.
void apply_overrides(toml::table& config, const std::vector<std::string>& overrides);

// Removes "a.b.c" keys (--unset), so each takes its default again (a target_eval_return of none,
// say, which no --set can write). Throws ctrax::Error for a key the configuration does not set
// (a typo would otherwise change nothing) or a path through a non-table value.
void remove_keys(toml::table& config, const std::vector<std::string>& keys);

class ConfigTable {
 public:
  // `table` is read and completed with defaults; `path` is this table's dotted key ("" at the
  // root) and `file` the name used in messages.
  ConfigTable(toml::table& table, std::string file, std::string path = "");

  double number(const std::string& key, double fallback, double min = -std::numeric_limits<double>::infinity(),
                double max = std::numeric_limits<double>::infinity());
  std::optional<double> optional_number(const std::string& key, double min = -std::numeric_limits<double>::infinity(),
                                        double max = std::numeric_limits<double>::infinity());
  int64_t integer(const std::string& key, int64_t fallback, int64_t min = std::numeric_limits<int64_t>::min(),
                  int64_t max = std::numeric_limits<int64_t>::max());
  std::optional<int64_t> optional_integer(const std::string& key, int64_t min = std::numeric_limits<int64_t>::min(),
                                          int64_t max = std::numeric_limits<int64_t>::max());
  bool boolean(const std::string& key, bool fallback);
  std::string string(const std::string& key, const std::string& fallback);
  // A string among `allowed` (the message lists them).
  std::string choice(const std::string& key, const std::string& fallback, const std::vector<std::string>& allowed);
  std::optional<std::string> optional_choice(const std::string& key, const std::vector<std::string>& allowed);
  // Arrays of integers or numbers, each checked against the range.
  std::vector<int64_t> integers(const std::string& key, const std::vector<int64_t>& fallback, int64_t min, int64_t max);
  std::vector<double> numbers(const std::string& key, const std::vector<double>& fallback, double min, double max);
  // A sub-table (created empty when absent); a non-table value throws.
  ConfigTable table(const std::string& key);
  bool has(const std::string& key) const;
  // Whether `key` holds a table (for keys that take a value or a table).
  bool has_table(const std::string& key) const;

  // Throws for the first key that no getter asked for, listing the allowed ones.
  void finish() const;

  const std::string& file() const { return file_; }
  std::string key_path(const std::string& key) const;
  // "file:line: key: what" (the line of `key` when it has one, else of this table); `key` may be
  // dotted ("value.q_value") to name a key of a sub-table.
  [[noreturn]] void fail(const std::string& key, const std::string& what) const;

 private:
  toml::node* find(const std::string& key);

  toml::table* table_;
  std::string file_;
  std::string path_;
  std::set<std::string> known_;
};

}  // namespace ctrax::tools
