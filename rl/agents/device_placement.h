// Where an RL agent's networks live (AgentOptions::device), and the few moves between that device
// and the CPU an agent makes: the environments, replay buffer and advantage estimators stay on the
// CPU; per environment step the observations cross once and the policy's outputs come back once;
// per training step each tensor of a batch crosses once (batch_to); checkpoints are written from
// CPU copies and read back onto the agent's device (checkpoint_on). Not for moving single tensors
// (Tensor::to(Device)) or choosing the device (the caller's option). Design: docs/algorithms.md,
// "Devices".
#pragma once

#include <string>
#include <vector>

#include "../../io/checkpoint.h"
#include "../../optim/trainer.h"
#include "../../tensor/device.h"

namespace ctrax {

// Throws ctrax::Error unless tensors can be placed on `device` in this process: the CPU always;
// cuda:N needs a build with the CUDA backend, a usable GPU (kernels::cuda::unavailable_reason()
// otherwise) and N < the number of GPUs. who names the caller ("PPO").
void require_usable_device(Device device, const std::string& who);

// Moves the trainer's weights, state and optimizer slots to `device` (each tensor copied once;
// nothing happens for tensors already there). The trainer is otherwise unchanged (step, rng).
// A GPU needs an optimizer with a CUDA update (Optimizer::supports_cuda()); ctrax::Error naming
// `who`, the optimizer and the device otherwise, before anything is moved.
void move_trainer_to(Trainer& trainer, Device device, const std::string& who);

// Every tensor of the batch on `device`: one transfer each, none for those already there.
Batch batch_to(const Batch& batch, Device device);

// The checkpoint with every tensor whose name does not start with one of `keep_on_host` moved
// to `device` (the checkpoint itself when that is the CPU).
io::Checkpoint checkpoint_on(const io::Checkpoint& checkpoint, Device device,
                             const std::vector<std::string>& keep_on_host);

}  // namespace ctrax
