// The MLX lowering (program.h): each node of the graph becomes mlx::core operations on
// mlx arrays, composed where MLX has no primitive of the same meaning (our integer
// division and shifts at the edges, saturating float-to-int conversion, fmod, cbrt, the
// NaN-last sort order, scatters that drop out-of-range updates). A program without
// regions is one function given to mlx::core::compile (MLX fuses its elementwise chains);
// regions (cond, scan, while, custom rules) run their bodies from the host, evaluating
// predicates. Derivative rules live in our IR, so MLX never differentiates.
#ifdef QUABLA_HAVE_MLX
#include <mlx/mlx.h>

#include <cstdlib>
#include <cstring>
#include <string_view>
#include <limits>
#include <mutex>

#include "quabla/backends/mlx/program.h"
#include "quabla/ir/errors.h"
#include "quabla/ir/regions.h"
#include "quabla/transforms/expand_threefry.h"
#include "quabla/transforms/lower_narrow.h"
#include "quabla/transforms/lower_complex.h"
#include "quabla/runtime/interrupt.h"

namespace qb::mlxb {

namespace mx = mlx::core;

bool available() { return true; }
std::string unavailable_reason() { return {}; }
std::string version() { return mx::version(); }

namespace {

using Arrays = std::vector<mx::array>;

[[noreturn]] void unsupported(Op op, const std::string& why) {
  const std::string name(op_name(op));
  throw UnsupportedOperation(name + " is not supported on the MLX backend" + (why.empty() ? "" : " (" + why + ")") +
                                 "; run this program on the CPU (device='cpu')",
                             name, "mlx");
}

mx::Dtype to_mx(DType d) {
  switch (d) {
    case DType::f32: return mx::float32;
    case DType::f64: return mx::float64;
    case DType::i32: return mx::int32;
    case DType::i64: return mx::int64;
    case DType::bool_: return mx::bool_;
    case DType::c64: case DType::c128: QB_NARROW_INT_CASES: break;  // refused at compile
  }
  return mx::float32;
}

mx::Shape to_shape(const Shape& s) {
  mx::Shape out;
  for (auto d : s) {
    if (d > std::numeric_limits<std::int32_t>::max()) throw ValueError("MLX backend: an axis of " + std::to_string(d) + " elements exceeds MLX's 32-bit shapes");
    out.push_back(static_cast<std::int32_t>(d));
  }
  return out;
}

std::vector<int> to_ints(const std::vector<std::int64_t>& v) { return std::vector<int>(v.begin(), v.end()); }

bool is_fl(DType d) { return d == DType::f32 || d == DType::f64; }

// A scalar of dtype d.
mx::array scalar(double v, DType d) { return mx::array(v, to_mx(d)); }
mx::array iscalar(std::int64_t v, DType d) {
  if (d == DType::i32) return mx::array(static_cast<std::int32_t>(v), mx::int32);
  if (d == DType::i64) return mx::array(static_cast<std::int64_t>(v), mx::int64);
  return mx::array(static_cast<double>(v), to_mx(d));
}

std::int64_t int_lo(DType d) { return d == DType::i32 ? std::numeric_limits<std::int32_t>::min() : std::numeric_limits<std::int64_t>::min(); }
std::int64_t int_hi(DType d) { return d == DType::i32 ? std::numeric_limits<std::int32_t>::max() : std::numeric_limits<std::int64_t>::max(); }

// float -> int as dtype.h's float_to_int: NaN -> 0, saturating at the range.
mx::array float_to_int(const mx::array& x, DType in, DType out) {
  const double lo = static_cast<double>(int_lo(out));
  const double hi_f = out == DType::i32 ? 2147483647.0 : 9223372036854775807.0;  // as F, the CPU's comparison
  const mx::array xs = mx::where(mx::isnan(x), scalar(0, in), mx::clip(x, scalar(lo, in), std::nullopt));
  const mx::array big = mx::greater_equal(x, mx::astype(scalar(hi_f, in), to_mx(in)));
  const mx::array safe = mx::where(big, scalar(0, in), xs);
  return mx::where(big, iscalar(int_hi(out), out), mx::astype(safe, to_mx(out)));
}

// NaN-propagating maximum/minimum (NumPy's and the CPU's).
mx::array nan_max(const mx::array& a, const mx::array& b, bool is_max) {
  const mx::array m = is_max ? mx::maximum(a, b) : mx::minimum(a, b);
  return mx::where(mx::isnan(a), a, mx::where(mx::isnan(b), b, m));
}

mx::array elementwise(Op op, DType in, DType out, const Arrays& a) {
  if (op == Op::Convert) {
    if (out == DType::bool_) return mx::not_equal(a[0], iscalar(0, in));
    if (is_fl(in) && !is_fl(out)) return float_to_int(a[0], in, out);
    return mx::astype(a[0], to_mx(out));
  }
  switch (op) {
    case Op::Lt: return mx::less(a[0], a[1]);
    case Op::Le: return mx::less_equal(a[0], a[1]);
    case Op::Gt: return mx::greater(a[0], a[1]);
    case Op::Ge: return mx::greater_equal(a[0], a[1]);
    case Op::Eq: return mx::equal(a[0], a[1]);
    case Op::Ne: return mx::not_equal(a[0], a[1]);
    case Op::Select: return mx::where(a[0], a[1], a[2]);
    case Op::StopGradient: return a[0];
    default: break;
  }
  if (in == DType::bool_) {
    switch (op) {
      case Op::Not: return mx::logical_not(a[0]);
      case Op::And: return mx::logical_and(a[0], a[1]);
      case Op::Or: return mx::logical_or(a[0], a[1]);
      case Op::Xor: return mx::not_equal(a[0], a[1]);
      default: unsupported(op, "bool operands");
    }
  }
  if (!is_fl(in)) {
    const int bits = in == DType::i32 ? 32 : 64;
    const mx::array zero = iscalar(0, in), one = iscalar(1, in), minus = iscalar(-1, in), lo = iscalar(int_lo(in), in);
    switch (op) {
      case Op::Neg: return mx::subtract(zero, a[0]);
      case Op::Abs: return mx::where(mx::less(a[0], zero), mx::subtract(zero, a[0]), a[0]);
      case Op::Sign: return mx::where(mx::greater(a[0], zero), one, mx::where(mx::less(a[0], zero), minus, zero));
      case Op::Floor: case Op::Ceil: case Op::Round: return a[0];
      case Op::Not: return mx::bitwise_invert(a[0]);
      case Op::Add: return mx::add(a[0], a[1]);
      case Op::Sub: return mx::subtract(a[0], a[1]);
      case Op::Mul: return mx::multiply(a[0], a[1]);
      case Op::Div: case Op::Rem: {
        // Truncating division from the floor division, with XLA's edges: x / 0 = -1,
        // x % 0 = x, LO / -1 = LO, x % -1 = 0.
        const mx::array bz = mx::equal(a[1], zero), bm = mx::equal(a[1], minus);
        const mx::array b = mx::where(mx::logical_or(bz, bm), one, a[1]);
        const mx::array fq = mx::floor_divide(a[0], b);
        const mx::array fr = mx::subtract(a[0], mx::multiply(fq, b));
        const mx::array adjust = mx::logical_and(mx::not_equal(fr, zero), mx::not_equal(mx::less(a[0], zero), mx::less(b, zero)));
        const mx::array q = mx::where(adjust, mx::add(fq, one), fq);
        if (op == Op::Div) return mx::where(bz, minus, mx::where(bm, mx::subtract(zero, a[0]), q));
        const mx::array r = mx::subtract(a[0], mx::multiply(q, b));
        return mx::where(bz, a[0], mx::where(bm, zero, r));
      }
      case Op::Pow: {
        // Non-negative powers by squaring (wrapping); a negative power is 0 but of +-1.
        mx::array e = mx::maximum(a[1], zero), base = a[0], r = mx::full_like(a[0], 1);
        r = mx::broadcast_to(r, mx::broadcast_shapes(a[0].shape(), a[1].shape()));
        for (int k = 0; k < bits; ++k) {
          const mx::array bit = mx::not_equal(mx::bitwise_and(e, one), zero);
          r = mx::where(bit, mx::multiply(r, base), r);
          base = mx::multiply(base, base);
          e = mx::right_shift(e, one);
        }
        const mx::array odd = mx::not_equal(mx::bitwise_and(a[1], one), zero);
        const mx::array neg = mx::where(mx::equal(a[0], one), one,
                                        mx::where(mx::equal(a[0], minus), mx::where(odd, minus, one), zero));
        return mx::where(mx::less(a[1], zero), neg, r);
      }
      case Op::Max: return mx::maximum(a[0], a[1]);
      case Op::Min: return mx::minimum(a[0], a[1]);
      case Op::And: return mx::bitwise_and(a[0], a[1]);
      case Op::Or: return mx::bitwise_or(a[0], a[1]);
      case Op::Xor: return mx::bitwise_xor(a[0], a[1]);
      case Op::ShiftLeft: case Op::ShiftRight: {
        const mx::array out_of_range = mx::logical_or(mx::less(a[1], zero), mx::greater_equal(a[1], iscalar(bits, in)));
        const mx::array s = mx::where(out_of_range, zero, a[1]);
        if (op == Op::ShiftLeft) return mx::where(out_of_range, zero, mx::left_shift(a[0], s));
        return mx::where(out_of_range, mx::where(mx::less(a[0], zero), minus, zero), mx::right_shift(a[0], s));
      }
      default: unsupported(op, "integer operands");
    }
  }
  const mx::array zero = scalar(0, in), one = scalar(1, in);
  switch (op) {
    case Op::Neg: return mx::negative(a[0]);
    case Op::Abs: return mx::abs(a[0]);
    case Op::Sign: return mx::where(mx::greater(a[0], zero), one, mx::where(mx::less(a[0], zero), mx::negative(one), a[0]));
    case Op::Floor: return mx::floor(a[0]);
    case Op::Ceil: return mx::ceil(a[0]);
    case Op::Round: return mx::round(a[0]);
    case Op::Sqrt: return mx::sqrt(a[0]);
    case Op::Cbrt: {
      const mx::array p = mx::power(mx::abs(a[0]), scalar(1.0 / 3.0, in));
      return mx::where(mx::less(a[0], zero), mx::negative(p), mx::where(mx::equal(a[0], zero), a[0], p));
    }
    case Op::Exp: return mx::exp(a[0]);
    case Op::Exp2: return mx::power(scalar(2, in), a[0]);
    case Op::Expm1: return mx::expm1(a[0]);
    case Op::Log: return mx::log(a[0]);
    case Op::Log2: return mx::log2(a[0]);
    case Op::Log10: return mx::log10(a[0]);
    case Op::Log1p: return mx::log1p(a[0]);
    case Op::Sin: return mx::sin(a[0]);
    case Op::Cos: return mx::cos(a[0]);
    case Op::Tan: return mx::tan(a[0]);
    case Op::Asin: return mx::arcsin(a[0]);
    case Op::Acos: return mx::arccos(a[0]);
    case Op::Atan: return mx::arctan(a[0]);
    case Op::Sinh: return mx::sinh(a[0]);
    case Op::Cosh: return mx::cosh(a[0]);
    case Op::Tanh: return mx::tanh(a[0]);
    case Op::Asinh: return mx::arcsinh(a[0]);
    case Op::Acosh: return mx::arccosh(a[0]);
    case Op::Atanh: return mx::arctanh(a[0]);
    case Op::Erf: return mx::erf(a[0]);
    case Op::Erfc: return mx::subtract(one, mx::erf(a[0]));  // loses relative accuracy past x ~ 3 (docs)
    case Op::ErfInv: return mx::erfinv(a[0]);
    case Op::Logistic: return mx::sigmoid(a[0]);
    case Op::Softplus: return mx::logaddexp(a[0], zero);
    case Op::Silu: return mx::multiply(a[0], mx::sigmoid(a[0]));
    case Op::GeluTanh: {
      const mx::array x3 = mx::multiply(mx::multiply(a[0], a[0]), a[0]);
      const mx::array z = mx::multiply(scalar(2 * 0.79788456080286535588, in), mx::add(a[0], mx::multiply(scalar(0.044715, in), x3)));
      return mx::multiply(a[0], mx::sigmoid(z));
    }
    case Op::IsNan: return mx::isnan(a[0]);
    case Op::IsInf: return mx::isinf(a[0]);
    case Op::IsFinite: return mx::isfinite(a[0]);
    case Op::Add: return mx::add(a[0], a[1]);
    case Op::Sub: return mx::subtract(a[0], a[1]);
    case Op::Mul: return mx::multiply(a[0], a[1]);
    case Op::Div: return mx::divide(a[0], a[1]);
    case Op::Pow: return mx::power(a[0], a[1]);
    case Op::Atan2: return mx::arctan2(a[0], a[1]);
    case Op::Hypot: return mx::sqrt(mx::add(mx::multiply(a[0], a[0]), mx::multiply(a[1], a[1])));
    case Op::Rem: return mx::subtract(a[0], mx::multiply(mx::trunc(mx::divide(a[0], a[1])), a[1]));  // fmod
    case Op::Max: return nan_max(a[0], a[1], true);
    case Op::Min: return nan_max(a[0], a[1], false);
    case Op::LogAddExp: return mx::logaddexp(a[0], a[1]);
    default: unsupported(op, "");
  }
}

// An array over a host buffer without copying (the buffer is kept alive by the array).
mx::array from_buffer(const BufferPtr& b, const ValueType& t) {
  if (num_elements(t.shape) == 0) return mx::zeros(to_shape(t.shape), to_mx(t.dtype));
  auto keep = std::make_shared<BufferPtr>(b);
  return mx::array(const_cast<std::byte*>(b->data()), to_shape(t.shape), to_mx(t.dtype), [keep](void*) mutable { keep.reset(); });
}

// NaN-last "a before b" of the CPU's sort order.
mx::array less_nan_last(const mx::array& a, const mx::array& b, DType d) {
  if (!is_fl(d)) return mx::less(a, b);
  return mx::logical_and(mx::logical_not(mx::isnan(a)), mx::logical_or(mx::isnan(b), mx::less(a, b)));
}

struct Evaluator {
  // Runs g on args (one array per parameter), recursing into regions.
  Arrays run(const Graph& g, const Arrays& args) const {
    std::vector<std::optional<mx::array>> env(g.values.size());
    for (std::size_t i = 0; i < g.params.size(); ++i) env[g.params[i]] = args[i];
    for (const Node& n : g.nodes) {
      if (n.op == Op::Parameter) continue;
      Arrays in;
      for (ValueId v : n.inputs) in.push_back(*env[v]);
      Arrays out = node(g, n, in);
      for (std::size_t k = 0; k < out.size(); ++k) env[n.outputs[k]] = std::move(out[k]);
    }
    Arrays res;
    for (ValueId v : g.results) res.push_back(*env[v]);
    return res;
  }

  Arrays node(const Graph& g, const Node& n, const Arrays& in) const {
    const ValueType& ot = g.type(n.outputs.empty() ? n.inputs[0] : n.outputs[0]);
    auto in_type = [&](std::size_t i) -> const ValueType& { return g.type(n.inputs[i]); };
    if (n.op == Op::Constant) return {from_buffer(n.attrs.literal->data, n.attrs.literal->type)};
    if (is_elementwise(n.op)) {
      const DType in_d = in_type(n.op == Op::Select ? 1 : 0).dtype;
      mx::array r = elementwise(n.op, in_d, ot.dtype, in);
      if (r.dtype() != to_mx(ot.dtype)) r = mx::astype(r, to_mx(ot.dtype));
      return {mx::broadcast_to(r, to_shape(ot.shape))};
    }
    switch (n.op) {
      case Op::Reshape: return {mx::reshape(in[0], to_shape(ot.shape))};
      case Op::BroadcastInDim: {
        mx::Shape s(ot.shape.size(), 1);
        const Shape& xs = in_type(0).shape;
        for (std::size_t i = 0; i < xs.size(); ++i) s[static_cast<std::size_t>(n.attrs.dims[i])] = static_cast<int>(xs[i]);
        return {mx::broadcast_to(mx::reshape(in[0], s), to_shape(ot.shape))};
      }
      case Op::Transpose: return {mx::transpose(in[0], to_ints(n.attrs.dims))};
      case Op::Slice: {
        mx::Shape start, stop, strides;
        for (std::size_t a = 0; a < n.attrs.starts.size(); ++a) {
          start.push_back(static_cast<int>(n.attrs.starts[a]));
          stop.push_back(static_cast<int>(n.attrs.limits[a]));
          strides.push_back(static_cast<int>(n.attrs.strides[a]));
        }
        return {mx::slice(in[0], start, stop, strides)};
      }
      case Op::Reverse: {
        mx::array r = in[0];
        for (auto a : n.attrs.dims) r = mx::flip(r, static_cast<int>(a));
        return {r};
      }
      case Op::Concat: return {mx::concatenate(in, static_cast<int>(n.attrs.axis))};
      case Op::Pad: {
        // The pad value everywhere, then the operand at low + i * (interior + 1).
        const Shape& xs = in_type(0).shape;
        mx::array out = mx::broadcast_to(in[1], to_shape(ot.shape));
        if (num_elements(xs) == 0) return {mx::copy(out)};
        mx::Shape start, stop, strides;
        for (std::size_t a = 0; a < xs.size(); ++a) {
          const std::int64_t step = n.attrs.strides[a] + 1;
          start.push_back(static_cast<int>(n.attrs.starts[a]));
          stop.push_back(static_cast<int>(n.attrs.starts[a] + (xs[a] - 1) * step + 1));
          strides.push_back(static_cast<int>(step));
        }
        return {mx::slice_update(out, in[0], start, stop, strides)};
      }
      case Op::ReduceSum: case Op::ReduceProd: case Op::ReduceMax: case Op::ReduceMin: case Op::ReduceAny:
      case Op::ReduceAll: {
        const std::vector<int> axes = to_ints(n.attrs.dims);
        const DType d = in_type(0).dtype;
        mx::array r = in[0];
        switch (n.op) {
          case Op::ReduceSum: r = mx::sum(in[0], axes); break;
          case Op::ReduceProd: r = mx::prod(in[0], axes); break;
          case Op::ReduceMax: case Op::ReduceMin: {
            const bool is_max = n.op == Op::ReduceMax;
            if (num_elements(in_type(0).shape) == 0) {  // the identity
              const double inf = std::numeric_limits<double>::infinity();
              r = is_fl(d) ? mx::full(to_shape(ot.shape), scalar(is_max ? -inf : inf, d))
                           : mx::full(to_shape(ot.shape), iscalar(is_max ? int_lo(d) : int_hi(d), d));
              break;
            }
            r = is_max ? mx::max(in[0], axes) : mx::min(in[0], axes);
            if (is_fl(d)) r = mx::where(mx::any(mx::isnan(in[0]), axes), scalar(std::nan(""), d), r);
            break;
          }
          case Op::ReduceAny: r = mx::any(in[0], axes); break;
          default: r = mx::all(in[0], axes); break;
        }
        return {mx::astype(r, to_mx(ot.dtype))};
      }
      case Op::Cumsum: return {mx::astype(mx::cumsum(in[0], static_cast<int>(n.attrs.axis), n.attrs.reverse, true), to_mx(ot.dtype))};
      case Op::Gather: {
        std::vector<std::int64_t> idx = n.attrs.dims;
        const mx::array i = mx::array(idx.begin(), mx::Shape{static_cast<int>(idx.size())}, mx::int64);
        return {mx::take(in[0], i, static_cast<int>(n.attrs.axis))};
      }
      case Op::ScatterAdd: return {scatter(in[0], mx::array(n.attrs.dims.begin(), mx::Shape{static_cast<int>(n.attrs.dims.size())}, mx::int64),
                                           in[1], static_cast<int>(n.attrs.axis), kScatterAdd)};
      case Op::Take: {
        const int axis = static_cast<int>(n.attrs.axis);
        const std::int64_t len = in_type(0).shape[static_cast<std::size_t>(axis)];
        const mx::array idx = mx::astype(in[1], mx::int64);
        const mx::array clipped = mx::clip(idx, mx::array(std::int64_t{0}), mx::array(len - 1));
        mx::array r = mx::take(in[0], clipped, axis);
        if (n.attrs.mode == 1) {  // out of range reads zero
          const mx::array valid = mx::logical_and(mx::greater_equal(idx, mx::array(std::int64_t{0})), mx::less(idx, mx::array(len)));
          mx::Shape vs(static_cast<std::size_t>(axis), 1);
          for (auto d : idx.shape()) vs.push_back(d);
          for (std::size_t a = static_cast<std::size_t>(axis) + 1; a < in_type(0).shape.size(); ++a) vs.push_back(1);
          r = mx::where(mx::reshape(valid, vs), r, mx::zeros_like(r));
        }
        return {r};
      }
      case Op::Scatter: {
        const mx::array idx = mx::reshape(mx::astype(in[1], mx::int64), {-1});
        return {scatter(in[0], idx, in[2], static_cast<int>(n.attrs.axis), static_cast<int>(n.attrs.mode))};
      }
      case Op::Argsort: {
        // The CPU's order: stable, NaN last ascending and first descending. MLX's argsort is
        // stable, so two passes from the least significant key: by value (descending as the
        // value's mirror, exact for floats and, through ~x, for integers), then by the NaN flag.
        const DType d = in_type(0).dtype;
        const bool desc = n.attrs.mode == 1;
        mx::array key = in[0];
        if (is_fl(d)) key = mx::where(mx::isnan(key), scalar(0, d), key);
        if (desc) key = is_fl(d) ? mx::negative(key) : mx::bitwise_invert(key);
        mx::array order = mx::argsort(key, -1);
        if (is_fl(d)) {
          mx::array flag = mx::astype(mx::isnan(in[0]), mx::int32);
          if (desc) flag = mx::subtract(mx::array(1), flag);
          const mx::array second = mx::argsort(mx::take_along_axis(flag, order, -1), -1);
          order = mx::take_along_axis(order, second, -1);
        }
        return {mx::astype(order, to_mx(ot.dtype))};
      }
      case Op::SearchSorted: {
        // For each v, how many a come before it (left) or not after it (right), in the
        // NaN-last order: a count over the broadcast [..., m, n] comparison.
        const DType d = in_type(0).dtype;
        const mx::array a = mx::expand_dims(in[0], -2), v = mx::expand_dims(in[1], -1);
        const mx::array before = n.attrs.mode == 1 ? mx::logical_not(less_nan_last(v, a, d)) : less_nan_last(a, v, d);
        return {mx::astype(mx::sum(mx::astype(before, mx::int64), -1), to_mx(ot.dtype))};
      }
      case Op::MatMul: {
        if (!is_fl(ot.dtype)) unsupported(n.op, "integer matrix products");
        return {mx::matmul(in[0], in[1])};
      }
      case Op::Cholesky: case Op::TriangularSolve: case Op::Solve: case Op::Slogdet: case Op::Eigh: case Op::Svd:
      case Op::Qr: case Op::Lu:
        return {linalg(g, n, in)};
      case Op::Cond: case Op::Scan: case Op::While: case Op::CustomJvp: case Op::CustomVjp: case Op::Checkpoint:
      case Op::LinearSolve:
        return region(g, n, in);
      default: unsupported(n.op, "");
    }
  }

  // Scatters `updates` (shape of take's result along `axis`) into x at idx (flat, k
  // indices), combining by mode; out-of-range updates are dropped (they go to an extra
  // slot that is cut off).
  static mx::array scatter(const mx::array& x, const mx::array& idx, const mx::array& updates, int axis, int mode) {
    const int rank = static_cast<int>(x.ndim());
    const int len = x.shape(axis);
    const int k = idx.shape(0);
    std::vector<std::pair<int, int>> pad_width(static_cast<std::size_t>(rank), {0, 0});
    pad_width[static_cast<std::size_t>(axis)] = {0, 1};
    const mx::array xp = mx::pad(x, pad_width, mx::array(0, x.dtype()));
    const mx::array valid = mx::logical_and(mx::greater_equal(idx, mx::array(std::int64_t{0})), mx::less(idx, mx::array(static_cast<std::int64_t>(len))));
    const mx::array at = mx::where(valid, idx, mx::array(static_cast<std::int64_t>(len)));
    // updates [outer..., k, inner...] -> [k, outer..., 1, inner...] for scatter along axis.
    // updates: [outer..., idx..., inner...] flattened around the k indices.
    mx::Shape us;
    for (int a = 0; a < axis; ++a) us.push_back(x.shape(a));
    us.push_back(k);
    for (int a = axis + 1; a < rank; ++a) us.push_back(x.shape(a));
    mx::array u = mx::reshape(updates, us);
    u = mx::moveaxis(u, axis, 0);
    u = mx::expand_dims(u, axis + 1);
    mx::array r = xp;
    const std::vector<mx::array> indices{at};
    const std::vector<int> axes{axis};
    switch (mode) {
      case kScatterAdd: r = mx::scatter_add(xp, indices, u, axes); break;
      case kScatterSet: r = mx::scatter(xp, indices, u, axes); break;
      case kScatterMul: r = mx::scatter_prod(xp, indices, u, axes); break;
      case kScatterMin: r = mx::scatter_min(xp, indices, u, axes); break;
      case kScatterMax: r = mx::scatter_max(xp, indices, u, axes); break;
      default: throw InternalError("mlx: unknown scatter mode");
    }
    mx::Shape start(static_cast<std::size_t>(rank), 0), stop = x.shape();
    return mx::slice(r, start, stop);
  }

  mx::array linalg(const Graph& g, const Node& n, const Arrays& in) const {
    const mx::Device cpu = mx::Device::cpu;  // MLX runs its factorizations on the CPU stream
    const ValueType& ot = g.type(n.outputs[0]);
    const Shape& as = g.type(n.inputs[0]).shape;
    const std::size_t r = as.size();
    const int m = static_cast<int>(as[r - 2]), nn = static_cast<int>(as[r - 1]);
    switch (n.op) {
      case Op::Cholesky: {
        // Not positive definite: NaN everywhere, as the CPU (MLX leaves garbage there): a
        // factor whose reconstruction misses A is replaced.
        const mx::array l = mx::linalg::cholesky(in[0], false, cpu);
        const mx::array ok = mx::all(mx::isfinite(l), {-2, -1}, true);
        const mx::array diag_ok = mx::all(mx::greater(mx::diagonal(l, 0, -2, -1), scalar(0, ot.dtype)), {-1}, true);
        const mx::array good = mx::logical_and(ok, mx::expand_dims(diag_ok, -1));
        return mx::where(good, mx::tril(l), scalar(std::nan(""), ot.dtype));
      }
      case Op::TriangularSolve: {
        const int mode = static_cast<int>(n.attrs.mode);
        bool lower = mode & 1;
        mx::array a = in[0];
        if (mode & 4) {  // unit diagonal: A's diagonal is not read
          const mx::array eye = mx::eye(nn, to_mx(ot.dtype));
          a = mx::add(mx::multiply(a, mx::subtract(scalar(1, ot.dtype), eye)), eye);
        }
        a = lower ? mx::tril(a) : mx::triu(a);
        if (mode & 2) {
          a = mx::swapaxes(a, -1, -2);
          lower = !lower;
        }
        return mx::linalg::solve_triangular(a, in[1], !lower, cpu);
      }
      case Op::Solve: return mx::linalg::solve(in[0], in[1], cpu);
      case Op::Slogdet: {
        auto [sign, logabs] = mx::linalg::slogdet(in[0], cpu);
        return mx::stack({sign, logabs}, -1);
      }
      case Op::Eigh: {
        auto [w, v] = mx::linalg::eigh(in[0], "L", cpu);
        return mx::concatenate({mx::expand_dims(w, -2), v}, -2);
      }
      case Op::Svd: {
        const bool full = n.attrs.mode == 1;
        const int k = std::min(m, nn), w = full ? std::max(m, nn) : k;
        const int ucols = full ? m : k, vrows = full ? nn : k;
        auto usv = mx::linalg::svd(in[0], true, cpu);  // U m x m, S k, Vt n x n
        const int b = static_cast<int>(r) - 2;
        auto cut = [&](const mx::array& x, int rows, int cols) {
          mx::Shape start(x.ndim(), 0), stop = x.shape();
          stop[static_cast<std::size_t>(b)] = rows;
          stop[static_cast<std::size_t>(b) + 1] = cols;
          mx::array y = mx::slice(x, start, stop);
          std::vector<std::pair<int, int>> pw(x.ndim(), {0, 0});
          pw.back() = {0, w - cols};
          return mx::pad(y, pw, mx::array(0, y.dtype()));
        };
        const mx::array U = cut(usv[0], m, ucols);
        mx::array S = mx::expand_dims(usv[1], -2);
        {
          std::vector<std::pair<int, int>> pw(S.ndim(), {0, 0});
          pw.back() = {0, w - k};
          S = mx::pad(S, pw, mx::array(0, S.dtype()));
        }
        const mx::array V = cut(mx::swapaxes(usv[2], -1, -2), nn, vrows);
        return mx::concatenate({U, S, V}, -2);
      }
      case Op::Qr: {
        if (n.attrs.mode == 1 && m > nn) unsupported(n.op, "complete mode of a tall matrix: MLX's qr is reduced");
        auto [q, rr] = mx::linalg::qr(in[0], cpu);
        const int k = std::min(m, nn), qc = n.attrs.mode == 1 ? m : k, w = std::max(qc, nn);
        auto widen = [&](const mx::array& x) {
          std::vector<std::pair<int, int>> pw(x.ndim(), {0, 0});
          pw.back() = {0, w - x.shape(-1)};
          return mx::pad(x, pw, mx::array(0, x.dtype()));
        };
        return mx::concatenate({widen(q), widen(mx::triu(rr))}, -2);
      }
      default: {  // Lu: [perm, pivots, L\U]
        auto [lu, piv] = mx::linalg::lu_factor(in[0], cpu);
        // perm from the row interchanges, applied in order (piv[j]: the row swapped with j).
        const mx::array pv = mx::astype(piv, mx::int64);
        mx::array perm = mx::broadcast_to(mx::arange(nn, mx::int64), pv.shape());
        const mx::array cols = mx::arange(nn, mx::int64);
        for (int j = 0; j < nn; ++j) {
          const mx::array target = mx::take(pv, j, -1);                       // [...]
          const mx::array a_j = mx::take(perm, j, -1);                        // perm[j]
          const mx::array a_t = mx::take_along_axis(perm, mx::expand_dims(target, -1), -1);  // perm[target]
          const mx::array is_j = mx::equal(cols, mx::array(static_cast<std::int64_t>(j)));
          const mx::array is_t = mx::equal(cols, mx::expand_dims(target, -1));
          perm = mx::where(is_j, a_t, mx::where(is_t, mx::expand_dims(a_j, -1), perm));
        }
        const mx::Dtype dt = to_mx(ot.dtype);
        return mx::concatenate({mx::expand_dims(mx::astype(perm, dt), -2), mx::expand_dims(mx::astype(pv, dt), -2), lu}, -2);
      }
    }
  }

  Arrays region(const Graph& g, const Node& n, const Arrays& in) const {
    auto truth = [](mx::array p) {
      mx::eval(p);
      return p.item<bool>();
    };
    switch (n.op) {
      case Op::Cond: {
        const bool pred = truth(in[0]);
        return run(*n.regions[pred ? 1 : 0], Arrays(in.begin() + 1, in.end()));
      }
      case Op::Scan: {
        const auto nc = static_cast<std::size_t>(n.attrs.num_consts), nk = static_cast<std::size_t>(n.attrs.num_carry);
        const std::size_t nx = in.size() - nc - nk, ny = n.outputs.size() - nk;
        const std::int64_t len = n.attrs.length;
        Arrays carry(in.begin() + static_cast<std::ptrdiff_t>(nc), in.begin() + static_cast<std::ptrdiff_t>(nc + nk));
        std::vector<Arrays> ys(ny);
        InterruptPoller interrupt(1);
        for (std::int64_t s = 0; s < len; ++s) {
          interrupt.poll();
          const std::int64_t t = n.attrs.reverse ? len - 1 - s : s;
          Arrays args{mx::array(static_cast<double>(n.attrs.start + t), mx::float64)};
          for (std::size_t i = 0; i < nc; ++i) args.push_back(in[i]);
          for (auto& c : carry) args.push_back(c);
          for (std::size_t i = 0; i < nx; ++i) args.push_back(mx::take(in[nc + nk + i], static_cast<int>(t), 0));
          Arrays outs = run(*n.regions[0], args);
          for (std::size_t k = 0; k < nk; ++k) carry[k] = outs[k];
          for (std::size_t j = 0; j < ny; ++j) ys[j].push_back(outs[nk + j]);
          if ((s + 1) % 16 == 0) mx::eval(carry);  // keeps MLX's graph from growing with the loop
        }
        Arrays out = carry;
        for (std::size_t j = 0; j < ny; ++j) {
          const ValueType& t = g.type(n.outputs[nk + j]);
          if (len == 0) {
            out.push_back(mx::zeros(to_shape(t.shape), to_mx(t.dtype)));
            continue;
          }
          if (n.attrs.reverse) std::reverse(ys[j].begin(), ys[j].end());
          out.push_back(mx::stack(ys[j], 0));
        }
        return out;
      }
      case Op::While: {
        const auto nc = static_cast<std::size_t>(n.attrs.num_consts);
        Arrays carry(in.begin() + static_cast<std::ptrdiff_t>(nc), in.end());
        InterruptPoller interrupt(1);
        for (;;) {
          interrupt.poll();
          Arrays args(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(nc));
          args.insert(args.end(), carry.begin(), carry.end());
          if (!truth(run(*n.regions[0], args)[0])) break;
          carry = run(*n.regions[1], args);
          mx::eval(carry);
        }
        return carry;
      }
      default:  // custom_jvp, custom_vjp, checkpoint, linear_solve: the primal body
        return run(*n.regions[0], in);
    }
  }
};

bool has_regions_anywhere(const Graph& g) {
  for (const Node& n : g.nodes)
    if (has_regions(n.op)) return true;
  return false;
}

// Checks every op of g (and of its regions) lowers, before anything runs. MLX's GPU
// (Metal) has no float64: a float64 program there is refused here, not at its first run.
void check_ops(const Graph& g, bool on_gpu) {
  for (const Node& n : g.nodes) {
    if (n.op == Op::CustomVjpLin) unsupported(n.op, "only transforms consume it");
    if (on_gpu)
      for (ValueId v : n.outputs)
        if (g.type(v).dtype == DType::f64) {
          throw UnsupportedOperation(std::string(op_name(n.op)) + " on float64: MLX's GPU has no float64; use float32 "
                                         "(astype, or qb.set_default_dtype(qb.float32)) or device='cpu'",
                                     std::string(op_name(n.op)), "mlx");
        }
    for (const auto& r : n.regions) check_ops(*r, on_gpu);
  }
}

struct Held final : Resident {
  explicit Held(mx::array a) : array(std::move(a)) {}
  mx::array array;
};

// The host bytes of an evaluated array (made row-contiguous first).
void copy_out(mx::array a, std::byte* dst, std::size_t bytes) {
  if (!bytes) return;
  a = mx::reshape(a, {-1});
  mx::eval(a);
  if (!a.flags().row_contiguous) {
    a = mx::copy(a);
    mx::eval(a);
  }
  std::memcpy(dst, a.data<std::uint8_t>(), bytes);
}

class MlxProgram final : public Program {
 public:
  explicit MlxProgram(std::shared_ptr<const Graph> g) : g_(std::move(g)) {
    check_ops(*g_, mx::default_device() == mx::Device::gpu);
    const char* env = std::getenv("QUABLA_MLX_COMPILE");
    compiled_ = !has_regions_anywhere(*g_) && !(env && std::string_view(env) == "0");
    if (compiled_) {
      auto graph = g_;
      fn_ = mx::compile([graph](const Arrays& args) { return Evaluator{}.run(*graph, args); });
    }
  }

  std::vector<BufferPtr> run_host(std::span<const BufferPtr> args) const override {
    const Graph& g = *g_;
    Arrays in;
    for (std::size_t i = 0; i < args.size(); ++i) in.push_back(from_buffer(args[i], g.type(g.params[i])));
    Arrays out;
    try {
      out = compiled_ ? fn_(in) : Evaluator{}.run(g, in);
      for (std::size_t j = 0; j < out.size(); ++j) out[j] = mx::reshape(mx::astype(out[j], to_mx(g.type(g.results[j]).dtype)), {-1});
      mx::eval(out);
    } catch (const UnsupportedOperation&) {
      throw;
    } catch (const std::exception& e) {
      throw DeviceError(std::string("the MLX backend failed: ") + e.what());
    }
    std::vector<BufferPtr> res;
    for (std::size_t j = 0; j < out.size(); ++j) {
      const ValueType& t = g.type(g.results[j]);
      const std::size_t bytes = static_cast<std::size_t>(num_elements(t.shape)) * itemsize(t.dtype);
      auto b = Buffer::allocate(bytes);
      copy_out(out[j], b->data(), bytes);
      res.push_back(std::move(b));
    }
    return res;
  }

  std::vector<ResidentPtr> run_resident(std::span<const ResidentPtr> args) const override {
    const Graph& g = *g_;
    Arrays in;
    for (const auto& r : args) in.push_back(static_cast<const Held&>(*r).array);
    Arrays out;
    try {
      out = compiled_ ? fn_(in) : Evaluator{}.run(g, in);
      for (std::size_t j = 0; j < out.size(); ++j) {
        const ValueType& t = g.type(g.results[j]);
        out[j] = mx::reshape(mx::astype(out[j], to_mx(t.dtype)), to_shape(t.shape));
      }
      mx::eval(out);  // results are evaluated: the next step starts from data, not a graph
    } catch (const UnsupportedOperation&) {
      throw;
    } catch (const std::exception& e) {
      throw DeviceError(std::string("the MLX backend failed: ") + e.what());
    }
    std::vector<ResidentPtr> res;
    for (auto& a : out) res.push_back(std::make_shared<const Held>(std::move(a)));
    return res;
  }

  bool compiled() const override { return compiled_; }

 private:
  std::shared_ptr<const Graph> g_;
  bool compiled_ = false;
  std::function<Arrays(const Arrays&)> fn_;
};

}  // namespace

ResidentPtr upload(const BufferPtr& data, const ValueType& type) {
  mx::array a = mx::copy(from_buffer(data, type));  // MLX's own storage, not the host buffer's
  mx::eval(a);
  return std::make_shared<const Held>(std::move(a));
}

BufferPtr download(const Resident& r, const ValueType& type) {
  const std::size_t bytes = static_cast<std::size_t>(num_elements(type.shape)) * itemsize(type.dtype);
  auto b = Buffer::allocate(bytes);
  copy_out(static_cast<const Held&>(r).array, b->data(), bytes);
  return b;
}

std::shared_ptr<const Program> compile(std::shared_ptr<const Graph> graph) {
  if (has_complex(*graph)) {
    throw UnsupportedOperation("complex numbers are not supported on the MLX backend yet (the CPU and CUDA backends "
                               "run them); run this program on the CPU (device='cpu')", "complex", "mlx");
  }
  if (has_narrow_int(*graph)) {
    throw UnsupportedOperation("int8, int16, uint8, uint16 and uint32 are not supported on the MLX backend yet (the "
                               "CPU and CUDA backends run them); convert with .astype(qb.int32) or run this program "
                               "on the CPU (device='cpu')", "narrow integers", "mlx");
  }
  // MLX's graph building is not thread-safe across threads building at once: serialise.
  static std::mutex mu;
  std::lock_guard lock(mu);
  return std::make_shared<MlxProgram>(expand_threefry(std::move(graph)));  // its int32 rounds
}

}  // namespace qb::mlxb
#endif
