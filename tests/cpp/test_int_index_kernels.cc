// Integer kernels and the traced-index kernels (take, scatter, argsort, searchsorted),
// called directly: the edge cases that XLA (and so JAX) defines and C++ leaves undefined.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "quabla/backends/cpu/kernels.h"
#include "test_util.h"

namespace qb::cpu {
namespace {

using test::bytes;

using I32 = std::int32_t;
constexpr I32 kMin = std::numeric_limits<I32>::min();
constexpr I32 kMax = std::numeric_limits<I32>::max();

std::vector<I32> binary_i32(Op op, const std::vector<I32>& a, const std::vector<I32>& b) {
  std::vector<I32> out(a.size());
  const Operand ops[] = {{bytes(a), false}, {bytes(b), false}};
  elementwise(op, DType::i32, DType::i32, ops, bytes(out), static_cast<std::int64_t>(a.size()));
  return out;
}

TEST(IntKernels, DivisionAndRemainderEdgesAreXlas) {
  const std::vector<I32> a{7, -7, 7, kMin, kMin, 0};
  const std::vector<I32> b{2, 2, 0, -1, 0, 0};
  EXPECT_EQ(binary_i32(Op::Div, a, b), (std::vector<I32>{3, -3, -1, kMin, -1, -1}));
  EXPECT_EQ(binary_i32(Op::Rem, a, b), (std::vector<I32>{1, -1, 7, 0, kMin, 0}));
}

TEST(IntKernels, OverflowWraps) {
  EXPECT_EQ(binary_i32(Op::Add, {kMax}, {1}), (std::vector<I32>{kMin}));
  EXPECT_EQ(binary_i32(Op::Mul, {kMax}, {2}), (std::vector<I32>{-2}));
  EXPECT_EQ(binary_i32(Op::Sub, {kMin}, {1}), (std::vector<I32>{kMax}));
  EXPECT_EQ(binary_i32(Op::Pow, {3, 2, -1, 5}, {4, 31, -3, -1}), (std::vector<I32>{81, kMin, -1, 0}));
}

TEST(IntKernels, ShiftsOutsideTheWidth) {
  EXPECT_EQ(binary_i32(Op::ShiftLeft, {1, 1, 1, -1}, {3, 32, -1, 31}), (std::vector<I32>{8, 0, 0, kMin}));
  EXPECT_EQ(binary_i32(Op::ShiftRight, {-8, -8, 8, 8}, {1, 40, 40, -2}), (std::vector<I32>{-4, -1, 0, 0}));
}

TEST(IntKernels, FloatToIntSaturatesAndSendsNaNToZero) {
  const std::vector<double> x{-2.7, 2.7, 1e20, -1e20, std::numeric_limits<double>::quiet_NaN()};
  std::vector<I32> out(x.size());
  const Operand ops[] = {{bytes(x), false}};
  elementwise(Op::Convert, DType::f64, DType::i32, ops, bytes(out), 5);
  EXPECT_EQ(out, (std::vector<I32>{-2, 2, kMax, kMin, 0}));
}

TEST(IndexKernels, TakeClampsOrFills) {
  const std::vector<double> x{0, 1, 2, 3, 4, 5};  // shape [2, 3], take along axis 1
  const std::vector<std::int64_t> idx{2, -1, 7};
  const std::vector<std::int64_t> shape{2, 3};
  std::vector<double> out(6);
  take(sizeof(double), bytes(x), shape, 1, DType::i64, bytes(idx), 3, false, bytes(out));
  EXPECT_EQ(out, (std::vector<double>{2, 0, 2, 5, 3, 5}));
  take(sizeof(double), bytes(x), shape, 1, DType::i64, bytes(idx), 3, true, bytes(out));
  EXPECT_EQ(out, (std::vector<double>{2, 0, 0, 5, 0, 0}));
}

TEST(IndexKernels, ScatterCombinesInIndexOrderAndDropsOutOfBounds) {
  const std::vector<double> x{1, 1, 1, 1};
  const std::vector<I32> idx{1, 3, 1, 4, -1};
  const std::vector<double> u{2, 3, 5, 100, 100};
  const std::vector<std::int64_t> shape{4};
  std::vector<double> out(4);
  scatter(DType::f64, bytes(x), shape, 0, DType::i32, bytes(idx), 5, bytes(u), 0, bytes(out));
  EXPECT_EQ(out, (std::vector<double>{1, 8, 1, 4}));
  scatter(DType::f64, bytes(x), shape, 0, DType::i32, bytes(idx), 5, bytes(u), 1, bytes(out));
  EXPECT_EQ(out, (std::vector<double>{1, 5, 1, 3}));  // the last update wins
  scatter(DType::f64, bytes(x), shape, 0, DType::i32, bytes(idx), 5, bytes(u), 2, bytes(out));
  EXPECT_EQ(out, (std::vector<double>{1, 10, 1, 3}));
  scatter(DType::f64, bytes(x), shape, 0, DType::i32, bytes(idx), 5, bytes(u), 4, bytes(out));
  EXPECT_EQ(out, (std::vector<double>{1, 5, 1, 3}));
}

TEST(IndexKernels, ArgsortIsStableWithNaNLast) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> x{2, nan, 1, 2, 1};
  std::vector<std::int64_t> out(5);
  argsort(DType::f64, bytes(x), 1, 5, false, DType::i64, bytes(out));
  EXPECT_EQ(out, (std::vector<std::int64_t>{2, 4, 0, 3, 1}));
  argsort(DType::f64, bytes(x), 1, 5, true, DType::i64, bytes(out));
  EXPECT_EQ(out, (std::vector<std::int64_t>{1, 0, 3, 2, 4}));
}

TEST(IndexKernels, SearchSortedLeftAndRight) {
  const std::vector<double> a{1, 2, 2, 3};
  const std::vector<double> v{0, 2, 2.5, 9};
  std::vector<I32> out(4);
  searchsorted(DType::f64, bytes(a), 1, 4, bytes(v), 4, false, DType::i32, bytes(out));
  EXPECT_EQ(out, (std::vector<I32>{0, 1, 3, 4}));
  searchsorted(DType::f64, bytes(a), 1, 4, bytes(v), 4, true, DType::i32, bytes(out));
  EXPECT_EQ(out, (std::vector<I32>{0, 3, 3, 4}));
}

}  // namespace
}  // namespace qb::cpu

namespace qb::cpu {
namespace {

// Batches of tiny products skip BLAS (gemm.cc): the result matches a reference loop, and a
// transposed operand read through the flag gives the same bits as a materialised transpose.
TEST(SmallProducts, MatchReferenceAndTransposeFlags) {
  const std::int64_t batch = 3, m = 4, k = 5, n = 2;
  std::vector<double> a(batch * m * k), b(batch * k * n), at(batch * k * m);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = std::sin(0.7 * static_cast<double>(i)) + 0.1;
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = std::cos(0.3 * static_cast<double>(i));
  for (std::int64_t t = 0; t < batch; ++t)
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t p = 0; p < k; ++p) at[t * k * m + p * m + i] = a[t * m * k + i * k + p];
  std::vector<double> c(batch * m * n), ct(batch * m * n);
  matmul(DType::f64, bytes(a), bytes(b), bytes(c), batch, m, k, n);
  matmul(DType::f64, bytes(at), bytes(b), bytes(ct), batch, m, k, n, /*trans_a=*/true);
  EXPECT_EQ(c, ct);
  for (std::int64_t t = 0; t < batch; ++t)
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        double ref = 0;
        for (std::int64_t p = 0; p < k; ++p) ref += a[t * m * k + i * k + p] * b[t * k * n + p * n + j];
        EXPECT_NEAR(c[t * m * n + i * n + j], ref, 1e-14);
      }
}

}  // namespace
}  // namespace qb::cpu
