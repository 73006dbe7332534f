// Option tables: see option_table.h. Here: how values and ranges read in the docs.
#include "option_table.h"

#include <charconv>
#include <cmath>

namespace ctrax::tools {

std::string config_text(double value) {
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (std::isnan(value)) return "nan";
  char buffer[64];
  const auto [end, error] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  std::string text = error == std::errc() ? std::string(buffer, end) : std::to_string(value);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";  // a TOML float
  return text;
}

std::string config_text(int64_t value) { return std::to_string(value); }

std::string config_text(bool value) { return value ? "true" : "false"; }

namespace {

template <class T>
std::string list_text(const std::vector<T>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + config_text(values[i]);
  return out + "]";
}

}  // namespace

std::string config_text(const std::vector<double>& values) { return list_text(values); }
std::string config_text(const std::vector<int64_t>& values) { return list_text(values); }

std::string range_text(double min, double max) {
  const bool low = std::isfinite(min), high = std::isfinite(max);
  if (low && high) return "[" + config_text(min) + ", " + config_text(max) + "]";
  if (low) return ">= " + config_text(min);
  if (high) return "<= " + config_text(max);
  return "any";
}

std::string range_text(int64_t min, int64_t max) {
  const bool low = min > std::numeric_limits<int64_t>::min(), high = max < kAnyCount;
  if (low && high) return std::to_string(min) + " to " + std::to_string(max);
  if (low) return ">= " + std::to_string(min);
  if (high) return "<= " + std::to_string(max);
  return "any";
}

}  // namespace ctrax::tools
