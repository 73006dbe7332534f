// Env's checkpoint defaults and the CheckpointStateReader (see env.h).
#include "env.h"

#include <algorithm>
#include <cmath>

#include "../../base/error.h"

namespace ctrax {

// ---- Checkpoints --------------------------------------------------------------------------------

std::vector<double> Env::checkpoint_state() const {
  throw CheckpointNotSupported(detail::cat(name(), ": this environment does not support checkpoints; implement "
                                                   "checkpoint_state and restore_checkpoint_state (rl/environments/env.h)"));
}

void Env::restore_checkpoint_state(const std::vector<double>&) {
  throw CheckpointNotSupported(detail::cat(name(), ": this environment does not support checkpoints; implement "
                                                   "checkpoint_state and restore_checkpoint_state (rl/environments/env.h)"));
}

void append_key(std::vector<double>& state, Key key) {
  state.push_back(static_cast<double>(key.words()[0]));
  state.push_back(static_cast<double>(key.words()[1]));
}

CheckpointStateReader::CheckpointStateReader(const std::vector<double>& state, std::string who)
    : state_(state), who_(std::move(who)) {}

void CheckpointStateReader::need(size_t n, const std::string& what) const {
  CTRAX_REQUIRE(remaining() >= n, who_, ": restore_checkpoint_state: the state has ", state_.size(),
                " values, too few for ", what, " (", n, " at index ", next_,
                "): it comes from another environment or was cut short");
}

double CheckpointStateReader::value(const std::string& what) {
  need(1, what);
  return state_[next_++];
}

double CheckpointStateReader::number(const std::string& what) {
  const double v = value(what);
  CTRAX_REQUIRE(std::isfinite(v), who_, ": restore_checkpoint_state: ", what, " (index ", next_ - 1, ") is ", v,
                " (expected a finite number)");
  return v;
}

uint64_t CheckpointStateReader::count(const std::string& what, uint64_t max) {
  const double v = value(what);
  // 2^53 and below: every whole double there is an integer the cast reproduces exactly.
  const double limit = static_cast<double>(std::min(max, uint64_t{1} << 53));
  CTRAX_REQUIRE(v >= 0 && v <= limit && std::floor(v) == v, who_, ": restore_checkpoint_state: ", what, " (index ",
                next_ - 1, ") is ", v, " (expected a whole number in [0, ", static_cast<uint64_t>(limit), "])");
  return static_cast<uint64_t>(v);
}

bool CheckpointStateReader::flag(const std::string& what) {
  const double v = value(what);
  CTRAX_REQUIRE(v == 0.0 || v == 1.0, who_, ": restore_checkpoint_state: ", what, " (index ", next_ - 1, ") is ", v,
                " (expected a flag, 0 or 1)");
  return v == 1.0;
}

Key CheckpointStateReader::key(const std::string& what) {
  const uint64_t w0 = count(what, 0xffffffffULL);
  const uint64_t w1 = count(what, 0xffffffffULL);
  return Key(static_cast<uint32_t>(w0), static_cast<uint32_t>(w1));
}

std::vector<double> CheckpointStateReader::numbers(size_t n, const std::string& what, bool finite) {
  need(n, what);
  std::vector<double> out(state_.begin() + static_cast<std::ptrdiff_t>(next_),
                          state_.begin() + static_cast<std::ptrdiff_t>(next_ + n));
  if (finite) {
    for (size_t i = 0; i < n; ++i)
      CTRAX_REQUIRE(std::isfinite(out[i]), who_, ": restore_checkpoint_state: ", what, " value ", i, " (index ",
                    next_ + i, ") is ", out[i], " (expected a finite number)");
  }
  next_ += n;
  return out;
}

std::vector<double> CheckpointStateReader::rest() { return numbers(remaining(), "the rest", /*finite=*/false); }

void CheckpointStateReader::finish() const {
  CTRAX_REQUIRE(remaining() == 0, who_, ": restore_checkpoint_state: the state has ", state_.size(),
                " values, expected ", next_, ": it comes from another environment or has extra values");
}

}  // namespace ctrax
