// ctrax::Error and the checks that raise it.
//
// What it is for: the single error type of the library. API misuse (a bad shape, an
// unpromotable dtype, an out-of-range axis) throws ctrax::Error with a message that
// names the op, what it got and what it expected. Internal invariants use CTRAX_CHECK,
// which stays on in release builds and also throws (library code never exits or aborts,
// so a test or an embedding program can always recover).
//
// What it is not for: control flow. Nothing in a hot loop should throw.
//
// It lives in base/, below every other folder (base <- kernels <- tensor <- ...), so that every
// layer can use it without including upward.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace ctrax {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

namespace detail {
// Concatenates anything that has an operator<< into one string.
template <typename... Args>
std::string cat(Args&&... args) {
  std::ostringstream out;
  (out << ... << std::forward<Args>(args));
  return out.str();
}

[[noreturn]] inline void internal_check_failed(const char* condition, const char* file, int line,
                                               const std::string& detail) {
  throw Error(cat("ctrax internal error: check `", condition, "` failed at ", file, ":", line,
                  detail.empty() ? "" : ": ", detail));
}
}  // namespace detail

// Throws ctrax::Error built from the arguments, e.g. CTRAX_THROW("add: shapes ", a, " and ", b, ...).
#define CTRAX_THROW(...) throw ::ctrax::Error(::ctrax::detail::cat(__VA_ARGS__))

// API-misuse check: when `cond` is false, throws ctrax::Error whose message is the rest of the
// arguments concatenated. Use for everything a caller can get wrong.
#define CTRAX_REQUIRE(cond, ...)            \
  do {                                      \
    if (!(cond)) [[unlikely]] {             \
      CTRAX_THROW(__VA_ARGS__);             \
    }                                       \
  } while (0)

// Internal invariant: on in every build type; reports the condition, file and line.
#define CTRAX_CHECK(cond, ...)                                                              \
  do {                                                                                      \
    if (!(cond)) [[unlikely]] {                                                             \
      ::ctrax::detail::internal_check_failed(#cond, __FILE__, __LINE__,                     \
                                             ::ctrax::detail::cat("" __VA_OPT__(, ) __VA_ARGS__)); \
    }                                                                                       \
  } while (0)

}  // namespace ctrax
