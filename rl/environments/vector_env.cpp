// SyncVectorEnv and make_vector_env (see vector_env.h).
#include "vector_env.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "../../base/error.h"

namespace ctrax {

namespace {

Shape batch_shape(int64_t n, const Shape& single) {
  Shape shape = single;
  shape.insert(0, n);
  return shape;
}

// Copies one environment's observation into row i of `batch`, after checking that it is what
// the observation space promises (the batch tensor has that dtype and shape).
void copy_row(const Env& env, int64_t i, const Tensor& observation, const Tensor& batch) {
  const Space& space = env.observation_space();
  CTRAX_REQUIRE(observation.defined(), "SyncVectorEnv: copy ", i, " (", env.name(),
                ") returned an undefined observation tensor");
  CTRAX_REQUIRE(observation.dtype() == space.dtype() && observation.shape() == space.shape(), "SyncVectorEnv: copy ",
                i, " (", env.name(), ") returned an observation of dtype ", observation.dtype(), " and shape ",
                observation.shape(), " (expected dtype ", space.dtype(), " and shape ", space.shape(),
                " from its observation space)");
  CTRAX_REQUIRE(observation.device().is_cpu(), "SyncVectorEnv: copy ", i, " returned an observation on ",
                observation.device(), " (expected a CPU tensor)");
  const Tensor source = observation.contiguous();
  const size_t bytes = static_cast<size_t>(source.numel()) * source.element_size();
  std::memcpy(static_cast<char*>(batch.raw_data()) + static_cast<size_t>(i) * bytes, source.raw_data(), bytes);
}

// The values of `count` entries read from `in` for a tensor of `dtype`, each exactly
// representable there (so that writing them back reproduces the tensor bit for bit).
std::vector<double> read_exact(CheckpointStateReader& in, size_t count, DType dtype, const std::string& what) {
  const std::vector<double> v = in.numbers(count, what, /*finite=*/false);
  for (size_t j = 0; j < v.size(); ++j) {
    const double x = v[j];
    bool exact = true;
    switch (dtype) {
      case DType::float64: break;
      case DType::float32:
        // (A finite double beyond float32's range has no float32; casting it would be undefined.)
        exact = std::isnan(x) || std::isinf(x) ||
                (std::abs(x) <= 3.4028234663852886e38 && static_cast<double>(static_cast<float>(x)) == x);
        break;
      case DType::int32: exact = std::floor(x) == x && x >= -2147483648.0 && x <= 2147483647.0; break;
      case DType::int64: exact = std::floor(x) == x && std::abs(x) <= 9007199254740992.0; break;
      case DType::boolean: exact = x == 0.0 || x == 1.0; break;
    }
    CTRAX_REQUIRE(exact, in.who(), ": restore_checkpoint_state: ", what, " value ", j, " is ", x, " (expected a ",
                  dtype_name(dtype), " value)");
  }
  return v;
}

Tensor tensor_like(const std::vector<double>& values, const Tensor& like) {
  return from_vector(values, like.shape()).to(like.dtype());
}

}  // namespace

// ---- Checkpoints --------------------------------------------------------------------------------

std::vector<double> VectorEnv::checkpoint_state() const {
  throw CheckpointNotSupported(detail::cat(name(), ": this vector environment does not support checkpoints; "
                                                   "implement checkpoint_state and restore_checkpoint_state "
                                                   "(rl/environments/vector_env.h)"));
}

void VectorEnv::restore_checkpoint_state(const std::vector<double>&) {
  throw CheckpointNotSupported(detail::cat(name(), ": this vector environment does not support checkpoints; "
                                                   "implement checkpoint_state and restore_checkpoint_state "
                                                   "(rl/environments/vector_env.h)"));
}

void append_vector_step(std::vector<double>& state, const VectorStep& step) {
  for (const Tensor* t :
       {&step.observations, &step.final_observations, &step.rewards, &step.terminated, &step.truncated}) {
    const std::vector<double> v = t->to_vector<double>();
    state.insert(state.end(), v.begin(), v.end());
  }
}

std::string vector_env_kind_name(uint64_t kind) {
  switch (kind) {
    case 1: return " (a SyncVectorEnv)";
    case 2: return " (a CartPoleVectorEnv)";
    case 3: return " (a PendulumVectorEnv)";
    default: return "";
  }
}

VectorStep read_vector_step(CheckpointStateReader& in, const VectorStep& like) {
  auto read = [&](const Tensor& t, const std::string& what) {
    return tensor_like(read_exact(in, static_cast<size_t>(t.numel()), t.dtype(), what), t);
  };
  VectorStep out;
  out.observations = read(like.observations, "the last step's observations");
  out.final_observations = read(like.final_observations, "the last step's final observations");
  out.rewards = read(like.rewards, "the last step's rewards");
  out.terminated = read(like.terminated, "the last step's terminated flags");
  out.truncated = read(like.truncated, "the last step's truncated flags");
  return out;
}

void assign_vector_step(VectorStep& to, const VectorStep& from) {
  to.observations.copy_(from.observations);
  to.final_observations.copy_(from.final_observations);
  to.rewards.copy_(from.rewards);
  to.terminated.copy_(from.terminated);
  to.truncated.copy_(from.truncated);
}

SyncVectorEnv::SyncVectorEnv(const std::function<EnvPtr()>& make, int64_t num_envs) {
  CTRAX_REQUIRE(static_cast<bool>(make), "SyncVectorEnv: the environment factory is empty");
  CTRAX_REQUIRE(num_envs >= 1, "SyncVectorEnv: num_envs must be >= 1, got ", num_envs);
  envs_.reserve(static_cast<size_t>(num_envs));
  for (int64_t i = 0; i < num_envs; ++i) {
    EnvPtr env = make();
    CTRAX_REQUIRE(env != nullptr, "SyncVectorEnv: the factory returned a null environment for copy ", i);
    if (!envs_.empty()) {
      // One batch tensor holds every copy's observation, and one tensor every action.
      const Env& first = *envs_.front();
      CTRAX_REQUIRE(env->observation_space() == first.observation_space(), "SyncVectorEnv: copy ", i,
                    " has the observation space ", env->observation_space(), ", copy 0 ", first.observation_space(),
                    " (all copies must have the same spaces)");
      CTRAX_REQUIRE(env->action_space() == first.action_space(), "SyncVectorEnv: copy ", i, " has the action space ",
                    env->action_space(), ", copy 0 ", first.action_space(), " (all copies must have the same spaces)");
    }
    envs_.push_back(std::move(env));
  }
  const Space& obs = envs_.front()->observation_space();
  out_.observations = zeros(batch_shape(num_envs, obs.shape()), obs.dtype());
  out_.rewards = zeros(Shape{num_envs}, DType::float64);
  out_.terminated = zeros(Shape{num_envs}, DType::boolean);
  out_.truncated = zeros(Shape{num_envs}, DType::boolean);
  out_.final_observations = zeros(batch_shape(num_envs, obs.shape()), obs.dtype());
}

std::string SyncVectorEnv::name() const { return envs_.front()->name(); }

Tensor SyncVectorEnv::reset(std::optional<uint64_t> seed) {
  for (size_t i = 0; i < envs_.size(); ++i) {
    // Copy i gets seed + i; the first reset without a seed counts as seed 0, so that the
    // copies differ (an environment that was never seeded behaves as if seeded with 0, and N
    // copies of that would be N copies of one trajectory).
    std::optional<uint64_t> copy_seed;
    if (seed) {
      copy_seed = *seed + i;
    } else if (!ever_reset_) {
      copy_seed = static_cast<uint64_t>(i);
    }
    copy_row(*envs_[i], static_cast<int64_t>(i), envs_[i]->reset(copy_seed), out_.observations);
  }
  out_.clear_results();
  ever_reset_ = true;
  return out_.observations.clone();
}

const VectorStep& SyncVectorEnv::step(const Tensor& actions) {
  const auto n = static_cast<int64_t>(envs_.size());
  CTRAX_REQUIRE(ever_reset_, "SyncVectorEnv (", name(), " x ", n, "): step called before reset(); call reset() first");
  CTRAX_REQUIRE(actions.defined() && actions.shape().rank() >= 1 && actions.shape()[0] == n, "SyncVectorEnv (",
                name(), " x ", n, "): the actions have shape ", actions.defined() ? actions.shape() : Shape{},
                actions.defined() ? "" : " (undefined)", " (expected [", n, ", ...action shape ",
                single_action_space().shape(), "], one row per copy)");
  // A bad discrete action is the usual mistake: catch it before any copy moves.
  if (single_action_space().kind() != Space::Kind::box) {
    for (int64_t i = 0; i < n; ++i)
      CTRAX_REQUIRE(single_action_space().contains(actions.select(0, i)), "SyncVectorEnv (", name(), " x ", n,
                    "): actions[", i, "] = ", actions.select(0, i), " is not in the action space ",
                    single_action_space());
  }
  double* rewards = out_.rewards.data<double>();
  uint8_t* terminated = out_.terminated.data<uint8_t>();
  uint8_t* truncated = out_.truncated.data<uint8_t>();
  for (int64_t i = 0; i < n; ++i) {
    Env& env = *envs_[static_cast<size_t>(i)];
    const StepResult result = env.step(actions.select(0, i));
    rewards[i] = result.reward;
    terminated[i] = result.terminated;
    truncated[i] = result.truncated;
    if (result.terminated || result.truncated) {
      copy_row(env, i, result.observation, out_.final_observations);
      copy_row(env, i, env.reset(), out_.observations);
    } else {
      copy_row(env, i, result.observation, out_.observations);
    }
  }
  return out_;
}

std::vector<double> SyncVectorEnv::checkpoint_state() const {
  const Space& obs = single_observation_space();
  std::vector<double> out{1.0, static_cast<double>(envs_.size()), ever_reset_ ? 1.0 : 0.0,
                          static_cast<double>(obs.shape().numel())};
  append_vector_step(out, out_);
  for (const EnvPtr& env : envs_) {
    const std::vector<double> copy = env->checkpoint_state();
    out.push_back(static_cast<double>(copy.size()));
    out.insert(out.end(), copy.begin(), copy.end());
  }
  return out;
}

void SyncVectorEnv::restore_checkpoint_state(const std::vector<double>& state) {
  const auto n = static_cast<int64_t>(envs_.size());
  CheckpointStateReader in(state, detail::cat("SyncVectorEnv (", name(), " x ", n, ")"));
  const uint64_t kind = in.count("the kind");
  CTRAX_REQUIRE(kind == 1, in.who(), ": restore_checkpoint_state: the state is of kind ", kind,
                vector_env_kind_name(kind), ", expected 1 (a SyncVectorEnv)");
  const uint64_t copies = in.count("the number of copies");
  CTRAX_REQUIRE(copies == envs_.size(), in.who(), ": restore_checkpoint_state: the state holds ", copies,
                " copies, this vector environment has ", n);
  const bool ever_reset = in.flag("the ever-reset flag");
  const uint64_t elements = in.count("the observation size");
  CTRAX_REQUIRE(elements == static_cast<uint64_t>(single_observation_space().shape().numel()), in.who(),
                ": restore_checkpoint_state: the state's observations have ", elements,
                " elements, this vector environment's ", single_observation_space().shape().numel());
  const VectorStep last = read_vector_step(in, out_);
  std::vector<std::vector<double>> copy_states;
  for (int64_t i = 0; i < n; ++i) {
    const std::string copy = detail::cat("copy ", i, "'s ");
    const auto length = static_cast<size_t>(in.count(copy + "state length", in.remaining()));
    copy_states.push_back(in.numbers(length, copy + "state", /*finite=*/false));
  }
  in.finish();
  // Each copy restores all or nothing; should copy k refuse its state, copies 0..k-1 are put
  // back as they were, so the whole restore is all or nothing too.
  std::vector<std::vector<double>> previous;
  for (const EnvPtr& env : envs_) previous.push_back(env->checkpoint_state());
  for (size_t i = 0; i < envs_.size(); ++i) {
    try {
      envs_[i]->restore_checkpoint_state(copy_states[i]);
    } catch (const CheckpointNotSupported&) {
      for (size_t j = 0; j < i; ++j) envs_[j]->restore_checkpoint_state(previous[j]);
      throw;
    } catch (const Error& e) {
      for (size_t j = 0; j < i; ++j) envs_[j]->restore_checkpoint_state(previous[j]);
      CTRAX_THROW(in.who(), ": restore_checkpoint_state: copy ", i, ": ", e.what());
    }
  }
  assign_vector_step(out_, last);
  ever_reset_ = ever_reset;
}

}  // namespace ctrax
