// Small helpers for transforms that emit primitives on a Builder: operands already agree in
// dtype and shape, scalars are broadcast explicitly.
#pragma once

#include "quabla/ir/builder.h"

namespace qb::ad {

using V = ValueId;

struct Emit {
  Builder& b;

  ValueType type(V v) const { return b.type(v); }
  V op(Op o, std::initializer_list<V> in, Attrs a = {}) { return b.emit1(o, in, std::move(a)); }
  V scalar(double c, DType d);
  V like(V x, double c);  // a constant of x's dtype and shape
  V iota(std::int64_t n, DType d);  // [0, 1, ..., n - 1]
  // Integer indices clamped into [0, n) (n >= 1), and the mask of those already inside it.
  V clamp_index(V idx, std::int64_t n);
  V in_range(V idx, std::int64_t n);
  V take(V x, V idx, std::int64_t axis, bool fill);
  V scatter(V x, V idx, V updates, std::int64_t axis, std::int64_t mode);
  V zeros(const ValueType& t);
  V add(V x, V y) { return op(Op::Add, {x, y}); }
  V sub(V x, V y) { return op(Op::Sub, {x, y}); }
  V mul(V x, V y) { return op(Op::Mul, {x, y}); }
  V div(V x, V y) { return op(Op::Div, {x, y}); }
  V neg(V x) { return op(Op::Neg, {x}); }
  V scale(V x, double c) { return mul(x, like(x, c)); }
  V select(V p, V x, V y) { return op(Op::Select, {p, x, y}); }
  V eq(V x, V y) { return op(Op::Eq, {x, y}); }
  V convert(V x, DType d);
  V broadcast(V x, const Shape& shape, std::vector<std::int64_t> dims);
  V reshape(V x, const Shape& shape);
  V reduce_sum(V x, std::vector<std::int64_t> axes);
  V transpose(V x, std::vector<std::int64_t> perm);
  // Swaps the last two axes (matrix transpose of a batched [..., m, n] value).
  V mT(V x);
  // Rows [begin, end) of the leading axis (x itself for all of them).
  V slice_rows(V x, std::int64_t begin, std::int64_t end);
  // Entries begin, begin + stride, ... below end of the last axis.
  V slice_last(V x, std::int64_t begin, std::int64_t end, std::int64_t stride = 1);

  // A reduction's elements laid along one leading axis: for x of shape xs reduced over
  // `axes`, the permutation putting them first, the count n of reduced elements and the
  // kept axes' extents; lay_out(x) is x as [n, rest...].
  struct ReducedLayout {
    std::vector<std::int64_t> perm;
    std::int64_t n = 1;
    Shape rest;
  };
  static ReducedLayout reduced_layout(const Shape& xs, const std::vector<std::int64_t>& axes);
  V lay_out(V x, const ReducedLayout& l);
};

}  // namespace qb::ad
