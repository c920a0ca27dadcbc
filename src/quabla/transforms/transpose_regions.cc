// Reverse mode through cond and scan (while has none: its trip count is unknown, so there
// is nothing to run backwards over).
//
// In a JVP graph a region node computes primal and tangent values together. Transposing it
// splits it: the forward half runs the primal part only; the backward half runs the
// transposed body. For a scan the transposed step needs the primal carry at each step.
// When all T of them fit a budget (64 MiB; small-state loops such as ODE integrations) the
// forward half keeps them (a tape) and nothing is recomputed. Otherwise the forward half
// stores a checkpoint every B ~ sqrt(T) steps (an outer scan over blocks of an inner scan),
// and the backward half, block by block in reverse, recomputes the block's carries from
// its checkpoint and then runs the transposed body backwards over them: about sqrt(T)
// checkpoints plus one block of carries live at once, for one extra forward pass. Steps
// past the last whole block form a tail handled the same way. Everything is emitted as
// ordinary scans, so the result is differentiable and batchable again.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>

#include "quabla/ir/errors.h"
#include "quabla/ir/regions.h"
#include "quabla/transforms/jvp.h"
#include "quabla/transforms/region_rules.h"
#include "quabla/transforms/simplify.h"
#include "quabla/transforms/vjp.h"

namespace qb {

using ad::Emit;
using ad::V;
using T = std::optional<V>;

namespace {

// Scans of at most this many steps are one block (recomputed whole in the backward pass).
constexpr std::int64_t kSingleBlockSteps = 8;

// A scan whose primal carries over all its steps take at most this many bytes keeps them
// all (a tape) instead of sqrt(T) checkpoints: no recomputation. QUABLA_SCAN_TAPE_BYTES
// overrides it (0: always checkpoint).
std::int64_t tape_budget_bytes() {
  constexpr std::int64_t kDefault = 64ll << 20;
  const char* v = std::getenv("QUABLA_SCAN_TAPE_BYTES");
  if (!v || !*v) return kDefault;
  char* end = nullptr;
  const long long b = std::strtoll(v, &end, 10);
  return end && *end == '\0' && b >= 0 ? static_cast<std::int64_t>(b) : kDefault;
}

std::unique_ptr<bool[]> to_flags(const std::vector<bool>& v) {
  auto f = std::make_unique<bool[]>(v.size() + 1);
  for (std::size_t i = 0; i < v.size(); ++i) f[i] = v[i];
  return f;
}

// g with only the kept parameters and results (the dropped parameters must not reach a
// kept result).
Graph restrict_graph(const Graph& g, const std::vector<bool>& keep_params, const std::vector<bool>& keep_results) {
  std::vector<ValueType> types;
  for (std::size_t i = 0; i < g.params.size(); ++i)
    if (keep_params[i]) types.push_back(g.type(g.params[i]));
  Graph w = make_graph(types, [&](Builder& b, std::span<const V> ps) {
    Emit e{b};
    std::vector<V> args;
    std::size_t k = 0;
    for (std::size_t i = 0; i < g.params.size(); ++i) {
      ValueType t = g.type(g.params[i]);
      t.weak = false;
      args.push_back(keep_params[i] ? ps[k++] : e.zeros(t));
    }
    auto r = inline_into(b, g, args);
    std::vector<V> out;
    for (std::size_t j = 0; j < r.size(); ++j)
      if (keep_results[j]) out.push_back(r[j]);
    return out;
  });
  return eliminate_dead_code(w);
}

// transpose_linear returning only the cotangents of the linear parameters.
Graph transpose_only(const Graph& g, const std::vector<bool>& linear, const std::vector<bool>& seed) {
  auto lf = to_flags(linear);
  auto sf = to_flags(seed);
  std::vector<bool> none(g.results.size(), false);
  auto pf = to_flags(none);
  return transpose_linear(g, std::span<const bool>(lf.get(), linear.size()), std::span<const bool>(sf.get(), seed.size()),
                          std::span<const bool>(pf.get(), none.size()));
}

template <class X>
std::vector<X> pick(const std::vector<X>& v, std::size_t begin, std::size_t count, const std::vector<bool>& mask,
                    bool want) {
  std::vector<X> out;
  for (std::size_t i = begin; i < begin + count; ++i)
    if (mask[i] == want) out.push_back(v[i]);
  return out;
}

void append(std::vector<V>& a, const std::vector<V>& b) { a.insert(a.end(), b.begin(), b.end()); }

std::vector<ValueType> types_of(Emit& e, const std::vector<V>& vs) {
  std::vector<ValueType> t;
  for (V v : vs) {
    ValueType x = e.type(v);
    x.weak = false;
    t.push_back(std::move(x));
  }
  return t;
}

Shape drop_lead(const Shape& s) { return Shape(s.begin() + 1, s.end()); }

// x [n*b, ...] as [n, b, ...] and back.
V split_lead(Emit& e, V x, std::int64_t n, std::int64_t b) {
  Shape s = drop_lead(e.type(x).shape);
  s.insert(s.begin(), {n, b});
  return e.reshape(x, s);
}
V merge_lead(Emit& e, V x) {
  const Shape s = e.type(x).shape;
  Shape m{s[0] * s[1]};
  m.insert(m.end(), s.begin() + 2, s.end());
  return e.reshape(x, m);
}

V concat_rows(Emit& e, V a, V b) {
  Attrs at;
  at.axis = 0;
  std::vector<V> in{a, b};
  return e.b.emit(Op::Concat, in, std::move(at))[0];
}

// What the scan rules share: the split of the node into its non-linear (primal) part P and
// the transposed step TB.
struct ScanParts {
  const Node& n;
  std::size_t nc, nk, nx, ny;
  std::vector<bool> lin_c, lin_k, lin_x, lin_y;
  Graph primal;      // (i, C_n, K_n, X_n) -> (K_n', Y_n)
  Graph transposed;  // (i, C_n, K_n, X_n, ct K_l', ct Y_l) -> (ct C_l, ct K_l, ct X_l)
  std::size_t nk_n = 0, nk_l = 0, nc_l = 0, nx_l = 0;
  std::int64_t tape_step_bytes = 0;  // the primal carries of one step

  ScanParts(const Node& node, const std::vector<bool>& lin, const std::vector<bool>& lin_out) : n(node) {
    const ScanLayout l = ScanLayout::of(n);
    nc = l.consts, nk = l.carry, nx = l.xs, ny = l.ys;
    lin_c.assign(lin.begin(), lin.begin() + static_cast<std::ptrdiff_t>(nc));
    lin_k.assign(lin_out.begin(), lin_out.begin() + static_cast<std::ptrdiff_t>(nk));
    lin_x.assign(lin.begin() + static_cast<std::ptrdiff_t>(nc + nk), lin.end());
    lin_y.assign(lin_out.begin() + static_cast<std::ptrdiff_t>(nk), lin_out.end());
    for (bool f : lin_k) (f ? nk_l : nk_n) += 1;
    for (bool f : lin_c) nc_l += f;
    for (bool f : lin_x) nx_l += f;
    const Graph& body = *n.regions[0];
    std::vector<bool> mask{false};
    mask.insert(mask.end(), lin_c.begin(), lin_c.end());
    mask.insert(mask.end(), lin_k.begin(), lin_k.end());
    mask.insert(mask.end(), lin_x.begin(), lin_x.end());
    std::vector<bool> keep_p, keep_r, seed;
    for (bool f : mask) keep_p.push_back(!f);
    for (bool f : lin_k) {
      keep_r.push_back(!f);
      seed.push_back(f);
    }
    for (bool f : lin_y) {
      keep_r.push_back(!f);
      seed.push_back(f);
    }
    primal = restrict_graph(body, keep_p, keep_r);
    // The transposed step replays the primal step's non-linear part; its effects (qb.debug)
    // ran in the forward half already.
    transposed = without_effects(transpose_only(body, mask, seed));
    for (std::size_t k = 0; k < nk; ++k) {
      if (lin_k[k]) continue;
      const ValueType& t = body.type(body.params[1 + nc + k]);
      tape_step_bytes += num_elements(t.shape) * static_cast<std::int64_t>(itemsize(t.dtype));
    }
  }

  // A scan of `len` steps of a step graph over (consts..., base) whose body index is
  // base + local step; `body` maps (index, consts, carry, xs) -> results.
  std::vector<V> scan(Emit& e, std::int64_t len, bool reverse, const std::vector<V>& consts, V base,
                      const std::vector<V>& carry, const std::vector<V>& xs,
                      const std::function<std::vector<V>(Builder&, V, std::span<const V>, std::span<const V>,
                                                         std::span<const V>)>& body) const {
    std::vector<ValueType> pt{scan_index_type()};
    append_types(e, pt, consts);
    pt.push_back(ValueType{DType::f64, {}, false});
    append_types(e, pt, carry);
    for (V x : xs) pt.push_back(ValueType{e.type(x).dtype, drop_lead(e.type(x).shape), false});
    Graph g = make_graph(pt, [&](Builder& b, std::span<const V> ps) {
      Emit be{b};
      const V idx = be.add(ps[0], ps[1 + consts.size()]);
      return body(b, idx, ps.subspan(1, consts.size()), ps.subspan(2 + consts.size(), carry.size()),
                  ps.subspan(2 + consts.size() + carry.size()));
    });
    std::vector<V> in = consts;
    in.push_back(base);
    append(in, carry);
    append(in, xs);
    Attrs a;
    a.length = len;
    a.start = 0;
    a.reverse = reverse;
    a.num_consts = static_cast<std::int64_t>(consts.size() + 1);
    a.num_carry = static_cast<std::int64_t>(carry.size());
    return e.b.emit(Op::Scan, in, std::move(a), Regions{std::make_shared<const Graph>(std::move(g))});
  }

  static void append_types(Emit& e, std::vector<ValueType>& pt, const std::vector<V>& vs) {
    for (auto& t : types_of(e, vs)) pt.push_back(t);
  }

  std::vector<V> call_primal(Builder& b, V idx, std::span<const V> c, std::span<const V> k, std::span<const V> x) const {
    std::vector<V> args{idx};
    args.insert(args.end(), c.begin(), c.end());
    args.insert(args.end(), k.begin(), k.end());
    args.insert(args.end(), x.begin(), x.end());
    return inline_into(b, primal, args);
  }

  // Forward over one block: (K_end..., Y_n blocks...).
  std::vector<V> fwd_block(Emit& e, std::int64_t len, const std::vector<V>& cn, V base, const std::vector<V>& kn,
                           const std::vector<V>& xn) const {
    return scan(e, len, n.attrs.reverse, cn, base, kn, xn,
                [&](Builder& b, V idx, std::span<const V> c, std::span<const V> k, std::span<const V> x) {
                  return call_primal(b, idx, c, k, x);
                });
  }

  // Forward over all steps keeping the carry entering each one: (K_end..., Y_n..., tape...).
  std::vector<V> fwd_tape(Emit& e, std::int64_t len, const std::vector<V>& cn, V base, const std::vector<V>& kn,
                          const std::vector<V>& xn) const {
    return scan(e, len, n.attrs.reverse, cn, base, kn, xn,
                [&](Builder& b, V idx, std::span<const V> c, std::span<const V> k, std::span<const V> x) {
                  auto r = call_primal(b, idx, c, k, x);
                  r.insert(r.end(), k.begin(), k.end());
                  return r;
                });
  }

  // Backward over one block from its checkpoint: (ct K_l at the block start..., acc...,
  // ct X_l rows...).
  std::vector<V> bwd_block(Emit& e, const Graph& step_t, std::int64_t len, const std::vector<V>& cn, V base,
                           const std::vector<V>& ckpt, const std::vector<V>& xn, const std::vector<V>& ctk,
                           const std::vector<V>& acc, const std::vector<V>& cty) const {
    auto tape_out = scan(e, len, n.attrs.reverse, cn, base, ckpt, xn,
                         [&](Builder& b, V idx, std::span<const V> c, std::span<const V> k, std::span<const V> x) {
                           auto r = call_primal(b, idx, c, k, x);
                           std::vector<V> res(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(nk_n));
                           res.insert(res.end(), k.begin(), k.end());
                           return res;
                         });
    std::vector<V> tape(tape_out.begin() + static_cast<std::ptrdiff_t>(nk_n), tape_out.end());
    return bwd_over_tape(e, step_t, len, cn, base, tape, xn, ctk, acc, cty);
  }

  // The transposed steps, backwards over the primal carries entering each step (the tape).
  std::vector<V> bwd_over_tape(Emit& e, const Graph& step_t, std::int64_t len, const std::vector<V>& cn, V base,
                               const std::vector<V>& tape, const std::vector<V>& xn, const std::vector<V>& ctk,
                               const std::vector<V>& acc, const std::vector<V>& cty) const {
    std::vector<V> carry = ctk;
    append(carry, acc);
    std::vector<V> xs = tape;
    append(xs, xn);
    append(xs, cty);
    const std::size_t nkl = ctk.size(), ncl = acc.size(), nkn = nk_n, nxn = xn.size();
    return scan(e, len, !n.attrs.reverse, cn, base, carry, xs,
                [&, nkl, ncl, nkn, nxn](Builder& b, V idx, std::span<const V> c, std::span<const V> k,
                                        std::span<const V> x) {
                  Emit be{b};
                  std::vector<V> args{idx};
                  args.insert(args.end(), c.begin(), c.end());
                  args.insert(args.end(), x.begin(), x.begin() + static_cast<std::ptrdiff_t>(nkn + nxn));  // K_t, X_t
                  args.insert(args.end(), k.begin(), k.begin() + static_cast<std::ptrdiff_t>(nkl));        // ct K
                  args.insert(args.end(), x.begin() + static_cast<std::ptrdiff_t>(nkn + nxn), x.end());     // ct Y_t
                  auto r = inline_into(b, step_t, args);  // ct C_l, ct K_l, ct X_l
                  std::vector<V> res(r.begin() + static_cast<std::ptrdiff_t>(ncl),
                                     r.begin() + static_cast<std::ptrdiff_t>(ncl + nkl));
                  for (std::size_t i = 0; i < ncl; ++i) res.push_back(be.add(k[nkl + i], r[i]));
                  res.insert(res.end(), r.begin() + static_cast<std::ptrdiff_t>(ncl + nkl), r.end());
                  return res;
                });
  }

  // The transposed step for the cotangents that are not symbolic zeros (`given`: one flag per
  // node output). A linear carry's cotangent stays zero at every step when its final one
  // is zero and, within the step, its value reaches no output whose cotangent is nonzero;
  // such carries (found by a fixed point) and the zero ys are left out of the transposition,
  // so a zero cotangent never meets a NaN or inf partial (0 * inf would be NaN), as with
  // symbolic zeros outside loops. The result keeps the full parameter layout of
  // `transposed`; the left-out cotangent parameters are unused.
  Graph live_transposed(const std::vector<bool>& given) const {
    const Graph& body = *n.regions[0];
    std::vector<bool> live(given.begin(), given.end());
    for (std::size_t j = 0; j < nk + ny; ++j) live[j] = live[j] && (j < nk ? lin_k[j] : lin_y[j - nk]);
    for (bool changed = true; changed;) {
      changed = false;
      for (std::size_t k = 0; k < nk; ++k) {
        if (live[k] || !lin_k[k]) continue;
        std::vector<bool> param(body.params.size(), false);
        param[1 + nc + k] = true;
        const auto reached = results_depending_on(body, param);
        for (std::size_t j = 0; j < nk + ny && !live[k]; ++j) live[k] = reached[j] && live[j];
        changed = changed || live[k];
      }
    }
    std::vector<bool> seed;
    bool all = true;
    for (std::size_t j = 0; j < nk + ny; ++j) {
      const bool lin_j = j < nk ? lin_k[j] : lin_y[j - nk];
      seed.push_back(lin_j && live[j]);
      all = all && (!lin_j || live[j]);
    }
    if (all) return transposed;
    std::vector<bool> mask{false};
    mask.insert(mask.end(), lin_c.begin(), lin_c.end());
    mask.insert(mask.end(), lin_k.begin(), lin_k.end());
    mask.insert(mask.end(), lin_x.begin(), lin_x.end());
    const Graph inner = transpose_only(body, mask, seed);
    std::vector<ValueType> pt;
    for (std::size_t i = 0; i < mask.size(); ++i)
      if (!mask[i]) pt.push_back(body.type(body.params[i]));
    const std::size_t n_primal = pt.size();
    std::vector<std::size_t> ct_live;  // positions among the ct parameters that are kept
    std::size_t ct = 0;
    for (std::size_t j = 0; j < nk + ny; ++j) {
      if (!(j < nk ? lin_k[j] : lin_y[j - nk])) continue;
      ValueType t = body.type(body.results[j]);
      t.weak = false;
      pt.push_back(t);
      if (seed[j]) ct_live.push_back(ct);
      ++ct;
    }
    for (auto& t : pt) t.weak = false;
    return make_graph(pt, [&](Builder& b, std::span<const V> ps) {
      std::vector<V> args(ps.begin(), ps.begin() + static_cast<std::ptrdiff_t>(n_primal));
      for (std::size_t c : ct_live) args.push_back(ps[n_primal + c]);
      return inline_into(b, inner, args);
    });
  }

  // How the forward half keeps what the backward half needs: a tail of steps (the whole
  // loop when short or when `full`), recomputed from its checkpoint unless `full` (the
  // forward half stores its tape), after `blocks` blocks of `block` steps, each recomputed
  // from its checkpoint.
  struct Plan {
    std::int64_t block = 0, blocks = 0, tail = 0;
    bool full = false;
  };
  Plan plan() const {
    Plan p;
    const std::int64_t len = n.attrs.length;
    if (len <= kSingleBlockSteps) {
      p.tail = len;
      return p;
    }
    if (tape_step_bytes == 0 || len <= tape_budget_bytes() / tape_step_bytes) {
      p.tail = len;
      p.full = true;
      return p;
    }
    p.block = static_cast<std::int64_t>(std::ceil(std::sqrt(static_cast<double>(len))));
    p.blocks = len / p.block;
    p.tail = len - p.blocks * p.block;
    return p;
  }
};

V f64_const(Emit& e, double v) { return e.scalar(v, DType::f64); }

}  // namespace

namespace {

// A region node none of whose outputs is linear (linear operands reach no output, or only a
// while loop's trip count): the node without its linear operands, nothing to transpose.
std::vector<V> without_linear_operands(Emit& e, const Node& n, const std::vector<bool>& lin, const std::vector<V>& x) {
  std::vector<V> in;
  std::vector<bool> keep;  // per region parameter
  Attrs a = n.attrs;
  if (n.op == Op::Scan) keep.push_back(true);  // the step index
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (n.op == Op::Cond && i == 0) {
      in.push_back(x[0]);  // the predicate is no region parameter
      continue;
    }
    keep.push_back(!lin[i]);
    if (!lin[i]) {
      in.push_back(x[i]);
      continue;
    }
    const auto k = static_cast<std::int64_t>(i);
    if (n.op == Op::Cond) continue;
    if (k < n.attrs.num_consts) {
      --a.num_consts;
    } else if (n.op == Op::While || k < n.attrs.num_consts + n.attrs.num_carry) {
      // A linear carry makes its output linear (the fixed point), so it cannot be here.
      throw InternalError("transpose: a linear loop carry with no linear output");
    }  // else: a scan's xs operand the body never reads
  }
  Regions regions;
  for (const auto& r : n.regions)
    regions.push_back(std::make_shared<const Graph>(restrict_graph(*r, keep, std::vector<bool>(r->results.size(), true))));
  return e.b.emit(n.op, in, std::move(a), std::move(regions));
}

// The forward half of a node whose regions take its operands from `first` on (cond: after
// the predicate, which is kept as is): the op over the non-linear operands, each region
// restricted to the non-linear parameters and results. Returns, per output, the non-linear
// ones (0 for the linear outputs).
std::vector<V> emit_nonlinear_half(Emit& e, const Node& n, std::size_t first, const std::vector<bool>& lin,
                                   const std::vector<bool>& lin_out, const std::vector<V>& x) {
  std::vector<bool> keep_p, keep_r;
  for (std::size_t i = first; i < lin.size(); ++i) keep_p.push_back(!lin[i]);
  for (bool f : lin_out) keep_r.push_back(!f);
  Regions regions;
  for (const auto& r : n.regions) regions.push_back(std::make_shared<const Graph>(restrict_graph(*r, keep_p, keep_r)));
  std::vector<V> in(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(first));
  for (std::size_t i = first; i < x.size(); ++i)
    if (!lin[i]) in.push_back(x[i]);
  auto outs = e.b.emit(n.op, in, n.attrs, std::move(regions));
  std::vector<V> nonlinear(n.outputs.size(), 0);
  std::size_t k = 0;
  for (std::size_t j = 0; j < lin_out.size(); ++j)
    if (!lin_out[j]) nonlinear[j] = outs[k++];
  return nonlinear;
}

// Its backward half: the op over the kept and non-linear operands and the linear outputs'
// cotangents, each region transposed (recomputing what it needs from the non-linear
// operands). Returns a cotangent per linear operand (nullopt elsewhere). `bodies`, when
// given, replace the node's regions: bodies whose extra trailing parameters take the
// `saved` values (what the forward half kept) instead of recomputing them.
std::vector<std::optional<V>> emit_transposed_half(Emit& e, const Graph& g, const Node& n, std::size_t first,
                                                   const std::vector<bool>& lin, const std::vector<bool>& lin_out,
                                                   const std::vector<V>& x,
                                                   const std::vector<std::optional<V>>& ct_out, Attrs attrs,
                                                   const Regions* bodies = nullptr,
                                                   const std::vector<V>& saved = {}) {
  std::vector<bool> linear(lin.begin() + static_cast<std::ptrdiff_t>(first), lin.end());
  linear.insert(linear.end(), saved.size(), false);
  Regions regions;
  for (const auto& r : bodies ? *bodies : n.regions)
    regions.push_back(std::make_shared<const Graph>(transpose_only(*r, linear, lin_out)));
  std::vector<V> in(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(first));
  for (std::size_t i = first; i < x.size(); ++i)
    if (!lin[i]) in.push_back(x[i]);
  append(in, saved);
  for (std::size_t j = 0; j < lin_out.size(); ++j) {
    if (!lin_out[j] || !has_tangent(g.type(n.outputs[j]))) continue;
    if (ct_out[j]) {
      in.push_back(*ct_out[j]);
    } else {
      ValueType t = g.type(n.outputs[j]);
      t.weak = false;
      in.push_back(e.zeros(t));
    }
  }
  auto cts = e.b.emit(n.op, in, std::move(attrs), std::move(regions));
  std::vector<std::optional<V>> out(n.inputs.size());
  std::size_t k = 0;
  for (std::size_t i = first; i < lin.size(); ++i)
    if (lin[i]) out[i] = cts[k++];
  return out;
}

// Checkpoint policies (a checkpoint node's attrs.mode): which values of the block the
// forward half keeps for the backward half, which otherwise recomputes everything.
enum CheckpointPolicy : std::int64_t { kSaveNothing = 0, kSaveDots = 1, kSaveDotsWithoutBatchDims = 2 };

// The values of a checkpoint body the policy saves: the outputs of its matrix products that
// do not depend on the linear (tangent) parameters, so they hold primal values only.
std::vector<V> saved_values(const Graph& body, const std::vector<bool>& linear, std::int64_t policy) {
  if (policy == kSaveNothing) return {};
  std::vector<bool> dep(body.values.size(), false);
  for (std::size_t i = 0; i < body.params.size(); ++i) dep[body.params[i]] = linear[i];
  std::vector<V> saved;
  for (const Node& n : body.nodes) {
    if (n.op == Op::Parameter) continue;
    std::vector<bool> in;
    bool any = false;
    for (V v : n.inputs) {
      in.push_back(dep[v]);
      any = any || dep[v];
    }
    if (any) {
      const auto out = output_dependence(n, in);
      for (std::size_t k = 0; k < n.outputs.size(); ++k) dep[n.outputs[k]] = out[k];
      continue;
    }
    if (n.op != Op::MatMul) continue;
    const bool batched = body.type(n.inputs[0]).shape.size() > 2 || body.type(n.inputs[1]).shape.size() > 2;
    if (policy == kSaveDots || !batched) saved.push_back(n.outputs[0]);
  }
  return saved;
}

// body with the saved values among its results (after its own).
Graph with_saved_results(const Graph& body, const std::vector<V>& saved) {
  Graph g = body;
  g.results.insert(g.results.end(), saved.begin(), saved.end());
  return g;
}

// body with one more parameter per saved value, read where the value was computed.
Graph with_saved_params(const Graph& body, const std::vector<V>& saved) {
  std::vector<ValueType> pt = param_types(body);
  for (V v : saved) {
    ValueType t = body.type(v);
    t.weak = false;
    pt.push_back(std::move(t));
  }
  std::vector<std::size_t> slot(body.values.size(), 0);  // 1 + index into saved
  for (std::size_t k = 0; k < saved.size(); ++k) slot[saved[k]] = k + 1;
  return eliminate_dead_code(make_graph(pt, [&](Builder& b, std::span<const V> ps) {
    std::vector<V> map(body.values.size(), 0);
    for (std::size_t i = 0; i < body.params.size(); ++i) map[body.params[i]] = ps[i];
    for (const Node& n : body.nodes) {
      if (n.op == Op::Parameter) continue;
      if (n.outputs.size() == 1 && slot[n.outputs[0]]) {
        map[n.outputs[0]] = ps[body.params.size() + slot[n.outputs[0]] - 1];
        continue;
      }
      std::vector<V> in;
      for (V v : n.inputs) in.push_back(map[v]);
      b.copy_node(body, n, in, map);
    }
    std::vector<V> out;
    for (V r : body.results) out.push_back(map[r]);
    return out;
  }));
}

}  // namespace

RegionResiduals transpose_region_forward(Emit& e, const Node& n, const std::vector<bool>& lin,
                                         const std::vector<bool>& lin_out, const std::vector<V>& x,
                                         std::vector<V>& nonlinear_outs) {
  nonlinear_outs.assign(n.outputs.size(), 0);
  if (std::none_of(lin_out.begin(), lin_out.end(), [](bool f) { return f; })) {
    nonlinear_outs = without_linear_operands(e, n, lin, x);
    return {};
  }
  switch (n.op) {
    case Op::CustomJvp: case Op::CustomVjp:
      throw InternalError("transpose: custom rule nodes are replaced by the JVP before any transpose");
    case Op::Checkpoint: {
      // The block's outputs, plus the values its policy saves (none by default: the
      // backward half recomputes the whole block).
      const Graph& body = *n.regions[0];
      const auto saved = saved_values(body, lin, n.attrs.mode);
      if (saved.empty()) {
        nonlinear_outs = emit_nonlinear_half(e, n, 0, lin, lin_out, x);
        return {};
      }
      std::vector<bool> keep_p, keep_r;
      for (bool f : lin) keep_p.push_back(!f);
      for (bool f : lin_out) keep_r.push_back(!f);
      keep_r.insert(keep_r.end(), saved.size(), true);
      Regions regions{std::make_shared<const Graph>(restrict_graph(with_saved_results(body, saved), keep_p, keep_r))};
      std::vector<V> in;
      for (std::size_t i = 0; i < x.size(); ++i)
        if (!lin[i]) in.push_back(x[i]);
      const auto outs = e.b.emit(n.op, in, n.attrs, std::move(regions));
      std::size_t k = 0;
      for (std::size_t j = 0; j < lin_out.size(); ++j)
        if (!lin_out[j]) nonlinear_outs[j] = outs[k++];
      RegionResiduals res;
      res.values.assign(outs.begin() + static_cast<std::ptrdiff_t>(k), outs.end());
      return res;
    }
    case Op::LinearSolve:
      if (n.attrs.mode & 1) {
        throw ValueError("custom_linear_solve: reverse-mode differentiation needs transpose_solve (or "
                         "symmetric=True for a symmetric operator); pass transpose_solve=, or use forward mode");
      }
      for (std::size_t i = static_cast<std::size_t>(n.attrs.num_consts); i < lin.size(); ++i)
        if (lin[i]) {
          throw ValueError("custom_linear_solve: the operator (matvec) depends linearly on a value being "
                           "differentiated; only the right-hand side may carry the linear part");
        }
      return {};  // every output is linear in b; the backward half is another solve
    case Op::CustomVjpLin:
      for (std::int64_t i = 0; i < n.attrs.num_consts; ++i)
        if (lin[static_cast<std::size_t>(i)]) throw InternalError("transpose: custom_vjp residuals are not linear");
      return {};  // every output is linear; the backward half reads the operands directly
    case Op::While:
      throw ValueError(
          "reverse-mode differentiation of qb.while_loop is not supported (a carry depends on the differentiated "
          "values and its trip count is only known at run time). Use qb.fori_loop(0, max_steps, body, init) with a bound on the steps, freezing the carry once done "
          "with qb.where(done, carry, new_carry); forward mode (qb.jvp, qb.jacfwd) does work through while_loop");
    case Op::Cond:
      nonlinear_outs = emit_nonlinear_half(e, n, 1, lin, lin_out, x);
      return {};
    case Op::Scan: {
      auto parts = std::make_shared<const ScanParts>(n, lin, lin_out);
      const ScanParts& sp = *parts;
      const auto plan = sp.plan();
      const std::vector<V> cn = pick(x, 0, sp.nc, lin, false);
      std::vector<V> kn;
      for (std::size_t k = 0; k < sp.nk; ++k)
        if (!sp.lin_k[k]) kn.push_back(x[sp.nc + k]);
      const std::vector<V> xn = pick(x, sp.nc + sp.nk, sp.nx, lin, false);
      const std::int64_t split = plan.blocks * plan.block;
      RegionResiduals res;
      res.derived = parts;
      std::vector<V> ys_blocked, ys_tail;
      auto run_blocked = [&](std::vector<V>& carry) {
        if (plan.blocks == 0) return;
        std::vector<V> xb;
        for (V v : xn) xb.push_back(split_lead(e, e.slice_rows(v, 0, split), plan.blocks, plan.block));
        std::vector<ValueType> pt{scan_index_type()};
        ScanParts::append_types(e, pt, cn);
        ScanParts::append_types(e, pt, carry);
        for (V v : xb) pt.push_back(ValueType{e.type(v).dtype, drop_lead(e.type(v).shape), false});
        const std::size_t ncn = cn.size(), nkn = carry.size();
        Graph outer = make_graph(pt, [&](Builder& b, std::span<const V> ps) {
          Emit be{b};
          const V base = be.add(be.mul(ps[0], f64_const(be, static_cast<double>(plan.block))),
                                f64_const(be, static_cast<double>(n.attrs.start)));
          std::vector<V> c(ps.begin() + 1, ps.begin() + 1 + static_cast<std::ptrdiff_t>(ncn));
          std::vector<V> k(ps.begin() + 1 + static_cast<std::ptrdiff_t>(ncn),
                           ps.begin() + 1 + static_cast<std::ptrdiff_t>(ncn + nkn));
          std::vector<V> xs(ps.begin() + 1 + static_cast<std::ptrdiff_t>(ncn + nkn), ps.end());
          auto r = sp.fwd_block(be, plan.block, c, base, k, xs);
          append(r, k);  // the checkpoint: the carry entering the block
          return r;
        });
        std::vector<V> in = cn;
        append(in, carry);
        append(in, xb);
        Attrs a;
        a.length = plan.blocks;
        a.reverse = n.attrs.reverse;
        a.num_consts = static_cast<std::int64_t>(ncn);
        a.num_carry = static_cast<std::int64_t>(nkn);
        auto outs = e.b.emit(Op::Scan, in, std::move(a), Regions{std::make_shared<const Graph>(std::move(outer))});
        carry.assign(outs.begin(), outs.begin() + static_cast<std::ptrdiff_t>(nkn));
        for (std::size_t j = nkn; j < outs.size() - nkn; ++j) ys_blocked.push_back(merge_lead(e, outs[j]));
        for (std::size_t j = outs.size() - nkn; j < outs.size(); ++j) res.values.push_back(outs[j]);
      };
      auto run_tail = [&](std::vector<V>& carry) {
        if (plan.tail == 0 && plan.blocks > 0) return;
        std::vector<V> xt;
        for (V v : xn) xt.push_back(e.slice_rows(v, split, n.attrs.length));
        if (plan.full) {  // the tape instead of the checkpoint
          auto outs = sp.fwd_tape(e, plan.tail, cn, f64_const(e, static_cast<double>(n.attrs.start + split)), carry, xt);
          const std::size_t nkn = carry.size(), nyn = outs.size() - 2 * nkn;
          carry.assign(outs.begin(), outs.begin() + static_cast<std::ptrdiff_t>(nkn));
          ys_tail.assign(outs.begin() + static_cast<std::ptrdiff_t>(nkn), outs.begin() + static_cast<std::ptrdiff_t>(nkn + nyn));
          res.values.insert(res.values.end(), outs.begin() + static_cast<std::ptrdiff_t>(nkn + nyn), outs.end());
          return;
        }
        for (V v : carry) res.values.push_back(v);  // the tail's checkpoint
        auto outs = sp.fwd_block(e, plan.tail, cn, f64_const(e, static_cast<double>(n.attrs.start + split)), carry, xt);
        carry.assign(outs.begin(), outs.begin() + static_cast<std::ptrdiff_t>(carry.size()));
        ys_tail.assign(outs.begin() + static_cast<std::ptrdiff_t>(carry.size()), outs.end());
      };
      std::vector<V> carry = kn;
      // Residual layout: block checkpoints (when blocks), then the tail checkpoint (when a
      // tail); the backward half reads them in the same layout.
      if (!n.attrs.reverse) {
        run_blocked(carry);
        run_tail(carry);
      } else {
        run_tail(carry);
        std::vector<V> tail_ckpt = res.values;
        res.values.clear();
        run_blocked(carry);
        append(res.values, tail_ckpt);
      }
      std::size_t kk = 0;
      for (std::size_t k = 0; k < sp.nk; ++k)
        if (!sp.lin_k[k]) nonlinear_outs[k] = carry[kk++];
      std::size_t yi = 0;
      for (std::size_t j = 0; j < sp.ny; ++j) {
        if (sp.lin_y[j]) continue;
        V y;
        if (!ys_blocked.empty() && !ys_tail.empty()) y = concat_rows(e, ys_blocked[yi], ys_tail[yi]);
        else y = ys_blocked.empty() ? ys_tail[yi] : ys_blocked[yi];
        nonlinear_outs[sp.nk + j] = y;
        ++yi;
      }
      return res;
    }
    default:
      throw InternalError("transpose_region_forward: not a region op");
  }
}

std::vector<T> transpose_region_backward(Emit& e, const Graph& g, const Node& n, const std::vector<bool>& lin,
                                         const std::vector<bool>& lin_out, const std::vector<V>& x,
                                         const RegionResiduals& res, const std::vector<T>& ct_out) {
  std::vector<T> out(n.inputs.size());
  auto ct_or_zero = [&](std::size_t j) -> V {
    if (ct_out[j]) return *ct_out[j];
    ValueType t = g.type(n.outputs[j]);
    t.weak = false;
    return e.zeros(t);
  };
  switch (n.op) {
    case Op::CustomJvp: case Op::CustomVjp:
      throw InternalError("transpose: custom rule nodes are replaced by the JVP before any transpose");
    case Op::Checkpoint: {
      // The transposed body recomputes the block's intermediates from its non-linear
      // operands (and the values its policy saved), inside its own region, so they are
      // never merged with the forward pass's.
      if (res.values.empty()) return emit_transposed_half(e, g, n, 0, lin, lin_out, x, ct_out, n.attrs);
      const Graph& body = *n.regions[0];
      const Regions cut{std::make_shared<const Graph>(with_saved_params(body, saved_values(body, lin, n.attrs.mode)))};
      return emit_transposed_half(e, g, n, 0, lin, lin_out, x, ct_out, n.attrs, &cut, res.values);
    }
    case Op::LinearSolve: {
      // (A^-1)^T c = A^-T c: a linear_solve with transpose_solve and vecmat in the roles of
      // solve and matvec (and the other way round, so transposing again gives A^-1 back).
      const auto nb = static_cast<std::size_t>(n.attrs.num_consts);
      std::vector<V> in;
      for (std::size_t k = 0; k < nb; ++k) in.push_back(ct_or_zero(k));
      in.insert(in.end(), x.begin() + static_cast<std::ptrdiff_t>(nb), x.end());
      const Regions swapped{n.regions[1], n.regions[0], n.regions[3], n.regions[2]};
      auto r = e.b.emit(Op::LinearSolve, in, n.attrs, swapped);
      for (std::size_t k = 0; k < nb; ++k)
        if (lin[k]) out[k] = r[k];
      return out;
    }
    case Op::CustomVjpLin: {
      // bwd(residuals, output cotangents, operands) -> the argument tangents' cotangents.
      const auto nl = static_cast<std::size_t>(n.attrs.num_consts), nres = static_cast<std::size_t>(n.attrs.num_carry);
      std::vector<V> args(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(nres));
      for (std::size_t k = 0; k < n.outputs.size(); ++k) args.push_back(ct_or_zero(k));
      args.insert(args.end(), x.begin() + static_cast<std::ptrdiff_t>(nres), x.begin() + static_cast<std::ptrdiff_t>(nl));
      auto r = inline_into(e.b, *n.regions[0], args);
      for (std::size_t m = 0; m < r.size(); ++m)
        if (lin[nl + m]) out[nl + m] = r[m];
      return out;
    }
    case Op::While:
      throw InternalError("transpose: while_loop has no transpose");
    case Op::Cond:
      return emit_transposed_half(e, g, n, 1, lin, lin_out, x, ct_out, Attrs{});
    case Op::Scan: {
      const ScanParts& sp = *static_cast<const ScanParts*>(res.derived.get());
      const auto plan = sp.plan();
      std::vector<bool> given;
      for (const auto& c : ct_out) given.push_back(c.has_value());
      const Graph step_t = sp.live_transposed(given);
      const std::vector<V> cn = pick(x, 0, sp.nc, lin, false);
      const std::vector<V> xn = pick(x, sp.nc + sp.nk, sp.nx, lin, false);
      std::vector<V> ctk, acc, cty;
      for (std::size_t k = 0; k < sp.nk; ++k)
        if (sp.lin_k[k]) ctk.push_back(ct_or_zero(k));
      for (std::size_t i = 0; i < sp.nc; ++i)
        if (lin[i]) {
          ValueType t = g.type(n.inputs[i]);
          t.weak = false;
          acc.push_back(e.zeros(t));
        }
      for (std::size_t j = 0; j < sp.ny; ++j)
        if (sp.lin_y[j]) cty.push_back(ct_or_zero(sp.nk + j));
      const std::int64_t split = plan.blocks * plan.block;
      const std::size_t nkn = sp.nk_n;
      // Residuals: block checkpoints (nkn values when blocks), then the tail checkpoint.
      std::vector<V> ckpts, tail_ckpt;
      std::size_t r = 0;
      if (plan.blocks > 0) {
        ckpts.assign(res.values.begin(), res.values.begin() + static_cast<std::ptrdiff_t>(nkn));
        r = nkn;
      }
      if (plan.tail > 0 || plan.blocks == 0) tail_ckpt.assign(res.values.begin() + static_cast<std::ptrdiff_t>(r), res.values.end());
      std::vector<V> ctx_blocked, ctx_tail;
      auto back_tail = [&] {
        if (plan.tail == 0 && plan.blocks > 0) return;
        std::vector<V> xt, cyt;
        for (V v : xn) xt.push_back(e.slice_rows(v, split, n.attrs.length));
        for (V v : cty) cyt.push_back(e.slice_rows(v, split, n.attrs.length));
        const V base = f64_const(e, static_cast<double>(n.attrs.start + split));
        auto o = plan.full ? sp.bwd_over_tape(e, step_t, plan.tail, cn, base, tail_ckpt, xt, ctk, acc, cyt)
                           : sp.bwd_block(e, step_t, plan.tail, cn, base, tail_ckpt, xt, ctk, acc, cyt);
        ctk.assign(o.begin(), o.begin() + static_cast<std::ptrdiff_t>(ctk.size()));
        acc.assign(o.begin() + static_cast<std::ptrdiff_t>(ctk.size()),
                   o.begin() + static_cast<std::ptrdiff_t>(ctk.size() + acc.size()));
        ctx_tail.assign(o.begin() + static_cast<std::ptrdiff_t>(ctk.size() + acc.size()), o.end());
      };
      auto back_blocked = [&] {
        if (plan.blocks == 0) return;
        std::vector<V> xb, cyb;
        for (V v : xn) xb.push_back(split_lead(e, e.slice_rows(v, 0, split), plan.blocks, plan.block));
        for (V v : cty) cyb.push_back(split_lead(e, e.slice_rows(v, 0, split), plan.blocks, plan.block));
        std::vector<V> carry = ctk;
        append(carry, acc);
        std::vector<V> xs = ckpts;
        append(xs, xb);
        append(xs, cyb);
        std::vector<ValueType> pt{scan_index_type()};
        ScanParts::append_types(e, pt, cn);
        ScanParts::append_types(e, pt, carry);
        for (V v : xs) pt.push_back(ValueType{e.type(v).dtype, drop_lead(e.type(v).shape), false});
        const std::size_t ncn = cn.size(), nkl = ctk.size(), ncl = acc.size(), nxn = xb.size();
        Graph outer = make_graph(pt, [&](Builder& b, std::span<const V> ps) {
          Emit be{b};
          const V base = be.add(be.mul(ps[0], f64_const(be, static_cast<double>(plan.block))),
                                f64_const(be, static_cast<double>(n.attrs.start)));
          auto at = [&](std::size_t from, std::size_t count) {
            return std::vector<V>(ps.begin() + static_cast<std::ptrdiff_t>(from),
                                  ps.begin() + static_cast<std::ptrdiff_t>(from + count));
          };
          std::size_t p = 1;
          auto c = at(p, ncn); p += ncn;
          auto k = at(p, nkl); p += nkl;
          auto a = at(p, ncl); p += ncl;
          auto ck = at(p, nkn); p += nkn;
          auto xx = at(p, nxn); p += nxn;
          auto cy = at(p, ps.size() - p);
          return sp.bwd_block(be, step_t, plan.block, c, base, ck, xx, k, a, cy);
        });
        std::vector<V> in = cn;
        append(in, carry);
        append(in, xs);
        Attrs a;
        a.length = plan.blocks;
        a.reverse = !n.attrs.reverse;
        a.num_consts = static_cast<std::int64_t>(ncn);
        a.num_carry = static_cast<std::int64_t>(carry.size());
        auto o = e.b.emit(Op::Scan, in, std::move(a), Regions{std::make_shared<const Graph>(std::move(outer))});
        ctk.assign(o.begin(), o.begin() + static_cast<std::ptrdiff_t>(nkl));
        acc.assign(o.begin() + static_cast<std::ptrdiff_t>(nkl), o.begin() + static_cast<std::ptrdiff_t>(nkl + ncl));
        for (std::size_t j = nkl + ncl; j < o.size(); ++j) ctx_blocked.push_back(merge_lead(e, o[j]));
      };
      if (!n.attrs.reverse) {
        back_tail();
        back_blocked();
      } else {
        back_blocked();
        back_tail();
      }
      std::size_t ci = 0, ki = 0, xi = 0;
      for (std::size_t i = 0; i < sp.nc; ++i)
        if (lin[i]) out[i] = acc[ci++];
      for (std::size_t k = 0; k < sp.nk; ++k) {
        if (!sp.lin_k[k]) continue;
        if (lin[sp.nc + k]) out[sp.nc + k] = ctk[ki];
        ++ki;
      }
      for (std::size_t i = 0; i < sp.nx; ++i) {
        if (!lin[sp.nc + sp.nk + i]) continue;
        V v;
        if (!ctx_blocked.empty() && !ctx_tail.empty()) v = concat_rows(e, ctx_blocked[xi], ctx_tail[xi]);
        else v = ctx_blocked.empty() ? ctx_tail[xi] : ctx_blocked[xi];
        out[sp.nc + sp.nk + i] = v;
        ++xi;
      }
      return out;
    }
    default:
      throw InternalError("transpose_region_backward: not a region op");
  }
}

}  // namespace qb
