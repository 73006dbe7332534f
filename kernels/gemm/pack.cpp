// Operand packing for the native GEMM (see pack.h).
#include "pack.h"

#include <cstring>
#include <new>

namespace ctrax::kernels::gemm_detail {

template <typename T>
void pack_a(bool trans_a, const T* a, int64_t lda, int64_t mc, int64_t kc, int mr, T* dst) {
  for (int64_t i0 = 0; i0 < mc; i0 += mr, dst += mr * kc) {
    const int rows = static_cast<int>(mc - i0 < mr ? mc - i0 : mr);
    if (trans_a) {
      // A is stored k x m: row p of the stored matrix holds op(A)(i0.., p) contiguously.
      const T* src = a + i0;
      for (int64_t p = 0; p < kc; ++p) std::memcpy(dst + p * mr, src + p * lda, rows * sizeof(T));
    } else {
      // op(A) = A is m x k: each row is contiguous in p and lands with stride mr.
      for (int i = 0; i < rows; ++i) {
        const T* src = a + (i0 + i) * lda;
        T* out = dst + i;
        for (int64_t p = 0; p < kc; ++p) out[p * mr] = src[p];
      }
    }
  }
}

template <typename T>
void pack_b(bool trans_b, const T* b, int64_t ldb, int64_t kc, int64_t nc, int nr, T* dst) {
  for (int64_t j0 = 0; j0 < nc; j0 += nr, dst += nr * kc) {
    const int cols = static_cast<int>(nc - j0 < nr ? nc - j0 : nr);
    if (!trans_b) {
      const T* src = b + j0;
      for (int64_t p = 0; p < kc; ++p) std::memcpy(dst + p * nr, src + p * ldb, cols * sizeof(T));
    } else {
      // B is stored n x k: column j of op(B) is row j of the stored matrix.
      for (int j = 0; j < cols; ++j) {
        const T* src = b + (j0 + j) * ldb;
        T* out = dst + j;
        for (int64_t p = 0; p < kc; ++p) out[p * nr] = src[p];
      }
    }
  }
}

template <typename T>
void PackBuffer<T>::Free::operator()(T* p) const {
  ::operator delete(p, std::align_val_t(64));
}

template <typename T>
T* PackBuffer<T>::reserve(size_t count) {
  if (count > capacity_) {
    // Grow geometrically so a sequence of slightly larger calls does not reallocate each time.
    const size_t grown = count > 2 * capacity_ ? count : 2 * capacity_;
    data_.reset(static_cast<T*>(::operator new(grown * sizeof(T), std::align_val_t(64))));
    capacity_ = grown;
  }
  return data_.get();
}

template void pack_a<float>(bool, const float*, int64_t, int64_t, int64_t, int, float*);
template void pack_a<double>(bool, const double*, int64_t, int64_t, int64_t, int, double*);
template void pack_b<float>(bool, const float*, int64_t, int64_t, int64_t, int, float*);
template void pack_b<double>(bool, const double*, int64_t, int64_t, int64_t, int, double*);
template class PackBuffer<float>;
template class PackBuffer<double>;

}  // namespace ctrax::kernels::gemm_detail
