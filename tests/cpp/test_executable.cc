// The CPU executor (backends/cpu/executable.h): small graphs run on hand-filled buffers and
// compared with hand-computed results.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "quabla/api/functions.h"
#include "quabla/ir/errors.h"
#include "test_util.h"

namespace qb {
namespace {

using api::V;
using test::make_bool_buffer;
using test::make_buffer;
using test::Program;
using test::read_buffer;
using test::vt;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

Attrs axes_attr(std::vector<std::int64_t> dims) {
  Attrs a;
  a.dims = std::move(dims);
  return a;
}

// ---- elementwise

TEST(Executable, AddMulWithBroadcastScalar) {
  Program p;
  V x = p.b.param(vt(DType::f32, {4}));
  V s = p.b.param(vt(DType::f32, {}));
  V sum = api::binary(p.b, "add", Op::Add, x, s);
  V prod = api::binary(p.b, "mul", Op::Mul, s, sum);
  auto out = p.run({sum, prod}, {make_buffer<float>({1, 2, 3, 4}), make_buffer<float>({0.5f})});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(read_buffer<float>(out[0], 4), (std::vector<float>{1.5f, 2.5f, 3.5f, 4.5f}));
  EXPECT_EQ(read_buffer<float>(out[1], 4), (std::vector<float>{0.75f, 1.25f, 1.75f, 2.25f}));
}

TEST(Executable, WeakScalarAdoptsArrayDtype) {
  Program p;
  V x = p.b.param(vt(DType::f64, {3}));
  // A weak f32 scalar (as a Python float would be) meeting a strong f64 array.
  V two = p.b.param(vt(DType::f32, {}, true));
  V r = api::binary(p.b, "sub", Op::Sub, x, two);
  ASSERT_EQ(p.graph->type(r), vt(DType::f64, {3}));
  auto out = p.run({r}, {make_buffer<double>({1.0, 0.25, -3.0}), make_buffer<float>({2.0f})});
  EXPECT_EQ(read_buffer<double>(out[0], 3), (std::vector<double>{-1.0, -1.75, -5.0}));
}

TEST(Executable, RowAndColumnBroadcast) {
  Program p;
  V x = p.b.param(vt(DType::f64, {2, 3}));
  V row = p.b.param(vt(DType::f64, {3}));
  V col = p.b.param(vt(DType::f64, {2, 1}));
  V r1 = api::binary(p.b, "add", Op::Add, x, row);
  V r2 = api::binary(p.b, "mul", Op::Mul, x, col);
  auto out = p.run({r1, r2}, {make_buffer<double>({1, 2, 3, 4, 5, 6}), make_buffer<double>({10, 20, 30}),
                              make_buffer<double>({2, -1})});
  EXPECT_EQ(read_buffer<double>(out[0], 6), (std::vector<double>{11, 22, 33, 14, 25, 36}));
  EXPECT_EQ(read_buffer<double>(out[1], 6), (std::vector<double>{2, 4, 6, -4, -5, -6}));
}

TEST(Executable, LargeElementwiseSpansManyChunks) {
  const std::int64_t n = 100003;  // several chunks of the elementwise grain, last one short
  std::vector<float> a(n), c(n);
  for (std::int64_t i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i % 977) * 0.5f;
    c[i] = static_cast<float>(i % 13) - 6.0f;
  }
  Program p;
  V x = p.b.param(vt(DType::f32, {n}));
  V y = p.b.param(vt(DType::f32, {n}));
  V r = api::binary(p.b, "sub", Op::Sub, x, y);
  auto out = read_buffer<float>(p.run({r}, {make_buffer(a), make_buffer(c)})[0], n);
  for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(out[i], a[i] - c[i]) << "at " << i;
}

TEST(Executable, UnaryMatchesStdF32) {
  const std::vector<float> xs{-2.5f, -1.0f, -0.125f, 0.0f, 0.3f, 1.0f, 2.0f, 7.5f};
  Program p;
  V x = p.b.param(vt(DType::f32, {8}));
  V s = api::unary(p.b, "sin", Op::Sin, x);
  V e = api::unary(p.b, "exp", Op::Exp, x);
  V t = api::unary(p.b, "tanh", Op::Tanh, x);
  auto out = p.run({s, e, t}, {make_buffer(xs)});
  auto so = read_buffer<float>(out[0], 8), eo = read_buffer<float>(out[1], 8), to = read_buffer<float>(out[2], 8);
  for (std::size_t i = 0; i < xs.size(); ++i) {
    EXPECT_FLOAT_EQ(so[i], std::sin(xs[i])) << xs[i];
    EXPECT_FLOAT_EQ(eo[i], std::exp(xs[i])) << xs[i];
    EXPECT_FLOAT_EQ(to[i], std::tanh(xs[i])) << xs[i];
  }
}

TEST(Executable, UnaryMatchesStdF64) {
  const std::vector<double> xs{-30.0, -2.5, -1e-8, 0.0, 0.7, 1.0, 3.0, 20.0};
  Program p;
  V x = p.b.param(vt(DType::f64, {2, 4}));
  V s = api::unary(p.b, "sin", Op::Sin, x);
  V e = api::unary(p.b, "exp", Op::Exp, x);
  V t = api::unary(p.b, "tanh", Op::Tanh, x);
  auto out = p.run({s, e, t}, {make_buffer(xs)});
  auto so = read_buffer<double>(out[0], 8), eo = read_buffer<double>(out[1], 8), to = read_buffer<double>(out[2], 8);
  for (std::size_t i = 0; i < xs.size(); ++i) {
    EXPECT_DOUBLE_EQ(so[i], std::sin(xs[i])) << xs[i];
    EXPECT_DOUBLE_EQ(eo[i], std::exp(xs[i])) << xs[i];
    EXPECT_DOUBLE_EQ(to[i], std::tanh(xs[i])) << xs[i];
  }
}

TEST(Executable, ComparisonAndPredicate) {
  Program p;
  V x = p.b.param(vt(DType::f64, {4}));
  V y = p.b.param(vt(DType::f64, {4}));
  V lt = p.b.emit1(Op::Lt, {x, y});
  V nan = p.b.emit1(Op::IsNan, {x});
  auto out = p.run({lt, nan}, {make_buffer<double>({1, 2, kNaN, -1}), make_buffer<double>({2, 2, 0, -2})});
  EXPECT_EQ(read_buffer<std::uint8_t>(out[0], 4), (std::vector<std::uint8_t>{1, 0, 0, 0}));
  EXPECT_EQ(read_buffer<std::uint8_t>(out[1], 4), (std::vector<std::uint8_t>{0, 0, 1, 0}));
}

TEST(Executable, Select) {
  Program p;
  V c = p.b.param(vt(DType::bool_, {5}));
  V x = p.b.param(vt(DType::f32, {5}));
  V y = p.b.param(vt(DType::f32, {5}));
  V r = p.b.emit1(Op::Select, {c, x, y});
  auto out = p.run({r}, {make_bool_buffer({true, false, false, true, true}), make_buffer<float>({1, 2, 3, 4, 5}),
                         make_buffer<float>({-1, -2, -3, -4, -5})});
  EXPECT_EQ(read_buffer<float>(out[0], 5), (std::vector<float>{1, -2, -3, 4, 5}));
}

TEST(Executable, WhereWithBroadcastScalarBranch) {
  Program p;
  V c = p.b.param(vt(DType::bool_, {2, 2}));
  V x = p.b.param(vt(DType::f64, {2, 2}));
  V zero = p.b.param(vt(DType::f64, {}, true));
  V r = api::where(p.b, c, x, zero);
  auto out = p.run({r}, {make_bool_buffer({false, true, true, false}), make_buffer<double>({1, 2, 3, 4}),
                         make_buffer<double>({0.5})});
  EXPECT_EQ(read_buffer<double>(out[0], 4), (std::vector<double>{0.5, 2, 3, 0.5}));
}

TEST(Executable, ConvertF64ToBoolNaNIsTrue) {
  Program p;
  V x = p.b.param(vt(DType::f64, {6}));
  V r = api::astype(p.b, x, DType::bool_);
  auto out = p.run({r}, {make_buffer<double>({0.0, -0.0, kNaN, 2.5, -kInf, 1e-300})});
  EXPECT_EQ(read_buffer<std::uint8_t>(out[0], 6), (std::vector<std::uint8_t>{0, 0, 1, 1, 1, 1}));
}

TEST(Executable, ConvertBoolAndF64ToF32) {
  Program p;
  V c = p.b.param(vt(DType::bool_, {3}));
  V x = p.b.param(vt(DType::f64, {3}));
  V cf = api::astype(p.b, c, DType::f32);
  V xf = api::astype(p.b, x, DType::f32);
  auto out = p.run({cf, xf}, {make_bool_buffer({true, false, true}), make_buffer<double>({0.1, -3.0, 1e40})});
  EXPECT_EQ(read_buffer<float>(out[0], 3), (std::vector<float>{1, 0, 1}));
  auto xo = read_buffer<float>(out[1], 3);
  EXPECT_EQ(xo[0], static_cast<float>(0.1));
  EXPECT_EQ(xo[1], -3.0f);
  EXPECT_TRUE(std::isinf(xo[2]) && xo[2] > 0);
}

// ---- data movement

TEST(Executable, Transpose2x3) {
  Program p;
  V x = p.b.param(vt(DType::f32, {2, 3}));
  V r = api::transpose(p.b, x, std::nullopt);
  ASSERT_EQ(p.graph->type(r), vt(DType::f32, {3, 2}));
  auto out = p.run({r}, {make_buffer<float>({1, 2, 3, 4, 5, 6})});
  EXPECT_EQ(read_buffer<float>(out[0], 6), (std::vector<float>{1, 4, 2, 5, 3, 6}));
}

TEST(Executable, Transpose3D) {
  Program p;
  V x = p.b.param(vt(DType::f64, {2, 3, 2}));
  V r = api::transpose(p.b, x, std::vector<std::int64_t>{2, 0, 1});  // [2, 2, 3]
  std::vector<double> in(12);
  for (int i = 0; i < 12; ++i) in[i] = i;
  auto out = read_buffer<double>(p.run({r}, {make_buffer(in)})[0], 12);
  // out[k][i][j] = in[i][j][k] = 6i + 2j + k
  std::vector<double> expect;
  for (int k = 0; k < 2; ++k)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) expect.push_back(6 * i + 2 * j + k);
  EXPECT_EQ(out, expect);
}

TEST(Executable, SliceWithStride) {
  Program p;
  V x = p.b.param(vt(DType::f32, {10}));
  Attrs a;
  a.starts = {1};
  a.limits = {8};
  a.strides = {3};
  V r = p.b.emit1(Op::Slice, {x}, a);
  auto out = p.run({r}, {make_buffer<float>({0, 10, 20, 30, 40, 50, 60, 70, 80, 90})});
  EXPECT_EQ(read_buffer<float>(out[0], 3), (std::vector<float>{10, 40, 70}));
}

TEST(Executable, Slice2D) {
  Program p;
  V x = p.b.param(vt(DType::f64, {4, 5}));
  Attrs a;
  a.starts = {1, 0};
  a.limits = {4, 5};
  a.strides = {2, 2};
  V r = p.b.emit1(Op::Slice, {x}, a);  // rows 1, 3; cols 0, 2, 4
  std::vector<double> in(20);
  for (int i = 0; i < 20; ++i) in[i] = i;
  auto out = p.run({r}, {make_buffer(in)});
  EXPECT_EQ(read_buffer<double>(out[0], 6), (std::vector<double>{5, 7, 9, 15, 17, 19}));
}

TEST(Executable, Reverse) {
  Program p;
  V x = p.b.param(vt(DType::f32, {2, 3}));
  V r1 = p.b.emit1(Op::Reverse, {x}, axes_attr({1}));
  V r0 = p.b.emit1(Op::Reverse, {x}, axes_attr({0}));
  V r01 = p.b.emit1(Op::Reverse, {x}, axes_attr({0, 1}));
  auto out = p.run({r1, r0, r01}, {make_buffer<float>({1, 2, 3, 4, 5, 6})});
  EXPECT_EQ(read_buffer<float>(out[0], 6), (std::vector<float>{3, 2, 1, 6, 5, 4}));
  EXPECT_EQ(read_buffer<float>(out[1], 6), (std::vector<float>{4, 5, 6, 1, 2, 3}));
  EXPECT_EQ(read_buffer<float>(out[2], 6), (std::vector<float>{6, 5, 4, 3, 2, 1}));
}

TEST(Executable, ConcatAxis1) {
  Program p;
  V x = p.b.param(vt(DType::f32, {2, 2}));
  V y = p.b.param(vt(DType::f32, {2, 3}));
  V r = api::concat(p.b, std::vector<V>{x, y}, 1);
  ASSERT_EQ(p.graph->type(r), vt(DType::f32, {2, 5}));
  auto out = p.run({r}, {make_buffer<float>({1, 2, 3, 4}), make_buffer<float>({10, 20, 30, 40, 50, 60})});
  EXPECT_EQ(read_buffer<float>(out[0], 10), (std::vector<float>{1, 2, 10, 20, 30, 3, 4, 40, 50, 60}));
}

TEST(Executable, ConcatAxis0ThreeOperands) {
  Program p;
  V x = p.b.param(vt(DType::f64, {1, 2}));
  V y = p.b.param(vt(DType::f64, {2, 2}));
  V r = api::concat(p.b, std::vector<V>{x, y, x}, 0);
  auto out = p.run({r}, {make_buffer<double>({1, 2}), make_buffer<double>({3, 4, 5, 6})});
  EXPECT_EQ(read_buffer<double>(out[0], 8), (std::vector<double>{1, 2, 3, 4, 5, 6, 1, 2}));
}

TEST(Executable, GetitemValues) {
  Program p;
  V x = p.b.param(vt(DType::f32, {3, 4}));
  // x[::-1, 3:0:-2] -> rows 2, 1, 0; cols 3, 1
  api::IndexItem rows{api::IndexItem::Slice};
  rows.step = -1;
  api::IndexItem cols{api::IndexItem::Slice};
  cols.start = 3;
  cols.stop = 0;
  cols.has_start = cols.has_stop = true;
  cols.step = -2;
  V r = api::getitem(p.b, x, std::vector{rows, cols});
  ASSERT_EQ(p.graph->type(r), vt(DType::f32, {3, 2}));
  // x[1, -1]
  V e = api::getitem(p.b, x, std::vector{api::IndexItem{api::IndexItem::Int, 1}, api::IndexItem{api::IndexItem::Int, -1}});
  ASSERT_EQ(p.graph->type(e), vt(DType::f32, {}));
  std::vector<float> in(12);
  for (int i = 0; i < 12; ++i) in[i] = static_cast<float>(i);
  auto out = p.run({r, e}, {make_buffer(in)});
  EXPECT_EQ(read_buffer<float>(out[0], 6), (std::vector<float>{11, 9, 7, 5, 3, 1}));
  EXPECT_EQ(read_buffer<float>(out[1], 1), (std::vector<float>{7}));
}

// ---- reductions

class ReduceSum2x3 : public ::testing::Test {
 protected:
  std::vector<double> run_sum(std::vector<std::int64_t> axes, std::int64_t n_out) {
    Program p;
    V x = p.b.param(vt(DType::f64, {2, 3}));
    V r = p.b.emit1(Op::ReduceSum, {x}, axes_attr(std::move(axes)));
    return read_buffer<double>(p.run({r}, {make_buffer<double>({1, 2, 3, 4, 5, 6})})[0], n_out);
  }
};

TEST_F(ReduceSum2x3, Axis0) { EXPECT_EQ(run_sum({0}, 3), (std::vector<double>{5, 7, 9})); }
TEST_F(ReduceSum2x3, Axis1) { EXPECT_EQ(run_sum({1}, 2), (std::vector<double>{6, 15})); }
TEST_F(ReduceSum2x3, AllAxes) { EXPECT_EQ(run_sum({0, 1}, 1), (std::vector<double>{21})); }

TEST(Executable, ReduceSumNonContiguousAxes) {
  Program p;
  V x = p.b.param(vt(DType::f32, {2, 3, 4}));
  V r = p.b.emit1(Op::ReduceSum, {x}, axes_attr({0, 2}));
  V mid = p.b.emit1(Op::ReduceSum, {x}, axes_attr({1}));
  std::vector<float> in(24);
  for (int i = 0; i < 24; ++i) in[i] = static_cast<float>(i);
  auto out = p.run({r, mid}, {make_buffer(in)});
  // element (i, j, k) = 12i + 4j + k
  std::vector<float> expect(3, 0), expect_mid(8, 0);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) {
        expect[j] += static_cast<float>(12 * i + 4 * j + k);
        expect_mid[i * 4 + k] += static_cast<float>(12 * i + 4 * j + k);
      }
  EXPECT_EQ(read_buffer<float>(out[0], 3), expect);  // {60, 92, 124}
  EXPECT_EQ(expect, (std::vector<float>{60, 92, 124}));
  EXPECT_EQ(read_buffer<float>(out[1], 8), expect_mid);
}

TEST(Executable, ReduceSumLongRowIsAccurate) {
  // 1000 copies of 0.1 summed in f32: pairwise summation stays within a few ulps of 100.
  Program p;
  V x = p.b.param(vt(DType::f32, {1000}));
  V r = api::reduce(p.b, "sum", Op::ReduceSum, x, std::nullopt, false);
  auto out = read_buffer<float>(p.run({r}, {make_buffer(std::vector<float>(1000, 0.1f))})[0], 1);
  EXPECT_NEAR(out[0], 100.0f, 1e-4f);
}

TEST(Executable, ReduceMaxPropagatesNaN) {
  Program p;
  V x = p.b.param(vt(DType::f64, {3, 3}));
  V rows = p.b.emit1(Op::ReduceMax, {x}, axes_attr({1}));
  V cols = p.b.emit1(Op::ReduceMax, {x}, axes_attr({0}));
  V all = p.b.emit1(Op::ReduceMax, {x}, axes_attr({0, 1}));
  V mins = p.b.emit1(Op::ReduceMin, {x}, axes_attr({1}));
  auto out = p.run({rows, cols, all, mins}, {make_buffer<double>({1, kNaN, 3, -4, -5, -6, kNaN, 0, 2})});
  auto ro = read_buffer<double>(out[0], 3);
  EXPECT_TRUE(std::isnan(ro[0]));
  EXPECT_EQ(ro[1], -4);
  EXPECT_TRUE(std::isnan(ro[2]));  // NaN first in its row
  auto co = read_buffer<double>(out[1], 3);
  EXPECT_TRUE(std::isnan(co[0]));
  EXPECT_TRUE(std::isnan(co[1]));
  EXPECT_EQ(co[2], 3);
  EXPECT_TRUE(std::isnan(read_buffer<double>(out[2], 1)[0]));
  auto mo = read_buffer<double>(out[3], 3);
  EXPECT_TRUE(std::isnan(mo[0]));
  EXPECT_EQ(mo[1], -6);
  EXPECT_TRUE(std::isnan(mo[2]));
}

TEST(Executable, ReduceMaxMinWithoutNaN) {
  Program p;
  V x = p.b.param(vt(DType::f32, {2, 3}));
  V mx = p.b.emit1(Op::ReduceMax, {x}, axes_attr({1}));
  V mn = p.b.emit1(Op::ReduceMin, {x}, axes_attr({0}));
  V pr = p.b.emit1(Op::ReduceProd, {x}, axes_attr({0, 1}));
  constexpr float inf = std::numeric_limits<float>::infinity();
  auto out = p.run({mx, mn, pr}, {make_buffer<float>({-3, -1, -2, 4, 0.5f, -inf})});
  EXPECT_EQ(read_buffer<float>(out[0], 2), (std::vector<float>{-1, 4}));
  EXPECT_EQ(read_buffer<float>(out[1], 3), (std::vector<float>{-3, -1, -inf}));
  EXPECT_EQ(read_buffer<float>(out[2], 1)[0], inf);  // -3 * -1 * -2 * 4 * 0.5 = -12, times -inf
}

TEST(Executable, ReduceAnyAll) {
  Program p;
  V x = p.b.param(vt(DType::bool_, {2, 3}));
  V any = p.b.emit1(Op::ReduceAny, {x}, axes_attr({1}));
  V all = p.b.emit1(Op::ReduceAll, {x}, axes_attr({0}));
  auto out = p.run({any, all}, {make_bool_buffer({false, false, false, true, false, true})});
  EXPECT_EQ(read_buffer<std::uint8_t>(out[0], 2), (std::vector<std::uint8_t>{0, 1}));
  EXPECT_EQ(read_buffer<std::uint8_t>(out[1], 3), (std::vector<std::uint8_t>{0, 0, 0}));
}

TEST(Executable, CumsumForwardAndReverse) {
  Program p;
  V x = p.b.param(vt(DType::f64, {2, 3}));
  Attrs fwd1;
  fwd1.axis = 1;
  Attrs rev1 = fwd1;
  rev1.reverse = true;
  Attrs fwd0;
  fwd0.axis = 0;
  Attrs rev0 = fwd0;
  rev0.reverse = true;
  V a = p.b.emit1(Op::Cumsum, {x}, fwd1);
  V bb = p.b.emit1(Op::Cumsum, {x}, rev1);
  V c = p.b.emit1(Op::Cumsum, {x}, fwd0);
  V d = p.b.emit1(Op::Cumsum, {x}, rev0);
  auto out = p.run({a, bb, c, d}, {make_buffer<double>({1, 2, 3, 4, 5, 6})});
  EXPECT_EQ(read_buffer<double>(out[0], 6), (std::vector<double>{1, 3, 6, 4, 9, 15}));
  EXPECT_EQ(read_buffer<double>(out[1], 6), (std::vector<double>{6, 5, 3, 15, 11, 6}));
  EXPECT_EQ(read_buffer<double>(out[2], 6), (std::vector<double>{1, 2, 3, 5, 7, 9}));
  EXPECT_EQ(read_buffer<double>(out[3], 6), (std::vector<double>{5, 7, 9, 4, 5, 6}));
}

TEST(Executable, CumsumApiFlattens) {
  Program p;
  V x = p.b.param(vt(DType::f32, {2, 2}));
  V r = api::cumsum(p.b, x, std::nullopt, true);
  auto out = p.run({r}, {make_buffer<float>({1, 2, 3, 4})});
  EXPECT_EQ(read_buffer<float>(out[0], 4), (std::vector<float>{10, 9, 7, 4}));
}

// ---- matmul

TEST(Executable, MatMul2x3By3x2F32) {
  Program p;
  V x = p.b.param(vt(DType::f32, {2, 3}));
  V y = p.b.param(vt(DType::f32, {3, 2}));
  V r = p.b.emit1(Op::MatMul, {x, y});
  auto out = p.run({r}, {make_buffer<float>({1, 2, 3, 4, 5, 6}), make_buffer<float>({7, 8, 9, 10, 11, 12})});
  EXPECT_EQ(read_buffer<float>(out[0], 4), (std::vector<float>{58, 64, 139, 154}));
}

TEST(Executable, MatMul2x3By3x2F64) {
  Program p;
  V x = p.b.param(vt(DType::f64, {2, 3}));
  V y = p.b.param(vt(DType::f64, {3, 2}));
  V r = api::matmul(p.b, x, y);
  auto out = p.run({r}, {make_buffer<double>({1, -2, 0.5, 0, 3, 1}), make_buffer<double>({2, 1, 0.25, -1, 4, 8})});
  // [1*2 - 2*0.25 + 0.5*4, 1*1 + 2 + 4] ; [0 + 0.75 + 4, 0 - 3 + 8]
  EXPECT_EQ(read_buffer<double>(out[0], 4), (std::vector<double>{3.5, 7, 4.75, 5}));
}

TEST(Executable, BatchedMatMul) {
  Program p;
  V x = p.b.param(vt(DType::f64, {2, 2, 2}));
  V y = p.b.param(vt(DType::f64, {2, 2, 1}));
  V r = p.b.emit1(Op::MatMul, {x, y});
  auto out = p.run({r}, {make_buffer<double>({1, 2, 3, 4, 0, 1, 1, 0}), make_buffer<double>({1, 1, 5, 7})});
  // batch 0: [[1,2],[3,4]] @ [1,1] = [3, 7]; batch 1: [[0,1],[1,0]] @ [5,7] = [7, 5]
  EXPECT_EQ(read_buffer<double>(out[0], 4), (std::vector<double>{3, 7, 7, 5}));
}

TEST(Executable, MatMulApiBroadcastBatchAndVector) {
  Program p;
  V x = p.b.param(vt(DType::f32, {2, 2, 3}));
  V w = p.b.param(vt(DType::f32, {3, 2}));
  V v = p.b.param(vt(DType::f32, {3}));
  V r = api::matmul(p.b, x, w);  // w broadcast over the batch
  V mv = api::matmul(p.b, x, v);  // [2, 2]
  ASSERT_EQ(p.graph->type(r), vt(DType::f32, {2, 2, 2}));
  ASSERT_EQ(p.graph->type(mv), vt(DType::f32, {2, 2}));
  auto out = p.run({r, mv}, {make_buffer<float>({1, 0, 0, 0, 1, 0, 1, 1, 1, 2, 0, -1}),
                             make_buffer<float>({1, 2, 3, 4, 5, 6}), make_buffer<float>({1, 10, 100})});
  // rows of x: [1,0,0] [0,1,0] [1,1,1] [2,0,-1]; w rows: [1,2] [3,4] [5,6]
  EXPECT_EQ(read_buffer<float>(out[0], 8), (std::vector<float>{1, 2, 3, 4, 9, 12, -3, -2}));
  EXPECT_EQ(read_buffer<float>(out[1], 4), (std::vector<float>{1, 10, 111, -98}));
}

// ---- compositions of the api layer

TEST(Executable, MeanVarStd) {
  Program p;
  V x = p.b.param(vt(DType::f64, {2, 4}));
  V m = api::mean(p.b, x, std::vector<std::int64_t>{1}, false);
  V v = api::var(p.b, x, std::vector<std::int64_t>{-1}, 0.0, true);
  V s1 = api::std_(p.b, x, std::nullopt, 1.0, false);
  auto out = p.run({m, v, s1}, {make_buffer<double>({1, 2, 3, 4, 2, 2, 2, 10})});
  EXPECT_EQ(read_buffer<double>(out[0], 2), (std::vector<double>{2.5, 4}));
  EXPECT_EQ(p.graph->type(v), vt(DType::f64, {2, 1}));
  EXPECT_EQ(read_buffer<double>(out[1], 2), (std::vector<double>{1.25, 12}));
  // all 8 values: mean 3.25, sum of squared deviations 57.5, ddof 1
  EXPECT_DOUBLE_EQ(read_buffer<double>(out[2], 1)[0], std::sqrt(57.5 / 7.0));
}

TEST(Executable, SoftmaxAndLogsumexp) {
  Program p;
  V x = p.b.param(vt(DType::f64, {2, 3}));
  V sm = api::softmax(p.b, x, -1);
  V lse = api::logsumexp(p.b, x, std::vector<std::int64_t>{1}, false);
  auto out = p.run({sm, lse}, {make_buffer<double>({0, std::log(2.0), std::log(5.0), 1000, 1000, -kInf})});
  auto so = read_buffer<double>(out[0], 6);
  EXPECT_DOUBLE_EQ(so[0], 1.0 / 8);
  EXPECT_DOUBLE_EQ(so[1], 2.0 / 8);
  EXPECT_DOUBLE_EQ(so[2], 5.0 / 8);
  EXPECT_DOUBLE_EQ(so[3], 0.5);
  EXPECT_DOUBLE_EQ(so[4], 0.5);
  EXPECT_EQ(so[5], 0.0);
  auto lo = read_buffer<double>(out[1], 2);
  EXPECT_DOUBLE_EQ(lo[0], std::log(8.0));
  EXPECT_DOUBLE_EQ(lo[1], 1000 + std::log(2.0));
}

TEST(Executable, LogsumexpOfAllMinusInfIsMinusInf) {
  Program p;
  V x = p.b.param(vt(DType::f32, {3}));
  V lse = api::logsumexp(p.b, x, std::nullopt, false);
  const float inf = std::numeric_limits<float>::infinity();
  auto out = p.run({lse}, {make_buffer<float>({-inf, -inf, -inf})});
  EXPECT_EQ(read_buffer<float>(out[0], 1)[0], -inf);
}

TEST(Executable, ModTakesDivisorSign) {
  Program p;
  V x = p.b.param(vt(DType::f64, {4}));
  V y = p.b.param(vt(DType::f64, {4}));
  V r = api::mod(p.b, x, y);
  auto out = p.run({r}, {make_buffer<double>({7, -7, 7, -7}), make_buffer<double>({3, 3, -3, -3})});
  EXPECT_EQ(read_buffer<double>(out[0], 4), (std::vector<double>{1, 2, -2, -1}));
}

TEST(Executable, ClipReluIntegerPower) {
  Program p;
  V x = p.b.param(vt(DType::f32, {5}));
  V lo = p.b.param(vt(DType::f64, {}, true));
  V hi = p.b.param(vt(DType::f64, {}, true));
  V c = api::clip(p.b, x, lo, hi);
  V r = api::relu(p.b, x);
  V cube = api::integer_power(p.b, x, 3);
  V zeroth = api::integer_power(p.b, x, 0);
  auto out = p.run({c, r, cube, zeroth},
                   {make_buffer<float>({-3, -0.5f, 0, 2, 9}), make_buffer<double>({-1}), make_buffer<double>({4})});
  EXPECT_EQ(read_buffer<float>(out[0], 5), (std::vector<float>{-1, -0.5f, 0, 2, 4}));
  EXPECT_EQ(read_buffer<float>(out[1], 5), (std::vector<float>{0, 0, 0, 2, 9}));
  EXPECT_EQ(read_buffer<float>(out[2], 5), (std::vector<float>{-27, -0.125f, 0, 8, 729}));
  EXPECT_EQ(read_buffer<float>(out[3], 5), (std::vector<float>{1, 1, 1, 1, 1}));
}

TEST(Executable, TrilSplitStack) {
  Program p;
  V x = p.b.param(vt(DType::f64, {3, 3}));
  V lower = api::tri_mask(p.b, x, 0, true);
  auto parts = api::split(p.b, x, {}, 3, 0);
  V st = api::stack(p.b, std::vector<V>{parts[2], parts[0]}, 0);  // [2, 1, 3]
  auto out = p.run({lower, st}, {make_buffer<double>({1, 2, 3, 4, 5, 6, 7, 8, 9})});
  EXPECT_EQ(read_buffer<double>(out[0], 9), (std::vector<double>{1, 0, 0, 4, 5, 0, 7, 8, 9}));
  EXPECT_EQ(p.graph->type(st), vt(DType::f64, {2, 1, 3}));
  EXPECT_EQ(read_buffer<double>(out[1], 6), (std::vector<double>{7, 8, 9, 1, 2, 3}));
}

TEST(Executable, RunChecksArgumentCount) {
  Program p;
  V x = p.b.param(vt(DType::f32, {2}));
  p.b.set_results({x});
  cpu::Executable exe(p.graph);
  EXPECT_THROW(exe.run(std::vector<BufferPtr>{}), InternalError);
}

TEST(Executable, RunTwiceGivesSameResult) {
  Program p;
  V x = p.b.param(vt(DType::f32, {3}));
  V r = api::unary(p.b, "exp", Op::Exp, api::binary(p.b, "add", Op::Add, x, x));
  p.b.set_results({r});
  cpu::Executable exe(p.graph);
  const std::vector<BufferPtr> args{make_buffer<float>({0, 0.5f, 1})};
  auto a = read_buffer<float>(exe.run(args)[0], 3);
  auto c = read_buffer<float>(exe.run(args)[0], 3);
  EXPECT_EQ(a, c);
  EXPECT_FLOAT_EQ(a[2], std::exp(2.0f));
  // the input buffer is left untouched
  EXPECT_EQ(read_buffer<float>(args[0], 3), (std::vector<float>{0, 0.5f, 1}));
}

}  // namespace
}  // namespace qb
