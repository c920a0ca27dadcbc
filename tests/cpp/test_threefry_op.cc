// ops.def's threefry: the CPU kernel gives random/threefry.h's blocks (JAX's bits) for a
// stack of keys, and the expansion other backends use (transforms/expand_threefry.h) gives
// the same bits when run on the CPU (in regions: test_cuda_backend.py, on the emulator).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "quabla/backends/cpu/executable.h"
#include "quabla/random/threefry.h"
#include "quabla/transforms/expand_threefry.h"
#include "test_util.h"

namespace qb {
namespace {

using test::make_buffer;
using test::read_buffer;
using test::vt;

// threefry over a stack of three keys and a [2, 5] sample shape.
Graph program() {
  Graph g;
  Builder b(g);
  const ValueId k0 = b.param(vt(DType::i32, {3}));
  const ValueId k1 = b.param(vt(DType::i32, {3}));
  Attrs a;
  a.shape = {2, 5};
  b.set_results({b.emit1(Op::Threefry, {k0, k1}, a)});
  verify(g);
  return g;
}

std::vector<std::int32_t> run(std::shared_ptr<const Graph> g, const std::vector<std::int32_t>& k0,
                              const std::vector<std::int32_t>& k1) {
  cpu::Executable exe(std::move(g));
  auto out = exe.run(std::vector<BufferPtr>{make_buffer<std::int32_t>(k0), make_buffer<std::int32_t>(k1)});
  return read_buffer<std::int32_t>(out[0], 3 * 2 * 10);
}

TEST(ThreefryOp, KernelAndExpansionGiveTheBlocksOfEachKey) {
  const std::vector<std::int32_t> k0{0, 42, -7}, k1{42, 0, 123456789};
  auto g = std::make_shared<const Graph>(program());
  const auto kernel = run(g, k0, k1);
  auto expanded = expand_threefry(g);
  ASSERT_NE(expanded, g);
  for (const Node& n : expanded->nodes) EXPECT_NE(n.op, Op::Threefry);
  EXPECT_EQ(run(expanded, k0, k1), kernel);
  for (std::size_t k = 0; k < 3; ++k) {
    std::vector<std::uint32_t> first(10), second(10);
    random::blocks({static_cast<std::uint32_t>(k0[k]), static_cast<std::uint32_t>(k1[k])}, first, second);
    for (std::size_t j = 0; j < 10; ++j) {
      EXPECT_EQ(static_cast<std::uint32_t>(kernel[k * 20 + j]), first[j]) << k << "," << j;
      EXPECT_EQ(static_cast<std::uint32_t>(kernel[k * 20 + 10 + j]), second[j]) << k << "," << j;
    }
  }
  // a graph without the op is returned as it is
  Graph plain;
  Builder b(plain);
  b.set_results({b.emit1(Op::Neg, {b.param(vt(DType::f64, {2}))})});
  auto p = std::make_shared<const Graph>(plain);
  EXPECT_EQ(expand_threefry(p), p);
}

}  // namespace
}  // namespace qb
