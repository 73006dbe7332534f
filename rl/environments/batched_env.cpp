// The batched classic-control environments (see batched_env.h).
#include "batched_env.h"

#include <cmath>
#include <utility>

#include "../../base/error.h"
#include "../../kernels/parallel.h"
#include "cartpole_vector_env.h"
#include "pendulum_vector_env.h"

namespace ctrax {

namespace batched_env_detail {

void uniform_f64(Key key, double lo, double hi, std::span<double> out) {
  const double range = hi - lo;
  const double below_hi = std::nextafter(hi, lo);
  for (size_t j = 0; j < out.size(); ++j) {
    const auto block = static_cast<uint32_t>(j / 2), half = static_cast<uint32_t>(j % 2);
    const std::array<uint32_t, 4> w = philox4x32_10({block, 0u, 0u, 0u}, key.words());
    const uint64_t bits = (uint64_t{w[2 * half]} << 32) | w[2 * half + 1];
    double x = lo + static_cast<double>(bits >> 11) * 0x1p-53 * range;
    if (x >= hi) x = below_hi;
    if (x < lo) x = lo;
    out[j] = x;
  }
}

}  // namespace batched_env_detail

namespace {

// Copies per parallel chunk. One copy-step costs some 40-60 ns (a sincos and a few divisions),
// so 512 copies are 20-30 microseconds: well above the microsecond or so of handing a chunk to
// a spinning worker, small enough that N = 1024 already uses two cores.
constexpr int64_t kStepGrain = 512;

}  // namespace

template <class Physics>
BatchedEnv<Physics>::BatchedEnv(int64_t num_envs, int64_t max_episode_steps, Params params, std::string name)
    : name_(std::move(name)),
      who_(detail::cat(name_, " (vector of ", num_envs, ")")),
      num_envs_(num_envs),
      max_episode_steps_(max_episode_steps),
      params_(params),
      observation_space_(Physics::observation_space(params)),
      action_space_(Physics::action_space(params)) {
  CTRAX_REQUIRE(num_envs >= 1, Physics::kClassName, ": num_envs must be >= 1, got ", num_envs);
  CTRAX_REQUIRE(max_episode_steps >= 0, Physics::kClassName,
                ": max_episode_steps must be >= 0 (0: no limit), got ", max_episode_steps);
  const auto n = static_cast<size_t>(num_envs);
  states_.assign(n, State{});
  caches_.assign(n, typename Physics::Cache{});
  elapsed_.assign(n, 0);
  episodes_.assign(n, 0);
  actions_.assign(n, Action{});
  keys_.reserve(n);
  // Never seeded: as if reset(seed = 0) (a lone environment behaves as if seeded with 0).
  for (size_t i = 0; i < n; ++i) keys_.emplace_back(static_cast<uint64_t>(i));
  const int64_t d = Physics::kObservationSize;
  out_.observations = zeros(Shape{num_envs, d}, DType::float32);
  out_.rewards = zeros(Shape{num_envs}, DType::float64);
  out_.terminated = zeros(Shape{num_envs}, DType::boolean);
  out_.truncated = zeros(Shape{num_envs}, DType::boolean);
  out_.final_observations = zeros(Shape{num_envs, d}, DType::float32);
  step_chunk_ = [this](int64_t begin, int64_t end) { step_range(begin, end); };
}

template <class Physics>
Tensor BatchedEnv<Physics>::reset(std::optional<uint64_t> seed) {
  float* observations = out_.observations.data<float>();
  for (int64_t i = 0; i < num_envs_; ++i) {
    if (seed) {
      keys_[i] = Key(*seed + static_cast<uint64_t>(i));  // wraps modulo 2^64, as Key(seed) takes any value
      episodes_[i] = 0;
    }
    states_[i] = Physics::initial_state(params_, fold_in(keys_[i], episodes_[i]++));
    elapsed_[i] = 0;
    Physics::write_observation(params_, states_[i], caches_[i], observations + Physics::kObservationSize * i);
  }
  out_.clear_results();
  ever_reset_ = true;
  return out_.observations.clone();
}

template <class Physics>
const VectorStep& BatchedEnv<Physics>::step(const Tensor& actions) {
  CTRAX_REQUIRE(ever_reset_, who(), ": step called before reset(); call reset() first");
  CTRAX_REQUIRE(actions.defined(), who(), ": the actions are an undefined tensor (expected ",
                Physics::expected_actions(num_envs_, action_space_), ")");
  CTRAX_REQUIRE(actions.device().is_cpu(), who(), ": the actions are on ", actions.device(),
                " (expected a CPU tensor)");
  // Every row is checked (and converted) before any copy moves, so a bad batch changes nothing.
  Physics::read_actions(actions, num_envs_, action_space_, who(), actions_.data());
  // Each copy is stepped by exactly one chunk and depends on nothing outside itself, so the
  // results are the same for any split and thread count.
  kernels::parallel_for(num_envs_, kStepGrain, step_chunk_);
  return out_;
}

template <class Physics>
void BatchedEnv<Physics>::step_range(int64_t begin, int64_t end) {
  // Plain pointers and the params by value: the compiler then knows the stores cannot change
  // the params and keeps them in registers across the loop.
  const Params params = params_;
  const int64_t limit = max_episode_steps_, d = Physics::kObservationSize;
  float* observations = out_.observations.data<float>();
  float* final_observations = out_.final_observations.data<float>();
  double* rewards = out_.rewards.data<double>();
  uint8_t* terminated = out_.terminated.data<uint8_t>();
  uint8_t* truncated = out_.truncated.data<uint8_t>();
  for (int64_t i = begin; i < end; ++i) {
    State& s = states_[i];
    typename Physics::Cache& cache = caches_[i];
    const auto outcome = Physics::step(params, s, cache, actions_[i]);
    const int64_t steps = ++elapsed_[i];
    const bool cut = limit > 0 && steps >= limit;
    rewards[i] = outcome.reward;
    terminated[i] = outcome.terminated;
    truncated[i] = cut;
    if (outcome.terminated || cut) {
      // Same-step auto-reset: keep the last observation, start the next episode as the single
      // environment's reset() would (its key is fold_in(Key(seed + i), episode number)).
      Physics::write_observation(params, s, cache, final_observations + d * i);
      s = Physics::initial_state(params, fold_in(keys_[i], episodes_[i]++));
      elapsed_[i] = 0;
    }
    Physics::write_observation(params, s, cache, observations + d * i);
  }
}

template <class Physics>
std::vector<double> BatchedEnv<Physics>::checkpoint_state() const {
  std::vector<double> out{static_cast<double>(Physics::kKind), static_cast<double>(num_envs_),
                          static_cast<double>(max_episode_steps_), ever_reset_ ? 1.0 : 0.0};
  for (size_t i = 0; i < states_.size(); ++i) {
    out.insert(out.end(), states_[i].begin(), states_[i].end());
    out.push_back(static_cast<double>(elapsed_[i]));
    append_key(out, keys_[i]);
    out.push_back(static_cast<double>(episodes_[i]));
  }
  append_vector_step(out, out_);
  return out;
}

template <class Physics>
void BatchedEnv<Physics>::restore_checkpoint_state(const std::vector<double>& state) {
  CheckpointStateReader in(state, who());
  const uint64_t kind = in.count("the kind");
  CTRAX_REQUIRE(kind == Physics::kKind, in.who(), ": restore_checkpoint_state: the state is of kind ", kind,
                vector_env_kind_name(kind), ", expected ", Physics::kKind, " (a ", Physics::kClassName, ")");
  const uint64_t copies = in.count("the number of copies");
  CTRAX_REQUIRE(copies == static_cast<uint64_t>(num_envs_), in.who(), ": restore_checkpoint_state: the state holds ",
                copies, " copies, this vector environment has ", num_envs_);
  const uint64_t limit = in.count("max_episode_steps");
  CTRAX_REQUIRE(limit == static_cast<uint64_t>(max_episode_steps_), in.who(),
                ": restore_checkpoint_state: the state is of a time limit of ", limit,
                " steps, this vector environment has max_episode_steps ", max_episode_steps_);
  const bool ever_reset = in.flag("the ever-reset flag");
  const auto n = static_cast<size_t>(num_envs_);
  std::vector<State> states(n);
  std::vector<int64_t> elapsed(n);
  std::vector<Key> keys(n);
  std::vector<uint64_t> episodes(n);
  for (size_t i = 0; i < n; ++i) {
    const std::string copy = detail::cat("copy ", i, "'s ");
    const std::vector<double> s = in.numbers(states[i].size(), copy + "state");
    std::copy(s.begin(), s.end(), states[i].begin());
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

template <class Physics>
void BatchedEnv<Physics>::check_index(int64_t i, const char* what) const {
  CTRAX_REQUIRE(i >= 0 && i < num_envs_, who(), ": ", what, ": copy index ", i, " is out of range (expected 0 <= i < ",
                num_envs_, ")");
}

template <class Physics>
std::vector<double> BatchedEnv<Physics>::state(int64_t i) const {
  check_index(i, "state");
  const State& s = states_[static_cast<size_t>(i)];
  return {s.begin(), s.end()};
}

template <class Physics>
int64_t BatchedEnv<Physics>::elapsed_steps(int64_t i) const {
  check_index(i, "elapsed_steps");
  return elapsed_[static_cast<size_t>(i)];
}

template <class Physics>
void BatchedEnv<Physics>::set_state(int64_t i, const std::vector<double>& state) {
  check_index(i, "set_state");
  CTRAX_REQUIRE(ever_reset_, who(), ": set_state called before reset(); call reset() first");
  State& s = states_[static_cast<size_t>(i)];
  CTRAX_REQUIRE(state.size() == s.size(), who(), ": set_state expects ", s.size(), " values, got ", state.size());
  for (size_t k = 0; k < s.size(); ++k)
    CTRAX_REQUIRE(std::isfinite(state[k]), who(), ": set_state: value ", k, " is ", state[k],
                  " (expected a finite number)");
  std::copy(state.begin(), state.end(), s.begin());
  elapsed_[static_cast<size_t>(i)] = 0;
  Physics::write_observation(params_, s, caches_[static_cast<size_t>(i)],
                             out_.observations.data<float>() + Physics::kObservationSize * i);
}

template class BatchedEnv<CartPolePhysics>;
template class BatchedEnv<PendulumPhysics>;

}  // namespace ctrax
