#include "quabla/transforms/expand_threefry.h"

#include <cstdint>
#include <vector>

#include "quabla/ir/builder.h"
#include "quabla/transforms/emit.h"

namespace qb {

namespace {

using ad::Emit;
using ad::V;

constexpr int kRotations[8] = {13, 15, 26, 6, 17, 29, 16, 24};

bool holds_threefry(const Graph& g) {
  for (const Node& n : g.nodes) {
    if (n.op == Op::Threefry) return true;
    for (const auto& r : n.regions)
      if (holds_threefry(*r)) return true;
  }
  return false;
}

// x rotated left by r bits as int32 ops: (x << r) | ((x >> (32 - r)) & (2^r - 1)).
V rotl(Emit& e, V x, int r) {
  const V high = e.op(Op::ShiftLeft, {x, e.like(x, r)});
  const V low = e.op(Op::And, {e.op(Op::ShiftRight, {x, e.like(x, 32 - r)}), e.like(x, static_cast<double>((1u << r) - 1))});
  return e.op(Op::Or, {high, low});
}

// The blocks of keys (k0, k1) (shape K) over the sample shape s: i32 K + [2] + s.
V threefry(Emit& e, V k0, V k1, const Shape& s) {
  const Shape keys = e.type(k0).shape;
  Shape full = keys;
  full.insert(full.end(), s.begin(), s.end());
  std::vector<std::int64_t> key_dims;
  for (std::size_t i = 0; i < keys.size(); ++i) key_dims.push_back(static_cast<std::int64_t>(i));
  auto spread = [&](V k) { return e.broadcast(k, full, key_dims); };
  std::vector<std::int64_t> sample_dims;
  for (std::size_t i = keys.size(); i < full.size(); ++i) sample_dims.push_back(static_cast<std::int64_t>(i));
  const V counter = e.broadcast(e.reshape(e.iota(num_elements(s), DType::i32), s), full, sample_dims);
  const V a = spread(k0), b = spread(k1);
  const V ks[3] = {a, b, e.op(Op::Xor, {e.op(Op::Xor, {a, b}), e.like(a, 466688986.0)})};  // 0x1BD11BDA
  V x0 = a, x1 = e.add(counter, b);
  for (int round = 0; round < 5; ++round) {
    for (int j = 0; j < 4; ++j) {
      x0 = e.add(x0, x1);
      x1 = e.op(Op::Xor, {rotl(e, x1, kRotations[(round % 2) * 4 + j]), x0});
    }
    x0 = e.add(x0, ks[(round + 1) % 3]);
    x1 = e.add(e.add(x1, ks[(round + 2) % 3]), e.like(x1, round + 1));
  }
  Shape one = keys;
  one.push_back(1);
  one.insert(one.end(), s.begin(), s.end());
  Attrs cat;
  cat.axis = static_cast<std::int64_t>(keys.size());
  return e.b.emit(Op::Concat, std::vector<V>{e.reshape(x0, one), e.reshape(x1, one)}, std::move(cat))[0];
}

std::shared_ptr<const Graph> expand(const std::shared_ptr<const Graph>& g) {
  if (!holds_threefry(*g)) return g;
  Graph out;
  Builder b(out);
  Emit e{b};
  std::vector<V> map(g->values.size());
  for (ValueId p : g->params) map[p] = b.param(g->type(p));
  for (const Node& n : g->nodes) {
    if (n.op == Op::Parameter) continue;
    std::vector<V> ins;
    for (ValueId v : n.inputs) ins.push_back(map[v]);
    if (n.op == Op::Threefry) {
      map[n.outputs[0]] = threefry(e, ins[0], ins[1], n.attrs.shape);
      continue;
    }
    if (n.regions.empty()) {
      b.copy_node(*g, n, ins, map);
      continue;
    }
    Regions regions;
    for (const auto& r : n.regions) regions.push_back(expand(r));
    const auto outs = b.emit(n.op, ins, n.attrs, std::move(regions));
    for (std::size_t k = 0; k < outs.size(); ++k) {
      out.values[outs[k]].weak = g->type(n.outputs[k]).weak;
      map[n.outputs[k]] = outs[k];
    }
  }
  std::vector<ValueId> results;
  for (ValueId r : g->results) results.push_back(map[r]);
  b.set_results(std::move(results));
  return std::make_shared<const Graph>(std::move(out));
}

}  // namespace

std::shared_ptr<const Graph> expand_threefry(std::shared_ptr<const Graph> g) { return expand(g); }

}  // namespace qb
