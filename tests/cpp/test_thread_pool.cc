// The fork-join pool (runtime/thread_pool.h): coverage of parallel_for and results that do
// not depend on the thread count.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <mutex>
#include <vector>

#include "quabla/ir/builder.h"
#include "quabla/runtime/thread_pool.h"
#include "test_util.h"

namespace qb {
namespace {


using test::make_buffer;
using test::Program;
using test::read_buffer;
using test::vt;

// Sets the pool size for one scope and restores the previous one.
class ThreadCount {
 public:
  explicit ThreadCount(int n) : saved_(num_threads()) { set_num_threads(n); }
  ~ThreadCount() { set_num_threads(saved_); }
  ThreadCount(const ThreadCount&) = delete;
  ThreadCount& operator=(const ThreadCount&) = delete;

 private:
  int saved_;
};

void check_coverage(std::int64_t n, std::int64_t grain) {
  std::vector<std::atomic<int>> hits(static_cast<std::size_t>(n));
  std::mutex m;
  std::vector<std::pair<std::int64_t, std::int64_t>> chunks;
  parallel_for(n, grain, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) hits[static_cast<std::size_t>(i)].fetch_add(1);
    std::lock_guard<std::mutex> lk(m);
    chunks.emplace_back(b, e);
  });
  for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<std::size_t>(i)].load(), 1) << "index " << i;
  // Chunk boundaries depend on n and grain only.
  EXPECT_EQ(static_cast<std::int64_t>(chunks.size()), (n + grain - 1) / grain);
  for (auto [b, e] : chunks) {
    EXPECT_EQ(b % grain, 0);
    EXPECT_EQ(e, std::min(n, b + grain));
  }
}

TEST(ThreadPool, ParallelForCoversEveryIndexOnce) {
  for (int threads : {1, 2, 3}) {
    ThreadCount tc(threads);
    EXPECT_EQ(num_threads(), threads);
    check_coverage(1003, 64);  // not a multiple of the grain
    check_coverage(10, 3);
    check_coverage(5, 100);  // one short chunk
    check_coverage(1, 1);
  }
}

TEST(ThreadPool, ParallelForEmptyRangeCallsNothing) {
  ThreadCount tc(2);
  int calls = 0;
  parallel_for(0, 8, [&](std::int64_t, std::int64_t) { ++calls; });
  parallel_for(-3, 8, [&](std::int64_t, std::int64_t) { ++calls; });
  EXPECT_EQ(calls, 0);
}

TEST(ThreadPool, NestedParallelForRunsAndCovers) {
  ThreadCount tc(2);
  constexpr std::int64_t outer = 37, inner = 29;
  std::vector<std::atomic<int>> hits(outer * inner);
  parallel_for(outer, 4, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t o = b; o < e; ++o) {
      parallel_for(inner, 5, [&](std::int64_t ib, std::int64_t ie) {
        for (std::int64_t i = ib; i < ie; ++i) hits[static_cast<std::size_t>(o * inner + i)].fetch_add(1);
      });
    }
  });
  for (std::size_t i = 0; i < hits.size(); ++i) ASSERT_EQ(hits[i].load(), 1) << "index " << i;
}

TEST(ThreadPool, ManyRegionsInARow) {
  ThreadCount tc(2);
  std::atomic<std::int64_t> total{0};
  for (int rep = 0; rep < 200; ++rep) {
    parallel_for(100, 7, [&](std::int64_t b, std::int64_t e) { total.fetch_add(e - b); });
  }
  EXPECT_EQ(total.load(), 200 * 100);
}

// Runs reduce_sum of `x` over `axes` with the given thread count and returns the raw bytes.
std::vector<float> reduce_with_threads(int threads, const std::vector<float>& x, Shape shape,
                                       std::vector<std::int64_t> axes) {
  ThreadCount tc(threads);
  Program p;
  ValueId in = p.b.param(vt(DType::f32, shape));
  Attrs a;
  a.dims = std::move(axes);
  ValueId r = p.b.emit1(Op::ReduceSum, {in}, a);
  const auto n_out = p.size_of(r);
  return read_buffer<float>(p.run({r}, {make_buffer(x)})[0], n_out);
}

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::vector<float> test_data(std::size_t n) {
  std::vector<float> x(n);
  std::uint32_t s = 12345;
  for (auto& v : x) {
    s = s * 1664525u + 1013904223u;  // fixed LCG: the same data on every run
    v = static_cast<float>(s >> 8) / static_cast<float>(1u << 24) - 0.3f;
  }
  return x;
}

TEST(ThreadPool, ReduceSumBitwiseIdenticalAcrossThreadCounts) {
  const std::size_t n = 1000000;
  const auto x = test_data(n);
  double ref = 0;
  for (float v : x) ref += v;

  const auto one = reduce_with_threads(1, x, {static_cast<std::int64_t>(n)}, {0});
  const auto two = reduce_with_threads(2, x, {static_cast<std::int64_t>(n)}, {0});
  ASSERT_EQ(one.size(), 1u);
  EXPECT_TRUE(bitwise_equal(one, two)) << one[0] << " vs " << two[0];
  EXPECT_NEAR(one[0], ref, 1e-3 * std::abs(ref) + 1.0);
}

TEST(ThreadPool, ReduceSumOverAxesBitwiseIdenticalAcrossThreadCounts) {
  const auto x = test_data(1000000);
  for (std::vector<std::int64_t> axes : {std::vector<std::int64_t>{0}, std::vector<std::int64_t>{1},
                                         std::vector<std::int64_t>{0, 2}}) {
    const Shape shape{100, 100, 100};
    const auto one = reduce_with_threads(1, x, shape, axes);
    const auto two = reduce_with_threads(2, x, shape, axes);
    EXPECT_TRUE(bitwise_equal(one, two)) << "axes " << shape_str(axes);
    // spot-check one output against a double-precision reference
    double ref = 0;
    std::size_t at = 123;
    if (axes == std::vector<std::int64_t>{0}) {
      ASSERT_EQ(one.size(), 10000u);
      for (int i = 0; i < 100; ++i) ref += x[static_cast<std::size_t>(i) * 10000 + 123];
    } else if (axes == std::vector<std::int64_t>{1}) {
      ASSERT_EQ(one.size(), 10000u);  // output (1, 23)
      for (int j = 0; j < 100; ++j) ref += x[1 * 10000 + static_cast<std::size_t>(j) * 100 + 23];
    } else {
      ASSERT_EQ(one.size(), 100u);
      at = 1;
      for (int i = 0; i < 100; ++i)
        for (int k = 0; k < 100; ++k) ref += x[static_cast<std::size_t>(i) * 10000 + 1 * 100 + k];
    }
    EXPECT_NEAR(one[at], ref, 1e-6 * static_cast<double>(x.size()) / static_cast<double>(one.size()) + 1e-4)
        << "axes " << shape_str(axes);
  }
}

}  // namespace
}  // namespace qb
