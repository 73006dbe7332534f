// Subnormal flushing (see denormals.h): x86's MXCSR register, bits FTZ (flush results to zero,
// 0x8000) and DAZ (read subnormal inputs as zero, 0x40), with the rounding control (0x6000) that
// parallel_for also copies to its workers.
#include "denormals.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <xmmintrin.h>
#define CTRAX_HAS_MXCSR 1
#endif

namespace ctrax::kernels {

namespace {
#ifdef CTRAX_HAS_MXCSR
constexpr unsigned kFlushBits = 0x8040;           // FTZ | DAZ
constexpr unsigned kModeBits = kFlushBits | 0x6000;  // and the rounding control
#endif
}  // namespace

bool set_flush_denormals(bool on) {
#ifdef CTRAX_HAS_MXCSR
  const unsigned csr = _mm_getcsr();
  _mm_setcsr(on ? (csr | kFlushBits) : (csr & ~kFlushBits));
  return true;
#else
  (void)on;
  return false;
#endif
}

bool flush_denormals() {
#ifdef CTRAX_HAS_MXCSR
  return (_mm_getcsr() & kFlushBits) == kFlushBits;
#else
  return false;
#endif
}

namespace detail {

unsigned floating_point_mode() {
#ifdef CTRAX_HAS_MXCSR
  return _mm_getcsr() & kModeBits;
#else
  return 0;
#endif
}

void set_floating_point_mode(unsigned mode) {
#ifdef CTRAX_HAS_MXCSR
  const unsigned csr = _mm_getcsr();
  if ((csr & kModeBits) != mode) _mm_setcsr((csr & ~kModeBits) | mode);
#else
  (void)mode;
#endif
}

}  // namespace detail

}  // namespace ctrax::kernels
