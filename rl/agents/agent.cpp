// Agent: see agent.h.
#include "agent.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <fstream>
#include <sstream>
#include <utility>

#include "../../io/atomic_file.h"
#include "../../base/error.h"
#include "../../optim/trainer.h"
#include "collect_model.h"
#include "data_parallel.h"
#include "device_placement.h"

namespace ctrax {

namespace {

constexpr const char* kCheckpointKind = "ctrax.Agent";
// RLTask::evaluation_seed's streams: the confirmations' and the routine evaluations' (`ctrax
// eval` uses 2).
constexpr uint64_t kConfirmationSeeds = 1;
constexpr uint64_t kRoutineEvaluationSeeds = 3;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double mean_of(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? 0.0 : sum / static_cast<double>(v.size());
}

double std_of(const std::vector<double>& v) {
  if (v.size() < 2) return 0.0;
  const double m = mean_of(v);
  double square = 0;
  for (double x : v) square += (x - m) * (x - m);
  return std::sqrt(square / static_cast<double>(v.size() - 1));
}

// The columns a row may hold beyond those of the first row (metrics.csv is made with all).
std::vector<std::string> optional_columns() {
  return {"train/episode_return_mean", "train/episode_length_mean", "confirm/return_mean", "confirm/return_std",
          "confirm/return_min", "confirm/return_median", "confirm/return_max", "confirm/return_ci95_low",
          "confirm/return_ci95_high", "confirm/length_mean", "confirm/episodes", "confirm/solved"};
}

void put_confirmation(Metrics& row, const Confirmation& c) {
  const EpisodeSummary& s = c.summary;
  row["confirm/return_mean"] = s.return_mean;
  row["confirm/return_std"] = s.return_std;
  row["confirm/return_min"] = s.return_min;
  row["confirm/return_median"] = s.return_median;
  row["confirm/return_max"] = s.return_max;
  row["confirm/return_ci95_low"] = s.return_ci95_low;
  row["confirm/return_ci95_high"] = s.return_ci95_high;
  row["confirm/length_mean"] = s.length_mean;
  row["confirm/episodes"] = static_cast<double>(s.episodes);
  row["confirm/solved"] = c.solved ? 1.0 : 0.0;
}

}  // namespace

std::string eval_metric_prefix(double temperature) {
  if (temperature == 0.0) return "eval/";
  std::ostringstream s;
  s.precision(6);  // the shortest decimal that reads back as the temperature
  s << "eval_T" << temperature << "/";
  return s.str();
}

CheckpointChoice CheckpointChoice::parse(const std::string& text) {
  CheckpointChoice c;
  if (text == "latest") return c;
  if (text == "best") {
    c.kind = Kind::best;
    return c;
  }
  int64_t epoch = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), epoch);
  CTRAX_REQUIRE(!text.empty() && ec == std::errc() && end == text.data() + text.size() && epoch >= 0,
                "a checkpoint is \"latest\", \"best\" or an epoch number >= 0, got \"", text, "\"");
  c.kind = Kind::epoch;
  c.epoch = epoch;
  return c;
}

std::string CheckpointChoice::to_string() const {
  if (kind == Kind::latest) return "latest";
  if (kind == Kind::best) return "best";
  return "epoch " + std::to_string(epoch);
}

Agent::Agent(TaskPtr task, AgentOptions options) : task_(std::move(task)), options_(std::move(options)) {
  CTRAX_REQUIRE(task_ != nullptr, "Agent: the task is null (build it with std::make_shared<RLTask>(...))");
  const AgentOptions& o = options_;
  CTRAX_REQUIRE(o.n_trajectories_per_epoch.has_value() != o.n_interactions_per_epoch.has_value(),
                "Agent: give exactly one of n_trajectories_per_epoch and n_interactions_per_epoch");
  if (o.n_trajectories_per_epoch)
    CTRAX_REQUIRE(*o.n_trajectories_per_epoch >= 1, "Agent: n_trajectories_per_epoch must be >= 1, got ",
                  *o.n_trajectories_per_epoch);
  if (o.n_interactions_per_epoch)
    CTRAX_REQUIRE(*o.n_interactions_per_epoch >= 1, "Agent: n_interactions_per_epoch must be >= 1, got ",
                  *o.n_interactions_per_epoch);
  CTRAX_REQUIRE(o.n_eval_episodes >= 0, "Agent: n_eval_episodes must be >= 0, got ", o.n_eval_episodes);
  for (double t : o.eval_temperatures)
    CTRAX_REQUIRE(std::isfinite(t) && t >= 0.0, "Agent: eval temperatures must be finite and >= 0, got ", t);
  if (o.eval_max_steps)
    CTRAX_REQUIRE(*o.eval_max_steps >= 1, "Agent: eval_max_steps must be >= 1, got ", *o.eval_max_steps);
  CTRAX_REQUIRE(o.checkpoints_to_keep >= 1, "Agent: checkpoints_to_keep must be >= 1, got ", o.checkpoints_to_keep);
  if (o.target_return) {
    CTRAX_REQUIRE(std::isfinite(*o.target_return), "Agent: target_return must be finite, got ", *o.target_return);
    CTRAX_REQUIRE(o.n_eval_episodes >= 1 && !o.eval_temperatures.empty(),
                  "Agent: target_return needs n_eval_episodes >= 1 and an eval temperature (the routine "
                  "evaluation proposes the stop, the confirmation decides it)");
  }
  CTRAX_REQUIRE(o.n_confirm_episodes >= 1, "Agent: n_confirm_episodes must be >= 1, got ", o.n_confirm_episodes);
  if (o.n_confirm_envs)
    CTRAX_REQUIRE(*o.n_confirm_envs >= 1, "Agent: n_confirm_envs must be >= 1, got ", *o.n_confirm_envs);
  if (o.max_epochs) CTRAX_REQUIRE(*o.max_epochs >= 1, "Agent: max_epochs must be >= 1, got ", *o.max_epochs);
  if (o.total_env_steps)
    CTRAX_REQUIRE(*o.total_env_steps >= 1, "Agent: total_env_steps must be >= 1, got ", *o.total_env_steps);
  CTRAX_REQUIRE(o.checkpoint_every >= 1, "Agent: checkpoint_every must be >= 1, got ", o.checkpoint_every);
  CTRAX_REQUIRE(!o.anneal_learning_rate || o.max_epochs || o.total_env_steps,
                "Agent: anneal_learning_rate needs max_epochs or total_env_steps (what the rate anneals over)");
  require_usable_device(o.device, "Agent");
  if (o.n_interactions_per_epoch)
    CTRAX_REQUIRE(*o.n_interactions_per_epoch % n_ranks() == 0, "Agent: n_interactions_per_epoch ",
                  *o.n_interactions_per_epoch, " does not split evenly over ", n_ranks(), " ranks");
  if (o.n_trajectories_per_epoch)
    CTRAX_REQUIRE(*o.n_trajectories_per_epoch >= n_ranks(), "Agent: n_trajectories_per_epoch ",
                  *o.n_trajectories_per_epoch, " leaves some of the ", n_ranks(), " ranks nothing to collect");
  writes_ = !o.output_dir.empty() && !o.read_only && rank() == 0;
  if (rank() == 0) sinks_ = o.sinks;
  if (!o.output_dir.empty()) {
    using Access = io::CheckpointDirectory::Access;
    if (writes_) {
      std::error_code error;
      std::filesystem::create_directories(o.output_dir, error);
      CTRAX_REQUIRE(!error, "Agent: cannot create the output directory ", o.output_dir.string(), ": ",
                    error.message());
      sinks_.push_back(std::make_shared<JsonLinesMetricsSink>(o.output_dir / "metrics.jsonl"));
    }
    checkpoints_ = std::make_unique<io::CheckpointDirectory>(o.output_dir / "checkpoints", o.checkpoints_to_keep,
                                                             writes_ ? Access::read_write : Access::read_only);
  }
}

Agent::~Agent() = default;

CollectPolicy Agent::collect_policy() {
  return [this](const Tensor& observations, Key key, double temperature) {
    return act(observations, key, temperature);
  };
}

namespace {

// Sets a flag for the lifetime of a scope, also when it is left by an exception.
class FlagScope {
 public:
  explicit FlagScope(bool& flag) : flag_(flag) { flag_ = true; }
  ~FlagScope() { flag_ = false; }
  FlagScope(const FlagScope&) = delete;
  FlagScope& operator=(const FlagScope&) = delete;

 private:
  bool& flag_;
};

}  // namespace

CollectStats Agent::evaluate(int64_t n_episodes, double temperature, std::optional<int64_t> max_steps,
                             std::optional<uint64_t> seed, std::optional<int64_t> n_envs) {
  CTRAX_REQUIRE(n_episodes >= 1, "Agent::evaluate: n_episodes must be >= 1, got ", n_episodes);
  CTRAX_REQUIRE(!n_envs || seed, "Agent::evaluate: n_envs applies to a seeded evaluation only");
  CTRAX_REQUIRE(!n_envs || *n_envs >= 1, "Agent::evaluate: n_envs must be >= 1, got ", *n_envs);
  CollectOptions eval;
  eval.n_trajectories = n_episodes;
  eval.only_eval = true;
  eval.max_steps = max_steps ? max_steps : options_.eval_max_steps;
  eval.temperature = temperature;
  eval.eval_seed = seed;
  if (n_envs) eval.eval_envs = std::min(*n_envs, n_episodes);
  FlagScope scope(evaluating_);
  return task_->collect_trajectories(collect_policy(), eval);
}

PolicyOutput Agent::evaluation_act(const Tensor& observations, Key key, double temperature) {
  FlagScope scope(evaluating_);
  return act(observations, key, temperature);
}

CollectStats Agent::evaluate_job(int64_t n_episodes, double temperature, std::optional<uint64_t> seed,
                                 std::optional<int64_t> n_envs) {
  dist::Communicator* comm = ranks();
  if (!comm) return evaluate(n_episodes, temperature, std::nullopt, seed, n_envs);
  // Each rank plays its share on its own task's seeds; the statistics are every rank's episodes'.
  const int64_t share = dist::rank_share(n_episodes, rank(), n_ranks());
  const CollectStats local = share >= 1 ? evaluate(share, temperature, std::nullopt, seed, n_envs) : CollectStats{};
  CollectStats job;
  job.returns = gather_values(*comm, local.returns);
  for (double length : gather_values(*comm, std::vector<double>(local.lengths.begin(), local.lengths.end())))
    job.lengths.push_back(static_cast<int64_t>(length));
  job.n_trajectories = static_cast<int64_t>(job.returns.size());
  job.mean_return = mean_of(job.returns);
  std::vector<double> lengths(job.lengths.begin(), job.lengths.end());
  job.mean_length = mean_of(lengths);
  return job;
}

Confirmation Agent::confirm() {
  const double temperature = options_.eval_temperatures.empty() ? 0.0 : options_.eval_temperatures.front();
  const CollectStats stats =
      evaluate_job(options_.n_confirm_episodes, temperature,
                   task_->evaluation_seed(kConfirmationSeeds, static_cast<uint64_t>(epoch_)), options_.n_confirm_envs);
  Confirmation c;
  c.epoch = epoch_;
  c.summary = summarize_episodes(stats.returns, stats.lengths);
  const double judged = options_.confirm_statistic == AgentOptions::ConfirmStatistic::mean ? c.summary.return_mean
                                                                                          : c.summary.return_ci95_low;
  c.solved = options_.target_return && judged >= *options_.target_return;
  return c;
}

bool Agent::final_epoch() const {
  return (options_.max_epochs && epoch_ >= *options_.max_epochs) ||
         (options_.total_env_steps && job_interactions() >= *options_.total_env_steps);
}

bool Agent::done() const { return solved_ || final_epoch(); }

double Agent::progress() const {
  // Within an epoch, what was done before its collection; between epochs, everything so far.
  if (options_.total_env_steps) {
    const int64_t steps = epoch_start_steps_ ? *epoch_start_steps_ : job_interactions();
    return std::min(1.0, static_cast<double>(steps) / static_cast<double>(*options_.total_env_steps));
  }
  if (options_.max_epochs) {
    const int64_t epochs = epoch_start_steps_ ? epoch_ - 1 : epoch_;
    return std::min(1.0, static_cast<double>(epochs) / static_cast<double>(*options_.max_epochs));
  }
  return 0.0;
}

int64_t Agent::job_interactions() const { return ranks() ? job_interactions_ : task_->n_interactions(); }

int64_t Agent::batch_share(int64_t total, const char* what) const {
  CTRAX_REQUIRE(total % n_ranks() == 0, name(), ": ", what, " ", total, " does not split evenly over ", n_ranks(),
                " ranks (each rank trains on ", what, " / ranks rows)");
  return total / n_ranks();
}

double Agent::learning_rate_factor() const { return options_.anneal_learning_rate ? 1.0 - progress() : 1.0; }

// Steps 3 and 4 of an epoch (see agent.h): the routine evaluation and, when it calls for one,
// the confirmation, with the best confirmation kept.
void Agent::evaluate_epoch(Metrics& row) {
  std::optional<double> routine;
  if (options_.n_eval_episodes > 0) {
    // Seeded by the epoch, as confirmations are (every temperature starts from the same
    // episodes): the evaluations leave the task's collection counter alone, so training draws
    // the same keys whatever n_eval_episodes and eval_temperatures are (0 evaluations included).
    const uint64_t seed = task_->evaluation_seed(kRoutineEvaluationSeeds, static_cast<uint64_t>(epoch_));
    for (double temperature : options_.eval_temperatures) {
      const CollectStats stats = evaluate_job(options_.n_eval_episodes, temperature, seed);
      eval_returns_[temperature].push_back(stats.mean_return);
      const std::string prefix = eval_metric_prefix(temperature);
      row[prefix + "return_mean"] = stats.mean_return;
      row[prefix + "return_std"] = std_of(stats.returns);
      row[prefix + "length_mean"] = stats.mean_length;
      if (!routine) routine = stats.mean_return;
    }
  }
  const bool proposed = options_.target_return && routine && *routine >= *options_.target_return;
  if (!proposed && !final_epoch()) return;
  Confirmation c = confirm();
  put_confirmation(row, c);
  solved_ = c.solved;
  if (!best_confirmation_ || c.summary.return_mean > best_confirmation_->summary.return_mean) best_confirmation_ = c;
  last_confirmation_ = std::move(c);
}

Metrics Agent::run(int64_t n_epochs) {
  require_construction_finished("run");
  CTRAX_REQUIRE(n_epochs >= 1, "Agent::run: n_epochs must be >= 1, got ", n_epochs);
  const CollectPolicy policy = collect_policy();
  Metrics row;
  if (!last_row_time_) last_row_time_ = std::chrono::steady_clock::now();
  for (int64_t e = 0; e < n_epochs && !done(); ++e) {
    epoch_ += 1;
    epoch_start_steps_ = job_interactions();
    row.clear();
    // Data-parallel: the statistics every rank starts its collection from (copies: collection
    // replaces them).
    std::vector<Tree> collect_bases;
    if (ranks())
      for (CollectModel* model : collect_models())
        collect_bases.push_back(model->state().map([](const Tensor& t) { return t.clone(); }));

    CollectOptions collect;
    collect.n_trajectories = options_.n_trajectories_per_epoch;
    collect.n_interactions = options_.n_interactions_per_epoch;
    if (collect.n_interactions) *collect.n_interactions /= n_ranks();
    if (collect.n_trajectories) *collect.n_trajectories = dist::rank_share(*collect.n_trajectories, rank(), n_ranks());
    collect.only_eval = options_.only_eval;
    collect.epoch = epoch_;
    collect.temperature = 1.0;
    const auto collect_start = std::chrono::steady_clock::now();
    CollectStats stats = task_->collect_trajectories(policy, collect);
    if (ranks()) stats = combine_collection(stats, collect_bases);
    row["time/collect_seconds"] = seconds_since(collect_start);
    avg_returns_.push_back(stats.mean_return);  // Trax's avg_returns: the pieces' mean
    if (!stats.episode_returns.empty()) {
      std::vector<double> lengths(stats.episode_lengths.begin(), stats.episode_lengths.end());
      row["train/episode_return_mean"] = mean_of(stats.episode_returns);
      row["train/episode_length_mean"] = mean_of(lengths);
    }
    row["train/episodes"] = static_cast<double>(stats.episode_returns.size());

    const auto train_start = std::chrono::steady_clock::now();
    if (!options_.only_eval) {
      Metrics trained = train_epoch();
      if (ranks()) {
        trained = mean_over_ranks(*ranks(), trained);
        check_weights_replicated();
      }
      for (const auto& [name, value] : trained) row[name] = value;
    }
    row["time/train_seconds"] = seconds_since(train_start);

    epoch_start_steps_.reset();
    const auto eval_start = std::chrono::steady_clock::now();
    const std::optional<Confirmation> best_before = best_confirmation_;
    evaluate_epoch(row);
    row["time/eval_seconds"] = seconds_since(eval_start);

    row["n_interactions"] = static_cast<double>(job_interactions());
    row["n_trajectories"] = static_cast<double>(ranks() ? job_trajectories_ : task_->n_trajectories());
    // The previous epoch's checkpoint, if written in the background, is durable before this
    // row is written (the time waited counts as checkpoint time).
    const auto wait_start = std::chrono::steady_clock::now();
    finish_saving();
    last_checkpoint_seconds_ += seconds_since(wait_start);
    const double epoch_seconds = seconds_since(*last_row_time_);
    row["time/checkpoint_seconds"] = last_checkpoint_seconds_;
    row["time/epoch_seconds"] = epoch_seconds;
    row["time/env_steps_per_second"] = epoch_seconds > 0 ? static_cast<double>(stats.n_interactions) / epoch_seconds : 0;
    log(row);
    last_row_time_ = std::chrono::steady_clock::now();

    // The row goes first: a crash before the checkpoint leaves a row that the resumed run drops
    // (restore() keeps the rows up to the checkpoint it continues from).
    const auto save_start = std::chrono::steady_clock::now();
    const bool improved = best_confirmation_ && (!best_before || best_confirmation_->epoch != best_before->epoch);
    if (epoch_ % options_.checkpoint_every == 0 || done() || improved) save();
    if (improved && checkpoints_ && !options_.read_only) {  // every rank: save_to gathers the tasks
      io::CheckpointDirectory best(options_.output_dir / "checkpoints" / "best", 1);
      save_to(best);
    }
    last_checkpoint_seconds_ = seconds_since(save_start);
  }
  return row;
}

CollectStats Agent::combine_collection(const CollectStats& local, const std::vector<Tree>& collect_bases) {
  dist::Communicator& comm = *ranks();
  const std::vector<CollectModel*> models = collect_models();
  for (size_t i = 0; i < models.size(); ++i)
    models[i]->set_state(combine_collect_state(comm, collect_bases[i], models[i]->state()));
  // The counters, exact in doubles up to 2^53, then the pieces and episodes in rank order.
  const double counts[3] = {static_cast<double>(task_->n_interactions()), static_cast<double>(task_->n_trajectories()),
                            static_cast<double>(local.n_interactions)};
  const std::vector<double> all = comm.allgather(counts);
  CollectStats job;
  job_interactions_ = job_trajectories_ = 0;
  for (int r = 0; r < comm.size(); ++r) {
    job_interactions_ += static_cast<int64_t>(all[3 * r]);
    job_trajectories_ += static_cast<int64_t>(all[3 * r + 1]);
    job.n_interactions += static_cast<int64_t>(all[3 * r + 2]);
  }
  auto as_doubles = [](const std::vector<int64_t>& v) { return std::vector<double>(v.begin(), v.end()); };
  auto as_ints = [](const std::vector<double>& v) { return std::vector<int64_t>(v.begin(), v.end()); };
  job.returns = gather_values(comm, local.returns);
  job.lengths = as_ints(gather_values(comm, as_doubles(local.lengths)));
  job.episode_returns = gather_values(comm, local.episode_returns);
  job.episode_lengths = as_ints(gather_values(comm, as_doubles(local.episode_lengths)));
  job.n_trajectories = static_cast<int64_t>(job.returns.size());
  job.mean_return = mean_of(job.returns);
  job.mean_length = mean_of(as_doubles(job.lengths));
  return job;
}

void Agent::check_weights_replicated() {
  int index = 0;
  for (const Trainer* trainer : trainers())
    check_replicated(*ranks(), trainer->weights(), name() + "'s weights of network " + std::to_string(index++) +
                                                       " after epoch " + std::to_string(epoch_));
}

void Agent::log(const Metrics& row) {
  if (!csv_ && writes_) {
    std::vector<std::string> columns;
    for (const auto& [name, value] : row) columns.push_back(name);
    for (const std::string& name : optional_columns())
      if (!row.count(name)) columns.push_back(name);
    std::sort(columns.begin(), columns.end());
    csv_ = std::make_shared<CsvMetricsSink>(options_.output_dir / "metrics.csv", columns);
    sinks_.push_back(csv_);
  }
  for (const auto& sink : sinks_) sink->write(epoch_, "rl", row);
}

void Agent::save() {
  require_construction_finished("save");
  if (!checkpoints_ || options_.read_only) return;  // the same on every rank: save_to is a collective
  save_to(*checkpoints_, options_.background_checkpoints);
}

void Agent::finish_saving() {
  if (checkpoints_) checkpoints_->wait();
}

void Agent::save_to(io::CheckpointDirectory& directory, bool in_background) {
  std::map<std::string, Tensor> tensors;
  io::ManifestFields fields;
  fields["kind"] = std::string(kCheckpointKind);
  fields["agent/epoch"] = epoch_;
  fields["agent/algorithm"] = name();
  fields["agent/solved"] = solved_;
  // The confirmations: epoch (-1: none), mean and the rest of the summary.
  const std::pair<const char*, const std::optional<Confirmation>*> confirmations[] = {
      {"agent/last_confirmation/", &last_confirmation_}, {"agent/best_confirmation/", &best_confirmation_}};
  for (const auto& [prefix, c] : confirmations) {
    const std::string p(prefix);
    fields[p + "epoch"] = *c ? (*c)->epoch : int64_t{-1};
    if (!*c) continue;
    const EpisodeSummary& s = (*c)->summary;
    fields[p + "solved"] = (*c)->solved;
    fields[p + "episodes"] = s.episodes;
    const std::pair<const char*, double> numbers[] = {
        {"return_mean", s.return_mean},         {"return_std", s.return_std},       {"return_min", s.return_min},
        {"return_median", s.return_median},     {"return_max", s.return_max},       {"return_ci95_low", s.return_ci95_low},
        {"return_ci95_high", s.return_ci95_high}, {"length_mean", s.length_mean},   {"length_min", s.length_min},
        {"length_max", s.length_max},           {"length_std", s.length_std},       {"length_median", s.length_median}};
    for (const auto& [name, value] : numbers) fields[p + name] = value;
  }
  // The task: this rank's, and with several ranks every rank's (only rank 0 writes).
  std::map<std::string, Tensor> task_tensors;
  io::ManifestFields task_fields;
  task_->export_state(task_tensors, task_fields, rank_task_prefix(rank()));
  if (ranks()) gather_checkpoint_entries(*ranks(), task_tensors, task_fields);
  if (!writes_) return;
  fields["agent/n_ranks"] = static_cast<int64_t>(n_ranks());
  export_state(tensors, fields);
  tensors.merge(task_tensors);
  fields.merge(task_fields);
  // The histories are small: one number per epoch.
  tensors.emplace("agent/avg_returns", from_vector(avg_returns_, Shape{static_cast<int64_t>(avg_returns_.size())}));
  int64_t index = 0;
  for (const auto& [temperature, returns] : eval_returns_) {
    const std::string name = "agent/eval_returns/" + std::to_string(index++);
    fields[name + "/temperature"] = temperature;
    tensors.emplace(name, from_vector(returns, Shape{static_cast<int64_t>(returns.size())}));
  }
  fields["agent/n_eval_temperatures"] = index;
  // Checkpoints are device-independent: the networks' tensors are written from CPU copies.
  for (auto& [name, tensor] : tensors) tensor = tensor.to(Device::cpu());
  if (in_background) directory.save_in_background(epoch_, tensors, fields);
  else directory.save(epoch_, tensors, fields);
}

namespace {

// A confirmation saved by save_to (nullopt when its epoch field is -1 or absent: checkpoints
// from before confirmations existed).
std::optional<Confirmation> confirmation_of(const io::Checkpoint& c, const std::string& prefix) {
  if (!c.fields.count(prefix + "epoch") || c.int_field(prefix + "epoch") < 0) return std::nullopt;
  Confirmation out;
  out.epoch = c.int_field(prefix + "epoch");
  out.solved = c.bool_field(prefix + "solved");
  EpisodeSummary& s = out.summary;
  s.episodes = c.int_field(prefix + "episodes");
  s.return_mean = c.double_field(prefix + "return_mean");
  s.return_std = c.double_field(prefix + "return_std");
  s.return_min = c.double_field(prefix + "return_min");
  s.return_median = c.double_field(prefix + "return_median");
  s.return_max = c.double_field(prefix + "return_max");
  s.return_ci95_low = c.double_field(prefix + "return_ci95_low");
  s.return_ci95_high = c.double_field(prefix + "return_ci95_high");
  s.length_mean = c.double_field(prefix + "length_mean");
  s.length_min = c.double_field(prefix + "length_min");
  s.length_max = c.double_field(prefix + "length_max");
  if (c.fields.count(prefix + "length_std")) {  // absent from the first checkpoints that had confirmations
    s.length_std = c.double_field(prefix + "length_std");
    s.length_median = c.double_field(prefix + "length_median");
  }
  return out;
}

}  // namespace

std::optional<io::Checkpoint> Agent::load_chosen() {
  const CheckpointChoice& choice = options_.restore_from;
  if (choice.kind == CheckpointChoice::Kind::latest) return checkpoints_->load_latest();
  if (choice.kind == CheckpointChoice::Kind::best) {
    const io::CheckpointDirectory best(options_.output_dir / "checkpoints" / "best", 1,
                                       io::CheckpointDirectory::Access::read_only);
    std::optional<io::Checkpoint> c = best.load_latest();
    CTRAX_REQUIRE(c.has_value(), "Agent: ", options_.output_dir.string(),
                  " has no best checkpoint yet (a run saves one at its first confirmation)");
    return c;
  }
  const std::vector<int64_t> steps = checkpoints_->steps();
  if (std::find(steps.begin(), steps.end(), choice.epoch) == steps.end()) {
    std::string list;
    for (int64_t s : steps) list += (list.empty() ? "" : ", ") + std::to_string(s);
    CTRAX_THROW("Agent: ", options_.output_dir.string(), " has no checkpoint of epoch ", choice.epoch,
                "; it has: ", list.empty() ? std::string("none") : list);
  }
  return checkpoints_->load(choice.epoch);
}

void Agent::open_existing_csv() {
  // metrics.csv gets its columns from the first row; a run that continues takes them from the
  // file's header, so that the rows after its checkpoint can be dropped now.
  const std::filesystem::path csv_path = options_.output_dir / "metrics.csv";
  if (csv_ || !std::filesystem::exists(csv_path)) return;
  // io::read_file refuses a FIFO or device in the file's place instead of blocking on it.
  const std::string text = io::read_file(csv_path);
  const std::string header = text.substr(0, text.find('\n'));
  std::vector<std::string> columns;
  std::stringstream fields(header);
  for (std::string name; std::getline(fields, name, ',');)
    if (name != "step" && name != "phase") columns.push_back(name);
  csv_ = std::make_shared<CsvMetricsSink>(csv_path, columns);
  sinks_.push_back(csv_);
}

void Agent::require_construction_finished(const char* what) const {
  CTRAX_REQUIRE(construction_finished_, name(), ": ", what,
                ": the agent's construction was not finished: its constructor must end with restore() "
                "(rl/agents/agent.h), or build it with build_agent<", name(),
                ">(...), which calls it; otherwise it would not resume from its output directory");
}

bool Agent::restore() {
  construction_finished_ = true;
  const bool restored = restore_from_directory();
  if (dist::Communicator* comm = ranks()) {
    // Every rank must continue from the same epoch (they read rank 0's checkpoints).
    const int64_t state[2] = {epoch_, restored ? 1 : 0};
    dist::check_same_on_every_rank(*comm, std::span(reinterpret_cast<const unsigned char*>(state), sizeof state),
                             "the restored epochs");
    const double steps[2] = {static_cast<double>(task_->n_interactions()), static_cast<double>(task_->n_trajectories())};
    const std::vector<double> all = comm->allgather(steps);
    job_interactions_ = job_trajectories_ = 0;
    for (int r = 0; r < comm->size(); ++r) {
      job_interactions_ += static_cast<int64_t>(all[2 * r]);
      job_trajectories_ += static_cast<int64_t>(all[2 * r + 1]);
    }
    for (const Trainer* trainer : trainers()) check_replicated(*comm, trainer->weights(), name() + "'s initial weights");
  }
  return restored;
}

bool Agent::restore_from_directory() {
  if (!checkpoints_) return false;
  std::optional<io::Checkpoint> c = load_chosen();
  if (!c) {
    // No checkpoint: the run starts from epoch 0, so rows a crashed first epoch left go.
    if (writes_) {
      open_existing_csv();
      for (const auto& sink : sinks_) sink->truncate_after(0);
    }
    return false;
  }
  const std::string where = c->manifest_path.string();
  CTRAX_REQUIRE(c->string_field("kind") == kCheckpointKind, "Agent: checkpoint ", where, " was written by ",
                c->string_field("kind"), ", not by an RL agent");
  CTRAX_REQUIRE(c->string_field("agent/algorithm") == name(), "Agent: checkpoint ", where, " holds a ",
                c->string_field("agent/algorithm"), " agent, this is a ", name());
  const int64_t epoch = c->int_field("agent/epoch");
  const int64_t saved_ranks = c->fields.count("agent/n_ranks") ? c->int_field("agent/n_ranks") : 1;
  // Training continues only on as many ranks; a read-only agent (evaluating the policy) may read
  // any, taking rank 0's task.
  CTRAX_REQUIRE(saved_ranks == n_ranks() || (options_.read_only && n_ranks() == 1), "Agent: checkpoint ", where,
                " is of a run on ", saved_ranks, " rank(s); it resumes only on as many (this run has ", n_ranks(), ")");
  CTRAX_REQUIRE(epoch == c->step && epoch >= 0, "Agent: checkpoint ", where, " says epoch ", epoch,
                " but is numbered ", c->step);
  // The histories are float64 vectors; any other dtype or rank is refused by name (as the
  // networks' and the task's tensors are), never converted.
  auto history = [&](const std::string& name) {
    const Tensor& t = c->tensor(name);
    CTRAX_REQUIRE(t.dtype() == DType::float64 && t.rank() == 1, "Agent: checkpoint ", where, ": tensor '", name,
                  "' is ", dtype_name(t.dtype()), " ", t.shape(), ", expected float64 [N]");
    return t.to_vector<double>();
  };
  std::vector<double> avg_returns = history("agent/avg_returns");
  CTRAX_REQUIRE(static_cast<int64_t>(avg_returns.size()) == epoch, "Agent: checkpoint ", where, " has ",
                avg_returns.size(), " returns for ", epoch, " epochs");
  std::map<double, std::vector<double>> eval_returns;
  const int64_t n_temperatures = c->int_field("agent/n_eval_temperatures");
  CTRAX_REQUIRE(n_temperatures >= 0, "Agent: checkpoint ", where, ": agent/n_eval_temperatures is ", n_temperatures);
  for (int64_t i = 0; i < n_temperatures; ++i) {
    const std::string name = "agent/eval_returns/" + std::to_string(i);
    eval_returns[c->double_field(name + "/temperature")] = history(name);
  }
  const bool solved = c->fields.count("agent/solved") ? c->bool_field("agent/solved") : false;
  std::optional<Confirmation> last = confirmation_of(*c, "agent/last_confirmation/");
  std::optional<Confirmation> best = confirmation_of(*c, "agent/best_confirmation/");
  // Each part checks everything before it changes anything. The subclass's networks go first:
  // should the task's part then be refused, the constructor that called restore() throws and
  // the agent is never used.
  // The networks' tensors go to the agent's device; the task's and the agent's stay on the CPU.
  const std::string task_prefix = rank_task_prefix(rank());
  import_state(checkpoint_on(*c, options_.device, {"task/", "agent/", "rank"}));
  task_->import_state(*c, task_prefix);
  epoch_ = epoch;
  avg_returns_ = std::move(avg_returns);
  eval_returns_ = std::move(eval_returns);
  solved_ = solved;
  last_confirmation_ = std::move(last);
  best_confirmation_ = std::move(best);
  if (!writes_) return true;
  // Continuing from an older checkpoint than the newest: the later ones would otherwise be
  // taken for this run's future.
  checkpoints_->remove_after(epoch_);
  open_existing_csv();
  for (const auto& sink : sinks_) sink->truncate_after(epoch_);
  return true;
}

}  // namespace ctrax
