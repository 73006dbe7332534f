// Host access to device memory is refused with a clear error (Tensor::data, raw_data), checked without a GPU through Storage::wrap's device tag; device_data() hands the
// pointer on for a kernel of that device.
#include <doctest/doctest.h>

#include <memory>
#include <vector>

#include <ctrax/ctrax.h>

using namespace ctrax;

namespace {

// A float tensor whose storage says it lives on cuda:0 (the memory is host memory no GPU code
// ever sees; only the checks read the tag).
Tensor tagged_device_tensor(std::shared_ptr<std::vector<float>> memory, bool* released) {
  auto storage = Storage::wrap(memory->data(), memory->size() * sizeof(float), Device::cuda(0),
                               [memory, released](void*) { *released = true; });
  return Tensor(storage, Shape{2, 3}, Shape{3, 1}, 0, DType::float32);
}

}  // namespace

TEST_CASE("Tensor: host access to a tensor on another device throws, device_data does not") {
  auto memory = std::make_shared<std::vector<float>>(6, 1.5f);
  bool released = false;
  {
    const Tensor t = tagged_device_tensor(memory, &released);
    CHECK(t.device() == Device::cuda(0));
    CHECK_THROWS_WITH_AS(t.data<float>(), doctest::Contains("is on cuda:0; host code cannot read device memory"), Error);
    CHECK_THROWS_WITH_AS(t.raw_data(), doctest::Contains("t.to(Device::cpu())"), Error);
    // (item() and to_vector() copy to the host first, through the device's own copy: not tried
    // here, where the tagged memory is not really on a device.)
    CHECK_THROWS_AS(t.device_data<double>(), Error);  // the dtype is still checked
    CHECK(t.device_data() == static_cast<void*>(memory->data()));
    CHECK(t.device_data<float>() == memory->data());
    // A view keeps the tag and the check.
    CHECK_THROWS_AS(t.slice(1, 0, 2).data<float>(), Error);
    CHECK_FALSE(released);
  }
  CHECK(released);  // the last view released the wrapped memory
}

TEST_CASE("Storage::wrap: CPU memory viewed without a copy, released with the last view") {
  std::vector<double> values{1, 2, 3, 4};
  int released = 0;
  {
    auto storage = Storage::wrap(values.data(), values.size() * sizeof(double), Device::cpu(),
                                 [&released](void*) { ++released; });
    const Tensor t(storage, Shape{4}, Shape{1}, 0, DType::float64);
    CHECK(sum(t).item<double>() == 10.0);
    values[0] = 11;  // no copy: the tensor sees the change
    CHECK(sum(t).item<double>() == 20.0);
  }
  CHECK(released == 1);
  CHECK_THROWS_WITH_AS(Storage::wrap(nullptr, 8, Device::cpu(), nullptr), doctest::Contains("null data"), Error);
}
