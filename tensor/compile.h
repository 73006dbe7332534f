// compile: run a function of tensors as a static plan after its first call (JAX's jit, by
// recording rather than abstract tracing), for steps that run many times with the same shapes.
// The first call with a new input signature runs eagerly under a PlanRecorder (tensor/plan.h);
// later calls with that signature replay its kernels with no tape, shape checks, allocation or
// reference counts, bit-identical to eager. How plans work: docs/compile.md.
//
// Contract (as JAX's): a pure function of its inputs and of tensors that live across calls, whose
// storages the plan keeps and reads each time. Host values it reads are baked in: pass those that
// change as `guard` (part of the cache key) or as tensors. The keyed form may draw from its call's
// key and keys derived from it; each replay draws from its own call's key. A function that reads
// tensor memory on the host, draws from another key, or uses an op without a plan (CUDA tensors)
// runs eagerly for that signature, said once through compile_log_sink().
// The returned tensors are the plan's output buffers, valid until the next call of the same
// compiled function whatever its signature (clone() what must outlive it). Not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <list>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "random.h"
#include "tensor.h"

namespace ctrax {

struct CompileOptions {
  std::string name = "function";  // names the function in the log line
  size_t max_plans = 8;           // signatures kept; the least recently used plan is dropped
  bool enabled = true;            // false: every call runs eagerly
  bool fuse = true;               // fuse GEMM epilogues in plans (tensor/plan_fusion.h); same bits either way
  // Time every kernel of every replay (kernel_profile()); about 20 ns of clock reads per kernel.
  // The environment variable CTRAX_PROFILE_PLANS (any value) turns it on for every compiled
  // function of the process, and each one then prints its profile to standard error when it is
  // destroyed. The profile keeps an entry per kernel of every plan recorded (re-recordings add
  // theirs), so it is for measuring, not for a long-running program.
  bool profile = false;
};

// One kernel of a plan, as CompileOptions::profile measured it.
struct KernelTiming {
  int64_t plan = 0;     // the plan's number in recording order (1, 2, ...), dropped plans included
  int64_t kernel = 0;   // its place in the plan (0-based)
  std::string label;    // what it is: the op whose kernel it is, from the recorded closure's type
  int64_t calls = 0;    // replays that ran it
  double seconds = 0;   // their total time
};

// A table of `timings` (the slowest `top` kernels first, each with its share of the total),
// for a terminal or a log.
std::string format_kernel_profile(const std::vector<KernelTiming>& timings, size_t top = 20);

struct CompileStats {
  int64_t recordings = 0;   // calls that recorded a plan
  int64_t replays = 0;      // calls that ran a plan
  int64_t eager_calls = 0;  // calls that ran eagerly (disabled or unplannable)
  int64_t plans = 0;        // plans held now
  int64_t kernels = 0;      // kernels of the most recent plan
  int64_t fused_epilogues = 0;  // GEMMs of the most recent plan that took in a bias add or activation
  size_t arena_bytes = 0;   // bytes of the buffers the plans share
};

class CompiledFunction {
 public:
  using Function = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
  // A function that also takes a random key, different on each call (a training step's dropout
  // key, a collection step's sampling key).
  using KeyedFunction = std::function<std::vector<Tensor>(const std::vector<Tensor>&, Key)>;

  explicit CompiledFunction(Function function, CompileOptions options = {});
  explicit CompiledFunction(KeyedFunction function, CompileOptions options = {});
  ~CompiledFunction();
  CompiledFunction(CompiledFunction&&) noexcept;
  CompiledFunction& operator=(CompiledFunction&&) noexcept;

  // function(inputs) (a keyed function gets Key()). `guard` joins the signature: calls with
  // another guard get another plan.
  const std::vector<Tensor>& operator()(const std::vector<Tensor>& inputs, uint64_t guard = 0);
  // function(inputs, key).
  const std::vector<Tensor>& operator()(const std::vector<Tensor>& inputs, Key key, uint64_t guard = 0);
  // The same with several guard values (each joins the signature).
  const std::vector<Tensor>& operator()(const std::vector<Tensor>& inputs, Key key,
                                        std::initializer_list<uint64_t> guards);

  // Drops every plan (e.g. after the tensors the function reads were replaced).
  void clear();
  // With CompileOptions::profile: every replayed kernel's count and time so far, by plan and
  // kernel (empty otherwise). Survives clear() and dropped plans.
  std::vector<KernelTiming> kernel_profile() const;
  const CompileStats& stats() const { return stats_; }
  const CompileOptions& options() const { return options_; }

 private:
  struct Plan;
  const std::vector<Tensor>& call(const std::vector<Tensor>& inputs, Key key, std::span<const uint64_t> guards);
  std::vector<int64_t> signature(const std::vector<Tensor>& inputs, std::span<const uint64_t> guards) const;
  const std::vector<Tensor>& record(std::vector<int64_t> signature, const std::vector<Tensor>& inputs, Key key);

  KeyedFunction function_;
  CompileOptions options_;
  std::list<std::unique_ptr<Plan>> plans_;  // most recently used first
  std::shared_ptr<PlanArena> arena_;        // the buffers of every plan (one runs at a time)
  std::vector<Tensor> eager_outputs_;
  CompileStats stats_;
  bool said_fallback_ = false;
  bool log_profile_ = false;           // CTRAX_PROFILE_PLANS: log kernel_profile() when destroyed
  std::vector<KernelTiming> profile_;  // with options_.profile: per kernel of every plan recorded
};

// A check on a tensor's value that stays in compiled functions: `check` gets the value of the
// one-element tensor `scalar` (converted to double) and returns an empty string when it is fine,
// else the message of the ctrax::Error to throw. Eagerly it runs at once; a plan runs it at the
// same place on every replay. (Reading the value with item() instead would make the function
// unplannable.)
void check_value(const Tensor& scalar, std::function<std::string(double)> check);

// Says that the function being recorded (if any) reads the host value *value, which may change
// between calls (an annealed clip range, say): the plan then holds the value it saw, and a call
// that finds another value records the plan again instead of replaying a stale one.
void depend_on_value(const std::shared_ptr<const double>& value);

// Where compile's one-line notices go (default: standard error). Returns the previous sink.
using CompileLogSink = std::function<void(const std::string&)>;
CompileLogSink set_compile_log_sink(CompileLogSink sink);

}  // namespace ctrax
