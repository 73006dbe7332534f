// Operand packing for the native GEMM (see pack.h).
#include "pack.h"

#include <cstring>
#include <new>

#if defined(__SSE2__)
#include <emmintrin.h>
#include <xmmintrin.h>
#endif

namespace ctrax::kernels::gemm_detail {

namespace {

// Transposes whole groups of rows of a row-major block into a panel: dst[p * mr + i] = a[i * lda
// + p] for i < the returned count (a multiple of the group size; the caller packs the rest).
// With SSE2 (every x86-64 CPU): 4 x 4 float or 2 x 2 double blocks, a load and a store per
// 4 (2) elements instead of one each, which halves the cost of packing A.
int pack_rows_transposed(const float* a, int64_t lda, int rows, int64_t kc, int mr, float* dst) {
#if defined(__SSE2__)
  int i = 0;
  for (; i + 4 <= rows; i += 4) {
    const float* r0 = a + i * lda;
    const float* r1 = r0 + lda;
    const float* r2 = r1 + lda;
    const float* r3 = r2 + lda;
    float* out = dst + i;
    int64_t p = 0;
    for (; p + 4 <= kc; p += 4) {
      __m128 x0 = _mm_loadu_ps(r0 + p), x1 = _mm_loadu_ps(r1 + p);
      __m128 x2 = _mm_loadu_ps(r2 + p), x3 = _mm_loadu_ps(r3 + p);
      _MM_TRANSPOSE4_PS(x0, x1, x2, x3);
      _mm_storeu_ps(out + (p + 0) * mr, x0);
      _mm_storeu_ps(out + (p + 1) * mr, x1);
      _mm_storeu_ps(out + (p + 2) * mr, x2);
      _mm_storeu_ps(out + (p + 3) * mr, x3);
    }
    for (; p < kc; ++p) {
      out[p * mr + 0] = r0[p];
      out[p * mr + 1] = r1[p];
      out[p * mr + 2] = r2[p];
      out[p * mr + 3] = r3[p];
    }
  }
  return i;
#else
  (void)a, (void)lda, (void)rows, (void)kc, (void)mr, (void)dst;
  return 0;
#endif
}

int pack_rows_transposed(const double* a, int64_t lda, int rows, int64_t kc, int mr, double* dst) {
#if defined(__SSE2__)
  int i = 0;
  for (; i + 2 <= rows; i += 2) {
    const double* r0 = a + i * lda;
    const double* r1 = r0 + lda;
    double* out = dst + i;
    int64_t p = 0;
    for (; p + 2 <= kc; p += 2) {
      const __m128d x0 = _mm_loadu_pd(r0 + p), x1 = _mm_loadu_pd(r1 + p);
      _mm_storeu_pd(out + p * mr, _mm_unpacklo_pd(x0, x1));
      _mm_storeu_pd(out + (p + 1) * mr, _mm_unpackhi_pd(x0, x1));
    }
    for (; p < kc; ++p) {
      out[p * mr + 0] = r0[p];
      out[p * mr + 1] = r1[p];
    }
  }
  return i;
#else
  (void)a, (void)lda, (void)rows, (void)kc, (void)mr, (void)dst;
  return 0;
#endif
}

}  // namespace

template <typename T>
void pack_a(bool trans_a, const T* a, int64_t lda, int64_t mc, int64_t kc, int mr, T* dst) {
  for (int64_t i0 = 0; i0 < mc; i0 += mr, dst += mr * kc) {
    const int rows = static_cast<int>(mc - i0 < mr ? mc - i0 : mr);
    if (trans_a) {
      // A is stored k x m: row p of the stored matrix holds op(A)(i0.., p) contiguously.
      const T* src = a + i0;
      for (int64_t p = 0; p < kc; ++p) std::memcpy(dst + p * mr, src + p * lda, rows * sizeof(T));
    } else {
      // op(A) = A is m x k: each row is contiguous in p and lands with stride mr. Groups of
      // rows go through small register transposes where the CPU baseline has them.
      int i = pack_rows_transposed(a + i0 * lda, lda, rows, kc, mr, dst);
      for (; i < rows; ++i) {
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
      // B is stored n x k: column j of op(B) is row j of the stored matrix, so the panel is a
      // transpose, done with the same register transposes as pack_a (x @ W^T in a backward
      // pass packs this way).
      int j = pack_rows_transposed(b + j0 * ldb, ldb, cols, kc, nr, dst);
      for (; j < cols; ++j) {
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
