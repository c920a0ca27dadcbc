// Batching rules of every op: one switch over Op, no default. Inside the transform every
// batched value carries the batch axis first; unbatched operands of an op with batched
// ones are broadcast along it.
#include "quabla/transforms/vmap.h"

#include <cstring>
#include <utility>

#include "quabla/ir/builder.h"
#include "quabla/ir/errors.h"
#include "quabla/transforms/emit.h"
#include "quabla/transforms/region_rules.h"

namespace qb {

using ad::Emit;
using ad::V;

namespace {

// The named axis of the vmap being applied: named_axis nodes of this id are computed over
// the batch axis here. Region bodies batched inside it (vmap_regions.cc calls
// vmap_partial) see the same id, which is why it is not a parameter threaded through them.
thread_local std::int64_t t_axis_id = -1;

struct AxisIdScope {
  std::int64_t saved;
  explicit AxisIdScope(std::int64_t id) : saved(t_axis_id) { t_axis_id = id; }
  ~AxisIdScope() { t_axis_id = saved; }
  AxisIdScope(const AxisIdScope&) = delete;
  AxisIdScope& operator=(const AxisIdScope&) = delete;
};

bool mentions_axis(const Graph& g, std::int64_t id) {
  for (const Node& n : g.nodes) {
    if (n.op == Op::NamedAxis && n.attrs.num_consts == id) return true;
    for (const auto& r : n.regions)
      if (mentions_axis(*r, id)) return true;
  }
  return false;
}

std::vector<std::int64_t> shifted(const std::vector<std::int64_t>& v) {
  std::vector<std::int64_t> out;
  for (auto d : v) out.push_back(d + 1);
  return out;
}

Shape with_batch(std::int64_t batch, const Shape& s) {
  Shape out{batch};
  out.insert(out.end(), s.begin(), s.end());
  return out;
}

struct Batcher {
  Emit& e;
  std::int64_t batch;

  // x (unbatched, per-example shape) broadcast along a new leading batch axis.
  V lift(V x) {
    const Shape& s = e.type(x).shape;
    std::vector<std::int64_t> dims;
    for (std::size_t i = 0; i < s.size(); ++i) dims.push_back(static_cast<std::int64_t>(i + 1));
    return e.broadcast(x, with_batch(batch, s), std::move(dims));
  }
  V batched(V x, bool is_batched) { return is_batched ? x : lift(x); }

  // Moves axis `axis` of x to the front.
  V batch_to_front(V x, std::int64_t axis) {
    if (axis == 0) return x;
    std::vector<std::int64_t> perm{axis};
    for (std::int64_t d = 0; d < static_cast<std::int64_t>(e.type(x).shape.size()); ++d)
      if (d != axis) perm.push_back(d);
    return e.transpose(x, perm);
  }
  // [B, pre..., len, post...] (pre of rank axis) -> [pre..., B * len, post...].
  V merge_batch_into(V x, std::int64_t axis) {
    const Shape xs = e.type(x).shape;
    std::vector<std::int64_t> perm;
    for (std::int64_t d = 1; d <= axis; ++d) perm.push_back(d);
    perm.push_back(0);
    for (std::int64_t d = axis + 1; d < static_cast<std::int64_t>(xs.size()); ++d) perm.push_back(d);
    Shape merged(xs.begin() + 1, xs.begin() + axis + 1);
    merged.push_back(batch * xs[static_cast<std::size_t>(axis) + 1]);
    merged.insert(merged.end(), xs.begin() + axis + 2, xs.end());
    return e.reshape(e.transpose(x, perm), merged);
  }
  // Batched indices [B, ...] into examples of length len laid end to end: idx + b * len.
  V add_offsets(V idx, std::int64_t len) {
    idx = e.convert(idx, DType::i64);  // batch * len may not fit in int32
    const ValueType t = e.type(idx);
    V starts = e.mul(e.iota(batch, t.dtype), e.like(e.iota(batch, t.dtype), static_cast<double>(len)));
    return e.add(idx, e.broadcast(starts, t.shape, {0}));
  }
  // The same, with indices outside [0, len) sent past the end of all examples (dropped by
  // scatters, read as zero by filling takes) instead of into a neighbour.
  V offset_or_drop(V idx, std::int64_t len) {
    idx = e.convert(idx, DType::i64);
    return e.select(e.in_range(idx, len), add_offsets(idx, len), e.like(idx, static_cast<double>(batch * len)));
  }

  // A collective over this vmap's named axis (x: its operand, if any, batched when xb):
  // the value every example sees, and whether it differs between examples.
  std::pair<V, bool> named(const Node& n, const std::vector<V>& x, bool xb) {
    const Attrs& a = n.attrs;
    switch (a.mode) {
      case kAxisIndex:
        return {e.iota(batch, DType::i32), true};
      case kAxisSum:
        return {xb ? e.reduce_sum(x[0], {0}) : e.scale(x[0], static_cast<double>(batch)), false};
      case kAxisMax: case kAxisMin: {
        if (!xb) return {x[0], false};
        Attrs r;
        r.dims = {0};
        return {e.op(a.mode == kAxisMax ? Op::ReduceMax : Op::ReduceMin, {x[0]}, std::move(r)), false};
      }
      case kAxisGather: {
        V v = batched(x[0], xb);  // [B, ...] -> the examples' axis at a.axis (merged when tiled)
        if (a.num_carry) return {merge_batch_into(v, a.axis), false};
        std::vector<std::int64_t> perm;
        for (std::int64_t d = 1; d <= a.axis; ++d) perm.push_back(d);
        perm.push_back(0);
        for (std::int64_t d = a.axis + 1; d < static_cast<std::int64_t>(e.type(v).shape.size()); ++d) perm.push_back(d);
        return {e.transpose(v, std::move(perm)), false};
      }
      case kAxisPermute: {
        // Example d receives example s's value for each (s, d); the others receive zeros.
        std::vector<std::int64_t> source(static_cast<std::size_t>(batch), batch);  // batch: out of range -> 0
        for (std::size_t i = 0; i + 1 < a.dims.size(); i += 2) source[static_cast<std::size_t>(a.dims[i + 1])] = a.dims[i];
        auto lit = std::make_shared<Literal>();
        lit->type = ValueType{DType::i64, {batch}, false};
        lit->data = Buffer::allocate(static_cast<std::size_t>(batch) * 8);
        std::memcpy(lit->data->data(), source.data(), static_cast<std::size_t>(batch) * 8);
        return {e.take(batched(x[0], xb), e.b.constant(std::move(lit)), 0, true), true};
      }
      default:
        throw InternalError("vmap: unknown named_axis collective");
    }
  }

  // The batched outputs of node n (all operands made batched where the rule needs it).
  std::vector<V> rule(const Node& n, const std::vector<V>& x, const std::vector<bool>& b) {
    Attrs a = n.attrs;
    auto all_batched = [&] {
      std::vector<V> xs;
      for (std::size_t i = 0; i < x.size(); ++i) xs.push_back(batched(x[i], b[i]));
      return xs;
    };
    switch (n.op) {
      case Op::Parameter: case Op::Constant:
        throw InternalError("vmap: leaves are not batched by rules");
      case Op::Neg: case Op::Abs: case Op::Sign: case Op::Floor: case Op::Ceil: case Op::Round: case Op::Sqrt:
      case Op::Cbrt: case Op::Exp: case Op::Exp2: case Op::Expm1: case Op::Log: case Op::Log2: case Op::Log10:
      case Op::Log1p: case Op::Sin: case Op::Cos: case Op::Tan: case Op::Asin: case Op::Acos: case Op::Atan:
      case Op::Sinh: case Op::Cosh: case Op::Tanh: case Op::Asinh: case Op::Acosh: case Op::Atanh: case Op::Erf:
      case Op::Erfc: case Op::ErfInv: case Op::Logistic: case Op::Softplus: case Op::Silu: case Op::GeluTanh: case Op::StopGradient:
      case Op::IsNan: case Op::IsInf: case Op::IsFinite: case Op::Not: case Op::Add: case Op::Sub: case Op::Mul:
      case Op::Div: case Op::Pow: case Op::Atan2: case Op::Hypot: case Op::Rem: case Op::Max: case Op::Min:
      case Op::LogAddExp: case Op::And: case Op::Or: case Op::Xor: case Op::ShiftLeft: case Op::ShiftRight:
      case Op::Lt: case Op::Le: case Op::Gt: case Op::Ge:
      case Op::Eq: case Op::Ne: case Op::Select: case Op::Convert:
      case Op::Real: case Op::Imag: case Op::Conj: case Op::Complex:
        return e.b.emit(n.op, all_batched(), std::move(a));
      case Op::Fft:  // along the last axis; the batch axis is in front
        return {e.op(Op::Fft, {x[0]}, std::move(a))};
      case Op::Argsort:
        return {e.op(Op::Argsort, {x[0]}, std::move(a))};
      case Op::SearchSorted:
        return e.b.emit(Op::SearchSorted, all_batched(), std::move(a));
      case Op::Take: {
        if (!b[1]) {
          a.axis += 1;
          return {e.op(Op::Take, {x[0], x[1]}, std::move(a))};
        }
        const std::int64_t axis = a.axis;
        if (!b[0]) return {batch_to_front(e.op(Op::Take, {x[0], x[1]}, std::move(a)), axis)};
        // Per-example indices into per-example arrays: one take from the examples laid end
        // to end along the indexed axis, each index offset by its example's start.
        const std::int64_t len = e.type(x[0]).shape[static_cast<std::size_t>(axis) + 1];
        V flat_x = merge_batch_into(x[0], axis);
        V idx = a.mode == 1 ? offset_or_drop(x[1], len) : add_offsets(e.clamp_index(x[1], len), len);
        return {batch_to_front(e.op(Op::Take, {flat_x, idx}, std::move(a)), axis)};
      }
      case Op::Scatter: {
        if (!b[1]) {
          a.axis += 1;
          return {e.op(Op::Scatter, {batched(x[0], b[0]), x[1], batched(x[2], b[2])}, std::move(a))};
        }
        const std::int64_t axis = a.axis;
        const Shape xs = e.type(batched(x[0], b[0])).shape;
        V flat_x = merge_batch_into(batched(x[0], b[0]), axis);
        // updates [B, pre..., idx..., post...] -> [pre..., B, idx..., post...]
        V u = batched(x[2], b[2]);
        const auto ur = static_cast<std::int64_t>(e.type(u).shape.size());
        std::vector<std::int64_t> perm;
        for (std::int64_t d = 1; d <= axis; ++d) perm.push_back(d);
        perm.push_back(0);
        for (std::int64_t d = axis + 1; d < ur; ++d) perm.push_back(d);
        V idx = offset_or_drop(x[1], xs[static_cast<std::size_t>(axis) + 1]);
        V r = e.op(Op::Scatter, {flat_x, idx, e.transpose(u, perm)}, std::move(a));
        // [pre..., B * len, post...] -> [B, pre..., len, post...]
        Shape split(xs.begin() + 1, xs.begin() + axis + 1);
        split.push_back(batch);
        split.insert(split.end(), xs.begin() + axis + 1, xs.end());
        return {batch_to_front(e.reshape(r, split), axis)};
      }
      case Op::Reshape:
        a.shape = with_batch(batch, a.shape);
        return {e.op(Op::Reshape, {x[0]}, std::move(a))};
      case Op::BroadcastInDim: {
        std::vector<std::int64_t> dims{0};
        for (auto d : a.dims) dims.push_back(d + 1);
        a.dims = std::move(dims);
        a.shape = with_batch(batch, a.shape);
        return {e.op(Op::BroadcastInDim, {x[0]}, std::move(a))};
      }
      case Op::Transpose: {
        std::vector<std::int64_t> perm{0};
        for (auto p : a.dims) perm.push_back(p + 1);
        a.dims = std::move(perm);
        return {e.op(Op::Transpose, {x[0]}, std::move(a))};
      }
      case Op::Slice:
        a.starts.insert(a.starts.begin(), 0);
        a.limits.insert(a.limits.begin(), batch);
        a.strides.insert(a.strides.begin(), 1);
        return {e.op(Op::Slice, {x[0]}, std::move(a))};
      case Op::Pad: {
        Attrs p = a;
        p.starts.insert(p.starts.begin(), 0);
        p.limits.insert(p.limits.begin(), 0);
        p.strides.insert(p.strides.begin(), 0);
        if (!b[1]) return {e.op(Op::Pad, {batched(x[0], b[0]), x[1]}, std::move(p))};
        // A per-example padding value: pad with 0, then add value * (1 where padded).
        const ValueType xt = e.type(x[0]);
        const DType dt = xt.dtype;
        Shape example = b[0] ? Shape(xt.shape.begin() + 1, xt.shape.end()) : xt.shape;
        V mask = e.op(Op::Pad, {e.zeros(ValueType{dt, example, false}), e.scalar(1.0, dt)}, a);
        V padded = e.op(Op::Pad, {batched(x[0], b[0]), e.scalar(0.0, dt)}, std::move(p));
        const Shape& out = e.type(padded).shape;
        V value = e.broadcast(x[1], out, {0});
        return {e.add(padded, e.mul(lift(mask), value))};
      }
      case Op::Reverse:
        a.dims = shifted(a.dims);
        return {e.op(Op::Reverse, {x[0]}, std::move(a))};
      case Op::Concat:
        a.axis += 1;
        return e.b.emit(Op::Concat, all_batched(), std::move(a));
      case Op::ReduceSum: case Op::ReduceProd: case Op::ReduceMax: case Op::ReduceMin: case Op::ReduceAny:
      case Op::ReduceAll:
        a.dims = shifted(a.dims);
        return {e.op(n.op, {x[0]}, std::move(a))};
      case Op::Cumsum: case Op::Gather:
        a.axis += 1;
        return {e.op(n.op, {x[0]}, std::move(a))};
      case Op::ScatterAdd:
        a.axis += 1;
        return e.b.emit(Op::ScatterAdd, all_batched(), std::move(a));
      case Op::Cond: case Op::Scan: case Op::While: case Op::CustomJvp: case Op::CustomVjp: case Op::CustomVjpLin: case Op::Checkpoint: case Op::LinearSolve:
        throw InternalError("vmap: region ops are batched by vmap_regions.cc");
      case Op::NamedAxis:  // another vmap's axis (this one's is resolved by `named`)
        if (a.mode == kAxisGather) a.axis += 1;
        return e.b.emit(Op::NamedAxis, x, std::move(a));
      case Op::HostCall: {
        // The function sees the batch as a new leading axis (ops.def: attrs.num_carry says how).
        const std::int64_t method = a.num_carry & 3;
        if (method == 0) {
          throw ValueError("vmap of a qb.pure_callback needs vmap_method: 'sequential' (one call per example), "
                           "'broadcast_all' (one call, every operand with the batch axis first) or 'expand_dims' "
                           "(one call, unbatched operands with a leading axis of 1)");
        }
        std::vector<V> xs;
        for (std::size_t i = 0; i < x.size(); ++i) {
          if (!b[i] && method == 3) {
            Shape s1 = e.type(x[i]).shape;
            s1.insert(s1.begin(), 1);
            xs.push_back(e.reshape(x[i], s1));
          } else {
            xs.push_back(batched(x[i], b[i]));
          }
        }
        a.shape.insert(a.shape.begin(), batch);
        a.length += 1;
        return e.b.emit(Op::HostCall, xs, std::move(a));
      }
      case Op::Threefry:  // a stack of keys gives a stack of blocks (batch axis first)
      case Op::Cholesky: case Op::Slogdet: case Op::Eigh: case Op::Svd: case Op::Qr: case Op::Lu: case Op::Eig: case Op::TriangularSolve: case Op::Solve:
        return e.b.emit(n.op, all_batched(), std::move(a));  // batched over leading axes already
      case Op::MatMul: {
        // One operand unbatched and without batch axes of its own (the MLP case: per-example
        // activations times shared weights): fold the batch into the GEMM's rows (or
        // columns) instead of broadcasting the weights and running B tiny products.
        const Shape xs = e.type(x[0]).shape, ws = e.type(x[1]).shape;
        if (b[0] && !b[1] && ws.size() == 2 && xs.size() == 3) {
          const std::int64_t m = xs[1], k = xs[2], n = ws[1];
          V r = e.op(Op::MatMul, {e.reshape(x[0], Shape{batch * m, k}), x[1]});
          return {e.reshape(r, Shape{batch, m, n})};
        }
        if (!b[0] && b[1] && xs.size() == 2 && ws.size() == 3) {
          const std::int64_t m = xs[0], k = xs[1], n = ws[2];
          V wt = e.reshape(e.transpose(x[1], {1, 0, 2}), Shape{k, batch * n});
          V r = e.reshape(e.op(Op::MatMul, {x[0], wt}), Shape{m, batch, n});
          return {e.transpose(r, {1, 0, 2})};
        }
        return e.b.emit(Op::MatMul, all_batched(), std::move(a));
      }
    }
    throw InternalError("vmap: unknown op");
  }
};

}  // namespace

namespace {

Graph vmap_impl(const Graph& g, std::span<const std::int64_t> in_axes, std::int64_t batch,
                const std::vector<bool>* lift, std::vector<bool>* result_batched) {
  Graph out;
  Builder b(out);
  Emit e{b};
  Batcher bt{e, batch};
  std::vector<V> map(g.values.size(), 0);
  std::vector<bool> is_batched(g.values.size(), false);
  std::vector<V> raw_params;
  for (std::size_t i = 0; i < g.params.size(); ++i) {
    ValueType t = g.type(g.params[i]);
    t.weak = false;
    const std::int64_t ax = i < in_axes.size() ? in_axes[i] : -1;
    if (ax >= 0) {
      if (ax > static_cast<std::int64_t>(t.shape.size())) throw InternalError("vmap: in_axis out of range");
      t.shape.insert(t.shape.begin() + ax, batch);
    }
    raw_params.push_back(b.param(t));
  }
  for (std::size_t i = 0; i < g.params.size(); ++i) {
    const std::int64_t ax = i < in_axes.size() ? in_axes[i] : -1;
    V p = raw_params[i];
    if (ax > 0) {  // move the batch axis first
      std::vector<std::int64_t> perm{ax};
      for (std::int64_t d = 0; d < static_cast<std::int64_t>(e.type(p).shape.size()); ++d)
        if (d != ax) perm.push_back(d);
      p = e.transpose(p, perm);
    }
    map[g.params[i]] = p;
    is_batched[g.params[i]] = ax >= 0;
  }
  for (const Node& n : g.nodes) {
    if (n.op == Op::Parameter) continue;
    std::vector<V> x;
    std::vector<bool> bb;
    bool any = false;
    for (auto v : n.inputs) {
      x.push_back(map[v]);
      bb.push_back(is_batched[v]);
      any = any || is_batched[v];
    }
    if (n.op == Op::NamedAxis && n.attrs.num_consts == t_axis_id) {
      auto [v, vb] = bt.named(n, x, !bb.empty() && bb[0]);
      map[n.outputs[0]] = v;
      is_batched[n.outputs[0]] = vb;
      continue;
    }
    // A region whose body uses this vmap's axis is batched even when no operand is.
    if (!any && has_regions(n.op) && t_axis_id >= 0) {
      for (const auto& r : n.regions) any = any || mentions_axis(*r, t_axis_id);
    }
    if (any && has_regions(n.op)) {
      std::vector<bool> ob;
      auto outs = vmap_region(e, batch, n, x, bb, ob);
      for (std::size_t k = 0; k < outs.size(); ++k) {
        map[n.outputs[k]] = outs[k];
        is_batched[n.outputs[k]] = ob[k];
      }
      continue;
    }
    std::vector<V> outs = any ? bt.rule(n, x, bb) : b.emit(n.op, x, n.attrs, n.regions);
    for (std::size_t k = 0; k < outs.size(); ++k) {
      map[n.outputs[k]] = outs[k];
      is_batched[n.outputs[k]] = any;
      if (!any) out.values[outs[k]].weak = g.type(n.outputs[k]).weak;
    }
  }
  std::vector<V> results;
  if (result_batched) result_batched->clear();
  for (std::size_t j = 0; j < g.results.size(); ++j) {
    const ValueId r = g.results[j];
    const bool lift_it = !lift || (*lift)[j];
    V v = is_batched[r] || !lift_it ? map[r] : bt.lift(map[r]);
    if (result_batched) result_batched->push_back(is_batched[r] || lift_it);
    results.push_back(v);
  }
  for (auto v : results) out.values[v].weak = false;
  b.set_results(std::move(results));
  verify(out);
  return out;
}

}  // namespace

Graph vmap(const Graph& g, std::span<const std::int64_t> in_axes, std::int64_t batch, std::int64_t axis_id) {
  const AxisIdScope scope(axis_id);
  return vmap_impl(g, in_axes, batch, nullptr, nullptr);
}

Graph vmap_partial(const Graph& g, std::span<const std::int64_t> in_axes, std::int64_t batch,
                   const std::vector<bool>& lift, std::vector<bool>& batched) {
  return vmap_impl(g, in_axes, batch, &lift, &batched);
}

}  // namespace qb
