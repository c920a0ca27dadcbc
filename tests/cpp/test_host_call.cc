// The host_call op (ops.def, runtime/host_call.h) below the Python layer: the CPU executor
// hands the handler the operands and their types, the simplifier neither folds nor merges
// calls, a linear call is its own JVP and transposes to its transpose's id, and running one
// without a handler raises.
#include <gtest/gtest.h>

#include <vector>

#include "quabla/ir/errors.h"
#include "quabla/runtime/host_call.h"
#include "quabla/transforms/jvp.h"
#include "quabla/transforms/simplify.h"
#include "quabla/transforms/vjp.h"
#include "test_util.h"

namespace qb {
namespace {

using test::make_buffer;
using test::Program;
using test::read_buffer;
using test::vt;

Attrs call_attrs(std::int64_t id, Shape shape, std::int64_t transpose = -1) {
  Attrs a;
  a.mode = id;
  a.num_consts = transpose;
  a.shape = std::move(shape);
  a.dtype = DType::f64;
  return a;
}

int count_host_calls(const Graph& g) {
  int k = 0;
  for (const Node& n : g.nodes) k += n.op == Op::HostCall;
  return k;
}

// A handler computing callback id * sum of the operands (elementwise, same shape).
struct ScaledSum {
  std::vector<std::int64_t> ids;
  void operator()(const HostCallArgs& a) {
    ids.push_back(a.callback);
    const auto n = static_cast<std::size_t>(num_elements(a.out_type->shape));
    auto* out = reinterpret_cast<double*>(a.out);
    for (std::size_t e = 0; e < n; ++e) {
      double s = 0;
      for (auto* in : a.ins) s += reinterpret_cast<const double*>(in)[e];
      out[e] = static_cast<double>(a.callback) * s;
    }
  }
};

class HostCall : public ::testing::Test {
 protected:
  void TearDown() override { set_host_call_handler(nullptr); }
};

TEST_F(HostCall, RunsItsHandlerWithTheOperands) {
  ScaledSum h;
  set_host_call_handler([&h](const HostCallArgs& a) { h(a); });
  Program p;
  ValueId x = p.b.param(vt(DType::f64, {3}));
  ValueId y = p.b.param(vt(DType::f64, {3}));
  ValueId r = p.b.emit1(Op::HostCall, {x, y}, call_attrs(2, {3}));
  auto out = p.run({r}, {make_buffer<double>({1, 2, 3}), make_buffer<double>({10, 20, 30})});
  EXPECT_EQ(read_buffer<double>(out[0], 3), (std::vector<double>{22, 44, 66}));
  EXPECT_EQ(h.ids, (std::vector<std::int64_t>{2}));
}

TEST_F(HostCall, WithoutAHandlerRaises) {
  Program p;
  ValueId x = p.b.param(vt(DType::f64, {2}));
  ValueId r = p.b.emit1(Op::HostCall, {x}, call_attrs(1, {2}));
  EXPECT_THROW(p.run({r}, {make_buffer<double>({1, 2})}), InternalError);
}

TEST_F(HostCall, NeverFoldedNorMerged) {
  Graph g;
  Builder b(g);
  Attrs lit;
  lit.literal = std::make_shared<const Literal>(Literal{vt(DType::f64, {}), make_buffer<double>({2.0})});
  const ValueId c = b.emit1(Op::Constant, {}, lit);
  const ValueId r1 = b.emit1(Op::HostCall, {c}, call_attrs(5, {}));
  const ValueId r2 = b.emit1(Op::HostCall, {c}, call_attrs(5, {}));
  b.set_results({r1, r2});
  const Graph s = simplify(g);
  EXPECT_EQ(count_host_calls(s), 2);
}

TEST_F(HostCall, EffectsSurviveDeadCodeEliminationOtherCallsDoNot) {
  Graph g;
  Builder b(g);
  const ValueId x = b.param(vt(DType::f64, {2}));
  Attrs effect = call_attrs(3, {});
  effect.dtype = DType::bool_;
  effect.num_carry = kHostCallEffect | 2;
  b.emit1(Op::HostCall, {x}, effect);             // qb.debug.print: nothing reads it
  b.emit1(Op::HostCall, {x}, call_attrs(4, {2}));  // a pure call nothing reads
  b.set_results({x});
  const Graph s = simplify(g);
  ASSERT_EQ(count_host_calls(s), 1);
  for (const Node& n : s.nodes) {
    if (n.op == Op::HostCall) {
      EXPECT_EQ(n.attrs.mode, 3);
    }
  }
  EXPECT_EQ(count_host_calls(without_effects(s)), 0);
  // The effect has no tangent: differentiating through it is fine.
  const bool wrt[] = {true};
  EXPECT_NO_THROW(jvp(s, wrt));
}

TEST_F(HostCall, LinearCallsAreTheirOwnJvpAndTransposeToTheirPair) {
  Graph g;
  Builder b(g);
  const ValueId x = b.param(vt(DType::f64, {2}));
  b.set_results({b.emit1(Op::HostCall, {x}, call_attrs(7, {2}, /*transpose=*/8))});
  const bool wrt[] = {true};
  const Graph d = jvp(g, wrt);
  int calls = 0;
  for (const Node& n : d.nodes) {
    if (n.op == Op::HostCall) {
      EXPECT_EQ(n.attrs.mode, 7);
      ++calls;
    }
  }
  EXPECT_EQ(calls, 2);  // the primal and the tangent
  const Graph v = vjp(g, wrt);
  bool transposed = false;
  for (const Node& n : v.nodes) {
    if (n.op == Op::HostCall && n.attrs.mode == 8) {
      transposed = true;
      EXPECT_EQ(n.attrs.num_consts, 7);
    }
  }
  EXPECT_TRUE(transposed);
  // A call without a transpose has no derivative: ValueError, as for qb.pure_callback.
  Graph h;
  Builder hb(h);
  const ValueId z = hb.param(vt(DType::f64, {2}));
  hb.set_results({hb.emit1(Op::HostCall, {z}, call_attrs(9, {2}))});
  EXPECT_THROW(jvp(h, wrt), ValueError);
}

}  // namespace
}  // namespace qb
