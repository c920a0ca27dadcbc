// Elementwise functions of API.md §2.
#include <cmath>
#include <string>

#include "quabla/api/functions.h"
#include "quabla/ir/errors.h"

namespace qb::api {

namespace {

std::string s(std::string_view v) { return std::string(v); }

void require_float(Builder& b, std::string_view fname, V x) {
  if (b.type(x).dtype == DType::bool_) {
    throw TypeError(s(fname) + ": not defined for bool arrays; convert with .astype(qb.float32) or "
                    ".astype(qb.float64) first");
  }
}

}  // namespace

V scalar_constant(Builder& b, double value, DType dtype) {
  auto lit = std::make_shared<Literal>();
  lit->type = ValueType{dtype, {}, false};
  lit->data = Buffer::allocate(itemsize(dtype));
  switch (dtype) {
    case DType::f32: *lit->data->as<float>() = static_cast<float>(value); break;
    case DType::f64: *lit->data->as<double>() = value; break;
    case DType::bool_: *lit->data->as<std::uint8_t>() = value != 0; break;
    case DType::i32: *lit->data->as<std::int32_t>() = static_cast<std::int32_t>(value); break;
  }
  return b.constant(std::move(lit));
}

namespace {
// A scalar constant of x's dtype broadcast to x's shape.
V like(Builder& b, V x, double value) {
  const ValueType& t = b.type(x);
  return broadcast_to(b, scalar_constant(b, value, t.dtype), t.shape);
}
}  // namespace

namespace {
// A function of weak values only is weak (like arithmetic on Python numbers). Inside a
// trace this keeps a loop index or a Python-number carry weak through `i * 0.5`, so it
// still adopts the dtype of the float32 array it meets.
V keep_weak(Builder& b, V out, bool weak) {
  if (weak) b.graph().values[out].weak = true;
  return out;
}
}  // namespace

V unary(Builder& b, std::string_view fname, Op op, V x) {
  if (op == Op::StopGradient && b.type(x).dtype == DType::bool_) return x;  // no derivative to stop (as JAX)
  require_float(b, fname, x);
  const bool weak = b.type(x).weak;
  return keep_weak(b, b.emit1(op, {x}), weak);
}

V predicate(Builder& b, std::string_view fname, Op op, V x) {
  // A bool (0 or 1) is finite and never NaN or infinite: test it as float.
  if (b.type(x).dtype == DType::bool_) x = astype(b, x, DType::f32);
  return b.emit1(op, {x});
}

V binary(Builder& b, std::string_view fname, Op op, V x, V y) {
  const bool weak = b.type(x).weak && b.type(y).weak;
  const V xs[] = {x, y};
  auto v = promote_broadcast(b, fname, xs, false);
  return keep_weak(b, b.emit1(op, {v[0], v[1]}), weak);
}

V compare(Builder& b, std::string_view fname, Op op, V x, V y) {
  const V xs[] = {x, y};
  auto v = promote_broadcast(b, fname, xs, true);
  return b.emit1(op, {v[0], v[1]});
}

V logical(Builder& b, std::string_view fname, Op op, V x, V y, bool strict_bool) {
  for (V v : {x, y}) {
    if (strict_bool && b.type(v).dtype != DType::bool_) {
      throw TypeError(s(fname) + ": needs bool arrays, got " + s(dtype_name(b.type(v).dtype)) +
                      "; compare first (x > 0) or convert with .astype(qb.bool_)");
    }
  }
  V xb = astype(b, x, DType::bool_), yb = astype(b, y, DType::bool_);
  const V xs[] = {xb, yb};
  auto v = promote_broadcast(b, fname, xs, true);
  return b.emit1(op, {v[0], v[1]});
}

V logical_not(Builder& b, V x, bool strict_bool) {
  if (strict_bool && b.type(x).dtype != DType::bool_) {
    throw TypeError("invert (~): needs a bool array, got " + s(dtype_name(b.type(x).dtype)) +
                    "; use qb.logical_not or convert with .astype(qb.bool_)");
  }
  return b.emit1(Op::Not, {astype(b, x, DType::bool_)});
}

V where(Builder& b, V c, V x, V y) {
  V cond = astype(b, c, DType::bool_);
  const V xs[] = {x, y};
  auto v = promote_broadcast(b, "where", xs, true);
  Shape shape = broadcast_shapes(b.type(cond).shape, b.type(v[0]).shape, "where");
  cond = broadcast_to(b, cond, shape, "where");
  return b.emit1(Op::Select, {cond, broadcast_to(b, v[0], shape, "where"), broadcast_to(b, v[1], shape, "where")});
}

V integer_power(Builder& b, V x, std::int64_t n) {
  require_float(b, "power", x);
  if (n == 0) return like(b, x, 1.0);
  // Square-and-multiply: exact products (each one correctly rounded), as JAX's integer_pow.
  std::optional<V> acc;
  V base = x;
  while (n > 0) {
    if (n & 1) acc = acc ? b.emit1(Op::Mul, {*acc, base}) : base;
    n >>= 1;
    if (n) base = b.emit1(Op::Mul, {base, base});
  }
  return *acc;
}

V power(Builder& b, V x, V y) { return binary(b, "power", Op::Pow, x, y); }

V square(Builder& b, V x) {
  require_float(b, "square", x);
  return b.emit1(Op::Mul, {x, x});
}

V reciprocal(Builder& b, V x) {
  require_float(b, "reciprocal", x);
  return b.emit1(Op::Div, {like(b, x, 1.0), x});
}

V relu(Builder& b, V x) {
  require_float(b, "relu", x);
  // select(x <= 0, 0, x): subgradient 0 at 0 (API.md §2), NaN passes through.
  V zero = like(b, x, 0.0);
  return b.emit1(Op::Select, {b.emit1(Op::Le, {x, zero}), zero, x});
}

V silu(Builder& b, V x) {
  require_float(b, "silu", x);
  return b.emit1(Op::Silu, {x});
}

V gelu(Builder& b, V x, bool approximate) {
  require_float(b, "gelu", x);
  if (approximate) return b.emit1(Op::GeluTanh, {x});  // a primitive for accuracy (scalar_math.h)
  // 0.5 x erfc(-x / sqrt 2): exact form, accurate in the left tail.
  V t = b.emit1(Op::Mul, {like(b, x, -0.70710678118654752440), x});
  return b.emit1(Op::Mul, {b.emit1(Op::Mul, {like(b, x, 0.5), x}), b.emit1(Op::Erfc, {t})});
}

V clip(Builder& b, V x, std::optional<V> lo, std::optional<V> hi) {
  require_float(b, "clip", x);
  // Selects rather than max/min: x gets derivative 0 at a bound (API.md §2; max/min would
  // share a tie). A NaN x passes through and a NaN bound gives NaN, as in NumPy and JAX.
  V r = x;
  auto bound = [&](V limit, Op past) {
    V out = logical(b, "clip", Op::Or, compare(b, "clip", past, r, limit), b.emit1(Op::IsNan, {limit}), false);
    return where(b, out, limit, r);
  };
  if (lo) r = bound(*lo, Op::Le);
  if (hi) r = bound(*hi, Op::Ge);
  const DType d = b.type(x).dtype;
  if (b.type(r).dtype != d) {
    throw ValueError("clip: bounds of another float dtype than x (" + std::string(dtype_name(d)) +
                     "); convert them with astype");
  }
  return r;
}

V mod(Builder& b, V x, V y) {
  const V xs[] = {x, y};
  auto v = promote_broadcast(b, "mod", xs, false);
  V r = b.emit1(Op::Rem, {v[0], v[1]});
  // Move a nonzero remainder whose sign differs from the divisor's into the divisor's sign.
  V zero = like(b, r, 0.0);
  V r_neg = b.emit1(Op::Lt, {r, zero});
  V y_neg = b.emit1(Op::Lt, {v[1], zero});
  V fix = b.emit1(Op::And, {b.emit1(Op::Ne, {r, zero}), b.emit1(Op::Ne, {r_neg, y_neg})});
  r = b.emit1(Op::Select, {fix, b.emit1(Op::Add, {r, v[1]}), r});
  // A zero remainder takes the divisor's sign (NumPy: 6 mod -2 is -0.0, -6 mod 2 is 0.0).
  // Subtracting (stop_gradient(r) - r), exactly +0 where r is 0, keeps r's derivative (1 in
  // x) on the signed zero without touching its sign.
  V signed_zero = b.emit1(Op::Select, {y_neg, like(b, r, -0.0), zero});
  V zero_with_derivative = b.emit1(Op::Sub, {signed_zero, b.emit1(Op::Sub, {b.emit1(Op::StopGradient, {r}), r})});
  return b.emit1(Op::Select, {b.emit1(Op::Eq, {r, zero}), zero_with_derivative, r});
}

V nan_to_num(Builder& b, V x, double nan, std::optional<double> posinf, std::optional<double> neginf) {
  require_float(b, "nan_to_num", x);
  const DType d = b.type(x).dtype;
  const double big = d == DType::f32 ? 3.4028234663852886e38 : 1.7976931348623157e308;
  V r = b.emit1(Op::Select, {b.emit1(Op::IsNan, {x}), like(b, x, nan), x});
  V inf = b.emit1(Op::IsInf, {x});
  V pos = b.emit1(Op::And, {inf, b.emit1(Op::Gt, {x, like(b, x, 0.0)})});
  V neg = b.emit1(Op::And, {inf, b.emit1(Op::Lt, {x, like(b, x, 0.0)})});
  r = b.emit1(Op::Select, {pos, like(b, x, posinf.value_or(big)), r});
  return b.emit1(Op::Select, {neg, like(b, x, neginf.value_or(-big)), r});
}

}  // namespace qb::api
