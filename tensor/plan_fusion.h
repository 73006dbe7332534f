// Plan fusion: a GEMM followed by a bias add and an activation, recorded as three kernels, is
// replayed as one GEMM whose epilogue does the other two (kernels/gemm.h: GemmEpilogue).
//
// What it is for: a Dense layer is matmul, then add(y, bias), then usually relu or tanh. Eagerly
// that is three kernels and two intermediate buffers written and read again. In a plan the
// intermediates are often dead the moment the next op has read them (neither the add's nor
// relu's or tanh's backward keeps its input), so the GEMM can add the bias and apply relu while
// the tile is still in registers, and write only the activation's output. Other activations
// (tanh, sigmoid, ...) run in place on the GEMM's output in the same kernel, saving the buffer
// and a kernel call. In the backward, the GEMM giving a hidden layer's gradient is followed by
// relu's backward (keep the gradient where relu's output is positive): that mask is an epilogue
// too. The bits are those of the separate kernels: each step rounds (or selects) as its op does.
//
// How it decides (the recorder, tensor/plan.h, calls the note_* hooks below right after the
// op's kernel was recorded): a chain is a GEMM kernel, then a bias-add kernel reading exactly the
// GEMM's output with a [n] row broadcast over it, then (optionally) an activation kernel reading
// exactly the add's output; each directly after the other. A link is fused only when the buffer
// it skips (the GEMM's output, the add's output) was never touched by a later kernel and died
// during the recording: nothing in the plan or outside it can read it. Anything else (the buffer
// returned, saved by the tape and read by a backward, viewed by another op) keeps the kernels
// as recorded. The fused kernel writes its output while the GEMM still reads A, B (and the bias
// or mask), so that output must not sit where they do: while a chain may still grow, blocks
// freed meanwhile are held back by the arena (PlanRecorder::hold_freed_blocks_through), and a
// chain whose output overlaps them anyway stays unfused. CompileStats::fused_epilogues counts the fused chains; CompileOptions::fuse turns
// fusion off (for comparing).
//
// What it is not for: fusing elementwise chains in general (this is the one pattern that
// dominates small networks), or CUDA (plans are CPU-only).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "../kernels/elementwise/elementwise.h"
#include "dtype.h"
#include "plan.h"

namespace ctrax {

class Tensor;

namespace detail {

// One GEMM call as kernels::sgemm / dgemm takes it (alpha 1, beta 0): what a matmul kernel ran
// when the whole product was a single call.
struct GemmCall {
  DType dtype;
  bool trans_a, trans_b;
  int64_t m, n, k;
  const void* a;
  int64_t lda;
  const void* b;
  int64_t ldb;
  void* c;
  int64_t ldc;
};

// Hooks for the ops, called right after run_kernel() recorded the op's kernel (no-ops when
// nothing is being recorded, or when the op runs inside another recorded kernel).
// A matmul whose kernel was exactly `call`, writing out's storage.
void note_gemm(const GemmCall& call, const Tensor& out);
// out = x + row (or row + x) with x [rows, n] contiguous and row [n] added to each of its rows;
// `first` and `second` are the two operands' pointers in either order, out_data out's (the
// pointers the kernel was given: taking them again here would count as a host access).
void note_bias_add(const void* first, const void* second, void* out_data, const Tensor& out, int64_t rows,
                   int64_t n);
// out = op(x) elementwise over out's numel contiguous elements, by kernels::unary_kernel.
void note_activation(kernels::UnaryKernel op, const void* x, void* out_data, const Tensor& out);
// out = y > 0 ? g : 0 (relu's backward) over out's numel contiguous elements, g and y laid out
// like out.
void note_relu_backward(const void* g, const void* y, void* out_data, const Tensor& out);

}  // namespace detail

// The fusion state of one recording (owned by its PlanRecorder).
class EpilogueFuser {
 public:
  EpilogueFuser() = default;

  // gemm and bias_add return true when the chain may grow by the next kernel.
  bool gemm(const detail::GemmCall& call, const std::shared_ptr<Storage>& out, size_t kernel_index);
  bool bias_add(const void* first, const void* second, DType dtype, const std::shared_ptr<Storage>& out_storage,
                void* out, int64_t rows, int64_t n, size_t kernel_index);
  void activation(kernels::UnaryKernel op, const void* x, DType dtype, void* out, int64_t numel, size_t kernel_index);
  void relu_backward(const void* g, const void* y, DType dtype, void* out, int64_t numel, size_t kernel_index);
  // A kernel about to be recorded takes a pointer into `storage`.
  void touched(const Storage* storage) {
    if (!watched_.empty()) check_watched(storage);
  }
  // Rewrites `kernels` with the chains that may be fused; returns how many were.
  int64_t apply(std::vector<PlanKernel>& kernels);

 private:
  struct Chain {
    detail::GemmCall gemm;
    size_t gemm_index;
    const void* bias = nullptr;  // null: the activation follows the GEMM directly
    void* add_out = nullptr;
    size_t add_index = 0;
    bool has_activation = false;
    kernels::UnaryKernel activation{};
    void* activation_out = nullptr;
    size_t activation_index = 0;
    const void* mask = nullptr;  // a relu backward after the GEMM: its output is activation_out

    bool used_later[2] = {false, false};  // per link (see Watched), by a kernel after the chain
    std::weak_ptr<Storage> skipped[2];    // the buffers the links skip
  };
  // A buffer a chain would skip, watched for later use until it dies.
  struct Watched {
    size_t chain;
    int link;  // 0: the GEMM's output, 1: the add's output
    const Storage* storage;
    std::weak_ptr<Storage> alive;
  };
  void check_watched(const Storage* storage);
  void watch(size_t chain, int link, const std::shared_ptr<Storage>& storage);

  struct LastGemm {
    detail::GemmCall call;
    std::weak_ptr<Storage> out;
    size_t index;
  };
  // The GEMM recorded right before kernel_index, and its output while it lives (taken: a chain
  // only ever grows from the kernel that directly follows).
  std::optional<std::pair<LastGemm, std::shared_ptr<Storage>>> take_gemm_before(size_t kernel_index);
  // A new chain from that GEMM, watching its output.
  Chain& start_chain(const LastGemm& gemm, const std::shared_ptr<Storage>& gemm_out);
  std::unique_ptr<LastGemm> last_gemm_;
  std::vector<Chain> chains_;
  std::vector<Watched> watched_;
};

}  // namespace ctrax
