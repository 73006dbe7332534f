// GradientTape: records the ops run on watched tensors and differentiates them in reverse; the
// engine under value_and_grad and grad (grad.h, which cover the everyday weights-to-loss case),
// usable directly when a function does not fit their shape:
//
//   GradientTape tape;                       // starts recording on this thread
//   Tensor w = tape.watch(weights);          // w is weights, traced
//   Tensor loss = mean(square(matmul(x, w) - y));
//   std::vector<Tensor> g = tape.gradient(loss, {w});   // stops recording, runs backward
//
// Rules:
//   - One tape records per thread at a time; a tape made while another records takes over
//     until it is destroyed. Mixing values of the two in one op throws (no higher-order or
//     nested differentiation).
//   - Only float32 and float64 tensors can be watched or differentiated; integer and bool
//     values are constants.
//   - gradient() may be called once. Destroying the tape stops recording.
//   - Writing in place (copy_, fill_) into a traced tensor throws; writing into memory a tape
//     saved (through another view) before gradient() runs gives wrong gradients.
// How the nodes are recorded, saved and swept: autograd/README.md.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "../tensor/tensor.h"
#include "../tensor/trace.h"

namespace ctrax {

// What a custom backward receives (custom.h).
struct CustomGradContext {
  std::span<const Tensor> inputs;
  std::span<const Tensor> outputs;
  std::span<const Tensor> output_grads;  // one per output; zeros where nothing used it
};
using CustomBackward = std::function<std::vector<Tensor>(const CustomGradContext&)>;

class GradientTape final : public OpRecorder {
 public:
  GradientTape();
  ~GradientTape() override;
  GradientTape(const GradientTape&) = delete;
  GradientTape& operator=(const GradientTape&) = delete;

  // A handle of x (same memory) whose uses are recorded. x must be float32 or float64.
  Tensor watch(const Tensor& x);

  // d target / d source for each source (each a watched tensor or a value computed from
  // one on this tape), with the source's shape and dtype; zeros where target does not depend
  // on it. target must have one element unless `seed` (d loss / d target, target's shape) is
  // given. Stops recording; a tape computes gradients once.
  std::vector<Tensor> gradient(const Tensor& target, std::span<const Tensor> sources, const Tensor& seed = Tensor());
  std::vector<Tensor> gradient(const Tensor& target, const std::vector<Tensor>& sources, const Tensor& seed = Tensor()) {
    return gradient(target, std::span<const Tensor>(sources), seed);
  }

  // Stops recording (gradient() does it too). Ops run later are not recorded.
  void stop();
  bool recording() const { return installed_; }

  // The tape recording on this thread, or null (also null inside a no-grad scope).
  static GradientTape* current();

  // Appends a node whose backward is user code (custom.h).
  void record_custom(std::span<const Tensor* const> inputs, std::span<Tensor> outputs, CustomBackward backward);

  // OpRecorder: called by the tensor ops (tensor/trace.h).
  void record(OpId op, std::span<const Tensor* const> inputs, std::span<Tensor> outputs,
              const OpAttrs& attrs) override;

  // Number of nodes recorded so far (for tests and benchmarks).
  size_t num_nodes() const;

  struct Buffers;  // the node lists, reused across tapes of a thread (tape.cpp)

 private:
  // Which inputs belong to this tape; throws if one belongs to an enclosing, still-recording
  // tape (nested differentiation).
  bool claim_inputs(std::span<const Tensor* const> inputs, const char* what) const;
  void push_node(int kind, std::span<const Tensor* const> inputs, std::span<Tensor> outputs, uint8_t saves,
                 const OpAttrs& attrs, uint32_t custom_index);

  uint32_t id_;
  uint32_t next_value_ = 1;  // value 0 means "constant"
  bool installed_ = false;
  bool used_ = false;
  detail::TraceState previous_;
  std::unique_ptr<Buffers> buffers_;
};

// While alive, nothing is recorded on this thread (JAX's stop-gradient over a whole block,
// PyTorch's no_grad). Values computed inside are constants to every tape.
class NoGradScope {
 public:
  NoGradScope() = default;

 private:
  detail::RecordingPause pause_;
};

// x as a constant: the same memory, but no gradient flows back through it.
Tensor stop_gradient(const Tensor& x);

}  // namespace ctrax
