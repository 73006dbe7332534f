// Where a tensor's memory lives.
//
// What it is for: tagging every tensor with its device from the start, so that the CUDA
// backend slots in without changing the Tensor type. CUDA memory comes from
// kernels/cuda/runtime.h; asking for a CUDA tensor in a build or on a machine without CUDA
// throws ctrax::Error.
// What it is not for: allocating or moving memory (Storage and Tensor::to do that).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

namespace ctrax {

enum class DeviceType : uint8_t { cpu, cuda };

struct Device {
  DeviceType type = DeviceType::cpu;
  int index = 0;

  static Device cpu() { return {DeviceType::cpu, 0}; }
  static Device cuda(int index = 0) { return {DeviceType::cuda, index}; }
  bool is_cpu() const { return type == DeviceType::cpu; }
  bool is_cuda() const { return type == DeviceType::cuda; }
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
};

std::ostream& operator<<(std::ostream& out, Device device);
// Parses "cpu", "cuda" or "cuda:N"; throws ctrax::Error naming the allowed forms otherwise.
Device parse_device(const std::string& text);

}  // namespace ctrax
