// The complex lowering (lower_complex.h). Formulas are the textbook ones, arranged so that
// a real operand (zero imaginary part) gives exactly the real function's value and a zero
// imaginary part, and guarded where the naive form overflows or divides 0 by 0: Smith's
// division, sqrt's principal branch from (|z| + |re|) / 2, tanh's tail for large |re|.
#include "quabla/transforms/lower_complex.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <unordered_set>
#include <string>
#include <vector>

#include "quabla/ir/builder.h"
#include "quabla/ir/errors.h"
#include "quabla/ir/regions.h"
#include "quabla/transforms/emit.h"
#include "quabla/transforms/simplify.h"

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
      case DType::bool_: QB_NARROW_INT_CASES: return std::nullopt;
    }
    return std::nullopt;
  }
}

Shape with_planes_axis(const Shape& s) {
  Shape out{2};
  out.insert(out.end(), s.begin(), s.end());
  return out;
}

class Lowering {
 public:
  Lowering(const Graph& src, Graph& dst, bool interleaved)
      : g_(src), b_(dst), e_{b_}, interleaved_(interleaved), real_(src.values.size(), kNone),
        parts_(src.values.size()), planes_(src.values.size(), kNone) {}

  void run() {
    for (ValueId p : g_.params) {
      const ValueType& t = g_.type(p);
      if (!is_complex(t.dtype)) {
        real_[p] = b_.param(t);
        continue;
      }
      const DType part = complex_part(t.dtype);
      if (!interleaved_) {
        planes_[p] = b_.param(ValueType{part, with_planes_axis(t.shape), false});
        continue;
      }
      // [..., 2]: its parts are every other element (strided slices, which fused kernels
      // read in place); the planar form [2, ...] (a transpose) only if an op needs it.
      const V x = b_.param(ValueType{part, with_pair_axis(t.shape), false});
      interleaved_param_[p] = x;
      if (num_elements(t.shape) > 0) parts_[p] = interleaved_parts(x, t.shape);  // else from planes()
    }
    uses_.assign(g_.values.size(), 0);
    for (const Node& n : g_.nodes) {
      for (ValueId v : n.inputs) ++uses_[v];
    }
    for (ValueId r : g_.results) ++uses_[r];
    for (std::size_t i = 0; i < g_.nodes.size(); ++i) {
      const Node& n = g_.nodes[i];
      if (n.op != Op::Parameter && !folded_.count(static_cast<std::uint32_t>(i))) lower(n);
    }
    std::vector<ValueId> results;
    for (ValueId v : g_.results) {
      if (!is_c(v)) {
        results.push_back(real_[v]);
        continue;
      }
      const auto r = static_cast<std::int64_t>(g_.type(v).shape.size());
      if (!interleaved_ || r == 0) {
        results.push_back(planes(v));
        continue;
      }
      if (interleaved_param_.count(v)) {  // a parameter returned as it is
        results.push_back(interleaved_param_.at(v));
        continue;
      }
      if (planes_[v] == kNone && num_elements(g_.type(v).shape) > 0) {  // computed as parts: one pass
        results.push_back(interleave(parts_[v]));
        continue;
      }
      std::vector<std::int64_t> perm;
      for (std::int64_t i = 1; i <= r; ++i) perm.push_back(i);
      perm.push_back(0);
      results.push_back(e_.transpose(planes(v), std::move(perm)));
    }
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

  // A complex literal's parts as two real literals (a scalar stays a scalar, so broadcasting
  // it stays a view).
  Parts constant_parts(const Literal& lit) {
    const DType part = complex_part(lit.type.dtype);
    const std::size_t elem = itemsize(part);
    const auto count = static_cast<std::size_t>(num_elements(lit.type.shape));
    V out[2];
    for (std::size_t k = 0; k < 2; ++k) {
      auto p = std::make_shared<Literal>();
      p->type = ValueType{part, lit.type.shape, false};
      p->data = Buffer::allocate(std::max<std::size_t>(count * elem, 1));
      for (std::size_t i = 0; i < count; ++i) {
        std::memcpy(p->data->data() + i * elem, lit.data->data() + (2 * i + k) * elem, elem);
      }
      out[k] = b_.constant(std::move(p));
    }
    return {out[0], out[1]};
  }

  // Inside a lowered program a complex value crossing a boundary is in its planar form
  // [2, ...]: the real part, then the imaginary part, each contiguous. Splitting and
  // joining it are contiguous copies; only the program's own parameters and results are
  // interleaved (a transpose at entry and exit).
  Parts unpack(V planes, const Shape& shape) {
    return {e_.reshape(e_.slice_rows(planes, 0, 1), shape), e_.reshape(e_.slice_rows(planes, 1, 2), shape)};
  }

  V pack(const Parts& p) {
    const Shape s1 = with_planes_axis(e_.type(p.re).shape);
    Shape one = s1;
    one[0] = 1;
    Attrs cat;
    cat.axis = 0;
    return b_.emit(Op::Concat, std::vector<V>{e_.reshape(p.re, one), e_.reshape(p.im, one)}, std::move(cat))[0];
  }

  V planes(ValueId v) {
    if (planes_[v] != kNone) return planes_[v];
    if (interleaved_param_.count(v)) {  // [..., 2] -> [2, ...]: the pair axis to the front
      const V x = interleaved_param_.at(v);
      const auto r = static_cast<std::int64_t>(g_.type(v).shape.size());
      std::vector<std::int64_t> perm{r};
      for (std::int64_t i = 0; i < r; ++i) perm.push_back(i);
      return planes_[v] = r ? e_.transpose(x, std::move(perm)) : x;
    }
    return planes_[v] = pack(parts_[v]);
  }

  // The planar operand of a complex fft. A transposed value read only by the fft (a
  // transform along a non-last axis) is the transpose of its operand's planar form rather
  // than the planes packed from its transposed parts: the CPU's fft then reads that operand
  // in place (executable.cc, strided_ffts), and no part is transposed.
  V fft_operand(ValueId v) {
    const Node& src = g_.producer_of(v);
    if (planes_[v] == kNone && src.op == Op::Transpose && is_c(src.inputs[0]) && uses_[v] == 1) {
      std::vector<std::int64_t> perm{0};
      for (auto d : src.attrs.dims) perm.push_back(d + 1);
      return planes_[v] = e_.transpose(planes(src.inputs[0]), std::move(perm));
    }
    return planes(v);
  }

  // The parts of an interleaved [..., 2] value of complex shape `shape`: with its last two
  // axes merged (a view), the even and the odd elements of the last axis.
  Parts interleaved_parts(V x, const Shape& shape) {
    if (shape.empty()) return unpack(x, shape);
    Shape merged = shape;
    merged.back() *= 2;
    const V flat = e_.reshape(x, merged);
    return {e_.slice_last(flat, 0, merged.back(), 2), e_.slice_last(flat, 1, merged.back(), 2)};
  }

  // [..., 2] from the parts: a concatenation of [..., 1] slabs along the last axis, which
  // the backends run as one interleaving pass.
  V interleave(const Parts& p) {
    Shape one = e_.type(p.re).shape;
    one.push_back(1);
    Attrs cat;
    cat.axis = static_cast<std::int64_t>(one.size()) - 1;
    return b_.emit(Op::Concat, std::vector<V>{e_.reshape(p.re, one), e_.reshape(p.im, one)}, std::move(cat))[0];
  }
  // A lowered operand as it crosses a boundary: real values as they are, complex planar.
  V boundary(ValueId v) { return is_c(v) ? planes(v) : real_[v]; }

  // The parts of operand v (split from its planar form on first use), a real one with
  // a zero imaginary part.
  Parts parts(ValueId v) {
    if (is_c(v)) {
      if (parts_[v].re == kNone) parts_[v] = unpack(planes(v), g_.type(v).shape);
      return parts_[v];
    }
    return {real_[v], real_zero(real_[v])};
  }

  // Complex arithmetic on parts.
  // The imaginary part of a real value made complex: products with it are left out, so a
  // real times a complex number is (x u, x v) as C99's Annex G computes it (no 0 * inf NaN
  // from the real operand's zero part), and costs two products instead of four.
  V real_zero(V like_value) {
    V z = e_.zeros(e_.type(like_value));
    if (zero_.size() <= z) zero_.resize(static_cast<std::size_t>(z) + 1, false);
    zero_[z] = true;
    return z;
  }
  bool is_zero(V v) const { return v < zero_.size() && zero_[v]; }
  // a * b + s * c * d (s = +1 or -1), leaving out the products with a structural zero.
  V mul_add(V a, V b, V c, V d, bool subtract, V shape_like) {
    const bool first = !is_zero(a) && !is_zero(b), second = !is_zero(c) && !is_zero(d);
    if (first && second) return subtract ? sub(mul(a, b), mul(c, d)) : add(mul(a, b), mul(c, d));
    if (first) return mul(a, b);
    if (second) return subtract ? e_.neg(mul(c, d)) : mul(c, d);
    return real_zero(shape_like);
  }
  Parts cmul(const Parts& x, const Parts& y) {
    return {mul_add(x.re, y.re, x.im, y.im, true, x.re), mul_add(x.re, y.im, x.im, y.re, false, x.re)};
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
    const Emit::ReducedLayout l = Emit::reduced_layout(e_.type(z.re).shape, axes);
    const Shape& rest = l.rest;
    std::int64_t n = l.n;
    z = {e_.lay_out(z.re, l), e_.lay_out(z.im, l)};
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
  // xs joined along axis `axis` (negative: from the end).
  V join(std::vector<V> xs, std::int64_t axis) {
    Attrs cat;
    cat.axis = axis < 0 ? static_cast<std::int64_t>(e_.type(xs[0]).shape.size()) + axis : axis;
    return b_.emit(Op::Concat, xs, std::move(cat))[0];
  }

  // A X = B in complex numbers: with a real A (a structural zero imaginary part) the parts of
  // B are the columns of one real right-hand side; otherwise the complex kernel on planar
  // operands (LAPACK's complex LU).
  Parts csolve(const Parts& a, const Parts& b) {
    const std::int64_t k = e_.type(b.re).shape.back();
    if (is_zero(a.im)) {
      if (is_zero(b.im)) return {op(Op::Solve, {a.re, b.re}), real_zero(b.re)};
      const V x = op(Op::Solve, {a.re, join({b.re, b.im}, -1)});
      return {e_.slice_last(x, 0, k), e_.slice_last(x, k, 2 * k)};
    }
    Attrs planar;
    planar.mode = kLinalgPlanar;
    return unpack(op(Op::Solve, {pack(a), pack(b)}, std::move(planar)), e_.type(b.re).shape);
  }

  // op(A) X = B with A read from one triangle: a real A solves each part, a complex one runs
  // the complex kernel on planar operands.
  Parts ctriangular_solve(const Node& n, const Parts& a, const Parts& b) {
    Attrs at;
    at.mode = n.attrs.mode;
    if (is_zero(a.im)) {
      const V xr = op(Op::TriangularSolve, {a.re, b.re}, at);
      if (is_zero(b.im)) return {xr, real_zero(b.re)};
      return {xr, op(Op::TriangularSolve, {a.re, b.im}, std::move(at))};
    }
    at.mode |= kLinalgPlanar;
    return unpack(op(Op::TriangularSolve, {pack(a), pack(b)}, std::move(at)), e_.type(b.re).shape);
  }

  // JAX's order of complex numbers: lexicographic, real parts first. x < y (or x <= y).
  V lex_less(const Parts& x, const Parts& y, bool or_equal) {
    const V tie = op(Op::Eq, {x.re, y.re});
    return op(Op::Or, {op(Op::Lt, {x.re, y.re}), op(Op::And, {tie, op(or_equal ? Op::Le : Op::Lt, {x.im, y.im})})});
  }
  Parts choose(V pick_first, const Parts& x, const Parts& y) { return {sel(pick_first, x.re, y.re), sel(pick_first, x.im, y.im)}; }
  // reduce_max / reduce_min: the extreme real part, then among the elements holding it the
  // extreme imaginary part.
  Parts cextreme(const Node& n, const Parts& z) {
    const bool max = n.op == Op::ReduceMax;
    const V re = op(n.op, {z.re}, n.attrs);
    const Shape full = e_.type(z.re).shape;
    std::vector<std::int64_t> kept;
    for (std::int64_t a = 0; a < static_cast<std::int64_t>(full.size()); ++a) {
      if (std::find(n.attrs.dims.begin(), n.attrs.dims.end(), a) == n.attrs.dims.end()) kept.push_back(a);
    }
    const V holds = op(Op::Eq, {z.re, e_.broadcast(re, full, kept)});
    const double far = max ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
    return {re, op(n.op, {sel(holds, z.im, like(z.im, far))}, n.attrs)};
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

  // The node index of fft node n's only user when that user is a slice keeping the first
  // len / 2 + 1 entries of the last axis and all of the others (rfft's).
  std::optional<std::uint32_t> half_spectrum_slice(const Node& n) const {
    const ValueId out = n.outputs[0];
    if (uses_[out] != 1 || std::find(g_.results.begin(), g_.results.end(), out) != g_.results.end()) return std::nullopt;
    const Shape& s = g_.type(out).shape;
    for (std::size_t i = 0; i < g_.nodes.size(); ++i) {
      const Node& u = g_.nodes[i];
      if (std::find(u.inputs.begin(), u.inputs.end(), out) == u.inputs.end()) continue;
      if (u.op != Op::Slice) return std::nullopt;
      const std::size_t r = s.size();
      for (std::size_t a = 0; a < r; ++a) {
        const std::int64_t limit = a + 1 == r ? s[a] / 2 + 1 : s[a];
        if (u.attrs.starts[a] != 0 || u.attrs.strides[a] != 1 || u.attrs.limits[a] != limit) return std::nullopt;
      }
      return static_cast<std::uint32_t>(i);
    }
    return std::nullopt;
  }

  // Whether v is complex and held only in its planar form so far: a structural op then acts
  // on that form (the leading planes axis carried along) instead of splitting out the parts.
  bool only_planar(ValueId v) const { return is_c(v) && planes_[v] != kNone && parts_[v].re == kNone; }

  // Structural op n on planar operands: its attributes shifted past the planes axis.
  void on_planes(const Node& n, std::vector<V> ins) {
    Attrs a = n.attrs;
    auto shifted = [](const std::vector<std::int64_t>& v) {
      std::vector<std::int64_t> out;
      for (auto d : v) out.push_back(d + 1);
      return out;
    };
    switch (n.op) {
      case Op::Reshape: a.shape.insert(a.shape.begin(), 2); break;
      case Op::BroadcastInDim:
        a.dims = shifted(a.dims);
        a.dims.insert(a.dims.begin(), 0);
        a.shape.insert(a.shape.begin(), 2);
        break;
      case Op::Transpose:
        a.dims = shifted(a.dims);
        a.dims.insert(a.dims.begin(), 0);
        break;
      case Op::Slice:
        a.starts.insert(a.starts.begin(), 0);
        a.limits.insert(a.limits.begin(), 2);
        a.strides.insert(a.strides.begin(), 1);
        break;
      case Op::Reverse: case Op::ReduceSum: a.dims = shifted(a.dims); break;
      case Op::Cumsum: case Op::Gather: case Op::Take: case Op::Concat: a.axis += 1; break;
      default: throw InternalError("lower_complex: no planar form of " + std::string(op_name(n.op)));
    }
    planes_[n.outputs[0]] = b_.emit(n.op, ins, std::move(a))[0];
  }
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
      case Op::Constant: return set_parts(n, constant_parts(*n.attrs.literal));
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
        V im = is_zero(y.im) ? x.im : is_zero(x.im) && n.op == Op::Add ? y.im : op(n.op, {x.im, y.im});
        return set_parts(n, {op(n.op, {x.re, y.re}), im});
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
      case Op::Lt: case Op::Le: case Op::Gt: case Op::Ge: {
        Parts x = parts(n.inputs[0]), y = parts(n.inputs[1]);
        if (n.op == Op::Gt || n.op == Op::Ge) std::swap(x, y);
        return set_real(n, lex_less(x, y, n.op == Op::Le || n.op == Op::Ge));
      }
      case Op::Max: case Op::Min: {  // the first operand on ties
        const Parts x = parts(n.inputs[0]), y = parts(n.inputs[1]);
        const V y_wins = n.op == Op::Max ? lex_less(x, y, false) : lex_less(y, x, false);
        return set_parts(n, choose(y_wins, y, x));
      }
      case Op::ReduceMax: case Op::ReduceMin: return set_parts(n, cextreme(n, parts(n.inputs[0])));
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
          return set_parts(n, {re, real_zero(re)});
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
        if (only_planar(n.inputs[0])) return on_planes(n, {planes(n.inputs[0])});
        return set_parts(n, each_part(n, parts(n.inputs[0])));
      case Op::Take: {
        if (only_planar(n.inputs[0])) return on_planes(n, {planes(n.inputs[0]), real_[n.inputs[1]]});
        const V idx[] = {real_[n.inputs[1]]};
        return set_parts(n, each_part(n, parts(n.inputs[0]), idx));
      }
      case Op::Concat: {
        bool all_planar = true;
        for (ValueId v : n.inputs) all_planar = all_planar && only_planar(v);
        if (all_planar) {
          std::vector<V> ins;
          for (ValueId v : n.inputs) ins.push_back(planes(v));
          return on_planes(n, std::move(ins));
        }
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
      case Op::Solve: return set_parts(n, csolve(parts(n.inputs[0]), parts(n.inputs[1])));
      case Op::TriangularSolve: return set_parts(n, ctriangular_solve(n, parts(n.inputs[0]), parts(n.inputs[1])));
      case Op::Cholesky: case Op::Slogdet: case Op::Eigh: case Op::Svd: case Op::Qr: case Op::Lu: {
        Attrs a = n.attrs;  // the complex kernels: planar in, planar out
        a.mode |= kLinalgPlanar;
        planes_[n.outputs[0]] = op(n.op, {planes(n.inputs[0])}, std::move(a));
        return;
      }
      case Op::Eig: {  // the kernel takes a real or planar matrix and writes planar results
        const ValueId x = n.inputs[0];
        Attrs a = n.attrs;
        a.mode |= is_c(x) ? 6 : 4;
        planes_[n.outputs[0]] = op(Op::Eig, {is_c(x) ? planes(x) : real_[x]}, std::move(a));
        return;
      }
      case Op::Fft: {
        // A real signal made complex (rfft, fft of real data) goes to the real-input kernel.
        const Node& src = g_.producer_of(n.inputs[0]);
        if (src.op == Op::Convert && !is_c(src.inputs[0]) && is_float(g_.type(src.inputs[0]).dtype) &&
            g_.type(src.inputs[0]).dtype == part_dtype(n.inputs[0])) {
          Attrs a = n.attrs;
          a.mode |= 2;
          // Read only through a slice of the non-negative frequencies (rfft): the kernel
          // writes just those, and the slice is folded in.
          if (const auto half = half_spectrum_slice(n)) {
            a.mode |= 4;
            planes_[g_.nodes[*half].outputs[0]] = op(Op::Fft, {real_[src.inputs[0]]}, std::move(a));
            folded_.insert(*half);
            return;
          }
          planes_[n.outputs[0]] = op(Op::Fft, {real_[src.inputs[0]]}, std::move(a));
          return;
        }
        planes_[n.outputs[0]] = op(Op::Fft, {fft_operand(n.inputs[0])}, n.attrs);
        return;
      }
      case Op::NamedAxis: {  // never runs (the executor raises for it); keep it, planar
        std::vector<V> ins;
        for (ValueId v : n.inputs) ins.push_back(boundary(v));
        Attrs a = n.attrs;
        if (a.mode == kAxisGather) a.axis += 1;
        return finish_outputs(n, b_.emit(n.op, ins, std::move(a)));
      }
      case Op::HostCall:
        throw TypeError("a host call (qb.pure_callback, qb.debug, a qb.distributed collective) on complex values is "
                        "not supported yet: pass the real and imaginary parts (x.real, x.imag) instead");
      default:
        throw InternalError("lower_complex: no lowering for " + std::string(op_name(n.op)) + " on complex values");
    }
  }

  // The node's lowered outputs: complex ones planar, real ones as they are.
  void finish_outputs(const Node& n, const std::vector<V>& outs) {
    for (std::size_t k = 0; k < outs.size(); ++k) {
      const ValueId v = n.outputs[k];
      if (!is_c(v)) {
        real_[v] = outs[k];
        continue;
      }
      planes_[v] = outs[k];
    }
  }

  // Swaps the two leading axes: a scan's complex xs and ys are [time, 2, ...] (each step's
  // slice then is the body's planar [2, ...]), the planar form of the value [2, time, ...].
  V swap_leading(V x) {
    const auto r = static_cast<std::int64_t>(e_.type(x).shape.size());
    std::vector<std::int64_t> perm{1, 0};
    for (std::int64_t i = 2; i < r; ++i) perm.push_back(i);
    return e_.transpose(x, std::move(perm));
  }

  void lower_region_node(const Node& n) {
    Regions regions;
    for (const auto& r : n.regions) regions.push_back(lower_complex(r, ComplexInterface::planar));
    const bool scan = n.op == Op::Scan;
    const ScanLayout layout = scan ? ScanLayout::of(n) : ScanLayout{};
    std::vector<V> ins;
    for (std::size_t k = 0; k < n.inputs.size(); ++k) {
      const ValueId v = n.inputs[k];
      const bool time_major = scan && k >= layout.consts + layout.carry && is_c(v);
      ins.push_back(time_major ? swap_leading(planes(v)) : boundary(v));
    }
    auto outs = b_.emit(n.op, ins, n.attrs, std::move(regions));
    for (std::size_t k = 0; k < outs.size(); ++k) {
      b_.graph().values[outs[k]].weak = g_.type(n.outputs[k]).weak && !is_c(n.outputs[k]);
      if (scan && k >= layout.carry && is_c(n.outputs[k])) outs[k] = swap_leading(outs[k]);
    }
    finish_outputs(n, outs);
  }

  const Graph& g_;
  Builder b_;
  Emit e_;
  bool interleaved_;          // parameters and results interleaved (else planar)
  std::map<ValueId, V> interleaved_param_;  // a complex parameter's [..., 2] value
  std::vector<V> real_;       // lowered real values
  std::vector<Parts> parts_;  // complex values: their parts
  std::vector<V> planes_;     // complex values: their planar form, once built
  std::vector<bool> zero_;    // lowered values that are structural zeros (real_zero)
  std::vector<std::uint32_t> uses_;         // per source value: its readers (results count)
  std::unordered_set<std::uint32_t> folded_;  // source nodes another node's lowering did
};

}  // namespace

bool has_complex(const Graph& g) { return holds_dtype(g, [](DType d) { return is_complex(d); }); }

std::shared_ptr<const Graph> lower_complex(std::shared_ptr<const Graph> g, ComplexInterface interface) {
  if (!has_complex(*g)) return g;
  Graph out;
  Lowering(*g, out, interface == ComplexInterface::interleaved).run();
  // The rules emit parts and forms that nothing may read (an unused imaginary part, a
  // planar copy), and the same constants many times: simplified like any traced program.
  return std::make_shared<const Graph>(simplify(out));
}

}  // namespace qb
