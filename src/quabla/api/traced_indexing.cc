// Traced indices (API.md §1 indexing): the argument checks and dtype rules around the take,
// scatter, argsort and searchsorted primitives. The NumPy-level index forms (x[idx],
// x.at[idx], take_along_axis, sort, ...) are compositions in python/quabla/_indexing.py.
#include <string>

#include "quabla/api/functions.h"
#include "quabla/ir/errors.h"

namespace qb::api {

namespace {
std::string s(std::string_view v) { return std::string(v); }

std::int64_t checked_axis(Builder& b, std::string_view fname, V x, std::int64_t axis) {
  const auto rank = static_cast<std::int64_t>(b.type(x).shape.size());
  if (rank == 0) throw ValueError(s(fname) + ": cannot index a 0-d array");
  return normalize_axis(axis, static_cast<int>(rank), fname);
}

V checked_indices(Builder& b, std::string_view fname, V idx) {
  const DType d = b.type(idx).dtype;
  if (!is_int(d)) {
    throw TypeError(s(fname) + ": indices must be integers, got " + s(dtype_name(d)) +
                    (d == DType::bool_ ? "; boolean masks need a static shape: use qb.where(mask, x, y) or "
                                         "qb.nonzero(mask, size=...)"
                                       : "; convert with .astype(qb.int32)"));
  }
  return idx;
}
}  // namespace

V take_indices(Builder& b, V x, V idx, std::int64_t axis, bool fill) {
  axis = checked_axis(b, "take", x, axis);
  idx = checked_indices(b, "take", idx);
  if (b.type(x).shape[static_cast<std::size_t>(axis)] == 0 && !fill && num_elements(b.type(idx).shape) > 0) {
    throw IndexError("take: cannot index axis " + std::to_string(axis) + " of size 0");
  }
  Attrs a;
  a.axis = axis;
  a.mode = fill ? 1 : 0;
  return b.emit1(Op::Take, {x, idx}, std::move(a));
}

V scatter_indices(Builder& b, V x, V idx, V updates, std::int64_t axis, std::int64_t mode, bool unique) {
  axis = checked_axis(b, "scatter", x, axis);
  idx = checked_indices(b, "scatter", idx);
  const ValueType xt = b.type(x);
  if (xt.dtype == DType::bool_ && mode != kScatterSet) {
    throw TypeError("scatter: add/multiply/min/max are not defined for bool arrays; use set, or convert first");
  }
  Shape us(xt.shape.begin(), xt.shape.begin() + axis);
  const Shape& is = b.type(idx).shape;
  us.insert(us.end(), is.begin(), is.end());
  us.insert(us.end(), xt.shape.begin() + axis + 1, xt.shape.end());
  const ValueType& ut = b.type(updates);
  if (is_float(ut.dtype) && is_float(xt.dtype) && ut.dtype != xt.dtype && !ut.weak) {
    throw ValueError("scatter: updates are " + s(dtype_name(ut.dtype)) + " but the array is " + s(dtype_name(xt.dtype)) +
                     "; convert one with astype");
  }
  check_weak_int_fits(b, "scatter", updates, xt.dtype);
  V u = broadcast_to(b, astype(b, updates, xt.dtype), us, "scatter (updates)");
  Attrs a;
  a.axis = axis;
  a.mode = mode;
  a.reverse = unique;
  return b.emit1(Op::Scatter, {x, idx, u}, std::move(a));
}

V argsort_last(Builder& b, V x, bool descending) {
  const ValueType& t = b.type(x);
  if (t.shape.empty()) throw ValueError("argsort: needs an array of rank >= 1, got a scalar");
  if (t.dtype == DType::bool_) x = astype(b, x, DType::i32);
  Attrs a;
  a.dtype = default_int_dtype();
  a.mode = descending ? 1 : 0;
  return b.emit1(Op::Argsort, {x}, std::move(a));
}

V searchsorted_last(Builder& b, V sorted, V values, bool right) {
  const V xs[] = {sorted, values};
  // One dtype for both, by the arithmetic rules (bools compare as integers).
  auto v = promote_broadcast_dtype_only(b, "searchsorted", xs);
  const Shape& as = b.type(v[0]).shape;
  const Shape& vs = b.type(v[1]).shape;
  if (as.size() != 1 && (vs.size() != as.size() || !std::equal(as.begin(), as.end() - 1, vs.begin()))) {
    throw ValueError("searchsorted: the sorted array must be 1-D (or share the batch axes of the values), got " +
                     shape_str(as) + " and " + shape_str(vs));
  }
  V a = v[0], q = v[1];
  Shape out = vs;
  if (as.size() == 1) q = reshape(b, q, Shape{1, num_elements(vs)}), a = reshape(b, a, Shape{1, as[0]});
  if (b.type(a).dtype == DType::bool_) a = astype(b, a, DType::i32), q = astype(b, q, DType::i32);
  Attrs at;
  at.dtype = default_int_dtype();
  at.mode = right ? 1 : 0;
  return reshape(b, b.emit1(Op::SearchSorted, {a, q}, std::move(at)), out);
}

}  // namespace qb::api
