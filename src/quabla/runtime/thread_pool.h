// A small fork-join pool for large kernels. Work is cut into chunks whose boundaries depend
// only on the problem size (never on the thread count), and every chunk writes its own
// outputs, so results are bitwise identical for any number of threads (DESIGN.md rule 9).
#pragma once
#include <cstdint>
#include <functional>
#include <utility>

namespace qb {

// Calls fn(begin, end) over [0, n) in chunks of `grain` elements (the last may be shorter),
// spreading chunks over the pool's threads and the caller. Blocks until all are done.
// Nested calls from inside a chunk run serially.
void parallel_for_pooled(std::int64_t n, std::int64_t grain, const std::function<void(std::int64_t, std::int64_t)>& fn);

// fn(begin, end) over [0, n) in chunks of `grain` (fixed boundaries). One chunk runs inline
// without building a std::function: small kernels (loop bodies over a few values) pay no
// allocation or dispatch.
template <class F>
void parallel_for(std::int64_t n, std::int64_t grain, F&& fn) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  if (n <= grain) {
    fn(std::int64_t{0}, n);
    return;
  }
  parallel_for_pooled(n, grain, std::function<void(std::int64_t, std::int64_t)>(std::forward<F>(fn)));
}

// Number of threads kernels may use (the caller included). Defaults to the hardware
// concurrency, or QUABLA_NUM_THREADS when set.
int num_threads();
// The pool's size when it started (QUABLA_NUM_THREADS or the hardware concurrency), whatever
// set_num_threads did since.
int initial_num_threads();
// Changes the pool size (1 runs everything on the caller). Used by tests of determinism.
void set_num_threads(int n);

// While one exists, the pool's idle threads sleep at once instead of spinning for the next
// kernel: for calls into libraries with threads of their own (threaded LAPACK), which need
// every core.
class PoolSpinPause {
 public:
  PoolSpinPause();
  ~PoolSpinPause();
  PoolSpinPause(const PoolSpinPause&) = delete;
  PoolSpinPause& operator=(const PoolSpinPause&) = delete;
};

}  // namespace qb
