// The user-level graph builders of api/functions.h: promotion, broadcasting, reshape,
// matmul's NumPy shape rules and basic indexing.
#include <gtest/gtest.h>

#include <string>

#include "quabla/api/functions.h"
#include "quabla/ir/errors.h"
#include "test_util.h"

namespace qb {
namespace {

using api::IndexItem;
using api::V;
using test::vt;

class ApiTest : public ::testing::Test {
 protected:
  Graph g;
  Builder b{g};

  ValueId p(DType d, Shape s, bool weak = false) { return b.param(vt(d, std::move(s), weak)); }
  const ValueType& t(ValueId v) const { return g.type(v); }
  // Every graph the api builds must pass the structural checks.
  void TearDown() override { EXPECT_NO_THROW(verify(g)); }
};

// ---- promotion

TEST_F(ApiTest, ArithmeticDtypeRules) {
  const auto f32 = vt(DType::f32, {2}), f64 = vt(DType::f64, {2});
  const auto f32w = vt(DType::f32, {}, true), f64w = vt(DType::f64, {}, true);
  const auto bl = vt(DType::bool_, {2});
  EXPECT_EQ(api::arithmetic_dtype("add", f32, f32), DType::f32);
  EXPECT_EQ(api::arithmetic_dtype("add", f32, f64w), DType::f32);
  EXPECT_EQ(api::arithmetic_dtype("add", f64w, f32), DType::f32);
  EXPECT_EQ(api::arithmetic_dtype("add", f32w, f64), DType::f64);
  EXPECT_EQ(api::arithmetic_dtype("add", f32w, f64w), DType::f64);
  EXPECT_EQ(api::arithmetic_dtype("add", bl, f32), DType::f32);
  EXPECT_EQ(api::arithmetic_dtype("add", f64, bl), DType::f64);
  EXPECT_THROW(api::arithmetic_dtype("add", f32, f64), ValueError);
  EXPECT_THROW(api::arithmetic_dtype("add", bl, bl), TypeError);
}

TEST_F(ApiTest, StrongF32PlusWeakF64IsF32) {
  V x = p(DType::f32, {3});
  V s = p(DType::f64, {}, true);
  V r = api::binary(b, "add", Op::Add, x, s);
  EXPECT_EQ(t(r), vt(DType::f32, {3}));
  V r2 = api::binary(b, "mul", Op::Mul, s, x);
  EXPECT_EQ(t(r2), vt(DType::f32, {3}));
}

TEST_F(ApiTest, StrongF32PlusStrongF64RaisesWithAstypeHint) {
  V x = p(DType::f32, {3});
  V y = p(DType::f64, {3});
  try {
    api::binary(b, "add", Op::Add, x, y);
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("astype"), std::string::npos) << msg;
    EXPECT_NE(msg.find("add"), std::string::npos) << msg;
  }
}

TEST_F(ApiTest, BoolBoolArithmeticIsTypeError) {
  V x = p(DType::bool_, {3});
  V y = p(DType::bool_, {3});
  EXPECT_THROW(api::binary(b, "add", Op::Add, x, y), TypeError);
  EXPECT_THROW(api::matmul(b, x, y), TypeError);
}

TEST_F(ApiTest, BoolWithF32IsF32) {
  V x = p(DType::bool_, {3});
  V y = p(DType::f32, {3});
  EXPECT_EQ(t(api::binary(b, "add", Op::Add, x, y)), vt(DType::f32, {3}));
  EXPECT_EQ(t(api::binary(b, "sub", Op::Sub, y, x)), vt(DType::f32, {3}));
}

TEST_F(ApiTest, ComparisonsGiveBoolAndKeepBoolOperands) {
  V x = p(DType::f32, {2, 3});
  V s = p(DType::f64, {}, true);
  EXPECT_EQ(t(api::compare(b, "less", Op::Lt, x, s)), vt(DType::bool_, {2, 3}));
  V bx = p(DType::bool_, {3});
  V by = p(DType::bool_, {2, 1});
  EXPECT_EQ(t(api::compare(b, "equal", Op::Eq, bx, by)), vt(DType::bool_, {2, 3}));
}

TEST_F(ApiTest, UnaryRejectsBoolWithTypeError) {
  V x = p(DType::bool_, {3});
  EXPECT_THROW(api::unary(b, "sin", Op::Sin, x), TypeError);
  EXPECT_THROW(api::reduce(b, "max", Op::ReduceMax, x, std::nullopt, false), TypeError);
  // Counting a bool array gives the default integer (NumPy, JAX).
  EXPECT_EQ(t(api::cumsum(b, x, 0, false)).dtype, DType::i64);
  EXPECT_EQ(t(api::reduce(b, "sum", Op::ReduceSum, x, std::nullopt, false)).dtype, DType::i64);
}

TEST_F(ApiTest, IntegerPromotionFollowsJax) {
  V i32 = p(DType::i32, {3});
  V i64 = p(DType::i64, {3});
  V f32 = p(DType::f32, {3});
  EXPECT_EQ(t(api::binary(b, "add", Op::Add, i32, i64)).dtype, DType::i64);
  EXPECT_EQ(t(api::binary(b, "add", Op::Add, i32, f32)).dtype, DType::f32);
  EXPECT_EQ(t(api::binary(b, "add", Op::Add, i64, f32)).dtype, DType::f32);
  EXPECT_EQ(t(api::binary(b, "divide", Op::Div, i32, i32)).dtype, DType::f32);  // true division
  EXPECT_EQ(t(api::unary(b, "sqrt", Op::Sqrt, i64)).dtype, DType::f64);
  EXPECT_EQ(t(api::unary(b, "abs", Op::Abs, i32)).dtype, DType::i32);
}

// ---- broadcasting

TEST_F(ApiTest, BinaryBroadcastsShapes) {
  V x = p(DType::f32, {2, 1, 4});
  V y = p(DType::f32, {3, 1});
  EXPECT_EQ(t(api::binary(b, "add", Op::Add, x, y)), vt(DType::f32, {2, 3, 4}));
  V s = p(DType::f32, {});
  EXPECT_EQ(t(api::binary(b, "mul", Op::Mul, s, x)), vt(DType::f32, {2, 1, 4}));
  V z = p(DType::f32, {5});
  EXPECT_THROW(api::binary(b, "add", Op::Add, x, z), ValueError);
}

TEST_F(ApiTest, BroadcastTo) {
  V x = p(DType::f64, {3, 1});
  EXPECT_EQ(t(api::broadcast_to(b, x, Shape{2, 3, 4})), vt(DType::f64, {2, 3, 4}));
  EXPECT_EQ(api::broadcast_to(b, x, Shape{3, 1}), x);  // no-op
  EXPECT_THROW(api::broadcast_to(b, x, Shape{3, 4, 5}), ValueError);
  EXPECT_THROW(api::broadcast_to(b, x, Shape{3}), ValueError);
}

TEST_F(ApiTest, WhereBroadcastsAllThree) {
  V c = p(DType::bool_, {2, 1});
  V x = p(DType::f32, {3});
  V y = p(DType::f64, {}, true);
  EXPECT_EQ(t(api::where(b, c, x, y)), vt(DType::f32, {2, 3}));
}

// ---- reshape and friends

TEST_F(ApiTest, ReshapeWithInferredAxis) {
  V x = p(DType::f32, {2, 3, 4});
  EXPECT_EQ(t(api::reshape(b, x, Shape{-1, 4})), vt(DType::f32, {6, 4}));
  EXPECT_EQ(t(api::reshape(b, x, Shape{4, -1})), vt(DType::f32, {4, 6}));
  EXPECT_EQ(t(api::reshape(b, x, Shape{-1})), vt(DType::f32, {24}));
  EXPECT_EQ(t(api::reshape(b, x, Shape{2, -1, 3})), vt(DType::f32, {2, 4, 3}));
}

TEST_F(ApiTest, ReshapeErrors) {
  V x = p(DType::f32, {2, 3, 4});
  EXPECT_THROW(api::reshape(b, x, Shape{-1, -1}), ValueError);
  EXPECT_THROW(api::reshape(b, x, Shape{5, -1}), ValueError);
  EXPECT_THROW(api::reshape(b, x, Shape{5, 5}), ValueError);
  EXPECT_THROW(api::reshape(b, x, Shape{0, 24}), ValueError);
  EXPECT_THROW(api::reshape(b, x, Shape{-2, -12}), ValueError);
}

TEST_F(ApiTest, TransposeSqueezeExpandDims) {
  V x = p(DType::f32, {2, 3, 4});
  EXPECT_EQ(t(api::transpose(b, x, std::nullopt)), vt(DType::f32, {4, 3, 2}));
  EXPECT_EQ(t(api::transpose(b, x, std::vector<std::int64_t>{1, -1, 0})), vt(DType::f32, {3, 4, 2}));
  EXPECT_THROW(api::transpose(b, x, std::vector<std::int64_t>{0, 0, 1}), ValueError);
  EXPECT_THROW(api::transpose(b, x, std::vector<std::int64_t>{0, 1}), ValueError);
  V y = p(DType::f32, {1, 3, 1});
  EXPECT_EQ(t(api::squeeze(b, y, std::nullopt)), vt(DType::f32, {3}));
  EXPECT_EQ(t(api::squeeze(b, y, std::vector<std::int64_t>{-1})), vt(DType::f32, {1, 3}));
  EXPECT_THROW(api::squeeze(b, y, std::vector<std::int64_t>{1}), ValueError);
  EXPECT_EQ(t(api::expand_dims(b, x, std::vector<std::int64_t>{0, -1})), vt(DType::f32, {1, 2, 3, 4, 1}));
}

TEST_F(ApiTest, ConcatStackSplit) {
  V x = p(DType::f32, {2, 3});
  V y = p(DType::f32, {2, 5});
  EXPECT_EQ(t(api::concat(b, std::vector<V>{x, y}, -1)), vt(DType::f32, {2, 8}));
  EXPECT_THROW(api::concat(b, std::vector<V>{x, y}, 0), ValueError);
  EXPECT_EQ(t(api::stack(b, std::vector<V>{x, x, x}, 1)), vt(DType::f32, {2, 3, 3}));
  auto parts = api::split(b, y, std::vector<std::int64_t>{1, 4}, 0, 1);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(t(parts[0]), vt(DType::f32, {2, 1}));
  EXPECT_EQ(t(parts[1]), vt(DType::f32, {2, 3}));
  EXPECT_EQ(t(parts[2]), vt(DType::f32, {2, 1}));
  EXPECT_THROW(api::split(b, y, {}, 2, 1), ValueError);  // 5 does not divide into 2
}

TEST_F(ApiTest, ReductionsRemoveOrKeepAxes) {
  V x = p(DType::f64, {2, 3, 4});
  EXPECT_EQ(t(api::reduce(b, "sum", Op::ReduceSum, x, std::vector<std::int64_t>{0, -1}, false)), vt(DType::f64, {3}));
  EXPECT_EQ(t(api::reduce(b, "sum", Op::ReduceSum, x, std::vector<std::int64_t>{1}, true)), vt(DType::f64, {2, 1, 4}));
  EXPECT_EQ(t(api::reduce(b, "max", Op::ReduceMax, x, std::nullopt, false)), vt(DType::f64, {}));
  EXPECT_EQ(t(api::mean(b, x, std::vector<std::int64_t>{2}, false)), vt(DType::f64, {2, 3}));
  EXPECT_THROW(api::reduce(b, "sum", Op::ReduceSum, x, std::vector<std::int64_t>{1, -2}, false), ValueError);
  EXPECT_THROW(api::reduce(b, "sum", Op::ReduceSum, x, std::vector<std::int64_t>{3}, false), ValueError);
  EXPECT_EQ(t(api::cumsum(b, x, std::nullopt, false)), vt(DType::f64, {24}));
  EXPECT_EQ(t(api::cumsum(b, x, -1, true)), vt(DType::f64, {2, 3, 4}));
}

// ---- matmul (NumPy rules)

TEST_F(ApiTest, MatmulMatrixMatrix) {
  V x = p(DType::f32, {2, 3});
  V y = p(DType::f32, {3, 4});
  EXPECT_EQ(t(api::matmul(b, x, y)), vt(DType::f32, {2, 4}));
}

TEST_F(ApiTest, MatmulVectorOperands) {
  V v3 = p(DType::f32, {3});
  V m34 = p(DType::f32, {3, 4});
  V m23 = p(DType::f32, {2, 3});
  EXPECT_EQ(t(api::matmul(b, v3, v3)), vt(DType::f32, {}));
  EXPECT_EQ(t(api::matmul(b, v3, m34)), vt(DType::f32, {4}));
  EXPECT_EQ(t(api::matmul(b, m23, v3)), vt(DType::f32, {2}));
  V batch = p(DType::f32, {5, 2, 3});
  EXPECT_EQ(t(api::matmul(b, batch, v3)), vt(DType::f32, {5, 2}));
  EXPECT_EQ(t(api::matmul(b, v3, p(DType::f32, {5, 3, 4}))), vt(DType::f32, {5, 4}));
}

TEST_F(ApiTest, MatmulBatchBroadcast) {
  V x = p(DType::f64, {2, 1, 3, 4});
  V y = p(DType::f64, {5, 4, 6});
  EXPECT_EQ(t(api::matmul(b, x, y)), vt(DType::f64, {2, 5, 3, 6}));
  V z = p(DType::f64, {4, 6});
  EXPECT_EQ(t(api::matmul(b, x, z)), vt(DType::f64, {2, 1, 3, 6}));
}

TEST_F(ApiTest, MatmulErrors) {
  V x = p(DType::f32, {2, 3});
  EXPECT_THROW(api::matmul(b, x, p(DType::f32, {4, 2})), ValueError);           // contraction
  EXPECT_THROW(api::matmul(b, x, p(DType::f32, {})), ValueError);               // scalar
  EXPECT_THROW(api::matmul(b, p(DType::f32, {2, 2, 3}), p(DType::f32, {3, 3, 1})), ValueError);  // batch 2 vs 3
  EXPECT_THROW(api::matmul(b, x, p(DType::f64, {3, 2})), ValueError);           // f32 x f64 strong
  EXPECT_EQ(t(api::matmul(b, x, p(DType::bool_, {3, 2}))), vt(DType::f32, {2, 2}));
}

// ---- getitem

IndexItem idx(std::int64_t i) { return IndexItem{IndexItem::Int, i}; }
IndexItem all() { return IndexItem{IndexItem::Slice}; }
IndexItem sl(std::optional<std::int64_t> start, std::optional<std::int64_t> stop, std::int64_t step = 1) {
  IndexItem it{IndexItem::Slice};
  it.start = start.value_or(0);
  it.stop = stop.value_or(0);
  it.has_start = start.has_value();
  it.has_stop = stop.has_value();
  it.step = step;
  return it;
}
IndexItem newaxis() { return IndexItem{IndexItem::NewAxis}; }
IndexItem ellipsis() { return IndexItem{IndexItem::Ellipsis}; }

TEST_F(ApiTest, GetitemIntegers) {
  V x = p(DType::f32, {4, 5, 6});
  EXPECT_EQ(t(api::getitem(b, x, std::vector{idx(1)})), vt(DType::f32, {5, 6}));
  EXPECT_EQ(t(api::getitem(b, x, std::vector{idx(-1), idx(0), idx(5)})), vt(DType::f32, {}));
  EXPECT_EQ(t(api::getitem(b, x, std::vector{all(), idx(-5)})), vt(DType::f32, {4, 6}));
}

TEST_F(ApiTest, GetitemSlices) {
  V x = p(DType::f32, {10});
  EXPECT_EQ(t(api::getitem(b, x, std::vector{sl(1, 8, 3)})), vt(DType::f32, {3}));
  EXPECT_EQ(t(api::getitem(b, x, std::vector{sl(std::nullopt, std::nullopt, -1)})), vt(DType::f32, {10}));
  EXPECT_EQ(t(api::getitem(b, x, std::vector{sl(std::nullopt, std::nullopt, -3)})), vt(DType::f32, {4}));  // 9 6 3 0
  EXPECT_EQ(t(api::getitem(b, x, std::vector{sl(8, 2, -2)})), vt(DType::f32, {3}));  // 8 6 4
  EXPECT_EQ(t(api::getitem(b, x, std::vector{sl(-3, std::nullopt)})), vt(DType::f32, {3}));
  EXPECT_EQ(t(api::getitem(b, x, std::vector{sl(-100, 100)})), vt(DType::f32, {10}));  // clamped
  EXPECT_EQ(t(api::getitem(b, x, std::vector{sl(5, 5)})), vt(DType::f32, {0}));  // empty, as NumPy
  EXPECT_THROW(api::getitem(b, x, std::vector{sl(1, 4, 0)}), ValueError);  // zero step
}

TEST_F(ApiTest, GetitemNewaxisAndEllipsis) {
  V x = p(DType::f64, {4, 5, 6});
  EXPECT_EQ(t(api::getitem(b, x, std::vector{newaxis()})), vt(DType::f64, {1, 4, 5, 6}));
  EXPECT_EQ(t(api::getitem(b, x, std::vector{ellipsis(), idx(0)})), vt(DType::f64, {4, 5}));
  EXPECT_EQ(t(api::getitem(b, x, std::vector{idx(0), ellipsis(), newaxis()})), vt(DType::f64, {5, 6, 1}));
  EXPECT_EQ(t(api::getitem(b, x, std::vector{all(), newaxis(), idx(2), sl(std::nullopt, std::nullopt, -2)})),
            vt(DType::f64, {4, 1, 3}));
  EXPECT_EQ(t(api::getitem(b, x, std::vector{ellipsis()})), vt(DType::f64, {4, 5, 6}));
}

TEST_F(ApiTest, GetitemErrors) {
  V x = p(DType::f32, {4, 5});
  EXPECT_THROW(api::getitem(b, x, std::vector{idx(4)}), IndexError);
  EXPECT_THROW(api::getitem(b, x, std::vector{idx(-5)}), IndexError);
  EXPECT_THROW(api::getitem(b, x, std::vector{all(), idx(5)}), IndexError);
  EXPECT_THROW(api::getitem(b, x, std::vector{idx(0), idx(0), idx(0)}), IndexError);
  EXPECT_THROW(api::getitem(b, x, std::vector{ellipsis(), ellipsis()}), IndexError);
}

}  // namespace
}  // namespace qb
