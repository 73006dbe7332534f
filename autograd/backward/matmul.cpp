// Backward of matmul (forward: tensor/ops/matmul.cpp).
//
// matmul, C = A B with batch axes broadcast:   dA = dC B^T,   dB = A^T dC.
// The transposes are views (mT), which the GEMM reads without copying. Broadcast batch axes
// are summed away by the tape, except for the commonest case, a 2-D weight applied to every row
// of a [..., m, k] batch: dB is then one GEMM over all the rows (the batch axes merged into k). A 1-D operand is handled as NumPy promotes it: (k) -> (1, k)
// on the left, (k) -> (k, 1) on the right, with the added axis removed again afterwards.

#include "../../tensor/ops.h"
#include "../derivatives.h"

namespace ctrax::autograd_detail {

namespace {

void matmul_backward(const BackwardContext& c, std::span<Tensor> dx) {
  Tensor a = c.inputs[0], b = c.inputs[1], g = c.output_grads[0];
  const bool a_vector = a.rank() == 1, b_vector = b.rank() == 1;
  if (a_vector) {
    a = a.unsqueeze(0);
    g = g.unsqueeze(-1 - (b_vector ? 0 : 1));  // restore the m = 1 axis before n (or last)
  }
  if (b_vector) {
    b = b.unsqueeze(1);
    g = g.unsqueeze(-1);  // restore the n = 1 axis
  }
  // dB before dA: the GEMM for dA is then the last kernel of this backward, directly before the
  // backward of whatever made A (relu's, in a network), which a compiled plan can fold into it
  // as an epilogue (tensor/plan_fusion.h). The two GEMMs are independent; the order changes no value.
  if (c.needs_grad(1)) {
    if (b.rank() == 2 && a.rank() >= 3) {
      // A weight shared by every row of a batch ([B, L, k] @ [k, n], a layer on slices): one GEMM
      // over all B L rows, k = B L, instead of B GEMMs of k = L and a sum over B.
      const int64_t k = a.shape()[a.rank() - 1], n = g.shape()[g.rank() - 1];
      int64_t rows = 1;
      for (int i = 0; i + 1 < a.rank(); ++i) rows *= a.shape()[i];
      const Tensor a2 = a.contiguous().reshape(Shape{rows, k});
      const Tensor g2 = g.contiguous().reshape(Shape{rows, n});
      const Tensor db = matmul(a2.mT(), g2);  // [k, n]
      dx[1] = b_vector ? db.squeeze(-1) : db;
    } else {
      Tensor db = matmul(a.mT(), g);  // [..., k, n]
      dx[1] = b_vector ? db.squeeze(-1) : db;
    }
  }
  if (c.needs_grad(0)) {
    Tensor da = matmul(g, b.mT());  // [..., m, k]
    dx[0] = a_vector ? da.squeeze(-2) : da;
  }
}

constexpr OpDerivative kTable[] = {
    {OpId::matmul, kSavesInputs, matmul_backward},
};

}  // namespace

std::span<const OpDerivative> matmul_derivatives() { return kTable; }

}  // namespace ctrax::autograd_detail
