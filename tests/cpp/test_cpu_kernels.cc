// The CPU kernels called directly (backends/cpu/kernels.h), below the executor.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "quabla/backends/cpu/kernels.h"
#include "test_util.h"

namespace qb::cpu {
namespace {

using test::bytes;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

TEST(CpuKernels, BinaryWithScalarOperand) {
  const std::vector<double> x{1, 2, 3, 4, 5};
  const std::vector<double> s{10};
  std::vector<double> out(5);
  const Operand ops[] = {{bytes(s), true}, {bytes(x), false}};
  elementwise(Op::Sub, DType::f64, DType::f64, ops, bytes(out), 5);
  EXPECT_EQ(out, (std::vector<double>{9, 8, 7, 6, 5}));
  const Operand ops2[] = {{bytes(x), false}, {bytes(s), true}};
  elementwise(Op::Div, DType::f64, DType::f64, ops2, bytes(out), 5);
  EXPECT_EQ(out, (std::vector<double>{0.1, 0.2, 0.3, 0.4, 0.5}));
}

TEST(CpuKernels, MaxMinPropagateNaN) {
  const std::vector<double> a{1, kNaN, 3, -0.5};
  const std::vector<double> b{kNaN, 2, 1, -1};
  std::vector<double> mx(4), mn(4);
  const Operand ops[] = {{bytes(a), false}, {bytes(b), false}};
  elementwise(Op::Max, DType::f64, DType::f64, ops, bytes(mx), 4);
  elementwise(Op::Min, DType::f64, DType::f64, ops, bytes(mn), 4);
  EXPECT_TRUE(std::isnan(mx[0]) && std::isnan(mx[1]));
  EXPECT_EQ(mx[2], 3);
  EXPECT_EQ(mx[3], -0.5);
  EXPECT_TRUE(std::isnan(mn[0]) && std::isnan(mn[1]));
  EXPECT_EQ(mn[2], 1);
  EXPECT_EQ(mn[3], -1);
}

TEST(CpuKernels, RoundSignAndRem) {
  const std::vector<float> x{0.5f, 1.5f, 2.5f, -0.5f, -2.5f, -0.0f, 3.7f};
  std::vector<float> r(7), sg(7);
  const Operand ops[] = {{bytes(x), false}};
  elementwise(Op::Round, DType::f32, DType::f32, ops, bytes(r), 7);
  elementwise(Op::Sign, DType::f32, DType::f32, ops, bytes(sg), 7);
  EXPECT_EQ(r, (std::vector<float>{0, 2, 2, -0.0f, -2, -0.0f, 4}));  // half to even
  EXPECT_TRUE(std::signbit(r[3]));
  EXPECT_EQ(sg, (std::vector<float>{1, 1, 1, -1, -1, 0, 1}));
  EXPECT_TRUE(std::signbit(sg[5]));  // sign(-0) = -0

  const std::vector<double> a{7, -7, 7.5};
  const std::vector<double> m{3, 3, -2};
  std::vector<double> rem(3);
  const Operand ops2[] = {{bytes(a), false}, {bytes(m), false}};
  elementwise(Op::Rem, DType::f64, DType::f64, ops2, bytes(rem), 3);
  EXPECT_EQ(rem, (std::vector<double>{1, -1, 1.5}));  // C fmod: the sign of the dividend
}

TEST(CpuKernels, LogisticSoftplusLogAddExpStable) {
  const std::vector<double> x{-800, -1, 0, 1, 800};
  std::vector<double> lg(5), sp(5);
  const Operand ops[] = {{bytes(x), false}};
  elementwise(Op::Logistic, DType::f64, DType::f64, ops, bytes(lg), 5);
  elementwise(Op::Softplus, DType::f64, DType::f64, ops, bytes(sp), 5);
  EXPECT_EQ(lg[0], 0.0);
  EXPECT_DOUBLE_EQ(lg[1], 1.0 / (1.0 + std::exp(1.0)));
  EXPECT_EQ(lg[2], 0.5);
  EXPECT_EQ(lg[4], 1.0);
  EXPECT_EQ(sp[0], 0.0);
  EXPECT_DOUBLE_EQ(sp[2], std::log(2.0));
  EXPECT_EQ(sp[4], 800.0);  // no overflow

  const std::vector<double> a{1000, -INFINITY, 0};
  const std::vector<double> b{1000, -INFINITY, 0};
  std::vector<double> out(3);
  const Operand ops2[] = {{bytes(a), false}, {bytes(b), false}};
  elementwise(Op::LogAddExp, DType::f64, DType::f64, ops2, bytes(out), 3);
  EXPECT_DOUBLE_EQ(out[0], 1000 + std::log(2.0));
  EXPECT_EQ(out[1], -INFINITY);
  EXPECT_DOUBLE_EQ(out[2], std::log(2.0));
}

TEST(CpuKernels, ConvertBoolAndBack) {
  const std::vector<float> x{0.0f, -0.0f, std::numeric_limits<float>::quiet_NaN(), 0.25f};
  std::vector<std::uint8_t> b(4);
  const Operand ops[] = {{bytes(x), false}};
  elementwise(Op::Convert, DType::f32, DType::bool_, ops, bytes(b), 4);
  EXPECT_EQ(b, (std::vector<std::uint8_t>{0, 0, 1, 1}));
  std::vector<double> d(4);
  const Operand ops2[] = {{bytes(b), false}};
  elementwise(Op::Convert, DType::bool_, DType::f64, ops2, bytes(d), 4);
  EXPECT_EQ(d, (std::vector<double>{0, 0, 1, 1}));
}

TEST(CpuKernels, StridedCopyBroadcastTransposeReverse) {
  const std::vector<float> x{1, 2, 3};
  std::vector<float> out(6);
  // broadcast [3] to [2, 3]: stride 0 on the new axis
  strided_copy(4, bytes(x), 0, std::vector<std::int64_t>{2, 3}, std::vector<std::int64_t>{0, 1}, bytes(out));
  EXPECT_EQ(out, (std::vector<float>{1, 2, 3, 1, 2, 3}));
  // column broadcast [3] to [3, 2]
  strided_copy(4, bytes(x), 0, std::vector<std::int64_t>{3, 2}, std::vector<std::int64_t>{1, 0}, bytes(out));
  EXPECT_EQ(out, (std::vector<float>{1, 1, 2, 2, 3, 3}));
  // reverse: offset at the last element, stride -1
  std::vector<float> rev(3);
  strided_copy(4, bytes(x), 2, std::vector<std::int64_t>{3}, std::vector<std::int64_t>{-1}, bytes(rev));
  EXPECT_EQ(rev, (std::vector<float>{3, 2, 1}));
  // transpose of a 2x3 (row-major strides 3, 1) into 3x2
  const std::vector<double> m{1, 2, 3, 4, 5, 6};
  std::vector<double> t(6);
  strided_copy(8, bytes(m), 0, std::vector<std::int64_t>{3, 2}, std::vector<std::int64_t>{1, 3}, bytes(t));
  EXPECT_EQ(t, (std::vector<double>{1, 4, 2, 5, 3, 6}));
  // rank 0
  double one = 0;
  strided_copy(8, bytes(m), 4, std::vector<std::int64_t>{}, std::vector<std::int64_t>{},
               reinterpret_cast<std::byte*>(&one));
  EXPECT_EQ(one, 5);
}

TEST(CpuKernels, ReduceDirect) {
  std::vector<double> x(24);
  for (int i = 0; i < 24; ++i) x[i] = i;
  std::vector<double> out(4);
  // shape [2, 3, 4], axes {0, 1}: output k = sum over i, j of (12i + 4j + k) = 60 + 6k
  reduce(Op::ReduceSum, DType::f64, bytes(x), std::vector<std::int64_t>{2, 3, 4}, std::vector<std::int64_t>{0, 1},
         bytes(out));
  EXPECT_EQ(out, (std::vector<double>{60, 66, 72, 78}));
  std::vector<double> prod(2);
  const std::vector<double> y{1, 2, 3, 4, 5, 6};
  reduce(Op::ReduceProd, DType::f64, bytes(y), std::vector<std::int64_t>{2, 3}, std::vector<std::int64_t>{1},
         bytes(prod));
  EXPECT_EQ(prod, (std::vector<double>{6, 120}));
  // no axes: a copy
  std::vector<double> same(6);
  reduce(Op::ReduceSum, DType::f64, bytes(y), std::vector<std::int64_t>{2, 3}, std::vector<std::int64_t>{},
         bytes(same));
  EXPECT_EQ(same, y);
}

TEST(CpuKernels, ReductionsOverEmptyAxesGiveTheirIdentities) {
  // Shapes [3, 0] and [0, 2, 3] (the checkpoints of empty loops under vmap reach these).
  const std::vector<double> none;
  const std::byte* in = reinterpret_cast<const std::byte*>(none.data());
  const std::pair<Op, double> cases[] = {{Op::ReduceSum, 0.0}, {Op::ReduceProd, 1.0},
                                         {Op::ReduceMax, -INFINITY}, {Op::ReduceMin, INFINITY}};
  for (auto [op, identity] : cases) {
    std::vector<double> out(3, 42.0);
    reduce(op, DType::f64, in, std::vector<std::int64_t>{3, 0}, std::vector<std::int64_t>{1}, bytes(out));
    EXPECT_EQ(out, std::vector<double>(3, identity)) << op_name(op);
    std::vector<double> out2(2, 42.0);  // axes {0, 2}: not contiguous
    reduce(op, DType::f64, in, std::vector<std::int64_t>{0, 2, 3}, std::vector<std::int64_t>{0, 2}, bytes(out2));
    EXPECT_EQ(out2, std::vector<double>(2, identity)) << op_name(op);
  }
  std::vector<std::uint8_t> any(2, 7), all(2, 7);
  reduce(Op::ReduceAny, DType::bool_, in, std::vector<std::int64_t>{2, 0}, std::vector<std::int64_t>{1},
         reinterpret_cast<std::byte*>(any.data()));
  reduce(Op::ReduceAll, DType::bool_, in, std::vector<std::int64_t>{2, 0}, std::vector<std::int64_t>{1},
         reinterpret_cast<std::byte*>(all.data()));
  EXPECT_EQ(any, (std::vector<std::uint8_t>{0, 0}));
  EXPECT_EQ(all, (std::vector<std::uint8_t>{1, 1}));
}

TEST(CpuKernels, StridedCopyOfNothingWritesNothing) {
  std::vector<double> out(2, 5.0);
  const std::vector<double> x{1.0};
  strided_copy(8, bytes(x), 0, std::vector<std::int64_t>{3, 0}, std::vector<std::int64_t>{0, 1}, bytes(out));
  strided_copy(8, bytes(x), 0, std::vector<std::int64_t>{0, 3}, std::vector<std::int64_t>{1, 0}, bytes(out));
  EXPECT_EQ(out, (std::vector<double>{5.0, 5.0}));
}

TEST(CpuKernels, CumsumMiddleAxis) {
  std::vector<float> x(12, 1.0f);  // [2, 3, 2] of ones
  std::vector<float> out(12);
  cumsum(DType::f32, bytes(x), std::vector<std::int64_t>{2, 3, 2}, 1, false, bytes(out));
  EXPECT_EQ(out, (std::vector<float>{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}));
  cumsum(DType::f32, bytes(x), std::vector<std::int64_t>{2, 3, 2}, 1, true, bytes(out));
  EXPECT_EQ(out, (std::vector<float>{3, 3, 2, 2, 1, 1, 3, 3, 2, 2, 1, 1}));
}

TEST(CpuKernels, MatmulBatchedF32) {
  // two batches of [1, 2] @ [2, 2]
  const std::vector<float> a{1, 2, 3, -1};
  const std::vector<float> b{1, 0, 0, 1, 2, 1, 1, 2};
  std::vector<float> c(4, -99.0f);  // beta = 0: old contents ignored
  matmul(DType::f32, bytes(a), bytes(b), bytes(c), 2, 1, 2, 2);
  EXPECT_EQ(c, (std::vector<float>{1, 2, 5, 1}));
}

TEST(CpuKernels, MatmulWithTransposedOperandsMatchesLoops) {
  // Batches of [m, k] @ [k, n] with A stored as [k, m] and/or B as [n, k]; m = 300 spans
  // three 128-row blocks, so the column offsets of a transposed A are exercised.
  const std::int64_t batch = 2, m = 300, k = 5, n = 3;
  std::vector<double> a(batch * m * k), b(batch * k * n);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = std::sin(0.37 * static_cast<double>(i));
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = std::cos(0.11 * static_cast<double>(i));
  auto A = [&](std::int64_t t, std::int64_t r, std::int64_t c) { return a[static_cast<std::size_t>(t * m * k + r * k + c)]; };
  auto B = [&](std::int64_t t, std::int64_t r, std::int64_t c) { return b[static_cast<std::size_t>(t * k * n + r * n + c)]; };
  std::vector<double> at(a.size()), bt(b.size());  // stored transposes
  for (std::int64_t t = 0; t < batch; ++t) {
    for (std::int64_t r = 0; r < m; ++r)
      for (std::int64_t c = 0; c < k; ++c) at[static_cast<std::size_t>(t * m * k + c * m + r)] = A(t, r, c);
    for (std::int64_t r = 0; r < k; ++r)
      for (std::int64_t c = 0; c < n; ++c) bt[static_cast<std::size_t>(t * k * n + c * k + r)] = B(t, r, c);
  }
  for (int mode = 0; mode < 4; ++mode) {
    const bool ta = mode & 1, tb = mode & 2;
    std::vector<double> c(static_cast<std::size_t>(batch * m * n));
    matmul(DType::f64, bytes(ta ? at : a), bytes(tb ? bt : b), bytes(c), batch, m, k, n, ta, tb);
    for (std::int64_t t = 0; t < batch; ++t)
      for (std::int64_t r = 0; r < m; ++r)
        for (std::int64_t q = 0; q < n; ++q) {
          double want = 0;
          for (std::int64_t j = 0; j < k; ++j) want += A(t, r, j) * B(t, j, q);
          ASSERT_NEAR(c[static_cast<std::size_t>(t * m * n + r * n + q)], want, 1e-12) << mode;
        }
  }
}

}  // namespace
}  // namespace qb::cpu
