// trace.h: the hook through which autodiff watches the tensor ops.
//
// What it is for: letting autograd/ (one layer up) record a graph of the ops a function runs,
// without the tensor layer knowing anything about gradients. The tensor layer only promises:
//   - every differentiable op of op_list.h, once it has computed its outputs, reports itself
//     (its OpId, its inputs, its outputs and the parameters its backward needs, OpAttrs) to
//     the recorder installed on the calling thread, if there is one and one of its inputs is
//     traced;
//   - the ops an op calls internally are not reported (the op is one node of the graph);
//   - a Tensor handle carries two integers, (tape, value), naming the traced value it holds.
//     They are copied with the handle and are zero on every fresh tensor and every view.
// The recorder (autograd/tape.h) decides what to save and how to differentiate.
//
// Cost when nothing is recorded: one thread-local load and a branch per op.
//
// What it is not for: users. Differentiate with autograd/grad.h.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <variant>
#include <vector>

#include "../base/op_list.h"
#include "tensor.h"

namespace ctrax {

// One value per op of op_list.h, in table order.
enum class OpId : uint8_t {
#define CTRAX_OP_ENUM(name, differentiable, result) name,
  CTRAX_FOR_EACH_OP(CTRAX_OP_ENUM)
#undef CTRAX_OP_ENUM
};

inline constexpr bool kOpDifferentiable[] = {
#define CTRAX_OP_DIFF(name, differentiable, result) differentiable,
    CTRAX_FOR_EACH_OP(CTRAX_OP_DIFF)
#undef CTRAX_OP_DIFF
};

inline const char* op_name(OpId op) { return kOpNames[static_cast<int>(op)]; }

// ---- What an op's backward needs besides its inputs and outputs -------------------------------
// Axes are stored as the caller gave them (possibly negative); the backward normalises them
// against the input's rank.

// No parameters (elementwise ops, matmul, reshape, squeeze, unsqueeze, expand, contiguous, cast).
struct NoAttrs {};
// sum, mean, var, std, max, min, prod, logsumexp. `axes` empty means every axis.
struct ReduceAttrs {
  Shape axes;
  bool keepdims = false;
  int64_t correction = 0;  // var, std
};
// softmax, log_softmax, take_along_axis, index_select, scatter_add, concatenate, stack,
// cumsum (flag = reverse), sort (flag = descending), topk (flag = largest).
struct AxisAttrs {
  int axis = 0;
  bool flag = false;
};
// split: the sizes of the parts along the axis.
struct SplitAttrs {
  int axis = 0;
  std::vector<int64_t> sizes;
};
// clip: the bounds. discounted_cumsum: lo holds the discount.
struct ScalarAttrs {
  double lo = 0.0;
  double hi = 0.0;
  int axis = 0;
};
// gelu.
struct GeluAttrs {
  bool approximate = false;
};
// permute: out axis i is input axis perm[i]. flip: the flipped axes.
struct AxesAttrs {
  Shape axes;
};
// slice (and select, which is a slice of one element that drops the axis). `start` is
// already clamped into the axis, so the elements are start, start + step, ...
struct SliceAttrs {
  int axis = 0;
  int64_t start = 0;
  int64_t step = 1;
  bool drop_axis = false;
};
// pad: elements added before and after, per axis.
struct PadAttrs {
  Shape before;
  Shape after;
};

using OpAttrs =
    std::variant<NoAttrs, ReduceAttrs, AxisAttrs, SplitAttrs, ScalarAttrs, GeluAttrs, AxesAttrs, SliceAttrs, PadAttrs>;

// Implemented by autograd's tape.
class OpRecorder {
 public:
  virtual ~OpRecorder() = default;
  // Called after `op` computed `outputs` from `inputs` (none null, all defined). The
  // recorder marks the outputs it traces with Tensor::set_trace().
  virtual void record(OpId op, std::span<const Tensor* const> inputs, std::span<Tensor> outputs,
                      const OpAttrs& attrs) = 0;
};

namespace detail {

// The recorder of this thread and the tape id it stamps on the values it traces.
struct TraceState {
  OpRecorder* recorder = nullptr;
  uint32_t tape = 0;
};
// constinit: no dynamic initialisation, so reading it is a plain thread-local load.
extern thread_local constinit TraceState t_trace_state;
inline TraceState& trace_state() { return t_trace_state; }

// True when autodiff records on this thread and x is one of the values it traces.
inline bool is_traced(const Tensor& x) {
  const TraceState& s = trace_state();
  return s.recorder != nullptr && x.trace_tape() == s.tape;
}

inline bool any_traced(std::span<const Tensor* const> inputs) {
  const TraceState& s = trace_state();
  if (s.recorder == nullptr) return false;
  for (const Tensor* t : inputs)
    if (t->trace_tape() != 0) return true;
  return false;
}

// Suspends recording on this thread for its lifetime (restores the previous recorder).
class RecordingPause {
 public:
  RecordingPause() : state_(trace_state()), saved_(state_.recorder) { state_.recorder = nullptr; }
  ~RecordingPause() { state_.recorder = saved_; }
  RecordingPause(const RecordingPause&) = delete;
  RecordingPause& operator=(const RecordingPause&) = delete;

 private:
  TraceState& state_;
  OpRecorder* saved_;
};

}  // namespace detail

namespace detail {
// The recording path shared by traced_op and traced_list_op: compute with recording paused, then
// report one node.
template <typename Compute, typename MakeAttrs>
Tensor compute_and_record(OpId op, std::span<const Tensor* const> in, Compute& compute, MakeAttrs& make_attrs) {
  Tensor out;
  {
    RecordingPause pause;
    out = compute();
  }
  trace_state().recorder->record(op, in, std::span<Tensor>(&out, 1), make_attrs());
  return out;
}
}  // namespace detail

// Runs compute() and, when autodiff watches one of `inputs`, reports the result as one node
// `op`. The ops compute() calls are not reported. `make_attrs` is called only when recording.
template <typename Compute, typename MakeAttrs>
Tensor traced_op(OpId op, std::initializer_list<const Tensor*> inputs, Compute&& compute, MakeAttrs&& make_attrs) {
  const std::span<const Tensor* const> in(inputs.begin(), inputs.size());
  if (!detail::any_traced(in)) return compute();
  return detail::compute_and_record(op, in, compute, make_attrs);
}

template <typename Compute>
Tensor traced_op(OpId op, std::initializer_list<const Tensor*> inputs, Compute&& compute) {
  return traced_op(op, inputs, std::forward<Compute>(compute), [] { return OpAttrs{}; });
}

// traced_op for ops over a list of tensors (concatenate, stack).
template <typename Compute, typename MakeAttrs>
Tensor traced_list_op(OpId op, const std::vector<Tensor>& inputs, Compute&& compute, MakeAttrs&& make_attrs) {
  if (detail::trace_state().recorder == nullptr) return compute();
  std::vector<const Tensor*> in;
  in.reserve(inputs.size());
  for (const Tensor& t : inputs) in.push_back(&t);
  if (!detail::any_traced(in)) return compute();
  return detail::compute_and_record(op, in, compute, make_attrs);
}

// For ops with a variable number of inputs or outputs (concatenate, stack, split, topk).
inline void record_op(OpId op, std::span<const Tensor* const> inputs, std::span<Tensor> outputs,
                      const OpAttrs& attrs) {
  if (detail::any_traced(inputs)) detail::trace_state().recorder->record(op, inputs, outputs, attrs);
}

}  // namespace ctrax
