// ctrax train [CONFIG] and ctrax resume RUN_DIR: train an agent, with progress, Ctrl-C and a
// learning curve at the end.
//
// train: reads CONFIG (default: the embedded PPO on CartPole-v1, configs/ppo_cartpole.toml),
// applies --set overrides (and the shortcuts --seed and --epochs), validates everything, and
// only then creates the run directory (tools/run_dir.h; default runs/<config name>, or
// runs/<config name>_<k> when that holds a run already), which must not already hold a run. resume: reopens a run directory and continues from its newest
// checkpoint; --epochs raises the total (and is written to its config.toml).
// --device cpu|cuda|cuda:N (both commands) is where the networks train (AgentOptions::device);
// it is not part of the run's configuration: checkpoints are device-independent, so a run may
// be resumed on another device.
// Ctrl-C (SIGINT) or SIGTERM stops after the current epoch, whose checkpoint is saved; a second
// Ctrl-C kills at once (the last epoch's checkpoint is still intact: checkpoints are atomic).
// Data-parallel (docs/scaling.md): under `mpirun -np N` each process is one rank of the job;
// --virtual-ranks N runs N ranks as threads of this process, bit for bit what N MPI ranks
// compute. Rank 0 prints, creates the run directory and writes it; an error on any rank ends
// every rank (MPI_Abort under mpirun) after printing it.
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <ctrax/io/atomic_file.h>
#include <ctrax/io/checkpoint.h>
#include <ctrax/base/error.h>
#include <ctrax/dist/in_process_group.h>
#include <ctrax/dist/mpi_communicator.h>
#include <ctrax/kernels/cuda/runtime.h>
#include <ctrax/kernels/gemm.h>
#include <ctrax/kernels/parallel.h>
#include <ctrax/optim/metrics_tensorboard.h>
#include <ctrax/rl/learning/evaluation.h>
#include <ctrax/tensor/device.h>

#include "../config.h"
#include "../gnuplot.h"
#include "../memory_estimate.h"
#include "../progress.h"
#include "../run_config.h"
#include "../run_dir.h"
#include "commands.h"
#include "default_config.h"  // kDefaultConfig, generated from configs/ppo_cartpole.toml

namespace ctrax::tools {

namespace fs = std::filesystem;

namespace {

volatile std::sig_atomic_t g_stop_requested = 0;

extern "C" void request_stop(int signal) {
  g_stop_requested = 1;
  // A second signal takes the default action (terminate) instead of waiting for the epoch.
  std::signal(signal, SIG_DFL);
}

// What the run showed, for the final message: the confirmation that solved it, or the final
// policy's and the best one's.
std::string outcome(const Agent& agent, const RunConfig& config) {
  const std::optional<Confirmation>& last = agent.last_confirmation();
  const std::optional<Confirmation>& best = agent.best_confirmation();
  std::ostringstream text;
  if (agent.solved() && last) {
    text << "solved: " << describe(last->summary) << " at epoch " << last->epoch << " (target "
         << *config.target_eval_return << ")";
    return text.str();
  }
  if (last) text << "final policy: " << describe(last->summary);
  if (config.target_eval_return)
    text << (last ? "; " : "") << "the target " << *config.target_eval_return << " was not confirmed";
  if (best && (!last || best->epoch != last->epoch))
    text << "; best confirmed: epoch " << best->epoch << ", " << describe(best->summary) << " (ctrax eval --checkpoint best)";
  return text.str();
}

// This process's peak resident memory (getrusage; gnuplot, which draws the learning curve in a
// process of its own, is not counted).
double peak_resident_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

// Rank 0 of a data-parallel job, or a single process: the one that prints and writes.
bool first_rank(const RunConfig& config) { return !config.agent.communicator || config.agent.communicator->rank() == 0; }

// Whether any rank was asked to stop (a collective on several ranks, so that all stop together).
bool stop_requested(const RunConfig& config) {
  double stop = g_stop_requested ? 1.0 : 0.0;
  if (config.agent.communicator) dist::allreduce_sum(*config.agent.communicator, std::span<double>(&stop, 1));
  return stop > 0;
}

// The run's agent, writing TensorBoard events too (rank 0) and restored from the chosen
// checkpoint, if any.
std::unique_ptr<Agent> make_run_agent(const RunConfig& config, const TaskPtr& task, const fs::path& dir) {
  RunConfig with_sinks = config;
  std::shared_ptr<TensorBoardMetricsSink> events;
  if (first_rank(config)) {
    events = std::make_shared<TensorBoardMetricsSink>(dir);
    with_sinks.agent.sinks.push_back(events);
  }
  // Each epoch's checkpoint is written while the next epoch runs (AgentOptions).
  with_sinks.agent.background_checkpoints = true;
  try {
    return make_agent(with_sinks, task, dir);
  } catch (...) {
    // A refused checkpoint leaves the run directory as it was: no new event file.
    std::error_code ignored;
    if (events) fs::remove(events->path(), ignored);
    throw;
  }
}

// Runs epochs until the agent is done or a stop (SIGINT, SIGTERM) is requested, showing progress;
// returns the seconds taken. The last checkpoint is durable when it returns.
double run_epochs(Agent& agent, const RunConfig& config, int64_t first_epoch) {
  std::string eval_key;
  if (!config.agent.eval_temperatures.empty() && config.agent.n_eval_episodes > 0)
    eval_key = eval_metric_prefix(config.agent.eval_temperatures.front()) + "return_mean";
  g_stop_requested = 0;
  std::signal(SIGINT, request_stop);
  std::signal(SIGTERM, request_stop);
  std::optional<Progress> progress;
  if (first_rank(config))
    progress.emplace(stdout, ::isatty(::fileno(stdout)) == 1, first_epoch, config.epochs, eval_key, 2.0,
                     config.total_env_steps);
  const auto start = std::chrono::steady_clock::now();
  bool stop = false;
  while (!agent.done() && !stop) {
    const Metrics row = agent.run(1);
    stop = stop_requested(config);
    if (progress) progress->epoch(agent.epoch(), row, agent.done() || stop);
  }
  if (progress) progress->end_line();
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  g_stop_requested = stop ? 1 : 0;
  if (stop) agent.save();  // the epoch's checkpoint, whatever checkpoint_every says
  agent.finish_saving();               // the last checkpoint is durable before anything is said
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The learning curve is a convenience: without gnuplot the run still succeeds. Returns the note
// for the summary ("" when none was drawn).
std::string draw_learning_curve(const Agent& agent, const RunConfig& config, const fs::path& dir) {
  const fs::path curve = dir / "learning_curve.png";
  if (agent.epoch() == 0 || !gnuplot_available()) return "";
  try {
    PlotOptions plot;
    plot.title = config.algorithm + " on " + config.env;
    plot_learning_curves({dir}, curve, plot);
    return ", learning curve " + curve.string();
  } catch (const Error& e) {
    std::fprintf(stderr, "ctrax: warning: no learning curve: %s\n", e.what());
    return "";
  }
}

// Runs until the agent is done (solved, its epochs or its step budget reached) or a stop is
// requested. rewrite_config: save config.resolved to config.toml once the checkpoint is
// restored (resume --epochs; a refused checkpoint leaves the file as it was). draw_curve: draw
// learning_curve.png at the end (--no-plot turns it off: gnuplot's PNG takes 0.05-0.15 s, which
// a sweep of short runs or a timed run need not pay; `ctrax plot RUN_DIR` draws it later).
int train_until_done(const RunConfig& config, const fs::path& dir, bool draw_curve, bool rewrite_config = false) {
  const FloatingPointModeScope mode(config);  // on this rank's thread, before anything is computed
  TaskPtr task = make_task(config);
  std::unique_ptr<Agent> agent = make_run_agent(config, task, dir);
  const bool speaks = first_rank(config);
  if (rewrite_config && speaks) {
    std::ostringstream text;
    text << format_config(config.resolved) << "\n";
    io::write_file_atomically(dir / "config.toml", text.str());
  }
  const int64_t first_epoch = agent->epoch();
  if (first_epoch > 0 && speaks)
    std::printf("resuming %s at epoch %lld (%s checkpoint)\n", dir.c_str(), static_cast<long long>(first_epoch),
                config.agent.restore_from.to_string().c_str());
  if (agent->done()) {
    if (!speaks) return 0;
    std::printf("%s is at epoch %lld, %lld environment steps: nothing to do (%s)\n", dir.c_str(),
                static_cast<long long>(first_epoch), static_cast<long long>(agent->job_interactions()),
                agent->solved() ? "it is solved; --checkpoint N continues from an earlier epoch"
                                : "its epochs or step budget are spent; give --epochs to train longer");
    return 0;
  }
  const double seconds = run_epochs(*agent, config, first_epoch);
  if (!speaks) return g_stop_requested ? kExitInterrupted : 0;
  const std::string curve_note = draw_curve ? draw_learning_curve(*agent, config, dir) : "";
  if (g_stop_requested) {
    std::printf("interrupted after epoch %lld; its checkpoint is saved. Continue with: ctrax resume %s\n",
                static_cast<long long>(agent->epoch()), dir.c_str());
    return kExitInterrupted;
  }
  std::ostringstream summary;
  summary.precision(1);
  summary << std::fixed << config.algorithm << " on " << config.env << ": epoch " << agent->epoch() << ", "
          << agent->job_interactions() << " environment steps (the initial random ones included), " << seconds
          << " s" << (agent->n_ranks() > 1 ? " on " + std::to_string(agent->n_ranks()) + " ranks" : std::string())
          << ", peak memory " << peak_resident_mib() << " MiB, GEMM "
          << static_cast<double>(kernels::gemm_flop_count()) * 1e-9 << " GFLOP\n"
          << outcome(*agent, config);
  std::printf("%s\noutputs in %s (metrics.csv, metrics.jsonl, TensorBoard events, checkpoints%s%s)\n",
              summary.str().c_str(), dir.c_str(), agent->best_confirmation() ? ", checkpoints/best" : "",
              curve_note.c_str());
  return 0;
}

// The device of --device, refused (before anything is read or created) when this build or this
// machine cannot use it; sets the CPU threads.
Device device_and_threads(const std::string& text, const std::optional<int>& threads) {
  const Device device = parse_device(text);  // "cpu", "cuda" or "cuda:N"; else a clear error
  if (device.is_cuda()) {
    CTRAX_REQUIRE(kernels::cuda::available(), "--device ", text, ": cannot train on ", device, ": ",
                  kernels::cuda::unavailable_reason(), "; the devices available are: cpu");
    const int count = kernels::cuda::device_count();
    CTRAX_REQUIRE(device.index < count, "--device ", text, ": this machine has ", count,
                  " GPU(s), cuda:0 to cuda:", count - 1);
  }
  if (threads) {
    CTRAX_REQUIRE(*threads >= 1, "--threads must be >= 1, got ", *threads);
    kernels::set_num_threads(*threads);
  }
  return device;
}

struct TrainArgs {
  std::string config;
  std::vector<std::string> overrides;
  std::vector<std::string> unsets;
  std::string output_dir;
  std::string device = "cpu";
  std::optional<std::string> seed, epochs;  // as typed: a number too large for int64 is refused as it was typed
  std::optional<int> threads;
  int virtual_ranks = 1;
  bool no_plot = false;
};

// A whole number >= 0 as typed after `option`; anything else (a sign, a fraction, more than
// int64 holds) throws ctrax::Error quoting the text.
int64_t count_argument(const std::string& option, const std::string& text) {
  int64_t value = -1;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  CTRAX_REQUIRE(!text.empty() && error == std::errc() && end == text.data() + text.size() && value >= 0, option,
                ": expected a whole number >= 0, got ", text,
                error == std::errc::result_out_of_range ? " (too large)" : "");
  return value;
}

// Runs body(communicator) on this job's ranks: under mpirun, as this process's MPI rank (an
// error is printed, then ends every rank: MPI_Abort); with virtual_ranks > 1, that many ranks as
// threads of this process (one CPU thread each unless --threads says otherwise); else once, with
// no communicator. Returns rank 0's status.
int on_ranks(int virtual_ranks, const std::function<int(std::shared_ptr<dist::Communicator>)>& body) {
  CTRAX_REQUIRE(virtual_ranks >= 1, "--virtual-ranks must be >= 1, got ", virtual_ranks);
  if (dist::MpiCommunicator::launched_by_mpirun()) {
    CTRAX_REQUIRE(virtual_ranks == 1, "--virtual-ranks ", virtual_ranks,
                  " under mpirun: the job's ranks are mpirun's processes (give one or the other)");
    auto comm = std::make_shared<dist::MpiCommunicator>();
    if (comm->size() == 1) return body(nullptr);
    try {
      return body(comm);
    } catch (const std::exception& e) {
      std::fflush(stdout);
      std::fprintf(stderr, "ctrax: error on rank %d of %d: %s (ending every rank)\n", comm->rank(), comm->size(),
                   e.what());
      std::fflush(stderr);
      comm->abort_job(kExitBadInput);
    }
  }
  if (virtual_ranks == 1) return body(nullptr);
  std::atomic<int> status{0};
  dist::run_virtual_ranks(virtual_ranks, [&](std::shared_ptr<dist::Communicator> comm) {
    const int s = body(comm);
    if (comm->rank() == 0) status = s;
  });
  return status;
}

// `--device cuda` (no index) on several ranks: each rank takes the GPU of its index on its host
// (OpenMPI's local rank; a virtual rank's rank), modulo the GPUs there, so that ranks on one host
// spread over its GPUs (NCCL needs a GPU per rank). Any other device is taken as given.
Device rank_device(const std::string& text, Device device, const std::shared_ptr<dist::Communicator>& comm) {
  if (!comm || !device.is_cuda() || text != "cuda") return device;
  int local = comm->rank();
  if (const char* value = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK"); value && *value) local = std::atoi(value);
  return Device::cuda(local % kernels::cuda::device_count());
}

// The run directory rank 0 chose, on every rank.
fs::path shared_directory(const RunConfig& config, const fs::path& dir) {
  if (!config.agent.communicator) return dir;
  return fs::path(dist::allgather_bytes(*config.agent.communicator, dir.string()).front());
}

int train_rank(TrainArgs args, const Device& device, std::shared_ptr<dist::Communicator> comm) {
  const bool embedded = args.config.empty();
  toml::table table = embedded ? parse_config_text(kDefaultConfig, "the default configuration (PPO on CartPole-v1)")
                               : parse_config_file(args.config);
  if (args.seed) args.overrides.push_back("seed=" + std::to_string(count_argument("--seed", *args.seed)));
  if (args.epochs) args.overrides.push_back("epochs=" + std::to_string(count_argument("--epochs", *args.epochs)));
  remove_keys(table, args.unsets);  // before --set, so --unset K --set K=V sets K
  apply_overrides(table, args.overrides);
  RunConfig config = read_run_config(std::move(table), embedded ? "default configuration" : args.config);
  config.agent.device = rank_device(args.device, device, comm);
  config.agent.communicator = std::move(comm);
  check_memory(config);  // before any environment or buffer exists
  fs::path dir(args.output_dir);
  if (dir.empty() && first_rank(config)) {
    // runs/<config name>, or the first of runs/<name>_2, _3, ... that holds no run: training
    // again never touches an earlier run. (An explicit --output-dir holding a run is refused.)
    const std::string name = embedded ? std::string("ppo_cartpole") : fs::path(args.config).stem().string();
    dir = fs::path("runs") / name;
    for (int i = 2; fs::exists(dir / "run.toml"); ++i) dir = fs::path("runs") / (name + "_" + std::to_string(i));
  }
  if (first_rank(config)) check_new_run_directory(dir);
  {
    // Options that only the agent checks (shared layers that do not fit, a model whose output
    // does not fit the action space, ...) are refused before the run directory exists.
    TaskPtr probe_task = make_task(config);
    make_agent(config, probe_task, "");
  }
  // refuses a directory that holds a run, before writing
  if (first_rank(config)) create_run_directory(dir, config);
  dir = shared_directory(config, dir);  // after rank 0 created it
  return train_until_done(config, dir, !args.no_plot);
}

int train(const TrainArgs& args) {
  const Device device = device_and_threads(args.device, args.threads);
  if (args.virtual_ranks > 1 && !args.threads) kernels::set_num_threads(1);
  return on_ranks(args.virtual_ranks,
                  [&](std::shared_ptr<dist::Communicator> comm) { return train_rank(args, device, comm); });
}

struct ResumeArgs {
  std::string run_dir;
  std::optional<std::string> epochs;
  std::string device = "cpu";
  std::optional<int> threads;
  std::string checkpoint = "latest";
  int virtual_ranks = 1;
  bool no_plot = false;
};

int resume_rank(const ResumeArgs& args, const Device& on, std::shared_ptr<dist::Communicator> comm) {
  const CheckpointChoice choice = CheckpointChoice::parse(args.checkpoint);
  const fs::path dir(args.run_dir);
  RunConfig config = open_run_directory(dir);
  config.agent.device = rank_device(args.device, on, comm);
  config.agent.communicator = std::move(comm);
  config.agent.restore_from = choice;
  if (args.epochs) {
    const int64_t epochs = count_argument("--epochs", *args.epochs);
    CTRAX_REQUIRE(epochs >= 1, "--epochs must be >= 1, got ", *args.epochs);
    config.epochs = epochs;
    config.agent.max_epochs = epochs;
    config.resolved.insert_or_assign("epochs", epochs);
  }
  check_memory(config);
  if (first_rank(config)) {
    // A crash while writing the run's files may have left temporaries (".run.toml.tmp.<pid>.<n>").
    io::remove_stale_temporaries(dir);
  }
  const io::CheckpointDirectory existing(dir / "checkpoints", 1, io::CheckpointDirectory::Access::read_only);
  if (choice.kind == CheckpointChoice::Kind::latest && !existing.latest_step() && first_rank(config))
    std::printf("%s has no checkpoint yet (it stopped before its first one): training from epoch 0, its metric "
                "rows dropped\n", dir.c_str());
  return train_until_done(config, dir, !args.no_plot, /*rewrite_config=*/args.epochs.has_value());
}

int resume(const ResumeArgs& args) {
  const Device on = device_and_threads(args.device, args.threads);
  if (args.virtual_ranks > 1 && !args.threads) kernels::set_num_threads(1);
  return on_ranks(args.virtual_ranks,
                  [&](std::shared_ptr<dist::Communicator> comm) { return resume_rank(args, on, comm); });
}

}  // namespace

void add_train_commands(CLI::App& app, int& status) {
  auto args = std::make_shared<TrainArgs>();
  CLI::App* train_cmd = app.add_subcommand(
      "train", "train an agent from a run configuration (configs/*.toml); without CONFIG, PPO on CartPole-v1");
  train_cmd->add_option("config", args->config, "the run configuration (TOML); default: the embedded PPO CartPole");
  train_cmd->add_option("--set", args->overrides, "override a key: --set policy.batch_size=32 (repeatable)");
  train_cmd->add_option("--unset", args->unsets,
                        "remove a key the configuration sets, so it takes its default: --unset target_eval_return "
                        "(repeatable; applied before --set)");
  train_cmd->add_option("--output-dir", args->output_dir, "the run directory (default runs/<config name>[_k], a new one)");
  train_cmd->add_option("--device", args->device, "where the networks train: cpu, cuda or cuda:N (default cpu)");
  train_cmd->add_option("--seed", args->seed, "the run's seed (same as --set seed=N)");
  train_cmd->add_option("--epochs", args->epochs, "the number of epochs (same as --set epochs=N)");
  train_cmd->add_option("--threads", args->threads, "CPU threads (default: all; or CTRAX_NUM_THREADS)");
  train_cmd->add_option("--virtual-ranks", args->virtual_ranks,
                        "run N data-parallel ranks as threads: what `mpirun -np N ctrax train` computes (default 1)");
  train_cmd->add_flag("--no-plot", args->no_plot,
                      "do not draw learning_curve.png at the end (`ctrax plot RUN_DIR` draws it later)");
  train_cmd->callback([args, &status] { status = train(*args); });

  auto resume_args = std::make_shared<ResumeArgs>();
  CLI::App* resume_cmd =
      app.add_subcommand("resume", "continue a run from a checkpoint (after Ctrl-C, or to train longer)");
  resume_cmd->add_option("run_dir", resume_args->run_dir, "the run directory that `ctrax train` wrote")->required();
  resume_cmd->add_option("--epochs", resume_args->epochs, "the new total number of epochs (default: the run's)");
  resume_cmd->add_option("--checkpoint", resume_args->checkpoint,
                         "latest (default), best (the best confirmed policy) or an epoch number; checkpoints "
                         "after it are removed");
  resume_cmd->add_option("--device", resume_args->device, "where the networks train: cpu, cuda or cuda:N (default cpu)");
  resume_cmd->add_option("--threads", resume_args->threads, "CPU threads (default: all; or CTRAX_NUM_THREADS)");
  resume_cmd->add_option("--virtual-ranks", resume_args->virtual_ranks,
                         "N data-parallel ranks as threads, as many as the run was trained on (default 1)");
  resume_cmd->add_flag("--no-plot", resume_args->no_plot,
                       "do not draw learning_curve.png at the end (`ctrax plot RUN_DIR` draws it later)");
  resume_cmd->callback([resume_args, &status] { status = resume(*resume_args); });
}

}  // namespace ctrax::tools
