// Strict TOML configuration reading: see config.h.
#include "config.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>

#include <ctrax/io/atomic_file.h>
#include <ctrax/base/error.h>

namespace ctrax::tools {

std::string join_names(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

namespace {

// How a value reads in a message: its TOML text.
std::string describe(const toml::node& node) {
  std::ostringstream s;
  node.visit([&](const auto& value) { s << value; });
  std::string text = s.str();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

const char* type_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a number";
    case toml::node_type::boolean: return "a boolean";
    default: return "a date or time";
  }
}

}  // namespace

toml::table parse_config_file(const std::filesystem::path& path) {
  // io::read_file refuses anything but a regular file before reading a byte (a directory, a
  // FIFO that would block, /dev/zero that would fill memory) and files over the limit; its
  // message names the path and the system's reason (no such file, a symbolic link loop, ...).
  std::string text;
  try {
    text = io::read_file(path, kMaxConfigBytes);
  } catch (const Error& e) {
    CTRAX_THROW("cannot read the configuration file ", e.what());
  }
  return parse_config_text(text, path.string());
}

toml::table parse_config_text(const std::string& text, const std::string& name) {
  try {
    return toml::parse(std::string_view(text), std::string_view(name));
  } catch (const toml::parse_error& e) {
    CTRAX_REQUIRE(false, name, ":", e.source().begin.line, ":", e.source().begin.column, ": ", e.description());
  }
  return {};
}

void apply_overrides(toml::table& config, const std::vector<std::string>& overrides) {
  for (const std::string& item : overrides) {
    const size_t eq = item.find('=');
    CTRAX_REQUIRE(eq != std::string::npos && eq > 0, "--set ", item, ": expected key=value, e.g. seed=3");
    const std::string key = item.substr(0, eq);
    const std::string text = item.substr(eq + 1);
    std::vector<std::string> parts;
    std::stringstream split(key);
    for (std::string part; std::getline(split, part, '.');) {
      CTRAX_REQUIRE(!part.empty(), "--set ", item, ": the key ", key, " has an empty part");
      parts.push_back(part);
    }
    // The value as TOML; a bare word such as tanh or CartPole-v1 is taken as a string.
    toml::table parsed;
    try {
      parsed = toml::parse(std::string_view("value = " + text), std::string_view("--set"));
    } catch (const toml::parse_error&) {
      CTRAX_REQUIRE(text.find_first_of("\"'[]{}=\n") == std::string::npos && !text.empty(), "--set ", item,
                    ": ", text, " is not a TOML value");
      parsed.insert_or_assign("value", text);
    }
    toml::table* at = &config;
    std::string walked;
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      walked += (walked.empty() ? "" : ".") + parts[i];
      toml::node* next = at->get(parts[i]);
      if (next == nullptr) {
        at->insert_or_assign(parts[i], toml::table{});
        next = at->get(parts[i]);
      }
      CTRAX_REQUIRE(next->is_table(), "--set ", item, ": ", walked, " is ", type_name(*next), ", not a table");
      at = next->as_table();
    }
    at->insert_or_assign(parts.back(), *parsed.get("value"));
  }
}

void remove_keys(toml::table& config, const std::vector<std::string>& keys) {
  for (const std::string& key : keys) {
    toml::table* at = &config;
    std::string walked;
    size_t start = 0;
    while (true) {
      const size_t dot = key.find('.', start);
      const std::string part = key.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      CTRAX_REQUIRE(!part.empty(), "--unset ", key, ": the key has an empty part");
      walked += (walked.empty() ? "" : ".") + part;
      toml::node* node = at->get(part);
      CTRAX_REQUIRE(node != nullptr, "--unset ", key, ": the configuration does not set ", walked);
      if (dot == std::string::npos) {
        at->erase(part);
        break;
      }
      CTRAX_REQUIRE(node->is_table(), "--unset ", key, ": ", walked, " is ", type_name(*node), ", not a table");
      at = node->as_table();
      start = dot + 1;
    }
  }
}

ConfigTable::ConfigTable(toml::table& table, std::string file, std::string path)
    : table_(&table), file_(std::move(file)), path_(std::move(path)) {}

std::string ConfigTable::key_path(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

void ConfigTable::fail(const std::string& key, const std::string& what) const {
  // A dotted key ("value.q_value") names a key of a sub-table.
  const toml::node* node = key.find('.') == std::string::npos ? table_->get(key) : table_->at_path(key).node();
  const toml::source_region& where = node != nullptr && node->source().begin.line > 0 ? node->source() : table_->source();
  std::ostringstream s;
  s << file_;
  if (where.begin.line > 0) s << ":" << where.begin.line;
  s << ": " << (key.empty() ? (path_.empty() ? std::string("(top level)") : path_) : key_path(key)) << ": " << what;
  throw Error(s.str());
}

bool ConfigTable::has(const std::string& key) const { return table_->contains(key); }

bool ConfigTable::has_table(const std::string& key) const {
  const toml::node* node = table_->get(key);
  return node != nullptr && node->is_table();
}

toml::node* ConfigTable::find(const std::string& key) {
  known_.insert(key);
  return table_->get(key);
}

double ConfigTable::number(const std::string& key, double fallback, double min, double max) {
  std::optional<double> v = optional_number(key, min, max);
  if (v) return *v;
  table_->insert_or_assign(key, fallback);
  return fallback;
}

std::optional<double> ConfigTable::optional_number(const std::string& key, double min, double max) {
  toml::node* node = find(key);
  if (node == nullptr) return std::nullopt;
  if (!node->is_number()) fail(key, std::string("expected a number, got ") + type_name(*node) + " " + describe(*node));
  const double v = node->is_integer() ? static_cast<double>(node->as_integer()->get()) : node->as_floating_point()->get();
  if (!std::isfinite(v)) {
    std::ostringstream text;
    text << "expected a finite number, got " << v;
    fail(key, text.str());
  }
  if (!(v >= min && v <= max)) {
    std::ostringstream range;
    range << "expected a number in [" << min << ", " << max << "], got " << v;
    fail(key, range.str());
  }
  return v;
}

int64_t ConfigTable::integer(const std::string& key, int64_t fallback, int64_t min, int64_t max) {
  std::optional<int64_t> v = optional_integer(key, min, max);
  if (v) return *v;
  table_->insert_or_assign(key, fallback);
  return fallback;
}

std::optional<int64_t> ConfigTable::optional_integer(const std::string& key, int64_t min, int64_t max) {
  toml::node* node = find(key);
  if (node == nullptr) return std::nullopt;
  if (!node->is_integer())
    fail(key, std::string("expected an integer, got ") + type_name(*node) + " " + describe(*node));
  const int64_t v = node->as_integer()->get();
  if (v < min || v > max) {
    std::ostringstream range;
    range << "expected an integer in [" << min << ", " << max << "], got " << v;
    fail(key, range.str());
  }
  return v;
}

bool ConfigTable::boolean(const std::string& key, bool fallback) {
  toml::node* node = find(key);
  if (node == nullptr) {
    table_->insert_or_assign(key, fallback);
    return fallback;
  }
  if (!node->is_boolean())
    fail(key, std::string("expected true or false, got ") + type_name(*node) + " " + describe(*node));
  return node->as_boolean()->get();
}

std::string ConfigTable::string(const std::string& key, const std::string& fallback) {
  toml::node* node = find(key);
  if (node == nullptr) {
    table_->insert_or_assign(key, fallback);
    return fallback;
  }
  if (!node->is_string()) fail(key, std::string("expected a string, got ") + type_name(*node) + " " + describe(*node));
  return node->as_string()->get();
}

std::string ConfigTable::choice(const std::string& key, const std::string& fallback,
                                const std::vector<std::string>& allowed) {
  std::optional<std::string> v = optional_choice(key, allowed);
  if (v) return *v;
  table_->insert_or_assign(key, fallback);
  return fallback;
}

std::optional<std::string> ConfigTable::optional_choice(const std::string& key,
                                                        const std::vector<std::string>& allowed) {
  toml::node* node = find(key);
  if (node == nullptr) return std::nullopt;
  if (!node->is_string())
    fail(key, std::string("expected one of ") + join_names(allowed) + ", got " + type_name(*node) + " " + describe(*node));
  const std::string v = node->as_string()->get();
  for (const std::string& a : allowed)
    if (a == v) return v;
  fail(key, "expected one of " + join_names(allowed) + ", got \"" + v + "\"");
}

std::vector<int64_t> ConfigTable::integers(const std::string& key, const std::vector<int64_t>& fallback, int64_t min,
                                           int64_t max) {
  toml::node* node = find(key);
  if (node == nullptr) {
    toml::array a;
    for (int64_t v : fallback) a.push_back(v);
    table_->insert_or_assign(key, std::move(a));
    return fallback;
  }
  if (!node->is_array())
    fail(key, std::string("expected an array of integers, got ") + type_name(*node) + " " + describe(*node));
  std::vector<int64_t> out;
  for (const toml::node& item : *node->as_array()) {
    if (!item.is_integer() || item.as_integer()->get() < min || item.as_integer()->get() > max) {
      std::ostringstream range;
      range << "expected an array of integers in [" << min << ", " << max << "], got " << describe(*node);
      fail(key, range.str());
    }
    out.push_back(item.as_integer()->get());
  }
  return out;
}

std::vector<double> ConfigTable::numbers(const std::string& key, const std::vector<double>& fallback, double min,
                                         double max) {
  toml::node* node = find(key);
  if (node == nullptr) {
    toml::array a;
    for (double v : fallback) a.push_back(v);
    table_->insert_or_assign(key, std::move(a));
    return fallback;
  }
  if (!node->is_array())
    fail(key, std::string("expected an array of numbers, got ") + type_name(*node) + " " + describe(*node));
  std::vector<double> out;
  for (const toml::node& item : *node->as_array()) {
    const double v = item.is_integer()          ? static_cast<double>(item.as_integer()->get())
                     : item.is_floating_point() ? item.as_floating_point()->get()
                                                : std::nan("");
    if (!(std::isfinite(v) && v >= min && v <= max)) {
      std::ostringstream range;
      range << "expected an array of numbers in [" << min << ", " << max << "], got " << describe(*node);
      fail(key, range.str());
    }
    out.push_back(v);
  }
  return out;
}

ConfigTable ConfigTable::table(const std::string& key) {
  toml::node* node = find(key);
  if (node == nullptr) {
    table_->insert_or_assign(key, toml::table{});
    node = table_->get(key);
  }
  if (!node->is_table()) fail(key, std::string("expected a table, got ") + type_name(*node) + " " + describe(*node));
  return ConfigTable(*node->as_table(), file_, key_path(key));
}

void ConfigTable::finish() const {
  for (const auto& [key, node] : *table_) {
    const std::string name(key.str());
    if (known_.count(name) == 0) {
      std::vector<std::string> allowed(known_.begin(), known_.end());
      fail(name, "unknown key; allowed here: " + (allowed.empty() ? std::string("none") : join_names(allowed)));
    }
  }
}

namespace {

// `token` (a float as toml++ wrote it, with 17 significant digits) as the shortest decimal that
// reads back as the same double, kept a TOML float (".0" added to a whole number); other tokens
// are returned as they are.
std::string shortest_float(const std::string& token) {
  if (token.find_first_of(".eE") == std::string::npos) return token;  // an integer
  double value = 0;
  const auto [end, error] = std::from_chars(token.data(), token.data() + token.size(), value);
  if (error != std::errc() || end != token.data() + token.size() || !std::isfinite(value)) return token;
  char buffer[64];
  const auto [out, out_error] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  if (out_error != std::errc()) return token;
  std::string shortest(buffer, out);
  if (shortest.find_first_of(".e") == std::string::npos) shortest += ".0";
  return shortest;
}

}  // namespace

std::string format_config(const toml::table& config) {
  std::ostringstream raw;
  raw << config;
  const std::string text = raw.str();
  // Rewrite the number tokens that stand as values (after '=', '[', '{' or ','), skipping strings.
  std::string out;
  out.reserve(text.size());
  char last = '\n';  // the last non-space character copied
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (c == '"' || c == '\'') {  // a string: copied as it is, escapes included
      size_t j = i + 1;
      while (j < text.size() && text[j] != c) j += (c == '"' && text[j] == '\\') ? 2 : 1;
      j = std::min(j + 1, text.size());
      out.append(text, i, j - i);
      last = c;
      i = j;
      continue;
    }
    const bool value_start = last == '=' || last == '[' || last == '{' || last == ',';
    if (value_start && (std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+')) {
      size_t j = i;
      while (j < text.size() && (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '.' ||
                                 text[j] == '-' || text[j] == '+' || text[j] == '_'))
        ++j;
      out += shortest_float(text.substr(i, j - i));
      last = '0';
      i = j;
      continue;
    }
    out += c;
    if (!std::isspace(static_cast<unsigned char>(c))) last = c;
    ++i;
  }
  return out;
}

}  // namespace ctrax::tools
