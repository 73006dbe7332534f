#include "compile.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <regex>
#include <sstream>
#include <typeinfo>
#include <utility>

#if __has_include(<cxxabi.h>)
#include <cxxabi.h>
#define CTRAX_HAS_CXXABI 1
#endif

#include "plan.h"
#include "storage.h"

namespace ctrax {

namespace {

CompileLogSink& log_sink() {
  static CompileLogSink sink = [](const std::string& line) { std::cerr << line << '\n'; };
  return sink;
}

void say(const std::string& line) {
  if (log_sink()) log_sink()(line);
}

// Copies src into the plan's input buffer dst (same shape and dtype: the signature matched).
void bind_input(Tensor& dst, const Tensor& src) {
  if (dst.shares_storage_with(src) && dst.offset() == src.offset() && dst.strides() == src.strides()) return;
  if (src.is_contiguous() && src.device().is_cpu()) {
    std::memcpy(dst.raw_data(), src.raw_data(), static_cast<size_t>(src.numel()) * src.element_size());
    return;
  }
  dst.copy_(src);
}

// The readable name of a recorded kernel: the op whose closure it is. The closure's type names
// the function that made it (ctrax::where(...)::{lambda()#1} with GCC, ...::$_0 with clang),
// so its demangled name with the namespaces dropped, cut at the function's parameter list, is
// the op: "where", "Tensor::copy_", "matmul". The tensor layer's shared loops (map_unary,
// map_binary) carry the op in their template arguments: the binary_op<Mul> or softplus(...)
// inside is the label instead.
std::string kernel_label(const std::type_info& type) {
  std::string name = type.name();
#ifdef CTRAX_HAS_CXXABI
  int status = 0;
  if (char* demangled = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status)) {
    if (status == 0) name = demangled;
    std::free(demangled);
  }
#endif
  for (const char* noise : {"(anonymous namespace)::", "ctrax::", "ops_detail::", "autograd_detail::", "gemm_detail::",
                            "detail::", "kernels::"}) {
    for (size_t at = name.find(noise); at != std::string::npos; at = name.find(noise))
      name.erase(at, std::strlen(noise));
  }
  std::smatch m;
  static const std::regex binary(R"(binary(_scalar)?_op<(\w+)>)");
  static const std::regex unary(R"(_unary<\(OpId\)\d+, (\w+)\()");
  if (name.rfind("map_binary", 0) == 0 && std::regex_search(name, m, binary)) {
    std::string op = m[2].str();
    std::transform(op.begin(), op.end(), op.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return m[1].matched ? op + " (scalar)" : op;
  }
  if (name.rfind("map_unary", 0) == 0 && std::regex_search(name, m, unary)) return m[1].str();
  // The function name: up to the first '(' outside template brackets. A wrapper whose template
  // argument is a function's lambda (run_sampler<normal(...)::{lambda...}>) is named by that
  // function instead.
  int depth = 0;
  size_t end = name.size();
  for (size_t i = 0; i < name.size(); ++i) {
    if (name[i] == '<') ++depth;
    if (name[i] == '>') --depth;
    if (name[i] == '(' && depth == 0) {
      end = i;
      break;
    }
  }
  const std::string function = name.substr(0, end);
  static const std::regex inner(R"(<(\w+)\()");
  if (std::regex_search(function, m, inner)) return m[1].str();
  return function.size() > 80 ? function.substr(0, 80) : function;
}

bool profile_requested_by_environment() {
  static const bool requested = std::getenv("CTRAX_PROFILE_PLANS") != nullptr;
  return requested;
}

}  // namespace

std::string format_kernel_profile(const std::vector<KernelTiming>& timings, size_t top) {
  double total = 0;
  for (const KernelTiming& t : timings) total += t.seconds;
  std::vector<const KernelTiming*> order;
  for (const KernelTiming& t : timings) order.push_back(&t);
  std::stable_sort(order.begin(), order.end(),
                   [](const KernelTiming* a, const KernelTiming* b) { return a->seconds > b->seconds; });
  std::ostringstream out;
  char line[256];
  std::snprintf(line, sizeof line, "%7s %12s %10s %6s %7s  %s\n", "share", "total", "per call", "plan", "kernel",
                "label");
  out << line;
  for (size_t i = 0; i < order.size() && i < top; ++i) {
    const KernelTiming& t = *order[i];
    std::snprintf(line, sizeof line, "%6.1f%% %10.3f ms %7.2f us %6lld %7lld  %s\n",
                  total > 0 ? 100.0 * t.seconds / total : 0.0, 1e3 * t.seconds,
                  t.calls > 0 ? 1e6 * t.seconds / static_cast<double>(t.calls) : 0.0, static_cast<long long>(t.plan),
                  static_cast<long long>(t.kernel), t.label.c_str());
    out << line;
  }
  if (order.size() > top) out << "  (" << order.size() - top << " more kernels)\n";
  std::snprintf(line, sizeof line, "%7s %10.3f ms over %zu kernels\n", "total", 1e3 * total, timings.size());
  out << line;
  return out.str();
}

void check_value(const Tensor& scalar, std::function<std::string(double)> check) {
  CTRAX_REQUIRE(scalar.defined() && scalar.numel() == 1, "check_value: expected a one-element tensor, got ",
                scalar.defined() ? scalar.numel() : 0, " elements");
  CTRAX_REQUIRE(check != nullptr, "check_value: the check is empty");
  if (!scalar.device().is_cpu()) {  // read on the host: no plan for device tensors anyway
    const std::string message = check(scalar.item<double>());
    if (!message.empty()) throw Error(message);
    return;
  }
  const Tensor value = scalar.to(DType::float64).contiguous();
  detail::KernelScope scope;
  detail::run_kernel([p = static_cast<const double*>(value.raw_data()), check = std::move(check)] {
    const std::string message = check(*p);
    if (!message.empty()) throw Error(message);
  });
}

void depend_on_value(const std::shared_ptr<const double>& value) {
  CTRAX_REQUIRE(value != nullptr, "depend_on_value: the value handle is null");
  if (PlanRecorder* recorder = detail::t_capture_state.recorder) recorder->add_value_guard(value);
}

CompileLogSink set_compile_log_sink(CompileLogSink sink) {
  CompileLogSink previous = std::move(log_sink());
  log_sink() = std::move(sink);
  return previous;
}

struct CompiledFunction::Plan {
  std::vector<int64_t> key;
  bool eager = false;                 // unplannable: this signature runs eagerly
  std::vector<Tensor> inputs;         // the buffers the kernels read the inputs from
  std::vector<Tensor> outputs;        // the buffers the kernels leave the results in
  std::vector<PlanKernel> kernels;
  std::vector<std::shared_ptr<Storage>> external;  // storages from outside the plan its kernels touch
  std::vector<std::pair<std::shared_ptr<const double>, double>> guards;  // host values and what they were
  std::shared_ptr<KeyWords> call_key;  // where the draws' kernels read the call's key
  size_t profile_begin = 0;           // with profiling: this plan's first entry in profile_

  bool guards_hold() const {
    for (const auto& [value, seen] : guards)
      if (!(*value == seen)) return false;
    return true;
  }
};

CompiledFunction::CompiledFunction(Function function, CompileOptions options)
    : CompiledFunction(function == nullptr ? KeyedFunction()
                                           : KeyedFunction([f = std::move(function)](const std::vector<Tensor>& in, Key) {
                                               return f(in);
                                             }),
                       std::move(options)) {}

CompiledFunction::CompiledFunction(KeyedFunction function, CompileOptions options)
    : function_(std::move(function)), options_(std::move(options)) {
  CTRAX_REQUIRE(function_ != nullptr, "compile: the function is empty");
  CTRAX_REQUIRE(options_.max_plans >= 1, "compile: max_plans must be >= 1, got ", options_.max_plans);
  if (profile_requested_by_environment()) {
    options_.profile = true;
    log_profile_ = true;
  }
}

CompiledFunction::~CompiledFunction() {
  if (!log_profile_ || profile_.empty()) return;
  // Straight to standard error, not through the compile log sink: that sink carries the
  // fallback notices, which programs and tests watch for.
  try {
    std::cerr << "ctrax: kernel profile of " << options_.name << " (CTRAX_PROFILE_PLANS):\n"
              << format_kernel_profile(profile_) << std::flush;
  } catch (...) {  // a destructor reports what it can and never throws
  }
}

std::vector<KernelTiming> CompiledFunction::kernel_profile() const { return profile_; }
CompiledFunction::CompiledFunction(CompiledFunction&&) noexcept = default;
CompiledFunction& CompiledFunction::operator=(CompiledFunction&&) noexcept = default;

namespace {
// The values that make up a call's signature, in order, given one by one to `emit` (which
// returns false to stop early). One definition for building a key and for matching one.
template <typename Emit>
bool for_each_signature_value(const std::vector<Tensor>& inputs, std::span<const uint64_t> guards, Emit emit) {
  if (!emit(static_cast<int64_t>(guards.size()))) return false;
  for (const uint64_t guard : guards)
    if (!emit(static_cast<int64_t>(guard))) return false;
  if (!emit(static_cast<int64_t>(inputs.size()))) return false;
  for (const Tensor& t : inputs) {
    if (!emit(t.defined() ? static_cast<int64_t>(t.dtype()) : -1)) return false;
    if (!emit(t.defined() ? static_cast<int64_t>(t.device().type) * 1024 + t.device().index : -1)) return false;
    if (!emit(t.rank())) return false;
    for (int d = 0; d < t.rank(); ++d)
      if (!emit(t.shape()[d])) return false;
  }
  return true;
}

// The signature test without building the key (a replay allocates nothing).
bool matches(const std::vector<int64_t>& key, const std::vector<Tensor>& inputs, std::span<const uint64_t> guards) {
  size_t i = 0;
  return for_each_signature_value(inputs, guards, [&](int64_t v) { return i < key.size() && key[i++] == v; }) &&
         i == key.size();
}
}  // namespace

std::vector<int64_t> CompiledFunction::signature(const std::vector<Tensor>& inputs,
                                                 std::span<const uint64_t> guards) const {
  std::vector<int64_t> key;
  for_each_signature_value(inputs, guards, [&](int64_t v) {
    key.push_back(v);
    return true;
  });
  return key;
}

const std::vector<Tensor>& CompiledFunction::operator()(const std::vector<Tensor>& inputs, uint64_t guard) {
  return call(inputs, Key(), std::span<const uint64_t>(&guard, 1));
}

const std::vector<Tensor>& CompiledFunction::operator()(const std::vector<Tensor>& inputs, Key key, uint64_t guard) {
  return call(inputs, key, std::span<const uint64_t>(&guard, 1));
}

const std::vector<Tensor>& CompiledFunction::operator()(const std::vector<Tensor>& inputs, Key key,
                                                        std::initializer_list<uint64_t> guards) {
  return call(inputs, key, std::span<const uint64_t>(guards.begin(), guards.size()));
}

const std::vector<Tensor>& CompiledFunction::call(const std::vector<Tensor>& inputs, Key key,
                                                  std::span<const uint64_t> guards) {
  if (!options_.enabled) {
    ++stats_.eager_calls;
    eager_outputs_ = function_(inputs, key);
    return eager_outputs_;
  }
  for (auto it = plans_.begin(); it != plans_.end(); ++it) {
    if (!matches((*it)->key, inputs, guards)) continue;
    if (!(*it)->guards_hold()) {  // a host value it baked in has changed: record it again
      plans_.erase(it);
      break;
    }
    if (it != plans_.begin()) plans_.splice(plans_.begin(), plans_, it);
    Plan& plan = *plans_.front();
    if (plan.eager) {
      ++stats_.eager_calls;
      eager_outputs_ = function_(inputs, key);
      return eager_outputs_;
    }
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i].defined()) bind_input(plan.inputs[i], inputs[i]);
    *plan.call_key = key.words();
    if (options_.profile) {
      using Clock = std::chrono::steady_clock;
      KernelTiming* timing = profile_.data() + plan.profile_begin;
      for (const PlanKernel& kernel : plan.kernels) {
        const Clock::time_point start = Clock::now();
        kernel();
        timing->seconds += std::chrono::duration<double>(Clock::now() - start).count();
        ++timing->calls;
        ++timing;
      }
    } else {
      for (const PlanKernel& kernel : plan.kernels) kernel();
    }
    ++stats_.replays;
    return plan.outputs;
  }
  return record(signature(inputs, guards), inputs, key);
}

const std::vector<Tensor>& CompiledFunction::record(std::vector<int64_t> signature, const std::vector<Tensor>& inputs,
                                                     Key key) {
  auto plan = std::make_unique<Plan>();
  plan->key = std::move(signature);
  for (const Tensor& t : inputs) {
    if (!t.defined() || !t.device().is_cpu()) {
      plan->inputs.push_back(t);
      continue;
    }
    Tensor buffer(t.shape(), t.dtype(), t.device());
    buffer.copy_(t);
    plan->inputs.push_back(buffer);
  }
  std::string reason;
  int64_t fused = 0;
  {
    if (!arena_) arena_ = std::make_shared<PlanArena>();
    PlanRecorder recorder(arena_);
    recorder.set_fusion(options_.fuse);
    for (const Tensor& t : inputs)
      if (t.defined() && !t.device().is_cpu()) {
        std::ostringstream where;
        where << "an input is on " << t.device();
        recorder.mark_unplannable(where.str());
      }
    plan->outputs = function_(plan->inputs, detail::trace_call_key(key));
    recorder.stop();
    if (recorder.unplannable()) {
      reason = recorder.reason();
    } else {
      plan->kernels = std::move(recorder.kernels());
      plan->external = std::move(recorder.external_storages());
      plan->guards = std::move(recorder.value_guards());
      plan->call_key = recorder.call_key();
      fused = recorder.fused_epilogues();
    }
  }
  ++stats_.recordings;
  if (!reason.empty()) {
    plan->eager = true;
    plan->inputs.clear();
    if (!said_fallback_) {
      say("ctrax: compile: " + options_.name + " runs eagerly: " + reason);
      said_fallback_ = true;
    }
    eager_outputs_ = std::move(plan->outputs);
    plan->outputs.clear();
  }
  stats_.kernels = static_cast<int64_t>(plan->kernels.size());
  stats_.fused_epilogues = fused;
  if (options_.profile && !plan->eager) {
    plan->profile_begin = profile_.size();
    const int64_t number = stats_.recordings;
    for (size_t i = 0; i < plan->kernels.size(); ++i)
      profile_.push_back({number, static_cast<int64_t>(i), kernel_label(plan->kernels[i].target_type()), 0, 0.0});
  }
  plans_.push_front(std::move(plan));
  while (plans_.size() > options_.max_plans) plans_.pop_back();
  stats_.plans = static_cast<int64_t>(plans_.size());
  stats_.arena_bytes = arena_ ? arena_->bytes() : 0;
  return plans_.front()->eager ? eager_outputs_ : plans_.front()->outputs;
}

void CompiledFunction::clear() {
  plans_.clear();
  arena_.reset();
  stats_.plans = 0;
  stats_.arena_bytes = 0;
}

}  // namespace ctrax
