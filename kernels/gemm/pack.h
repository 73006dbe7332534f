// Packing of GEMM operands into the panel layout the micro-kernels read (see microkernel.h).
//
// Why pack: a micro-kernel walks k with unit-stride, cache-line-dense loads. Packing copies a
// kc-deep slice of op(A) into MR-row panels, element (i, p) at panel[p * MR + i], and a slice
// of op(B) into NR-column panels, element (p, j) at panel[p * NR + j]. Whatever the transposes
// and leading dimensions were, the kernel then streams contiguous memory that the blocking
// keeps in L1/L2. Rows/columns past the edge are not written (the kernels do not read them).
//
// Also the place where transposes disappear: op(A) = A^T and op(B) = B^T are resolved while
// copying, so the kernels only ever see the one layout.
//
// What it is not for: deciding whether to pack (driver.h reads small operands in place) or
// the narrow path (narrow_body.h), which reads A in place and uses no panels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace ctrax::kernels::gemm_detail {

// op(A) block of mc x kc starting at `a` (already offset to the block origin) into
// ceil(mc / mr) panels of mr * kc elements.
template <typename T>
void pack_a(bool trans_a, const T* a, int64_t lda, int64_t mc, int64_t kc, int mr, T* dst);

// op(B) block of kc x nc starting at `b` into ceil(nc / nr) panels of kc * nr elements.
template <typename T>
void pack_b(bool trans_b, const T* b, int64_t ldb, int64_t kc, int64_t nc, int nr, T* dst);

// A 64-byte aligned scratch buffer that only grows. Each thread owns one per operand and
// type (thread_local), so after the first calls GEMM allocates nothing.
template <typename T>
class PackBuffer {
 public:
  T* reserve(size_t count);

 private:
  struct Free {
    void operator()(T* p) const;
  };
  std::unique_ptr<T, Free> data_;
  size_t capacity_ = 0;
};

}  // namespace ctrax::kernels::gemm_detail
