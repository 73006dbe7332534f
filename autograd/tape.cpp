// GradientTape: recording and the reverse sweep (see tape.h and README.md).
#include "tape.h"

#include <atomic>
#include <sstream>

#include "../base/error.h"
#include "../tensor/ops.h"
#include "derivatives.h"

namespace ctrax {

using autograd_detail::BackwardContext;
using autograd_detail::OpDerivative;
using autograd_detail::TensorMeta;

namespace {
constexpr int kCustomKind = -1;

// Tape ids are unique per process (0 means untraced), so a tensor traced by a finished tape
// is never mistaken for one of the current tape's values.
std::atomic<uint32_t> g_next_tape_id{1};
uint32_t new_tape_id() {
  uint32_t id = g_next_tape_id.fetch_add(1, std::memory_order_relaxed);
  if (id == 0) id = g_next_tape_id.fetch_add(1, std::memory_order_relaxed);  // wrapped
  return id;
}

std::string describe(const Tensor& t) {
  std::ostringstream out;
  out << t.dtype() << t.shape();
  return out.str();
}
}  // namespace

struct Node {
  int kind = 0;  // an OpId, or kCustomKind
  uint8_t saves = 0;
  uint32_t first_input = 0;  // into input_values / input_meta
  uint32_t first_saved_input = 0;   // into saved_inputs (n_inputs entries if the op saves them)
  uint32_t n_inputs = 0;
  uint32_t first_output_value = 0;  // outputs have consecutive value ids
  uint32_t first_saved_output = 0;  // into saved_outputs (n_outputs entries if the op saves them)
  uint32_t n_outputs = 0;
  uint32_t custom = 0;  // into customs
  OpAttrs attrs;
};

struct GradientTape::Buffers {
  std::vector<Node> nodes;
  std::vector<uint32_t> input_values;  // value id of each node input; 0 for a constant
  std::vector<TensorMeta> input_meta;
  std::vector<Tensor> saved_inputs;   // only of nodes whose op saves its inputs
  std::vector<Tensor> saved_outputs;  // only of nodes whose op saves its outputs
  std::vector<CustomBackward> customs;
  // Scratch of the reverse sweep.
  std::vector<Tensor> grads;  // by value id
  std::vector<uint8_t> relevant;  // value depends on a source
  std::vector<uint8_t> is_source;
  std::vector<Tensor> out_grads, in_grads;
  std::vector<uint8_t> needs;

  // Drops every tensor but keeps the capacity, so a thread's next tape allocates nothing.
  void clear() {
    nodes.clear();
    input_values.clear();
    input_meta.clear();
    saved_inputs.clear();
    saved_outputs.clear();
    customs.clear();
    grads.clear();
    relevant.clear();
    is_source.clear();
    out_grads.clear();
    in_grads.clear();
    needs.clear();
  }

  // Marks the sources (checked to be watched by tape `tape_id`) and every value computed from
  // one: only their gradients are computed.
  void mark_relevant(std::span<const Tensor> sources, uint32_t tape_id, uint32_t n_values);
  // The reverse step of node n: its inputs' gradients from its outputs', accumulated; then frees
  // what n kept for backward and the gradients it consumed.
  void backward_node(Node& n);
};

namespace {
// Buffers of finished tapes of this thread, ready for the next one.
thread_local std::vector<std::unique_ptr<GradientTape::Buffers>> t_buffer_pool;
}  // namespace

GradientTape::GradientTape() : id_(new_tape_id()) {
  if (!t_buffer_pool.empty()) {
    buffers_ = std::move(t_buffer_pool.back());
    t_buffer_pool.pop_back();
  } else {
    buffers_ = std::make_unique<Buffers>();
  }
  previous_ = detail::trace_state();
  detail::trace_state() = detail::TraceState{this, id_};
  installed_ = true;
}

GradientTape::~GradientTape() {
  if (detail::trace_state().recorder == this) detail::trace_state() = previous_;
  buffers_->clear();
  if (t_buffer_pool.size() < 4) t_buffer_pool.push_back(std::move(buffers_));
}

void GradientTape::stop() { installed_ = false; }

GradientTape* GradientTape::current() {
  // Only GradientTape installs itself as a recorder, so the cast is exact.
  auto* tape = static_cast<GradientTape*>(detail::trace_state().recorder);
  return tape != nullptr && tape->installed_ ? tape : nullptr;
}

size_t GradientTape::num_nodes() const { return buffers_->nodes.size(); }

Tensor GradientTape::watch(const Tensor& x) {
  CTRAX_REQUIRE(x.defined(), "GradientTape::watch: the tensor is undefined");
  CTRAX_REQUIRE(is_floating(x.dtype()), "GradientTape::watch: only float32 and float64 tensors can be differentiated, got ",
                describe(x), "; integer and bool tensors are constants (cast with .to(DType::float32) if you mean it)");
  CTRAX_REQUIRE(installed_ && !used_, "GradientTape::watch: the tape has stopped recording");
  Tensor out = x;
  out.set_trace(id_, next_value_++);
  return out;
}

Tensor stop_gradient(const Tensor& x) {
  Tensor out = x;
  out.set_trace(0, 0);
  return out;
}

bool GradientTape::claim_inputs(std::span<const Tensor* const> inputs, const char* what) const {
  bool any = false;
  for (const Tensor* t : inputs) {
    const uint32_t tape = t->trace_tape();
    if (tape == 0) continue;
    if (tape == id_) {
      any = true;
      continue;
    }
    // A value of an enclosing tape that is still recording: its gradient would silently
    // miss this op, so refuse.
    for (auto* outer = static_cast<GradientTape*>(previous_.recorder); outer != nullptr;
         outer = static_cast<GradientTape*>(outer->previous_.recorder)) {
      CTRAX_REQUIRE(outer->id_ != tape || !outer->installed_, what,
                    ": an input is traced by an enclosing GradientTape (or value_and_grad) while an inner one "
                    "records; nested differentiation is not supported. Compute the inner gradient on constants "
                    "(stop_gradient) or move it out of the outer function");
    }
  }
  return any;
}

void GradientTape::record(OpId op, std::span<const Tensor* const> inputs, std::span<Tensor> outputs,
                          const OpAttrs& attrs) {
  if (!installed_ || !claim_inputs(inputs, op_name(op))) return;
  const OpDerivative* d = autograd_detail::find_derivative(op);
  CTRAX_CHECK(d != nullptr, "autodiff: op ", op_name(op), " was recorded but has no derivative");
  push_node(static_cast<int>(op), inputs, outputs, d->saves, attrs, 0);
}

void GradientTape::record_custom(std::span<const Tensor* const> inputs, std::span<Tensor> outputs,
                                 CustomBackward backward) {
  if (!installed_ || !claim_inputs(inputs, "custom_gradient")) return;
  buffers_->customs.push_back(std::move(backward));
  push_node(kCustomKind, inputs, outputs, autograd_detail::kSavesBoth, NoAttrs{},
            static_cast<uint32_t>(buffers_->customs.size() - 1));
}

void GradientTape::push_node(int kind, std::span<const Tensor* const> inputs, std::span<Tensor> outputs,
                             uint8_t saves, const OpAttrs& attrs, uint32_t custom_index) {
  Buffers& b = *buffers_;
  Node& n = b.nodes.emplace_back();
  n.kind = kind;
  n.saves = saves;
  n.custom = custom_index;
  n.attrs = attrs;
  n.first_input = static_cast<uint32_t>(b.input_values.size());
  n.n_inputs = static_cast<uint32_t>(inputs.size());
  n.first_saved_input = static_cast<uint32_t>(b.saved_inputs.size());
  for (const Tensor* t : inputs) {
    b.input_values.push_back(t->trace_tape() == id_ ? t->trace_value() : 0);
    b.input_meta.push_back(TensorMeta{t->shape(), t->dtype()});
    if (saves & autograd_detail::kSavesInputs) b.saved_inputs.push_back(*t);
  }
  n.first_output_value = next_value_;
  n.first_saved_output = static_cast<uint32_t>(b.saved_outputs.size());
  n.n_outputs = static_cast<uint32_t>(outputs.size());
  for (Tensor& o : outputs) {
    const uint32_t v = next_value_++;
    if (is_floating(o.dtype())) o.set_trace(id_, v);  // integer outputs (topk's indices) stay constants
    if (saves & autograd_detail::kSavesOutputs) b.saved_outputs.push_back(o);
  }
}

namespace {
// A backward's raw gradient for an input, in the input's shape and dtype.
void conform(Tensor& g, const TensorMeta& meta) {
  if (g.shape() != meta.shape) g = autograd_detail::sum_to_shape(g, meta.shape);
  if (g.dtype() != meta.dtype) g = g.to(meta.dtype);
}

// acc += g (the accumulation rule: a value used k times gets the sum of k gradients).
void accumulate(Tensor& acc, Tensor&& g) {
  if (!acc.defined()) acc = std::move(g);
  else acc = add(acc, g);
}
}  // namespace

namespace {

void check_target(const Tensor& target, const Tensor& seed) {
  CTRAX_REQUIRE(target.defined(), "GradientTape::gradient: the target is undefined");
  CTRAX_REQUIRE(is_floating(target.dtype()), "GradientTape::gradient: the target must be float32 or float64, got ",
                describe(target));
  if (seed.defined()) {
    CTRAX_REQUIRE(seed.shape() == target.shape(), "GradientTape::gradient: the seed has shape ", seed.shape(),
                  ", expected the target's shape ", target.shape());
  } else {
    CTRAX_REQUIRE(target.numel() == 1, "GradientTape::gradient: the target must have one element (a scalar loss), got ",
                  describe(target), "; sum it first, or pass a seed of its shape for a vector-Jacobian product");
  }
}

// A custom backward's gradients, checked: one per input, each a float tensor that broadcasts to
// its input (an undefined one means zero).
void custom_gradients(const CustomBackward& backward, const CustomGradContext& ctx,
                      std::span<const TensorMeta> meta, const std::vector<uint8_t>& needs, std::vector<Tensor>& in) {
  std::vector<Tensor> result = backward(ctx);
  CTRAX_REQUIRE(result.size() == meta.size(), "custom_gradient: the backward returned ", result.size(),
                " gradients for ", meta.size(), " inputs (return one per input; an undefined Tensor means zero)");
  for (size_t i = 0; i < meta.size(); ++i) {
    if (!needs[i] || !result[i].defined()) continue;
    const Tensor& g = result[i];
    CTRAX_REQUIRE(is_floating(g.dtype()), "custom_gradient: the gradient for input ", i, " is ", describe(g),
                  "; expected a float tensor");
    bool broadcastable = true;
    try {
      broadcastable = broadcast_shapes(g.shape(), meta[i].shape, "custom_gradient") == g.shape();
    } catch (const Error&) {
      broadcastable = false;
    }
    CTRAX_REQUIRE(broadcastable, "custom_gradient: the backward returned a gradient of shape ", g.shape(),
                  " for input ", i, " of shape ", meta[i].shape);
    in[i] = g;
  }
}

}  // namespace

void GradientTape::Buffers::mark_relevant(std::span<const Tensor> sources, uint32_t tape_id, uint32_t n_values) {
  relevant.assign(n_values, 0);
  is_source.assign(n_values, 0);
  for (size_t i = 0; i < sources.size(); ++i) {
    const Tensor& s = sources[i];
    CTRAX_REQUIRE(s.defined(), "GradientTape::gradient: source ", i, " is undefined");
    CTRAX_REQUIRE(is_floating(s.dtype()), "GradientTape::gradient: source ", i, " is ", describe(s),
                  "; only float32 and float64 tensors have gradients (integer and bool tensors are constants)");
    CTRAX_REQUIRE(s.trace_tape() == tape_id && s.trace_value() != 0 && s.trace_value() < n_values,
                  "GradientTape::gradient: source ", i, " (", describe(s),
                  ") is not watched by this tape nor computed from a watched tensor; differentiate with respect to "
                  "the tensor tape.watch(x) returned");
    relevant[s.trace_value()] = 1;
    is_source[s.trace_value()] = 1;
  }
  // Forward over the nodes: a node with a relevant input makes its outputs relevant.
  for (const Node& n : nodes) {
    bool any = false;
    for (uint32_t i = 0; i < n.n_inputs && !any; ++i) any = relevant[input_values[n.first_input + i]] != 0;
    if (any)
      for (uint32_t j = 0; j < n.n_outputs; ++j) relevant[n.first_output_value + j] = 1;
  }
  relevant[0] = 0;
}

void GradientTape::Buffers::backward_node(Node& n) {
  bool any_out = false;
  out_grads.resize(n.n_outputs);
  for (uint32_t j = 0; j < n.n_outputs; ++j) {
    const uint32_t v = n.first_output_value + j;
    Tensor& g = grads[v];
    any_out = any_out || g.defined();
    if (is_source[v]) out_grads[j] = g;  // a source keeps its gradient for the result
    else out_grads[j] = std::move(g);    // consumed
  }
  bool any_in = false;
  needs.resize(n.n_inputs);
  for (uint32_t i = 0; i < n.n_inputs; ++i) {
    const uint32_t v = input_values[n.first_input + i];
    needs[i] = v != 0 && relevant[v];
    any_in = any_in || needs[i];
  }
  const bool saved_in = n.saves & autograd_detail::kSavesInputs, saved_out = n.saves & autograd_detail::kSavesOutputs;
  const std::span<const Tensor> inputs(saved_inputs.data() + n.first_saved_input, saved_in ? n.n_inputs : 0);
  const std::span<const Tensor> outputs(saved_outputs.data() + n.first_saved_output, saved_out ? n.n_outputs : 0);
  const std::span<const TensorMeta> meta(input_meta.data() + n.first_input, n.n_inputs);
  if (any_out && any_in) {
    in_grads.resize(n.n_inputs);  // entries are left undefined by the previous node
    if (n.kind == kCustomKind) {
      for (uint32_t j = 0; j < n.n_outputs; ++j)
        if (!out_grads[j].defined()) out_grads[j] = zeros_like(outputs[j]);
      custom_gradients(customs[n.custom], CustomGradContext{inputs, outputs, out_grads}, meta, needs, in_grads);
    } else {
      const OpDerivative* d = autograd_detail::find_derivative(static_cast<OpId>(n.kind));
      d->backward(BackwardContext{static_cast<OpId>(n.kind), n.attrs, meta, inputs, outputs, out_grads, needs},
                  in_grads);
    }
    for (uint32_t i = 0; i < n.n_inputs; ++i) {
      if (!needs[i] || !in_grads[i].defined()) continue;
      conform(in_grads[i], meta[i]);
      accumulate(grads[input_values[n.first_input + i]], std::move(in_grads[i]));
    }
  }
  // This node is done: free what it kept for backward and the gradients it consumed.
  if (saved_in)
    for (uint32_t i = 0; i < n.n_inputs; ++i) saved_inputs[n.first_saved_input + i].reset();
  if (saved_out)
    for (uint32_t j = 0; j < n.n_outputs; ++j) saved_outputs[n.first_saved_output + j].reset();
  for (Tensor& g : out_grads) g.reset();
  for (Tensor& g : in_grads) g.reset();
  if (n.kind == kCustomKind) customs[n.custom] = nullptr;
}

std::vector<Tensor> GradientTape::gradient(const Tensor& target, std::span<const Tensor> sources, const Tensor& seed) {
  CTRAX_REQUIRE(!used_, "GradientTape::gradient: this tape has already computed gradients (a tape is used once)");
  used_ = true;
  stop();
  detail::RecordingPause pause;  // the backward itself is never recorded
  Buffers& b = *buffers_;
  check_target(target, seed);
  const uint32_t n_values = next_value_;
  b.mark_relevant(sources, id_, n_values);
  b.grads.assign(n_values, Tensor());
  const uint32_t target_value = target.trace_tape() == id_ ? target.trace_value() : 0;
  if (target_value != 0 && target_value < n_values && b.relevant[target_value]) {
    b.grads[target_value] = seed.defined() ? seed.to(target.dtype()).contiguous() : ones_like(target);
  }
  for (size_t k = b.nodes.size(); k-- > 0;) b.backward_node(b.nodes[k]);
  std::vector<Tensor> result;
  result.reserve(sources.size());
  for (const Tensor& s : sources) {
    const Tensor& g = b.grads[s.trace_value()];
    result.push_back(g.defined() ? g : zeros(s.shape(), s.dtype(), s.device()));
  }
  b.clear();
  return result;
}

}  // namespace ctrax
