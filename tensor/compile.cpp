#include "compile.h"

#include <cstring>
#include <iostream>
#include <sstream>
#include <utility>

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

}  // namespace

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
}

CompiledFunction::~CompiledFunction() = default;
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
    for (const PlanKernel& kernel : plan.kernels) kernel();
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
