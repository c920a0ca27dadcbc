#include "quabla/runtime/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace qb {

namespace {

thread_local bool t_inside_pool_task = false;

// How long a thread spins on an atomic before it sleeps on a condition variable. Loop
// bodies run kernels back to back (a cg iteration is about ten of them, each tens of
// microseconds), and waking a sleeping thread through the kernel takes about as long as
// one such kernel on a virtual machine: on the 2-core development VM a cg iteration of the
// solvers benchmark took 192 us with no spin and 117 us with 50 us of it (20 and 100 gave
// 128 and 118). The spin costs at most this much CPU time after the last kernel of a call.
// QUABLA_POOL_SPIN_US changes it (0: sleep at once, as on a machine shared with other jobs).
std::chrono::microseconds spin_time() {
  static const std::chrono::microseconds t = [] {
    const char* e = std::getenv("QUABLA_POOL_SPIN_US");
    return std::chrono::microseconds(e && *e ? std::clamp(std::atoi(e), 0, 100000) : 50);
  }();
  return t;
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Set while another library's threads need the cores (threaded LAPACK): nobody spins.
std::atomic<int> g_spin_paused{0};

// Spins until done() holds or spin_time() has passed; true when done() held.
template <class Done>
bool spin_until(Done done) {
  const auto spin = spin_time();
  if (spin.count() == 0) return done();
  const auto deadline = std::chrono::steady_clock::now() + spin;
  for (int i = 0;; ++i) {
    if (done()) return true;
    if (g_spin_paused.load(std::memory_order_relaxed) != 0) return false;
    cpu_relax();
    if ((i & 63) == 63 && std::chrono::steady_clock::now() > deadline) return false;
  }
}

class Pool {
 public:
  explicit Pool(int threads) { resize(threads); }
  ~Pool() { stop(); }

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  void resize(int threads) {
    stop();
    stopping_ = false;
    for (int i = 1; i < std::max(1, threads); ++i) workers_.emplace_back([this] { worker_loop(); });
  }

  void run(std::int64_t chunks, const std::function<void(std::int64_t)>& task) {
    std::lock_guard<std::mutex> run_lock(run_mutex_);  // one parallel region at a time
    {
      std::lock_guard<std::mutex> lk(m_);
      task_ = &task;
      chunks_ = chunks;
      next_.store(0);
      pending_ = chunks;
      generation_.store(generation_.load() + 1);
    }
    cv_.notify_all();
    work(task, chunks);
    spin_until([this] { return pending_.load() == 0 && active_.load() == 0; });
    std::unique_lock<std::mutex> lk(m_);
    // Wait for every chunk and for every worker that joined this region to leave it, so no
    // worker can touch `task` after it goes out of scope.
    done_cv_.wait(lk, [this] { return pending_ == 0 && active_ == 0; });
    task_ = nullptr;
  }

 private:
  void work(const std::function<void(std::int64_t)>& task, std::int64_t chunks) {
    t_inside_pool_task = true;
    std::int64_t done = 0;
    for (std::int64_t c; (c = next_.fetch_add(1)) < chunks;) {
      task(c);
      ++done;
    }
    t_inside_pool_task = false;
    std::lock_guard<std::mutex> lk(m_);
    pending_ -= done;
    if (pending_ == 0) done_cv_.notify_all();
  }

  void worker_loop() {
    std::uint64_t seen = 0;
    for (;;) {
      const std::function<void(std::int64_t)>* task = nullptr;
      std::int64_t chunks = 0;
      spin_until([&] { return generation_.load() != seen || stopping_.load(); });
      {
        std::unique_lock<std::mutex> lk(m_);
        cv_.wait(lk, [&] { return stopping_ || (generation_ != seen && task_ != nullptr); });
        if (stopping_) return;
        seen = generation_;
        task = task_;
        chunks = chunks_;
        ++active_;
      }
      work(*task, chunks);
      std::lock_guard<std::mutex> lk(m_);
      --active_;
      if (active_ == 0) done_cv_.notify_all();
    }
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lk(m_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
    workers_.clear();
  }

  std::vector<std::thread> workers_;
  std::mutex run_mutex_, m_;
  std::condition_variable cv_, done_cv_;
  const std::function<void(std::int64_t)>* task_ = nullptr;
  // Written under m_; atomic so that spinning threads may read them without it.
  std::int64_t chunks_ = 0;
  std::atomic<std::int64_t> pending_{0};
  std::atomic<int> active_{0};
  std::atomic<std::int64_t> next_{0};
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<bool> stopping_{false};
};

int default_threads() {
  if (const char* env = std::getenv("QUABLA_NUM_THREADS")) {
    const int n = std::atoi(env);
    if (n > 0) return n;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

Pool& pool() {
  static Pool p(default_threads());
  return p;
}

}  // namespace

int num_threads() { return pool().size(); }

int initial_num_threads() {
  static const int n = default_threads();
  return n;
}

void set_num_threads(int n) { pool().resize(std::max(1, n)); }

PoolSpinPause::PoolSpinPause() { g_spin_paused.fetch_add(1); }
PoolSpinPause::~PoolSpinPause() { g_spin_paused.fetch_sub(1); }

void parallel_for_pooled(std::int64_t n, std::int64_t grain, const std::function<void(std::int64_t, std::int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<std::int64_t>(grain, 1);
  const std::int64_t chunks = (n + grain - 1) / grain;
  if (chunks == 1 || t_inside_pool_task || pool().size() == 1) {
    for (std::int64_t b = 0; b < n; b += grain) fn(b, std::min(n, b + grain));
    return;
  }
  pool().run(chunks, [&](std::int64_t c) { fn(c * grain, std::min(n, (c + 1) * grain)); });
}

}  // namespace qb
