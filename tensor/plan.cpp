#include "plan.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "../base/error.h"
#include "plan_fusion.h"
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

std::shared_ptr<PlanArena> recording_arena() {
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

namespace {
// Recorder serials start at 1: a key whose trace names serial 0 is not traced.
std::atomic<uint64_t> g_next_recorder_serial{1};
}  // namespace

PlanRecorder::PlanRecorder(std::shared_ptr<PlanArena> arena)
    : arena_(arena ? std::move(arena) : std::make_shared<PlanArena>()),
      fuser_(std::make_unique<EpilogueFuser>()),
      serial_(g_next_recorder_serial.fetch_add(1, std::memory_order_relaxed)) {
  CTRAX_REQUIRE(detail::t_capture_state.recorder == nullptr,
                "PlanRecorder: a plan is already being recorded on this thread (compiled functions do not nest)");
  arena_->start_recording();
  detail::t_capture_state = detail::CaptureState{this, 0};
}

PlanRecorder::~PlanRecorder() { stop(); }

void PlanRecorder::stop() {
  if (!active_) return;
  active_ = false;
  detail::t_capture_state = detail::CaptureState{};
  arena_->stop_recording();
  // The recorded function has returned: every buffer only it held is gone, which is what
  // tells the fuser which intermediates nothing reads.
  if (fuse_) fused_ = fuser_->apply(kernels_);
}

void PlanRecorder::hold_freed_blocks_through(int64_t index) {
  hold_through_ = index;
  arena_->set_holding(true);
}

void PlanRecorder::release_held_blocks() {
  hold_through_ = -1;
  arena_->set_holding(false);
}

void PlanRecorder::touch(const std::shared_ptr<Storage>& storage) {
  fuser_->touched(storage.get());
  if (storage == nullptr || storage->arena() == arena_.get()) return;
  if (external_seen_.insert(storage.get()).second) external_.push_back(storage);
}

uint32_t PlanRecorder::add_key_path(std::vector<KeyDerivation> path) {
  key_paths_.push_back(std::move(path));
  return static_cast<uint32_t>(key_paths_.size());
}

void PlanRecorder::mark_unplannable(std::string reason) {
  if (reason_.empty()) reason_ = std::move(reason);
}

// ---- PlanArena -------------------------------------------------------------------------------

namespace {
// Blocks are whole cache lines.
size_t rounded(size_t nbytes) { return ((nbytes == 0 ? 1 : nbytes) + kStorageAlignment - 1) / kStorageAlignment * kStorageAlignment; }
}  // namespace

PlanArena::~PlanArena() {
  for (const Block& b : blocks_) std::free(b.data);
}

void PlanArena::start_recording() {
  for (Block& b : blocks_) b.owner = 0;
  holding_ = false;
  recording_ = true;
}

void* PlanArena::take(size_t nbytes, uint64_t& token) {
  const size_t size = rounded(nbytes);
  token = next_token_++;
  // The smallest free block that fits and wastes at most half of itself.
  Block* best = nullptr;
  if (recording_) {
    for (Block& b : blocks_)
      if (b.owner == 0 && b.bytes >= size && b.bytes <= 2 * size && (best == nullptr || b.bytes < best->bytes)) best = &b;
  }
  if (best == nullptr) {
    void* data = std::aligned_alloc(kStorageAlignment, size);
    CTRAX_REQUIRE(data != nullptr, "compile: out of memory allocating a plan buffer of ", size, " bytes");
    blocks_.push_back(Block{data, size});
    bytes_ += size;
    best = &blocks_.back();
  }
  best->owner = token;
  return best->data;
}

void PlanArena::give(void* block, uint64_t token) {
  for (Block& b : blocks_) {
    if (b.data != block) continue;
    if (b.owner == token) b.owner = holding_ ? kHeld : 0;
    return;
  }
}

void PlanArena::set_holding(bool on) {
  if (holding_ && !on)
    for (Block& b : blocks_)
      if (b.owner == kHeld) b.owner = 0;
  holding_ = on;
}

}  // namespace ctrax
