// Option tables: one row per configuration key of an options struct (its key, the member it
// sets, its type and range, a one-line meaning), the default taken from the struct itself.
//
// One table drives three things, so they cannot drift apart: the config reader (each row asks
// its ConfigTable for the key, then finish() refuses any other), `ctrax list keys` and the
// generated docs/configs.md (tools/config_reference.h). A row may apply only when the rows read
// before it say so (only_if); given otherwise, its key is refused with the row's requirement.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config.h"

namespace ctrax::tools {

// One key as documented: `ctrax list keys` and docs/configs.md print these.
struct KeyDoc {
  std::string key;
  std::string type;           // "integer", "number", "boolean", "string", "numbers", "integers", "table"
  std::string default_value;  // as TOML text; "none" for an optional key left out
  std::string allowed;        // the range or the choices
  std::string meaning;        // one line
};

// The text of a value as a config writes it (numbers as their shortest round-trip decimal).
std::string config_text(double value);
std::string config_text(int64_t value);
std::string config_text(bool value);
std::string config_text(const std::vector<double>& values);
std::string config_text(const std::vector<int64_t>& values);
// "[0, 1]", ">= 1", "any": how a range reads in the docs.
std::string range_text(double min, double max);
std::string range_text(int64_t min, int64_t max);

inline constexpr double kAnyNumber = std::numeric_limits<double>::infinity();
inline constexpr int64_t kAnyCount = int64_t{1} << 40;  // "any sensible count"

template <class Options>
class OptionTable {
 public:
  using Reader = std::function<void(ConfigTable&, Options&)>;
  using Condition = std::function<bool(const Options&)>;

  OptionTable& integer(std::string key, int64_t Options::*member, int64_t min, int64_t max, std::string meaning) {
    return add({key, "integer", "", range_text(min, max), std::move(meaning)},
               [member](const Options& o) { return config_text(o.*member); },
               [=](ConfigTable& t, Options& o) { o.*member = t.integer(key, o.*member, min, max); });
  }
  OptionTable& integer(std::string key, int Options::*member, int min, int max, std::string meaning) {
    return add({key, "integer", "", range_text(int64_t{min}, int64_t{max}), std::move(meaning)},
               [member](const Options& o) { return config_text(int64_t{o.*member}); },
               [=](ConfigTable& t, Options& o) {
                 o.*member = static_cast<int>(t.integer(key, o.*member, min, max));
               });
  }
  OptionTable& number(std::string key, double Options::*member, double min, double max, std::string meaning) {
    return add({key, "number", "", range_text(min, max), std::move(meaning)},
               [member](const Options& o) { return config_text(o.*member); },
               [=](ConfigTable& t, Options& o) { o.*member = t.number(key, o.*member, min, max); });
  }
  OptionTable& boolean(std::string key, bool Options::*member, std::string meaning) {
    return add({key, "boolean", "", "true, false", std::move(meaning)},
               [member](const Options& o) { return config_text(o.*member); },
               [=](ConfigTable& t, Options& o) { o.*member = t.boolean(key, o.*member); });
  }
  // An optional key: left out, the member keeps the struct's value (none unless it says otherwise).
  OptionTable& optional_integer(std::string key, std::optional<int64_t> Options::*member, int64_t min, int64_t max,
                                std::string meaning) {
    return add({key, "integer", "", range_text(min, max), std::move(meaning)},
               [member](const Options& o) { return o.*member ? config_text(*(o.*member)) : "none"; },
               [=](ConfigTable& t, Options& o) {
                 const std::string k = key;
                 if (t.has(k) || !(o.*member)) o.*member = t.optional_integer(k, min, max);
                 else o.*member = t.integer(k, *(o.*member), min, max);
               });
  }
  OptionTable& optional_number(std::string key, std::optional<double> Options::*member, double min, double max,
                               std::string meaning) {
    return add({key, "number", "", range_text(min, max), std::move(meaning)},
               [member](const Options& o) { return o.*member ? config_text(*(o.*member)) : "none"; },
               [=](ConfigTable& t, Options& o) {
                 const std::string k = key;
                 if (t.has(k) || !(o.*member)) o.*member = t.optional_number(k, min, max);
                 else o.*member = t.number(k, *(o.*member), min, max);
               });
  }
  OptionTable& numbers(std::string key, std::vector<double> Options::*member, double min, double max,
                       std::string meaning) {
    return add({key, "numbers", "", "each " + range_text(min, max), std::move(meaning)},
               [member](const Options& o) { return config_text(o.*member); },
               [=](ConfigTable& t, Options& o) { o.*member = t.numbers(key, o.*member, min, max); });
  }
  OptionTable& integers(std::string key, std::vector<int64_t> Options::*member, int64_t min, int64_t max,
                        std::string meaning) {
    return add({key, "integers", "", "each " + range_text(min, max), std::move(meaning)},
               [member](const Options& o) { return config_text(o.*member); },
               [=](ConfigTable& t, Options& o) { o.*member = t.integers(key, o.*member, min, max); });
  }
  // A string naming one of `names`' values (an enum, a flag...).
  template <class Value>
  OptionTable& choice(std::string key, Value Options::*member, std::vector<std::pair<std::string, Value>> names,
                      std::string meaning) {
    std::string allowed;
    for (const auto& [name, value] : names) allowed += (allowed.empty() ? "" : ", ") + name;
    return add({key, "string", "", allowed, std::move(meaning)},
               [member, names](const Options& o) { return "\"" + name_in(names, o.*member) + "\""; },
               [key, member, names](ConfigTable& t, Options& o) {
                 std::vector<std::string> allowed_names;
                 for (const auto& [name, value] : names) allowed_names.push_back(name);
                 const std::string got = t.choice(key, name_in(names, o.*member), allowed_names);
                 for (const auto& [name, value] : names)
                   if (name == got) o.*member = value;
               });
  }
  // A key read by its own code (its doc is written by hand; default_value may depend on `o`).
  OptionTable& custom(KeyDoc doc, std::function<std::string(const Options&)> default_value, Reader read) {
    return add(std::move(doc), std::move(default_value), std::move(read));
  }
  // The row just added applies only when `applies(options read so far)`; otherwise giving its
  // key fails with `requirement` (e.g. "applies to rollout passes: give value.rollout_passes").
  // `when` says the condition in the docs ("with value.rollout_passes").
  OptionTable& only_if(Condition applies, std::string requirement, std::string when) {
    rows_.back().applies = std::move(applies);
    rows_.back().requirement = std::move(requirement);
    rows_.back().when = std::move(when);
    return *this;
  }

  // Reads every row into `o` (whose values are the defaults) in order; the caller calls finish().
  void read(ConfigTable& t, Options& o) const {
    for (const Row& row : rows_) {
      if (row.applies && !row.applies(o)) {
        if (t.has(row.doc.key)) t.fail(row.doc.key, row.requirement);
        continue;
      }
      row.read(t, o);
    }
  }
  // The rows' docs, with the defaults of `defaults`.
  std::vector<KeyDoc> docs(const Options& defaults = Options{}) const {
    std::vector<KeyDoc> out;
    for (const Row& row : rows_) {
      KeyDoc doc = row.doc;
      doc.default_value = row.default_value(defaults);
      if (row.applies) doc.meaning += " (" + row.when + ")";
      out.push_back(std::move(doc));
    }
    return out;
  }

 private:
  struct Row {
    KeyDoc doc;
    std::function<std::string(const Options&)> default_value;
    Reader read;
    Condition applies;
    std::string requirement, when;
  };

  OptionTable& add(KeyDoc doc, std::function<std::string(const Options&)> default_value, Reader read) {
    rows_.push_back({std::move(doc), std::move(default_value), std::move(read), nullptr, "", ""});
    return *this;
  }
  template <class Value>
  static std::string name_in(const std::vector<std::pair<std::string, Value>>& names, const Value& value) {
    for (const auto& [name, v] : names)
      if (v == value) return name;
    return names.front().first;
  }

  std::vector<Row> rows_;
};

}  // namespace ctrax::tools
