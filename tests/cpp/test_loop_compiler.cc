// The loop compiler (backends/cpu/scalar_loop.h): which bodies get a scalar form, and that
// the interpreter (tier 0) and the native code (tier 1) give bitwise the results of the
// kernel plan on a scan with consts, carries, xs and ys.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "quabla/backends/cpu/executable.h"
#include "quabla/backends/cpu/scalar_loop.h"
#include "quabla/ir/regions.h"
#include "test_util.h"

namespace qb {
namespace {

using test::make_buffer;
using test::read_buffer;
using test::vt;
using V = ValueId;

// Sets an environment variable for the life of the object.
class EnvVar {
 public:
  EnvVar(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    ::setenv(name, value, 1);
  }
  ~EnvVar() {
    if (had_) ::setenv(name_.c_str(), old_.c_str(), 1);
    else ::unsetenv(name_.c_str());
  }
  EnvVar(const EnvVar&) = delete;
  EnvVar& operator=(const EnvVar&) = delete;

 private:
  std::string name_, old_;
  bool had_ = false;
};

// body(i, w: f64[3], c: f64[3], x: f64[3]) -> (tanh(c * w + x) + i * 1e-3, exp(-c) max x)
std::shared_ptr<const Graph> step_body(std::int64_t n) {
  return std::make_shared<const Graph>(make_graph(
      {scan_index_type(), vt(DType::f64, {n}), vt(DType::f64, {n}), vt(DType::f64, {n})},
      [n](Builder& b, std::span<const V> p) {
        Attrs bc;
        bc.shape = {n};
        V i = b.emit1(Op::BroadcastInDim, {p[0]}, bc);
        V scale = b.emit1(Op::Mul, {i, b.emit1(Op::BroadcastInDim, {b.constant(std::make_shared<Literal>(
                                                                      Literal{vt(DType::f64, {}), make_buffer<double>({1e-3})}))},
                                                                  bc)});
        V c = b.emit1(Op::Add, {b.emit1(Op::Tanh, {b.emit1(Op::Add, {b.emit1(Op::Mul, {p[2], p[1]}), p[3]})}), scale});
        V y = b.emit1(Op::Max, {b.emit1(Op::Exp, {b.emit1(Op::Neg, {p[2]})}), p[3]});
        return std::vector<V>{c, y};
      }));
}

std::vector<BufferPtr> run_scan(std::int64_t n, std::int64_t steps) {
  auto g = std::make_shared<Graph>();
  Builder b(*g);
  V w = b.param(vt(DType::f64, {n}));
  V c0 = b.param(vt(DType::f64, {n}));
  V xs = b.param(vt(DType::f64, {steps, n}));
  Attrs a;
  a.length = steps;
  a.num_consts = 1;
  a.num_carry = 1;
  std::vector<V> in{w, c0, xs};
  b.set_results(b.emit(Op::Scan, in, a, Regions{step_body(n)}));
  cpu::Executable exe(g);
  std::vector<double> wv(static_cast<std::size_t>(n)), cv(static_cast<std::size_t>(n)), xv(static_cast<std::size_t>(steps * n));
  for (std::size_t k = 0; k < wv.size(); ++k) wv[k] = 0.3 + 0.1 * static_cast<double>(k), cv[k] = -0.5 + 0.2 * static_cast<double>(k);
  for (std::size_t k = 0; k < xv.size(); ++k) xv[k] = std::sin(0.37 * static_cast<double>(k));
  const std::vector<BufferPtr> args{make_buffer<double>(wv), make_buffer<double>(cv), make_buffer<double>(xv)};
  return exe.run(args);
}

bool same_bits(const BufferPtr& a, const BufferPtr& b) {
  return a->nbytes() == b->nbytes() && std::memcmp(a->data(), b->data(), a->nbytes()) == 0;
}

TEST(LoopCompiler, WhichBodiesHaveAScalarForm) {
  EXPECT_NE(cpu::ScalarBody::compile(step_body(3)), nullptr);
  EXPECT_NE(cpu::ScalarBody::compile(step_body(64)), nullptr);
  EXPECT_EQ(cpu::ScalarBody::compile(step_body(65)), nullptr);  // a value over 64 elements
  EnvVar off("QUABLA_LOOP_SCALAR", "0");
  EXPECT_EQ(cpu::ScalarBody::compile(step_body(3)), nullptr);
}

TEST(LoopCompiler, TiersAgreeBitwiseWithTheKernelPlan) {
  std::vector<BufferPtr> kernels, tier0, tier1;
  {
    EnvVar off("QUABLA_LOOP_SCALAR", "0");
    kernels = run_scan(3, 200);
  }
  {
    EnvVar jit("QUABLA_LOOP_JIT", "0");
    tier0 = run_scan(3, 200);
  }
  {
    EnvVar jit("QUABLA_LOOP_JIT", "sync");  // native when a C compiler works, else tier 0
    tier1 = run_scan(3, 200);
  }
  ASSERT_EQ(kernels.size(), 2u);
  for (std::size_t k = 0; k < kernels.size(); ++k) {
    EXPECT_TRUE(same_bits(kernels[k], tier0[k])) << "output " << k;
    EXPECT_TRUE(same_bits(kernels[k], tier1[k])) << "output " << k;
  }
  EXPECT_TRUE(std::isfinite(read_buffer<double>(tier1[0], 3)[0]));
}

}  // namespace
}  // namespace qb
