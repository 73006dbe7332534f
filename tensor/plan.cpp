#include "plan.h"

#include <cstdlib>
#include <cstring>

#include "../kernels/check.h"
#include "storage.h"

namespace ctrax {

namespace detail {
thread_local constinit CaptureState t_capture_state{};

void note_raw_access(const std::shared_ptr<Storage>& storage) {
  PlanRecorder* recorder = t_capture_state.recorder;
  if (recorder == nullptr) return;
  if (t_capture_state.kernel_depth == 0) {
    recorder->mark_unplannable("tensor memory was read or written on the host outside a planned kernel "
                               "(item(), to_vector(), data(), a random draw, or an op without a plan)");
    return;
  }
  recorder->touch(storage);
}

PlanArena* recording_arena() {
  PlanRecorder* recorder = t_capture_state.recorder;
  return recorder == nullptr ? nullptr : recorder->arena().get();
}

std::shared_ptr<PlanArena> recording_arena_handle() {
  PlanRecorder* recorder = t_capture_state.recorder;
  return recorder == nullptr ? nullptr : recorder->arena();
}

void record_constant_bytes(void* data, size_t nbytes) {
  PlanRecorder* recorder = t_capture_state.recorder;
  if (recorder == nullptr || nbytes == 0) return;
  auto bytes = std::make_shared<std::vector<unsigned char>>(static_cast<unsigned char*>(data),
                                                            static_cast<unsigned char*>(data) + nbytes);
  recorder->add_kernel([data, bytes] { std::memcpy(data, bytes->data(), bytes->size()); });
}

void mark_unplannable(const char* what) {
  if (t_capture_state.recorder != nullptr) t_capture_state.recorder->mark_unplannable(what);
}
}  // namespace detail

// ---- PlanRecorder ----------------------------------------------------------------------------

PlanRecorder::PlanRecorder() : arena_(std::make_shared<PlanArena>()) {
  CTRAX_REQUIRE(detail::t_capture_state.recorder == nullptr,
                "PlanRecorder: a plan is already being recorded on this thread (compiled functions do not nest)");
  detail::t_capture_state = detail::CaptureState{this, 0};
}

PlanRecorder::~PlanRecorder() { stop(); }

void PlanRecorder::stop() {
  if (!active_) return;
  active_ = false;
  detail::t_capture_state = detail::CaptureState{};
  arena_->stop_reuse();
}

void PlanRecorder::touch(const std::shared_ptr<Storage>& storage) {
  if (storage == nullptr || storage->arena() == arena_.get()) return;
  if (external_seen_.insert(storage.get()).second) external_.push_back(storage);
}

void PlanRecorder::mark_unplannable(std::string reason) {
  if (reason_.empty()) reason_ = std::move(reason);
}

// ---- PlanArena -------------------------------------------------------------------------------

namespace {
size_t block_class(size_t nbytes) {
  size_t c = 64;
  while (c < nbytes) c <<= 1;
  return c;
}
}  // namespace

PlanArena::~PlanArena() {
  for (void* block : all_) std::free(block);
}

void* PlanArena::take(size_t nbytes) {
  const size_t cls = block_class(nbytes == 0 ? 1 : nbytes);
  if (reuse_) {
    for (size_t i = 0; i < free_.size(); ++i) {
      if (free_[i].first != cls) continue;
      void* block = free_[i].second;
      free_[i] = free_.back();
      free_.pop_back();
      return block;
    }
  }
  void* block = std::aligned_alloc(kStorageAlignment, cls);
  CTRAX_REQUIRE(block != nullptr, "compile: out of memory allocating a plan buffer of ", cls, " bytes");
  all_.push_back(block);
  bytes_ += cls;
  return block;
}

void PlanArena::give(void* block, size_t nbytes) {
  if (reuse_) free_.emplace_back(block_class(nbytes == 0 ? 1 : nbytes), block);
}

}  // namespace ctrax
