// Device placement of RL agents: see device_placement.h.
#include "device_placement.h"

#include <map>
#include <sstream>

#include "../../base/error.h"
#include "../../kernels/cuda/runtime.h"
#include "../../tensor/tree.h"

namespace ctrax {

namespace {

std::string device_name(Device device) {
  std::ostringstream s;
  s << device;
  return s.str();
}

}  // namespace

void require_usable_device(Device device, const std::string& who) {
  if (device.is_cpu()) return;
  CTRAX_REQUIRE(kernels::cuda::available(), who, ": device ", device_name(device),
                " cannot be used: ", kernels::cuda::unavailable_reason());
  const int count = kernels::cuda::device_count();
  CTRAX_REQUIRE(device.index >= 0 && device.index < count, who, ": device ", device_name(device),
                " does not exist; this machine has ", count, " GPU(s), cuda:0 to cuda:", count - 1);
}

void move_trainer_to(Trainer& trainer, Device device, const std::string& who) {
  require_usable_device(device, who);
  CTRAX_REQUIRE(device.is_cpu() || trainer.optimizer().supports_cuda(), who, ": the optimizer ",
                trainer.optimizer().name(), " has no CUDA update, so it cannot train weights on ", device_name(device),
                "; use SGD, Momentum, Adam, AdamW or RMSProp, or device cpu");
  // The trainer's own export and import: import_state checks every name, shape and dtype and
  // replaces weights, state and slots together, so the three stay on one device.
  io::Checkpoint moved;
  trainer.export_state(moved.tensors, moved.fields, "");
  for (auto& [name, tensor] : moved.tensors) tensor = tensor.to(device);
  moved.step = trainer.step();
  moved.manifest_path = "(" + who + " moving its trainer to " + device_name(device) + ")";
  trainer.import_state(moved, "");
}

Batch batch_to(const Batch& batch, Device device) {
  Batch out;
  out.reserve(batch.size());
  for (const Tensor& t : batch) out.push_back(t.defined() ? t.to(device) : t);
  return out;
}

io::Checkpoint checkpoint_on(const io::Checkpoint& checkpoint, Device device,
                             const std::vector<std::string>& keep_on_host) {
  if (device.is_cpu()) return checkpoint;
  io::Checkpoint out = checkpoint;
  for (auto& [name, tensor] : out.tensors) {
    bool host = false;
    for (const std::string& prefix : keep_on_host) host = host || name.compare(0, prefix.size(), prefix) == 0;
    if (!host) tensor = tensor.to(device);
  }
  return out;
}

}  // namespace ctrax
