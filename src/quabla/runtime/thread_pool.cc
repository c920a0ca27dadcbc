#include "quabla/runtime/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace qb {

namespace {

thread_local bool t_inside_pool_task = false;

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
      ++generation_;
    }
    cv_.notify_all();
    work(task, chunks);
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
  std::int64_t chunks_ = 0, pending_ = 0;
  int active_ = 0;
  std::atomic<std::int64_t> next_{0};
  std::uint64_t generation_ = 0;
  bool stopping_ = false;
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
