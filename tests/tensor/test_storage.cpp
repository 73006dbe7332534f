// Storage: alignment, the per-thread block cache, and allocation errors.
#include <cstdint>
#include <thread>
#include <vector>

#include <ctrax/kernels/cuda/runtime.h>
#include <ctrax/tensor/storage.h>

#include "test_util.h"

using namespace ctrax;

TEST_CASE("storage: every fresh block is 64-byte aligned, cached or not") {
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{63}, size_t{64}, size_t{65}, size_t{4096}, size_t{1} << 20,
                       (size_t{1} << 20) + 1, size_t{3} << 20}) {
    for (int round = 0; round < 3; ++round) {  // later rounds reuse cached blocks
      Storage s(bytes, Device::cpu());
      INFO("bytes " << bytes);
      CHECK(reinterpret_cast<uintptr_t>(s.data()) % kStorageAlignment == 0);
      CHECK(s.nbytes() == bytes);
      if (bytes > 0) {
        auto* p = static_cast<unsigned char*>(s.data());
        p[0] = 1;
        p[bytes - 1] = 2;  // the whole requested size is usable (ASan checks the bounds)
      }
    }
  }
}

TEST_CASE("storage: reused blocks never alias live tensors") {
  std::vector<Tensor> live;
  for (int i = 0; i < 64; ++i) live.push_back(full(Shape{i % 7 + 1}, static_cast<double>(i)));
  for (int i = 0; i < 64; i += 2) live[i] = Tensor();  // free half, then allocate again
  for (int i = 0; i < 64; i += 2) live[i] = full(Shape{i % 7 + 1}, static_cast<double>(i));
  for (int i = 0; i < 64; ++i) {
    const std::vector<float> v = live[i].to_vector<float>();
    for (float x : v) CHECK(x == static_cast<float>(i));
  }
}

TEST_CASE("storage: a tensor made on one thread can be freed on another") {
  std::vector<Tensor> made;
  std::thread maker([&] {
    for (int i = 0; i < 100; ++i) made.push_back(ones(Shape{16, 16}));
  });
  maker.join();  // the maker's cache is gone; freeing its blocks here must still be safe
  made.clear();
  Tensor again = ones(Shape{16, 16});
  CHECK(sum(again).item<double>() == 256.0);
}

TEST_CASE("storage: impossible sizes and devices are clear errors") {
  test::check_error([] { Storage s(size_t{1} << 50, Device::cpu()); }, {"Storage", "refusing to allocate"});
  // Without a GPU (or without the backend) the reason is named; tests/cuda covers the GPU.
  if (!kernels::cuda::available())
    test::check_error([] { Storage s(16, Device::cuda(0)); }, {"Storage", "cuda:0", kernels::cuda::unavailable_reason()});
}
