// derivatives.h: the backward of every differentiable op, as a table indexed by OpId.
//
// What it is for: the one place where the tape (tape.cpp) looks up how to differentiate a
// recorded op and what that op must keep for it. Each family of ops has its own file in
// autograd/backward/, mirroring tensor/ops/, and ends with a table of OpDerivative entries;
// derivatives.cpp gathers the tables and checks that every op op_list.h marks differentiable
// has exactly one entry.
// What it is not for: user code. Differentiate with grad.h or tape.h; a backward of your own
// goes through custom_gradient (custom.h), not a new entry here.
//
// The contract of a backward function (BackwardFn):
//   - It gets the node's attributes, the shapes and dtypes of all inputs, the inputs and
//     outputs the entry asked to save (the spans are empty otherwise), and one gradient per output
//     (undefined when nothing downstream used that output; for a single-output node the tape
//     never calls the backward then).
//   - It writes a gradient into input_grads[i] for every i with ctx.needs_grad(i); leaving one
//     undefined means "zero". It may leave it in the output's broadcast shape and in a wider
//     dtype: the tape sums a gradient down to the input's shape (undoing broadcasting) and
//     casts it to the input's dtype, once, in one place.
//   - It runs with recording paused, using ordinary tensor ops.
#pragma once

#include <cstdint>
#include <span>

#include "../tensor/tensor.h"
#include "../tensor/trace.h"

namespace ctrax::autograd_detail {

struct TensorMeta {
  Shape shape;
  DType dtype = DType::float32;
};

struct BackwardContext {
  OpId op;
  const OpAttrs& attrs;
  std::span<const TensorMeta> input_meta;  // every input
  std::span<const Tensor> inputs;          // every input if the op saves inputs, else empty
  std::span<const Tensor> outputs;         // every output if the op saves outputs, else empty
  std::span<const Tensor> output_grads;    // one per output, undefined = zero
  std::span<const uint8_t> input_needs_grad;

  bool needs_grad(size_t i) const { return input_needs_grad[i] != 0; }
  template <typename A>
  const A& attr() const {
    return std::get<A>(attrs);
  }
};

using BackwardFn = void (*)(const BackwardContext& ctx, std::span<Tensor> input_grads);

// What a node keeps alive until its backward has run.
enum Saves : uint8_t { kSavesNothing = 0, kSavesInputs = 1, kSavesOutputs = 2, kSavesBoth = 3 };

struct OpDerivative {
  OpId op;
  uint8_t saves;
  BackwardFn backward;
};

// The derivative of `op`, or null for an op that is not differentiable.
const OpDerivative* find_derivative(OpId op);

// The tables of the families: autograd/backward/<family>.cpp holds the backward of the ops
// that tensor/ops/<family>.cpp runs forward (the views' forwards are Tensor's methods).
std::span<const OpDerivative> unary_derivatives();    // the unary ops, clip
std::span<const OpDerivative> binary_derivatives();   // add ... minimum, where
std::span<const OpDerivative> reduce_derivatives();   // sum ... logsumexp
std::span<const OpDerivative> matmul_derivatives();   // matmul
std::span<const OpDerivative> softmax_derivatives();  // softmax, log_softmax
std::span<const OpDerivative> index_derivatives();    // take_along_axis, index_select, scatter_add
std::span<const OpDerivative> sort_derivatives();     // sort, topk
std::span<const OpDerivative> join_derivatives();     // concatenate, stack, split, pad, flip
std::span<const OpDerivative> scan_derivatives();     // cumsum, discounted_cumsum
std::span<const OpDerivative> view_derivatives();     // reshape, permute, slice, expand, squeeze, unsqueeze, contiguous, cast

// ---- Helpers shared by the backward files -----------------------------------------------------
// Zeros of `shape` with g added along `axis` at `index` (index and g of the same shape): the
// backward of a gather (index.cpp, sort.cpp).
Tensor scatter_into_zeros(const Shape& shape, int axis, const Tensor& index, const Tensor& g);
// g summed over the axes along which `shape` was broadcast to g's shape (leading axes, and
// axes where shape has 1), then reshaped to `shape`.
Tensor sum_to_shape(const Tensor& g, const Shape& shape);
// The reduced axes of a ReduceAttrs for an input of `rank`, normalised and as a mask.
std::vector<bool> reduced_axes_mask(const ReduceAttrs& a, int rank);
// A reduction's output (or output gradient) with its reduced axes restored as size 1, so it
// broadcasts against the input.
Tensor keep_reduced_dims(const Tensor& t, const ReduceAttrs& a, const Shape& input_shape);

// Backwards with a one-pass host loop on the CPU build the same derivative from ops on other
// devices. While a DeviceFormulasOnCpu is alive on this thread they take the ops path on the
// CPU too, which lets the tests check those formulas without a GPU.
bool device_formulas_on_cpu();
class DeviceFormulasOnCpu {
 public:
  DeviceFormulasOnCpu();
  ~DeviceFormulasOnCpu();
  DeviceFormulasOnCpu(const DeviceFormulasOnCpu&) = delete;
  DeviceFormulasOnCpu& operator=(const DeviceFormulasOnCpu&) = delete;

 private:
  bool saved_;
};

}  // namespace ctrax::autograd_detail
