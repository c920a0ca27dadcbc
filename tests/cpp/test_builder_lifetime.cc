// The api builders append to Graph::values while they work, so they must not keep a
// reference into it (b.type(x).shape) across an emit: a push_back that reallocates leaves
// such a reference dangling. Each test first makes values' capacity equal to its size, so
// the builder's first emit reallocates. The use-after-free these guard against reads freed
// memory, which a plain build may not notice: run them under -DQUABLA_SANITIZE=ON.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "quabla/api/functions.h"
#include "test_util.h"

namespace qb {
namespace {

using api::V;
using test::make_buffer;
using test::Program;
using test::read_buffer;
using test::vt;

void force_realloc_on_next_emit(Program& p) { p.graph->values.shrink_to_fit(); }

TEST(BuilderLifetime, Split) {
  Program p;
  V x = p.b.param(vt(DType::f64, {4, 2}));
  force_realloc_on_next_emit(p);
  auto parts = api::split(p.b, x, {}, 2, 0);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(p.graph->type(parts[1]), vt(DType::f64, {2, 2}));
  auto out = p.run({parts[1]}, {make_buffer<double>({1, 2, 3, 4, 5, 6, 7, 8})});
  EXPECT_EQ(read_buffer<double>(out[0], 4), (std::vector<double>{5, 6, 7, 8}));
}

TEST(BuilderLifetime, TriMask) {
  Program p;
  V x = p.b.param(vt(DType::f32, {2, 2}));
  force_realloc_on_next_emit(p);
  V r = api::tri_mask(p.b, x, 0, false);
  EXPECT_EQ(p.graph->type(r), vt(DType::f32, {2, 2}));
  auto out = p.run({r}, {make_buffer<float>({1, 2, 3, 4})});
  EXPECT_EQ(read_buffer<float>(out[0], 4), (std::vector<float>{1, 2, 0, 4}));
}

TEST(BuilderLifetime, ConcatWithConversion) {
  Program p;
  V x = p.b.param(vt(DType::bool_, {2, 1}));
  V y = p.b.param(vt(DType::f32, {2, 2}));
  V z = p.b.param(vt(DType::f32, {2, 1}));
  force_realloc_on_next_emit(p);
  V r = api::concat(p.b, std::vector<V>{x, y, z}, 1);  // x is converted to f32 first
  EXPECT_EQ(p.graph->type(r), vt(DType::f32, {2, 4}));
  auto out = p.run({r}, {test::make_bool_buffer({true, false}), make_buffer<float>({2, 3, 6, 7}),
                         make_buffer<float>({4, 8})});
  EXPECT_EQ(read_buffer<float>(out[0], 8), (std::vector<float>{1, 2, 3, 4, 0, 6, 7, 8}));
}

TEST(BuilderLifetime, ScalarLikeConstants) {
  // relu, reciprocal, mod, nan_to_num and integer_power(x, 0) all build "a scalar constant
  // broadcast to x's shape".
  Program p;
  V x = p.b.param(vt(DType::f64, {3}));
  V y = p.b.param(vt(DType::f64, {3}));
  force_realloc_on_next_emit(p);
  V relu = api::relu(p.b, x);
  force_realloc_on_next_emit(p);
  V rec = api::reciprocal(p.b, x);
  force_realloc_on_next_emit(p);
  V md = api::mod(p.b, x, y);
  force_realloc_on_next_emit(p);
  V ntn = api::nan_to_num(p.b, x, 0.0, std::nullopt, std::nullopt);
  force_realloc_on_next_emit(p);
  V one = api::integer_power(p.b, x, 0);
  for (V v : {relu, rec, md, ntn, one}) EXPECT_EQ(p.graph->type(v), vt(DType::f64, {3}));
  auto out = p.run({relu, rec, md, ntn, one}, {make_buffer<double>({-2, 4, 0.5}), make_buffer<double>({3, 3, -1})});
  EXPECT_EQ(read_buffer<double>(out[0], 3), (std::vector<double>{0, 4, 0.5}));
  EXPECT_EQ(read_buffer<double>(out[1], 3), (std::vector<double>{-0.5, 0.25, 2}));
  EXPECT_EQ(read_buffer<double>(out[2], 3), (std::vector<double>{1, 1, -0.5}));
  EXPECT_EQ(read_buffer<double>(out[3], 3), (std::vector<double>{-2, 4, 0.5}));
  EXPECT_EQ(read_buffer<double>(out[4], 3), (std::vector<double>{1, 1, 1}));
}

TEST(BuilderLifetime, Reductions) {
  Program p;
  V x = p.b.param(vt(DType::f64, {2, 2}));
  force_realloc_on_next_emit(p);
  V m = api::mean(p.b, x, std::vector<std::int64_t>{1}, false);
  force_realloc_on_next_emit(p);
  V v = api::var(p.b, x, std::vector<std::int64_t>{1}, 0.0, false);
  force_realloc_on_next_emit(p);
  V l = api::logsumexp(p.b, x, std::vector<std::int64_t>{1}, false);
  force_realloc_on_next_emit(p);
  V n = api::norm(p.b, x, std::vector<std::int64_t>{1}, false);
  force_realloc_on_next_emit(p);
  V s = api::softmax(p.b, x, 1);
  auto out = p.run({m, v, l, n, s}, {make_buffer<double>({3, -4, 0, 0})});
  EXPECT_EQ(read_buffer<double>(out[0], 2), (std::vector<double>{-0.5, 0}));
  EXPECT_EQ(read_buffer<double>(out[1], 2), (std::vector<double>{12.25, 0}));
  EXPECT_DOUBLE_EQ(read_buffer<double>(out[2], 2)[1], std::log(2.0));
  EXPECT_EQ(read_buffer<double>(out[3], 2), (std::vector<double>{5, 0}));
  EXPECT_EQ(read_buffer<double>(out[4], 4)[2], 0.5);
}

TEST(BuilderLifetime, GeluBothForms) {
  Program p;
  V x = p.b.param(vt(DType::f64, {2}));
  force_realloc_on_next_emit(p);
  V exact = api::gelu(p.b, x, false);
  force_realloc_on_next_emit(p);
  V approx = api::gelu(p.b, x, true);
  auto out = p.run({exact, approx}, {make_buffer<double>({0, 1})});
  auto e = read_buffer<double>(out[0], 2), a = read_buffer<double>(out[1], 2);
  EXPECT_EQ(e[0], 0);
  EXPECT_NEAR(e[1], 0.5 * (1 + std::erf(1 / std::sqrt(2.0))), 1e-15);
  EXPECT_NEAR(a[1], 0.5 * (1 + std::tanh(std::sqrt(2 / M_PI) * (1 + 0.044715))), 1e-12);
}

TEST(BuilderLifetime, DotNd) {
  Program p;
  V x = p.b.param(vt(DType::f64, {2, 3}));
  V y = p.b.param(vt(DType::f64, {2, 3, 2}));
  force_realloc_on_next_emit(p);
  V r = api::dot(p.b, x, y);  // [2] + [2, 2]: out[i, a, c] = sum_j x[i, j] y[a, j, c]
  ASSERT_EQ(p.graph->type(r), vt(DType::f64, {2, 2, 2}));
  std::vector<double> xv{1, 0, 0, 0, 1, 1}, yv(12);
  for (int i = 0; i < 12; ++i) yv[i] = i;
  auto out = read_buffer<double>(p.run({r}, {make_buffer(xv), make_buffer(yv)})[0], 8);
  // x row 0 picks y[a, 0, c]; row 1 sums y[a, 1, c] + y[a, 2, c]
  EXPECT_EQ(out, (std::vector<double>{0, 1, 6, 7, 2 + 4, 3 + 5, 8 + 10, 9 + 11}));
}

}  // namespace
}  // namespace qb
