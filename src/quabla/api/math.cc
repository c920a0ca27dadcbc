// Elementwise functions of API.md §2.
#include <cmath>
#include <limits>
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
  store_double(dtype, lit->data->data(), value);
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

namespace {
// Ops with integer kernels (the rest compute in the integer's inexact_dtype, as JAX).
bool has_int_kernel(Op op) {
  return op == Op::Neg || op == Op::Abs || op == Op::Sign || op == Op::Floor || op == Op::Ceil ||
         op == Op::Round || op == Op::StopGradient || op == Op::Add || op == Op::Sub || op == Op::Mul ||
         op == Op::Pow || op == Op::Max || op == Op::Min || op == Op::Rem;
}
}  // namespace

V unary(Builder& b, std::string_view fname, Op op, V x) {
  if (op == Op::StopGradient && !is_inexact(b.type(x).dtype)) return x;  // no derivative to stop (as JAX)
  require_float(b, fname, x);
  if (op == Op::Round && is_complex(b.type(x).dtype)) {  // each part, as NumPy and jax.numpy
    return b.emit1(Op::Complex, {b.emit1(Op::Round, {b.emit1(Op::Real, {x})}), b.emit1(Op::Round, {b.emit1(Op::Imag, {x})})});
  }
  if (!has_int_kernel(op)) x = to_inexact(b, x);
  const bool weak = b.type(x).weak;
  return keep_weak(b, b.emit1(op, {x}), weak);
}

V predicate(Builder& b, std::string_view fname, Op op, V x) {
  // A bool or an integer is finite and never NaN or infinite: test it as float.
  if (!is_inexact(b.type(x).dtype)) x = astype(b, x, DType::f32);
  return b.emit1(op, {x});
}

V binary(Builder& b, std::string_view fname, Op op, V x, V y) {
  const bool weak = b.type(x).weak && b.type(y).weak;
  const V xs[] = {x, y};
  auto v = promote_broadcast(b, fname, xs, false);
  if (is_int(b.type(v[0]).dtype) && !has_int_kernel(op)) {  // true division, atan2, ...: in float
    v[0] = to_inexact(b, v[0]);
    v[1] = to_inexact(b, v[1]);
  }
  if (op == Op::Pow && is_int(b.type(v[0]).dtype)) return int_power(b, v[0], v[1]);
  if (op == Op::Rem && is_int(b.type(v[0]).dtype)) {
    // fmod of integers: exact (C's truncated remainder, NumPy's fmod), and x fmod 0 is 0
    // (NumPy's result) rather than the kernel's.
    V zero = like(b, v[0], 0.0);
    return keep_weak(b, b.emit1(Op::Select, {b.emit1(Op::Eq, {v[1], zero}), zero, b.emit1(op, {v[0], v[1]})}), weak);
  }
  return keep_weak(b, b.emit1(op, {v[0], v[1]}), weak);
}

V bitwise(Builder& b, std::string_view fname, Op op, V x, V y) {
  for (V v : {x, y}) {
    const DType d = b.type(v).dtype;
    if (!is_int(d) && d != DType::bool_) {
      throw TypeError(s(fname) + ": needs integer or bool arrays, got " + s(dtype_name(d)) +
                      (is_float(d) ? "; compare first (x > 0) or convert with .astype(qb.int64)" : ""));
    }
  }
  const V xs[] = {x, y};
  auto v = promote_broadcast(b, fname, xs, true);
  const DType d = b.type(v[0]).dtype;
  if ((op == Op::ShiftLeft || op == Op::ShiftRight) && !is_int(d)) {
    throw TypeError(s(fname) + ": shifts need integer arrays, got bool");
  }
  return b.emit1(op, {v[0], v[1]});
}

V bitwise_not(Builder& b, V x) {
  const DType d = b.type(x).dtype;
  if (!is_int(d) && d != DType::bool_) {
    throw TypeError("invert (~): needs an integer or bool array, got " + s(dtype_name(d)) +
                    "; use qb.logical_not or convert with .astype(qb.bool_)");
  }
  return b.emit1(Op::Not, {x});
}

V floor_divide(Builder& b, V x, V y) {
  const V xs[] = {x, y};
  auto v = promote_broadcast(b, "floor_divide", xs, false);
  const bool weak = b.type(x).weak && b.type(y).weak;
  V zero = like(b, v[0], 0.0);
  V rem = b.emit1(Op::Rem, {v[0], v[1]});
  if (is_unsigned(b.type(v[0]).dtype)) return keep_weak(b, b.emit1(Op::Div, {v[0], v[1]}), weak);  // JAX's: x // 0 all ones
  if (is_int(b.type(v[0]).dtype)) {
    // Truncated quotient, one less where the signs differ and the division was inexact
    // (JAX's formula, so x // 0 matches it too).
    V div = b.emit1(Op::Div, {v[0], v[1]});
    V sx = b.emit1(Op::Sign, {v[0]}), sy = b.emit1(Op::Sign, {v[1]});
    V fix = b.emit1(Op::And, {b.emit1(Op::Ne, {sx, sy}), b.emit1(Op::Ne, {rem, zero})});
    return keep_weak(b, b.emit1(Op::Select, {fix, b.emit1(Op::Sub, {div, like(b, div, 1.0)}), div}), weak);
  }
  // Floats: (x - fmod(x, y)) / y, rounded, one less where fmod's sign differs from y's.
  V div = b.emit1(Op::Div, {b.emit1(Op::Sub, {v[0], rem}), v[1]});
  V fix = b.emit1(Op::And, {b.emit1(Op::Ne, {rem, zero}),
                            b.emit1(Op::Ne, {b.emit1(Op::Sign, {v[1]}), b.emit1(Op::Sign, {rem})})});
  div = b.emit1(Op::Select, {fix, b.emit1(Op::Sub, {div, like(b, div, 1.0)}), div});
  V r = b.emit1(Op::Round, {div});
  // x // 0 keeps IEEE's quotient (NumPy: 1 // 0 is inf, 0 // 0 NaN); an infinite x over a
  // nonzero y is NaN, as NumPy's and JAX's floor division (inf // 2 has no integer floor).
  V q = b.emit1(Op::Div, {v[0], v[1]});
  V nonfinite = b.emit1(Op::Not, {b.emit1(Op::IsFinite, {q})});
  V by_zero = b.emit1(Op::Eq, {v[1], like(b, v[1], 0.0)});
  V special = b.emit1(Op::Select, {by_zero, q, like(b, q, std::numeric_limits<double>::quiet_NaN())});
  return keep_weak(b, b.emit1(Op::Select, {nonfinite, special, r}), weak);
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
  const bool weak = b.type(x).weak && b.type(y).weak;  // where(m, 1.0, 0.0) is weak, as in JAX
  const V xs[] = {x, y};
  auto v = promote_broadcast(b, "where", xs, true);
  Shape shape = broadcast_shapes(b.type(cond).shape, b.type(v[0]).shape, "where");
  cond = broadcast_to(b, cond, shape, "where");
  return keep_weak(b, b.emit1(Op::Select, {cond, broadcast_to(b, v[0], shape, "where"), broadcast_to(b, v[1], shape, "where")}),
                   weak);
}

V int_power(Builder& b, V x, V y) { return b.emit1(Op::Pow, {x, y}); }

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
  x = to_inexact(b, x);
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
  x = to_inexact(b, x);
  return b.emit1(Op::Silu, {x});
}

V gelu(Builder& b, V x, bool approximate) {
  require_float(b, "gelu", x);
  x = to_inexact(b, x);
  if (approximate) return b.emit1(Op::GeluTanh, {x});  // a primitive for accuracy (scalar_math.h)
  // 0.5 x erfc(-x / sqrt 2): exact form, accurate in the left tail.
  V t = b.emit1(Op::Mul, {like(b, x, -0.70710678118654752440), x});
  return b.emit1(Op::Mul, {b.emit1(Op::Mul, {like(b, x, 0.5), x}), b.emit1(Op::Erfc, {t})});
}

V clip(Builder& b, V x, std::optional<V> lo, std::optional<V> hi) {
  require_float(b, "clip", x);
  const bool complex_bound = (lo && is_complex(b.type(*lo).dtype)) || (hi && is_complex(b.type(*hi).dtype));
  if (is_complex(b.type(x).dtype) || complex_bound) {  // as jnp.clip (NumPy clips lexicographically)
    throw ValueError("clip: complex values have no ordering and cannot be clipped; clip the real and imaginary "
                     "parts (or the modulus) instead");
  }
  // Selects rather than max/min: x gets derivative 0 at a bound (API.md §2; max/min would
  // share a tie). A NaN x passes through and a NaN bound gives NaN, as in NumPy and JAX.
  V r = x;
  auto bound = [&](V limit, Op past) {
    V out = compare(b, "clip", past, r, limit);
    if (is_float(b.type(limit).dtype)) out = logical(b, "clip", Op::Or, out, b.emit1(Op::IsNan, {limit}), false);
    return where(b, out, limit, r);
  };
  if (lo) r = bound(*lo, Op::Le);
  if (hi) r = bound(*hi, Op::Ge);
  const DType d = b.type(x).dtype;
  if (b.type(r).dtype != d) {
    if (is_int(d)) return r;  // integer x with float bounds: a float result, as JAX
    throw ValueError("clip: bounds of another float dtype than x (" + std::string(dtype_name(d)) +
                     "); convert them with astype");
  }
  return r;
}

V mod(Builder& b, V x, V y) {
  const V xs[] = {x, y};
  auto v = promote_broadcast(b, "mod", xs, false);
  V r = b.emit1(Op::Rem, {v[0], v[1]});
  if (is_int(b.type(r).dtype)) {
    // The divisor's sign; x % 0 is 0 (NumPy's and JAX's result).
    V zero = like(b, r, 0.0);
    V fix = b.emit1(Op::And, {b.emit1(Op::Ne, {r, zero}),
                              b.emit1(Op::Ne, {b.emit1(Op::Lt, {r, zero}), b.emit1(Op::Lt, {v[1], zero})})});
    r = b.emit1(Op::Select, {fix, b.emit1(Op::Add, {r, v[1]}), r});
    return b.emit1(Op::Select, {b.emit1(Op::Eq, {v[1], zero}), zero, r});
  }
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
  if (is_int(b.type(x).dtype)) return x;  // nothing to replace
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
