// The text form of a Graph (print) and the structural checker (verify).
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "quabla/api/functions.h"
#include "quabla/ir/errors.h"
#include "test_util.h"

namespace qb {
namespace {

using api::V;
using test::make_buffer;
using test::vt;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// x: f32[4], s: f64[]~ ; r = exp(x + s) ; plus a reduction, a slice and a cumsum.
struct Sample {
  Graph g;
  Builder b{g};
  V x, s, sum, e, red, sl, cs;
  Sample() {
    x = b.param(vt(DType::f32, {4}));
    s = b.param(vt(DType::f64, {}, true));
    sum = api::binary(b, "add", Op::Add, x, s);
    e = api::unary(b, "exp", Op::Exp, sum);
    red = api::reduce(b, "sum", Op::ReduceSum, e, std::nullopt, false);
    Attrs a;
    a.starts = {1};
    a.limits = {4};
    a.strides = {2};
    sl = b.emit1(Op::Slice, {e}, a);
    cs = api::cumsum(b, sl, 0, true);
    b.set_results({red, cs});
  }
};

TEST(Print, ContainsSignatureOpsAndAttributes) {
  Sample smp;
  const std::string text = print(smp.g);
  EXPECT_TRUE(contains(text, "func(%0: f32[4], %1: f64[]~) -> (f32[], f32[2]) {")) << text;
  for (const char* part : {"convert(%1) dtype=f32", "broadcast_in_dim(", "shape=[4] dims=[]", "add(", "exp(",
                           "reduce_sum(", "axes=[0]", "slice(", "starts=[1] limits=[4] strides=[2]", "cumsum(",
                           "axis=0 reverse", " : f32[2]", "return %"}) {
    EXPECT_TRUE(contains(text, part)) << "missing '" << part << "' in\n" << text;
  }
  EXPECT_FALSE(contains(text, "parameter(")) << text;  // parameters appear in the signature only
}

TEST(Print, ConstantValue) {
  Graph g;
  Builder b(g);
  V c = api::scalar_constant(b, 2.5, DType::f64);
  b.set_results({c});
  const std::string text = print(g);
  EXPECT_TRUE(contains(text, "constant() value=2.5 : f64[]")) << text;
}

TEST(Print, ValueTypeStr) {
  EXPECT_EQ(vt(DType::f32, {2, 3}).str(), "f32[2, 3]");
  EXPECT_EQ(vt(DType::f64, {}, true).str(), "f64[]~");
  EXPECT_EQ(vt(DType::bool_, {1}).str(), "bool[1]");
  EXPECT_EQ(op_name(Op::BroadcastInDim), "broadcast_in_dim");
  EXPECT_EQ(op_arity(Op::Select), 3);
  EXPECT_EQ(op_arity(Op::Concat), -1);
  EXPECT_TRUE(is_elementwise(Op::Convert));
  EXPECT_FALSE(is_elementwise(Op::Reshape));
}

TEST(Verify, AcceptsBuilderOutput) {
  Sample smp;
  EXPECT_NO_THROW(verify(smp.g));

  Graph g;
  Builder b(g);
  V x = b.param(vt(DType::f64, {2, 1, 2, 3}));
  V y = b.param(vt(DType::f64, {4, 3, 2}));  // matmul -> [2, 4, 2, 2]
  V m = api::matmul(b, x, y);
  V t = api::transpose(b, m, std::nullopt);
  V c = api::concat(b, std::vector<V>{t, t}, 1);
  V w = api::where(b, api::compare(b, "gt", Op::Gt, c, api::scalar_constant(b, 0.0, DType::f64)), c,
                   api::scalar_constant(b, 1.0, DType::f64));
  b.set_results({w, api::softmax(b, w, -1), api::var(b, w, std::nullopt, 1.0, false)});
  EXPECT_NO_THROW(verify(g));
}

TEST(Verify, AcceptsWeakLiteralConstant) {
  // A constant made from a Python scalar is weak; Builder::constant records the literal's
  // type as is, and verify must accept what the builder produced.
  Graph g;
  Builder b(g);
  auto lit = std::make_shared<Literal>();
  lit->type = vt(DType::f64, {}, true);
  lit->data = make_buffer<double>({3.0});
  V c = b.constant(lit);
  V x = b.param(vt(DType::f32, {2}));
  b.set_results({api::binary(b, "mul", Op::Mul, x, c)});
  EXPECT_NO_THROW(verify(g)) << print(g);
}

TEST(Verify, RejectsUseBeforeDefinition) {
  Sample smp;
  // Move the exp node (which uses the add) in front of the add.
  auto& nodes = smp.g.nodes;
  const auto add_node = smp.g.producer[smp.sum];
  const auto exp_node = smp.g.producer[smp.e];
  ASSERT_LT(add_node, exp_node);
  std::swap(nodes[add_node], nodes[exp_node]);
  std::swap(smp.g.producer[smp.sum], smp.g.producer[smp.e]);
  try {
    verify(smp.g);
    FAIL() << "expected InternalError";
  } catch (const InternalError& err) {
    EXPECT_TRUE(contains(err.what(), "before its definition")) << err.what();
  }
}

TEST(Verify, RejectsOperandOutOfRange) {
  Sample smp;
  smp.g.nodes[smp.g.producer[smp.e]].inputs[0] = static_cast<ValueId>(smp.g.values.size() + 5);
  EXPECT_THROW(verify(smp.g), InternalError);
}

TEST(Verify, RejectsWrongRecordedType) {
  Sample smp;
  smp.g.values[smp.e].shape = {5};
  EXPECT_THROW(verify(smp.g), InternalError);
  Sample smp2;
  smp2.g.values[smp2.red].dtype = DType::f64;
  EXPECT_THROW(verify(smp2.g), InternalError);
}

TEST(Verify, RejectsUndefinedResult) {
  Sample smp;
  smp.g.results.push_back(static_cast<ValueId>(smp.g.values.size()));
  EXPECT_THROW(verify(smp.g), InternalError);
}

TEST(Verify, RejectsBadProducerTableAndParameterList) {
  Sample smp;
  smp.g.producer.pop_back();
  EXPECT_THROW(verify(smp.g), InternalError);
  Sample smp2;
  std::swap(smp2.g.params[0], smp2.g.params[1]);
  EXPECT_THROW(verify(smp2.g), InternalError);
  Sample smp3;
  smp3.g.params.pop_back();
  EXPECT_THROW(verify(smp3.g), InternalError);
}

TEST(Verify, RejectsValueDefinedTwice) {
  Sample smp;
  // The exp node claims the add's output as its own as well.
  smp.g.nodes[smp.g.producer[smp.e]].outputs.push_back(smp.sum);
  EXPECT_THROW(verify(smp.g), InternalError);
}

// graph.h: verify "checks SSA order, operand counts and that every node's recorded types are
// what inference says; throws InternalError describing the first violation".
TEST(Verify, WrongOperandCountIsInternalError) {
  Sample smp;
  smp.g.nodes[smp.g.producer[smp.sum]].inputs.pop_back();  // add with one operand
  EXPECT_THROW(verify(smp.g), InternalError);
}

TEST(Verify, IllTypedOperandsAreInternalError) {
  Graph g;
  Builder b(g);
  V x = b.param(vt(DType::f32, {3}));
  V y = b.param(vt(DType::f32, {3}));
  b.set_results({b.emit1(Op::Add, {x, y})});
  ASSERT_NO_THROW(verify(g));
  g.values[y].dtype = DType::f64;  // a broken pass retyped a parameter
  EXPECT_THROW(verify(g), InternalError);
}

}  // namespace
}  // namespace qb
