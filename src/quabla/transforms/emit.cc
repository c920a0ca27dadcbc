#include "quabla/transforms/emit.h"

#include <algorithm>

namespace qb::ad {

Emit::ReducedLayout Emit::reduced_layout(const Shape& xs, const std::vector<std::int64_t>& axes) {
  ReducedLayout l;
  l.perm.assign(axes.begin(), axes.end());
  for (auto ax : axes) l.n *= xs[static_cast<std::size_t>(ax)];
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(xs.size()); ++i) {
    if (std::find(axes.begin(), axes.end(), i) == axes.end()) {
      l.perm.push_back(i);
      l.rest.push_back(xs[static_cast<std::size_t>(i)]);
    }
  }
  return l;
}

V Emit::lay_out(V x, const ReducedLayout& l) {
  Shape flat{l.n};
  flat.insert(flat.end(), l.rest.begin(), l.rest.end());
  return reshape(transpose(x, l.perm), flat);
}

V Emit::scalar(double c, DType d) {
  auto lit = std::make_shared<Literal>();
  lit->type = ValueType{d, {}, false};
  lit->data = Buffer::allocate(itemsize(d));
  store_double(d, lit->data->data(), c);
  return b.constant(std::move(lit));
}

V Emit::iota(std::int64_t n, DType d) {
  auto lit = std::make_shared<Literal>();
  lit->type = ValueType{d, {n}, false};
  lit->data = Buffer::allocate(static_cast<std::size_t>(n) * itemsize(d));
  for (std::int64_t i = 0; i < n; ++i) store_int64(d, lit->data->data() + i * static_cast<std::int64_t>(itemsize(d)), i);
  return b.constant(std::move(lit));
}

V Emit::clamp_index(V idx, std::int64_t n) {
  V lo = like(idx, 0.0), hi = like(idx, static_cast<double>(std::max<std::int64_t>(n - 1, 0)));
  return op(Op::Min, {op(Op::Max, {idx, lo}), hi});
}

V Emit::in_range(V idx, std::int64_t n) {
  return op(Op::And, {op(Op::Ge, {idx, like(idx, 0.0)}), op(Op::Lt, {idx, like(idx, static_cast<double>(n))})});
}

V Emit::take(V x, V idx, std::int64_t axis, bool fill) {
  Attrs a;
  a.axis = axis;
  a.mode = fill ? 1 : 0;
  return op(Op::Take, {x, idx}, std::move(a));
}

V Emit::scatter(V x, V idx, V updates, std::int64_t axis, std::int64_t mode) {
  Attrs a;
  a.axis = axis;
  a.mode = mode;
  return op(Op::Scatter, {x, idx, updates}, std::move(a));
}

V Emit::like(V x, double c) {
  const ValueType t = type(x);
  return broadcast(scalar(c, t.dtype), t.shape, {});
}

V Emit::zeros(const ValueType& t) { return broadcast(scalar(0.0, t.dtype), t.shape, {}); }

V Emit::convert(V x, DType d) {
  if (type(x).dtype == d) return x;
  Attrs a;
  a.dtype = d;
  return op(Op::Convert, {x}, std::move(a));
}

V Emit::broadcast(V x, const Shape& shape, std::vector<std::int64_t> dims) {
  if (type(x).shape == shape) return x;
  Attrs a;
  a.shape = shape;
  a.dims = std::move(dims);
  return op(Op::BroadcastInDim, {x}, std::move(a));
}

V Emit::reshape(V x, const Shape& shape) {
  if (type(x).shape == shape) return x;
  Attrs a;
  a.shape = shape;
  return op(Op::Reshape, {x}, std::move(a));
}

V Emit::reduce_sum(V x, std::vector<std::int64_t> axes) {
  if (axes.empty()) return x;
  Attrs a;
  a.dims = std::move(axes);
  return op(Op::ReduceSum, {x}, std::move(a));
}

V Emit::transpose(V x, std::vector<std::int64_t> perm) {
  Attrs a;
  a.dims = std::move(perm);
  return op(Op::Transpose, {x}, std::move(a));
}

V Emit::slice_rows(V x, std::int64_t begin, std::int64_t end) {
  const Shape s = type(x).shape;
  if (begin == 0 && end == s[0]) return x;
  Attrs a;
  a.starts.assign(s.size(), 0);
  a.limits = s;
  a.strides.assign(s.size(), 1);
  a.starts[0] = begin;
  a.limits[0] = end;
  return op(Op::Slice, {x}, std::move(a));
}

V Emit::slice_last(V x, std::int64_t begin, std::int64_t end, std::int64_t stride) {
  const Shape s = type(x).shape;
  Attrs a;
  a.starts.assign(s.size(), 0);
  a.limits = s;
  a.strides.assign(s.size(), 1);
  a.starts.back() = begin;
  a.limits.back() = end;
  a.strides.back() = stride;
  return op(Op::Slice, {x}, std::move(a));
}

V Emit::mT(V x) {
  const auto r = static_cast<std::int64_t>(type(x).shape.size());
  std::vector<std::int64_t> perm;
  for (std::int64_t i = 0; i < r - 2; ++i) perm.push_back(i);
  perm.push_back(r - 1);
  perm.push_back(r - 2);
  return transpose(x, std::move(perm));
}

}  // namespace qb::ad
