// JVP rules of every op: one switch over Op, no default. Derivative conventions (API.md §2):
// sqrt has derivative 0 at 0; floor/ceil/round/sign have 0; power's d/dx is 0 where x == 0
// and y < 1, its d/dy 0 for x <= 0; atan2 and hypot are 0 at the origin; abs and relu have
// subgradient 0 at 0; max/min (elementwise and reductions) share ties equally; select
// routes nothing to the unselected branch; stop_gradient is 0.
#include "quabla/transforms/jvp.h"

#include <algorithm>
#include <optional>
#include <tuple>

#include "quabla/ir/builder.h"
#include "quabla/ir/errors.h"
#include "quabla/transforms/emit.h"
#include "quabla/transforms/linalg_rules.h"
#include "quabla/transforms/region_rules.h"

namespace qb {

using ad::Emit;
using ad::V;
using T = std::optional<V>;

bool has_tangent(const ValueType& t) { return is_inexact(t.dtype); }

namespace {

// The tangent of prod(x, axes): the JVP of a tree of pairwise products (the reduced
// elements laid along one leading axis, the first half times the second half level by
// level, an odd level padded with a one). It never divides by x (y / x_i is wrong with zero
// entries and overflows where the partial products do not) and, built from products only,
// it is itself differentiable exactly to any order (Hessians of prod with zeros).
V prod_tree_tangent(Emit& e, V x, V t, const std::vector<std::int64_t>& axes) {
  const Emit::ReducedLayout l = Emit::reduced_layout(e.type(x).shape, axes);
  const Shape& rest = l.rest;
  std::int64_t n = l.n;
  V p = e.lay_out(x, l), dp = e.lay_out(t, l);
  while (n > 1) {
    if (n % 2) {
      Shape one_row{1};
      one_row.insert(one_row.end(), rest.begin(), rest.end());
      const DType d = e.type(p).dtype;
      Attrs cat;
      cat.axis = 0;
      p = e.b.emit(Op::Concat, std::vector<V>{p, e.like(e.zeros(ValueType{d, one_row, false}), 1.0)}, cat)[0];
      dp = e.b.emit(Op::Concat, std::vector<V>{dp, e.zeros(ValueType{d, one_row, false})}, cat)[0];
      ++n;
    }
    const std::int64_t h = n / 2;
    V pa = e.slice_rows(p, 0, h), pb = e.slice_rows(p, h, n);
    V da = e.slice_rows(dp, 0, h), db = e.slice_rows(dp, h, n);
    dp = e.add(e.mul(da, pb), e.mul(pa, db));
    p = e.mul(pa, pb);
    n = h;
  }
  return e.reshape(dp, rest);
}

// (1 - x)(1 + x): 1 - x^2 without its cancellation near |x| = 1.
V one_minus_x2(Emit& e, V x) {
  V one = e.like(x, 1.0);
  return e.mul(e.sub(one, x), e.add(one, x));
}

// (|x| > 1, u): u = 1/x where |x| > 1 and x elsewhere, for derivative formulas whose x^2
// would overflow (or lose 1 + x^2 to rounding) at large |x|.
std::pair<V, V> reciprocal_if_big(Emit& e, V x) {
  V one = e.like(x, 1.0);
  V big = e.op(Op::Gt, {e.op(Op::Abs, {x}), one});
  return {big, e.select(big, e.div(one, e.select(big, x, one)), x)};
}

// (m, a/m, b/m) with m = max(|a|, |b|) held constant (stop_gradient: the derivative formulas
// that use it do not depend on it): a scaled pair whose squares neither overflow nor
// underflow. An infinite coordinate scales to +-1 and a finite one beside it to 0; at the
// origin (m = 0) the pair is (0, 0).
std::tuple<V, V, V> scaled_pair(Emit& e, V a, V b) {
  V m = e.op(Op::StopGradient, {e.op(Op::Max, {e.op(Op::Abs, {a}), e.op(Op::Abs, {b})})});
  V zero = e.like(m, 0.0);
  V inf = e.op(Op::IsInf, {m});
  V m_safe = e.select(e.op(Op::Or, {e.eq(m, zero), inf}), e.like(m, 1.0), m);
  auto scale = [&](V v) {
    V at_inf = e.select(e.op(Op::IsInf, {v}), e.op(Op::Sign, {v}), zero);
    return e.select(inf, at_inf, e.div(v, m_safe));
  };
  return {m, scale(a), scale(b)};
}

// updates shape (x.shape[:axis] + idx.shape + x.shape[axis+1:]) of a scatter.
Shape updates_shape(const Shape& xs, const Shape& is, std::int64_t axis) {
  Shape s(xs.begin(), xs.begin() + axis);
  s.insert(s.end(), is.begin(), is.end());
  s.insert(s.end(), xs.begin() + axis + 1, xs.end());
  return s;
}

// The mask (broadcast to the updates' shape) of the updates that a scatter-set actually
// writes: for repeated indices only the last one lands, so only it gets a derivative.
V scatter_set_winners(Emit& e, V x, V idx, std::int64_t axis) {
  const Shape xs = e.type(x).shape, is = e.type(idx).shape;
  const DType it = e.type(idx).dtype;
  std::int64_t m = 1;
  for (auto d : is) m *= d;
  V flat = e.reshape(idx, Shape{m});
  V ids = e.iota(m, it);
  V slots = e.scatter(e.like(e.zeros(ValueType{it, Shape{xs[static_cast<std::size_t>(axis)]}, false}), -1.0), flat,
                      ids, 0, kScatterSet);
  V won = e.reshape(e.eq(e.take(slots, flat, 0, false), ids), is);
  std::vector<std::int64_t> dims;
  for (std::size_t i = 0; i < is.size(); ++i) dims.push_back(axis + static_cast<std::int64_t>(i));
  return e.broadcast(won, updates_shape(xs, is, axis), std::move(dims));
}

// The tangent of x.at[idx].min/max(u): the mean of the tangents of everything equal to the
// result at each position (x's element and the updates that land there), as reduce max/min.
V scatter_extremum_tangent(Emit& e, const Node& n, const std::vector<V>& x, const std::vector<T>& t, V y) {
  const std::int64_t axis = n.attrs.axis;
  const DType dt = e.type(x[0]).dtype;
  V x_hit = e.eq(x[0], y);
  V u_hit = e.eq(x[2], e.take(y, x[1], axis, false));
  V zero_x = e.zeros(e.type(x[0])), zero_u = e.zeros(e.type(x[2]));
  V count = e.scatter(e.convert(x_hit, dt), x[1], e.convert(u_hit, dt), axis, kScatterAdd);
  count = e.select(e.eq(count, zero_x), e.like(count, 1.0), count);
  V sum = t[0] ? e.select(x_hit, *t[0], zero_x) : zero_x;
  if (t[2]) sum = e.scatter(sum, x[1], e.select(u_hit, *t[2], zero_u), axis, kScatterAdd);
  return e.div(sum, count);
}

// The tangent of a node's (single) output from its primal inputs x, their tangents t (empty
// when zero) and its primal output y.
T jvp_rule(Emit& e, const Node& n, const std::vector<V>& x, const std::vector<T>& t, V y) {
  auto tz = [&](std::size_t i) -> V { return t[i] ? *t[i] : e.zeros(e.type(x[i])); };
  auto scale_t = [&](V factor) -> T { return e.mul(*t[0], factor); };
  const Attrs& a = n.attrs;
  switch (n.op) {
    case Op::Parameter: case Op::Constant:
      return std::nullopt;
    case Op::Neg: return e.neg(*t[0]);
    case Op::Abs: {
      if (!is_complex(e.type(x[0]).dtype)) return e.mul(*t[0], e.op(Op::Sign, {x[0]}));
      // d|z| = Re(conj(z) dz) / |z|, 0 at z == 0.
      V zero = e.like(y, 0.0);
      V at_zero = e.eq(y, zero);
      V re = e.op(Op::Real, {e.mul(e.op(Op::Conj, {x[0]}), *t[0])});
      return e.select(at_zero, zero, e.div(re, e.select(at_zero, e.like(y, 1.0), y)));
    }
    case Op::Sign: case Op::Floor: case Op::Ceil: case Op::Round: case Op::StopGradient:
      return std::nullopt;
    case Op::Sqrt: {
      // t / (2 sqrt x), and 0 at x == 0 at every order. The divisor is made safe too, so
      // the transposed rule sends 0 (not 0/0) to the cotangent at 0.
      V at_zero = e.eq(x[0], e.like(x[0], 0.0));
      V d = e.div(*t[0], e.scale(e.select(at_zero, e.like(y, 1.0), y), 2.0));
      return e.select(at_zero, e.like(x[0], 0.0), d);
    }
    case Op::Cbrt: return e.div(*t[0], e.scale(e.mul(y, y), 3.0));
    case Op::Exp: return scale_t(y);
    case Op::Exp2: return scale_t(e.scale(y, 0.69314718055994530942));
    case Op::Expm1: return scale_t(e.add(y, e.like(y, 1.0)));
    case Op::Log: return e.div(*t[0], x[0]);
    case Op::Log2: return e.div(*t[0], e.scale(x[0], 0.69314718055994530942));
    case Op::Log10: return e.div(*t[0], e.scale(x[0], 2.30258509299404568402));
    case Op::Log1p: return e.div(*t[0], e.add(x[0], e.like(x[0], 1.0)));
    case Op::Sin: return scale_t(e.op(Op::Cos, {x[0]}));
    case Op::Cos: return e.neg(e.mul(*t[0], e.op(Op::Sin, {x[0]})));
    case Op::Tan: return scale_t(e.add(e.like(y, 1.0), e.mul(y, y)));
    case Op::Asin: case Op::Acos: {
      // 1 / sqrt((1 - x)(1 + x)): no cancellation near |x| = 1, as 1 - x^2 has.
      V r = e.op(Op::Sqrt, {one_minus_x2(e, x[0])});
      V d = e.div(*t[0], r);
      return n.op == Op::Asin ? d : e.neg(d);
    }
    case Op::Atan: {
      // 1 / (1 + x^2), as u^2 / (1 + u^2) with u = 1/x for |x| > 1 (x^2 would overflow).
      const auto [big, u] = reciprocal_if_big(e, x[0]);
      V u2 = e.mul(u, u);
      V one = e.like(u2, 1.0);
      return scale_t(e.select(big, e.div(u2, e.add(one, u2)), e.div(one, e.add(one, u2))));
    }
    case Op::Sinh: return scale_t(e.op(Op::Cosh, {x[0]}));
    case Op::Cosh: return scale_t(e.op(Op::Sinh, {x[0]}));
    case Op::Tanh: return scale_t(e.sub(e.like(y, 1.0), e.mul(y, y)));
    case Op::Asinh: {
      // 1 / sqrt(x^2 + 1), as |u| / sqrt(1 + u^2) with u = 1/x for |x| > 1 (x^2 would overflow).
      const auto [big, u] = reciprocal_if_big(e, x[0]);
      V r = e.op(Op::Sqrt, {e.add(e.like(u, 1.0), e.mul(u, u))});
      return scale_t(e.select(big, e.div(e.op(Op::Abs, {u}), r), e.div(e.like(r, 1.0), r)));
    }
    case Op::Acosh: {
      V r = e.mul(e.op(Op::Sqrt, {e.sub(x[0], e.like(x[0], 1.0))}), e.op(Op::Sqrt, {e.add(x[0], e.like(x[0], 1.0))}));
      return e.div(*t[0], r);
    }
    case Op::Atanh: return e.div(*t[0], one_minus_x2(e, x[0]));
    case Op::Erf: case Op::Erfc: {
      V g = e.scale(e.op(Op::Exp, {e.neg(e.mul(x[0], x[0]))}), 1.12837916709551257390);  // 2/sqrt(pi)
      return n.op == Op::Erf ? scale_t(g) : e.neg(e.mul(*t[0], g));
    }
    // d erfinv(x) = sqrt(pi)/2 exp(erfinv(x)^2) dx, from the output y.
    case Op::ErfInv: return scale_t(e.scale(e.op(Op::Exp, {e.mul(y, y)}), 0.88622692545275801365));
    // s(x) s(-x) rather than s (1 - s): 1 - s cancels to 0 for large x.
    case Op::Logistic: return scale_t(e.mul(y, e.op(Op::Logistic, {e.neg(x[0])})));
    case Op::Softplus: return scale_t(e.op(Op::Logistic, {x[0]}));
    case Op::Silu: {
      // d/dx x s(x) = s (1 + x s(-x))   (s(-x) = 1 - s without the cancellation)
      V s = e.op(Op::Logistic, {x[0]});
      return scale_t(e.mul(s, e.add(e.like(s, 1.0), e.mul(x[0], e.op(Op::Logistic, {e.neg(x[0])})))));
    }
    case Op::GeluTanh: {
      // x s(2z), z = c (x + k x^3): s + x s (1 - s) 2c (1 + 3k x^2)
      constexpr double c = 0.79788456080286535588, k = 0.044715;
      V x2 = e.mul(x[0], x[0]);
      V z = e.scale(e.add(x[0], e.scale(e.mul(x2, x[0]), k)), c);
      V s = e.op(Op::Logistic, {e.scale(z, 2.0)});
      V dz = e.scale(e.add(e.like(x2, 1.0), e.scale(x2, 3.0 * k)), 2.0 * c);
      // s (1 - s) dz, 0 where s (1 - s) is (|x| so large that dz overflows: 0 * inf).
      V w = e.mul(s, e.op(Op::Logistic, {e.scale(z, -2.0)}));
      V ds = e.select(e.eq(w, e.like(w, 0.0)), e.like(w, 0.0), e.mul(w, dz));
      return scale_t(e.add(s, e.mul(x[0], ds)));
    }
    case Op::IsNan: case Op::IsInf: case Op::IsFinite: case Op::Not: case Op::And: case Op::Or:
    case Op::Lt: case Op::Le: case Op::Gt: case Op::Ge: case Op::Eq: case Op::Ne:
    case Op::ReduceAny: case Op::ReduceAll:
      return std::nullopt;  // bool results carry no tangent
    case Op::Add:
      if (!t[0]) return t[1];
      if (!t[1]) return t[0];
      return e.add(*t[0], *t[1]);
    case Op::Sub:
      if (!t[0]) return e.neg(*t[1]);
      if (!t[1]) return t[0];
      return e.sub(*t[0], *t[1]);
    case Op::Mul: {
      T r;
      if (t[0]) r = e.mul(*t[0], x[1]);
      if (t[1]) r = r ? e.add(*r, e.mul(x[0], *t[1])) : e.mul(x[0], *t[1]);
      return r;
    }
    case Op::Div: {
      // (ta - tb * y) / b
      V num = t[0] ? (t[1] ? e.sub(*t[0], e.mul(*t[1], y)) : *t[0]) : e.neg(e.mul(*t[1], y));
      return e.div(num, x[1]);
    }
    case Op::Pow: {
      T r;
      V zero = e.like(x[0], 0.0);
      if (is_complex(e.type(x[0]).dtype)) {  // y x^(y-1) dx + x^y log(x) dy, 0 at x == 0
        V at_zero = e.eq(x[0], zero);
        if (t[0]) r = e.mul(*t[0], e.select(at_zero, zero, e.mul(x[1], e.op(Op::Pow, {x[0], e.sub(x[1], e.like(x[1], 1.0))}))));
        if (t[1]) {
          V safe = e.select(at_zero, e.like(x[0], 1.0), x[0]);
          V term = e.mul(*t[1], e.select(at_zero, zero, e.mul(y, e.op(Op::Log, {safe}))));
          r = r ? e.add(*r, term) : term;
        }
        return r;
      }
      if (t[0]) {
        V dx = e.mul(x[1], e.op(Op::Pow, {x[0], e.sub(x[1], e.like(x[1], 1.0))}));
        V at_zero = e.op(Op::And, {e.eq(x[0], zero), e.op(Op::Lt, {x[1], e.like(x[1], 1.0)})});
        r = e.mul(*t[0], e.select(at_zero, zero, dx));
      }
      if (t[1]) {
        V dy = e.select(e.op(Op::Le, {x[0], zero}), zero, e.mul(y, e.op(Op::Log, {x[0]})));
        V term = e.mul(*t[1], dy);
        r = r ? e.add(*r, term) : term;
      }
      return r;
    }
    case Op::Atan2: {
      // (b ta - a tb) / (a^2 + b^2), 0 at the origin. With m = max(|a|, |b|) held constant
      // (the quotient does not depend on it), a' = a/m, b' = b/m: the factors b' / (m (a'^2 +
      // b'^2)) and a' / (...) neither overflow nor underflow at extreme scales. Each tangent
      // is multiplied by its factor last, so the transposed rule does the same.
      const auto [m, a, b] = scaled_pair(e, x[0], x[1]);
      V zero = e.like(m, 0.0);
      // 0 at the origin and where a coordinate is infinite (the limit, when it exists).
      V none = e.op(Op::Or, {e.eq(m, zero), e.op(Op::IsInf, {m})});
      V den = e.mul(e.select(none, e.like(m, 1.0), m), e.add(e.mul(a, a), e.mul(b, b)));
      T r;
      if (t[0]) r = e.mul(*t[0], e.select(none, zero, e.div(b, den)));
      if (t[1]) {
        V term = e.mul(*t[1], e.select(none, zero, e.div(a, den)));
        r = r ? e.sub(*r, term) : e.neg(term);
      }
      return r;
    }
    case Op::Hypot: {
      // (a ta + b tb) / y, each tangent times its ratio a/y = a'/sqrt(a'^2 + b'^2) of the
      // scaled pair: in [-1, 1], exact at subnormal and huge inputs, +-1 along an infinite
      // coordinate; 0 at the origin.
      const auto [m, a, b] = scaled_pair(e, x[0], x[1]);
      V zero = e.like(m, 0.0);
      V origin = e.eq(m, zero);
      V norm = e.op(Op::Sqrt, {e.add(e.mul(a, a), e.mul(b, b))});
      V norm_safe = e.select(origin, e.like(m, 1.0), norm);
      T r;
      if (t[0]) r = e.mul(*t[0], e.select(origin, zero, e.div(a, norm_safe)));
      if (t[1]) {
        V term = e.mul(*t[1], e.select(origin, zero, e.div(b, norm_safe)));
        r = r ? e.add(*r, term) : term;
      }
      return r;
    }
    case Op::Rem: {
      // r = a - b trunc(a/b): dr = ta - tb trunc(a/b), trunc(a/b) = (a - r) / b
      T r = t[0];
      if (t[1]) {
        V q = e.div(e.sub(x[0], y), x[1]);
        V term = e.mul(*t[1], e.op(Op::Round, {q}));
        r = r ? e.sub(*r, term) : e.neg(term);
      }
      return r;
    }
    case Op::Max: case Op::Min: {
      // Ties share equally: weight 1 to the selected side, 1/2 each on a tie.
      V win = e.op(n.op == Op::Max ? Op::Gt : Op::Lt, {x[0], x[1]});
      V w = e.select(win, e.like(x[0], 1.0), e.select(e.eq(x[0], x[1]), e.like(x[0], 0.5), e.like(x[0], 0.0)));
      T r;
      if (t[0]) r = e.mul(*t[0], w);
      if (t[1]) {
        V term = e.mul(*t[1], e.sub(e.like(w, 1.0), w));
        r = r ? e.add(*r, term) : term;
      }
      return r;
    }
    case Op::LogAddExp: {
      // d/da = s(a - b), d/db = s(b - a): exactly 1/2 each at a tie (exp(a - y) is not), and
      // at equal infinities, where a - b is NaN.
      V tie = e.eq(x[0], x[1]);
      V half = e.like(x[0], 0.5);
      T r;
      if (t[0]) r = e.mul(*t[0], e.select(tie, half, e.op(Op::Logistic, {e.sub(x[0], x[1])})));
      if (t[1]) {
        V term = e.mul(*t[1], e.select(tie, half, e.op(Op::Logistic, {e.sub(x[1], x[0])})));
        r = r ? e.add(*r, term) : term;
      }
      return r;
    }
    case Op::Select:
      if (!t[1] && !t[2]) return std::nullopt;
      return e.select(x[0], tz(1), tz(2));
    case Op::Convert:
      if (!is_inexact(a.dtype) || !t[0]) return std::nullopt;
      return e.convert(*t[0], a.dtype);
    case Op::Real: case Op::Imag: case Op::Conj:
      return e.op(n.op, {*t[0]});
    case Op::Complex:
      if (!t[0] && !t[1]) return std::nullopt;
      return e.op(Op::Complex, {tz(0), tz(1)});
    case Op::Fft:
      return e.op(Op::Fft, {*t[0]}, a);
    case Op::Reshape: case Op::BroadcastInDim: case Op::Transpose: case Op::Slice: case Op::Reverse:
    case Op::ReduceSum: case Op::Cumsum: case Op::Gather:
      return e.op(n.op, {*t[0]}, a);
    case Op::Concat: {
      std::vector<V> ts;
      for (std::size_t i = 0; i < x.size(); ++i) ts.push_back(tz(i));
      return e.b.emit(Op::Concat, ts, a)[0];
    }
    case Op::Pad:
      return e.op(Op::Pad, {tz(0), t[1] ? *t[1] : e.zeros(e.type(x[1]))}, a);
    case Op::ScatterAdd:
      return e.op(Op::ScatterAdd, {tz(0), tz(1)}, a);
    case Op::ReduceProd:
      return prod_tree_tangent(e, x[0], *t[0], a.dims);
    case Op::ReduceMax: case Op::ReduceMin: {
      // The mean of the tangents at the positions that attain the extremum.
      Attrs bc;
      bc.shape = e.type(x[0]).shape;
      for (std::int64_t i = 0; i < static_cast<std::int64_t>(bc.shape.size()); ++i)
        if (std::find(a.dims.begin(), a.dims.end(), i) == a.dims.end()) bc.dims.push_back(i);
      V mask = e.convert(e.eq(x[0], e.op(Op::BroadcastInDim, {y}, bc)), e.type(x[0]).dtype);
      V count = e.op(Op::ReduceSum, {mask}, a);
      return e.div(e.op(Op::ReduceSum, {e.mul(*t[0], mask)}, a), count);
    }
    case Op::Xor: case Op::ShiftLeft: case Op::ShiftRight: case Op::Argsort: case Op::SearchSorted: case Op::Threefry:
      return std::nullopt;  // integer or bool results carry no tangent
    case Op::Take:
      return e.op(Op::Take, {*t[0], x[1]}, a);
    case Op::Scatter:
      // An empty indexed axis drops every update: the result is x.
      if (e.type(x[0]).shape[static_cast<std::size_t>(a.axis)] == 0) return tz(0);
      switch (a.mode) {
        case kScatterAdd: return e.op(Op::Scatter, {tz(0), x[1], tz(2)}, a);
        case kScatterSet: {
          V tu = tz(2);
          // With repeated indices only the update that lands counts; unique ones all land.
          if (t[2] && !a.reverse) tu = e.select(scatter_set_winners(e, x[0], x[1], a.axis), tu, e.zeros(e.type(tu)));
          return e.op(Op::Scatter, {tz(0), x[1], tu}, a);
        }
        case kScatterMul: {
          if (t[2] && !a.reverse) {
            throw ValueError("the derivative of x.at[idx].multiply(updates) with respect to the updates is only "
                             "defined here for unique indices; pass unique_indices=True if they are (as JAX)");
          }
          T r;
          if (t[0]) r = e.op(Op::Scatter, {*t[0], x[1], x[2]}, a);
          if (t[2]) {
            V term = e.scatter(e.zeros(e.type(x[0])), x[1], e.mul(e.take(x[0], x[1], a.axis, true), *t[2]), a.axis,
                               kScatterAdd);
            r = r ? e.add(*r, term) : term;
          }
          return r;
        }
        default: return scatter_extremum_tangent(e, n, x, t, y);
      }
    case Op::Cond: case Op::Scan: case Op::While: case Op::CustomJvp: case Op::CustomVjp: case Op::CustomVjpLin: case Op::Checkpoint: case Op::LinearSolve:
      throw InternalError("jvp: region ops have multi-output rules (jvp_regions.cc)");
    case Op::HostCall: {
      // A linear call (a collective's sum) is its own JVP; any other has no rule, as in JAX.
      bool any = false;
      for (const T& ti : t) any = any || ti.has_value();
      if (!any || (a.num_carry & kHostCallEffect)) return std::nullopt;  // an effect has no tangent
      if (a.num_consts >= 0) return e.op(Op::HostCall, {*t[0]}, a);
      throw ValueError("can't differentiate a host call (a qb.pure_callback, or a qb.distributed collective with "
                       "op='max'): the function runs outside the traced program and has no derivative rule; give it "
                       "one with qb.custom_jvp or qb.custom_vjp around the call");
    }
    case Op::NamedAxis: {  // psum, all_gather and ppermute are linear
      if (a.mode == kAxisIndex || !t[0]) return std::nullopt;
      if (a.mode != kAxisMax && a.mode != kAxisMin) return e.op(Op::NamedAxis, {*t[0]}, a);
      // pmax, pmin: the mean of the tangents of the examples that attain the extremum, as
      // reduce_max's rule (so vmap(grad(f)) and grad(vmap(f)) agree; JAX has no rule here).
      Attrs sum = a;
      sum.mode = kAxisSum;
      V mask = e.convert(e.eq(x[0], y), e.type(x[0]).dtype);
      return e.div(e.op(Op::NamedAxis, {e.mul(*t[0], mask)}, sum), e.op(Op::NamedAxis, {mask}, std::move(sum)));
    }
    case Op::Cholesky: case Op::TriangularSolve: case Op::Solve: case Op::Slogdet: case Op::Eigh: case Op::Svd: case Op::Qr: case Op::Lu: case Op::Eig:
      return jvp_linalg(e, n, x, t, y);
    case Op::MatMul: {
      T r;
      if (t[0]) r = e.op(Op::MatMul, {*t[0], x[1]});
      if (t[1]) {
        V term = e.op(Op::MatMul, {x[0], *t[1]});
        r = r ? e.add(*r, term) : term;
      }
      return r;
    }
  }
  throw InternalError("jvp: unknown op");
}

}  // namespace

Graph jvp(const Graph& g, std::span<const bool> wrt, std::vector<bool>* nonzero) {
  Graph out;
  Builder b(out);
  Emit e{b};
  std::vector<V> map(g.values.size(), 0);
  std::vector<T> tan(g.values.size());
  for (auto p : g.params) map[p] = b.param(g.type(p));
  for (std::size_t i = 0; i < g.params.size(); ++i) {
    const ValueType& t = g.type(g.params[i]);
    if (i < wrt.size() && wrt[i] && has_tangent(t)) tan[g.params[i]] = b.param(t);
  }
  for (const Node& n : g.nodes) {
    if (n.op == Op::Parameter) continue;
    std::vector<V> x;
    std::vector<T> t;
    bool any = false;
    for (auto v : n.inputs) {
      x.push_back(map[v]);
      t.push_back(tan[v]);
      any = any || tan[v].has_value();
    }
    if (has_regions(n.op) && any) {
      std::vector<V> outs;
      std::vector<T> touts;
      jvp_region(e, n, x, t, outs, touts);
      for (std::size_t k = 0; k < outs.size(); ++k) {
        map[n.outputs[k]] = outs[k];
        tan[n.outputs[k]] = touts[k];
      }
      continue;
    }
    auto outs = b.copy_node(g, n, x, map);
    if (any && outs.size() == 1 && has_tangent(g.type(n.outputs[0]))) {
      tan[n.outputs[0]] = jvp_rule(e, n, x, t, outs[0]);
    }
  }
  std::vector<V> results;
  for (auto v : g.results) results.push_back(map[v]);
  if (nonzero) nonzero->clear();
  for (auto v : g.results) {
    const ValueType& t = g.type(v);
    if (!has_tangent(t)) continue;
    if (nonzero) nonzero->push_back(tan[v].has_value());
    if (tan[v]) {
      results.push_back(*tan[v]);
    } else {
      ValueType strong = t;
      strong.weak = false;
      results.push_back(e.zeros(strong));
    }
  }
  b.set_results(std::move(results));
  verify(out);
  return out;
}

}  // namespace qb
