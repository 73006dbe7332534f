// RLTask's internals shared by its three source files (task.cpp: construction and batches;
// task_collection.cpp: collection; task_checkpoint.cpp: checkpoints). Not a public header.
#pragma once

#include <cstdint>
#include <initializer_list>

#include "../../tensor/random.h"
#include "../../tensor/shape.h"

namespace ctrax::task_detail {

// What each key derived from RLTaskOptions::key is for (fold_in data), so that no two uses
// share random numbers.
constexpr uint64_t kTrainEnvSeed = 1;
constexpr uint64_t kEvalEnvSeeds = 2;  // also the training environment's after an interrupted collection
constexpr uint64_t kPolicyKeys = 3;
constexpr uint64_t kBatchKeys = 4;
constexpr uint64_t kEvaluationSeeds = 5;  // folded with a stream tag: RLTask::evaluation_seed

inline uint64_t seed_of(Key key) { return (static_cast<uint64_t>(key.words()[1]) << 32) | key.words()[0]; }

// `lead` followed by `rest`.
inline Shape prefixed(std::initializer_list<int64_t> lead, const Shape& rest) {
  Shape out;  // built in place: a collection step checks its policy's output shape with this
  for (int64_t d : lead) out.push_back(d);
  for (int64_t d : rest) out.push_back(d);
  return out;
}

}  // namespace ctrax::task_detail
