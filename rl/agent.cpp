// Agent: see agent.h.
#include "agent.h"

#include <chrono>
#include <fstream>
#include <cmath>
#include <sstream>
#include <utility>

#include "../kernels/check.h"
#include "device_placement.h"

namespace ctrax {

namespace {

constexpr const char* kCheckpointKind = "ctrax.Agent";

// "eval_return_T0", "eval_return_T0.5": the shortest decimal that reads back as the temperature.
std::string eval_metric_name(double temperature) {
  std::ostringstream s;
  s.precision(6);
  s << "eval_return_T" << temperature;
  return s.str();
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

Agent::Agent(RLTask& task, AgentOptions options) : task_(task), options_(std::move(options)) {
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
  require_usable_device(o.device, "Agent");
  sinks_ = o.sinks;
  if (!o.output_dir.empty()) {
    std::error_code error;
    std::filesystem::create_directories(o.output_dir, error);
    CTRAX_REQUIRE(!error, "Agent: cannot create the output directory ", o.output_dir.string(), ": ",
                  error.message());
    if (!o.read_only) sinks_.push_back(std::make_shared<JsonLinesMetricsSink>(o.output_dir / "metrics.jsonl"));
    checkpoints_ = std::make_unique<io::CheckpointDirectory>(o.output_dir / "checkpoints", o.checkpoints_to_keep);
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

CollectStats Agent::evaluate(int64_t n_episodes, double temperature, std::optional<int64_t> max_steps) {
  CTRAX_REQUIRE(n_episodes >= 1, "Agent::evaluate: n_episodes must be >= 1, got ", n_episodes);
  CollectOptions eval;
  eval.n_trajectories = n_episodes;
  eval.only_eval = true;
  eval.max_steps = max_steps ? max_steps : options_.eval_max_steps;
  eval.temperature = temperature;
  FlagScope scope(evaluating_);
  return task_.collect_trajectories(collect_policy(), eval);
}

PolicyOutput Agent::evaluation_act(const Tensor& observations, Key key, double temperature) {
  FlagScope scope(evaluating_);
  return act(observations, key, temperature);
}

Metrics Agent::run(int64_t n_epochs) {
  CTRAX_REQUIRE(n_epochs >= 1, "Agent::run: n_epochs must be >= 1, got ", n_epochs);
  const CollectPolicy policy = collect_policy();
  Metrics row;
  for (int64_t e = 0; e < n_epochs; ++e) {
    const auto epoch_start = std::chrono::steady_clock::now();
    epoch_ += 1;
    row.clear();

    CollectOptions collect;
    collect.n_trajectories = options_.n_trajectories_per_epoch;
    collect.n_interactions = options_.n_interactions_per_epoch;
    collect.only_eval = options_.only_eval;
    collect.epoch = epoch_;
    collect.temperature = 1.0;
    const auto collect_start = std::chrono::steady_clock::now();
    const CollectStats stats = task_.collect_trajectories(policy, collect);
    const double collect_seconds = seconds_since(collect_start);
    avg_returns_.push_back(stats.mean_return);
    row["return"] = stats.mean_return;
    row["episode_length"] = stats.mean_length;
    row["env_steps_per_second"] = collect_seconds > 0 ? static_cast<double>(stats.n_interactions) / collect_seconds : 0;
    row["collect_seconds"] = collect_seconds;

    const auto eval_start = std::chrono::steady_clock::now();
    if (options_.n_eval_episodes > 0) {
      for (double temperature : options_.eval_temperatures) {
        const double r = evaluate(options_.n_eval_episodes, temperature).mean_return;
        eval_returns_[temperature].push_back(r);
        row[eval_metric_name(temperature)] = r;
      }
    }

    row["eval_seconds"] = seconds_since(eval_start);
    const auto train_start = std::chrono::steady_clock::now();
    if (!options_.only_eval) {
      for (const auto& [name, value] : train_epoch()) row[name] = value;
    }
    row["train_seconds"] = seconds_since(train_start);
    row["n_interactions"] = static_cast<double>(task_.n_interactions());
    row["n_trajectories"] = static_cast<double>(task_.n_trajectories());
    row["epoch_seconds"] = seconds_since(epoch_start);
    log(row);
    save();
  }
  return row;
}

void Agent::log(const Metrics& row) {
  if (!csv_ && !options_.output_dir.empty() && !options_.read_only) {
    std::vector<std::string> columns;
    for (const auto& [name, value] : row) columns.push_back(name);
    csv_ = std::make_shared<CsvMetricsSink>(options_.output_dir / "metrics.csv", columns);
    sinks_.push_back(csv_);
  }
  for (const auto& sink : sinks_) sink->write(epoch_, "rl", row);
}

void Agent::save() {
  if (!checkpoints_ || options_.read_only) return;
  std::map<std::string, Tensor> tensors;
  io::ManifestFields fields;
  fields["kind"] = std::string(kCheckpointKind);
  fields["agent/epoch"] = epoch_;
  fields["agent/algorithm"] = name();
  export_state(tensors, fields);
  task_.export_state(tensors, fields, "task/");
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
  checkpoints_->save(epoch_, tensors, fields);
}

bool Agent::restore() {
  if (!checkpoints_) return false;
  std::optional<io::Checkpoint> c = checkpoints_->load_latest();
  if (!c) return false;
  const std::string where = c->manifest_path.string();
  CTRAX_REQUIRE(c->string_field("kind") == kCheckpointKind, "Agent: checkpoint ", where, " was written by ",
                c->string_field("kind"), ", not by an RL agent");
  CTRAX_REQUIRE(c->string_field("agent/algorithm") == name(), "Agent: checkpoint ", where, " holds a ",
                c->string_field("agent/algorithm"), " agent, this is a ", name());
  const int64_t epoch = c->int_field("agent/epoch");
  CTRAX_REQUIRE(epoch == c->step && epoch >= 0, "Agent: checkpoint ", where, " says epoch ", epoch,
                " but is numbered ", c->step);
  std::vector<double> avg_returns = c->tensor("agent/avg_returns").to_vector<double>();
  CTRAX_REQUIRE(static_cast<int64_t>(avg_returns.size()) == epoch, "Agent: checkpoint ", where, " has ",
                avg_returns.size(), " returns for ", epoch, " epochs");
  std::map<double, std::vector<double>> eval_returns;
  const int64_t n_temperatures = c->int_field("agent/n_eval_temperatures");
  for (int64_t i = 0; i < n_temperatures; ++i) {
    const std::string name = "agent/eval_returns/" + std::to_string(i);
    eval_returns[c->double_field(name + "/temperature")] = c->tensor(name).to_vector<double>();
  }
  // Each part checks everything before it changes anything. The subclass's networks go first:
  // should the task's part then be refused, the constructor that called restore() throws and
  // the agent is never used.
  // The networks' tensors go to the agent's device; the task's and the agent's stay on the CPU.
  import_state(checkpoint_on(*c, options_.device, {"task/", "agent/"}));
  task_.import_state(*c, "task/");
  epoch_ = epoch;
  avg_returns_ = std::move(avg_returns);
  eval_returns_ = std::move(eval_returns);
  // metrics.csv gets its columns from the first row; a resumed run takes them from the file's
  // header so that the rows after the checkpoint can be dropped now.
  const std::filesystem::path csv_path = options_.output_dir / "metrics.csv";
  if (!csv_ && !options_.read_only && std::filesystem::exists(csv_path)) {
    std::ifstream in(csv_path);
    std::string header;
    std::getline(in, header);
    std::vector<std::string> columns;
    std::stringstream fields(header);
    for (std::string name; std::getline(fields, name, ',');)
      if (name != "step" && name != "phase") columns.push_back(name);
    csv_ = std::make_shared<CsvMetricsSink>(csv_path, columns);
    sinks_.push_back(csv_);
  }
  for (const auto& sink : sinks_) sink->truncate_after(epoch_);
  return true;
}

}  // namespace ctrax
