// The linear_solve node (qb.custom_linear_solve): its type rule, that running it runs the
// solve region, and the structure and values of its JVP and transpose (both are more
// linear_solve nodes; the solve region is never differentiated).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "quabla/backends/cpu/executable.h"
#include "quabla/ir/errors.h"
#include "quabla/ir/regions.h"
#include "quabla/transforms/jvp.h"
#include "quabla/transforms/vjp.h"
#include "test_util.h"

namespace qb {
namespace {

using test::make_buffer;
using test::read_buffer;
using test::vt;
using V = ValueId;

using test::shared;

// The operator x -> a * x (elementwise, so symmetric) with a the node's second operand.
// solve divides; the "solve" region counts as opaque to transforms, so it may be anything
// that inverts the operator: here an elementwise division.
Regions scale_regions(DType d = DType::f64) {
  const std::vector<ValueType> ps{vt(d, {3}), vt(d, {3})};
  auto solve = shared(make_graph(ps, [](Builder& b, std::span<const V> p) {
    return std::vector<V>{b.emit1(Op::Div, {p[0], p[1]})};
  }));
  auto matvec = shared(make_graph(ps, [](Builder& b, std::span<const V> p) {
    return std::vector<V>{b.emit1(Op::Mul, {p[1], p[0]})};
  }));
  return Regions{solve, solve, matvec, matvec};
}

Attrs vec_count(std::int64_t nb, std::int64_t mode = 0) {
  Attrs a;
  a.num_consts = nb;
  a.mode = mode;
  return a;
}

Graph solve_graph(std::int64_t mode = 0) {
  return make_graph({vt(DType::f64, {3}), vt(DType::f64, {3})}, [mode](Builder& b, std::span<const V> p) {
    std::vector<V> in{p[0], p[1]};
    return b.emit(Op::LinearSolve, in, vec_count(1, mode), scale_regions());
  });
}

std::vector<double> run(const Graph& g, const std::vector<std::vector<double>>& args) {
  cpu::Executable exe(std::make_shared<const Graph>(g));
  std::vector<BufferPtr> in;
  for (const auto& a : args) in.push_back(make_buffer<double>(a));
  auto out = exe.run(in);
  std::vector<double> flat;
  for (const auto& o : out) {
    auto v = read_buffer<double>(o, 3);
    flat.insert(flat.end(), v.begin(), v.end());
  }
  return flat;
}

int count(const Graph& g, Op op) {
  int k = 0;
  for (const auto& n : g.nodes) k += n.op == op;
  return k;
}

TEST(LinearSolveInfer, OutputsHaveTheRightHandSidesTypes) {
  auto out = infer_types(Op::LinearSolve, std::vector<ValueType>{vt(DType::f64, {3}), vt(DType::f64, {3})}, vec_count(1),
                         scale_regions());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0], vt(DType::f64, {3}));
}

TEST(LinearSolveInfer, RejectsMissingRegionsIntegerVectorsAndMismatchedResults) {
  const std::vector<ValueType> f64s{vt(DType::f64, {3}), vt(DType::f64, {3})};
  auto regions = scale_regions();
  regions.pop_back();
  EXPECT_THROW(infer_types(Op::LinearSolve, f64s, vec_count(1), regions), ValueError);
  EXPECT_THROW(infer_types(Op::LinearSolve, f64s, vec_count(0), scale_regions()), ValueError);
  try {
    infer_types(Op::LinearSolve, std::vector<ValueType>{vt(DType::i32, {3}), vt(DType::i32, {3})}, vec_count(1),
                scale_regions(DType::i32));
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("must be floating point"), std::string::npos) << e.what();
  }
  auto narrow = scale_regions();
  narrow[2] = shared(make_graph(f64s, [](Builder& b, std::span<const V> p) {
    Attrs a;
    a.starts = {0};
    a.limits = {2};
    a.strides = {1};
    return std::vector<V>{b.emit1(Op::Slice, {p[0]}, a)};
  }));
  try {
    infer_types(Op::LinearSolve, f64s, vec_count(1), narrow);
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("matvec result 0"), std::string::npos) << e.what();
  }
}

TEST(LinearSolveExecute, RunsTheSolveRegion) {
  auto x = run(solve_graph(), {{2.0, 6.0, -3.0}, {2.0, 3.0, 4.0}});
  EXPECT_EQ(x, (std::vector<double>{1.0, 2.0, -0.75}));
}

TEST(LinearSolveTransforms, JvpIsOneMoreSolveOfTheTangentResidual) {
  // x = b / a, so dx = (db - da * x) / a.
  const bool wrt[] = {true, true};
  Graph j = jvp(solve_graph(), wrt);
  EXPECT_EQ(count(j, Op::LinearSolve), 2);
  const std::vector<double> b{2.0, 6.0, -3.0}, a{2.0, 3.0, 4.0}, db{1.0, 0.0, 2.0}, da{0.5, 1.0, -1.0};
  auto r = run(j, {b, a, db, da});
  for (int i = 0; i < 3; ++i) {
    const double x = b[i] / a[i];
    EXPECT_DOUBLE_EQ(r[i], x);
    EXPECT_NEAR(r[3 + i], (db[i] - da[i] * x) / a[i], 1e-15);
  }
}

TEST(LinearSolveTransforms, ReverseModeSolvesWithTheTransposedPairAndNeedsIt) {
  const bool wrt[] = {true, false};
  Graph v = vjp(solve_graph(), wrt);
  EXPECT_EQ(count(v, Op::LinearSolve), 2);  // the primal solve and the transposed one
  auto r = run(v, {{2.0, 6.0, -3.0}, {2.0, 3.0, 4.0}, {1.0, 1.0, 2.0}});
  EXPECT_NEAR(r[3], 0.5, 1e-15);
  EXPECT_NEAR(r[4], 1.0 / 3.0, 1e-15);
  EXPECT_NEAR(r[5], 0.5, 1e-15);
  try {
    vjp(solve_graph(/*mode=*/1), wrt);
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("needs transpose_solve"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace qb
