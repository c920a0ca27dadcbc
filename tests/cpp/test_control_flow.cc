// Region ops (cond, scan, while): type inference and its errors, CPU execution, and the
// structure of their transforms (the reverse pass of a long scan keeps O(sqrt T) carries).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "quabla/ir/errors.h"
#include "quabla/ir/regions.h"
#include "quabla/transforms/jvp.h"
#include "quabla/transforms/simplify.h"
#include "quabla/transforms/vjp.h"
#include "quabla/transforms/vmap.h"
#include "test_util.h"

namespace qb {
namespace {

using test::make_bool_buffer;
using test::make_buffer;
using test::Program;
using test::read_buffer;
using test::vt;
using V = ValueId;

using test::shared;

// body(i, c: f64[n], x: f64[n]) -> (c * x + i, c)
std::shared_ptr<const Graph> mul_add_index_body(std::int64_t n) {
  return shared(make_graph({scan_index_type(), vt(DType::f64, {n}), vt(DType::f64, {n})}, [n](Builder& b, std::span<const V> p) {
    Attrs bc;
    bc.shape = {n};
    V i = b.emit1(Op::BroadcastInDim, {p[0]}, bc);
    V next = b.emit1(Op::Add, {b.emit1(Op::Mul, {p[1], p[2]}), i});
    return std::vector<V>{next, p[1]};
  }));
}

Attrs scan_attrs(std::int64_t length, std::int64_t consts, std::int64_t carry, bool reverse = false, std::int64_t start = 0) {
  Attrs a;
  a.length = length;
  a.num_consts = consts;
  a.num_carry = carry;
  a.reverse = reverse;
  a.start = start;
  return a;
}

TEST(ControlFlowInfer, ScanOutputsAreCarryThenStackedYs) {
  auto out = infer_types(Op::Scan, std::vector<ValueType>{vt(DType::f64, {2}), vt(DType::f64, {5, 2})}, scan_attrs(5, 0, 1),
                         Regions{mul_add_index_body(2)});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0], vt(DType::f64, {2}));
  EXPECT_EQ(out[1], vt(DType::f64, {5, 2}));
}

TEST(ControlFlowInfer, ScanRejectsWrongLengthsAndCarryChanges) {
  EXPECT_THROW(infer_types(Op::Scan, std::vector<ValueType>{vt(DType::f64, {2}), vt(DType::f64, {4, 2})}, scan_attrs(5, 0, 1),
                           Regions{mul_add_index_body(2)}),
               ValueError);
  auto shrink = shared(make_graph({scan_index_type(), vt(DType::f64, {2})}, [](Builder& b, std::span<const V> p) {
    Attrs a;
    a.starts = {0};
    a.limits = {1};
    a.strides = {1};
    return std::vector<V>{b.emit1(Op::Slice, {p[1]}, a)};
  }));
  try {
    infer_types(Op::Scan, std::vector<ValueType>{vt(DType::f64, {2})}, scan_attrs(3, 0, 1), Regions{shrink});
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("carry 0 from f64[2] into f64[1]"), std::string::npos) << e.what();
  }
}

TEST(ControlFlowInfer, CondNeedsABoolScalarAndAgreeingBranches) {
  auto ident = shared(make_graph({vt(DType::f64, {2})}, [](Builder&, std::span<const V> p) { return std::vector<V>{p[0]}; }));
  auto sum = shared(make_graph({vt(DType::f64, {2})}, [](Builder& b, std::span<const V> p) {
    Attrs a;
    a.dims = {0};
    return std::vector<V>{b.emit1(Op::ReduceSum, {p[0]}, a)};
  }));
  const std::vector<ValueType> ok{vt(DType::bool_, {}), vt(DType::f64, {2})};
  EXPECT_EQ(infer_types(Op::Cond, ok, {}, Regions{ident, ident}).at(0), vt(DType::f64, {2}));
  EXPECT_THROW(infer_types(Op::Cond, ok, {}, Regions{ident, sum}), ValueError);
  EXPECT_THROW(infer_types(Op::Cond, std::vector<ValueType>{vt(DType::bool_, {2}), vt(DType::f64, {2})}, {}, Regions{ident, ident}),
               ValueError);
  EXPECT_THROW(infer_types(Op::Cond, std::vector<ValueType>{vt(DType::f64, {}), vt(DType::f64, {2})}, {}, Regions{ident, ident}),
               ValueError);
}

TEST(ControlFlowExecute, ScanRunsForwardAndBackwardWithIndices) {
  for (bool reverse : {false, true}) {
    Program p;
    V c0 = p.b.param(vt(DType::f64, {2}));
    V xs = p.b.param(vt(DType::f64, {3, 2}));
    std::vector<V> in{c0, xs};
    auto outs = p.b.emit(Op::Scan, in, scan_attrs(3, 0, 1, reverse, 10), Regions{mul_add_index_body(2)});
    auto r = p.run(outs, {make_buffer<double>({1, 2}), make_buffer<double>({2, 3, 4, 5, 6, 7})});
    // Reference: the same loop in C++.
    std::vector<double> c{1, 2};
    std::vector<double> ys(6);
    const std::vector<double> x{2, 3, 4, 5, 6, 7};
    for (int s = 0; s < 3; ++s) {
      const int t = reverse ? 2 - s : s;
      for (int k = 0; k < 2; ++k) {
        ys[t * 2 + k] = c[k];
        c[k] = c[k] * x[t * 2 + k] + (10 + t);
      }
    }
    EXPECT_EQ(read_buffer<double>(r[0], 2), c) << reverse;
    EXPECT_EQ(read_buffer<double>(r[1], 6), ys) << reverse;
  }
}

TEST(ControlFlowExecute, WhileRunsUntilCondFails) {
  Program p;
  V x = p.b.param(vt(DType::f64, {}));
  auto cond = shared(make_graph({vt(DType::f64, {})}, [](Builder& b, std::span<const V> ps) {
    auto lit = std::make_shared<Literal>();
    lit->type = vt(DType::f64, {});
    lit->data = make_buffer<double>({100.0});
    return std::vector<V>{b.emit1(Op::Lt, {ps[0], b.constant(lit)})};
  }));
  auto body = shared(make_graph({vt(DType::f64, {})}, [](Builder& b, std::span<const V> ps) {
    return std::vector<V>{b.emit1(Op::Add, {ps[0], ps[0]})};
  }));
  std::vector<V> in{x};
  auto outs = p.b.emit(Op::While, in, Attrs{}, Regions{cond, body});
  auto r = p.run(outs, {make_buffer<double>({3.0})});
  EXPECT_EQ(read_buffer<double>(r[0], 1)[0], 192.0);
}

TEST(ControlFlowExecute, CondRunsOnlyTheSelectedBranch) {
  // The false branch divides by zero: its NaN must not appear when true is selected.
  auto f = shared(make_graph({vt(DType::f64, {})}, [](Builder& b, std::span<const V> ps) {
    return std::vector<V>{b.emit1(Op::Log, {b.emit1(Op::Neg, {ps[0]})})};
  }));
  auto t = shared(make_graph({vt(DType::f64, {})}, [](Builder& b, std::span<const V> ps) {
    return std::vector<V>{b.emit1(Op::Sqrt, {ps[0]})};
  }));
  for (bool pred : {true, false}) {
    Program p;
    V q = p.b.param(vt(DType::bool_, {}));
    V x = p.b.param(vt(DType::f64, {}));
    std::vector<V> in{q, x};
    auto outs = p.b.emit(Op::Cond, in, Attrs{}, Regions{f, t});
    auto r = p.run(outs, {make_bool_buffer({pred}), make_buffer<double>({4.0})});
    const double v = read_buffer<double>(r[0], 1)[0];
    if (pred) EXPECT_EQ(v, 2.0);
    else EXPECT_TRUE(std::isnan(v));
  }
}

TEST(ControlFlowStructure, DeadCodeDropsUnusedCondAndCheckpointOutputsAndTheirOperands) {
  // Each branch returns (sin x, cos y); only the first output is used, so the node loses
  // its second output and its operand y, and the branches lose cos.
  auto branch = shared(make_graph({vt(DType::f64, {}), vt(DType::f64, {})}, [](Builder& b, std::span<const V> ps) {
    return std::vector<V>{b.emit1(Op::Sin, {ps[0]}), b.emit1(Op::Cos, {ps[1]})};
  }));
  for (Op op : {Op::Cond, Op::Checkpoint}) {
    Graph g = make_graph({vt(DType::bool_, {}), vt(DType::f64, {}), vt(DType::f64, {})},
                         [&](Builder& b, std::span<const V> ps) {
                           std::vector<V> in;
                           if (op == Op::Cond) in.push_back(ps[0]);
                           in.push_back(ps[1]);
                           in.push_back(ps[2]);
                           Regions rs{branch};
                           if (op == Op::Cond) rs.push_back(branch);
                           return std::vector<V>{b.emit(op, in, Attrs{}, rs)[0]};
                         });
    const Graph d = eliminate_dead_code(g);
    verify(d);
    ASSERT_EQ(d.params.size(), 3u);  // the program's own parameters stay
    const Node* node = nullptr;
    for (const Node& n : d.nodes)
      if (n.op == op) node = &n;
    ASSERT_NE(node, nullptr);
    EXPECT_EQ(node->outputs.size(), 1u);
    EXPECT_EQ(node->inputs.size(), op == Op::Cond ? 2u : 1u);
    for (const auto& r : node->regions) {
      EXPECT_EQ(r->params.size(), 1u);
      EXPECT_EQ(r->results.size(), 1u);
      EXPECT_EQ(print(*r).find("cos"), std::string::npos);
    }
  }
}

TEST(ControlFlowExecute, SmallPlanMatchesTheBufferPlanBitwise) {
  // Every kind of step a loop body uses: slices, reshapes, a virtual scalar broadcast,
  // transposes, concat, reductions, fusable elementwise chains, a matmul.
  auto g = std::make_shared<Graph>();
  Builder b(*g);
  V x = b.param(vt(DType::f64, {3, 4}));
  V s = b.param(vt(DType::f64, {}));
  Attrs bc;
  bc.shape = {3, 4};
  V sb = b.emit1(Op::BroadcastInDim, {s}, bc);
  V y = b.emit1(Op::Tanh, {b.emit1(Op::Mul, {x, sb})});
  Attrs tr;
  tr.dims = {1, 0};
  V yt = b.emit1(Op::Transpose, {y}, tr);
  V m = b.emit1(Op::MatMul, {x, yt});
  Attrs sl;
  sl.starts = {0, 1};
  sl.limits = {3, 3};
  sl.strides = {1, 1};
  V part = b.emit1(Op::Slice, {m}, sl);
  Attrs cat;
  cat.axis = 1;
  std::vector<V> parts{part, m};
  V c = b.emit(Op::Concat, parts, cat)[0];
  Attrs red;
  red.dims = {1};
  V r = b.emit1(Op::ReduceSum, {b.emit1(Op::Exp, {b.emit1(Op::Sin, {c})})}, red);
  Attrs rs;
  rs.shape = {3, 1};
  b.set_results({b.emit1(Op::Reshape, {r}, rs), x, c});
  verify(*g);
  cpu::Executable exe(g);
  ASSERT_TRUE(exe.is_small());
  std::vector<double> xv(12);
  for (int i = 0; i < 12; ++i) xv[static_cast<std::size_t>(i)] = 0.1 * i - 0.5;
  auto xb = make_buffer(xv), sb_buf = make_buffer<double>({1.7});
  auto ref = exe.run(std::vector<BufferPtr>{xb, sb_buf});
  auto arena = Buffer::allocate(exe.arena_bytes());
  std::vector<const std::byte*> params{xb->data(), sb_buf->data()};
  exe.run_small(params, arena->data());
  const std::int64_t sizes[] = {3, 12, 15};
  for (std::size_t j = 0; j < 3; ++j) {
    EXPECT_EQ(std::memcmp(exe.result_data(j, params, arena->data()), ref[j]->data(), static_cast<std::size_t>(sizes[j]) * 8), 0)
        << "result " << j;
  }
  EXPECT_EQ(exe.result_data(1, params, arena->data()), xb->data());  // a parameter result is not copied
}

// The largest value (elements) anywhere in g, regions included.
std::int64_t largest_value(const Graph& g) {
  std::int64_t m = 0;
  for (const auto& t : g.values) m = std::max(m, num_elements(t.shape));
  for (const auto& n : g.nodes)
    for (const auto& r : n.regions) m = std::max(m, largest_value(*r));
  return m;
}

TEST(ControlFlowTransforms, ReverseModeOfALongScanKeepsSqrtTCarries) {
  // c -> c * w (w a const), 400 steps over a carry of 100: a full tape is 40,000 elements.
  const std::int64_t T = 400, n = 100;
  Graph g = make_graph({vt(DType::f64, {n}), vt(DType::f64, {n})}, [&](Builder& b, std::span<const V> ps) {
    auto body = shared(make_graph({scan_index_type(), vt(DType::f64, {n}), vt(DType::f64, {n})},
                                  [](Builder& bb, std::span<const V> q) {
                                    return std::vector<V>{bb.emit1(Op::Sin, {bb.emit1(Op::Mul, {q[2], q[1]})})};
                                  }));
    std::vector<V> in{ps[0], ps[1]};
    return b.emit(Op::Scan, in, scan_attrs(T, 1, 1), Regions{body});
  });
  const bool wrt[] = {true, true}, seed[] = {true};
  // The 320 KB tape would fit the default tape budget: force checkpoints.
  ::setenv("QUABLA_SCAN_TAPE_BYTES", "0", 1);
  Graph r = vjp(g, wrt, seed);
  ::unsetenv("QUABLA_SCAN_TAPE_BYTES");
  verify(r);
  ASSERT_EQ(r.params.size(), 3u) << print(r);
  EXPECT_LE(largest_value(r), 21 * n);  // sqrt(400) = 20 checkpoints or block carries, never 400
  // and it runs: d/dc0 of sum(c_T) against central differences
  cpu::Executable exe(std::make_shared<const Graph>(r));
  std::vector<double> w(n, 0.9), c0(n, 0.5), ones(n, 1.0);
  auto out = exe.run(std::vector<BufferPtr>{make_buffer(w), make_buffer(c0), make_buffer(ones)});
  const double grad0 = read_buffer<double>(out[2], n)[0];
  auto run_fwd = [&](double c) {
    double x = c;
    for (int t = 0; t < T; ++t) x = std::sin(x * 0.9);
    return x;
  };
  EXPECT_NEAR(grad0, (run_fwd(0.5 + 1e-6) - run_fwd(0.5 - 1e-6)) / 2e-6, 1e-6);
}

TEST(ControlFlowTransforms, JvpAndVmapOfScanAreScans) {
  Graph g = make_graph({vt(DType::f64, {2}), vt(DType::f64, {3, 2})}, [](Builder& b, std::span<const V> ps) {
    std::vector<V> in{ps[0], ps[1]};
    return b.emit(Op::Scan, in, scan_attrs(3, 0, 1), Regions{mul_add_index_body(2)});
  });
  const bool wrt[] = {true, false};
  Graph j = jvp(g, wrt);
  int scans = 0;
  for (const auto& n : j.nodes) scans += n.op == Op::Scan;
  EXPECT_EQ(scans, 1);
  const std::int64_t axes[] = {0, -1};
  Graph v = vmap(g, axes, 4);
  verify(v);
  EXPECT_EQ(v.type(v.results[1]).shape, (Shape{4, 3, 2}));
}

const Node* find_scan(const Graph& g) {
  for (const auto& n : g.nodes)
    if (n.op == Op::Scan) return &n;
  return nullptr;
}

TEST(ControlFlowTransforms, VmapRecordsTheLoopPerExampleAndOnlySimplifyKeepsTheRecord) {
  Graph g = make_graph({vt(DType::f64, {2}), vt(DType::f64, {3, 2})}, [](Builder& b, std::span<const V> ps) {
    std::vector<V> in{ps[0], ps[1]};
    return b.emit(Op::Scan, in, scan_attrs(3, 0, 1), Regions{mul_add_index_body(2)});
  });
  const std::int64_t axes[] = {0, -1};  // the carry batched, the xs shared
  Graph v = vmap(g, axes, 4);
  const Node* scan = find_scan(v);
  ASSERT_NE(scan, nullptr);
  const ExampleLoop* r = example_loop_of(*scan);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->batch, 4);
  EXPECT_EQ(r->example[0], find_scan(g)->regions[0]);  // the body as it was per example
  EXPECT_EQ(r->in_batched, (std::vector<bool>{true, false}));
  EXPECT_EQ(r->out_batched, (std::vector<bool>{true, true}));
  // simplify rebuilds the bodies and maps the record onto them
  Graph s = simplify(v);
  ASSERT_NE(find_scan(s), nullptr);
  const ExampleLoop* kept = example_loop_of(*find_scan(s));
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(kept->batched, find_scan(s)->regions);
  EXPECT_NE(kept->batched, r->batched);
  // a transform that rebuilds the bodies leaves a record that no longer describes them
  const bool wrt[] = {true, false};
  Graph j = jvp(s, wrt);
  ASSERT_NE(find_scan(j), nullptr);
  EXPECT_EQ(example_loop_of(*find_scan(j)), nullptr);
  // and a loop vmap never saw has none
  EXPECT_EQ(example_loop_of(*find_scan(g)), nullptr);
}

}  // namespace
}  // namespace qb
