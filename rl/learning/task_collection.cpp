// RLTask's collection (see task.h): training collections store pieces; evaluation collections
// only count whole episodes. Both step all N copies with one policy call per step.
#include <cmath>
#include <cstring>
#include <utility>

#include "../../base/error.h"
#include "../../tensor/ops.h"
#include "task.h"
#include "task_detail.h"

namespace ctrax {

using task_detail::prefixed;
using task_detail::seed_of;

namespace {

void check_collect_options(const CollectPolicy& policy, const CollectOptions& o) {
  const char* who = "RLTask::collect_trajectories";
  CTRAX_REQUIRE(static_cast<bool>(policy), who, ": the policy is empty");
  CTRAX_REQUIRE(o.n_trajectories.has_value() != o.n_interactions.has_value(), who,
                ": give exactly one of n_trajectories and n_interactions, got ", o.n_trajectories ? "both" : "neither");
  CTRAX_REQUIRE(!o.n_trajectories || *o.n_trajectories >= 1, who, ": n_trajectories must be >= 1, got ",
                *o.n_trajectories);
  CTRAX_REQUIRE(!o.n_interactions || *o.n_interactions >= 1, who, ": n_interactions must be >= 1, got ",
                *o.n_interactions);
  CTRAX_REQUIRE(!o.max_steps || *o.max_steps >= 1, who, ": max_steps must be >= 1, got ", *o.max_steps);
  CTRAX_REQUIRE(o.epoch >= 0, who, ": epoch must be >= 0, got ", o.epoch);
  CTRAX_REQUIRE(std::isfinite(o.temperature) && o.temperature >= 0.0, who, ": temperature must be >= 0, got ",
                o.temperature);
  CTRAX_REQUIRE(!o.eval_seed || o.only_eval, who, ": eval_seed applies to evaluation (only_eval) only");
  CTRAX_REQUIRE(!o.eval_envs || o.eval_seed, who,
                ": eval_envs applies to a seeded evaluation (only_eval with eval_seed) only");
  CTRAX_REQUIRE(!o.eval_envs || *o.eval_envs >= 1, who, ": eval_envs must be >= 1, got ", *o.eval_envs);
}

// When a collection stops, and which closed pieces count: with n_trajectories, copy i counts
// its first quota[i] pieces (docs/rl.md, "Collection": the first pieces of every copy, so that
// short episodes are not favoured); with n_interactions, every closed piece counts.
class EpisodeQuota {
 public:
  EpisodeQuota(const CollectOptions& o, int64_t n) : quota_(static_cast<size_t>(n), 0), closed_(quota_.size(), 0) {
    if (o.n_trajectories) {
      for (int64_t i = 0; i < n; ++i)
        quota_[static_cast<size_t>(i)] = *o.n_trajectories / n + (i < *o.n_trajectories % n ? 1 : 0);
    } else {
      step_limit_ = (*o.n_interactions + n - 1) / n;
    }
  }
  bool done(int64_t steps) const {
    if (step_limit_) return steps >= *step_limit_;
    for (size_t i = 0; i < closed_.size(); ++i)
      if (closed_[i] < quota_[i]) return false;
    return true;
  }
  void close(int64_t copy, double total_return, int64_t length) {
    const auto i = static_cast<size_t>(copy);
    if (!step_limit_ && closed_[i] >= quota_[i]) return;
    returns.push_back(total_return);
    lengths.push_back(length);
    closed_[i] += 1;
  }
  std::vector<double> returns;  // the counted pieces', in the order they closed
  std::vector<int64_t> lengths;

 private:
  std::vector<int64_t> quota_, closed_;
  std::optional<int64_t> step_limit_;
};

CollectStats summarize(EpisodeQuota& counted, int64_t steps, int64_t n) {
  CollectStats stats;
  stats.n_trajectories = static_cast<int64_t>(counted.returns.size());
  stats.n_interactions = steps * n;
  if (!counted.returns.empty()) {
    int64_t length = 0;
    for (double x : counted.returns) stats.mean_return += x;
    for (int64_t x : counted.lengths) length += x;
    stats.mean_return /= static_cast<double>(counted.returns.size());
    stats.mean_length = static_cast<double>(length) / static_cast<double>(counted.returns.size());
  }
  stats.returns = std::move(counted.returns);
  stats.lengths = std::move(counted.lengths);
  return stats;
}

// Whether `t` is already a contiguous tensor of `dtype` (a conversion would only copy handles).
bool in_form(const Tensor& t, DType dtype) { return t.defined() && t.dtype() == dtype && t.is_contiguous(); }

// `t` as a contiguous tensor of `dtype`: t itself when it is one already (VectorEnv::step's
// documented dtypes, as the environments here return them), else a converted copy in `copy`.
// Referring in place saves two tensor copies per field and step.
const Tensor& contiguous_as(const Tensor& t, DType dtype, Tensor& copy) {
  if (in_form(t, dtype)) return t;  // (an undefined one throws below)
  copy = t.to(dtype).contiguous();
  return copy;
}

// One environment step's results as contiguous CPU rows, read where the step left them (the
// VectorStep outlives this object: it is valid until the environment's next step).
class HostStep {
 public:
  explicit HostStep(const VectorStep& st)
      : rewards_(contiguous_as(st.rewards, DType::float64, copies_[0]).data<double>()),
        terminated_(contiguous_as(st.terminated, DType::boolean, copies_[1]).data<uint8_t>()),
        truncated_(contiguous_as(st.truncated, DType::boolean, copies_[2]).data<uint8_t>()),
        next_observations_(&contiguous_as(st.observations, st.observations.dtype(), copies_[3])),
        final_observations_(&contiguous_as(st.final_observations, st.final_observations.dtype(), copies_[4])) {}
  HostStep(const HostStep&) = delete;  // a copy would point into this one's copies_
  HostStep& operator=(const HostStep&) = delete;
  double reward(int64_t i) const { return rewards_[i]; }
  bool term(int64_t i) const { return terminated_[i] != 0; }
  bool trunc(int64_t i) const { return truncated_[i] != 0; }
  bool ended(int64_t i) const { return term(i) || trunc(i); }
  const Tensor& next_observations() const { return *next_observations_; }
  const Tensor& final_observations() const { return *final_observations_; }

 private:
  Tensor copies_[5];  // the conversions, for the fields that needed one (declared first: built first)
  const double* rewards_;
  const uint8_t *terminated_, *truncated_;
  const Tensor *next_observations_, *final_observations_;
};

// The part of one copy's episode collected so far, as raw rows (observations o_0..o_t).
struct Piece {
  std::vector<unsigned char> observations;
  std::vector<unsigned char> actions;
  std::vector<double> rewards;
  std::vector<float> dist_inputs;
  int64_t steps = 0;
  double total_return = 0.0;
  // Empty again for the copy's next piece, keeping the buffers' capacity: a closed piece has
  // been copied into its Trajectory, and an episode's rows need not grow the buffers again.
  void restart() {
    observations.clear();
    actions.clear();
    rewards.clear();
    dist_inputs.clear();
    steps = 0;
    total_return = 0.0;
  }
};

// Builds pieces row by row and turns a closed one into a Trajectory.
class PieceRows {
 public:
  PieceRows(const VectorEnv& env, DType obs_dtype, double gamma)
      : obs_dtype_(obs_dtype),
        obs_shape_(env.single_observation_space().shape()),
        obs_bytes_(static_cast<size_t>(obs_shape_.numel()) * dtype_size(obs_dtype)),
        actions_(env.single_action_space()),
        act_bytes_(static_cast<size_t>(actions_.shape().numel()) * dtype_size(actions_.dtype())),
        gamma_(gamma) {}
  void add_observation(Piece& p, const Tensor& batch, int64_t i) const { append(p.observations, batch, i, obs_bytes_); }
  void add_step(Piece& p, const PolicyOutput& out, int64_t i, int64_t d, double reward) const {
    append(p.actions, out.actions, i, act_bytes_);
    p.rewards.push_back(reward);
    const float* row = out.dist_inputs.data<float>() + i * d;
    p.dist_inputs.insert(p.dist_inputs.end(), row, row + d);
  }
  Trajectory close(const Piece& p, int64_t d, bool terminated, bool truncated) const {
    TrajectoryData data;
    data.observations = from_bytes(p.observations, prefixed({p.steps + 1}, obs_shape_), obs_dtype_);
    data.actions = from_bytes(p.actions, prefixed({p.steps}, actions_.shape()), actions_.dtype());
    data.rewards = from_vector(p.rewards);
    data.dist_inputs = from_vector(p.dist_inputs, Shape{p.steps, d});
    data.terminated = terminated;
    data.truncated = truncated;
    return Trajectory(data, gamma_);
  }

 private:
  static void append(std::vector<unsigned char>& to, const Tensor& batch, int64_t row, size_t bytes) {
    const auto* from = static_cast<const unsigned char*>(batch.raw_data()) + static_cast<size_t>(row) * bytes;
    to.insert(to.end(), from, from + bytes);
  }
  static Tensor from_bytes(const std::vector<unsigned char>& bytes, const Shape& shape, DType dtype) {
    Tensor out(shape, dtype);
    CTRAX_CHECK(static_cast<size_t>(out.numel()) * out.element_size() == bytes.size(), "RLTask: a piece's buffer has ",
                bytes.size(), " bytes for shape ", shape);
    if (!bytes.empty()) std::memcpy(out.raw_data(), bytes.data(), bytes.size());
    return out;
  }

  DType obs_dtype_;
  Shape obs_shape_;
  size_t obs_bytes_;
  const Space& actions_;
  size_t act_bytes_;
  double gamma_;
};

}  // namespace

PolicyOutput RLTask::checked_policy_output(PolicyOutput out, int64_t n) {
  const char* who = "RLTask::collect_trajectories";
  const Space& space = action_space();
  const Shape expected = prefixed({n}, space.shape());
  CTRAX_REQUIRE(out.actions.defined(), who, ": the policy returned undefined actions (expected shape ", expected,
                ")");
  CTRAX_REQUIRE(out.actions.shape() == expected, who, ": the policy returned actions of shape ", out.actions.shape(),
                ", expected [N, ...action shape] = ", expected, " for N = ", n, " copies and the action space ",
                space);
  const bool box = space.kind() == Space::Kind::box;
  CTRAX_REQUIRE(box ? is_floating(out.actions.dtype()) : is_integer(out.actions.dtype()), who,
                ": the policy returned actions of dtype ", out.actions.dtype(), ", expected ",
                box ? "a floating dtype" : "an integer dtype", " for the action space ", space);
  CTRAX_REQUIRE(out.actions.device().is_cpu(), who, ": the policy returned actions on ", out.actions.device(),
                " (expected CPU tensors)");
  CTRAX_REQUIRE(out.dist_inputs.defined(), who,
                ": the policy returned undefined dist_inputs (expected [N, D]; [N, 0] when there are none)");
  CTRAX_REQUIRE(out.dist_inputs.rank() == 2 && out.dist_inputs.shape()[0] == n &&
                    is_floating(out.dist_inputs.dtype()),
                who, ": the policy returned dist_inputs of shape ", out.dist_inputs.shape(), " and dtype ",
                out.dist_inputs.dtype(), ", expected floating [N, D] with N = ", n);
  CTRAX_REQUIRE(out.dist_inputs.device().is_cpu(), who, ": the policy returned dist_inputs on ",
                out.dist_inputs.device(), " (expected CPU tensors)");
  // (Only when needed: a conversion of a tensor already in form is still two handle copies.)
  if (!in_form(out.actions, space.dtype())) out.actions = out.actions.to(space.dtype()).contiguous();
  if (!in_form(out.dist_inputs, DType::float32)) out.dist_inputs = out.dist_inputs.to(DType::float32).contiguous();
  return out;
}

CollectStats RLTask::collect_trajectories(const CollectPolicy& policy, const CollectOptions& o) {
  check_collect_options(policy, o);
  return o.only_eval ? collect_evaluation(policy, o) : collect_training(policy, o);
}

RLTask::CollectionKeys RLTask::next_collection_keys(const CollectOptions& o) {
  using namespace task_detail;
  // An explicitly seeded evaluation leaves the counter alone (CollectOptions::eval_seed); its
  // policy keys come from the seed, under a tag of their own.
  if (o.eval_seed) return {fold_in(fold_in(options_.key, kEvaluationSeeds), *o.eval_seed), *o.eval_seed};
  const uint64_t collection = n_collections_++;
  return {fold_in(fold_in(options_.key, kPolicyKeys), collection),
          seed_of(fold_in(fold_in(options_.key, kEvalEnvSeeds), collection))};
}

PolicyOutput RLTask::policy_step(const CollectPolicy& policy, const Tensor& observations, Key collection_key,
                                 int64_t step, double temperature, int64_t& d, bool training) {
  const char* who = "RLTask::collect_trajectories";
  const int64_t n = observations.shape()[0];
  const Key key = fold_in(collection_key, static_cast<uint64_t>(step));
  PolicyOutput out = checked_policy_output(policy(observations, key, temperature), n);
  const int64_t out_d = out.dist_inputs.shape()[1];
  if (d < 0) {  // the collection's first step fixes its D
    CTRAX_REQUIRE(out_d == 0 || n_dist_inputs_ == 0 || out_d == n_dist_inputs_, who, ": the policy returned ", out_d,
                  " dist_inputs per copy, earlier policies of this task ", n_dist_inputs_);
    d = out_d;
    if (d > 0 && training) n_dist_inputs_ = d;
  }
  CTRAX_REQUIRE(out_d == d, who, ": the policy returned ", out_d, " dist_inputs per copy at step ", step,
                " of this collection, ", d, " before");
  return out;
}

VectorEnv& RLTask::evaluation_env(const CollectOptions& o) {
  if (!o.eval_envs || *o.eval_envs == options_.n_eval_envs) return *eval_env_;
  if (!seeded_eval_env_ || seeded_eval_env_->num_envs() != *o.eval_envs) {
    seeded_eval_env_.reset();  // one width kept at a time
    VectorEnvPtr env = make_env_(*o.eval_envs, options_.time_limit);
    CTRAX_REQUIRE(env != nullptr && env->num_envs() == *o.eval_envs,
                  "RLTask::collect_trajectories: the vector environment factory made ", env ? env->num_envs() : 0,
                  " copies when asked for eval_envs = ", *o.eval_envs);
    CTRAX_REQUIRE(env->single_observation_space() == eval_env_->single_observation_space() &&
                      env->single_action_space() == eval_env_->single_action_space(),
                  "RLTask::collect_trajectories: the vector environment factory made ", env->name(), " copies for eval_envs = ",
                  *o.eval_envs, " whose spaces differ from the task's ", env_name_);
    seeded_eval_env_ = std::move(env);
  }
  return *seeded_eval_env_;
}

CollectStats RLTask::collect_evaluation(const CollectPolicy& policy, const CollectOptions& o) {
  const CollectionKeys keys = next_collection_keys(o);
  const std::optional<int64_t> cap = o.max_steps ? o.max_steps : options_.max_steps;
  VectorEnv& env = evaluation_env(o);
  const int64_t n = env.num_envs();
  Tensor obs = env.reset(keys.reset_seed);
  EpisodeQuota quota(o, n);
  std::vector<int64_t> length(static_cast<size_t>(n), 0);
  std::vector<double> total(static_cast<size_t>(n), 0.0);
  std::vector<bool> waiting(static_cast<size_t>(n), false);  // a cut episode plays out uncounted
  int64_t d = -1, steps = 0;
  while (!quota.done(steps)) {
    const PolicyOutput out = policy_step(policy, obs, keys.policy_key, steps, o.temperature, d, false);
    const VectorStep& st = env.step(out.actions);
    ++steps;
    const HostStep h(st);
    for (int64_t i = 0; i < n; ++i) {
      const auto ui = static_cast<size_t>(i);
      if (waiting[ui]) {
        waiting[ui] = !h.ended(i);
        continue;
      }
      length[ui] += 1;
      total[ui] += h.reward(i);
      const bool cut = !h.ended(i) && cap && length[ui] >= *cap;
      if (!h.ended(i) && !cut) continue;
      quota.close(i, total[ui], length[ui]);
      length[ui] = 0;
      total[ui] = 0.0;
      waiting[ui] = cut;
    }
    obs = st.observations;
  }
  return summarize(quota, steps, n);
}

CollectStats RLTask::collect_training(const CollectPolicy& policy, const CollectOptions& o) {
  const CollectionKeys keys = next_collection_keys(o);
  const std::optional<int64_t> cap = o.max_steps ? o.max_steps : options_.max_steps;
  VectorEnv& env = *env_;
  const int64_t n = env.num_envs();
  if (interrupted_) {
    observations_ = env.reset(keys.reset_seed).clone();
    std::fill(episode_return_.begin(), episode_return_.end(), 0.0);
    std::fill(episode_length_.begin(), episode_length_.end(), 0);
  }
  Tensor obs = observations_;
  interrupted_ = true;
  EpisodeQuota quota(o, n);
  const PieceRows rows(env, obs.dtype(), options_.gamma);
  std::vector<Piece> pieces(static_cast<size_t>(n));
  const Tensor first = obs.contiguous();
  for (int64_t i = 0; i < n; ++i) rows.add_observation(pieces[static_cast<size_t>(i)], first, i);
  std::vector<double> episode_returns, episode_return = episode_return_;  // committed on success
  std::vector<int64_t> episode_lengths, episode_length = episode_length_;
  std::vector<Trajectory> stored;
  int64_t d = -1, steps = 0;
  while (!quota.done(steps)) {
    const PolicyOutput out = policy_step(policy, obs, keys.policy_key, steps, o.temperature, d, true);
    const VectorStep& st = env.step(out.actions);
    ++steps;
    const HostStep h(st);
    for (int64_t i = 0; i < n; ++i) {
      const auto ui = static_cast<size_t>(i);
      Piece& p = pieces[ui];
      p.steps += 1;
      p.total_return += h.reward(i);
      episode_return[ui] += h.reward(i);
      episode_length[ui] += 1;
      if (h.ended(i)) {
        episode_returns.push_back(std::exchange(episode_return[ui], 0.0));
        episode_lengths.push_back(std::exchange(episode_length[ui], 0));
      }
      rows.add_step(p, out, i, d, h.reward(i));
      const bool cut = !h.ended(i) && cap && p.steps >= *cap;
      if (!h.ended(i) && !cut) {
        rows.add_observation(p, h.next_observations(), i);
        continue;
      }
      quota.close(i, p.total_return, p.steps);
      rows.add_observation(p, h.ended(i) ? h.final_observations() : h.next_observations(), i);
      stored.push_back(rows.close(p, d, h.term(i), h.trunc(i)));
      // The next piece starts where the copy is now: the new episode's first observation after
      // an auto-reset, or the same observation after a cut.
      p.restart();
      rows.add_observation(p, h.next_observations(), i);
    }
    obs = st.observations;
  }
  // Open pieces are stored as cut; their episodes continue in the next collection from the
  // copies' current observations.
  for (const Piece& p : pieces)
    if (p.steps > 0) stored.push_back(rows.close(p, d, false, false));
  CollectStats stats = summarize(quota, steps, n);
  stats.episode_returns = std::move(episode_returns);
  stats.episode_lengths = std::move(episode_lengths);
  episode_return_ = std::move(episode_return);
  episode_length_ = std::move(episode_length);
  observations_ = obs.clone();
  interrupted_ = false;
  store(o.epoch, std::move(stored));
  n_trajectories_ += stats.n_trajectories;
  n_interactions_ += stats.n_interactions;
  return stats;
}

}  // namespace ctrax
