// The narrow-integer lowering (transforms/lower_narrow.h): a lowered program computes in no
// narrow dtype (narrow values remain only in conversions and at its parameters and results),
// and through the executable its values are the narrow arithmetic's (modular), in a scan's
// carry too.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "quabla/backends/cpu/executable.h"
#include "quabla/ir/regions.h"
#include "quabla/transforms/lower_narrow.h"
#include "test_util.h"

namespace qb {
namespace {

using test::make_buffer;
using test::read_buffer;
using test::vt;

// f(x, y) = (x * y + 7) >> 1 and x < y, for uint8 x, y of shape [4].
Graph example() {
  Graph g;
  Builder b(g);
  const ValueId x = b.param(vt(DType::u8, {4}));
  const ValueId y = b.param(vt(DType::u8, {4}));
  auto seven = std::make_shared<Literal>();
  seven->type = vt(DType::u8, {});
  seven->data = Buffer::allocate(1);
  store_int64(DType::u8, seven->data->data(), 7);
  auto one = std::make_shared<Literal>();
  one->type = vt(DType::u8, {});
  one->data = Buffer::allocate(1);
  store_int64(DType::u8, one->data->data(), 1);
  Attrs bc;
  bc.shape = {4};
  const ValueId s = b.emit1(Op::Add, {b.emit1(Op::Mul, {x, y}), b.emit1(Op::BroadcastInDim, {b.constant(seven)}, bc)});
  b.set_results({b.emit1(Op::ShiftRight, {s, b.emit1(Op::BroadcastInDim, {b.constant(one)}, bc)}),
                 b.emit1(Op::Lt, {x, y})});
  verify(g);
  return g;
}

bool computes_narrow(const Graph& g) {
  for (const Node& n : g.nodes) {
    if (n.op == Op::Parameter || n.op == Op::Convert) continue;
    for (ValueId v : n.outputs) {
      if (is_narrow_int(g.type(v).dtype)) return true;
    }
    for (const auto& r : n.regions) {
      if (computes_narrow(*r)) return true;
    }
  }
  return false;
}

TEST(LowerNarrow, NoNarrowArithmeticRemainsAndTheInterfaceIsKept) {
  auto g = std::make_shared<const Graph>(example());
  auto lowered = lower_narrow(g);
  EXPECT_FALSE(computes_narrow(*lowered));
  EXPECT_TRUE(computes_narrow(*g));
  ASSERT_EQ(lowered->params.size(), 2u);
  EXPECT_EQ(lowered->type(lowered->params[0]).dtype, DType::u8);
  EXPECT_EQ(lowered->type(lowered->results[0]).dtype, DType::u8);
  EXPECT_EQ(lowered->type(lowered->results[1]).dtype, DType::bool_);
  // a program without narrow integers is returned as it is
  Graph plain;
  Builder b(plain);
  b.set_results({b.emit1(Op::Neg, {b.param(vt(DType::i32, {2}))})});
  auto p = std::make_shared<const Graph>(plain);
  EXPECT_EQ(lower_narrow(p), p);
}

TEST(LowerNarrow, ValuesWrapAsUint8Arithmetic) {
  cpu::Executable exe(std::make_shared<const Graph>(example()));
  const std::vector<std::uint8_t> x{250, 3, 16, 255}, y{2, 200, 16, 255};
  auto out = exe.run(std::vector<BufferPtr>{make_buffer<std::uint8_t>(x), make_buffer<std::uint8_t>(y)});
  const auto r = read_buffer<std::uint8_t>(out[0], 4);
  const auto lt = read_buffer<std::uint8_t>(out[1], 4);
  for (std::size_t i = 0; i < 4; ++i) {
    const auto want = static_cast<std::uint8_t>(static_cast<std::uint8_t>(x[i] * y[i] + 7) >> 1);
    EXPECT_EQ(r[i], want) << i;
    EXPECT_EQ(lt[i] != 0, x[i] < y[i]) << i;
  }
}

TEST(LowerNarrow, AScanCarryWrapsEveryStep) {
  // c <- c * 3 + x over int8 xs: the carry is int32 inside the body, wrapped each step.
  const Graph body = make_graph({scan_index_type(), vt(DType::i8, {}), vt(DType::i8, {})},
                                [](Builder& b, std::span<const ValueId> p) {
    auto three = std::make_shared<Literal>();
    three->type = vt(DType::i8, {});
    three->data = Buffer::allocate(1);
    store_int64(DType::i8, three->data->data(), 3);
    const ValueId c = b.emit1(Op::Add, {b.emit1(Op::Mul, {p[1], b.constant(three)}), p[2]});
    return std::vector<ValueId>{c, c};
  });
  Graph g;
  Builder b(g);
  const ValueId init = b.param(vt(DType::i8, {}));
  const ValueId xs = b.param(vt(DType::i8, {6}));
  Attrs a;
  a.num_consts = 0;
  a.num_carry = 1;
  a.length = 6;
  const std::vector<ValueId> ins{init, xs};
  auto outs = b.emit(Op::Scan, ins, a, {std::make_shared<const Graph>(body)});
  b.set_results({outs[0], outs[1]});
  verify(g);
  auto lowered = lower_narrow(std::make_shared<const Graph>(g));
  EXPECT_FALSE(computes_narrow(*lowered));
  cpu::Executable exe(std::make_shared<const Graph>(g));
  const std::vector<std::int8_t> xv{100, -7, 90, 127, -128, 5};
  auto out = exe.run(std::vector<BufferPtr>{make_buffer<std::int8_t>({-3}), make_buffer<std::int8_t>(xv)});
  std::int8_t c = -3;
  const auto ys = read_buffer<std::int8_t>(out[1], 6);
  for (std::size_t i = 0; i < xv.size(); ++i) {
    c = static_cast<std::int8_t>(static_cast<std::uint8_t>(c * 3 + xv[i]));
    EXPECT_EQ(ys[i], c) << i;
  }
  EXPECT_EQ(read_buffer<std::int8_t>(out[0], 1)[0], c);
}

}  // namespace
}  // namespace qb
