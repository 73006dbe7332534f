// A persistent thread pool behind parallel_for (see parallel.h).
//
// Design, and why:
//   - Workers are created once (and again only when set_num_threads changes the count), so a
//     parallel_for costs a wake-up, not a thread creation.
//   - A job is split into `chunks` fixed ranges, chunk i = [n*i/chunks, n*(i+1)/chunks). The
//     split depends only on n, grain and the thread count, never on timing; which thread runs
//     a chunk does vary, which is why callers make each output element depend on one chunk.
//   - Chunks are claimed with one compare-and-swap on a 64-bit word holding
//     (job generation << 32 | chunk count << 16 | next chunk). A worker that wakes late for an old job sees a
//     different generation and claims nothing, so it never reads a job that is being replaced.
//     Job fields are written before the generation is published (release) and read only after
//     a successful claim (acquire), and the caller does not return, so does not post the next
//     job, until every claimed chunk has reported done.
//   - Waiting spins for a few tens of microseconds, then sleeps on a condition variable: RL
//     loops issue parallel work back to back, where a futex sleep/wake would dominate, but an
//     idle pool must not burn the cores.
//   - The caller works too (it claims chunks like a worker), so T threads means T-1 workers.
//   - Nested calls (from inside a chunk) and calls made while another thread owns the pool run
//     serially on the calling thread.
#include "../base/error.h"
#include "parallel.h"

#include "denormals.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace ctrax::kernels {

namespace {

thread_local bool t_in_parallel_region = false;

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

// How long a waiting thread polls before it sleeps.
constexpr auto kSpinDuration = std::chrono::microseconds(50);

// Polls `ready` for up to kSpinDuration; true when it became true.
template <typename Ready>
bool spin_until(Ready ready) {
  const auto deadline = std::chrono::steady_clock::now() + kSpinDuration;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (ready()) return true;
      cpu_relax();
    }
    if (std::chrono::steady_clock::now() >= deadline) return ready();
  }
}

// The claim word. Chunk counts are at most the thread count, which is capped at 1024, so
// 16 bits each for the count and the next index are plenty.
constexpr uint64_t pack_state(uint64_t generation, uint64_t chunks, uint64_t next_chunk) {
  return (generation << 32) | (chunks << 16) | next_chunk;
}
constexpr uint32_t state_generation(uint64_t state) { return static_cast<uint32_t>(state >> 32); }
constexpr uint32_t state_chunks(uint64_t state) { return static_cast<uint32_t>(state >> 16) & 0xffffu; }
constexpr uint32_t state_next_chunk(uint64_t state) { return static_cast<uint32_t>(state) & 0xffffu; }
constexpr int kMaxThreads = 1024;

class Pool {
 public:
  explicit Pool(int threads) : threads_(threads) {
    workers_.reserve(static_cast<size_t>(threads - 1));
    for (int i = 0; i + 1 < threads; ++i) workers_.emplace_back([this] { worker_loop(); });
  }

  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
      stop_flag_.store(true, std::memory_order_release);
    }
    wake_cv_.notify_all();
    for (auto& worker : workers_) worker.join();
  }

  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  int threads() const { return threads_; }

  // Runs fn over `chunks` (2 <= chunks <= threads) fixed chunks of [0, n). Only one caller at
  // a time (the owner of the run lock in parallel_for).
  void run(int64_t n, int64_t chunks, const std::function<void(int64_t, int64_t)>& fn) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      fn_ = &fn;
      fp_mode_ = detail::floating_point_mode();
      n_ = n;
      chunks_ = chunks;
      error_ = nullptr;
      done_.store(0, std::memory_order_relaxed);
      generation_ = (generation_ + 1) & 0xffffffffu;
      state_.store(pack_state(generation_, static_cast<uint64_t>(chunks), 0), std::memory_order_release);
    }
    wake_cv_.notify_all();

    work_on(static_cast<uint32_t>(generation_));

    auto finished = [&] { return done_.load(std::memory_order_acquire) == chunks; };
    if (!spin_until(finished)) {
      std::unique_lock<std::mutex> lock(mutex_);
      done_cv_.wait(lock, finished);
    }
    std::exception_ptr error;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      error = error_;
      error_ = nullptr;
      fn_ = nullptr;
    }
    if (error) std::rethrow_exception(error);
  }

 private:
  // Claims and runs chunks of job `generation` until none are left.
  void work_on(uint32_t generation) {
    for (;;) {
      uint64_t state = state_.load(std::memory_order_acquire);
      int64_t chunk = -1;
      while (state_generation(state) == generation && state_next_chunk(state) < state_chunks(state)) {
        const uint32_t next = state_next_chunk(state);
        if (state_.compare_exchange_weak(state, pack_state(generation, state_chunks(state), next + 1),
                                         std::memory_order_acq_rel, std::memory_order_acquire)) {
          chunk = next;
          break;
        }
      }
      if (chunk < 0) return;  // a newer job, or every chunk of this one is claimed
      // The job's fields are stable from here: the caller waits for this chunk to finish.
      run_chunk(chunk);
    }
  }

  void run_chunk(int64_t chunk) {
    const int64_t begin = n_ * chunk / chunks_;
    const int64_t end = n_ * (chunk + 1) / chunks_;
    const bool was_in_region = t_in_parallel_region;
    t_in_parallel_region = true;
    detail::set_floating_point_mode(fp_mode_);  // the caller's flushing and rounding
    try {
      (*fn_)(begin, end);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
    t_in_parallel_region = was_in_region;
    if (done_.fetch_add(1, std::memory_order_acq_rel) + 1 == chunks_) {
      std::lock_guard<std::mutex> lock(mutex_);
      done_cv_.notify_all();
    }
  }

  void worker_loop() {
    uint32_t seen = 0;
    for (;;) {
      auto has_news = [&] {
        return state_generation(state_.load(std::memory_order_acquire)) != seen ||
               stop_flag_.load(std::memory_order_acquire);
      };
      if (!spin_until(has_news)) {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_cv_.wait(lock, [&] { return stop_ || state_generation(state_.load()) != seen; });
        if (stop_) return;
      }
      if (stop_flag_.load(std::memory_order_acquire)) return;
      seen = state_generation(state_.load(std::memory_order_acquire));
      work_on(seen);
    }
  }

  const int threads_;
  std::vector<std::thread> workers_;

  std::mutex mutex_;
  std::condition_variable wake_cv_;
  std::condition_variable done_cv_;
  bool stop_ = false;                  // guarded by mutex_
  std::atomic<bool> stop_flag_{false};  // mirrors stop_ for spinning workers
  uint64_t generation_ = 0;            // written by the caller only, under mutex_
  unsigned fp_mode_ = 0;               // the caller's floating-point mode (denormals.h), per job

  std::atomic<uint64_t> state_{0};  // (generation << 32) | next chunk to claim
  std::atomic<int64_t> done_{0};    // chunks of the current job that finished

  // The current job; see the header comment for why reads after a claim are safe.
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t n_ = 0;
  int64_t chunks_ = 0;
  std::exception_ptr error_;  // guarded by mutex_
};

// CTRAX_NUM_THREADS, else the hardware thread count. Throws on a value that is not a
// positive integer, so a typo does not silently run single-threaded.
int default_thread_count() {
  if (const char* env = std::getenv("CTRAX_NUM_THREADS"); env != nullptr) {
    const std::string text(env);
    char* end = nullptr;
    errno = 0;
    const long value = std::strtol(text.c_str(), &end, 10);
    CTRAX_REQUIRE(!text.empty() && end == text.c_str() + text.size() && errno == 0 && value >= 1 &&
                      value <= kMaxThreads,
                  "CTRAX_NUM_THREADS must be an integer in [1, 1024], got \"", text, "\"");
    return static_cast<int>(value);
  }
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

// The process-wide pool and its thread count. `run_mutex` is held by the one caller using the
// pool; set_num_threads takes it too, so the pool is never replaced under a running job.
struct PoolState {
  std::mutex run_mutex;
  std::atomic<int> threads{0};  // 0: not configured yet
  std::unique_ptr<Pool> pool;   // guarded by run_mutex; created on first parallel use
};

PoolState& pool_state() {
  static PoolState state;
  return state;
}

int configured_threads() {
  PoolState& state = pool_state();
  int threads = state.threads.load(std::memory_order_acquire);
  if (threads == 0) {
    const int from_env = default_thread_count();  // may throw; then nothing is cached
    int expected = 0;
    state.threads.compare_exchange_strong(expected, from_env, std::memory_order_acq_rel);
    threads = state.threads.load(std::memory_order_acquire);
  }
  return threads;
}

}  // namespace

void set_num_threads(int n) {
  CTRAX_REQUIRE(n >= 1 && n <= kMaxThreads, "set_num_threads: the thread count must be in [1, ",
                kMaxThreads, "], got ", n);
  CTRAX_REQUIRE(!t_in_parallel_region, "set_num_threads: cannot be called inside parallel_for");
  PoolState& state = pool_state();
  std::lock_guard<std::mutex> lock(state.run_mutex);
  if (state.pool && state.pool->threads() != n) {
    state.pool.reset();
  }
  state.threads.store(n, std::memory_order_release);
}

int num_threads() { return configured_threads(); }

bool in_parallel_region() { return t_in_parallel_region; }

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  const int threads = configured_threads();
  const int64_t chunks = std::min<int64_t>(threads, n / grain);
  if (chunks <= 1 || t_in_parallel_region) {
    fn(0, n);
    return;
  }
  PoolState& state = pool_state();
  std::unique_lock<std::mutex> lock(state.run_mutex, std::try_to_lock);
  if (!lock.owns_lock()) {  // another thread is using the pool: do not queue behind it
    fn(0, n);
    return;
  }
  const int pool_threads = state.threads.load(std::memory_order_acquire);
  if (!state.pool || state.pool->threads() != pool_threads) {
    state.pool.reset();
    state.pool = std::make_unique<Pool>(pool_threads);
  }
  state.pool->run(n, std::min<int64_t>(chunks, pool_threads), fn);
}

}  // namespace ctrax::kernels
