// Plan fusion of GEMM epilogues (see plan_fusion.h).
#include "plan_fusion.h"

#include <algorithm>
#include <optional>

#include "../kernels/gemm.h"
#include "storage.h"
#include "tensor.h"

namespace ctrax {

namespace detail {

namespace {
// The recorder to tell and the index of the kernel it just recorded for the op; nothing when no
// plan is being recorded, the op runs inside another recorded kernel, or the recording does not
// fuse (then no chain is tracked and no freed block is held back).
struct RecordedOp {
  PlanRecorder* recorder;
  size_t index;
};
std::optional<RecordedOp> recorded_op() {
  const CaptureState& s = t_capture_state;
  if (s.recorder == nullptr || s.in_kernel || !s.recorder->fusion() || s.recorder->kernels().empty())
    return std::nullopt;
  return RecordedOp{s.recorder, s.recorder->kernels().size() - 1};
}
}  // namespace

void note_gemm(const GemmCall& call, const Tensor& out) {
  const std::optional<RecordedOp> op = recorded_op();
  if (op && op->recorder->fuser().gemm(call, out.storage(), op->index))
    op->recorder->hold_freed_blocks_through(static_cast<int64_t>(op->index) + 1);
}

void note_bias_add(const void* first, const void* second, void* out_data, const Tensor& out, int64_t rows, int64_t n) {
  const std::optional<RecordedOp> op = recorded_op();
  if (op && op->recorder->fuser().bias_add(first, second, out.dtype(), out.storage(), out_data, rows, n, op->index))
    op->recorder->hold_freed_blocks_through(static_cast<int64_t>(op->index) + 1);  // an activation may follow
}

void note_activation(kernels::UnaryKernel kind, const void* x, void* out_data, const Tensor& out) {
  if (const std::optional<RecordedOp> op = recorded_op())
    op->recorder->fuser().activation(kind, x, out.dtype(), out_data, out.numel(), op->index);
}

void note_relu_backward(const void* g, const void* y, void* out_data, const Tensor& out) {
  if (const std::optional<RecordedOp> op = recorded_op())
    op->recorder->fuser().relu_backward(g, y, out.dtype(), out_data, out.numel(), op->index);
}

}  // namespace detail

bool EpilogueFuser::gemm(const detail::GemmCall& call, const std::shared_ptr<Storage>& out, size_t kernel_index) {
  if (call.dtype != DType::float32 && call.dtype != DType::float64) return false;
  last_gemm_ = std::make_unique<LastGemm>(LastGemm{call, out, kernel_index});
  return true;
}

std::optional<std::pair<EpilogueFuser::LastGemm, std::shared_ptr<Storage>>> EpilogueFuser::take_gemm_before(
    size_t kernel_index) {
  std::unique_ptr<LastGemm> last = std::move(last_gemm_);
  if (!last || last->index + 1 != kernel_index) return std::nullopt;  // not the kernel right after the GEMM
  std::shared_ptr<Storage> out = last->out.lock();
  if (!out) return std::nullopt;
  return std::pair{*last, std::move(out)};
}

EpilogueFuser::Chain& EpilogueFuser::start_chain(const LastGemm& gemm, const std::shared_ptr<Storage>& gemm_out) {
  Chain chain;
  chain.gemm = gemm.call;
  chain.gemm_index = gemm.index;
  chains_.push_back(chain);
  watch(chains_.size() - 1, 0, gemm_out);
  return chains_.back();
}

bool EpilogueFuser::bias_add(const void* first, const void* second, DType dtype,
                             const std::shared_ptr<Storage>& out_storage, void* out, int64_t rows, int64_t n,
                             size_t kernel_index) {
  const auto last = take_gemm_before(kernel_index);
  if (!last) return false;
  const detail::GemmCall& g = last->first.call;
  if (dtype != g.dtype) return false;
  const void* bias = first == g.c ? second : second == g.c ? first : nullptr;
  if (bias == nullptr || bias == g.c || out == g.c) return false;
  if (g.n != n || g.ldc != n || g.m * g.n != rows * n) return false;
  Chain& chain = start_chain(last->first, last->second);
  chain.bias = bias;
  chain.add_out = out;
  chain.add_index = kernel_index;
  chain.skipped[1] = out_storage;
  return true;
}

void EpilogueFuser::activation(kernels::UnaryKernel op, const void* x, DType dtype, void* out, int64_t numel,
                               size_t kernel_index) {
  const auto last = take_gemm_before(kernel_index);
  if (out == x) return;
  if (!chains_.empty()) {
    Chain& chain = chains_.back();
    if (chain.bias != nullptr && !chain.has_activation && chain.gemm.dtype == dtype && chain.add_index + 1 == kernel_index && chain.add_out == x &&
        numel == chain.gemm.m * chain.gemm.n) {
      std::shared_ptr<Storage> skipped = chain.skipped[1].lock();
      if (!skipped) return;
      chain.has_activation = true;
      chain.activation = op;
      chain.activation_out = out;
      chain.activation_index = kernel_index;
      watch(chains_.size() - 1, 1, skipped);
      return;
    }
  }
  // An activation straight after a GEMM (a Dense layer without a bias).
  if (!last) return;
  const detail::GemmCall& g = last->first.call;
  if (x != g.c || g.dtype != dtype || g.ldc != g.n || numel != g.m * g.n) return;
  Chain& chain = start_chain(last->first, last->second);
  chain.has_activation = true;
  chain.activation = op;
  chain.activation_out = out;
  chain.activation_index = kernel_index;
}

void EpilogueFuser::relu_backward(const void* g, const void* y, DType dtype, void* out, int64_t numel,
                                  size_t kernel_index) {
  const auto last = take_gemm_before(kernel_index);
  if (!last) return;
  const detail::GemmCall& g_call = last->first.call;
  if (g != g_call.c || y == g_call.c || out == g_call.c || out == y || g_call.dtype != dtype || g_call.ldc != g_call.n ||
      numel != g_call.m * g_call.n)
    return;
  Chain& chain = start_chain(last->first, last->second);
  chain.has_activation = true;  // the mask stands in the activation's place
  chain.mask = y;
  chain.activation_out = out;
  chain.activation_index = kernel_index;
}

void EpilogueFuser::watch(size_t chain, int link, const std::shared_ptr<Storage>& storage) {
  chains_[chain].skipped[link] = storage;
  watched_.push_back(Watched{chain, link, storage.get(), storage});
}

void EpilogueFuser::check_watched(const Storage* storage) {
  // A buffer that died can no longer be touched: stop watching it (the list stays a few long).
  std::erase_if(watched_, [&](const Watched& w) {
    if (w.alive.expired()) return true;
    if (w.storage != storage) return false;
    chains_[w.chain].used_later[w.link] = true;
    return true;
  });
}

namespace {

// Byte ranges [begin, end) of what a chain's fused kernel reads and writes.
struct Range {
  const char* begin;
  const char* end;
  bool overlaps(const Range& o) const { return begin < o.end && o.begin < end; }
};
Range matrix_range(const void* p, int64_t rows, int64_t cols, int64_t ld, size_t element) {
  const char* b = static_cast<const char*>(p);
  return {b, b + ((rows - 1) * ld + cols) * static_cast<int64_t>(element)};
}

// The fused kernel writes its output while the GEMM still reads A and B (and the bias). The
// separate kernels did not: the add's or activation's output may sit in a block the arena
// recycled from a buffer that died after the GEMM read it (a packed copy of A, say). Such a
// chain stays unfused.
bool output_overlaps_inputs(const detail::GemmCall& g, const void* bias, const void* mask, const void* out) {
  const size_t element = dtype_size(g.dtype);
  const Range written = matrix_range(out, g.m, g.n, g.n, element);
  const Range a = g.trans_a ? matrix_range(g.a, g.k, g.m, g.lda, element) : matrix_range(g.a, g.m, g.k, g.lda, element);
  const Range b = g.trans_b ? matrix_range(g.b, g.n, g.k, g.ldb, element) : matrix_range(g.b, g.k, g.n, g.ldb, element);
  if (written.overlaps(a) || written.overlaps(b)) return true;
  if (mask != nullptr && written.overlaps(matrix_range(mask, g.m, g.n, g.n, element))) return true;
  return bias != nullptr && written.overlaps(matrix_range(bias, 1, g.n, g.n, element));
}

template <typename T>
PlanKernel matmul_with_epilogue(const detail::GemmCall& g, const void* bias, const void* mask, void* out, bool relu,
                        bool in_place_activation, kernels::UnaryKernel activation) {
  const kernels::GemmEpilogue<T> epilogue{static_cast<const T*>(bias), relu, static_cast<const T*>(mask)};
  return [g, epilogue, out = static_cast<T*>(out), in_place_activation, activation] {
    const T* a = static_cast<const T*>(g.a);
    const T* b = static_cast<const T*>(g.b);
    if constexpr (std::is_same_v<T, float>)
      kernels::sgemm_fused(g.trans_a, g.trans_b, g.m, g.n, g.k, a, g.lda, b, g.ldb, out, g.n, epilogue);
    else
      kernels::dgemm_fused(g.trans_a, g.trans_b, g.m, g.n, g.k, a, g.lda, b, g.ldb, out, g.n, epilogue);
    if (in_place_activation) kernels::unary_kernel(activation, out, out, g.m * g.n);
  };
}

}  // namespace

int64_t EpilogueFuser::apply(std::vector<PlanKernel>& kernels) {
  std::vector<bool> removed(kernels.size(), false);
  int64_t fused = 0;
  for (const Chain& chain : chains_) {
    // Link 0 skips the GEMM's output: it must have died untouched by any later kernel.
    if (!chain.skipped[0].expired() || chain.used_later[0]) continue;
    const bool has_bias = chain.bias != nullptr;
    // Link 1 (bias, then activation) skips the add's output likewise.
    bool with_activation =
        chain.has_activation && (!has_bias || (chain.skipped[1].expired() && !chain.used_later[1]));
    if (with_activation && output_overlaps_inputs(chain.gemm, chain.bias, chain.mask, chain.activation_out))
      with_activation = false;  // the bias alone may still fuse
    if (!has_bias && !with_activation) continue;
    void* out = with_activation ? chain.activation_out : chain.add_out;
    if (!with_activation && output_overlaps_inputs(chain.gemm, chain.bias, nullptr, out)) continue;
    const bool masked = with_activation && chain.mask != nullptr;
    const bool relu = with_activation && !masked && chain.activation == kernels::UnaryKernel::relu;
    const bool in_place = with_activation && !masked && !relu;
    const void* mask = masked ? chain.mask : nullptr;
    kernels[chain.gemm_index] =
        chain.gemm.dtype == DType::float32
            ? matmul_with_epilogue<float>(chain.gemm, chain.bias, mask, out, relu, in_place, chain.activation)
            : matmul_with_epilogue<double>(chain.gemm, chain.bias, mask, out, relu, in_place, chain.activation);
    if (has_bias) removed[chain.add_index] = true;
    if (with_activation) removed[chain.activation_index] = true;
    ++fused;
  }
  if (fused > 0) {
    size_t kept = 0;
    for (size_t i = 0; i < kernels.size(); ++i)
      if (!removed[i]) kernels[kept++] = std::move(kernels[i]);
    kernels.resize(kept);
  }
  chains_.clear();
  watched_.clear();
  last_gemm_.reset();
  return fused;
}

}  // namespace ctrax
