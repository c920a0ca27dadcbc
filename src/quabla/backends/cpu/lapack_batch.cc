#include "quabla/backends/cpu/lapack_batch.h"

#include <cblas.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include "quabla/runtime/thread_pool.h"

namespace qb::cpu {

namespace {

// Matrices per pool task: a fixed split, whatever the thread count.
std::int64_t grain_for(std::int64_t n) { return std::max<std::int64_t>(1, 4096 / std::max<std::int64_t>(1, n * n * n)); }

// One matrix of at least this order has enough work for LAPACK's own threads (OpenBLAS's
// blocked factorizations split their trailing updates; measured at 2000 on 2 cores: solve,
// Cholesky and eigh take 0.5-0.6x of their single-threaded time, as NumPy gets).
constexpr std::int64_t kThreadedLapackMin = 256;

// OpenBLAS's thread count for those calls: QUABLA_LINALG_THREADS, else the count the pool
// started with (QUABLA_NUM_THREADS or the hardware's). Fixed for the process, never
// qb.set_num_threads's value: OpenBLAS's threaded factorizations give different bits for
// different thread counts, and ours must not depend on qb.set_num_threads.
int lapack_threads() {
  static const int v = [] {
    const char* e = std::getenv("QUABLA_LINALG_THREADS");
    const int n = e && *e ? std::atoi(e) : initial_num_threads();
    return std::clamp(n, 1, 64);
  }();
  return v;
}

}  // namespace

void for_each_matrix(std::int64_t batch, std::int64_t n, const std::function<void(std::int64_t, std::int64_t)>& body) {
  const int threads = lapack_threads();
  if (batch != 1 || n < kThreadedLapackMin || threads == 1) {
    parallel_for(batch, grain_for(n), body);
    return;
  }
  static std::mutex serial;
  const std::lock_guard<std::mutex> lock(serial);
  const PoolSpinPause no_spinning;  // OpenBLAS's threads need our idle ones asleep
  struct ThreadedBlas {  // OpenBLAS back to one thread however the call ends
    explicit ThreadedBlas(int n) { scipy_openblas_set_num_threads(n); }
    ~ThreadedBlas() { scipy_openblas_set_num_threads(1); }
    ThreadedBlas(const ThreadedBlas&) = delete;
    ThreadedBlas& operator=(const ThreadedBlas&) = delete;
  } threaded(threads);
  body(std::int64_t{0}, std::int64_t{1});
}

}  // namespace qb::cpu
