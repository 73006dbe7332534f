// The batched CartPole (see cartpole_vector_env.h).
#include "cartpole_vector_env.h"

#include <cmath>
#include <limits>
#include <utility>

#include "../../base/error.h"
#include "../../kernels/parallel.h"
#include "classic_control/classic_control.h"

namespace ctrax {

namespace {

// Copies per parallel chunk. One copy-step costs some 40-60 ns (sincos and three dependent
// divisions), so 512 copies are 20-30 microseconds: well above the microsecond or so of
// handing a chunk to a spinning worker, small enough that N = 1024 already uses two cores.
constexpr int64_t kStepGrain = 512;

// cartpole_initial_state(key) without the tensor it builds, so that an auto-reset allocates
// nothing: uniform(key, {4}, float64, -0.05, 0.05) exactly as tensor/random.cpp draws it.
// 64-bit draw j is words 2(j % 2) (high) and 2(j % 2) + 1 (low) of the Philox block
// j / 2 at counter {j / 2, 0, 0, 0} (purpose 0: samples); u = (top 53 bits) * 2^-53;
// x = lo + u (hi - lo), kept in [lo, hi). The tests check it against cartpole_initial_state
// bit for bit, so a change of the sampler's layout cannot slip by.
std::array<double, 4> initial_state(Key key) {
  constexpr double lo = -0.05, hi = 0.05;
  const double range = hi - lo;
  const double below_hi = std::nextafter(hi, lo);
  std::array<double, 4> state{};
  for (uint32_t block = 0; block < 2; ++block) {
    const std::array<uint32_t, 4> w = philox4x32_10({block, 0u, 0u, 0u}, key.words());
    for (uint32_t half = 0; half < 2; ++half) {
      const uint64_t bits = (uint64_t{w[2 * half]} << 32) | w[2 * half + 1];
      double x = lo + static_cast<double>(bits >> 11) * 0x1p-53 * range;
      if (x >= hi) x = below_hi;
      if (x < lo) x = lo;
      state[2 * block + half] = x;
    }
  }
  return state;
}

// NumPy's float64 -> float32 cast, as CartPoleEnv's observation (float32_observation): round
// to nearest, and beyond float32's range infinity (a plain cast would be undefined there).
inline float to_float32(double v) {
  constexpr double kOverflow = 3.4028235677973366e38;
  constexpr float kInf = std::numeric_limits<float>::infinity();
  return !(std::abs(v) >= kOverflow) ? static_cast<float>(v) : (v > 0 ? kInf : -kInf);
}

inline void write_observation(float* row, const std::array<double, 4>& s) {
  for (int k = 0; k < 4; ++k) row[k] = to_float32(s[k]);
}

// What one chunk of a step reads and writes. Plain pointers into the member arrays and the
// output tensors, and the params by value: the compiler then knows the stores cannot change
// the params and keeps them in registers across the loop.
struct StepBatch {
  CartPoleParams params;
  int64_t limit;
  std::array<double, 4>* states;
  int64_t* elapsed;
  const Key* keys;
  uint64_t* episodes;
  float* observations;
  double* rewards;
  uint8_t* terminated;
  uint8_t* truncated;
  float* final_observations;
};

template <typename A>
void step_copies(const StepBatch& b, const A* actions, int64_t stride, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    std::array<double, 4>& s = b.states[i];
    const CartPoleStepOutcome outcome = cartpole_step(b.params, s, static_cast<int64_t>(actions[i * stride]));
    const int64_t steps = ++b.elapsed[i];
    const bool truncated = b.limit > 0 && steps >= b.limit;
    b.rewards[i] = outcome.reward;
    b.terminated[i] = outcome.terminated;
    b.truncated[i] = truncated;
    if (outcome.terminated || truncated) {
      // Same-step auto-reset: keep the last observation, start the next episode as
      // CartPoleEnv::reset() would (its key is fold_in(Key(seed + i), episode number)).
      write_observation(b.final_observations + 4 * i, s);
      s = initial_state(fold_in(b.keys[i], b.episodes[i]++));
      b.elapsed[i] = 0;
    }
    write_observation(b.observations + 4 * i, s);
  }
}

}  // namespace

CartPoleVectorEnv::CartPoleVectorEnv(int64_t num_envs, int64_t max_episode_steps, CartPoleParams params,
                                     std::string name)
    : name_(std::move(name)),
      num_envs_(num_envs),
      max_episode_steps_(max_episode_steps),
      params_(params),
      // A single CartPoleEnv is the one definition of the spaces (its bounds follow params).
      observation_space_(CartPoleEnv(params).observation_space()),
      action_space_(Space::discrete(2)) {
  CTRAX_REQUIRE(num_envs >= 1, "CartPoleVectorEnv: num_envs must be >= 1, got ", num_envs);
  CTRAX_REQUIRE(max_episode_steps >= 0, "CartPoleVectorEnv: max_episode_steps must be >= 0 (0: no limit), got ",
                max_episode_steps);
  const auto n = static_cast<size_t>(num_envs);
  states_.assign(n, {});
  elapsed_.assign(n, 0);
  episodes_.assign(n, 0);
  keys_.reserve(n);
  // Never seeded: as if reset(seed = 0) (a lone CartPoleEnv behaves as if seeded with 0).
  for (size_t i = 0; i < n; ++i) keys_.emplace_back(static_cast<uint64_t>(i));
  out_.observations = zeros(Shape{num_envs, 4}, DType::float32);
  out_.rewards = zeros(Shape{num_envs}, DType::float64);
  out_.terminated = zeros(Shape{num_envs}, DType::boolean);
  out_.truncated = zeros(Shape{num_envs}, DType::boolean);
  out_.final_observations = zeros(Shape{num_envs, 4}, DType::float32);
  step_chunk_ = [this](int64_t begin, int64_t end) { step_range(begin, end); };
}

Tensor CartPoleVectorEnv::reset(std::optional<uint64_t> seed) {
  float* observations = out_.observations.data<float>();
  for (int64_t i = 0; i < num_envs_; ++i) {
    if (seed) {
      keys_[i] = Key(*seed + static_cast<uint64_t>(i));  // wraps modulo 2^64, as Key(seed) takes any value
      episodes_[i] = 0;
    }
    states_[i] = initial_state(fold_in(keys_[i], episodes_[i]++));
    elapsed_[i] = 0;
    write_observation(observations + 4 * i, states_[i]);
  }
  out_.rewards.fill_(0.0);
  out_.terminated.fill_(0.0);
  out_.truncated.fill_(0.0);
  out_.final_observations.fill_(0.0);
  ever_reset_ = true;
  return out_.observations.clone();
}

const VectorStep& CartPoleVectorEnv::step(const Tensor& actions) {
  CTRAX_REQUIRE(ever_reset_, name_, " (vector of ", num_envs_, "): step called before reset(); call reset() first");
  CTRAX_REQUIRE(actions.defined(), name_, " (vector of ", num_envs_,
                "): the actions are an undefined tensor (expected int64 of shape [", num_envs_, "])");
  CTRAX_REQUIRE(actions.device().is_cpu(), name_, " (vector of ", num_envs_, "): the actions are on ",
                actions.device(), " (expected a CPU tensor)");
  CTRAX_REQUIRE(is_integer(actions.dtype()), name_, " (vector of ", num_envs_, "): the actions have dtype ",
                actions.dtype(), " (expected int32 or int64 for the action space ", action_space_, ")");
  CTRAX_REQUIRE(actions.shape() == Shape{num_envs_}, name_, " (vector of ", num_envs_,
                "): the actions have shape ", actions.shape(), " (expected [", num_envs_, "], one per copy)");
  actions_int32_ = actions.dtype() == DType::int32;
  actions_ = actions.raw_data();
  action_stride_ = actions.strides()[0];
  // Every value is checked before any copy moves, so a bad batch changes nothing.
  auto check = [&](const auto* a) {
    for (int64_t i = 0; i < num_envs_; ++i) {
      const auto v = a[i * action_stride_];
      CTRAX_REQUIRE(v == 0 || v == 1, name_, " (vector of ", num_envs_, "): actions[", i, "] is ",
                    static_cast<int64_t>(v), " (expected 0 or 1)");
    }
  };
  if (actions_int32_) {
    check(static_cast<const int32_t*>(actions_));
  } else {
    check(static_cast<const int64_t*>(actions_));
  }
  // Each copy is stepped by exactly one chunk and depends on nothing outside itself, so the
  // results are the same for any split and thread count.
  kernels::parallel_for(num_envs_, kStepGrain, step_chunk_);
  actions_ = nullptr;
  return out_;
}

void CartPoleVectorEnv::step_range(int64_t begin, int64_t end) {
  const StepBatch batch{params_,
                        max_episode_steps_,
                        states_.data(),
                        elapsed_.data(),
                        keys_.data(),
                        episodes_.data(),
                        out_.observations.data<float>(),
                        out_.rewards.data<double>(),
                        out_.terminated.data<uint8_t>(),
                        out_.truncated.data<uint8_t>(),
                        out_.final_observations.data<float>()};
  if (actions_int32_) {
    step_copies(batch, static_cast<const int32_t*>(actions_), action_stride_, begin, end);
  } else {
    step_copies(batch, static_cast<const int64_t*>(actions_), action_stride_, begin, end);
  }
}

std::vector<double> CartPoleVectorEnv::checkpoint_state() const {
  std::vector<double> out{2.0, static_cast<double>(num_envs_), static_cast<double>(max_episode_steps_),
                          ever_reset_ ? 1.0 : 0.0};
  for (size_t i = 0; i < states_.size(); ++i) {
    out.insert(out.end(), states_[i].begin(), states_[i].end());
    out.push_back(static_cast<double>(elapsed_[i]));
    append_key(out, keys_[i]);
    out.push_back(static_cast<double>(episodes_[i]));
  }
  append_vector_step(out, out_);
  return out;
}

void CartPoleVectorEnv::restore_checkpoint_state(const std::vector<double>& state) {
  CheckpointStateReader in(state, detail::cat(name_, " (vector of ", num_envs_, ")"));
  const uint64_t kind = in.count("the kind");
  CTRAX_REQUIRE(kind == 2, in.who(), ": restore_checkpoint_state: the state is of kind ", kind,
                kind == 1 ? " (a SyncVectorEnv)" : "", ", expected 2 (a CartPoleVectorEnv)");
  const uint64_t copies = in.count("the number of copies");
  CTRAX_REQUIRE(copies == static_cast<uint64_t>(num_envs_), in.who(), ": restore_checkpoint_state: the state holds ",
                copies, " copies, this vector environment has ", num_envs_);
  const uint64_t limit = in.count("max_episode_steps");
  CTRAX_REQUIRE(limit == static_cast<uint64_t>(max_episode_steps_), in.who(),
                ": restore_checkpoint_state: the state is of a time limit of ", limit,
                " steps, this vector environment has max_episode_steps ", max_episode_steps_);
  const bool ever_reset = in.flag("the ever-reset flag");
  const auto n = static_cast<size_t>(num_envs_);
  std::vector<std::array<double, 4>> states(n);
  std::vector<int64_t> elapsed(n);
  std::vector<Key> keys(n);
  std::vector<uint64_t> episodes(n);
  for (size_t i = 0; i < n; ++i) {
    const std::string copy = detail::cat("copy ", i, "'s ");
    const std::vector<double> s = in.numbers(4, copy + "state");
    states[i] = {s[0], s[1], s[2], s[3]};
    // A copy is reset on the step that reaches the limit, so between steps elapsed < limit.
    elapsed[i] = static_cast<int64_t>(in.count(copy + "elapsed steps", limit > 0 ? limit - 1 : uint64_t{1} << 53));
    keys[i] = in.key(copy + "key");
    episodes[i] = in.count(copy + "episode count");
  }
  const VectorStep last = read_vector_step(in, out_);
  in.finish();
  states_ = std::move(states);
  elapsed_ = std::move(elapsed);
  keys_ = std::move(keys);
  episodes_ = std::move(episodes);
  ever_reset_ = ever_reset;
  assign_vector_step(out_, last);
}

void CartPoleVectorEnv::check_index(int64_t i, const char* what) const {
  CTRAX_REQUIRE(i >= 0 && i < num_envs_, name_, " (vector of ", num_envs_, "): ", what, ": copy index ", i,
                " is out of range (expected 0 <= i < ", num_envs_, ")");
}

std::vector<double> CartPoleVectorEnv::state(int64_t i) const {
  check_index(i, "state");
  const std::array<double, 4>& s = states_[static_cast<size_t>(i)];
  return {s.begin(), s.end()};
}

int64_t CartPoleVectorEnv::elapsed_steps(int64_t i) const {
  check_index(i, "elapsed_steps");
  return elapsed_[static_cast<size_t>(i)];
}

void CartPoleVectorEnv::set_state(int64_t i, const std::vector<double>& state) {
  check_index(i, "set_state");
  CTRAX_REQUIRE(ever_reset_, name_, " (vector of ", num_envs_, "): set_state called before reset(); call reset() first");
  CTRAX_REQUIRE(state.size() == 4, name_, " (vector of ", num_envs_, "): set_state expects 4 values, got ",
                state.size());
  for (size_t k = 0; k < 4; ++k)
    CTRAX_REQUIRE(std::isfinite(state[k]), name_, " (vector of ", num_envs_, "): set_state: value ", k, " is ",
                  state[k], " (expected a finite number)");
  std::array<double, 4>& s = states_[static_cast<size_t>(i)];
  for (size_t k = 0; k < 4; ++k) s[k] = state[k];
  elapsed_[static_cast<size_t>(i)] = 0;
  write_observation(out_.observations.data<float>() + 4 * i, s);
}

}  // namespace ctrax
