#include "storage.h"

#include <cstdlib>
#include <new>

#include "../kernels/check.h"

namespace ctrax {

Storage::Storage(size_t nbytes, Device device) : nbytes_(nbytes), device_(device) {
  CTRAX_REQUIRE(device.is_cpu(), "Storage: cannot allocate on ", device,
                ": this build of ctrax has no CUDA backend yet (expected device cpu)");
  // aligned_alloc wants a size that is a multiple of the alignment; zero-sized tensors still
  // get a valid (unused) block so data pointers are never null.
  const size_t rounded = ((nbytes + kStorageAlignment - 1) / kStorageAlignment) * kStorageAlignment;
  CTRAX_REQUIRE(nbytes <= (size_t{1} << 46), "Storage: refusing to allocate ", nbytes,
                " bytes (more than 64 TiB; is a shape wrong?)");
  data_ = std::aligned_alloc(kStorageAlignment, rounded == 0 ? kStorageAlignment : rounded);
  CTRAX_REQUIRE(data_ != nullptr, "Storage: out of memory allocating ", nbytes, " bytes on ", device);
}

Storage::~Storage() { std::free(data_); }

}  // namespace ctrax
