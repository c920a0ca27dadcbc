// Batching of cond, scan and while. Inside vmap a batched value has the batch axis first;
// a region body is batched with the same transform, its parameters batched where the
// node's operands (or, for carries, a fixed point over the steps) are.
//  - cond with a batched predicate runs both branches and selects per example; otherwise
//    it stays a cond over batched branches.
//  - scan slices xs along their leading (time) axis, so batched xs and ys are moved to
//    [T, batch, ...] around the node.
//  - while with a batched predicate runs while any example's cond holds and freezes the
//    examples that are done (their carry is selected unchanged).
#include <memory>

#include "quabla/ir/errors.h"
#include "quabla/ir/regions.h"
#include "quabla/transforms/region_rules.h"
#include "quabla/transforms/vmap.h"

namespace qb {

using ad::Emit;
using ad::V;

namespace {

V lift(Emit& e, std::int64_t batch, V x) {
  const Shape s = e.type(x).shape;
  Shape out{batch};
  out.insert(out.end(), s.begin(), s.end());
  std::vector<std::int64_t> dims;
  for (std::size_t i = 0; i < s.size(); ++i) dims.push_back(static_cast<std::int64_t>(i + 1));
  return e.broadcast(x, out, std::move(dims));
}

// Swaps axes 0 and 1.
V swap01(Emit& e, V x) {
  std::vector<std::int64_t> perm{1, 0};
  for (std::size_t i = 2; i < e.type(x).shape.size(); ++i) perm.push_back(static_cast<std::int64_t>(i));
  return e.transpose(x, std::move(perm));
}

std::vector<std::int64_t> axes_of(const std::vector<bool>& batched) {
  std::vector<std::int64_t> a;
  for (bool b : batched) a.push_back(b ? 0 : -1);
  return a;
}

// vmap of a body with `want` results batched; repeats with the union when the body
// batches more than asked (want is updated in place).
Graph batch_body(const Graph& body, const std::vector<bool>& params, std::int64_t batch, std::vector<bool>& want) {
  for (;;) {
    std::vector<bool> got;
    Graph g = vmap_partial(body, axes_of(params), batch, want, got);
    if (got == want) return g;
    for (std::size_t j = 0; j < want.size(); ++j) want[j] = want[j] || got[j];
  }
}

V select_batched(Emit& e, V pred, V on_true, V on_false) {
  const Shape s = e.type(on_true).shape;
  return e.select(e.broadcast(pred, s, {0}), on_true, on_false);
}

// n's attributes for the batched loop, with the record of n as it runs per example.
Attrs with_example_loop(const Node& n, std::int64_t batch, const Regions& batched, std::vector<bool> in_batched,
                        std::vector<bool> out_batched) {
  auto r = std::make_shared<ExampleLoop>();
  r->batch = batch;
  r->batched = batched;
  r->example = n.regions;
  r->in_batched = std::move(in_batched);
  r->out_batched = std::move(out_batched);
  Attrs a = n.attrs;
  a.example_loop = std::move(r);
  return a;
}

}  // namespace

std::vector<V> vmap_region(Emit& e, std::int64_t batch, const Node& n, const std::vector<V>& x,
                           const std::vector<bool>& bx, std::vector<bool>& ob) {
  Builder& b = e.b;
  switch (n.op) {
    case Op::Checkpoint: {
      std::vector<bool> all(n.regions[0]->results.size(), true);
      Regions regions{std::make_shared<const Graph>(batch_body(*n.regions[0], bx, batch, all))};
      ob.assign(n.outputs.size(), true);
      return b.emit(Op::Checkpoint, x, n.attrs, std::move(regions));
    }
    case Op::CustomVjp: case Op::CustomVjpLin: {
      // Every operand lifted to batched and every body batched for that (bwd's residual and
      // cotangent parameters come from batched values too).
      std::vector<V> in;
      for (std::size_t i = 0; i < x.size(); ++i) in.push_back(bx[i] ? x[i] : lift(e, batch, x[i]));
      Regions regions;
      for (const auto& r : n.regions) {
        std::vector<bool> every(r->params.size(), true), all(r->results.size(), true);
        regions.push_back(std::make_shared<const Graph>(batch_body(*r, every, batch, all)));
      }
      ob.assign(n.outputs.size(), true);
      return b.emit(n.op, in, n.attrs, std::move(regions));
    }
    case Op::LinearSolve: {
      // The right-hand sides lifted to batched (every x is then batched), the operator's
      // consts batched only where they are; all four regions batched for that.
      const auto nb = static_cast<std::size_t>(n.attrs.num_consts);
      std::vector<V> in;
      std::vector<bool> params;
      for (std::size_t i = 0; i < x.size(); ++i) {
        const bool lifted = i < nb && !bx[i];
        in.push_back(lifted ? lift(e, batch, x[i]) : x[i]);
        params.push_back(i < nb || bx[i]);
      }
      Regions regions;
      for (const auto& r : n.regions) {
        std::vector<bool> all(r->results.size(), true);
        regions.push_back(std::make_shared<const Graph>(batch_body(*r, params, batch, all)));
      }
      ob.assign(n.outputs.size(), true);
      return b.emit(Op::LinearSolve, in, n.attrs, std::move(regions));
    }
    case Op::CustomJvp: {
      // Every operand lifted to batched, both bodies batched for that, every result batched
      // (the rule's tangent parameters are batched like their arguments: all of them).
      std::vector<V> in;
      for (std::size_t i = 0; i < x.size(); ++i) in.push_back(bx[i] ? x[i] : lift(e, batch, x[i]));
      std::size_t rule_params = x.size();
      for (std::int64_t i = 0; i < n.attrs.num_consts; ++i)
        if (is_inexact(e.type(x[static_cast<std::size_t>(i)]).dtype)) ++rule_params;
      if (n.attrs.mode & 1) rule_params += n.outputs.size();
      std::vector<bool> every(x.size(), true), every_rule(rule_params, true);
      std::vector<bool> all0(n.regions[0]->results.size(), true), all1(n.regions[1]->results.size(), true);
      Regions regions;
      regions.push_back(std::make_shared<const Graph>(batch_body(*n.regions[0], every, batch, all0)));
      regions.push_back(std::make_shared<const Graph>(batch_body(*n.regions[1], every_rule, batch, all1)));
      ob.assign(n.outputs.size(), true);
      return b.emit(Op::CustomJvp, in, n.attrs, std::move(regions));
    }
    case Op::Cond: {
      const std::vector<bool> ops(bx.begin() + 1, bx.end());
      const std::vector<V> operands(x.begin() + 1, x.end());
      if (bx[0]) {
        std::vector<std::vector<V>> r;
        for (const auto& br : n.regions) {
          std::vector<bool> all(br->results.size(), true);
          Graph v = batch_body(*br, ops, batch, all);
          r.push_back(inline_into(b, v, operands));
        }
        std::vector<V> out;
        for (std::size_t k = 0; k < r[0].size(); ++k) out.push_back(select_batched(e, x[0], r[1][k], r[0][k]));
        ob.assign(out.size(), true);
        return out;
      }
      std::vector<bool> want = output_dependence(n, bx);
      Regions regions;
      for (int pass = 0; pass < 2; ++pass) {
        regions.clear();
        const auto before = want;
        for (const auto& br : n.regions) regions.push_back(std::make_shared<const Graph>(batch_body(*br, ops, batch, want)));
        if (want == before) break;
      }
      ob = want;
      return b.emit(Op::Cond, x, n.attrs, std::move(regions));
    }
    case Op::Scan: {
      const ScanLayout l = ScanLayout::of(n);
      std::vector<bool> dep = output_dependence(n, bx);
      std::vector<bool> slots(dep.begin(), dep.begin() + static_cast<std::ptrdiff_t>(l.carry));
      std::vector<bool> want = dep;
      Graph body;
      for (;;) {
        std::vector<bool> params{false};
        params.insert(params.end(), bx.begin(), bx.begin() + static_cast<std::ptrdiff_t>(l.consts));
        params.insert(params.end(), slots.begin(), slots.end());
        params.insert(params.end(), bx.begin() + static_cast<std::ptrdiff_t>(l.consts + l.carry), bx.end());
        for (std::size_t k = 0; k < l.carry; ++k) want[k] = slots[k];
        body = batch_body(*n.regions[0], params, batch, want);
        bool changed = false;
        for (std::size_t k = 0; k < l.carry; ++k) {
          if (want[k] && !slots[k]) {
            slots[k] = true;
            changed = true;
          }
        }
        if (!changed) break;
      }
      std::vector<V> in;
      for (std::size_t i = 0; i < x.size(); ++i) {
        V v = x[i];
        if (i >= l.consts && i < l.consts + l.carry) {
          if (slots[i - l.consts] && !bx[i]) v = lift(e, batch, v);
        } else if (i >= l.consts + l.carry && bx[i]) {
          v = swap01(e, v);  // [batch, T, ...] -> [T, batch, ...]
        }
        in.push_back(v);
      }
      auto batched_body = std::make_shared<const Graph>(std::move(body));
      std::vector<bool> in_batched(bx.begin(), bx.end());
      for (std::size_t k = 0; k < l.carry; ++k) in_batched[l.consts + k] = slots[k];
      auto outs = b.emit(Op::Scan, in, with_example_loop(n, batch, {batched_body}, in_batched, want),
                         Regions{batched_body});
      ob = want;
      for (std::size_t j = l.carry; j < outs.size(); ++j)
        if (ob[j]) outs[j] = swap01(e, outs[j]);
      return outs;
    }
    case Op::While: {
      const auto nc = static_cast<std::size_t>(n.attrs.num_consts);
      const std::size_t nk = x.size() - nc;
      std::vector<bool> slots = output_dependence(n, bx);
      std::vector<bool> params(bx.begin(), bx.begin() + static_cast<std::ptrdiff_t>(nc));
      params.insert(params.end(), slots.begin(), slots.end());
      const bool pred_batched = result_dependence(*n.regions[0], params)[0];
      if (pred_batched) {
        std::fill(params.begin() + static_cast<std::ptrdiff_t>(nc), params.end(), true);
        std::vector<bool> one{true}, all(nk, true);
        Graph cond = batch_body(*n.regions[0], params, batch, one);
        Graph body = batch_body(*n.regions[1], params, batch, all);
        std::vector<V> in;
        for (std::size_t i = 0; i < x.size(); ++i) in.push_back(i >= nc && !bx[i] ? lift(e, batch, x[i]) : x[i]);
        std::vector<ValueType> pt;
        for (V v : in) {
          ValueType t = e.type(v);
          t.weak = false;
          pt.push_back(t);
        }
        Graph any_cond = make_graph(pt, [&](Builder& bb, std::span<const V> ps) {
          Emit be{bb};
          V p = inline_into(bb, cond, ps)[0];
          return std::vector<V>{be.convert(be.op(Op::ReduceAny, {p}, [] {
            Attrs a;
            a.dims = {0};
            return a;
          }()), DType::bool_)};
        });
        Graph frozen_body = make_graph(pt, [&](Builder& bb, std::span<const V> ps) {
          Emit be{bb};
          V p = inline_into(bb, cond, ps)[0];
          auto next = inline_into(bb, body, ps);
          std::vector<V> res;
          for (std::size_t k = 0; k < nk; ++k) res.push_back(select_batched(be, p, next[k], ps[nc + k]));
          return res;
        });
        ob.assign(nk, true);
        const Regions regions{std::make_shared<const Graph>(std::move(any_cond)),
                              std::make_shared<const Graph>(std::move(frozen_body))};
        std::vector<bool> in_batched(bx.begin(), bx.begin() + static_cast<std::ptrdiff_t>(nc));
        in_batched.resize(x.size(), true);
        return b.emit(Op::While, in, with_example_loop(n, batch, regions, in_batched, ob), regions);
      }
      std::vector<bool> none{false};
      std::vector<bool> want = slots;
      Graph body;
      for (;;) {
        body = batch_body(*n.regions[1], params, batch, want);
        bool changed = false;
        for (std::size_t k = 0; k < nk; ++k)
          if (want[k] && !params[nc + k]) {
            params[nc + k] = true;
            changed = true;
          }
        if (!changed) break;
      }
      Graph cond = batch_body(*n.regions[0], params, batch, none);
      if (none[0]) throw InternalError("vmap: while predicate became batched after the fixed point");
      std::vector<V> in;
      for (std::size_t i = 0; i < x.size(); ++i) in.push_back(i >= nc && params[i] && !bx[i] ? lift(e, batch, x[i]) : x[i]);
      ob.assign(params.begin() + static_cast<std::ptrdiff_t>(nc), params.end());
      const Regions regions{std::make_shared<const Graph>(std::move(cond)), std::make_shared<const Graph>(std::move(body))};
      return b.emit(Op::While, in, with_example_loop(n, batch, regions, params, ob), regions);
    }
    default:
      throw InternalError("vmap_region: not a region op");
  }
}

}  // namespace qb
