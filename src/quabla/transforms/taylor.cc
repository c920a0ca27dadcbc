// Collapsed second-order Taylor mode. Per value v the transform keeps
//   J(v): [k, *shape] first-order coefficients (the K directional derivatives; [*shape]
//         with one direction), and
//   L(v): [*shape]     the collapsed second-order coefficient, sum_l c_l v''[dir l],
// either one a symbolic zero (absent) where nothing it depends on moves. For a node
// y = f(x_1..x_n) the rules are the second-order chain rule
//   J(y)   = sum_i f_i J(x_i)                               (batched over the K directions)
//   L(y)   = sum_i f_i L(x_i) + sum_l c_l f''[J_l, J_l]     (J_l: every J(x_i) at direction l)
// The rules are not written per op: each comes from the op's own JVP rule. For the node
// alone as a graph m, jvp(m) gives f'[t]; vmapped over the directions it gives J(y); jvp
// of jvp(m) in x only, with the same tangent, gives f''[t, t], vmapped and summed over the
// directions it gives the collapsed term; jvp(m) fed L gives the first sum of L(y). Every
// op with a JVP rule (regions included) therefore has a Taylor rule, the K-fold work is
// confined to first order, and symbolic zeros (linear ops have no second-order term, an
// operand that does not move has no tangent) cost nothing. The K-batched matrix products
// of an MLP fold into single GEMMs through vmap's own rules, and a first layer's J (the
// weights times the identity directions) stays unbatched under an outer vmap: the
// sparsity the forward-Laplacian method exploits, here without a special case.
#include "quabla/transforms/taylor.h"

#include <memory>
#include <optional>

#include "quabla/ir/builder.h"
#include "quabla/ir/errors.h"
#include "quabla/ir/regions.h"
#include "quabla/transforms/emit.h"
#include "quabla/transforms/jvp.h"
#include "quabla/transforms/simplify.h"
#include "quabla/transforms/vmap.h"

namespace qb {

namespace {

using ad::Emit;
using ad::V;
using T = std::optional<V>;

// std::vector<bool> has no contiguous storage; jvp takes a span of bool. Lives for the
// full expression it is made in.
class Flags {
 public:
  explicit Flags(const std::vector<bool>& v) : p_(std::make_unique<bool[]>(v.size() + 1)), n_(v.size()) {
    for (std::size_t i = 0; i < n_; ++i) p_[i] = v[i];
  }
  std::span<const bool> span() const { return {p_.get(), n_}; }

 private:
  std::unique_ptr<bool[]> p_;
  std::size_t n_;
};

// The node alone as a graph: a parameter per operand, the node's outputs as results.
Graph single_node(const Graph& g, const Node& n, std::vector<ValueId>& scratch) {
  Graph m;
  Builder b(m);
  std::vector<ValueId> in;
  for (auto v : n.inputs) in.push_back(b.param(g.type(v)));
  b.set_results(b.copy_node(g, n, in, scratch));
  return m;
}

// Graph g restricted to the results `keep` (by index), with its parameters; `params`
// rebinds parameters: g's parameter i is fed the new graph's parameter params[i].
Graph restricted(const Graph& g, const std::vector<ValueType>& new_params, const std::vector<std::size_t>& params,
                 const std::vector<std::size_t>& keep) {
  return make_graph(new_params, [&](Builder& b, std::span<const ValueId> ps) {
    std::vector<ValueId> args;
    for (auto i : params) args.push_back(ps[i]);
    auto outs = inline_into(b, g, args);
    std::vector<ValueId> r;
    for (auto i : keep) r.push_back(outs[i]);
    return r;
  });
}

class Taylor {
 public:
  Taylor(const Graph& g, std::int64_t k, Builder& b) : g_(g), k_(k), b_(b), e_{b}, scratch_(g.values.size(), 0) {}

  // Emits node n (operands x, coefficients j and l of its operands) and returns, per
  // output, its J and L.
  void node(const Node& n, const std::vector<V>& x, const std::vector<T>& j, const std::vector<T>& l,
            std::vector<T>& j_out, std::vector<T>& l_out) {
    const std::size_t n_in = n.inputs.size(), n_out = n.outputs.size();
    j_out.assign(n_out, std::nullopt);
    l_out.assign(n_out, std::nullopt);
    std::vector<std::size_t> float_outs;
    for (std::size_t o = 0; o < n_out; ++o)
      if (has_tangent(g_.type(n.outputs[o]))) float_outs.push_back(o);
    if (float_outs.empty()) return;
    const std::size_t n_fo = float_outs.size();

    Graph m = single_node(g_, n, scratch_);
    std::vector<bool> wj(n_in), wl(n_in);
    std::vector<V> jx, lx;
    for (std::size_t i = 0; i < n_in; ++i) {
      wj[i] = j[i].has_value();
      wl[i] = l[i].has_value();
      if (j[i]) jx.push_back(*j[i]);
      if (l[i]) lx.push_back(*l[i]);
    }
    std::vector<bool> nz1;
    Graph g1 = jvp(m, Flags(wj).span(), &nz1);
    std::vector<std::size_t> moving;  // float outputs whose first-order coefficients are nonzero
    for (std::size_t q = 0; q < n_fo; ++q)
      if (nz1[q]) moving.push_back(q);
    if (moving.empty()) return;

    // g1's parameters: the operands, then a tangent per moving operand.
    const std::vector<ValueType> p1 = param_types(g1);
    std::vector<std::size_t> identity(p1.size());
    for (std::size_t i = 0; i < identity.size(); ++i) identity[i] = i;
    std::vector<std::int64_t> axes(p1.size(), -1);
    for (std::size_t i = n_in; i < p1.size(); ++i) axes[i] = 0;
    std::vector<V> args(x.begin(), x.end());
    args.insert(args.end(), jx.begin(), jx.end());

    // First order, batched over the directions.
    {
      std::vector<std::size_t> keep;
      for (auto q : moving) keep.push_back(n_out + q);
      Graph first = batched(restricted(g1, p1, identity, keep), axes);
      auto outs = inline_into(b_, first, args);
      for (std::size_t r = 0; r < moving.size(); ++r) j_out[float_outs[moving[r]]] = outs[r];
    }

    // The collapsed second-order term: d/ds of g1's tangents at x + s t, t held fixed.
    {
      std::vector<bool> wx(p1.size(), false);
      for (std::size_t i = 0; i < n_in; ++i) wx[i] = wj[i];
      std::vector<bool> nz2;
      // g1 first loses its dead code (a custom rule's own primal outputs, which may hold ops
      // without a derivative of their own, such as a host call).
      Graph g2 = jvp(simplify(g1), Flags(wx).span(), &nz2);
      // nz2 covers g1's float results: the float outputs, then the n_fo tangents.
      std::vector<std::size_t> keep, which;
      const std::size_t g1_results = n_out + n_fo;
      for (auto q : moving) {
        if (!nz2[n_fo + q]) continue;
        keep.push_back(g1_results + n_fo + q);
        which.push_back(q);
      }
      if (!keep.empty()) {
        // g2's parameters: g1's, then a tangent per moving operand, fed the same t.
        std::vector<std::size_t> feed = identity;
        for (std::size_t i = n_in; i < p1.size(); ++i) feed.push_back(i);
        Graph second = restricted(g2, p1, feed, keep);
        bool complex_values = is_complex(g_.type(n.outputs[0]).dtype);
        for (ValueId v : n.inputs) complex_values = complex_values || is_complex(g_.type(v).dtype);
        if (is_elementwise(n.op) && jx.size() == 1 && n_out == 1 && !complex_values) {
          // One moving operand of an elementwise op: f''[t, t] = f''(x) t^2 elementwise, so
          // f'' is evaluated once at a unit tangent and multiplied by the collapsed sum of
          // t^2, never broadcast over the directions (a first layer's t has no batch axis).
          // The sum of squares comes first, right after J(y): both read t, so the CPU
          // planner fuses them into one pass over the K-sized values. (Not for complex values:
          // |z|, real and conj are not analytic, so their f''[t, t] is no multiple of t^2.)
          V squares = collapse(e_.mul(jx[0], jx[0]));
          std::vector<V> unit(x.begin(), x.end());
          std::size_t moving_operand = 0;
          while (!wj[moving_operand]) ++moving_operand;
          unit.push_back(e_.like(x[moving_operand], 1.0));
          V fpp = inline_into(b_, second, unit)[0];
          add_to(l_out[float_outs[which[0]]], e_.mul(fpp, squares));
        } else {
          auto outs = inline_into(b_, batched(second, axes), args);
          for (std::size_t r = 0; r < which.size(); ++r) add_to(l_out[float_outs[which[r]]], collapse(outs[r]));
        }
      }
    }

    // f' applied to the operands' second-order coefficients.
    if (!lx.empty()) {
      std::vector<bool> nzl;
      Graph gl = jvp(m, Flags(wl).span(), &nzl);
      std::vector<V> largs(x.begin(), x.end());
      largs.insert(largs.end(), lx.begin(), lx.end());
      auto outs = inline_into(b_, gl, largs);
      for (std::size_t q = 0; q < n_fo; ++q)
        if (nzl[q]) add_to(l_out[float_outs[q]], outs[n_out + q]);
    }
  }

  void set_weights(V c) { weights_ = c; }

 private:
  // A graph over the directions: vmapped over K, or as it is with one direction, whose
  // coefficients carry no direction axis (a 1-D u'''' nests this; reshapes and size-1
  // reductions would only add kernels there).
  Graph batched(const Graph& g, const std::vector<std::int64_t>& axes) const {
    return k_ == 1 ? g : vmap(g, axes, k_);
  }

  // sum_l c_l s[l]: the directions' second-order coefficients collapsed into one.
  V collapse(V s) {
    const ValueType st = e_.type(s);
    if (k_ == 1) {
      if (!weights_) return s;
      V c = e_.reshape(*weights_, Shape{});
      if (e_.type(c).dtype != st.dtype) c = e_.convert(c, st.dtype);
      return e_.mul(s, e_.broadcast(c, st.shape, {}));
    }
    if (weights_) {
      V c = *weights_;
      if (e_.type(c).dtype != st.dtype) c = e_.convert(c, st.dtype);
      s = e_.mul(s, e_.broadcast(c, st.shape, {0}));
    }
    return e_.reduce_sum(s, {0});
  }

  void add_to(T& acc, V v) { acc = acc ? e_.add(*acc, v) : v; }

  const Graph& g_;
  std::int64_t k_;
  Builder& b_;
  Emit e_;
  std::vector<ValueId> scratch_;
  T weights_;
};

}  // namespace

Graph taylor2(const Graph& g, std::span<const bool> wrt, std::int64_t k, bool weighted) {
  if (k < 1) throw InternalError("taylor2: needs at least one direction");
  Graph out;
  Builder b(out);
  Emit e{b};
  std::vector<V> map(g.values.size(), 0);
  std::vector<T> jc(g.values.size()), lc(g.values.size());
  for (auto p : g.params) map[p] = b.param(g.type(p));
  for (std::size_t i = 0; i < g.params.size(); ++i) {
    ValueType t = g.type(g.params[i]);
    if (!(i < wrt.size() && wrt[i] && has_tangent(t))) continue;
    t.shape.insert(t.shape.begin(), k);
    t.weak = false;
    jc[g.params[i]] = b.param(t);
  }
  Taylor rules(g, k, b);
  if (weighted) rules.set_weights(b.param(ValueType{DType::f64, Shape{k}, false}));
  if (k == 1) {  // every parameter first; then the one direction loses its axis
    for (auto p : g.params)
      if (jc[p]) jc[p] = e.reshape(*jc[p], g.type(p).shape);
  }
  std::vector<T> j_out, l_out;
  for (const Node& n : g.nodes) {
    if (n.op == Op::Parameter) continue;
    std::vector<V> x;
    std::vector<T> j, l;
    bool any = false;
    for (auto v : n.inputs) {
      x.push_back(map[v]);
      j.push_back(jc[v]);
      l.push_back(lc[v]);
      any = any || jc[v].has_value();
    }
    auto outs = b.copy_node(g, n, x, map);
    if (!any) continue;
    rules.node(n, x, j, l, j_out, l_out);
    for (std::size_t o = 0; o < outs.size(); ++o) {
      jc[n.outputs[o]] = j_out[o];
      lc[n.outputs[o]] = l_out[o];
    }
  }
  std::vector<V> results;
  for (auto v : g.results) results.push_back(map[v]);
  auto strong = [](ValueType t) {
    t.weak = false;
    return t;
  };
  for (auto v : g.results) {
    if (!has_tangent(g.type(v))) continue;
    if (jc[v]) {
      Shape with_k = g.type(v).shape;
      with_k.insert(with_k.begin(), k);
      results.push_back(k == 1 ? e.reshape(*jc[v], with_k) : *jc[v]);
    } else {
      ValueType t = strong(g.type(v));
      t.shape.insert(t.shape.begin(), k);
      results.push_back(e.zeros(t));
    }
  }
  for (auto v : g.results) {
    if (!has_tangent(g.type(v))) continue;
    results.push_back(lc[v] ? *lc[v] : e.zeros(strong(g.type(v))));
  }
  b.set_results(std::move(results));
  verify(out);
  return out;
}

}  // namespace qb
