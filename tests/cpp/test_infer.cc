// Primitive shape/dtype inference (ir/infer.h): one representative per family of ops.def,
// the resulting ValueType and the ValueError for bad input.
#include <gtest/gtest.h>

#include <vector>

#include "quabla/ir/errors.h"
#include "quabla/ir/infer.h"
#include "test_util.h"

namespace qb {
namespace {

using test::vt;

ValueType infer1(Op op, std::vector<ValueType> in, const Attrs& a = {}) {
  auto out = infer_types(op, in, a);
  EXPECT_EQ(out.size(), 1u);
  return out.at(0);
}

TEST(InferUnary, FloatOpsKeepTypeAndDropWeak) {
  EXPECT_EQ(infer1(Op::Sin, {vt(DType::f32, {2, 3})}), vt(DType::f32, {2, 3}));
  EXPECT_EQ(infer1(Op::Exp, {vt(DType::f64, {})}), vt(DType::f64, {}));
  EXPECT_EQ(infer1(Op::Neg, {vt(DType::f64, {4}, true)}), vt(DType::f64, {4}, false));
  EXPECT_EQ(infer1(Op::Softplus, {vt(DType::f32, {1, 1, 5})}), vt(DType::f32, {1, 1, 5}));
}

TEST(InferUnary, FloatOpsRejectBool) {
  for (Op op : {Op::Neg, Op::Sqrt, Op::Exp, Op::Tanh, Op::Logistic, Op::StopGradient}) {
    EXPECT_THROW(infer1(op, {vt(DType::bool_, {3})}), ValueError) << op_name(op);
  }
}

TEST(InferUnary, ArityChecked) {
  EXPECT_THROW(infer1(Op::Sin, {}), ValueError);
  EXPECT_THROW(infer1(Op::Sin, {vt(DType::f32, {2}), vt(DType::f32, {2})}), ValueError);
}

TEST(InferUnary, PredicatesGiveBool) {
  EXPECT_EQ(infer1(Op::IsNan, {vt(DType::f32, {3})}), vt(DType::bool_, {3}));
  EXPECT_EQ(infer1(Op::IsFinite, {vt(DType::f64, {2, 2})}), vt(DType::bool_, {2, 2}));
  EXPECT_THROW(infer1(Op::IsInf, {vt(DType::bool_, {3})}), ValueError);
}

TEST(InferUnary, NotNeedsBool) {
  EXPECT_EQ(infer1(Op::Not, {vt(DType::bool_, {3})}), vt(DType::bool_, {3}));
  EXPECT_THROW(infer1(Op::Not, {vt(DType::f32, {3})}), ValueError);
}

TEST(InferBinary, SameDtypeAndShape) {
  EXPECT_EQ(infer1(Op::Add, {vt(DType::f32, {2, 3}), vt(DType::f32, {2, 3})}), vt(DType::f32, {2, 3}));
  EXPECT_EQ(infer1(Op::Atan2, {vt(DType::f64, {}), vt(DType::f64, {})}), vt(DType::f64, {}));
}

TEST(InferBinary, RejectsMismatch) {
  EXPECT_THROW(infer1(Op::Add, {vt(DType::f32, {2, 3}), vt(DType::f64, {2, 3})}), ValueError);
  // Primitives never broadcast: the api layer inserts broadcast_in_dim first.
  EXPECT_THROW(infer1(Op::Mul, {vt(DType::f32, {2, 3}), vt(DType::f32, {3})}), ValueError);
  EXPECT_THROW(infer1(Op::Mul, {vt(DType::f32, {2, 3}), vt(DType::f32, {})}), ValueError);
  EXPECT_THROW(infer1(Op::Sub, {vt(DType::bool_, {2}), vt(DType::bool_, {2})}), ValueError);
}

TEST(InferBinary, LogicalNeedsBool) {
  EXPECT_EQ(infer1(Op::And, {vt(DType::bool_, {4}), vt(DType::bool_, {4})}), vt(DType::bool_, {4}));
  EXPECT_THROW(infer1(Op::Or, {vt(DType::f32, {4}), vt(DType::f32, {4})}), ValueError);
}

TEST(InferCompare, GivesBool) {
  EXPECT_EQ(infer1(Op::Lt, {vt(DType::f32, {2, 2}), vt(DType::f32, {2, 2})}), vt(DType::bool_, {2, 2}));
  EXPECT_EQ(infer1(Op::Eq, {vt(DType::f64, {}), vt(DType::f64, {})}), vt(DType::bool_, {}));
  EXPECT_EQ(infer1(Op::Ne, {vt(DType::bool_, {3}), vt(DType::bool_, {3})}), vt(DType::bool_, {3}));
  EXPECT_THROW(infer1(Op::Ge, {vt(DType::f32, {3}), vt(DType::f64, {3})}), ValueError);
  EXPECT_THROW(infer1(Op::Ge, {vt(DType::f32, {3}), vt(DType::f32, {4})}), ValueError);
}

TEST(InferSelect, ResultIsOperandType) {
  EXPECT_EQ(infer1(Op::Select, {vt(DType::bool_, {2, 3}), vt(DType::f64, {2, 3}), vt(DType::f64, {2, 3})}),
            vt(DType::f64, {2, 3}));
  EXPECT_EQ(infer1(Op::Select, {vt(DType::bool_, {2}), vt(DType::bool_, {2}), vt(DType::bool_, {2})}),
            vt(DType::bool_, {2}));
}

TEST(InferSelect, RejectsBadPredicateOrOperands) {
  // predicate not bool
  EXPECT_THROW(infer1(Op::Select, {vt(DType::f32, {2}), vt(DType::f32, {2}), vt(DType::f32, {2})}), ValueError);
  // predicate of another shape
  EXPECT_THROW(infer1(Op::Select, {vt(DType::bool_, {3}), vt(DType::f32, {2}), vt(DType::f32, {2})}), ValueError);
  // operands of different dtypes
  EXPECT_THROW(infer1(Op::Select, {vt(DType::bool_, {2}), vt(DType::f32, {2}), vt(DType::f64, {2})}), ValueError);
}

TEST(InferConvert, ChangesDtypeKeepsShape) {
  Attrs a;
  a.dtype = DType::bool_;
  EXPECT_EQ(infer1(Op::Convert, {vt(DType::f64, {2, 5})}, a), vt(DType::bool_, {2, 5}));
  a.dtype = DType::f32;
  EXPECT_EQ(infer1(Op::Convert, {vt(DType::f64, {}, true)}, a), vt(DType::f32, {}));
}

TEST(InferReshape, ElementCountMustMatch) {
  Attrs a;
  a.shape = {3, 4};
  EXPECT_EQ(infer1(Op::Reshape, {vt(DType::f32, {2, 6})}, a), vt(DType::f32, {3, 4}));
  a.shape = {12};
  EXPECT_EQ(infer1(Op::Reshape, {vt(DType::f64, {2, 2, 3})}, a), vt(DType::f64, {12}));
  a.shape = {5, 2};
  EXPECT_THROW(infer1(Op::Reshape, {vt(DType::f32, {2, 6})}, a), ValueError);
}

TEST(InferBroadcastInDim, ValidAndInvalid) {
  Attrs a;
  a.shape = {2, 3, 4};
  a.dims = {1, 2};
  EXPECT_EQ(infer1(Op::BroadcastInDim, {vt(DType::f32, {3, 4})}, a), vt(DType::f32, {2, 3, 4}));
  a.dims = {0, 2};
  EXPECT_EQ(infer1(Op::BroadcastInDim, {vt(DType::f32, {1, 4})}, a), vt(DType::f32, {2, 3, 4}));
  a.dims = {};
  EXPECT_EQ(infer1(Op::BroadcastInDim, {vt(DType::f64, {})}, a), vt(DType::f64, {2, 3, 4}));

  a.dims = {0, 2};  // operand axis 0 (size 3) lands on a result axis of size 2
  EXPECT_THROW(infer1(Op::BroadcastInDim, {vt(DType::f32, {3, 4})}, a), ValueError);
  a.dims = {2, 1};  // not increasing
  EXPECT_THROW(infer1(Op::BroadcastInDim, {vt(DType::f32, {4, 3})}, a), ValueError);
  a.dims = {1};  // one dim for a rank-2 operand
  EXPECT_THROW(infer1(Op::BroadcastInDim, {vt(DType::f32, {3, 4})}, a), ValueError);
  a.dims = {1, 3};  // out of range
  EXPECT_THROW(infer1(Op::BroadcastInDim, {vt(DType::f32, {3, 4})}, a), ValueError);
}

TEST(InferTranspose, PermutesShape) {
  Attrs a;
  a.dims = {2, 0, 1};
  EXPECT_EQ(infer1(Op::Transpose, {vt(DType::f32, {2, 3, 4})}, a), vt(DType::f32, {4, 2, 3}));
  a.dims = {1, 0};
  EXPECT_EQ(infer1(Op::Transpose, {vt(DType::bool_, {5, 7})}, a), vt(DType::bool_, {7, 5}));
}

TEST(InferTranspose, RejectsBadPermutations) {
  Attrs a;
  a.dims = {0, 0, 1};  // repeated
  EXPECT_THROW(infer1(Op::Transpose, {vt(DType::f32, {2, 3, 4})}, a), ValueError);
  a.dims = {1, 0};  // wrong length
  EXPECT_THROW(infer1(Op::Transpose, {vt(DType::f32, {2, 3, 4})}, a), ValueError);
  a.dims = {0, 1, 3};  // out of range
  EXPECT_THROW(infer1(Op::Transpose, {vt(DType::f32, {2, 3, 4})}, a), ValueError);
  a.dims = {-1, 0, 1};  // primitives take normalised axes only
  EXPECT_THROW(infer1(Op::Transpose, {vt(DType::f32, {2, 3, 4})}, a), ValueError);
}

TEST(InferSlice, ResultShape) {
  Attrs a;
  a.starts = {1};
  a.limits = {8};
  a.strides = {3};  // picks 1, 4, 7
  EXPECT_EQ(infer1(Op::Slice, {vt(DType::f32, {10})}, a), vt(DType::f32, {3}));
  a.starts = {0, 2};
  a.limits = {4, 5};
  a.strides = {2, 1};
  EXPECT_EQ(infer1(Op::Slice, {vt(DType::f64, {4, 5})}, a), vt(DType::f64, {2, 3}));
  a.starts = {0, 0};
  a.limits = {4, 5};
  a.strides = {4, 5};
  EXPECT_EQ(infer1(Op::Slice, {vt(DType::f64, {4, 5})}, a), vt(DType::f64, {1, 1}));
}

TEST(InferSlice, RejectsBadBounds) {
  Attrs a;
  a.starts = {0};
  a.limits = {11};  // past the end
  a.strides = {1};
  EXPECT_THROW(infer1(Op::Slice, {vt(DType::f32, {10})}, a), ValueError);
  a.limits = {5};
  a.strides = {0};  // zero stride
  EXPECT_THROW(infer1(Op::Slice, {vt(DType::f32, {10})}, a), ValueError);
  a.strides = {-1};
  EXPECT_THROW(infer1(Op::Slice, {vt(DType::f32, {10})}, a), ValueError);
  a.starts = {6};  // start after limit
  a.strides = {1};
  EXPECT_THROW(infer1(Op::Slice, {vt(DType::f32, {10})}, a), ValueError);
  a.starts = {0, 0};  // wrong rank
  a.limits = {5, 5};
  a.strides = {1, 1};
  EXPECT_THROW(infer1(Op::Slice, {vt(DType::f32, {10})}, a), ValueError);
}

TEST(InferReverse, KeepsTypeValidatesAxes) {
  Attrs a;
  a.dims = {0, 2};
  EXPECT_EQ(infer1(Op::Reverse, {vt(DType::f32, {2, 3, 4})}, a), vt(DType::f32, {2, 3, 4}));
  a.dims = {3};
  EXPECT_THROW(infer1(Op::Reverse, {vt(DType::f32, {2, 3, 4})}, a), ValueError);
  a.dims = {1, 1};
  EXPECT_THROW(infer1(Op::Reverse, {vt(DType::f32, {2, 3, 4})}, a), ValueError);
}

TEST(InferConcat, SumsAxis) {
  Attrs a;
  a.axis = 1;
  EXPECT_EQ(infer1(Op::Concat, {vt(DType::f32, {2, 3}), vt(DType::f32, {2, 1}), vt(DType::f32, {2, 4})}, a),
            vt(DType::f32, {2, 8}));
  a.axis = 0;
  EXPECT_EQ(infer1(Op::Concat, {vt(DType::f64, {2, 3}), vt(DType::f64, {5, 3})}, a), vt(DType::f64, {7, 3}));
}

TEST(InferConcat, RejectsMismatch) {
  Attrs a;
  a.axis = 1;
  EXPECT_THROW(infer1(Op::Concat, {vt(DType::f32, {2, 3}), vt(DType::f32, {3, 3})}, a), ValueError);
  EXPECT_THROW(infer1(Op::Concat, {vt(DType::f32, {2, 3}), vt(DType::f64, {2, 3})}, a), ValueError);
  EXPECT_THROW(infer1(Op::Concat, {vt(DType::f32, {2, 3}), vt(DType::f32, {2, 3, 1})}, a), ValueError);
  a.axis = 2;
  EXPECT_THROW(infer1(Op::Concat, {vt(DType::f32, {2, 3}), vt(DType::f32, {2, 3})}, a), ValueError);
  EXPECT_THROW(infer1(Op::Concat, {}, a), ValueError);
}

TEST(InferReduce, RemovesAxes) {
  Attrs a;
  a.dims = {0, 2};
  EXPECT_EQ(infer1(Op::ReduceSum, {vt(DType::f32, {2, 3, 4})}, a), vt(DType::f32, {3}));
  a.dims = {1};
  EXPECT_EQ(infer1(Op::ReduceMax, {vt(DType::f64, {2, 3, 4})}, a), vt(DType::f64, {2, 4}));
  a.dims = {0, 1, 2};
  EXPECT_EQ(infer1(Op::ReduceProd, {vt(DType::f32, {2, 3, 4})}, a), vt(DType::f32, {}));
  a.dims = {1};
  EXPECT_EQ(infer1(Op::ReduceAny, {vt(DType::bool_, {2, 3})}, a), vt(DType::bool_, {2}));
}

TEST(InferReduce, RejectsBadAxesAndDtypes) {
  Attrs a;
  a.dims = {2, 0};  // unsorted
  EXPECT_THROW(infer1(Op::ReduceSum, {vt(DType::f32, {2, 3, 4})}, a), ValueError);
  a.dims = {3};
  EXPECT_THROW(infer1(Op::ReduceSum, {vt(DType::f32, {2, 3, 4})}, a), ValueError);
  a.dims = {-1};
  EXPECT_THROW(infer1(Op::ReduceMin, {vt(DType::f32, {2, 3, 4})}, a), ValueError);
  a.dims = {0};
  EXPECT_THROW(infer1(Op::ReduceSum, {vt(DType::bool_, {2})}, a), ValueError);
  EXPECT_THROW(infer1(Op::ReduceAll, {vt(DType::f32, {2})}, a), ValueError);
}

TEST(InferCumsum, KeepsShape) {
  Attrs a;
  a.axis = 1;
  a.reverse = true;
  EXPECT_EQ(infer1(Op::Cumsum, {vt(DType::f64, {2, 3})}, a), vt(DType::f64, {2, 3}));
  a.axis = 2;
  EXPECT_THROW(infer1(Op::Cumsum, {vt(DType::f64, {2, 3})}, a), ValueError);
  a.axis = 0;
  EXPECT_THROW(infer1(Op::Cumsum, {vt(DType::bool_, {2, 3})}, a), ValueError);
}

TEST(InferMatMul, BatchAndContract) {
  EXPECT_EQ(infer1(Op::MatMul, {vt(DType::f32, {2, 3}), vt(DType::f32, {3, 5})}), vt(DType::f32, {2, 5}));
  EXPECT_EQ(infer1(Op::MatMul, {vt(DType::f64, {4, 2, 3}), vt(DType::f64, {4, 3, 1})}), vt(DType::f64, {4, 2, 1}));
}

TEST(InferMatMul, RejectsBadOperands) {
  // contraction mismatch
  EXPECT_THROW(infer1(Op::MatMul, {vt(DType::f32, {2, 3}), vt(DType::f32, {4, 5})}), ValueError);
  // batch axes differ (primitive does not broadcast)
  EXPECT_THROW(infer1(Op::MatMul, {vt(DType::f32, {4, 2, 3}), vt(DType::f32, {1, 3, 5})}), ValueError);
  // rank mismatch
  EXPECT_THROW(infer1(Op::MatMul, {vt(DType::f32, {4, 2, 3}), vt(DType::f32, {3, 5})}), ValueError);
  // 1-D operands are an api-level convenience only
  EXPECT_THROW(infer1(Op::MatMul, {vt(DType::f32, {3}), vt(DType::f32, {3})}), ValueError);
  // dtypes
  EXPECT_THROW(infer1(Op::MatMul, {vt(DType::f32, {2, 3}), vt(DType::f64, {3, 5})}), ValueError);
  EXPECT_THROW(infer1(Op::MatMul, {vt(DType::bool_, {2, 3}), vt(DType::bool_, {3, 5})}), ValueError);
}

TEST(InferLeaves, ConstantAndParameter) {
  auto lit = std::make_shared<Literal>();
  lit->type = vt(DType::f64, {2});
  lit->data = test::make_buffer<double>({1.0, 2.0});
  Attrs a;
  a.literal = lit;
  EXPECT_EQ(infer1(Op::Constant, {}, a), vt(DType::f64, {2}));
  EXPECT_THROW(infer1(Op::Constant, {}, Attrs{}), ValueError);
  EXPECT_THROW(infer1(Op::Parameter, {}, Attrs{}), ValueError);
}

}  // namespace
}  // namespace qb
