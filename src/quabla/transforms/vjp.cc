// Transpose rules: one switch over Op, no default. Only linear ops (those a JVP emits on
// tangents) have rules; the others raise InternalError, since a tangent never flows
// through them.
#include "quabla/transforms/vjp.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <unordered_map>

#include "quabla/ir/builder.h"
#include "quabla/ir/errors.h"
#include "quabla/transforms/emit.h"
#include "quabla/transforms/linalg_rules.h"
#include "quabla/transforms/jvp.h"
#include "quabla/transforms/region_rules.h"
#include "quabla/ir/regions.h"

namespace qb {

using ad::Emit;
using ad::V;

namespace {

struct Cotangents {
  Emit& e;
  std::vector<std::optional<V>> ct;
  void add(ValueId v, V c) { ct[v] = ct[v] ? e.add(*ct[v], c) : c; }
};

// Reaching a non-linear use of a tangent means a custom_jvp rule computed its tangent output
// non-linearly (the built-in rules are linear): a user error, as JAX's linearity failure.
[[noreturn]] void not_linear(Op op) {
  throw TypeError("reverse-mode differentiation (grad, vjp) transposes the forward derivative, which must be linear "
                  "in the tangents, but '" + std::string(op_name(op)) + "' is applied to a tangent non-linearly; a "
                  "custom_jvp rule must return a tangent output linear in its tangent inputs (as in JAX): fix the "
                  "rule, or define the reverse rule with custom_vjp");
}

// Adds the cotangent contributions of node n (of the linear graph) to its linear operands.
// x: the operands mapped into the output graph (only non-linear ones are valid), lin: which
// operands are linear, c: the cotangent of n's output.
void transpose_rule(Emit& e, const Graph& g, const Node& n, const std::vector<V>& x, const std::vector<bool>& lin,
                    V c, Cotangents& out) {
  const Attrs& a = n.attrs;
  auto in_type = [&](std::size_t i) { return g.type(n.inputs[i]); };
  auto give = [&](std::size_t i, V v) {
    if (lin[i]) out.add(n.inputs[i], v);
  };
  switch (n.op) {
    case Op::Neg: return give(0, e.neg(c));
    case Op::Add: give(0, c); give(1, c); return;
    case Op::Sub: give(0, c); if (lin[1]) give(1, e.neg(c)); return;
    case Op::Mul:
      if (lin[0] && lin[1]) not_linear(n.op);
      if (lin[0]) give(0, e.mul(c, x[1]));
      if (lin[1]) give(1, e.mul(x[0], c));
      return;
    case Op::Div:
      if (lin[1]) not_linear(n.op);
      return give(0, e.div(c, x[1]));
    case Op::Convert: return give(0, e.convert(c, in_type(0).dtype));  // complex -> real: the real part
    // JAX's convention: transposes are plain (not conjugated) linear transposes, so grad of a
    // real function of z = x + iy is df/dx - i df/dy.
    case Op::Real: return give(0, e.op(Op::Complex, {c, e.zeros(e.type(c))}));
    case Op::Imag: return give(0, e.op(Op::Complex, {e.zeros(e.type(c)), e.neg(c)}));
    case Op::Conj: return give(0, e.op(Op::Conj, {c}));
    case Op::Complex:
      give(0, e.op(Op::Real, {c}));
      if (lin[1]) give(1, e.neg(e.op(Op::Imag, {c})));
      return;
    case Op::Fft: return give(0, e.op(Op::Fft, {c}, a));  // the DFT matrix is symmetric
    case Op::Reshape: return give(0, e.reshape(c, in_type(0).shape));
    case Op::BroadcastInDim: {
      const Shape& in = in_type(0).shape;
      const Shape& outs = a.shape;
      std::vector<std::int64_t> sum_axes;
      for (std::int64_t d = 0; d < static_cast<std::int64_t>(outs.size()); ++d) {
        auto it = std::find(a.dims.begin(), a.dims.end(), d);
        if (it == a.dims.end() || (in[it - a.dims.begin()] == 1 && outs[d] != 1)) sum_axes.push_back(d);
      }
      return give(0, e.reshape(e.reduce_sum(c, sum_axes), in));
    }
    case Op::Transpose: {
      std::vector<std::int64_t> inv(a.dims.size());
      for (std::size_t i = 0; i < a.dims.size(); ++i) inv[a.dims[i]] = static_cast<std::int64_t>(i);
      return give(0, e.transpose(c, inv));
    }
    case Op::Slice: {
      const Shape& in = in_type(0).shape;
      if (num_elements(g.type(n.outputs[0]).shape) == 0) return give(0, e.zeros(in_type(0)));
      Attrs p;
      for (std::size_t i = 0; i < in.size(); ++i) {
        const std::int64_t count = (a.limits[i] - a.starts[i] + a.strides[i] - 1) / a.strides[i];
        p.starts.push_back(a.starts[i]);
        p.limits.push_back(in[i] - a.starts[i] - (count - 1) * a.strides[i] - 1);
        p.strides.push_back(a.strides[i] - 1);
      }
      return give(0, e.op(Op::Pad, {c, e.scalar(0.0, in_type(0).dtype)}, std::move(p)));
    }
    case Op::Pad: {
      const Shape& in = in_type(0).shape;
      Attrs s;
      for (std::size_t i = 0; i < in.size(); ++i) {
        s.starts.push_back(a.starts[i]);
        s.strides.push_back(a.strides[i] + 1);
        s.limits.push_back(a.starts[i] + (in[i] - 1) * (a.strides[i] + 1) + 1);
      }
      V inner = e.op(Op::Slice, {c}, s);
      give(0, inner);
      if (lin[1]) {
        std::vector<std::int64_t> all(in.size());
        for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::int64_t>(i);
        give(1, e.sub(e.reduce_sum(c, all), e.reduce_sum(inner, all)));
      }
      return;
    }
    case Op::Reverse: return give(0, e.op(Op::Reverse, {c}, a));
    case Op::Concat: {
      const Shape& os = g.type(n.outputs[0]).shape;
      std::int64_t start = 0;
      for (std::size_t i = 0; i < n.inputs.size(); ++i) {
        const Shape& is = in_type(i).shape;
        if (lin[i]) {
          Attrs s;
          s.starts.assign(os.size(), 0);
          s.limits = os;
          s.strides.assign(os.size(), 1);
          s.starts[a.axis] = start;
          s.limits[a.axis] = start + is[a.axis];
          give(i, e.op(Op::Slice, {c}, std::move(s)));
        }
        start += is[a.axis];
      }
      return;
    }
    case Op::ReduceSum: {
      const Shape& in = in_type(0).shape;
      std::vector<std::int64_t> kept;
      for (std::int64_t i = 0; i < static_cast<std::int64_t>(in.size()); ++i)
        if (std::find(a.dims.begin(), a.dims.end(), i) == a.dims.end()) kept.push_back(i);
      return give(0, e.broadcast(c, in, kept));
    }
    case Op::Cumsum: {
      Attrs r = a;
      r.reverse = !a.reverse;
      return give(0, e.op(Op::Cumsum, {c}, std::move(r)));
    }
    case Op::Select:
      if (lin[0]) not_linear(n.op);
      if (lin[1]) give(1, e.select(x[0], c, e.zeros(e.type(c))));
      if (lin[2]) give(2, e.select(x[0], e.zeros(e.type(c)), c));
      return;
    case Op::Gather: return give(0, e.op(Op::ScatterAdd, {e.zeros(in_type(0)), c}, a));
    case Op::Take: {
      // Clamped reads send their cotangent to the clamped position; the scatter drops
      // nothing then. Zero-filled reads had no source: the scatter drops them.
      V idx = a.mode == 1 ? x[1] : e.clamp_index(x[1], in_type(0).shape[static_cast<std::size_t>(a.axis)]);
      return give(0, e.scatter(e.zeros(in_type(0)), idx, c, a.axis, kScatterAdd));
    }
    case Op::Scatter:
      if (lin[1]) not_linear(n.op);
      switch (a.mode) {
        case kScatterAdd:
          give(0, c);
          if (lin[2]) give(2, e.take(c, x[1], a.axis, true));
          return;
        case kScatterSet:
          if (lin[0]) give(0, e.scatter(c, x[1], e.zeros(in_type(2)), a.axis, kScatterSet));
          if (lin[2]) give(2, e.take(c, x[1], a.axis, true));
          return;
        case kScatterMul:
          if (lin[2]) not_linear(n.op);
          return give(0, e.op(Op::Scatter, {c, x[1], x[2]}, a));
        default: not_linear(n.op);
      }
    case Op::ScatterAdd:
      give(0, c);
      if (lin[1]) give(1, e.op(Op::Gather, {c}, a));
      return;
    case Op::TriangularSolve:  // linear in b only: op(A)^-T c
      if (lin[0]) not_linear(n.op);
      return give(1, ad::triangular_solve(e, x[0], c, a.mode ^ 2));
    case Op::Solve:  // linear in b only: A^-T c
      if (lin[0]) not_linear(n.op);
      return give(1, ad::solve(e, e.mT(x[0]), c));
    case Op::Cholesky: case Op::Slogdet: case Op::Eigh: case Op::Svd: case Op::Qr: case Op::Lu: case Op::Eig:
      not_linear(n.op);
      return;
    case Op::MatMul:
      if (lin[0] && lin[1]) not_linear(n.op);
      if (lin[0]) give(0, e.op(Op::MatMul, {c, e.mT(x[1])}));
      if (lin[1]) give(1, e.op(Op::MatMul, {e.mT(x[0]), c}));
      return;
    case Op::Cond: case Op::Scan: case Op::While: case Op::CustomJvp: case Op::CustomVjp: case Op::CustomVjpLin: case Op::Checkpoint: case Op::LinearSolve:
      throw InternalError("transpose: region ops are transposed by transpose_regions.cc");
    case Op::NamedAxis: {
      // psum transposes to itself; all_gather to psum then this example's part; ppermute to
      // the inverse permutation.
      Attrs t = a;
      switch (a.mode) {
        case kAxisSum:
          return give(0, e.op(Op::NamedAxis, {c}, std::move(t)));
        case kAxisPermute:
          for (std::size_t i = 0; i + 1 < t.dims.size(); i += 2) std::swap(t.dims[i], t.dims[i + 1]);
          return give(0, e.op(Op::NamedAxis, {c}, std::move(t)));
        case kAxisGather: {
          Attrs sum = a, index = a;
          sum.mode = kAxisSum;
          index.mode = kAxisIndex;
          V total = e.op(Op::NamedAxis, {c}, std::move(sum));
          V me = e.convert(e.b.emit1(Op::NamedAxis, {}, std::move(index)), DType::i64);
          if (!a.num_carry) return give(0, e.take(total, me, a.axis, false));
          const std::int64_t len = in_type(0).shape[static_cast<std::size_t>(a.axis)];
          V rows = e.add(e.iota(len, DType::i64), e.broadcast(e.scale(me, static_cast<double>(len)), Shape{len}, {}));
          return give(0, e.take(total, rows, a.axis, false));
        }
        default:
          not_linear(n.op);
          return;
      }
    }
    case Op::HostCall: {  // a linear call (a collective) transposes to its transpose's call on c
      if (a.num_consts < 0) not_linear(n.op);
      Attrs t = a;
      t.mode = a.num_consts;
      t.num_consts = a.mode;
      t.shape = in_type(0).shape;
      t.dtype = in_type(0).dtype;
      return give(0, e.op(Op::HostCall, {c}, std::move(t)));
    }
    case Op::Parameter: case Op::Constant: case Op::Abs: case Op::Sign: case Op::Floor: case Op::Ceil:
    case Op::Round: case Op::Sqrt: case Op::Cbrt: case Op::Exp: case Op::Exp2: case Op::Expm1: case Op::Log:
    case Op::Log2: case Op::Log10: case Op::Log1p: case Op::Sin: case Op::Cos: case Op::Tan: case Op::Asin:
    case Op::Acos: case Op::Atan: case Op::Sinh: case Op::Cosh: case Op::Tanh: case Op::Asinh: case Op::Acosh:
    case Op::Atanh: case Op::Erf: case Op::Erfc: case Op::ErfInv: case Op::Logistic: case Op::Softplus: case Op::Silu:
    case Op::GeluTanh: case Op::StopGradient: case Op::IsNan: case Op::IsInf: case Op::IsFinite: case Op::Not:
    case Op::Pow: case Op::Atan2: case Op::Hypot: case Op::Rem: case Op::Max: case Op::Min: case Op::LogAddExp:
    case Op::Xor: case Op::ShiftLeft: case Op::ShiftRight: case Op::Argsort: case Op::SearchSorted: case Op::Threefry:
    case Op::And: case Op::Or: case Op::Lt: case Op::Le: case Op::Gt: case Op::Ge: case Op::Eq: case Op::Ne:
    case Op::ReduceProd: case Op::ReduceMax: case Op::ReduceMin: case Op::ReduceAny: case Op::ReduceAll:
      not_linear(n.op);
  }
  throw InternalError("transpose: unknown op");
}

}  // namespace

Graph transpose_linear(const Graph& g, std::span<const bool> linear_params, std::span<const bool> seed,
                       std::span<const bool> primal) {
  // Which values depend on a linear parameter.
  std::vector<bool> lin(g.values.size(), false);
  for (std::size_t i = 0; i < g.params.size(); ++i) lin[g.params[i]] = i < linear_params.size() && linear_params[i];
  for (const Node& n : g.nodes) {
    std::vector<bool> in;
    bool any = false;
    for (auto v : n.inputs) {
      in.push_back(lin[v]);
      any = any || lin[v];
    }
    if (!any) continue;
    const auto out = output_dependence(n, in);  // region nodes: per output; others: all
    for (std::size_t k = 0; k < n.outputs.size(); ++k) lin[n.outputs[k]] = out[k];
  }
  auto linear_inputs = [&](const Node& n) {
    std::vector<bool> f;
    for (auto v : n.inputs) f.push_back(lin[v]);
    return f;
  };
  auto linear_outputs = [&](const Node& n) {
    std::vector<bool> f;
    for (auto v : n.outputs) f.push_back(lin[v]);
    return f;
  };
  auto any_of = [](const std::vector<bool>& f) { return std::find(f.begin(), f.end(), true) != f.end(); };

  Graph out;
  Builder b(out);
  Emit e{b};
  std::vector<V> map(g.values.size(), 0);
  for (std::size_t i = 0; i < g.params.size(); ++i)
    if (!lin[g.params[i]]) map[g.params[i]] = b.param(g.type(g.params[i]));
  // One cotangent parameter per linear float result.
  std::vector<std::pair<ValueId, V>> result_ct;
  for (std::size_t j = 0; j < g.results.size(); ++j) {
    const ValueId r = g.results[j];
    if (!seed.empty() && (j >= seed.size() || !seed[j])) continue;
    if (!has_tangent(g.type(r))) continue;
    // Every seeded float result takes a cotangent parameter (the caller passes one per
    // result); one the inputs do not reach (a constant tangent) just goes unused.
    ValueType t = g.type(r);
    t.weak = false;
    const V c = b.param(t);
    if (lin[r]) result_ct.push_back({r, c});
  }
  // The non-linear part, copied as is.
  std::unordered_map<std::size_t, RegionResiduals> residuals;  // by node index
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.op == Op::Parameter || n.outputs.empty()) continue;
    std::vector<V> x;
    for (auto v : n.inputs) x.push_back(map[v]);
    if (has_regions(n.op) && any_of(linear_inputs(n))) {
      // Partly linear: emit its non-linear half (and what its transpose needs) now.
      std::vector<V> outs;
      residuals[i] = transpose_region_forward(e, n, linear_inputs(n), linear_outputs(n), x, outs);
      for (std::size_t k = 0; k < outs.size(); ++k)
        if (!lin[n.outputs[k]]) map[n.outputs[k]] = outs[k];
      continue;
    }
    if (lin[n.outputs[0]]) continue;
    b.copy_node(g, n, x, map);
  }
  Cotangents ct{e, std::vector<std::optional<V>>(g.values.size())};
  for (auto [r, c] : result_ct) ct.add(r, c);
  for (std::size_t i = g.nodes.size(); i-- > 0;) {
    const Node& n = g.nodes[i];
    if (n.op == Op::Parameter || n.outputs.empty()) continue;
    if (auto it = residuals.find(i); it != residuals.end()) {
      std::vector<std::optional<V>> ct_out;
      bool any = false;
      for (auto o : n.outputs) {
        ct_out.push_back(lin[o] ? ct.ct[o] : std::nullopt);
        any = any || ct_out.back().has_value();
      }
      if (!any) continue;
      std::vector<V> x;
      for (auto v : n.inputs) x.push_back(map[v]);
      const auto lin_in = linear_inputs(n);
      auto cts = transpose_region_backward(e, g, n, lin_in, linear_outputs(n), x, it->second, ct_out);
      for (std::size_t k = 0; k < n.inputs.size(); ++k)
        if (lin_in[k] && cts[k]) ct.add(n.inputs[k], *cts[k]);
      continue;
    }
    if (!lin[n.outputs[0]] || !ct.ct[n.outputs[0]]) continue;
    std::vector<V> x;
    std::vector<bool> linear;
    for (auto v : n.inputs) {
      x.push_back(map[v]);
      linear.push_back(lin[v]);
    }
    transpose_rule(e, g, n, x, linear, *ct.ct[n.outputs[0]], ct);
  }
  std::vector<V> results;
  for (std::size_t j = 0; j < g.results.size(); ++j) {
    const bool keep = primal.empty() ? !lin[g.results[j]] : (j < primal.size() && primal[j]);
    if (!keep) continue;
    if (lin[g.results[j]]) throw InternalError("transpose: a primal result depends on a linear parameter");
    results.push_back(map[g.results[j]]);
  }
  for (std::size_t i = 0; i < g.params.size(); ++i) {
    const ValueId p = g.params[i];
    if (!lin[p]) continue;
    ValueType t = g.type(p);
    t.weak = false;
    results.push_back(ct.ct[p] ? *ct.ct[p] : e.zeros(t));
  }
  b.set_results(std::move(results));
  verify(out);
  return out;
}

Graph vjp(const Graph& g, std::span<const bool> wrt, std::span<const bool> seed) {
  const Graph lin = jvp(g, wrt);
  // Seeds index the jvp graph's results: the primal results (never linear), then one
  // tangent per float result of g.
  auto lin_seed = std::make_unique<bool[]>(lin.results.size());
  // Without seeds every float result of g is seeded: the tangent results of lin.
  for (std::size_t j = 0; j < lin.results.size(); ++j) lin_seed[j] = seed.empty() && j >= g.results.size();
  if (!seed.empty()) {
    std::size_t k = g.results.size();
    for (std::size_t j = 0; j < g.results.size(); ++j)
      if (has_tangent(g.type(g.results[j]))) lin_seed[k++] = j < seed.size() && seed[j];
  }
  // jvp's parameters: the primals, then one tangent per float wrt parameter.
  auto linear = std::make_unique<bool[]>(lin.params.size());
  for (std::size_t i = 0; i < lin.params.size(); ++i) linear[i] = i >= g.params.size();
  auto primal = std::make_unique<bool[]>(lin.results.size());
  for (std::size_t j = 0; j < lin.results.size(); ++j) primal[j] = j < g.results.size();
  return transpose_linear(lin, std::span<const bool>(linear.get(), lin.params.size()),
                          std::span<const bool>(lin_seed.get(), lin.results.size()),
                          std::span<const bool>(primal.get(), lin.results.size()));
}

}  // namespace qb
