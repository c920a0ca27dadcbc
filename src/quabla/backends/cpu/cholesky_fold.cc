#include "quabla/backends/cpu/cholesky_fold.h"

#include <cstring>

#include "quabla/transforms/simplify.h"

namespace qb::cpu {

namespace {

// v is 0.5 in its dtype: a one-element float constant, or a broadcast of one.
bool is_half(const Graph& g, ValueId v) {
  const Node* n = &g.producer_of(v);
  if (n->op == Op::BroadcastInDim) n = &g.producer_of(n->inputs[0]);
  if (n->op != Op::Constant || num_elements(n->attrs.literal->type.shape) != 1) return false;
  const std::byte* p = n->attrs.literal->data->data();
  switch (n->attrs.literal->type.dtype) {
    case DType::f64: {
      double x;
      std::memcpy(&x, p, sizeof x);
      return x == 0.5;
    }
    case DType::f32: {
      float x;
      std::memcpy(&x, p, sizeof x);
      return x == 0.5f;
    }
    default: return false;
  }
}

// v = transpose(a) swapping the last two axes: returns a, or nothing.
bool transposed_of(const Graph& g, ValueId v, ValueId a) {
  const Node& t = g.producer_of(v);
  if (t.op != Op::Transpose || t.inputs[0] != a) return false;
  const auto& p = t.attrs.dims;
  const std::size_t r = p.size();
  if (r < 2) return false;
  for (std::size_t i = 0; i + 2 < r; ++i)
    if (p[i] != static_cast<std::int64_t>(i)) return false;
  return p[r - 2] == static_cast<std::int64_t>(r - 1) && p[r - 1] == static_cast<std::int64_t>(r - 2);
}

// The A of h = (A + A^T) * 0.5 (either operand order), or -1.
std::int64_t symmetrized_source(const Graph& g, ValueId h) {
  const Node& mul = g.producer_of(h);
  if (mul.op != Op::Mul) return -1;
  for (int k = 0; k < 2; ++k) {
    const ValueId s = mul.inputs[static_cast<std::size_t>(k)], c = mul.inputs[static_cast<std::size_t>(1 - k)];
    if (!is_half(g, c)) continue;
    const Node& add = g.producer_of(s);
    if (add.op != Op::Add) continue;
    const ValueId x = add.inputs[0], y = add.inputs[1];
    if (g.type(x).dtype != g.type(h).dtype || g.type(x).shape != g.type(h).shape) continue;
    if (transposed_of(g, y, x)) return x;
    if (transposed_of(g, x, y)) return y;
  }
  return -1;
}

}  // namespace

std::shared_ptr<const Graph> fold_symmetrized_cholesky(std::shared_ptr<const Graph> g) {
  bool any = false;
  for (const Node& n : g->nodes)
    if (n.op == Op::Cholesky && n.attrs.mode == 0 && symmetrized_source(*g, n.inputs[0]) >= 0)
      any = true;
  if (!any) return g;
  Graph out = *g;
  for (Node& n : out.nodes) {
    if (n.op != Op::Cholesky || n.attrs.mode != 0) continue;
    const std::int64_t a = symmetrized_source(out, n.inputs[0]);
    if (a < 0) continue;
    n.inputs[0] = static_cast<ValueId>(a);
    n.attrs.mode = 1;
  }
  // The transpose, add and multiply are dead now unless something else reads them.
  return std::make_shared<const Graph>(eliminate_dead_code(out));
}

}  // namespace qb::cpu
