// Subnormal flushing: the calling thread's mode, and parallel_for's workers following it.
#include <ctrax/kernels/denormals.h>
#include <ctrax/kernels/parallel.h>
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

using namespace ctrax::kernels;

namespace {

// 1e-20f * 1e-20f = 1e-40f, a subnormal, unless results are flushed. Volatile, so the product is
// computed at run time, in the current mode.
float subnormal_product() {
  volatile float a = 1e-20f, b = 1e-20f;
  return a * b;
}

// Restores the mode and the thread count a test changed.
struct ModeGuard {
  bool flushing = flush_denormals();
  int threads = num_threads();
  ~ModeGuard() {
    set_flush_denormals(flushing);
    set_num_threads(threads);
  }
};

}  // namespace

TEST_CASE("set_flush_denormals flushes subnormal results on the calling thread, and turns it off again") {
  ModeGuard guard;
  if (!set_flush_denormals(false)) {
    CHECK_FALSE(flush_denormals());
    return;  // no such mode on this CPU: nothing changes
  }
  CHECK_FALSE(flush_denormals());
  CHECK(std::fpclassify(subnormal_product()) == FP_SUBNORMAL);
  REQUIRE(set_flush_denormals(true));
  CHECK(flush_denormals());
  CHECK(subnormal_product() == 0.0f);
  volatile float subnormal = 1e-40f;  // DAZ: a subnormal input reads as zero
  CHECK(subnormal * 1.0f == 0.0f);
  set_flush_denormals(false);
  CHECK(std::fpclassify(subnormal_product()) == FP_SUBNORMAL);
}

TEST_CASE("parallel_for runs every chunk in the calling thread's mode, so results do not depend on the thread count") {
  ModeGuard guard;
  if (!set_flush_denormals(false)) return;
  set_num_threads(4);
  for (bool flushing : {true, false, true}) {
    set_flush_denormals(flushing);
    std::vector<float> products(64, -1.0f);
    parallel_for(64, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) products[static_cast<size_t>(i)] = subnormal_product();
    });
    for (float p : products) {
      if (flushing) CHECK(p == 0.0f);
      else CHECK(std::fpclassify(p) == FP_SUBNORMAL);
    }
  }
}
