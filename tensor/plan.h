// Plan: the kernels of one eager run of a function, recorded so they can be run again without
// the tensor layer (no shapes to check, no dispatch, no tape, no allocation, no reference counts).
//
// What it is for: tensor/compile.h. While a PlanRecorder is active on a thread, every op runs
// as usual and each CPU kernel it launches through run_kernel() is also kept, as a closure over
// raw pointers. Storages allocated meanwhile come from the recorder's arena: a block freed
// during the run goes back to the arena and is reused by a later allocation that fits, so the
// arena holds what the run needed at its peak, not the sum of its buffers. The plans of one
// compiled function share one arena (only one of them runs at a time, and every plan rewrites
// its buffers on each replay), so it holds the largest plan's peak. Storages made before the
// recording that a kernel touches are kept alive by the plan.
//
// The contract that makes a replay equal to the eager run: a kernel reads only memory it was
// given pointers to and host values it copied into its closure. Code that reads tensor memory
// on the host (item(), to_vector(), data<T>() outside a kernel: a branch on a value, a
// host-side formula) or draws from a key the recording cannot follow makes the recording
// *unplannable*: the run still completes eagerly, and compile.h falls back to eager for that
// function. Keys derived from the compiled call's key are followed (the key trace below).
//
// What it is not for: users (use compile.h); CUDA tensors (their ops take device pointers
// outside run_kernel, so recording a function that touches one reports it as unplannable).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

namespace ctrax {

class Storage;
class PlanArena;
class EpilogueFuser;

// One recorded kernel.
using PlanKernel = std::function<void()>;

// One step from a random key (tensor/random.h) to a key derived from it: the Philox counter
// {index low, index high, 0, purpose} under the parent key (child `index` of split, purpose 1;
// fold_in(data = index), purpose 2).
struct KeyDerivation {
  uint64_t index;
  uint32_t purpose;
};
// A key's two raw words.
using KeyWords = std::array<uint32_t, 2>;

// Records on the calling thread for its lifetime (recorders do not nest).
class PlanRecorder {
 public:
  // Records into `arena` (its blocks all count as free again: the plans sharing it run one at a
  // time), or into a new one.
  explicit PlanRecorder(std::shared_ptr<PlanArena> arena = nullptr);
  ~PlanRecorder();
  PlanRecorder(const PlanRecorder&) = delete;
  PlanRecorder& operator=(const PlanRecorder&) = delete;

  // Stops recording (the destructor does it too): later ops neither record nor use the arena.
  void stop();
  // True when some code read or wrote tensor memory outside a recorded kernel.
  bool unplannable() const { return !reason_.empty(); }
  // What made it unplannable, for the log line.
  const std::string& reason() const { return reason_; }

  std::vector<PlanKernel>& kernels() { return kernels_; }
  const std::shared_ptr<PlanArena>& arena() const { return arena_; }
  // The storages from before the recording that kernels touch (kept alive by the plan).
  std::vector<std::shared_ptr<Storage>>& external_storages() { return external_; }
  // Host values the recorded function read, with the value each had (see depend_on_value).
  std::vector<std::pair<std::shared_ptr<const double>, double>>& value_guards() { return guards_; }
  // Whether stop() fuses GEMM epilogues (tensor/plan_fusion.h; on by default), and how many
  // chains it fused. Set before the first op: when off, no chain is tracked and no freed block
  // is held back.
  void set_fusion(bool on) { fuse_ = on; }
  bool fusion() const { return fuse_; }
  int64_t fused_epilogues() const { return fused_; }
  // What the ops tell about kernels that may fuse (tensor/plan_fusion.h).
  EpilogueFuser& fuser() { return *fuser_; }

  // ---- Called by the tensor layer ---------------------------------------------------------------
  void add_kernel(PlanKernel kernel) {
    kernels_.push_back(std::move(kernel));
    if (hold_through_ >= 0 && static_cast<int64_t>(kernels_.size()) - 1 > hold_through_) release_held_blocks();
  }
  // Blocks freed from now until the kernel at `index` is recorded are not handed out again
  // before then (tensor/plan_fusion.h: a chain that may still grow must not have its output
  // placed where its GEMM's inputs were).
  void hold_freed_blocks_through(int64_t index);
  void touch(const std::shared_ptr<Storage>& storage);
  void mark_unplannable(std::string reason);
  void release_held_blocks();
  void add_value_guard(std::shared_ptr<const double> value) {
    const double v = *value;
    guards_.emplace_back(std::move(value), v);
  }

  // ---- Random keys derived from the compiled call's key (tensor/random.cpp) ---------------------
  // A key the recording can follow carries a trace: this recorder's serial and an id whose
  // derivation from the call's key is key_path(id). A draw from such a key re-derives it from
  // the slot call_key() when a replay runs it, so each call draws fresh numbers.
  uint64_t serial() const { return serial_; }
  // A new id for a key reached from the call's key by `path` (empty: the call's key itself).
  uint32_t add_key_path(std::vector<KeyDerivation> path);
  const std::vector<KeyDerivation>& key_path(uint32_t id) const { return key_paths_.at(id - 1); }
  // Where a replay writes its call's key; shared with the kernels of the draws.
  const std::shared_ptr<KeyWords>& call_key() const { return call_key_; }

 private:
  std::shared_ptr<PlanArena> arena_;
  std::vector<PlanKernel> kernels_;
  std::vector<std::shared_ptr<Storage>> external_;
  std::unordered_set<const Storage*> external_seen_;
  std::vector<std::pair<std::shared_ptr<const double>, double>> guards_;
  std::vector<std::vector<KeyDerivation>> key_paths_;
  std::shared_ptr<KeyWords> call_key_ = std::make_shared<KeyWords>();
  std::unique_ptr<EpilogueFuser> fuser_;
  uint64_t serial_;
  std::string reason_;
  int64_t fused_ = 0;
  int64_t hold_through_ = -1;  // see hold_freed_blocks_through; -1: not holding
  bool fuse_ = true;
  bool active_ = true;
};

// The blocks of a plan's storages. Shared by the plan and by every storage cut from it, so a
// block outlives both the handles of the eager run and the plan's closures.
class PlanArena {
 public:
  PlanArena() = default;
  ~PlanArena();
  PlanArena(const PlanArena&) = delete;
  PlanArena& operator=(const PlanArena&) = delete;

  // A block of at least nbytes (64-byte aligned): while recording, the smallest free block that
  // fits (if it is at most twice the size), else a new one. `token` names this hand-out.
  void* take(size_t nbytes, uint64_t& token);
  // Back to the free blocks, if the block is still the hand-out `token` (a storage from an
  // earlier recording whose block was handed out again since frees nothing).
  void give(void* block, uint64_t token);
  // A recording starts: every block is free (earlier plans' buffers are rewritten by their own
  // kernels on each replay). Ends with stop_recording().
  void start_recording();
  void stop_recording() {
    set_holding(false);
    recording_ = false;
  }
  // While holding, a block given back is kept from take() until holding stops (see
  // PlanRecorder::hold_freed_blocks_through).
  void set_holding(bool on);
  bool holding() const { return holding_; }
  // Bytes of all blocks.
  size_t bytes() const { return bytes_; }

 private:
  struct Block {
    void* data;
    size_t bytes;
    uint64_t owner = 0;  // the hand-out using it; 0 when free
  };
  // The owner of a block given back while holding.
  static constexpr uint64_t kHeld = ~uint64_t{0};
  std::vector<Block> blocks_;
  uint64_t next_token_ = 1;
  size_t bytes_ = 0;
  bool recording_ = false;
  bool holding_ = false;
};

namespace detail {

struct CaptureState {
  PlanRecorder* recorder = nullptr;
  int kernel_depth = 0;  // > 0 inside KernelScope: raw_data() hands out pointers for a kernel
  bool in_kernel = false;  // a recorded kernel is running: kernels it runs are part of it
};
extern thread_local constinit CaptureState t_capture_state;

// Called by Tensor::raw_data() while a recorder is active.
void note_raw_access(const std::shared_ptr<Storage>& storage);

// Marks the enclosed code as a kernel's set-up: raw_data() calls in it take pointers for the
// kernel rather than reading values on the host. Keep the scope to the pointer arithmetic and
// the run_kernel call.
class KernelScope {
 public:
  KernelScope() { ++t_capture_state.kernel_depth; }
  ~KernelScope() { --t_capture_state.kernel_depth; }
  KernelScope(const KernelScope&) = delete;
  KernelScope& operator=(const KernelScope&) = delete;
};

// Runs kernel() now and, while a recorder is active, keeps a copy of it for replay. The kernel
// must hold by value everything it reads at run time (pointers, sizes, strides, scalars).
template <typename Kernel>
void run_kernel(Kernel&& kernel) {
  PlanRecorder* recorder = t_capture_state.recorder;
  if (recorder == nullptr) {
    kernel();
    return;
  }
  if (t_capture_state.in_kernel) {  // run by a kernel being recorded: its replay runs this too
    kernel();
    return;
  }
  KernelScope scope;
  t_capture_state.in_kernel = true;
  struct Reset {
    ~Reset() { t_capture_state.in_kernel = false; }
  } reset;
  kernel();
  recorder->add_kernel(PlanKernel(std::forward<Kernel>(kernel)));
}

// While recording: a kernel that writes t's current bytes back into it, for a constant made on
// the host (from_vector, arange, eye) inside the recorded function. t is fresh and contiguous.
void record_constant_bytes(void* data, size_t nbytes);

// While recording: the arena to allocate a new storage from (null otherwise).
std::shared_ptr<PlanArena> recording_arena();

// Marks the active recording (if any) unplannable: for host code the raw_data() check cannot
// see, e.g. a value read through a kernel that returns it to the host.
void mark_unplannable(const char* what);

}  // namespace detail

}  // namespace ctrax
