// The collapsed second-order Taylor transform (transforms/taylor.h): its signature, its
// values against closed forms, symbolic zeros (a linear program has no second-order work),
// weights, and that the transformed graph is itself differentiable.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "quabla/backends/cpu/executable.h"
#include "quabla/ir/regions.h"
#include "quabla/transforms/jvp.h"
#include "quabla/transforms/taylor.h"
#include "test_util.h"

namespace qb {
namespace {

using test::make_buffer;
using test::read_buffer;
using test::vt;
using V = ValueId;

// f(x) = sum(sin(x) * x) over x of f64[3].
Graph sin_times_x() {
  return make_graph({vt(DType::f64, {3})}, [](Builder& b, std::span<const V> p) {
    V y = b.emit1(Op::Mul, {b.emit1(Op::Sin, {p[0]}), p[0]});
    Attrs a;
    a.dims = {0};
    return std::vector<V>{b.emit1(Op::ReduceSum, {y}, a)};
  });
}

std::vector<std::vector<double>> run(const Graph& g, const std::vector<std::vector<double>>& args,
                                     const std::vector<std::int64_t>& sizes) {
  cpu::Executable exe(std::make_shared<const Graph>(g));
  std::vector<BufferPtr> in;
  for (const auto& a : args) in.push_back(make_buffer<double>(a));
  auto out = exe.run(in);
  std::vector<std::vector<double>> r;
  for (std::size_t i = 0; i < out.size(); ++i) r.push_back(read_buffer<double>(out[i], sizes[i]));
  return r;
}

TEST(Taylor2, SignatureAddsDirectionsWeightsAndCoefficients) {
  const bool wrt[] = {true};
  Graph t = taylor2(sin_times_x(), wrt, 2, true);
  ASSERT_EQ(t.params.size(), 3u);
  EXPECT_EQ(t.type(t.params[1]), vt(DType::f64, {2, 3}));
  EXPECT_EQ(t.type(t.params[2]), vt(DType::f64, {2}));
  ASSERT_EQ(t.results.size(), 3u);
  EXPECT_EQ(t.type(t.results[0]), vt(DType::f64, {}));
  EXPECT_EQ(t.type(t.results[1]), vt(DType::f64, {2}));
  EXPECT_EQ(t.type(t.results[2]), vt(DType::f64, {}));
}

TEST(Taylor2, ValuesMatchClosedForms) {
  // f = sum(x_i sin x_i): df/dx_i = sin x_i + x_i cos x_i, d2f/dx_i2 = 2 cos x_i - x_i sin x_i.
  const bool wrt[] = {true};
  Graph t = taylor2(sin_times_x(), wrt, 2, true);
  const std::vector<double> x{0.3, -0.8, 1.1};
  const std::vector<double> dirs{1.0, 0.0, 2.0, /**/ 0.5, -1.0, 0.0};
  const std::vector<double> w{1.5, -0.25};
  auto r = run(t, {x, dirs, w}, {1, 2, 1});
  double f = 0;
  std::vector<double> g(3), h(3);
  for (int i = 0; i < 3; ++i) {
    f += x[i] * std::sin(x[i]);
    g[i] = std::sin(x[i]) + x[i] * std::cos(x[i]);
    h[i] = 2 * std::cos(x[i]) - x[i] * std::sin(x[i]);
  }
  EXPECT_NEAR(r[0][0], f, 1e-15);
  double second = 0;
  for (int k = 0; k < 2; ++k) {
    double first = 0, curv = 0;
    for (int i = 0; i < 3; ++i) {
      first += g[i] * dirs[3 * k + i];
      curv += h[i] * dirs[3 * k + i] * dirs[3 * k + i];
    }
    EXPECT_NEAR(r[1][k], first, 1e-14);
    second += w[k] * curv;
  }
  EXPECT_NEAR(r[2][0], second, 1e-14);
}

TEST(Taylor2, LinearProgramsHaveNoSecondOrderWork) {
  // f(x) = reshape(x) * 3 + x: the second-order coefficient is a materialised zero and no
  // node computes anything second-order.
  Graph lin = make_graph({vt(DType::f64, {4})}, [](Builder& b, std::span<const V> p) {
    Attrs c;
    c.shape = {4};
    V three = b.emit1(Op::BroadcastInDim, {b.constant(std::make_shared<const Literal>(Literal{
                                              vt(DType::f64, {}), make_buffer<double>({3.0})}))},
                      c);
    return std::vector<V>{b.emit1(Op::Add, {b.emit1(Op::Mul, {p[0], three}), p[0]})};
  });
  const bool wrt[] = {true};
  Graph t = taylor2(lin, wrt, 3, false);
  auto r = run(t, {{1, 2, 3, 4}, std::vector<double>(12, 1.0)}, {4, 12, 4});
  for (double v : r[2]) EXPECT_EQ(v, 0.0);
  for (double v : r[1]) EXPECT_EQ(v, 4.0);
  int reductions = 0;
  for (const auto& n : t.nodes) reductions += n.op == Op::ReduceSum;
  EXPECT_EQ(reductions, 0);
}

TEST(Taylor2, ParametersOutsideWrtCarryNoDirections) {
  Graph g = make_graph({vt(DType::f64, {3}), vt(DType::f64, {3})}, [](Builder& b, std::span<const V> p) {
    return std::vector<V>{b.emit1(Op::Mul, {b.emit1(Op::Exp, {p[0]}), p[1]})};
  });
  const bool wrt[] = {true, false};
  Graph t = taylor2(g, wrt, 1, false);
  ASSERT_EQ(t.params.size(), 3u);
  auto r = run(t, {{0.1, 0.2, 0.3}, {2, 3, 4}, {1, 1, 1}}, {3, 3, 3});
  const double x[] = {0.1, 0.2, 0.3}, a[] = {2, 3, 4};
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(r[2][i], a[i] * std::exp(x[i]), 1e-14);
}

TEST(Taylor2, TheTransformedGraphIsDifferentiable) {
  // d/dx of the collapsed coefficient sum_i (2 cos x_i - x_i sin x_i) along e_i.
  const bool wrt[] = {true};
  Graph t = taylor2(sin_times_x(), wrt, 3, false);
  const bool dwrt[] = {true, false};
  Graph d = jvp(t, dwrt);
  const std::vector<double> x{0.3, -0.8, 1.1};
  std::vector<double> eye(9, 0.0);
  for (int i = 0; i < 3; ++i) eye[4 * i] = 1.0;
  auto r = run(d, {x, eye, {1.0, 0.0, 0.0}}, {1, 3, 1, 1, 3, 1});
  EXPECT_NEAR(r[5][0], -3 * std::sin(x[0]) - x[0] * std::cos(x[0]), 1e-14);
}

}  // namespace
}  // namespace qb
