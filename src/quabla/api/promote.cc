// Promotion and broadcasting: the rules of API.md §1.
#include <algorithm>
#include <cstdint>
#include <string>

#include "quabla/api/functions.h"
#include "quabla/ir/shape_error.h"
#include "quabla/ir/errors.h"

namespace qb::api {

namespace {
std::string s(std::string_view v) { return std::string(v); }

DType signed_of_bits(int bits) {
  return bits <= 8 ? DType::i8 : bits <= 16 ? DType::i16 : bits <= 32 ? DType::i32 : DType::i64;
}

// JAX's integer lattice: the wider of two of one signedness; an unsigned one meeting a
// signed one takes the signed dtype wide enough for both (uint8 with int8 is int16, uint32
// with int32 is int64).
DType join_ints(DType a, DType b) {
  if (is_unsigned(a) == is_unsigned(b)) return int_bits(a) >= int_bits(b) ? a : b;
  const DType u = is_unsigned(a) ? a : b, i = is_unsigned(a) ? b : a;
  return signed_of_bits(std::max(int_bits(i), 2 * int_bits(u)));
}
}  // namespace

// One operand complex (the dtypes differ): a weak operand adopts the other's precision;
// an integer or bool takes the complex dtype (the default complex for a weak complex); a
// float of the complex's part precision joins it; float32 with complex128 (or float64 with
// complex64) raises, as float32 with float64 does.
namespace {
DType complex_dtype(std::string_view fname, const ValueType& a, const ValueType& b) {
  const ValueType& c = is_complex(a.dtype) ? a : b;
  const ValueType& o = is_complex(a.dtype) ? b : a;
  const DType default_complex = complex_of(default_float_dtype());
  if (!is_inexact(o.dtype)) return c.weak ? default_complex : c.dtype;
  if (c.weak && o.weak) return default_complex;
  if (c.weak) return is_complex(o.dtype) ? o.dtype : complex_of(o.dtype);
  if (o.weak) return c.dtype;
  if (complex_part(c.dtype) == complex_part(o.dtype)) return complex_of(complex_part(c.dtype));
  throw ValueError(s(fname) + ": cannot mix " + s(dtype_name(a.dtype)) + " " + shape_str(a.shape) + " and " +
                   s(dtype_name(b.dtype)) + " " + shape_str(b.shape) +
                   " implicitly; convert one operand with .astype(qb." + s(dtype_name(a.dtype)) + ") or .astype(qb." +
                   s(dtype_name(b.dtype)) + ")");
}
}  // namespace

DType arithmetic_dtype(std::string_view fname, const ValueType& a, const ValueType& b) {
  // The lattice of API.md §1 (JAX's, restricted to Quabla's dtypes): bool < int < float;
  // a weak (Python-number) operand adopts the other's dtype within its kind; int32 + int64
  // is int64; an integer meeting a float takes the float's dtype, or the default float
  // when that float is a weak Python float.
  if (a.dtype == DType::bool_ && b.dtype == DType::bool_) {
    throw TypeError(s(fname) + ": arithmetic on two bool arrays is not defined; convert one with "
                    ".astype(qb.float32) or .astype(qb.float64) first (or use & | ~ for logic)");
  }
  if (a.dtype != b.dtype && (is_complex(a.dtype) || is_complex(b.dtype))) return complex_dtype(fname, a, b);
  // bool acts as 0/1 of the other dtype (a Python int: the default integer)
  if (a.dtype == DType::bool_) return is_int(b.dtype) && b.weak ? default_int_dtype() : b.dtype;
  if (b.dtype == DType::bool_) return is_int(a.dtype) && a.weak ? default_int_dtype() : a.dtype;
  if (a.dtype == b.dtype) return a.dtype;
  if (is_int(a.dtype) && is_int(b.dtype)) {
    if (a.weak != b.weak) return a.weak ? b.dtype : a.dtype;
    if (a.weak) return default_int_dtype();  // two Python ints: the default integer, as JAX
    return join_ints(a.dtype, b.dtype);
  }
  if (is_int(a.dtype) != is_int(b.dtype)) {
    const ValueType& f = is_float(a.dtype) ? a : b;
    return f.weak ? default_float_dtype() : f.dtype;
  }
  if (a.weak && !b.weak) return b.dtype;
  if (b.weak && !a.weak) return a.dtype;
  if (a.weak && b.weak) return default_float_dtype();
  throw ValueError(s(fname) + ": cannot mix " + s(dtype_name(a.dtype)) + " " + shape_str(a.shape) + " and " +
                   s(dtype_name(b.dtype)) + " " + shape_str(b.shape) +
                   " implicitly; convert one operand with .astype(qb." + s(dtype_name(a.dtype)) + ") or .astype(qb." +
                   s(dtype_name(b.dtype)) + ")");
}

void check_weak_int_fits(Builder& b, std::string_view fname, V x, DType to) {
  // A Python int that the integer dtype cannot hold raises, as JAX's OverflowError, instead
  // of wrapping.
  const ValueType& t = b.type(x);
  if (!t.weak || t.dtype != DType::i64 || !is_int(to) || to == DType::i64) return;
  const Node& n = b.graph().producer_of(x);
  if (n.op != Op::Constant || !n.attrs.literal || n.attrs.literal->type.shape.size() != 0) return;
  const std::int64_t v = *n.attrs.literal->data->as<std::int64_t>();
  if (v < int_min(to) || v > int_max(to)) {
    throw ValueError(s(fname) + ": the Python int " + std::to_string(v) + " does not fit in " + s(dtype_name(to)) +
                     "; convert the array with .astype(qb.int64) first");
  }
}

V to_inexact(Builder& b, V x) {
  const ValueType& t = b.type(x);
  if (is_float(t.dtype)) return x;
  const bool weak = t.weak;
  V r = astype(b, x, inexact_dtype(t.dtype));
  if (weak) b.graph().values[r].weak = true;
  return r;
}

V astype(Builder& b, V x, DType to) {
  if (b.type(x).dtype == to) return x;
  Attrs a;
  a.dtype = to;
  return b.emit1(Op::Convert, {x}, std::move(a));
}

V broadcast_to(Builder& b, V x, std::span<const std::int64_t> shape, std::string_view fname) {
  const auto& xs = b.type(x).shape;
  if (std::equal(xs.begin(), xs.end(), shape.begin(), shape.end())) return x;
  check_shape(shape, fname, /*allow_zero=*/true);
  if (xs.size() > shape.size()) {
    throw ShapeError(s(fname) + ": cannot broadcast an array of shape " + shape_str(xs) + " to the lower-rank shape " +
                     shape_str(shape));
  }
  const std::size_t lead = shape.size() - xs.size();
  Attrs a;
  a.shape.assign(shape.begin(), shape.end());
  for (std::size_t i = 0; i < xs.size(); ++i) {
    if (xs[i] != 1 && xs[i] != shape[lead + i]) {
      throw ShapeError(s(fname) + ": cannot broadcast shape " + shape_str(xs) + " to " + shape_str(shape) +
                       " (axis " + std::to_string(i) + " has size " + std::to_string(xs[i]) + ", not 1 or " +
                       std::to_string(shape[lead + i]) + ")");
    }
    a.dims.push_back(static_cast<std::int64_t>(lead + i));
  }
  return b.emit1(Op::BroadcastInDim, {x}, std::move(a));
}

DType common_dtype(Builder& b, std::string_view fname, std::span<const V> xs, bool allow_bool) {
  ValueType acc = b.type(xs[0]);
  for (std::size_t i = 1; i < xs.size(); ++i) {
    const ValueType& t = b.type(xs[i]);
    if (allow_bool && acc.dtype == DType::bool_ && t.dtype == DType::bool_) continue;
    // Weak only while every operand is (a weak int meeting a weak float gives a weak float).
    acc.dtype = arithmetic_dtype(fname, acc, t);
    acc.weak = acc.weak && t.weak;
  }
  return acc.dtype;
}

std::vector<V> promote_broadcast_dtype_only(Builder& b, std::string_view fname, std::span<const V> xs) {
  const DType d = common_dtype(b, fname, xs, true);
  std::vector<V> out;
  for (V x : xs) out.push_back(astype(b, x, d));
  return out;
}

std::vector<V> promote_broadcast(Builder& b, std::string_view fname, std::span<const V> xs, bool allow_bool) {
  // The common dtype: bool only if every operand is bool and allow_bool.
  const DType common = common_dtype(b, fname, xs, allow_bool);
  Shape shape = b.type(xs[0]).shape;
  for (std::size_t i = 1; i < xs.size(); ++i) shape = broadcast_shapes(shape, b.type(xs[i]).shape, fname);
  std::vector<V> out;
  for (V x : xs) {
    check_weak_int_fits(b, fname, x, common);
    out.push_back(broadcast_to(b, astype(b, x, common), shape, fname));
  }
  return out;
}

}  // namespace qb::api
