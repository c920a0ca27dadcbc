// The host_call op (ops.def, runtime/host_call.h) below the Python layer: the CPU executor
// hands the handler the operands and their types, the simplifier neither folds nor merges
// calls, a linear call is its own JVP and transposes to its transpose's id, and running one
// without a handler raises. A call the handler only starts is finished where its result is
// first read, and calls start right after their operands are ready (effects in program order).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "quabla/backends/cpu/executable.h"
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
  set_host_call_handler([&h](const HostCallArgs& a) {
    h(a);
    return HostCallFinish{};
  });
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


// A handler that starts calls with even ids (finishing them later: an event "finish <id>")
// and runs odd ones at once ("run <id>"); both write id * the first operand (f64 results).
struct Deferring {
  std::vector<std::string> events;
  HostCallFinish operator()(const HostCallArgs& a) {
    const auto n = static_cast<std::size_t>(num_elements(a.out_type->shape));
    std::vector<double> x(reinterpret_cast<const double*>(a.ins[0]), reinterpret_cast<const double*>(a.ins[0]) + n);
    const bool effect = a.out_type->dtype != DType::f64;  // a placeholder result: nothing to write
    auto write = [this, id = a.callback, x, effect, out = reinterpret_cast<double*>(a.out)](const char* what) {
      for (std::size_t e = 0; !effect && e < x.size(); ++e) out[e] = static_cast<double>(id) * x[e];
      events.push_back(std::string(what) + " " + std::to_string(id));
    };
    if (a.callback % 2 != 0) {
      write("run");
      return {};
    }
    events.push_back("start " + std::to_string(a.callback));
    return [write] { write("finish"); };
  }
};

TEST_F(HostCall, AStartedCallIsFinishedWhereItsResultIsFirstRead) {
  Deferring h;
  set_host_call_handler([&h](const HostCallArgs& a) { return h(a); });
  Program p;
  ValueId x = p.b.param(vt(DType::f64, {2}));
  ValueId y = p.b.param(vt(DType::f64, {2}));
  ValueId a = p.b.emit1(Op::HostCall, {x}, call_attrs(2, {2}));  // started
  ValueId c = p.b.emit1(Op::HostCall, {p.b.emit1(Op::Exp, {y})}, call_attrs(3, {2}));  // runs meanwhile
  ValueId r = p.b.emit1(Op::Add, {a, c});
  ValueId z = p.b.emit1(Op::HostCall, {y}, call_attrs(4, {2}));  // a result nothing reads: finished at the end
  auto out = p.run({r, z}, {make_buffer<double>({1, 2}), make_buffer<double>({0, 1})});
  // Call 4 reads a parameter: it starts at once; nothing reads it, so the run's end waits for it.
  EXPECT_EQ(h.events, (std::vector<std::string>{"start 2", "start 4", "run 3", "finish 2", "finish 4"}));
  const auto r0 = read_buffer<double>(out[0], 2);
  EXPECT_EQ(r0[0], 2 + 3);
  EXPECT_NEAR(r0[1], 4 + 3 * std::exp(1.0), 1e-14);
  EXPECT_EQ(read_buffer<double>(out[1], 2), (std::vector<double>{0, 4}));
}

TEST_F(HostCall, AFailingStepLeavesStartedCallsUnfinished) {
  Deferring h;
  set_host_call_handler([&h](const HostCallArgs& a) -> HostCallFinish {
    if (a.callback == 5) throw ValueError("callback 5 failed");
    return h(a);
  });
  Program p;
  ValueId x = p.b.param(vt(DType::f64, {2}));
  ValueId a = p.b.emit1(Op::HostCall, {x}, call_attrs(2, {2}));
  ValueId b = p.b.emit1(Op::HostCall, {x}, call_attrs(5, {2}));
  EXPECT_THROW(p.run({p.b.emit1(Op::Add, {a, b})}, {make_buffer<double>({1, 2})}), ValueError);
  EXPECT_EQ(h.events, (std::vector<std::string>{"start 2"}));  // never finished into freed buffers
}

// Where the plan puts each host call: its line's position in plan_text.
std::size_t line_of(const std::string& plan, const std::string& needle) {
  const auto at = plan.find(needle);
  EXPECT_NE(at, std::string::npos) << needle << " not in\n" << plan;
  return at;
}

TEST_F(HostCall, CallsStartRightAfterTheirOperandsEffectsInProgramOrder) {
  // A gradient-like program: w is ready early, the long chain on v comes later; the calls
  // were recorded at the end (as an all-reduce of the gradients is).
  Program p;
  ValueId v = p.b.param(vt(DType::f64, {64, 64}));
  ValueId w = p.b.param(vt(DType::f64, {64, 64}));
  ValueId gw = p.b.emit1(Op::MatMul, {w, w});
  ValueId gv = p.b.emit1(Op::MatMul, {v, v});
  ValueId t = p.b.emit1(Op::Tanh, {gv});
  ValueId gv2 = p.b.emit1(Op::MatMul, {t, v});
  ValueId cv = p.b.emit1(Op::HostCall, {gv2}, call_attrs(4, {64, 64}));
  ValueId cw = p.b.emit1(Op::HostCall, {gw}, call_attrs(2, {64, 64}));  // recorded later, ready sooner
  ValueId cp = p.b.emit1(Op::HostCall, {w}, call_attrs(6, {64, 64}));   // ready at once
  Attrs effect = call_attrs(7, {});
  effect.dtype = DType::bool_;
  effect.num_carry = kHostCallEffect;
  p.b.emit1(Op::HostCall, {gv2}, effect);  // a print of gv2, then one of w: kept in that order
  effect.mode = 9;
  p.b.emit1(Op::HostCall, {w}, effect);
  p.b.set_results({p.b.emit1(Op::Add, {cw, cv}), cp});
  verify(*p.graph);
  const cpu::Executable exe(p.graph);
  EXPECT_TRUE(exe.has_host_calls());
  const std::string plan = exe.plan_text();
  const auto call_v = line_of(plan, "callback=4"), call_w = line_of(plan, "callback=2");
  const auto call_p = line_of(plan, "callback=6"), print_v = line_of(plan, "callback=7"), print_w = line_of(plan, "callback=9");
  const auto first_matmul = line_of(plan, "%" + std::to_string(gw) + " = matmul");
  const auto second_matmul = line_of(plan, "%" + std::to_string(gv) + " = matmul");
  const auto tanh = line_of(plan, "tanh");
  EXPECT_LT(call_p, first_matmul);
  EXPECT_LT(call_w, second_matmul);  // overlaps with the rest of the chain
  EXPECT_LT(tanh, call_v);
  EXPECT_LT(call_v, print_v);
  EXPECT_LT(print_v, print_w);
  Deferring h;
  set_host_call_handler([&h](const HostCallArgs& a) { return h(a); });
  std::vector<double> ones(64 * 64, 0.01);
  auto out = exe.run(std::vector<BufferPtr>{make_buffer<double>(ones), make_buffer<double>(ones)});
  EXPECT_EQ(h.events, (std::vector<std::string>{"start 6", "start 2", "start 4", "run 7", "run 9", "finish 2", "finish 4",
                                                "finish 6"}));
  EXPECT_NEAR(read_buffer<double>(out[1], 1)[0], 0.06, 1e-15);
}

}  // namespace
}  // namespace qb
