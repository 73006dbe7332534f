// What a run configuration will need in memory, estimated before anything is allocated.
//
// What it is for: refusing, with the estimate and the machine's memory, a configuration whose
// counts are each within their allowed ranges but whose product cannot fit (2^40 interactions
// per epoch, 2^20 environments), instead of growing until the process is killed or ends in
// std::bad_alloc. `ctrax train` and `resume` check it before building the task. What it is not
// for: exact accounting; the networks, batches and widths are left out (an impossible network
// already fails at once with "out of memory allocating ... bytes").
#pragma once

#include <cstdint>
#include <string>

#include "run_config.h"

namespace ctrax::tools {

struct MemoryEstimate {
  double environments = 0;  // the training and evaluation copies
  double replay = 0;        // the stored epochs (and the initial random trajectories)
  double working = 0;       // one collection's buffers, a checkpoint's copy, rollout-pass rows
  double total() const { return environments + replay + working; }
  std::string describe() const;  // "about 2.1 GiB (environments 1.9 GiB, replay ..., working ...)"
};

// The estimate (bytes) for `config`: per stored step, the observation (twice: the step's and
// the next), action, reward, return and the distribution inputs; per environment copy and per
// stored piece a measured constant. An epoch of n_trajectories_per_epoch counts each trajectory at the time limit (the
// configured one, else 1000 steps, above every built-in's).
MemoryEstimate estimate_memory(const RunConfig& config);

// The memory this process may still use: MemAvailable of /proc/meminfo (else the physical
// memory), in bytes.
double available_memory();

// Throws ctrax::Error when the estimate exceeds `available` bytes, with both.
void check_memory(const RunConfig& config, double available = available_memory());

}  // namespace ctrax::tools
