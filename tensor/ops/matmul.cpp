// matmul: NumPy matrix multiplication on top of the GEMM kernels (kernels/gemm.h).
//
// What it is for: turning tensors (1-D vectors, matrices, broadcast batches of matrices, any
// strides) into calls of kernels::sgemm / dgemm, without copying operands whose matrices are
// stored row-major or column-major (a .mT() view is just GEMM's transpose flag).
// What it is not for: the multiplication itself, which the GEMM backends own.
//
// Rules (NumPy): a 1-D first operand (k) acts as a row (1, k), a 1-D second operand (k) as a
// column (k, 1), and the added axis is removed from the result; the batch axes (all but the
// last two) broadcast. Both operands must be floating; float32 with float64 computes in
// float64.
//
// On a CUDA device the same layout logic drives kernels::cuda::sgemm (the hand-written version
// selected at run time, or cuBLAS) and cuBLAS's dgemm; operands must share the device.
#include <cstring>
#include <vector>

#include "../plan.h"
#include "../plan_fusion.h"
#include "../trace.h"
#include "../../kernels/gemm.h"
#include "../cuda_arg.h"
#include "../../kernels/cuda/gemm.h"
#include "../ops.h"
#include "reduce_util.h"

namespace ctrax {

namespace {

// How one operand's matrices are handed to GEMM.
struct GemmOperand {
  const char* base = nullptr;   // first element of the first matrix
  bool transposed = false;      // stored column-major: GEMM reads the transpose
  int64_t ld = 1;               // leading dimension (row stride as stored)
  int64_t row_stride = 0;       // element stride between rows (for folding batches into rows)
  Shape batch_strides;          // element strides over the broadcast batch shape (0 = reused)
};

// Finds a no-copy GEMM layout for matrices (rows x cols) with strides (sr, sc): row-major needs
// a unit column stride and rows at least `cols` apart; column-major the mirror image. Size-1
// axes may have any stride. Returns false when neither fits.
bool gemm_layout(int64_t rows, int64_t cols, int64_t sr, int64_t sc, bool& transposed, int64_t& ld) {
  const bool one_row = rows <= 1, one_col = cols <= 1;
  if ((one_col || sc == 1) && (one_row || sr >= std::max<int64_t>(cols, 1))) {
    transposed = false;
    ld = one_row ? std::max<int64_t>(cols, 1) : sr;
    return true;
  }
  if ((one_row || sr == 1) && (one_col || sc >= std::max<int64_t>(rows, 1))) {
    transposed = true;
    ld = one_col ? std::max<int64_t>(rows, 1) : sc;
    return true;
  }
  return false;
}

GemmOperand prepare_operand(Tensor& t, const Shape& batch) {
  const int r = t.rank();
  const int64_t rows = t.shape()[r - 2], cols = t.shape()[r - 1];
  GemmOperand op;
  if (!gemm_layout(rows, cols, t.strides()[r - 2], t.strides()[r - 1], op.transposed, op.ld)) {
    t = t.contiguous();  // e.g. a slice with a step: pack it once
    gemm_layout(rows, cols, t.strides()[r - 2], t.strides()[r - 1], op.transposed, op.ld);
  }
  op.row_stride = t.strides()[r - 2];
  op.base = static_cast<const char*>(t.device_data());  // a device pointer for a GPU matmul
  // Batch strides aligned to the right of the broadcast batch shape; broadcast axes read 0.
  op.batch_strides = Shape::filled(batch.rank(), 0);
  const int shift = batch.rank() - (r - 2);
  for (int d = 0; d < r - 2; ++d)
    op.batch_strides[d + shift] = t.shape()[d] == 1 ? 0 : t.strides()[d];
  return op;
}

// C = op(A) op(B) on the CPU or, with `on_gpu`, on the current CUDA device (pointers are then
// device pointers and the call is asynchronous).
template <typename T>
void gemm(bool on_gpu, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b,
          int64_t ldb, T* c, int64_t ldc) {
  if (on_gpu) {
    if constexpr (std::is_same_v<T, float>) kernels::cuda::sgemm(ta, tb, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
    else kernels::cuda::dgemm(ta, tb, m, n, k, 1.0, a, lda, b, ldb, 0.0, c, ldc);
    return;
  }
  if constexpr (std::is_same_v<T, float>) kernels::sgemm(ta, tb, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
  else kernels::dgemm(ta, tb, m, n, k, 1.0, a, lda, b, ldb, 0.0, c, ldc);
}

// True when b is the same matrix for every batch and a's matrices are rows of one matrix at a
// regular spacing, so (batch..., m, k) @ (k, n) is one (batch*m, k) @ (k, n) GEMM with
// lda = spacing (one call instead of a loop: what a linear layer on a batch of sequences does).
bool batches_fold_into_rows(const GemmOperand& a, const GemmOperand& b, const Shape& batch, int64_t m, int64_t k,
                            int64_t& spacing) {
  if (a.transposed) return false;
  spacing = m > 1 ? a.row_stride : 0;  // with m == 1 the spacing is the innermost batch stride
  int64_t expected = m * spacing;
  for (int d = batch.rank() - 1; d >= 0; --d) {
    if (b.batch_strides[d] != 0) return false;
    if (batch[d] == 1) continue;
    if (spacing == 0) expected = spacing = a.batch_strides[d];
    if (a.batch_strides[d] != expected) return false;
    expected *= batch[d];
  }
  return spacing >= std::max<int64_t>(k, 1);  // rows must not overlap
}

// When the whole product is one GEMM call (one matrix pair, or batches folded into rows), that
// call: what batched_gemm runs, and what a plan may fuse an epilogue into (tensor/plan_fusion.h).
bool as_one_gemm(DType dtype, const GemmOperand& a, const GemmOperand& b, const Shape& batch, int64_t m, int64_t n,
                 int64_t k, void* c, detail::GemmCall& call) {
  const int64_t batches = batch.numel();
  int64_t spacing = 0;
  if (batches == 1) {
    call = detail::GemmCall{dtype, a.transposed, b.transposed, m, n, k, a.base, a.ld, b.base, b.ld, c, n};
    return true;
  }
  if (batches > 1 && batches_fold_into_rows(a, b, batch, m, k, spacing)) {
    call = detail::GemmCall{dtype, false, b.transposed, batches * m, n, k, a.base, spacing, b.base, b.ld, c, n};
    return true;
  }
  return false;
}

template <typename T>
void batched_gemm(bool on_gpu, const GemmOperand& a, const GemmOperand& b, const Shape& batch, int64_t m, int64_t n,
                  int64_t k, T* c) {
  const T* a0 = reinterpret_cast<const T*>(a.base);
  const T* b0 = reinterpret_cast<const T*>(b.base);
  const int64_t batches = batch.numel();
  detail::GemmCall one{};
  if (as_one_gemm(std::is_same_v<T, float> ? DType::float32 : DType::float64, a, b, batch, m, n, k, c, one)) {
    gemm<T>(on_gpu, one.trans_a, one.trans_b, one.m, one.n, one.k, static_cast<const T*>(one.a), one.lda,
            static_cast<const T*>(one.b), one.ldb, c, n);
    return;
  }
  // An odometer over the batch axes keeps the per-matrix cost to a few adds.
  const int nb = batch.rank();
  int64_t index[kMaxRank] = {};
  int64_t a_off = 0, b_off = 0;
  for (int64_t i = 0; i < batches; ++i) {
    gemm<T>(on_gpu, a.transposed, b.transposed, m, n, k, a0 + a_off, a.ld, b0 + b_off, b.ld, c + i * m * n, n);
    for (int d = nb - 1; d >= 0; --d) {
      a_off += a.batch_strides[d];
      b_off += b.batch_strides[d];
      if (++index[d] < batch[d]) break;
      a_off -= batch[d] * a.batch_strides[d];
      b_off -= batch[d] * b.batch_strides[d];
      index[d] = 0;
    }
  }
}

}  // namespace

Tensor matmul(const Tensor& a_in, const Tensor& b_in) {
  return traced_op(OpId::matmul, {&a_in, &b_in}, [&] {
    const Device device = a_in.defined() ? a_in.device() : Device::cpu();
    if (a_in.defined() && b_in.defined() && (a_in.device().is_cuda() || b_in.device().is_cuda())) {
      cuda_detail::require_same_device("matmul", device, b_in, "b");
      cuda_detail::use_device_of(a_in);
    } else {
      detail::require_cpu_input(a_in, "matmul");
      detail::require_cpu_input(b_in, "matmul");
    }
    CTRAX_REQUIRE(a_in.rank() >= 1 && b_in.rank() >= 1, "matmul: operands must have rank >= 1, got shapes ",
                  a_in.shape(), " and ", b_in.shape(), " (use mul to scale by a rank-0 tensor)");
    CTRAX_REQUIRE(is_floating(a_in.dtype()) && is_floating(b_in.dtype()),
                  "matmul: needs floating tensors (float32 or float64), got ", a_in.dtype(), " and ", b_in.dtype(),
                  "; cast first, e.g. x.to(DType::float32)");
    const DType dtype = promote_types(a_in.dtype(), b_in.dtype());
    // NumPy's 1-D promotion: (k) -> (1, k) on the left, (k) -> (k, 1) on the right.
    Tensor a = a_in.to(dtype), b = b_in.to(dtype);
    const bool a_vector = a.rank() == 1, b_vector = b.rank() == 1;
    if (a_vector) a = a.unsqueeze(0);
    if (b_vector) b = b.unsqueeze(1);

    const int64_t m = a.size(-2), k = a.size(-1), k_b = b.size(-2), n = b.size(-1);
    CTRAX_REQUIRE(k == k_b, "matmul: cannot multiply shapes ", a_in.shape(), " and ", b_in.shape(),
                  ": the contracted dimensions differ (", k, " columns of the first vs ", k_b,
                  " rows of the second)");

    // Broadcast the batch axes (everything before the last two).
    const Shape a_batch(a.shape().data(), a.rank() - 2), b_batch(b.shape().data(), b.rank() - 2);
    Shape batch;
    {
      const int nb = std::max(a_batch.rank(), b_batch.rank());
      for (int d = 0; d < nb; ++d) {
        const int da = d - (nb - a_batch.rank()), db = d - (nb - b_batch.rank());
        const int64_t sa = da >= 0 ? a_batch[da] : 1, sb = db >= 0 ? b_batch[db] : 1;
        CTRAX_REQUIRE(sa == sb || sa == 1 || sb == 1, "matmul: the batch dimensions of shapes ", a_in.shape(),
                      " and ", b_in.shape(), " do not broadcast (", a_batch, " vs ", b_batch, ")");
        batch.push_back(sa == 1 ? sb : sa);
      }
    }
    Shape out_shape = batch;
    if (!a_vector) out_shape.push_back(m);
    if (!b_vector) out_shape.push_back(n);

    Tensor out = empty(out_shape, dtype, device);
    if (out.numel() == 0) return out;
    if (k == 0) {  // an empty sum: zeros, without asking GEMM about k = 0
      out.fill_(0.0);
      return out;
    }
    if (device.is_cuda()) detail::mark_unplannable("a matmul on a GPU (plans are CPU-only)");
    detail::KernelScope scope;
    const GemmOperand ga = prepare_operand(a, batch), gb = prepare_operand(b, batch);
    dispatch_floating(dtype, [&](auto tag) {
      using T = decltype(tag);
      T* c = static_cast<T*>(out.device_data());  // a device pointer for a GPU matmul
      detail::run_kernel([on_gpu = device.is_cuda(), ga, gb, batch, m, n, k, c] {
        batched_gemm<T>(on_gpu, ga, gb, batch, m, n, k, c);
      });
      detail::GemmCall call{};
      if (!device.is_cuda() && as_one_gemm(dtype, ga, gb, batch, m, n, k, c, call)) detail::note_gemm(call, out);
    });
    return out;
  });
}

}  // namespace ctrax
