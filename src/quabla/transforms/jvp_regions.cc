// JVP of cond, scan and while: the bodies are differentiated with the same transform and
// the node gets tangent operands beside the primal ones (tangent consts after the consts,
// tangent carries after the carries, tangent xs after the xs), so one node computes both.
// Which carries get a tangent is a fixed point: those whose init has one, or that a step
// makes depend on one. Known-zero tangents stay symbolic.
#include <algorithm>
#include <memory>

#include "quabla/ir/errors.h"
#include "quabla/ir/regions.h"
#include "quabla/transforms/jvp.h"
#include "quabla/transforms/region_rules.h"

namespace qb {

using ad::Emit;
using ad::V;
using T = std::optional<V>;

namespace {

std::unique_ptr<bool[]> to_flags(const std::vector<bool>& v) {
  auto f = std::make_unique<bool[]>(v.size() + 1);
  for (std::size_t i = 0; i < v.size(); ++i) f[i] = v[i];
  return f;
}

Graph jvp_of(const Graph& g, const std::vector<bool>& wrt, std::vector<bool>* nonzero) {
  auto f = to_flags(wrt);
  return jvp(g, std::span<const bool>(f.get(), wrt.size()), nonzero);
}

// Positions of the float results of g among the tangent results of jvp(g).
std::vector<int> tangent_index(const Graph& g) {
  std::vector<int> idx;
  int k = 0;
  for (auto r : g.results) idx.push_back(has_tangent(g.type(r)) ? k++ : -1);
  return idx;
}

}  // namespace

void jvp_region(Emit& e, const Node& n, const std::vector<V>& x, const std::vector<T>& t, std::vector<V>& outs,
                std::vector<T>& tangents) {
  Builder& b = e.b;
  outs.clear();
  tangents.assign(n.outputs.size(), std::nullopt);
  switch (n.op) {
    case Op::Cond: {
      // Tangent operands: those with a tangent. Result tangents: nonzero in either branch.
      const std::size_t no = x.size() - 1;
      std::vector<bool> wrt;
      for (std::size_t i = 0; i < no; ++i) wrt.push_back(t[1 + i].has_value());
      std::vector<Graph> j(2);
      std::vector<bool> nz(n.outputs.size(), false);
      for (int br = 0; br < 2; ++br) {
        std::vector<bool> nzb;
        j[br] = jvp_of(*n.regions[br], wrt, &nzb);
        const auto ti = tangent_index(*n.regions[br]);
        for (std::size_t k = 0; k < ti.size(); ++k)
          if (ti[k] >= 0 && nzb[ti[k]]) nz[k] = true;
      }
      const auto ti = tangent_index(*n.regions[0]);
      std::vector<ValueType> ptypes = param_types(*n.regions[0]);
      std::vector<V> in{x[0]};
      in.insert(in.end(), x.begin() + 1, x.end());
      for (std::size_t i = 0; i < no; ++i)
        if (wrt[i]) {
          ptypes.push_back(e.type(*t[1 + i]));
          in.push_back(*t[1 + i]);
        }
      const std::size_t nr = n.outputs.size();
      Regions regions;
      for (int br = 0; br < 2; ++br) {
        const Graph& jb = j[br];
        regions.push_back(std::make_shared<const Graph>(make_graph(ptypes, [&](Builder& bb, std::span<const V> ps) {
          auto r = inline_into(bb, jb, ps);
          std::vector<V> res(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(nr));
          for (std::size_t k = 0; k < nr; ++k)
            if (nz[k]) res.push_back(r[nr + ti[k]]);
          return res;
        })));
      }
      auto all = b.emit(Op::Cond, in, n.attrs, std::move(regions));
      outs.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(nr));
      std::size_t k2 = nr;
      for (std::size_t k = 0; k < nr; ++k)
        if (nz[k]) tangents[k] = all[k2++];
      return;
    }
    case Op::Checkpoint: {
      // A checkpoint of the JVP'd body: primal outputs, then the nonzero tangents.
      std::vector<bool> wrt;
      for (const auto& ti : t) wrt.push_back(ti.has_value());
      std::vector<bool> nz;
      const Graph j = jvp_of(*n.regions[0], wrt, &nz);
      const auto ti = tangent_index(*n.regions[0]);
      std::vector<ValueType> ptypes = param_types(*n.regions[0]);
      std::vector<V> in(x.begin(), x.end());
      for (std::size_t i = 0; i < x.size(); ++i)
        if (wrt[i]) {
          ptypes.push_back(e.type(*t[i]));
          in.push_back(*t[i]);
        }
      const std::size_t nr = n.outputs.size();
      Regions regions;
      regions.push_back(std::make_shared<const Graph>(make_graph(ptypes, [&](Builder& bb, std::span<const V> ps) {
        auto r = inline_into(bb, j, ps);
        std::vector<V> res(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(nr));
        for (std::size_t k = 0; k < nr; ++k)
          if (ti[k] >= 0 && nz[static_cast<std::size_t>(ti[k])]) res.push_back(r[nr + static_cast<std::size_t>(ti[k])]);
        return res;
      })));
      auto all = b.emit(Op::Checkpoint, in, n.attrs, std::move(regions));
      outs.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(nr));
      std::size_t k2 = nr;
      for (std::size_t k = 0; k < nr; ++k)
        if (ti[k] >= 0 && nz[static_cast<std::size_t>(ti[k])]) tangents[k] = all[k2++];
      return;
    }
    case Op::CustomVjpLin:
      throw ValueError("can't apply forward-mode differentiation to a qb.custom_vjp function (its derivative is "
                       "only defined in reverse mode); use grad/vjp/jacrev, or a custom_jvp rule");
    case Op::CustomVjp: {
      // fwd, inlined, gives the outputs and the residuals; the output tangents are one
      // custom_vjp_lin node (linear in the argument tangents) that transposes to bwd.
      const auto na = static_cast<std::size_t>(n.attrs.num_consts), nres = static_cast<std::size_t>(n.attrs.num_carry);
      for (std::size_t i = na; i < x.size(); ++i) {
        if (t[i]) {
          throw ValueError("custom_vjp: the function closes over a value that is being differentiated; bwd cannot "
                           "return its cotangent, so pass that value as an argument (as JAX requires)");
        }
      }
      auto r = inline_into(b, *n.regions[1], x);
      const std::size_t no = n.outputs.size();
      outs.assign(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(no));
      std::vector<V> in(r.begin() + static_cast<std::ptrdiff_t>(no), r.begin() + static_cast<std::ptrdiff_t>(no + nres));
      in.insert(in.end(), x.begin(), x.end());
      for (std::size_t i = 0; i < na; ++i) {
        if (!has_tangent(e.type(x[i]))) continue;
        ValueType tt = e.type(x[i]);
        tt.weak = false;
        in.push_back(t[i] ? *t[i] : e.zeros(tt));
      }
      Attrs la;
      la.num_consts = static_cast<std::int64_t>(nres + x.size());
      la.num_carry = static_cast<std::int64_t>(nres);
      auto lin = b.emit(Op::CustomVjpLin, in, std::move(la), Regions{n.regions[2]});
      std::size_t k2 = 0;
      for (std::size_t k = 0; k < no; ++k)
        if (has_tangent(e.type(outs[k]))) tangents[k] = lin[k2++];
      return;
    }
    case Op::LinearSolve: {
      // x = A^-1 b, so x' = A^-1 (b' - A'(x)): A'(x) is matvec differentiated in the consts
      // at x; the tangent is one more linear_solve with the same regions.
      const auto nb = static_cast<std::size_t>(n.attrs.num_consts);
      outs = b.emit(Op::LinearSolve, x, n.attrs, n.regions);
      std::vector<bool> wrt(x.size(), false);
      bool any_const = false, any = false;
      for (std::size_t i = 0; i < x.size(); ++i) {
        if (!t[i]) continue;
        any = true;
        if (i >= nb) wrt[i] = any_const = true;
      }
      if (!any) return;
      std::vector<T> rhs(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(nb));
      if (any_const) {
        std::vector<bool> nz;
        const Graph j = jvp_of(*n.regions[2], wrt, &nz);
        std::vector<V> args(outs.begin(), outs.begin() + static_cast<std::ptrdiff_t>(nb));  // x, not the aux outputs
        args.insert(args.end(), x.begin() + static_cast<std::ptrdiff_t>(nb), x.end());
        for (std::size_t i = nb; i < x.size(); ++i)
          if (wrt[i]) args.push_back(*t[i]);
        auto r = inline_into(b, j, args);
        for (std::size_t k = 0; k < nb; ++k) {
          if (!nz[k]) continue;  // every result of matvec is float (x has b's float types)
          const V d = r[nb + k];
          rhs[k] = rhs[k] ? e.sub(*rhs[k], d) : e.neg(d);
        }
      }
      if (std::none_of(rhs.begin(), rhs.end(), [](const T& v) { return v.has_value(); })) return;
      std::vector<V> in;
      for (std::size_t k = 0; k < nb; ++k) {
        ValueType tt = e.type(outs[k]);
        tt.weak = false;
        in.push_back(rhs[k] ? *rhs[k] : e.zeros(tt));
      }
      in.insert(in.end(), x.begin() + static_cast<std::ptrdiff_t>(nb), x.end());
      auto dx = b.emit(Op::LinearSolve, in, n.attrs, n.regions);
      for (std::size_t k = 0; k < nb; ++k) tangents[k] = dx[k];
      return;
    }
    case Op::CustomJvp: {
      // The user's rule, inlined: its outputs are the primal outputs and their tangents.
      // Known-zero tangents of float args are passed as zeros (JAX's default); a captured
      // (closed-over) operand with a tangent has no place in the rule, so that is an error.
      const auto na = static_cast<std::size_t>(n.attrs.num_consts);
      for (std::size_t i = na; i < x.size(); ++i) {
        if (t[i]) {
          throw ValueError("custom_jvp: the function closes over a value that is being differentiated; the rule "
                           "cannot see its tangent, so pass that value as an argument (as JAX requires)");
        }
      }
      std::vector<V> args(x.begin(), x.end());
      for (std::size_t i = 0; i < na; ++i) {
        if (!has_tangent(e.type(x[i]))) continue;
        ValueType tt = e.type(x[i]);
        tt.weak = false;
        args.push_back(t[i] ? *t[i] : e.zeros(tt));
      }
      // The primal outputs come from the node itself (so their derivatives at the next
      // order use the rule again, as in JAX); the rule's own primal outputs are dead code.
      outs = b.emit(Op::CustomJvp, x, n.attrs, n.regions);
      if (n.attrs.mode & 1) args.insert(args.end(), outs.begin(), outs.end());
      auto r = inline_into(b, *n.regions[1], args);
      const std::size_t no = n.outputs.size();
      std::size_t k2 = no;
      for (std::size_t k = 0; k < no; ++k)
        if (has_tangent(e.type(outs[k]))) tangents[k] = r[k2++];
      return;
    }
    case Op::Scan: case Op::While: {
      const bool scan = n.op == Op::Scan;
      const auto nc = static_cast<std::size_t>(n.attrs.num_consts);
      const std::size_t nk = scan ? static_cast<std::size_t>(n.attrs.num_carry) : x.size() - nc;
      const std::size_t nx = x.size() - nc - nk;
      const Graph& body = *n.regions[scan ? 0 : 1];
      const std::size_t off = scan ? 1 : 0;  // the step index parameter
      // wrt per body parameter; carries reach a fixed point.
      std::vector<bool> wrt(body.params.size(), false);
      for (std::size_t i = 0; i < x.size(); ++i) wrt[off + i] = t[i].has_value();
      Graph j;
      std::vector<bool> nz;
      for (;;) {
        j = jvp_of(body, wrt, &nz);
        const auto ti = tangent_index(body);
        bool changed = false;
        for (std::size_t k = 0; k < nk; ++k) {
          if (ti[k] >= 0 && nz[ti[k]] && !wrt[off + nc + k]) {
            wrt[off + nc + k] = true;
            changed = true;
          }
        }
        if (!changed) break;
      }
      const auto ti = tangent_index(body);
      // jvp(body)'s parameters: body params, then a tangent per wrt param in order.
      std::vector<std::size_t> tan_param(body.params.size(), 0);
      std::size_t np = body.params.size();
      for (std::size_t i = 0; i < body.params.size(); ++i)
        if (wrt[i]) tan_param[i] = np++;
      // The new node's operand groups, each primal then tangent.
      std::vector<V> in;
      std::vector<ValueType> ptypes;
      if (scan) ptypes.push_back(scan_index_type());
      std::vector<std::size_t> order;  // new body param -> jvp(body) param
      if (scan) order.push_back(0);
      std::int64_t new_consts = 0, new_carry = 0;
      auto group = [&](std::size_t begin, std::size_t count, std::int64_t* counter) {
        for (std::size_t i = begin; i < begin + count; ++i) {
          in.push_back(x[i]);
          ptypes.push_back(body.type(body.params[off + i]));
          order.push_back(off + i);
        }
        for (std::size_t i = begin; i < begin + count; ++i) {
          if (!wrt[off + i]) continue;
          const ValueType pt = body.type(body.params[off + i]);
          V tv = t[i] ? *t[i] : e.zeros(ValueType{pt.dtype, e.type(x[i]).shape, false});
          in.push_back(tv);
          ptypes.push_back(ValueType{pt.dtype, pt.shape, false});
          order.push_back(tan_param[off + i]);
        }
        if (counter) {
          *counter = 0;
          for (std::size_t i = begin; i < begin + count; ++i) *counter += 1 + (wrt[off + i] ? 1 : 0);
        }
      };
      group(0, nc, &new_consts);
      group(nc, nk, &new_carry);
      group(nc + nk, nx, nullptr);
      const std::size_t nr = body.results.size();
      std::vector<bool> y_tan(nr, false);
      for (std::size_t jr = nk; jr < nr; ++jr) y_tan[jr] = ti[jr] >= 0 && nz[ti[jr]];
      auto new_body = [&](Builder& bb, std::span<const V> ps) {
        std::vector<V> args(np);
        for (std::size_t i = 0; i < order.size(); ++i) args[order[i]] = ps[i];
        auto r = inline_into(bb, j, args);
        std::vector<V> res(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(nk));
        for (std::size_t k = 0; k < nk; ++k)
          if (wrt[off + nc + k]) res.push_back(r[nr + ti[k]]);
        for (std::size_t jr = nk; jr < nr; ++jr) res.push_back(r[jr]);
        for (std::size_t jr = nk; jr < nr; ++jr)
          if (y_tan[jr]) res.push_back(r[nr + ti[jr]]);
        return res;
      };
      Attrs a = n.attrs;
      a.num_consts = new_consts;
      a.num_carry = new_carry;
      Regions regions;
      if (!scan) {
        // cond reads the primal consts and carries only.
        const Graph& cond = *n.regions[0];
        std::vector<std::size_t> primal_pos;
        for (std::size_t i = 0; i < order.size(); ++i)
          if (order[i] < body.params.size()) primal_pos.push_back(i);
        regions.push_back(std::make_shared<const Graph>(make_graph(ptypes, [&](Builder& bb, std::span<const V> ps) {
          std::vector<V> args;
          for (auto p : primal_pos) args.push_back(ps[p]);
          return inline_into(bb, cond, args);
        })));
      }
      regions.push_back(std::make_shared<const Graph>(make_graph(ptypes, new_body)));
      auto all = b.emit(n.op, in, std::move(a), std::move(regions));
      std::size_t pos = 0;
      for (std::size_t k = 0; k < nk; ++k) {
        outs.push_back(all[pos++]);
      }
      for (std::size_t k = 0; k < nk; ++k)
        if (wrt[off + nc + k]) tangents[k] = all[pos++];
      for (std::size_t jr = nk; jr < nr; ++jr) outs.push_back(all[pos++]);
      for (std::size_t jr = nk; jr < nr; ++jr)
        if (y_tan[jr]) tangents[jr] = all[pos++];
      return;
    }
    default:
      throw InternalError("jvp_region: not a region op");
  }
}

}  // namespace qb
