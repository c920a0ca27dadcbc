// The named_axis op (ops.def) below the Python layer: the vmap of its axis id computes it
// over the batch (sum, gather, index), a vmap of another id leaves it for an outer one, its
// JVP and transpose are collectives again, and one left unbound raises when it runs.
#include <gtest/gtest.h>

#include <vector>

#include "quabla/backends/cpu/executable.h"
#include "quabla/ir/errors.h"
#include "quabla/transforms/jvp.h"
#include "quabla/transforms/vjp.h"
#include "quabla/transforms/vmap.h"
#include "test_util.h"

namespace qb {
namespace {

using test::make_buffer;
using test::read_buffer;
using test::vt;

Attrs named(std::int64_t kind, std::int64_t id, std::int64_t size) {
  Attrs a;
  a.mode = kind;
  a.num_consts = id;
  a.length = size;
  return a;
}

// f(x) = psum(x) * axis_index + all_gather(x)[last], per example x: f64[2], axis 7 of 3.
Graph example() {
  Graph g;
  Builder b(g);
  const ValueId x = b.param(vt(DType::f64, {2}));
  const ValueId s = b.emit1(Op::NamedAxis, {x}, named(kAxisSum, 7, 3));
  Attrs conv;
  conv.dtype = DType::f64;
  const ValueId i = b.emit1(Op::Convert, {b.emit1(Op::NamedAxis, {}, named(kAxisIndex, 7, 3))}, conv);
  Attrs bc;
  bc.shape = {2};
  const ValueId ib = b.emit1(Op::BroadcastInDim, {i}, bc);
  const ValueId gathered = b.emit1(Op::NamedAxis, {x}, named(kAxisGather, 7, 3));  // f64[3, 2]
  Attrs last;
  last.starts = {2, 0};
  last.limits = {3, 2};
  last.strides = {1, 1};
  Attrs flat;
  flat.shape = {2};
  const ValueId tail = b.emit1(Op::Reshape, {b.emit1(Op::Slice, {gathered}, last)}, flat);
  b.set_results({b.emit1(Op::Add, {b.emit1(Op::Mul, {s, ib}), tail})});
  verify(g);
  return g;
}

std::vector<double> run(const Graph& g, std::vector<double> x) {
  cpu::Executable exe(std::make_shared<const Graph>(g));
  auto out = exe.run(std::vector<BufferPtr>{make_buffer<double>(x)});
  return read_buffer<double>(out[0], static_cast<std::size_t>(num_elements(g.type(g.results[0]).shape)));
}

TEST(NamedAxis, VmapOfItsAxisComputesItOverTheBatch) {
  const Graph g = example();
  const std::int64_t axes[] = {0};
  const Graph v = vmap(g, axes, 3, 7);
  for (const Node& n : v.nodes) EXPECT_NE(n.op, Op::NamedAxis);
  // x = [[1, 2], [3, 4], [5, 6]]: psum = [9, 12]; example i: [9, 12] * i + [5, 6]
  EXPECT_EQ(run(v, {1, 2, 3, 4, 5, 6}), (std::vector<double>{5, 6, 14, 18, 23, 30}));
}

TEST(NamedAxis, AnotherAxisIsLeftForAnOuterVmapAndUnboundRaises) {
  const Graph g = example();
  const std::int64_t axes[] = {0};
  const Graph inner = vmap(g, axes, 4, 8);  // another name: still collectives, now batched
  int left = 0;
  for (const Node& n : inner.nodes) left += n.op == Op::NamedAxis;
  EXPECT_EQ(left, 3);
  EXPECT_THROW(run(inner, std::vector<double>(8, 1.0)), ValueError);
  const std::int64_t outer_axes[] = {1};  // [4, 3, 2] with the axis-7 examples on axis 1
  const Graph both = vmap(inner, outer_axes, 3, 7);
  for (const Node& n : both.nodes) EXPECT_NE(n.op, Op::NamedAxis);
}

TEST(NamedAxis, DerivativesAreCollectives) {
  Graph g;
  Builder b(g);
  const ValueId x = b.param(vt(DType::f64, {2}));
  b.set_results({b.emit1(Op::NamedAxis, {b.emit1(Op::Mul, {x, x})}, named(kAxisSum, 3, 2))});
  const bool wrt[] = {true};
  for (const Graph& d : {jvp(g, wrt), vjp(g, wrt)}) {
    int sums = 0;
    for (const Node& n : d.nodes) sums += n.op == Op::NamedAxis && n.attrs.mode == kAxisSum;
    EXPECT_EQ(sums, 2);  // the primal's and the tangent's (or the cotangent's) psum
  }
  // vjp then vmap: each example's gradient is 2 x_i times the psum of the cotangents (2).
  const Graph v = vjp(g, wrt);
  std::vector<std::int64_t> axes(v.params.size(), -1);
  axes[0] = 0;
  const Graph bv = vmap(v, axes, 2, 3);
  cpu::Executable exe(std::make_shared<const Graph>(bv));
  std::vector<BufferPtr> args{make_buffer<double>({1, 2, 3, 4})};
  for (std::size_t k = 1; k < bv.params.size(); ++k) args.push_back(make_buffer<double>({1, 1}));
  auto out = exe.run(args);
  EXPECT_EQ(read_buffer<double>(out.back(), 4), (std::vector<double>{4, 8, 12, 16}));
}

}  // namespace
}  // namespace qb
