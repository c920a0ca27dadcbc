// Promotion and broadcasting: the rules of API.md §1.
#include <string>

#include "quabla/api/functions.h"
#include "quabla/ir/errors.h"

namespace qb::api {

namespace {
std::string s(std::string_view v) { return std::string(v); }
}  // namespace

DType arithmetic_dtype(std::string_view fname, const ValueType& a, const ValueType& b) {
  if (a.dtype == DType::bool_ && b.dtype == DType::bool_) {
    throw TypeError(s(fname) + ": arithmetic on two bool arrays is not defined; convert one with "
                    ".astype(qb.float32) or .astype(qb.float64) first (or use & | ~ for logic)");
  }
  if (a.dtype == DType::bool_) return b.dtype;  // bool acts as 0/1 of the float dtype
  if (b.dtype == DType::bool_) return a.dtype;
  if (a.dtype == b.dtype) return a.dtype;
  if (a.weak && !b.weak) return b.dtype;
  if (b.weak && !a.weak) return a.dtype;
  if (a.weak && b.weak) return DType::f64;
  throw ValueError(s(fname) + ": cannot mix " + s(dtype_name(a.dtype)) + " " + shape_str(a.shape) + " and " +
                   s(dtype_name(b.dtype)) + " " + shape_str(b.shape) +
                   " implicitly; convert one operand with .astype(qb." + s(dtype_name(a.dtype)) + ") or .astype(qb." +
                   s(dtype_name(b.dtype)) + ")");
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
    throw ValueError(s(fname) + ": cannot broadcast an array of shape " + shape_str(xs) + " to the lower-rank shape " +
                     shape_str(shape));
  }
  const std::size_t lead = shape.size() - xs.size();
  Attrs a;
  a.shape.assign(shape.begin(), shape.end());
  for (std::size_t i = 0; i < xs.size(); ++i) {
    if (xs[i] != 1 && xs[i] != shape[lead + i]) {
      throw ValueError(s(fname) + ": cannot broadcast shape " + shape_str(xs) + " to " + shape_str(shape) +
                       " (axis " + std::to_string(i) + " has size " + std::to_string(xs[i]) + ", not 1 or " +
                       std::to_string(shape[lead + i]) + ")");
    }
    a.dims.push_back(static_cast<std::int64_t>(lead + i));
  }
  return b.emit1(Op::BroadcastInDim, {x}, std::move(a));
}

std::vector<V> promote_broadcast(Builder& b, std::string_view fname, std::span<const V> xs, bool allow_bool) {
  // The common dtype: bool only if every operand is bool and allow_bool.
  ValueType acc = b.type(xs[0]);
  for (std::size_t i = 1; i < xs.size(); ++i) {
    const ValueType& t = b.type(xs[i]);
    if (allow_bool && acc.dtype == DType::bool_ && t.dtype == DType::bool_) continue;
    acc.dtype = arithmetic_dtype(fname, acc, t);
    acc.weak = acc.weak && t.weak;  // the result is strong as soon as one operand is
  }
  Shape shape = b.type(xs[0]).shape;
  for (std::size_t i = 1; i < xs.size(); ++i) shape = broadcast_shapes(shape, b.type(xs[i]).shape, fname);
  std::vector<V> out;
  for (V x : xs) out.push_back(broadcast_to(b, astype(b, x, acc.dtype), shape, fname));
  return out;
}

}  // namespace qb::api
