// The complex lowering (lower_complex.h). Formulas are the textbook ones, arranged so that
// a real operand (zero imaginary part) gives exactly the real function's value and a zero
// imaginary part, and guarded where the naive form overflows or divides 0 by 0: Smith's
// division, sqrt's principal branch from (|z| + |re|) / 2, tanh's tail for large |re|.
#include "quabla/transforms/lower_complex.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "quabla/ir/builder.h"
#include "quabla/ir/errors.h"
#include "quabla/transforms/emit.h"

namespace qb {

namespace {

using ad::Emit;
using ad::V;

constexpr V kNone = std::numeric_limits<V>::max();

struct Parts {
  V re = kNone, im = kNone;
};

Shape with_pair_axis(Shape s) {
  s.push_back(2);
  return s;
}

// The scalar value v is, when v is a real constant (through broadcasts, reshapes and
// conversions): integer powers then become products.
std::optional<double> real_constant(const Graph& g, ValueId v) {
  for (;;) {
    const Node& n = g.producer_of(v);
    if (n.op == Op::BroadcastInDim || n.op == Op::Reshape || n.op == Op::Convert) {
      v = n.inputs[0];
      continue;
    }
    if (n.op != Op::Constant || num_elements(n.attrs.literal->type.shape) != 1) return std::nullopt;
    const auto* p = n.attrs.literal->data->data();
    switch (n.attrs.literal->type.dtype) {
      case DType::f32: return static_cast<double>(*reinterpret_cast<const float*>(p));
      case DType::f64: return *reinterpret_cast<const double*>(p);
      case DType::i32: return static_cast<double>(*reinterpret_cast<const std::int32_t*>(p));
      case DType::i64: return static_cast<double>(*reinterpret_cast<const std::int64_t*>(p));
      case DType::c64: {
        const auto* c = reinterpret_cast<const float*>(p);
        if (c[1] != 0) return std::nullopt;
        return static_cast<double>(c[0]);
      }
      case DType::c128: {
        const auto* c = reinterpret_cast<const double*>(p);
        if (c[1] != 0) return std::nullopt;
        return c[0];
      }
      case DType::bool_: return std::nullopt;
    }
    return std::nullopt;
  }
}

class Lowering {
 public:
  Lowering(const Graph& src, Graph& dst)
      : g_(src), b_(dst), e_{b_}, real_(src.values.size(), kNone), parts_(src.values.size()),
        packed_(src.values.size(), kNone) {}

  void run() {
    for (ValueId p : g_.params) {
      const ValueType& t = g_.type(p);
      if (!is_complex(t.dtype)) {
        real_[p] = b_.param(t);
        continue;
      }
      packed_[p] = b_.param(ValueType{complex_part(t.dtype), with_pair_axis(t.shape), false});
      parts_[p] = unpack(packed_[p], t.shape);
    }
    for (const Node& n : g_.nodes) {
      if (n.op != Op::Parameter) lower(n);
    }
    std::vector<ValueId> results;
    for (ValueId r : g_.results) results.push_back(is_c(r) ? packed(r) : real_[r]);
    b_.set_results(std::move(results));
  }

 private:
  bool is_c(ValueId v) const { return is_complex(g_.type(v).dtype); }
  DType part_dtype(ValueId v) const { return complex_part(g_.type(v).dtype); }

  V op(Op o, std::initializer_list<V> in, Attrs a = {}) { return e_.op(o, in, std::move(a)); }
  V add(V x, V y) { return e_.add(x, y); }
  V sub(V x, V y) { return e_.sub(x, y); }
  V mul(V x, V y) { return e_.mul(x, y); }
  V div(V x, V y) { return e_.div(x, y); }
  V like(V x, double c) { return e_.like(x, c); }
  V sel(V p, V x, V y) { return e_.select(p, x, y); }

  // One part (k = 0 real, 1 imaginary) of an interleaved [..., 2] value.
  V part_of(V packed, const Shape& shape, std::int64_t k) {
    const Shape ps = e_.type(packed).shape;
    Attrs s;
    s.starts.assign(ps.size(), 0);
    s.limits = ps;
    s.strides.assign(ps.size(), 1);
    s.starts.back() = k;
    s.limits.back() = k + 1;
    return e_.reshape(op(Op::Slice, {packed}, std::move(s)), shape);
  }
  Parts unpack(V packed, const Shape& shape) { return {part_of(packed, shape, 0), part_of(packed, shape, 1)}; }

  V pack(const Parts& p) {
    const Shape s = e_.type(p.re).shape;
    Shape s1 = s;
    s1.push_back(1);
    Attrs cat;
    cat.axis = static_cast<std::int64_t>(s.size());
    return b_.emit(Op::Concat, std::vector<V>{e_.reshape(p.re, s1), e_.reshape(p.im, s1)}, std::move(cat))[0];
  }

  V packed(ValueId v) {
    if (packed_[v] == kNone) packed_[v] = pack(parts_[v]);
    return packed_[v];
  }
  // A lowered operand as it crosses a boundary: real values as they are, complex interleaved.
  V boundary(ValueId v) { return is_c(v) ? packed(v) : real_[v]; }

  // The parts of operand v, a real one with a zero imaginary part.
  Parts parts(ValueId v) {
    if (is_c(v)) return parts_[v];
    return {real_[v], e_.zeros(e_.type(real_[v]))};
  }

  // Complex arithmetic on parts.
  Parts cmul(const Parts& x, const Parts& y) {
    return {sub(mul(x.re, y.re), mul(x.im, y.im)), add(mul(x.re, y.im), mul(x.im, y.re))};
  }
  Parts cdiv(const Parts& x, const Parts& y) {
    // Smith's algorithm: divide through by the larger part of the divisor.
    V wide = op(Op::Ge, {op(Op::Abs, {y.re}), op(Op::Abs, {y.im})});
    V big = sel(wide, y.re, y.im), small = sel(wide, y.im, y.re);
    V r = div(small, big);
    V den = add(big, mul(small, r));
    // wide: (a + b r, b - a r) / den; else (a r + b, b r - a) / den
    V re = sel(wide, add(x.re, mul(x.im, r)), add(mul(x.re, r), x.im));
    V im = sel(wide, sub(x.im, mul(x.re, r)), sub(mul(x.im, r), x.re));
    return {div(re, den), div(im, den)};
  }
  Parts cexp(const Parts& z) {
    V m = op(Op::Exp, {z.re});
    // A zero imaginary part stays exactly zero (exp(inf) * sin(0) would be NaN).
    V im = sel(e_.eq(z.im, like(z.im, 0.0)), z.im, mul(m, op(Op::Sin, {z.im})));
    return {mul(m, op(Op::Cos, {z.im})), im};
  }
  Parts clog(const Parts& z) { return {op(Op::Log, {op(Op::Hypot, {z.re, z.im})}), op(Op::Atan2, {z.im, z.re})}; }
  Parts cscale(const Parts& z, double c) { return {e_.scale(z.re, c), e_.scale(z.im, c)}; }
  Parts csqrt(const Parts& z) {
    V m = op(Op::Hypot, {z.re, z.im});
    V t = op(Op::Sqrt, {e_.scale(add(m, op(Op::Abs, {z.re})), 0.5)});
    V zero_t = e_.eq(t, like(t, 0.0));
    V t_safe = sel(zero_t, like(t, 1.0), t);
    V half = div(z.im, e_.scale(t_safe, 2.0));  // im / (2t)
    V nonneg = op(Op::Ge, {z.re, like(z.re, 0.0)});
    // im's sign bit (-0.0 included: sqrt(-4 - 0i) is -2i): atan2(im, -1) < 0 exactly then.
    V neg_im = op(Op::Lt, {op(Op::Atan2, {z.im, like(z.im, -1.0)}), like(z.im, 0.0)});
    V re = sel(nonneg, t, op(Op::Abs, {half}));
    V im = sel(nonneg, half, sel(neg_im, e_.neg(t), t));
    V zero = like(t, 0.0);
    return {sel(zero_t, zero, re), sel(zero_t, z.im, im)};
  }
  Parts ctanh(const Parts& z) {
    V a2 = e_.scale(z.re, 2.0), b2 = e_.scale(z.im, 2.0);
    V den = add(op(Op::Cosh, {a2}), op(Op::Cos, {b2}));
    V re = div(op(Op::Sinh, {a2}), den), im = div(op(Op::Sin, {b2}), den);
    // For |re| > 20, cosh overflows long before tanh stops being +-1: the tail
    // tanh ~ sign(a) + 2 sin(2b) exp(-2|a|) i.
    V absa = op(Op::Abs, {z.re});
    V big = op(Op::Gt, {absa, like(absa, 20.0)});
    V tail = e_.scale(mul(op(Op::Sin, {b2}), op(Op::Exp, {e_.scale(absa, -2.0)})), 2.0);
    return {sel(big, op(Op::Sign, {z.re}), re), sel(big, tail, im)};
  }
  Parts cpow_int(Parts z, long k) {
    const bool invert = k < 0;
    unsigned long n = static_cast<unsigned long>(invert ? -k : k);
    Parts acc{like(z.re, 1.0), like(z.im, 0.0)};
    bool first = true;
    while (n) {
      if (n & 1) {
        acc = first ? z : cmul(acc, z);
        first = false;
      }
      n >>= 1;
      if (n) z = cmul(z, z);
    }
    if (invert) acc = cdiv(Parts{like(acc.re, 1.0), like(acc.im, 0.0)}, acc);
    return acc;
  }
  // The product over `axes`: the reduced elements laid along one leading axis, then the
  // first half times the second half level by level (an odd level padded with a one).
  Parts cprod(Parts z, const std::vector<std::int64_t>& axes) {
    const Shape xs = e_.type(z.re).shape;
    std::vector<std::int64_t> perm(axes.begin(), axes.end());
    Shape rest;
    std::int64_t n = 1;
    for (auto ax : axes) n *= xs[static_cast<std::size_t>(ax)];
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(xs.size()); ++i) {
      if (std::find(axes.begin(), axes.end(), i) == axes.end()) {
        perm.push_back(i);
        rest.push_back(xs[static_cast<std::size_t>(i)]);
      }
    }
    Shape flat{n};
    flat.insert(flat.end(), rest.begin(), rest.end());
    auto lay_out = [&](V v) { return e_.reshape(e_.transpose(v, perm), flat); };
    z = {lay_out(z.re), lay_out(z.im)};
    const DType d = e_.type(z.re).dtype;
    if (n == 0) return {e_.like(e_.zeros(ValueType{d, rest, false}), 1.0), e_.zeros(ValueType{d, rest, false})};
    while (n > 1) {
      if (n % 2) {
        Shape one_row{1};
        one_row.insert(one_row.end(), rest.begin(), rest.end());
        Attrs cat;
        cat.axis = 0;
        V zero = e_.zeros(ValueType{d, one_row, false});
        z.re = b_.emit(Op::Concat, std::vector<V>{z.re, e_.like(zero, 1.0)}, cat)[0];
        z.im = b_.emit(Op::Concat, std::vector<V>{z.im, zero}, cat)[0];
        ++n;
      }
      const std::int64_t h = n / 2;
      const Parts lo{e_.slice_rows(z.re, 0, h), e_.slice_rows(z.im, 0, h)};
      const Parts hi{e_.slice_rows(z.re, h, n), e_.slice_rows(z.im, h, n)};
      z = cmul(lo, hi);
      n = h;
    }
    return {e_.reshape(z.re, rest), e_.reshape(z.im, rest)};
  }
  V cnonzero(const Parts& z) {
    return op(Op::Or, {op(Op::Ne, {z.re, like(z.re, 0.0)}), op(Op::Ne, {z.im, like(z.im, 0.0)})});
  }

  // Applies op n (a structural op or a linear one acting on each part alike) to both parts;
  // `extra` are the real operands after the first (indices).
  Parts each_part(const Node& n, const Parts& x, std::span<const V> extra = {}) {
    std::vector<V> a{x.re}, c{x.im};
    a.insert(a.end(), extra.begin(), extra.end());
    c.insert(c.end(), extra.begin(), extra.end());
    return {b_.emit(n.op, a, n.attrs)[0], b_.emit(n.op, c, n.attrs)[0]};
  }

  void set_real(const Node& n, V v) { real_[n.outputs[0]] = v; }
  void set_parts(const Node& n, Parts p) { parts_[n.outputs[0]] = p; }

  void lower(const Node& n) {
    bool any = false;
    for (ValueId v : n.inputs) any = any || is_c(v);
    for (ValueId v : n.outputs) any = any || is_c(v);
    if (!n.regions.empty()) return lower_region_node(n);
    if (!any) {
      std::vector<V> ins;
      for (ValueId v : n.inputs) ins.push_back(real_[v]);
      b_.copy_node(g_, n, ins, real_);
      return;
    }
    switch (n.op) {
      case Op::Constant: {
        auto lit = std::make_shared<Literal>();
        lit->type = ValueType{part_dtype(n.outputs[0]), with_pair_axis(n.attrs.literal->type.shape), false};
        lit->data = n.attrs.literal->data;  // the same bytes
        const V c = b_.constant(std::move(lit));
        packed_[n.outputs[0]] = c;
        return set_parts(n, unpack(c, g_.type(n.outputs[0]).shape));
      }
      case Op::Neg: {
        const Parts z = parts(n.inputs[0]);
        return set_parts(n, {e_.neg(z.re), e_.neg(z.im)});
      }
      case Op::Abs: {
        const Parts z = parts(n.inputs[0]);
        return set_real(n, op(Op::Hypot, {z.re, z.im}));
      }
      case Op::Sign: {  // z / |z|, 0 at 0
        const Parts z = parts(n.inputs[0]);
        V m = op(Op::Hypot, {z.re, z.im});
        V zero = e_.eq(m, like(m, 0.0));
        V safe = sel(zero, like(m, 1.0), m);
        return set_parts(n, {sel(zero, z.re, div(z.re, safe)), sel(zero, z.im, div(z.im, safe))});
      }
      case Op::Sqrt: return set_parts(n, csqrt(parts(n.inputs[0])));
      case Op::Exp: return set_parts(n, cexp(parts(n.inputs[0])));
      case Op::Exp2: return set_parts(n, cexp(cscale(parts(n.inputs[0]), 0.69314718055994530942)));
      case Op::Expm1: {  // (e^a cos b - 1, e^a sin b), the real part as expm1(a) cos b - 2 sin^2(b/2)
        const Parts z = parts(n.inputs[0]);
        V s = op(Op::Sin, {e_.scale(z.im, 0.5)});
        V re = sub(mul(op(Op::Expm1, {z.re}), op(Op::Cos, {z.im})), e_.scale(mul(s, s), 2.0));
        return set_parts(n, {re, cexp(z).im});
      }
      case Op::Log: return set_parts(n, clog(parts(n.inputs[0])));
      case Op::Log2: return set_parts(n, cscale(clog(parts(n.inputs[0])), 1.0 / 0.69314718055994530942));
      case Op::Log10: return set_parts(n, cscale(clog(parts(n.inputs[0])), 1.0 / 2.30258509299404568402));
      case Op::Log1p: {
        // Re log(1 + z) = log1p(2a + a^2 + b^2) / 2 near 0 (no cancellation), log|1 + z| elsewhere.
        const Parts z = parts(n.inputs[0]);
        V one_a = add(z.re, like(z.re, 1.0));
        V m = op(Op::Max, {op(Op::Abs, {z.re}), op(Op::Abs, {z.im})});
        V near = op(Op::Lt, {m, like(m, 0.5)});
        V q = add(mul(z.re, add(z.re, like(z.re, 2.0))), mul(z.im, z.im));
        V re = sel(near, e_.scale(op(Op::Log1p, {q}), 0.5), op(Op::Log, {op(Op::Hypot, {one_a, z.im})}));
        return set_parts(n, {re, op(Op::Atan2, {z.im, one_a})});
      }
      case Op::Sin: case Op::Cos: case Op::Sinh: case Op::Cosh: {
        const Parts z = parts(n.inputs[0]);
        V sa = op(n.op == Op::Sin || n.op == Op::Cos ? Op::Sin : Op::Sinh, {z.re});
        V ca = op(n.op == Op::Sin || n.op == Op::Cos ? Op::Cos : Op::Cosh, {z.re});
        V sb = op(n.op == Op::Sin || n.op == Op::Cos ? Op::Sinh : Op::Sin, {z.im});
        V cb = op(n.op == Op::Sin || n.op == Op::Cos ? Op::Cosh : Op::Cos, {z.im});
        switch (n.op) {
          case Op::Sin: return set_parts(n, {mul(sa, cb), mul(ca, sb)});
          case Op::Cos: return set_parts(n, {mul(ca, cb), e_.neg(mul(sa, sb))});
          case Op::Sinh: return set_parts(n, {mul(sa, cb), mul(ca, sb)});
          default: return set_parts(n, {mul(ca, cb), mul(sa, sb)});
        }
      }
      case Op::Tanh: return set_parts(n, ctanh(parts(n.inputs[0])));
      case Op::Tan: {  // tan z = -i tanh(i z)
        const Parts z = parts(n.inputs[0]);
        const Parts t = ctanh(Parts{e_.neg(z.im), z.re});
        return set_parts(n, {t.im, e_.neg(t.re)});
      }
      case Op::StopGradient: return set_parts(n, each_part(n, parts(n.inputs[0])));
      case Op::IsNan: case Op::IsInf: {
        const Parts z = parts(n.inputs[0]);
        return set_real(n, op(Op::Or, {op(n.op, {z.re}), op(n.op, {z.im})}));
      }
      case Op::IsFinite: {
        const Parts z = parts(n.inputs[0]);
        return set_real(n, op(Op::And, {op(Op::IsFinite, {z.re}), op(Op::IsFinite, {z.im})}));
      }
      case Op::Add: case Op::Sub: {
        const Parts x = parts(n.inputs[0]), y = parts(n.inputs[1]);
        return set_parts(n, {op(n.op, {x.re, y.re}), op(n.op, {x.im, y.im})});
      }
      case Op::Mul: return set_parts(n, cmul(parts(n.inputs[0]), parts(n.inputs[1])));
      case Op::Div: return set_parts(n, cdiv(parts(n.inputs[0]), parts(n.inputs[1])));
      case Op::Pow: {
        const Parts z = parts(n.inputs[0]);
        if (auto k = real_constant(g_, n.inputs[1]); k && *k == std::round(*k) && std::abs(*k) <= 64) {
          return set_parts(n, cpow_int(z, static_cast<long>(*k)));
        }
        // exp(w log z); 0^w is 1 for w == 0 and 0 otherwise.
        const Parts w = parts(n.inputs[1]);
        V z0 = op(Op::Not, {cnonzero(z)}), w0 = op(Op::Not, {cnonzero(w)});
        const Parts p = cexp(cmul(w, clog(z)));
        V at0 = sel(w0, like(p.re, 1.0), like(p.re, 0.0));
        return set_parts(n, {sel(z0, at0, p.re), sel(z0, like(p.im, 0.0), p.im)});
      }
      case Op::Eq: {
        const Parts x = parts(n.inputs[0]), y = parts(n.inputs[1]);
        return set_real(n, op(Op::And, {op(Op::Eq, {x.re, y.re}), op(Op::Eq, {x.im, y.im})}));
      }
      case Op::Ne: {
        const Parts x = parts(n.inputs[0]), y = parts(n.inputs[1]);
        return set_real(n, op(Op::Or, {op(Op::Ne, {x.re, y.re}), op(Op::Ne, {x.im, y.im})}));
      }
      case Op::Select: {
        V p = real_[n.inputs[0]];
        const Parts x = parts(n.inputs[1]), y = parts(n.inputs[2]);
        return set_parts(n, {sel(p, x.re, y.re), sel(p, x.im, y.im)});
      }
      case Op::Convert: {
        const DType to = n.attrs.dtype;
        if (is_complex(to)) {
          const DType part = complex_part(to);
          if (is_c(n.inputs[0])) {
            const Parts z = parts(n.inputs[0]);
            return set_parts(n, {e_.convert(z.re, part), e_.convert(z.im, part)});
          }
          V re = e_.convert(real_[n.inputs[0]], part);
          return set_parts(n, {re, e_.zeros(e_.type(re))});
        }
        const Parts z = parts(n.inputs[0]);  // complex -> real: the real part (NumPy's astype)
        return set_real(n, to == DType::bool_ ? cnonzero(z) : e_.convert(z.re, to));
      }
      case Op::Real: return set_real(n, parts(n.inputs[0]).re);
      case Op::Imag: return set_real(n, parts(n.inputs[0]).im);
      case Op::Conj: {
        const Parts z = parts(n.inputs[0]);
        return set_parts(n, {z.re, e_.neg(z.im)});
      }
      case Op::Complex: return set_parts(n, {real_[n.inputs[0]], real_[n.inputs[1]]});
      case Op::Reshape: case Op::BroadcastInDim: case Op::Transpose: case Op::Slice: case Op::Reverse:
      case Op::ReduceSum: case Op::Cumsum: case Op::Gather:
        return set_parts(n, each_part(n, parts(n.inputs[0])));
      case Op::Take: {
        const V idx[] = {real_[n.inputs[1]]};
        return set_parts(n, each_part(n, parts(n.inputs[0]), idx));
      }
      case Op::Concat: {
        std::vector<V> re, im;
        for (ValueId v : n.inputs) {
          const Parts p = parts(v);
          re.push_back(p.re);
          im.push_back(p.im);
        }
        return set_parts(n, {b_.emit(Op::Concat, re, n.attrs)[0], b_.emit(Op::Concat, im, n.attrs)[0]});
      }
      case Op::Pad: {
        const Parts x = parts(n.inputs[0]), v = parts(n.inputs[1]);
        return set_parts(n, {op(Op::Pad, {x.re, v.re}, n.attrs), op(Op::Pad, {x.im, v.im}, n.attrs)});
      }
      case Op::ScatterAdd: {
        const Parts x = parts(n.inputs[0]), u = parts(n.inputs[1]);
        return set_parts(n, {op(Op::ScatterAdd, {x.re, u.re}, n.attrs), op(Op::ScatterAdd, {x.im, u.im}, n.attrs)});
      }
      case Op::Scatter: {
        const Parts x = parts(n.inputs[0]), u = parts(n.inputs[2]);
        V idx = real_[n.inputs[1]];
        return set_parts(n, {op(Op::Scatter, {x.re, idx, u.re}, n.attrs), op(Op::Scatter, {x.im, idx, u.im}, n.attrs)});
      }
      case Op::ReduceProd: return set_parts(n, cprod(parts(n.inputs[0]), n.attrs.dims));
      case Op::MatMul: {  // (A + Bi)(C + Di) = (AC - BD) + (AD + BC)i
        const Parts x = parts(n.inputs[0]), y = parts(n.inputs[1]);
        auto mm = [&](V p, V q) { return op(Op::MatMul, {p, q}); };
        return set_parts(n, {sub(mm(x.re, y.re), mm(x.im, y.im)), add(mm(x.re, y.im), mm(x.im, y.re))});
      }
      case Op::Fft: {
        V r = op(Op::Fft, {packed(n.inputs[0])}, n.attrs);
        packed_[n.outputs[0]] = r;
        return set_parts(n, unpack(r, g_.type(n.outputs[0]).shape));
      }
      case Op::NamedAxis: {  // never runs (the executor raises for it); keep it, interleaved
        std::vector<V> ins;
        for (ValueId v : n.inputs) ins.push_back(boundary(v));
        return finish_outputs(n, b_.emit(n.op, ins, n.attrs));
      }
      case Op::HostCall:
        throw TypeError("a host call (qb.pure_callback, qb.debug, a qb.distributed collective) on complex values is "
                        "not supported yet: pass the real and imaginary parts (x.real, x.imag) instead");
      default:
        throw InternalError("lower_complex: no lowering for " + std::string(op_name(n.op)) + " on complex values");
    }
  }

  // The node's lowered outputs: interleaved complex ones unpacked, real ones as they are.
  void finish_outputs(const Node& n, const std::vector<V>& outs) {
    for (std::size_t k = 0; k < outs.size(); ++k) {
      const ValueId v = n.outputs[k];
      if (!is_c(v)) {
        real_[v] = outs[k];
        continue;
      }
      packed_[v] = outs[k];
      parts_[v] = unpack(outs[k], g_.type(v).shape);
    }
  }

  void lower_region_node(const Node& n) {
    Regions regions;
    for (const auto& r : n.regions) regions.push_back(lower_complex(r));
    std::vector<V> ins;
    for (ValueId v : n.inputs) ins.push_back(boundary(v));
    auto outs = b_.emit(n.op, ins, n.attrs, std::move(regions));
    for (std::size_t k = 0; k < outs.size(); ++k) b_.graph().values[outs[k]].weak = g_.type(n.outputs[k]).weak && !is_c(n.outputs[k]);
    finish_outputs(n, outs);
  }

  const Graph& g_;
  Builder b_;
  Emit e_;
  std::vector<V> real_;       // lowered real values
  std::vector<Parts> parts_;  // complex values: their parts
  std::vector<V> packed_;     // complex values: their interleaved form, once built
};

}  // namespace

bool has_complex(const Graph& g) {
  for (const ValueType& t : g.values) {
    if (is_complex(t.dtype)) return true;
  }
  for (const Node& n : g.nodes) {
    for (const auto& r : n.regions) {
      if (has_complex(*r)) return true;
    }
  }
  return false;
}

std::shared_ptr<const Graph> lower_complex(std::shared_ptr<const Graph> g) {
  if (!has_complex(*g)) return g;
  auto out = std::make_shared<Graph>();
  Lowering(*g, *out).run();
  return out;
}

}  // namespace qb
